"""The polynomial through measured points: a count taken at k = 1, 2, 3, 4 becomes a formula
in k (the lowest-degree polynomial through the points, expanded).

>>> k = sp.Symbol("k")
>>> polynomial_through([(1, 3), (2, 5), (3, 7)], k)
2*k + 1
>>> polynomial_through([(1, 1), (2, 4), (4, 16)], k)
k**2

Points with rational coordinates are interpolated in exact rational arithmetic (Newton's
divided differences), the same polynomial ``sympy.interpolate`` gives, expanded, at a
fraction of its cost; any other points (symbolic values, say) go to ``sympy.interpolate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import sympy as sp

from ..core.errors import InputError


def polynomial_through(points: Sequence[tuple[Any, Any]], x: sp.Symbol) -> sp.Expr:
    """The expanded polynomial in ``x`` of lowest degree through ``points`` ((x, y) pairs
    with distinct x).

    >>> polynomial_through([(0, 1), (1, 0)], sp.Symbol("t"))
    1 - t
    """
    if not points:
        raise InputError("no points to interpolate")
    try:  # numbers and expressions; text is never parsed here
        xs = [sp.sympify(p[0], strict=True) for p in points]
        ys = [sp.sympify(p[1], strict=True) for p in points]
    except sp.SympifyError as exc:
        raise InputError(f"a point is not a number or an expression: {exc.expr!r}") from None
    if len(set(xs)) != len(xs):
        raise InputError(f"two points share an x: {sorted(map(str, xs))}")
    if not all(v.is_Rational for v in (*xs, *ys)):
        return sp.expand(sp.interpolate(list(zip(xs, ys, strict=True)), x))
    coefficients = _newton([Fraction(int(v.p), int(v.q)) for v in xs],
                           [Fraction(int(v.p), int(v.q)) for v in ys])
    return sp.Add(*(sp.Rational(c.numerator, c.denominator) * x**k
                    for k, c in enumerate(coefficients) if c))


def _newton(xs: list[Fraction], ys: list[Fraction]) -> list[Fraction]:
    """The coefficients, lowest power first, of the polynomial through (xs, ys)."""
    n = len(xs)
    table = list(ys)
    divided = [table[0]]
    for level in range(1, n):  # divided differences, one level at a time
        table = [(table[i + 1] - table[i]) / (xs[i + level] - xs[i]) for i in range(n - level)]
        divided.append(table[0])
    poly = [Fraction(0)] * n
    basis = [Fraction(1)]  # prod (x - xs[j]) for j < level, lowest power first
    for level, d in enumerate(divided):
        for k, b in enumerate(basis):
            poly[k] += d * b
        basis = [Fraction(0), *basis]  # times x ...
        for k in range(len(basis) - 1):
            basis[k] -= xs[level] * basis[k + 1]  # ... minus xs[level] times the old basis
    return poly
