"""Constrained optima in three and four variables, constant factors, and what the general
solver says when it gives no optimum (``unsolved:`` and why, in bounded time)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import DerivationError
from symroof.core.sizes import sizes
from symroof.engine.optimize import Unsolved, lagrange
from tests.conftest import examples, run_cli

XS = sizes("N D P Q")
COEFFS = sizes("A B G H")
C = sizes("C")[0]
# exponents with small denominators: with denominators near 10 the exact optimum carries
# integers of thousands of digits under roots, which SymPy factors as it builds them
rationals = st.builds(Fraction, st.integers(1, 8), st.sampled_from([1, 2, 4]))


def q(x: Fraction) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


POINT = {COEFFS[0]: sp.Rational(406), COEFFS[1]: sp.Rational(411, 7), COEFFS[2]: 3,
         COEFFS[3]: sp.Rational(1, 5), C: sp.Rational(10**23)}


def one(expr: sp.Expr) -> bool:
    """``expr`` is 1 at a point, to 50 digits (its numeric constants carry powers with
    denominators in the thousands, too large to compare exactly)."""
    return abs(sp.N(expr.subs(POINT), 60) - 1) < sp.Float(10) ** -50


@pytest.mark.slow
@settings(max_examples=examples(12), deadline=None)
@given(st.integers(3, 4), st.lists(rationals, min_size=4, max_size=4),
       st.lists(rationals, min_size=4, max_size=4), st.integers(1, 12))
def test_power_law_optimum_in_three_and_four_variables(n: int, exps: list[Fraction],
                                                       ks: list[Fraction], c: int) -> None:
    xs, a, k = XS[:n], [q(e) for e in exps[:n]], [q(e) for e in ks[:n]]
    objective = sp.Add(*(COEFFS[i] / xs[i]**a[i] for i in range(n)))
    budget = sp.Eq(c * sp.Mul(*(xs[i]**k[i] for i in range(n))), C)
    opt = lagrange(objective, budget, xs)
    assert opt.method == "power-law"
    share = sp.Add(*(k[j] / a[j] for j in range(n)))
    for i in range(n):  # by hand: a_i T_i / k_i is the same for every i
        assert opt.exponent(xs[i], C) == (1 / a[i]) / share
    assert sp.Add(*(k[i] * opt.exponent(xs[i], C) for i in range(n))) == 1
    at = opt.solution
    assert one(c * sp.Mul(*(at[x]**ki for x, ki in zip(xs, k, strict=True))) / C)
    balance = [a[i] * (COEFFS[i] / xs[i]**a[i]).subs(at) / k[i] for i in range(n)]
    assert all(one(b / balance[0]) for b in balance[1:])


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(st.lists(rationals, min_size=3, max_size=3), st.integers(2, 9), st.integers(1, 9))
def test_constant_factors_do_not_move_the_optimum(exps: list[Fraction], factor: int,
                                                  c: int) -> None:
    xs, a = XS[:3], [q(e) for e in exps]
    core = sp.Add(*(COEFFS[i] / xs[i]**a[i] for i in range(3)))
    budget = sp.Eq(c * xs[0] * xs[1] * xs[2], C)
    plain = lagrange(core, budget, xs)
    for scaled in (factor * core, factor * core + COEFFS[3], (core + 1)**factor):
        other = lagrange(scaled, budget, xs)
        assert other.method == "power-law"
        assert all(one(other.solution[x] / plain.solution[x]) for x in xs)


N, D = XS[:2]
n_, d_ = sp.symbols("n d")


@pytest.mark.parametrize(("objective", "constraint", "xs", "why"), [
    (N**2 + D**2, sp.Eq(N + D, -C, evaluate=False), (N, D),
     "sympy.solve found no solution of the 3 stationarity equations in N, D, lambda"),
    (N + D, sp.Eq(N + D, C), (N, D), "sympy.solve left D undetermined"),
    (n_**2 + d_**2, sp.Eq(n_ + d_, -2), (n_, d_),
     "none of the 1 stationary points sympy.solve found has every one of n, d positive"),
])
def test_the_general_solver_says_unsolved_and_why(objective: sp.Expr, constraint: sp.Eq,
                                                 xs: tuple[sp.Symbol, ...], why: str) -> None:
    with pytest.raises(Unsolved) as caught:
        lagrange(objective, constraint, xs, method="general", timeout=20)
    assert str(caught.value).startswith(f"unsolved: {why}")
    assert isinstance(caught.value, DerivationError)


def test_the_general_solver_is_bounded() -> None:
    a, b = COEFFS[:2]
    objective = a / N**sp.Rational(34, 100) + b / D**sp.Rational(28, 100)
    with pytest.raises(Unsolved, match=r"^unsolved: sympy.solve did not finish within 1 s of "
                                       r"CPU time on the 3 stationarity equations in N, D, lambda"):
        lagrange(objective, sp.Eq(6 * N * D, C), (N, D), method="general", timeout=1)


def test_cli_unsolved_exits_2_with_one_line() -> None:
    done = run_cli("optimize", "--minimize", "N*exp(N) + D", "--subject-to", "N + D = C",
                   "--vars", "N,D", "--method", "general")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsolved: sympy.solve found no solution" in lines[0]
