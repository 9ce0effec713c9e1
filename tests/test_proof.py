"""Equality is proved or refuted, never concluded from agreeing samples (NOT PROVEN)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.claims.proof import compare
from symroof.claims.rules import Verdict, judge_expr, judge_relation
from symroof.core.parse import parse_expr, symbol
from tests.conftest import run_cli

B, D = symbol("B"), symbol("D")
PLAIN = sp.Symbol("B")  # a size declared without assumptions is still a size


@pytest.mark.parametrize(("stated", "derived", "detail"), [
    ("2*B", 2 * B + sp.floor(B / 100), "at B = 100: stated 200, derived 201"),
    ("B", sp.Min(B, 4096), "at B = 4097: stated 4097, derived 4096"),
    ("B", sp.Piecewise((B, B < 9), (2 * B, True)), "at B = 100: stated 100, derived 200"),
    ("9 - B", sp.Abs(B - 9), "at B = 100: stated -91, derived 91"),
    ("B", B + sp.Rational(1, 10**30), "a rational function that is not 0"),
    ("B", sp.Max(PLAIN, 4096), "at B = 1/3: stated 1/3, derived 4096"),
])
def test_the_hostile_reproductions_are_mismatches_with_a_witness(
        stated: str, derived: sp.Expr, detail: str) -> None:
    j = judge_expr(stated, derived)
    assert j.verdict == Verdict.MISMATCH and detail in j.detail


@pytest.mark.parametrize(("stated", "derived"), [
    ("B + D", sp.Min(B, D) + sp.Max(B, D)),
    ("B*D", sp.Min(B, D) * sp.Max(B, D)),
    ("max(2*B - 9, 9)", sp.Abs(B - 9) + B),
    ("max(B, D) - min(B, D)", sp.Abs(B - D)),
    ("B", sp.Piecewise((9, sp.Eq(B, 9)), (B, True))),
    ("B", sp.Piecewise((B, B < 9), (B + sp.Min(0, B - 9), True))),
])
def test_cases_over_positive_sizes_prove_equality(stated: str, derived: sp.Expr) -> None:
    j = judge_expr(stated, derived)
    assert j.verdict == Verdict.OK and ("cases" in j.detail or "simplify" in j.detail)


def test_agreeing_samples_are_not_a_proof() -> None:
    # floor(exp(-B)/2) is 0 for every positive B, but SymPy cannot show it
    j = judge_expr("B", B + sp.floor(sp.exp(-B) / 2))
    assert j.verdict == Verdict.NOT_PROVEN and j.verdict.fails
    assert j.detail.startswith("equality not proven; agree at B = 1/3; B = 7/2")
    assert (("B", "1000000000"),) in j.samples and len(j.samples) == 12


def test_a_relation_whose_bound_is_not_proven_is_not_proven() -> None:
    j = judge_relation("D > B", sp.StrictGreaterThan(D, B + sp.floor(sp.exp(-B) / 2)),
                       sp.Rational(2, 100))
    assert j.verdict == Verdict.NOT_PROVEN


@settings(max_examples=30, deadline=None)
@given(st.fractions(min_value=1, max_value=10**7).map(sp.Rational))
def test_a_clipped_size_is_never_equal_to_the_size(c: sp.Rational) -> None:
    assert judge_expr("B", sp.Min(B, c)).verdict == Verdict.MISMATCH
    assert judge_expr("B", sp.Max(B, c)).verdict == Verdict.MISMATCH
    assert compare(sp.Min(B, c) + sp.Max(B, c), B + c).equal


def test_not_proven_fails_verify_and_shows_its_samples(tmp_path: Path) -> None:
    ch = tmp_path / "ch"
    ch.mkdir()
    (ch / "claims.py").write_text(textwrap.dedent("""
        import sympy as sp
        B = sp.Symbol("B", positive=True)
        def claims(ch):
            ch.add(a=B + sp.floor(sp.exp(-B) / 2), b=2 * B + sp.floor(B / 100))
    """))
    (ch / "en.toml").write_text(textwrap.dedent("""
        [chapter]
        id = "p-en"
        title = "P"
        book = "b"
        [s.a]
        quote = "B"
        stated = "B"
        [s.b]
        quote = "2B"
        stated = "2*B"
    """))
    done = run_cli("verify", str(ch), "--no-cache", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["summary"] == {"NOT PROVEN": 1, "MISMATCH": 1}
    a, b = data["claims"]
    assert a["verdict"] == "NOT PROVEN" and {"B": "4097"} in a["samples"]
    assert b["verdict"] == "MISMATCH" and b["samples"] == []
    text = run_cli("verify", str(ch), "--no-cache")
    assert "NOT PROVEN" in text.stdout and "1 NOT PROVEN, 1 MISMATCH" in text.stdout


def test_parse_expr_symbols_are_the_sizes_compared() -> None:
    assert compare(parse_expr("B"), PLAIN).how == "same expression"
