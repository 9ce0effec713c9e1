"""Text from tables, quotes and API arguments never reaches sympify, eval or TeX unchecked."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import sympy as sp

from symroof import chip, einsum, op, roofline
from symroof.claims.chapter import law, within
from symroof.claims.model import Derivation, Source
from symroof.core.errors import InputError
from symroof.core.escape import html_escape, md_escape, tex_escape
from symroof.core.parse import exact, exact_number
from symroof.render.pdf import LatexFailed, compile_pdf
from symroof.render.quotes import quote_markup, segments
from tests.conftest import require_tool

CODE = "__import__('os').system('touch PWNED') or B"


@pytest.mark.parametrize("call", [
    lambda: op("f", CODE, "B"),
    lambda: roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e")).at({"B": CODE}),
    lambda: within(1, CODE, 2),
    lambda: Derivation.begin("t", "t", Source("b")).claim(
        "a", stated="1", statement="s", quote="q", derive=lambda: 1, tolerance=CODE),
    lambda: Derivation.begin("t", "t", Source("b")).claim(
        "a", stated="x", statement="s", quote="q", derive=lambda: 1, kind="qualitative",
        within=(CODE, 2), meaning="m"),
    lambda: exact(CODE),
])
def test_code_in_a_string_argument_is_refused(call, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="a boolean operator is not allowed"):
        call()
    assert not (tmp_path / "PWNED").exists()


def test_exact_reads_numbers_exactly_and_refuses_what_is_not_one() -> None:
    assert exact_number(0.02) == sp.Rational(1, 50) and exact_number("9850/41") == \
        sp.Rational(9850, 41)
    for bad in (True, float("nan"), "B", object()):
        with pytest.raises(InputError):
            exact_number(bad)


@pytest.mark.parametrize("condition", [sp.nan, 1, sp.Integer(0), sp.Symbol("x") > 1, None])
def test_a_law_needs_true_or_false(condition: object) -> None:
    with pytest.raises(InputError, match="a law's condition must be True or False"):
        law(condition)


@pytest.mark.parametrize("math", [r"^^5cthe^^5cnumexpr 6*7000+1^^5crelax ^^5cjobname",
                                  r"x^^0a", r"\text{^^5cinput}", "x\x01y", r"\catcode`\^^M=9"])
def test_tex_notation_for_hidden_characters_is_never_math(math: str) -> None:
    kinds = [k for k, _ in segments(f"q ${math}$ r")]
    assert kinds == ["text"]
    assert "^^" not in quote_markup(f"q ${math}$ r", "tex")


def test_control_characters_never_reach_an_output() -> None:
    text = "a\x1b[31mb\x07c\u202ed"
    for out in (tex_escape(text), md_escape(text), html_escape(text)):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


def test_pdflatex_is_bounded_and_its_timeout_is_one_error() -> None:
    require_tool("pdflatex")
    loop = "\\documentclass{article}\\begin{document}\\def\\x{\\x}\\x\\end{document}\n"
    with pytest.raises(LatexFailed, match="pdflatex ran past the time limit of 1 s"):
        compile_pdf(loop, "loop.tex", timeout=1)



def test_an_inner_time_limit_never_extends_an_outer_one() -> None:
    from symroof.core.timelimits import TimeLimit, time_limit
    start = time.monotonic()
    with pytest.raises(TimeLimit), time_limit(0.3):
        with time_limit(10):
            pass
        while True:  # the outer limit, armed again, still stops this
            pass
    assert time.monotonic() - start < 2


@pytest.mark.parametrize(("call", "message"), [
    (lambda: einsum(None, "bf16"), "einsum: expected an einsum spec"),
    (lambda: chip(5), "chip: expected a chip name such as 'tpu-v5e', got int 5"),
    (lambda: roofline(einsum("B D, D F -> B F", "bf16"), 5), "roofline: expected a Chip"),
    (lambda: roofline(None, chip("tpu-v5e")), "roofline: expected an Op"),
])
def test_public_entry_points_name_a_wrong_argument(call, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        call()


def test_a_chip_takes_a_number_or_its_name_where_the_api_expects_one() -> None:
    assert chip("tpu-v5e", hbm=8.1e11).bandwidth("hbm") == 810 * 10**9
    rl = roofline(einsum("B D, D F -> B F", "bf16"), "tpu-v5e")
    assert rl.ridge == sp.Rational(19700, 81)
