"""Which side of a threshold is compute-bound: proven, or said to be not proven (never
read off a sampled point)."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip, sizes
from symroof.engine.ops import op
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import UNPROVEN, between
from tests.conftest import examples

B, D, E, K, M = sizes("B D E K M")


def two_terms(first: sp.Expr, second: sp.Expr) -> object:
    return roofline(op("x", 1, 1), chip("tpu-v5e"), extra={"a": first, "b": second})


def test_a_quadratic_whose_sign_depends_on_the_other_sizes_is_not_proven() -> None:
    # a - b = (D - E)(B^2 - K M): above sqrt(K M) when D > E, below it when D < E
    th = between(two_terms(D * B**2 + E * K * M, E * B**2 + D * K * M), "a", "b", "B")
    assert th.direction == UNPROVEN
    assert th.inequality == sp.Eq(B, sp.sqrt(K * M), evaluate=False)
    assert isinstance(th.relation, sp.Eq)
    assert th.at({"K": 4, "M": 9}).integer is None


def test_a_root_under_a_square_root_is_not_sampled() -> None:
    # a - b = (D - E)(sqrt(B) - K): the old rule sampled D = E = 1 and said '>'
    th = between(two_terms(D * sp.sqrt(B) + E * K, E * sp.sqrt(B) + D * K), "a", "b", "B")
    assert (th.exact, th.direction) == (K**2, UNPROVEN)


@settings(max_examples=examples(10), deadline=None)
@given(k=st.integers(1, 50), m=st.integers(1, 50))
def test_a_proven_side_is_the_side_the_first_term_is_larger(k: int, m: int) -> None:
    # a - b = D (B^2 - K M): larger above the root; swapped, larger below it
    above = between(two_terms(D * B**2, D * K * M), "a", "b", "B").at({"K": k, "M": m})
    below = between(two_terms(D * K * M, D * B**2), "a", "b", "B").at({"K": k, "M": m})
    assert (above.direction, below.direction) == (">", "<")
    root = sp.sqrt(k * m)
    assert above.exact == root and below.exact == root
    assert (D * B**2 - D * K * M).subs({K: k, M: m, D: 1, B: above.integer}) > 0
    assert (D * K * M - D * B**2).subs({K: k, M: m, D: 1, B: below.integer}) > 0


def test_the_one_positive_root_of_a_quadratic_is_found_by_descartes() -> None:
    # B^2 / C = (K B + M) / W: B^2 - a K B - a M = 0 with a = C / W; the coefficients change
    # sign once, so one root is positive (the larger): B = (a K + sqrt(a^2 K^2 + 4 a M)) / 2
    v5e = chip("tpu-v5e")
    rl = roofline(op("q", B**2, K * B + M), v5e)
    th = between(rl, "math", "hbm", "B")
    a = v5e.peak("bf16") / v5e.bandwidth()
    assert sp.simplify(th.exact - (a * K + sp.sqrt(a**2 * K**2 + 4 * a * M)) / 2) == 0
    assert th.direction == ">"


@settings(max_examples=examples(60), deadline=None)
@given(k=st.fractions().filter(lambda q: q != 0), c=st.fractions(),
       op=st.sampled_from([">", ">=", "<", "<="]))
def test_a_linear_condition_is_solved_as_sympy_solves_it(k: object, c: object, op: str) -> None:
    """``solve_condition``'s own side of a linear condition in a positive size is what
    SymPy's solve_univariate_inequality gives (``_solved``), whatever the signs."""
    from symroof.engine.thresholds import _linear_side, _solved, solve_condition
    rel = sp.Rel(sp.Rational(k) * D + sp.Rational(c), 0, op)  # type: ignore[arg-type]
    if not isinstance(rel, sp.Rel):  # decided by D > 0 alone
        return
    assert solve_condition(rel) == _solved(rel, D)
    assert _linear_side(rel, D) in (None, _solved(rel, D))
