"""The formula parser: exact numbers, positive symbols, and nothing executed."""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.core.errors import InputError
from symroof.core.parse import parse_assignments, parse_expr, parse_relation, symbol

B, D, F = (symbol(n) for n in "BDF")


def test_decimals_are_exact_rationals() -> None:
    assert parse_expr("0.34") == sp.Rational(17, 50)
    assert parse_expr("1.97e14 / 8.2e11") == sp.Rational(9850, 41)


def test_names_are_positive_symbols_and_caret_is_power() -> None:
    expr = parse_expr("2*B*D^2")
    assert expr == 2 * B * D**2
    assert all(s.is_positive for s in expr.free_symbols)


def test_functions_and_relations() -> None:
    assert parse_expr("max(B, D) + sqrt(F)") == sp.Max(B, D) + sp.sqrt(F)
    assert parse_relation("6*N*D = C") == sp.Eq(6 * symbol("N") * D, symbol("C"))
    assert parse_relation("B >= 241").rel_op == ">="


def test_assignments() -> None:
    assert parse_assignments("D=8192, F = 32768") == {"D": "8192", "F": "32768"}
    with pytest.raises(InputError, match="'D' is given twice"):
        parse_assignments("D=1,D=2")


@pytest.mark.parametrize(("formula", "message"), [
    ("__import__('os').system('id')", "calling attribute access is not allowed"),
    ("os.system", "attribute access is not allowed"),
    ("(lambda: 1)()", "calling lambda is not allowed"),
    ("[x for x in B]", "a comprehension is not allowed"),
    ("open('f')", "the function 'open' is not allowed"),
    ("__class__", "the name '__class__' is not allowed"),
    ("'text'", "the literal 'text' is not a number"),
    ("B if D else F", "a conditional is not allowed"),
    ("B < D", "a comparison is not allowed"),
    ("1/0", "division by zero"),
    ("B +", "malformed formula 'B +'"),
    ("", "empty formula"),
    ("9**9**9**9", "the exponent 387420489 is beyond 1000"),
    ("(10**300)**300", "a power with about 90000 digits"),
    ("B**100000", "the exponent 100000 is beyond 1000"),
    ("sqrt(B, D)", "'sqrt' takes 1 argument(s), got 2"),
    ("log", "the function 'log' is used without arguments"),
    ("-" * 100 + "B", "a double sign (--, +-) is not allowed"),
    ("exp(" * 100 + "B" + ")" * 100, "nesting deeper than 40"),
    ("(" * 300 + "B" + ")" * 300, "malformed formula"),
    ("B" * 3000, "the limit is 2000"),
])
def test_refuses_with_a_message_that_names_the_culprit(formula: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_expr(formula, where="--flops")
    assert str(info.value).startswith("--flops: ")
    assert message in str(info.value)


def test_a_payload_runs_nothing(tmp_path: object) -> None:
    import pathlib
    target = pathlib.Path(str(tmp_path)) / "pwned"
    payload = f"__import__('pathlib').Path('{target}').touch()"
    with pytest.raises(InputError):
        parse_expr(payload)
    assert not target.exists()
