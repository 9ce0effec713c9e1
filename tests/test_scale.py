"""Laws of the pieces that keep derivations fast: remembered results, exponents read off a
product of powers, merged powers, and the numeric refutation before ``simplify``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip, combine_powers, einsum, lagrange, roofline, sizes
from symroof.claims.rules import proof
from symroof.core.memo import memo, value_key
from symroof.core.printer import text
from symroof.engine.optimize import log_slope
from tests.conftest import examples

N, D, C, A, B = sizes("N D C A B")
exponents = st.fractions(min_value=sp.Rational(1, 12), max_value=3, max_denominator=12).map(
    sp.Rational)


def test_memo_returns_the_first_result_for_equal_arguments_only() -> None:
    calls: list[object] = []

    @memo
    def f(x: object, *, k: object = None) -> object:
        calls.append(x)
        return [x]

    assert f(sp.Symbol("B")) is f(sp.Symbol("B"))
    assert f({"B": 1}) is f({"B": 1})
    assert f(2 * sp.Symbol("B")) is not f(sp.Float(2) * sp.Symbol("B"))
    assert f(1) is not f(1.0) and f(1, k=1) is not f(1, k=2)
    assert len(calls) == 8


def test_memo_runs_calls_whose_arguments_have_no_value() -> None:
    calls: list[object] = []

    @memo
    def f(x: object) -> int:
        calls.append(x)
        return len(calls)

    assert f(object()) == 1 and f(lambda: 0) == 2  # run, not remembered


def test_memo_forgets_the_oldest_beyond_its_size() -> None:
    @memo(size=2)
    def f(x: int) -> list[int]:
        return [x]

    first = f(1)
    f(2)
    f(3)
    assert f(1) is not first and f(3) is f(3)


def test_memo_remembers_no_exception() -> None:
    tries: list[int] = []

    @memo
    def f(x: int) -> int:
        tries.append(x)
        if len(tries) == 1:
            raise ValueError("first try")
        return x

    with pytest.raises(ValueError, match="first try"):
        f(1)
    assert f(1) == 1 and tries == [1, 1]


def test_value_keys_of_dataclasses_compare_fields() -> None:
    mm = einsum("B D, D F -> B F", "bf16")
    assert value_key(mm) == value_key(einsum("B D, D F -> B F", "bf16"))
    assert value_key(mm) != value_key(einsum("B D, D F -> B F", "int8"))


def test_a_kept_value_key_leaves_the_instance_as_it_was() -> None:
    mm = einsum("B D, D F -> B F", "bf16")
    shown = repr(mm)
    assert value_key(mm) is value_key(mm)  # made once
    assert value_key(mm) == value_key(einsum("B D, D F -> B F", "bf16"))
    assert repr(mm) == shown and mm == einsum("B D, D F -> B F", "bf16")


def test_texts_remembered_by_expression_keep_float_precision() -> None:
    assert text(sp.Float(2, 15)) == "2.00000000000000"
    assert text(sp.Float(2, 30)) == "2.00000000000000000000000000000"
    assert text(B * D / (B + D)) == text(B * D / (B + D)) == "B*D/(B + D)"

    class Unhashable(sp.Basic):
        __hash__ = None  # type: ignore[assignment]

    assert text(Unhashable(B)) == "Unhashable(B)"  # printed, not remembered


def test_a_remembered_roofline_equals_a_fresh_one() -> None:
    mm, c = einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e")
    first = roofline(mm, c)
    assert roofline(mm, c) is first
    assert roofline.__wrapped__(mm, c) == first


@given(exponents, exponents, exponents)
@settings(max_examples=examples(40), deadline=None)
def test_log_slope_is_the_derivative_of_the_log(a: sp.Rational, b: sp.Rational,
                                                c: sp.Rational) -> None:
    x = A * (C / 6) ** a * C**b / (B + C**c) ** 2
    expected = sp.cancel(sp.diff(sp.log(x), C) * C)
    assert sp.cancel(log_slope(x, C) - expected) == 0


@given(exponents, exponents)
@settings(max_examples=examples(20), deadline=None)
def test_optimum_exponents_of_a_power_law_sum_add_up_to_one(a: sp.Rational,
                                                             b: sp.Rational) -> None:
    opt = lagrange(A / N**a + B / D**b, sp.Eq(6 * N * D, C), [N, D])
    assert opt.exponent(N, C) == b / (a + b)
    assert opt.exponent(N, C) + opt.exponent(D, C) == 1


def test_combine_powers_gives_the_budget_back() -> None:
    a, b = sp.symbols("a b", positive=True)
    opt = lagrange(A / N**a + B / D**b, sp.Eq(6 * N * D, C), [N, D])
    assert combine_powers(6 * opt.solution[N] * opt.solution[D]) == C


@given(st.integers(1, 6), st.integers(1, 6))
@settings(max_examples=examples(30), deadline=None)
def test_proof_refuses_what_differs_at_a_point(p: int, q: int) -> None:
    a = (N + D) ** p / D**q
    assert proof(a, sp.expand(a)) != ""
    assert proof(a, a + sp.Rational(1, 10**20) * N) == ""


def test_proof_of_unequal_functions_is_empty() -> None:
    M, d = sizes("M d")
    assert proof(sp.floor(M / (4 * d)), sp.ceiling(M / (4 * d))) == ""
    assert proof(sp.sin(N)**2 + sp.cos(N)**2, sp.Integer(1)) == "equal after simplify"


def test_the_program_exits_with_the_verb_code_and_its_whole_output() -> None:
    # far more JSON than a pipe holds: all of it must be written before the process ends
    run = subprocess.run([sys.executable, "-m", "symroof", "verify", "--no-cache", "--json"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and len(run.stdout) > 1 << 17
    data = json.loads(run.stdout)
    assert len(data["claims"]) == sum(data["summary"].values()) > 100
    bad = subprocess.run([sys.executable, "-m", "symroof", "derive", "--flops", "B*",
                          "--bytes", "B"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("symroof: error:")


def test_preload_takes_only_installed_packages_that_two_hints_share() -> None:
    from symroof.claims.sealed import BASE, PRELOAD, Hint, preload
    assert preload([None]) == PRELOAD and preload([]) == PRELOAD
    hinted = preload([Hint(("numpy.random", "helper", "os", "sympy.x y", "__main__", "mpmath"),
                           0.5),
                      Hint(("mpmath", "numpy.random", "helper", "os", "sympy.abc"), 0.1),
                      Hint(("sympy.stats",), 0.1)])
    assert hinted == (*BASE, "mpmath", "numpy.random")
    assert preload([Hint(("mpmath",), 0.1)]) == BASE  # one unit imports its own


def test_a_unit_run_leaves_its_hint_and_the_longest_unit_starts_first(tmp_path: Path) -> None:
    from symroof.claims.cache import VerdictCache
    from symroof.claims.runner import run_units
    from symroof.claims.sealed import _cost
    folder = tmp_path / "d"
    folder.mkdir()
    for name, extra in (("small", ""), ("big", "import mpmath\n" + "# padding\n" * 400)):
        (folder / f"{name}.py").write_text(
            extra + "from symroof.claims.model import Derivation, Source\n"
            f"def build():\n    d = Derivation.begin({name!r}, 't', Source('b'))\n"
            "    d.claim('c', stated='2', statement='s', quote='q', derive=lambda: 2)\n"
            "    return d.build()\n", encoding="utf-8")
    units = [folder / "small.py", folder / "big.py"]
    assert _cost(units[1], None) > _cost(units[0], None)
    cache = VerdictCache(tmp_path / "cache")
    outcome = run_units(units, cache=cache, jobs=1)
    assert [r["verdict"] for r in outcome.rows] == ["OK", "OK"]
    small, big = (cache.hint(u, 30) for u in units)
    assert small is not None and big is not None and big.seconds > 0
    assert "mpmath" not in small.imported  # SymPy's dependency: the parent had it already
    (folder / "big.py").write_text("x = 1\n", encoding="utf-8")
    cache.forget()  # a new run: digests afresh
    assert cache.lookup(units[1], 30) is None and cache.hint(units[1], 30) == big


def test_a_malformed_hint_is_no_hint(tmp_path: Path) -> None:
    from symroof.claims.cache import VerdictCache
    cache = VerdictCache(tmp_path)
    unit = tmp_path / "u.py"
    unit.write_text("x = 1\n", encoding="utf-8")
    entries: list[object] = [{"imported": "numpy", "seconds": 1}, {"imported": [], "seconds": -1},
                             {"imported": [1], "seconds": 1}, [], {"imported": []}]
    for entry in entries:
        cache.slot(unit, 30).write_text(json.dumps(entry), encoding="utf-8")
        assert cache.hint(unit, 30) is None


_monomials = st.lists(st.tuples(st.integers(1, 5), st.integers(0, 2), st.integers(0, 2),
                                st.integers(0, 2)), min_size=1, max_size=4)


@given(_monomials, _monomials, st.sampled_from(["B<<D,F", "D->oo", "B->0", "B,D->oo"]))
@settings(max_examples=examples(40), deadline=None)
def test_terms_read_off_by_grade_are_the_series_coefficients(top: list, bottom: list,
                                                             regime: str) -> None:
    from symroof.engine.algebra import cancel
    from symroof.engine.asymptotics import (
        EPS,
        _graded_terms,
        _rational_terms,
        parse_regime,
    )
    F = sizes("F")[0]

    def poly(terms: list) -> sp.Expr:
        return sp.Add(*(c * B**i * D**j * F**k for c, i, j, k in terms))

    expr = poly(top) / poly(bottom)
    scaling = parse_regime(regime).scaling(like=expr)
    graded = _graded_terms(expr, scaling)
    series = _rational_terms(expr.subs(scaling))
    assert graded is not None and series is not None
    assert [(p, cancel(c)) for p, c in graded] == [(p, cancel(c)) for p, c in series]
    assert not any(c.has(EPS) for _, c in graded)
