"""Speculative decoding (Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers
via Speculative Decoding", ICML): the expected tokens per verification step and the expected
speedup, derived exactly.

>>> s = speculate(sp.Rational(4, 5), 4, sp.Rational(1, 20))
>>> s.tokens_per_step, s.speedup
(2101/625, 2101/750)
>>> derived()[0]
(1 - alpha**(gamma + 1))/(1 - alpha)

A draft model proposes gamma tokens; the target model checks them in one step and keeps the
longest prefix it accepts, plus one token of its own. With each draft token accepted
independently with probability alpha, the tokens a step yields are k + 1 with probability
alpha^k (1 - alpha) for k < gamma, and gamma + 1 with probability alpha^gamma. Their
expectation is summed by SymPy and shown equal to the paper's equation (1),
(1 - alpha^(gamma+1)) / (1 - alpha) for alpha != 1 (gamma + 1 at alpha = 1). A step costs
gamma draft runs of c target runs each plus one target run, so the speedup over plain
decoding is (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)) (Theorem 3.8): 1/(gamma c + 1)
as alpha -> 0 (every draft wasted), (gamma + 1)/(gamma c + 1) as alpha -> 1. The
verification step is taken to cost one decode step (the paper's assumption; the extra
gamma tokens it scores are not counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import DerivationError, InputError
from ..core.units import COUNT, records
from ..models.config import ModelConfig
from .mfu import model_params

ALPHA = sp.Symbol("alpha", positive=True)
GAMMA = sp.Symbol("gamma", integer=True, positive=True)
C = sp.Symbol("c", nonnegative=True)
#: the search for the best draft length stops here (the speedup is unimodal in gamma)
MAX_GAMMA = 1024


@cache
def derived() -> tuple[Expr, Expr]:
    """Expected tokens per verification step and expected speedup, in alpha, gamma, c:
    summed from the capped geometric law, then proven equal to the paper's closed form."""
    k = sp.Dummy("k", integer=True, nonnegative=True)
    summed = sp.summation((k + 1) * ALPHA**k * (1 - ALPHA), (k, 0, GAMMA - 1)) \
        + (GAMMA + 1) * ALPHA**GAMMA
    general = summed.subs(sp.Eq(ALPHA, 1), sp.false)
    closed = (1 - ALPHA**(GAMMA + 1)) / (1 - ALPHA)
    if sp.simplify(general - closed) != 0:  # pragma: no cover - SymPy proves it
        raise DerivationError("the expected tokens per step did not reduce to "
                              "(1 - alpha^(gamma+1))/(1 - alpha)")
    return closed, closed / (GAMMA * C + 1)


def __getattr__(name: str) -> Expr:
    """``TOKENS`` and ``SPEEDUP``, the two results of :func:`derived`, derived on first use
    (the summation and its proof take a while; importing the module does not run them)."""
    if name in ("TOKENS", "SPEEDUP"):
        return derived()[name == "SPEEDUP"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _tokens() -> Any:
    """The derived expected tokens as a function of exact alpha and gamma (SymPy's own
    arithmetic, so exact)."""
    return sp.lambdify((ALPHA, GAMMA), derived()[0], modules="sympy")


@dataclass(frozen=True)
class Speculation:
    """Expected tokens per verification step and speedup at one alpha, gamma, c (exact)."""

    alpha: Expr
    gamma: int
    cost_ratio: Expr
    tokens_per_step: Expr
    speedup: Expr

    @property
    def step_cost(self) -> Expr:
        """A verification step's time in plain decode steps: gamma c + 1."""
        return self.gamma * self.cost_ratio + 1


def _number(value: Expr | int | str, where: str) -> Expr:
    if not isinstance(value, str):
        return sp.sympify(value)
    try:
        return sp.Rational(Fraction(value.strip()))
    except (ValueError, ZeroDivisionError):
        raise InputError(f"expected a number such as 0.8 or 4/5, got {value!r}",
                         where) from None


def _checked(alpha: Expr | int | str, cost_ratio: Expr | int | str) -> tuple[Expr, Expr]:
    a, c = _number(alpha, "alpha"), _number(cost_ratio, "cost_ratio")
    if not (a.is_number and a.is_real and 0 <= a <= 1):
        raise InputError(f"an acceptance rate is between 0 and 1, got {alpha}", "alpha")
    if not (c.is_number and c.is_real and c >= 0):
        raise InputError(f"a draft's cost ratio is 0 or more, got {cost_ratio}",
                         "cost_ratio")
    return a, c


@records(tokens_per_step=COUNT, speedup=COUNT, step_cost=COUNT)
def speculate(alpha: Expr | int | str, gamma: int, cost_ratio: Expr | int | str
              ) -> Speculation:
    """Speculative decoding with acceptance rate ``alpha``, ``gamma`` draft tokens per step
    and a draft step costing ``cost_ratio`` target steps (the paper's c).

    >>> speculate(0, 3, sp.Rational(1, 10)).speedup
    10/13
    """
    a, c = _checked(alpha, cost_ratio)
    if not isinstance(gamma, int) or gamma < 1:
        raise InputError(f"the draft tokens per step are a whole number of 1 or more, got "
                         f"{gamma!r}", "gamma")
    tokens = sp.Integer(gamma + 1) if a == 1 else _tokens()(a, sp.Integer(gamma))
    return Speculation(a, gamma, c, tokens, tokens / (gamma * c + 1))


def best_draft(alpha: Expr | int | str, cost_ratio: Expr | int | str) -> Speculation | None:
    """The draft length with the largest expected speedup, or None when it has none: the
    speedup grows without end in gamma (a free draft, c = 0, with alpha > 0; alpha = 1 with
    c < 1, toward 1/c) or still grows at ``MAX_GAMMA``. For alpha < 1 the speedup is a
    concave numerator over a positive linear denominator in gamma, so it rises to one peak
    and falls: the first fall ends the search (ties go to the shorter draft).

    >>> best_draft(sp.Rational(4, 5), sp.Rational(1, 20)).gamma
    8
    """
    a, c = _checked(alpha, cost_ratio)
    if (c == 0 and a > 0) or (a == 1 and c < 1):
        return None
    best = speculate(a, 1, c)
    for g in range(2, MAX_GAMMA + 1):
        s = speculate(a, g, c)
        if s.speedup <= best.speedup:
            return best
        best = s
    return None


@records(COUNT)
def cost_ratio_of(draft: ModelConfig, target: ModelConfig) -> Expr:
    """The paper's c for a draft and a target model decoding one sequence: each step is
    bound by HBM and reads every weight a token multiplies once, in one dtype, so c is the
    ratio of those weights (the KV cache and the draft's own overheads not counted).

    >>> from symroof.models import model
    >>> cost_ratio_of(model("llama-2-7b"), model("llama-2-70b"))
    1613121/16776002
    """
    if draft.vocab != target.vocab:
        raise InputError(f"the draft {draft.name} has a vocabulary of {draft.vocab}, the "
                         f"target {target.name} {target.vocab}: speculative decoding needs "
                         "one vocabulary", "draft")
    return sp.Rational(model_params(draft), model_params(target))


def no_best(alpha: Expr | int | str, cost_ratio: Expr | int | str) -> str:
    """Why :func:`best_draft` found no best draft length ("" when it did)."""
    a, c = _checked(alpha, cost_ratio)
    if c == 0 and a > 0:
        return "none: with a free draft the speedup grows with every draft token"
    if a == 1 and c < 1:
        return "none: at alpha = 1 the speedup grows with every draft token, toward 1/c"
    return "" if best_draft(a, c) else (f"none: the speedup still grows at {MAX_GAMMA} "
                                        "draft tokens")
