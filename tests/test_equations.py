"""Laws of the exact root finder, the supremum over a positive size, matrix derivatives
and the polynomial through points."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import (
    DerivationError,
    InputError,
    matrix_derivative,
    polynomial_through,
    positive_root,
    roots,
    sizes,
    supremum,
    symbol,
)
from tests.conftest import examples

positive = st.fractions(min_value=sp.Rational(1, 9), max_value=40, max_denominator=9).map(
    sp.Rational)
small = st.integers(min_value=1, max_value=9).map(sp.Integer)
s = symbol("s")
x = sp.Symbol("x")


@pytest.mark.slow
@given(positive, positive)
@settings(max_examples=examples(100), deadline=None)
def test_roots_of_a_quadratic_are_its_two_factors_in_order(a: sp.Rational, b: sp.Rational,
                                                          ) -> None:
    found = roots(sp.expand((s - a) * (s - b)), s)
    assert found == sorted({a, b}, key=sp.default_sort_key)
    assert found == sp.solve((s - a) * (s - b), s)


@pytest.mark.slow
@given(positive, positive)
@settings(max_examples=examples(100), deadline=None)
def test_a_positive_size_admits_only_the_positive_root(a: sp.Rational, b: sp.Rational) -> None:
    # (s - a)(s + b) = 0: for a positive s only a
    assert positive_root(sp.Eq(s**2 + (b - a) * s, a * b), s) == a
    assert roots(sp.expand((x - a) * (x + b)), x) == [-b, a]


def test_roots_where_a_denominator_vanishes_are_left_out() -> None:
    assert roots((x**2 - 1) / (x - 1), x) == [-1]
    assert roots(sp.Eq(1 / (x - 1), 0), x) == []
    assert roots(sp.Eq(x, x + 1), x) == []


@given(positive, positive, positive, positive)
@settings(max_examples=examples(25), deadline=None)
def test_a_power_law_balance_is_solved_for_either_side(a: sp.Rational, b: sp.Rational,
                                                       alpha: sp.Rational, beta: sp.Rational,
                                                       ) -> None:
    A, B, N, D = sizes("A B N D")
    balance = sp.Eq(A * alpha / N**alpha, B * beta / D**beta)
    d = positive_root(balance, D)
    assert not d.has(D) and d.is_positive
    at = {A: 3, B: 5, N: 7}
    lhs, rhs = sp.N(balance.lhs.subs(at), 40), sp.N(balance.rhs.subs(D, d).subs(at), 40)
    assert abs(lhs - rhs) <= sp.Float("1e-30") * abs(lhs)


def test_symbolic_exponents_are_isolated_as_one_power() -> None:
    A, B, N, D, alpha, beta = sizes("A B N D alpha beta")
    d = positive_root(sp.Eq(A * alpha / N**alpha, B * beta / D**beta), D)
    assert d == (B * beta * N**alpha / (A * alpha)) ** (1 / beta)


@pytest.mark.slow
def test_an_equation_without_a_rational_or_power_form_goes_to_sympy() -> None:
    assert roots(sp.exp(x) - 2, x) == [sp.log(2)]
    with pytest.raises(DerivationError, match=r"^-x\*\*2 \+ exp\(x\) - sin\(x\) = 0 has no "
                       r"closed form in x that SymPy finds$"):
        roots(sp.exp(x) - sp.sin(x) - x**2, x)


def test_sympy_s_time_limit_is_cpu_time_and_named_when_it_runs_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit counts the process's CPU time (sympy.solve spends about 1 s of it on this
    equation whatever the machine's load, far below the 10 s); an injected limit of 0.05 s
    runs out, and the message names it."""
    import symroof.engine.equations as equations
    monkeypatch.setattr(equations, "SOLVE_SECONDS", 0.05)
    with pytest.raises(DerivationError, match=r"^-x\*\*2 \+ exp\(x\) - sin\(x\) = 0 has no "
                       r"closed form in x that SymPy finds within 0.05 s of CPU time$"):
        roots(sp.exp(x) - sp.sin(x) - x**2, x)


def test_the_count_of_positive_roots_is_named_when_it_is_not_one() -> None:
    with pytest.raises(DerivationError, match=r"^s\*\*2 \+ 4 = 0 has 0 positive roots in s$"):
        positive_root(s**2 + 4, s)
    with pytest.raises(DerivationError, match=r"has 2 positive roots in s: \[1, 2\]"):
        positive_root(sp.Eq(s**2 + 2, 3 * s), s)


def test_a_relation_is_not_an_equation() -> None:
    with pytest.raises(DerivationError, match="is not an equation"):
        roots(sp.Lt(s, 1), s)


def _by_pieces(expr: sp.Expr, r: sp.Symbol) -> sp.Expr:
    """The supremum over r > 0 by SymPy's own route: Piecewise branches and function_range."""
    from sympy.calculus.util import function_range
    pieces = sp.piecewise_fold(expr.rewrite(sp.Piecewise))
    best: sp.Expr = sp.S.NegativeInfinity
    done: sp.Set = sp.EmptySet
    branches = pieces.args if isinstance(pieces, sp.Piecewise) else [(pieces, sp.true)]
    for piece, cond in branches:
        where = sp.S.Reals if cond == sp.true else cond.as_set()
        region = sp.Interval.open(0, sp.oo).intersect(where) - done
        done = done | region
        if region is not sp.EmptySet:
            best = sp.Max(best, function_range(piece, r, region).sup)
    return best


def test_the_overlap_bound_and_other_known_suprema() -> None:
    r = symbol("r")
    assert supremum((r + 1) / sp.Max(1, r), r) == 2  # T_upper / T_lower <= 2
    assert supremum(r / (1 + r**2), r) == sp.Rational(1, 2)
    assert supremum(sp.Min(r, 1 / r), r) == 1
    assert supremum(r**2 - r, r) == sp.oo
    assert supremum(1 / (r - 1), r) == sp.oo  # a pole inside
    assert supremum(-1 / (r - 1) ** 2, r) == 0
    assert supremum(sp.Integer(3), r) == 3


@pytest.mark.slow
@given(small, small, small, small, small)
@settings(max_examples=examples(12), deadline=None)
def test_supremum_agrees_with_sympys_piecewise_route(a: sp.Integer, b: sp.Integer,
                                                     c: sp.Integer, d: sp.Integer,
                                                     e: sp.Integer) -> None:
    r = symbol("r")
    f = (a * r + b) / sp.Max(c, d * r, e * r - c)
    assert supremum(f, r) == _by_pieces(f, r)


@pytest.mark.slow
@given(small, small, small, st.lists(positive, min_size=1, max_size=6))
@settings(max_examples=examples(30), deadline=None)
def test_no_value_exceeds_the_supremum(a: sp.Integer, b: sp.Integer, c: sp.Integer,
                                       points: list[sp.Rational]) -> None:
    r = symbol("r")
    f = (a * r**2 + b) / sp.Max(c, r**2, r)
    sup = supremum(f, r)
    assert all(f.subs(r, p) <= sup for p in points)


def test_a_supremum_over_one_size_names_the_others() -> None:
    r, k = symbol("r"), symbol("k")
    with pytest.raises(DerivationError, match="depends on k"):
        supremum(r / (k + r), r)


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
@settings(max_examples=examples(12), deadline=None)
def test_a_matrix_derivative_is_the_gradient_of_the_entries(m: int, n: int, k: int) -> None:
    # d tr(A X B) / dX, checked entry by entry on explicit matrices of symbols
    A, X, B = (sp.MatrixSymbol(name, *shape) for name, shape in
               (("A", (m, n)), ("X", (n, k)), ("B", (k, m))))
    grad = matrix_derivative(sp.Trace(A * X * B), X)
    explicit = {M: sp.Matrix(*M.shape, lambda i, j, M=M: sp.Symbol(f"{M.name}{i}{j}"))
                for M in (A, X, B)}
    f = (explicit[A] * explicit[X] * explicit[B]).trace()
    entries = sp.Matrix(n, k, lambda i, j: sp.diff(f, explicit[X][i, j]))
    assert sp.expand(grad.subs(explicit).doit().as_explicit() - entries) == sp.zeros(n, k)


rational_points = st.lists(st.tuples(st.integers(-9, 9), st.integers(-30, 30),
                                     st.integers(1, 4)),
                           min_size=1, max_size=6, unique_by=lambda p: p[0])


@given(rational_points)
@settings(max_examples=examples(60), deadline=None)
def test_the_polynomial_through_points_is_sympys_interpolant(raw: list) -> None:
    k = sp.Symbol("k")
    points = [(sp.Integer(a), sp.Rational(b, c)) for a, b, c in raw]
    fitted = polynomial_through(points, k)
    assert sp.srepr(fitted) == sp.srepr(sp.expand(sp.interpolate(points, k)))
    assert all(fitted.subs(k, a) == b for a, b in points)


def test_symbolic_points_and_bad_points() -> None:
    k, a = sp.Symbol("k"), symbol("a")
    assert polynomial_through([(1, a), (2, 2 * a)], k) == a * k
    with pytest.raises(InputError, match="no points"):
        polynomial_through([], k)
    with pytest.raises(InputError, match="a point is not a number or an expression: '3'"):
        polynomial_through([(1, "3")], k)
    with pytest.raises(InputError, match="two points share an x"):
        polynomial_through([(1, 2), (1, 3)], k)
