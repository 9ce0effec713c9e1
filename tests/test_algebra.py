"""The cost algebra: the same exact results as SymPy's cancel, by a cheaper road.

Laws: ``cancel`` equals ``sympy.cancel`` on random rational functions (with and without a
common factor planted in both sides); a long chain's intensity is its total FLOPs over its
total bytes, in lowest terms; a factor common to both sides is found however many other
variables there are.
"""

from __future__ import annotations

import itertools
import random

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.sizes import sizes
from symroof.engine.algebra import cancel, is_rational_function, polynomial_coefficients
from symroof.engine.ops import einsum, sequence
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import threshold
from symroof.hardware.catalog import chip
from tests.conftest import examples

X = sizes("B D F G")
V5E = chip("tpu-v5e", hbm="B1")

terms = st.lists(st.tuples(st.integers(-6, 6).filter(bool),
                           st.tuples(*(st.integers(0, 2) for _ in X))),
                 min_size=1, max_size=4)


def poly(spec: list[tuple[int, tuple[int, ...]]]) -> sp.Expr:
    return sp.Add(*(c * sp.Mul(*(x**e for x, e in zip(X, es, strict=True)))
                    for c, es in spec))


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(terms, terms, terms, st.integers(1, 6))
def test_cancel_is_sympy_cancel(num: list, den: list, common: list, divisor: int) -> None:
    p, q, h = poly(num), poly(den), poly(common)
    if q == 0 or h == 0:
        return
    for expr in (p / q, p * h / (q * h), (p / divisor) / (q * h / 3), p / q + h / divisor):
        assert cancel(expr) == sp.cancel(expr)


def chain(n: int) -> sp.Expr:
    return sequence(*(einsum(f"B W{i}, W{i} W{i + 1} -> B W{i + 1}", "bf16")
                      for i in range(n)))


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(1, 12))
def test_a_chains_intensity_is_total_flops_over_total_bytes(n: int) -> None:
    op = chain(n)
    ws = sizes(" ".join(f"W{i}" for i in range(n + 1)))
    b = X[0]
    flops = sum(2 * b * ws[i] * ws[i + 1] for i in range(n))
    moved = sum(2 * (b * ws[i] + ws[i] * ws[i + 1] + b * ws[i + 1]) for i in range(n))
    intensity = roofline(op, V5E).intensity
    assert intensity == sp.cancel(flops / moved)
    num, den = sp.fraction(intensity)
    assert sp.expand(2 * num - flops) == 0 and sp.expand(2 * den - moved) == 0


@pytest.mark.slow
@settings(max_examples=examples(5), deadline=None)
@given(st.integers(20, 40), st.randoms(use_true_random=False))
def test_long_chain_threshold_holds_at_random_sizes(n: int, rnd: random.Random) -> None:
    op = chain(n)
    t = threshold(roofline(op, V5E), "B")
    sizes_ = {sp.Symbol(f"W{i}", positive=True): rnd.randint(1000, 9000) for i in range(n + 1)}
    at = t.at(sizes_)
    crit = at.exact
    b = X[0]
    rl = roofline(op, V5E)
    gap = (rl.t_math - rl.t_comms["hbm"]).subs(sizes_)
    assert crit.is_Rational and gap.subs(b, crit) == 0
    assert gap.subs(b, at.integer) > 0 > gap.subs(b, at.integer - 1)


def test_a_common_factor_among_many_variables_is_cancelled() -> None:
    ys = sizes(" ".join(f"y{i}" for i in range(40)))
    p = sp.Add(*ys) + 1
    q = sp.Add(*(a * b for a, b in itertools.pairwise(ys))) + 7
    h = ys[3] + 2 * ys[17]
    out = cancel(sp.expand(3 * p * h) / sp.expand(6 * q * h))
    assert sp.fraction(out) == (p, sp.expand(2 * q))


def test_a_common_factor_in_too_many_variables_stays_exact() -> None:
    ys = sizes(" ".join(f"y{i}" for i in range(12)))
    h = sp.Add(*ys[:8])  # in more variables than cancel looks into
    expr = sp.expand(h * (ys[8] + ys[9])) / sp.expand(h * (ys[10] + 3 * ys[11]))
    out = cancel(expr)
    rnd = random.Random(5)
    for _ in range(5):
        point = {y: rnd.randint(1, 99) for y in ys}
        assert out.subs(point) == expr.subs(point)


@settings(max_examples=examples(40), deadline=None)
@given(terms, st.integers(1, 12))
def test_polynomial_coefficients_match_together_and_poly(spec: list, divisor: int) -> None:
    expr = poly(spec) / divisor
    split = polynomial_coefficients(expr, X[0])
    assert split is not None
    scale, coeffs = split
    num, den = sp.fraction(sp.together(expr))
    assert scale == den
    by_poly = sp.Poly(sp.expand(num), X[0]).all_coeffs()[::-1]
    assert [coeffs.get(k, 0) for k in range(len(by_poly))] == by_poly


def test_rational_functions_are_told_apart() -> None:
    b, d = X[:2]
    assert is_rational_function(b**2 / (b + d) - sp.Rational(1, 3))
    assert not is_rational_function(b**sp.Rational(1, 2) + d)
    assert not is_rational_function(sp.log(b))
    assert polynomial_coefficients(b / d, b) is None


def test_cancel_of_powers_and_functions_is_sympy_cancel() -> None:
    b, d, f, _ = X
    alpha = sizes("alpha")[0]
    for expr in (sp.sqrt(b) * d / (sp.sqrt(b) * f + sp.sqrt(b)), b**alpha * d / (b**alpha + b),
                 sp.log(b) * (d + f) / (2 * d + 2 * f), (1.5 * b + 3) / (b + 2),
                 sp.Max(b, d) / (2 * sp.Max(b, d))):
        assert cancel(expr) == sp.cancel(expr)


_NAMES = ["a", "b", "c", "o", "p", "w", "x", "y", "z", "B", "D", "F", "D2", "D9", "D10", "N_L",
          "d_model", "k", "x1", "x2", "x10", "T_c", "alpha", "lam", "m", "L0", "L1", "b12", "Z"]


@given(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=12, unique=True),
       st.booleans())
def test_symbols_are_ordered_as_sympys_rings_order_generators(names: list[str],
                                                               positive: bool) -> None:
    from sympy.polys.rings import sring

    from symroof.engine.algebra import ordered_symbols
    symbols = {sp.Symbol(n, positive=positive) for n in names}
    ring, _ = sring(sp.Add(*symbols))
    assert ordered_symbols(symbols) == list(ring.symbols)
