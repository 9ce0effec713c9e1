"""Speculative decoding: the derived formulas, their limits and laws, and the verb."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.errors import InputError
from symroof.models import model
from symroof.plans.speculative import (
    ALPHA,
    GAMMA,
    SPEEDUP,
    TOKENS,
    C,
    best_draft,
    cost_ratio_of,
    speculate,
)

RATES = st.fractions(min_value=0, max_value=1, max_denominator=1000)
COSTS = st.fractions(min_value=0, max_value=2, max_denominator=1000)


def test_the_sum_reduces_to_the_papers_equation_1() -> None:
    assert TOKENS == (1 - ALPHA**(GAMMA + 1)) / (1 - ALPHA)
    assert SPEEDUP == TOKENS / (GAMMA * C + 1)


def test_limits_in_the_acceptance_rate() -> None:
    assert sp.limit(SPEEDUP, ALPHA, 0) == 1 / (GAMMA * C + 1)  # every draft token wasted
    assert sp.simplify(sp.limit(SPEEDUP, ALPHA, 1) - (GAMMA + 1) / (GAMMA * C + 1)) == 0


def test_one_draft_token_speeds_up_by_1_plus_alpha_over_1_plus_c() -> None:
    assert sp.simplify(SPEEDUP.subs(GAMMA, 1) - (1 + ALPHA) / (1 + C)) == 0


def test_exact_value_from_the_geometric_sum() -> None:
    s = speculate("0.8", 4, "0.05")
    tokens = sum(Fraction(4, 5)**i for i in range(5))  # 1 + alpha + ... + alpha^gamma
    assert s.tokens_per_step == sp.Rational(tokens) == sp.Rational(2101, 625)
    assert s.speedup == sp.Rational(tokens) / sp.Rational(6, 5)


@given(RATES, RATES, st.integers(1, 24), COSTS)
def test_speedup_rises_with_the_acceptance_rate(a: Fraction, b: Fraction, gamma: int,
                                                c: Fraction) -> None:
    lo, hi = sorted((a, b))
    slow, fast = speculate(sp.Rational(lo), gamma, sp.Rational(c)), \
        speculate(sp.Rational(hi), gamma, sp.Rational(c))
    assert slow.speedup < fast.speedup if lo < hi else slow.speedup == fast.speedup


@given(RATES, st.integers(1, 24), COSTS)
def test_a_step_yields_between_one_and_gamma_plus_one_tokens(a: Fraction, gamma: int,
                                                             c: Fraction) -> None:
    s = speculate(sp.Rational(a), gamma, sp.Rational(c))
    assert 1 <= s.tokens_per_step <= gamma + 1
    assert s.speedup * (gamma * sp.Rational(c) + 1) == s.tokens_per_step


@settings(max_examples=30)
@given(st.fractions(min_value=0, max_value=Fraction(99, 100), max_denominator=100),
       st.fractions(min_value=Fraction(1, 100), max_value=2, max_denominator=100))
def test_the_best_draft_length_beats_every_other_up_to_64(a: Fraction, c: Fraction) -> None:
    best = best_draft(sp.Rational(a), sp.Rational(c))
    assert best is not None
    for g in range(1, 65):
        assert speculate(sp.Rational(a), g, sp.Rational(c)).speedup <= best.speedup


def test_no_best_draft_for_a_free_draft() -> None:
    assert best_draft("0.8", 0) is None
    assert best_draft(1, "0.5") is None  # (gamma + 1)/(gamma/2 + 1) grows toward 2
    assert best_draft(1, 1).gamma == 1  # type: ignore[union-attr]


def test_bad_gamma_in_python() -> None:
    with pytest.raises(InputError, match="draft tokens per step are a whole number"):
        speculate("0.5", 0, "0.1")


def test_the_verb_prints_each_value_with_its_formula(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speculate", "--acceptance", "4/5", "--cost-ratio", "1/20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("speculative decoding: acceptance rate alpha = 0.8, draft "
                               "tokens per step gamma = 8")
    assert any(" ".join(x.split()).startswith("expected speedup 1690981/546875 ≈")
               and x.endswith("= (1 - alpha**(gamma + 1))/((1 - alpha)*(c*gamma + 1))")
               for x in lines)
    assert main(["speculate", "--acceptance", "1", "--cost-ratio", "1/2", "--draft-tokens",
                 "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["tokens_per_step"], out["speedup"]) == ("4", "8/5")  # 4 / (3/2 + 1)
    assert out["best_draft_tokens"] is None and out["best_speedup"] is None


def test_a_draft_model_costs_its_weights_over_the_targets(
        capsys: pytest.CaptureFixture[str]) -> None:
    # weights a token multiplies (the untied input embedding is looked up): LLaMA-2-7B
    # 6,738,415,616 - 32000 x 4096; LLaMA-2-70B 80 x 855,654,400 + 8192 + 32000 x 8192
    seven, seventy = 6_738_415_616 - 32_000 * 4096, 80 * 855_654_400 + 8192 + 32_000 * 8192
    assert cost_ratio_of(model("llama-2-7b"), model("llama-2-70b")) == \
        sp.Rational(seven, seventy)
    assert main(["speculate", "--acceptance", "0.8", "--draft", "llama-2-7b", "--target",
                 "llama-2-70b", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cost_ratio"] == str(sp.Rational(seven, seventy))
    assert out["draft_tokens"] == out["best_draft_tokens"] == 6


@pytest.mark.parametrize(("args", "message"), [
    (["--acceptance", "0.8", "--draft", "llama-3-8b", "--target", "llama-2-70b"],
     "--draft: the draft llama-3-8b has a vocabulary of 128256, the target llama-2-70b "
     "32000: speculative decoding needs one vocabulary"),
    (["--acceptance", "0.8", "--draft", "llama-2-7b"],
     "--draft: --draft needs --target, the model it drafts for"),
    (["--acceptance", "0.8", "--cost-ratio", "0.1", "--target", "llama-2-7b"],
     "--target: --target goes with --draft"),
    (["--acceptance", "1.2", "--cost-ratio", "0.1"],
     "--acceptance: an acceptance rate is between 0 and 1, got 1.2"),
    (["--acceptance", "x", "--cost-ratio", "0.1"],
     "--acceptance: expected a number such as 0.8 or 4/5, got 'x'"),
    (["--acceptance", "0.5", "--cost-ratio", "-1"],
     "--cost-ratio: a draft's cost ratio is 0 or more, got -1"),
    (["--acceptance", "0.8", "--cost-ratio", "0"],
     "--draft-tokens: no best draft length (with a free draft the speedup grows with every "
     "draft token): give --draft-tokens"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str],
                                          message: str) -> None:
    code = main(["speculate", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == f"symroof: error: {message}\n"
