"""The supremum over a positive size of a function of that size alone: a rational
function, with maxima and minima of rational functions in it (a roofline's ``T_lower`` is
one), found from the breakpoints, the poles and the critical points.

>>> from symroof import symbol
>>> r = symbol("r")
>>> supremum((r + 1) / sp.Max(1, r), r)
2
>>> supremum(r / (1 + r**2), r)
1/2

On each interval between breakpoints (where two arguments of a Max or Min cross) the
function is one rational function; its supremum there is the largest of its values at the
critical points inside and its limits at the ends. Any other expression goes to
``sympy.calculus.util.function_range`` (much slower, and general).
"""

from __future__ import annotations

from itertools import pairwise

import sympy as sp

from ..core.errors import DerivationError
from .algebra import cancel, is_rational_function
from .equations import roots


def supremum(expr: sp.Expr, s: sp.Symbol) -> sp.Expr:
    """The least upper bound of ``expr`` over ``s > 0`` (``oo`` when it is unbounded).

    >>> from symroof import symbol
    >>> r = symbol("r")
    >>> supremum(sp.Min(r, 1 / r), r), supremum(r**2 - r, r)
    (1, oo)
    """
    if expr.free_symbols - {s}:
        raise DerivationError(f"the supremum over {s} of {expr} depends on "
                              f"{', '.join(sorted(map(str, expr.free_symbols - {s})))}")
    found = _piecewise_rational(expr, s)
    if found is None:
        from sympy.calculus.util import function_range
        return function_range(expr, s, sp.Interval.open(0, sp.oo)).sup
    return found


def _piecewise_rational(expr: sp.Expr, s: sp.Symbol) -> sp.Expr | None:
    extremes = sorted(expr.atoms(sp.Max, sp.Min), key=sp.default_sort_key)
    if any(a.has(sp.Max, sp.Min) or not is_rational_function(a) for m in extremes
           for a in m.args):
        return None
    cuts: set[sp.Expr] = set()
    for m in extremes:
        for i, a in enumerate(m.args):
            for b in m.args[i + 1:]:
                cuts.update(_positive_points(a - b, s))
    ends = [sp.Integer(0), *sorted(cuts, key=lambda c: (sp.N(c, 30), sp.default_sort_key(c))),
            sp.oo]
    best: sp.Expr = sp.S.NegativeInfinity
    for lo, hi in pairwise(ends):
        inside = lo + 1 if hi is sp.oo else (lo + hi) / 2
        piece = expr.xreplace({m: _chosen(m, s, inside) for m in extremes})
        if not is_rational_function(piece):
            return None
        best = sp.Max(best, _on_interval(cancel(piece), s, lo, hi))
        if best is sp.oo:
            break
    return best


def _chosen(m: sp.Basic, s: sp.Symbol, at: sp.Expr) -> sp.Expr:
    """The argument of a Max (Min) that is largest (smallest) at ``s = at``."""
    values = [a.subs(s, at) for a in m.args]
    pick = max if isinstance(m, sp.Max) else min
    return m.args[values.index(pick(values))]


def _positive_points(f: sp.Expr, s: sp.Symbol) -> list[sp.Expr]:
    """The positive real roots of ``f`` (numbers)."""
    if not f.has(s):
        return []
    return [r for r in roots(f, s) if r.is_number and r.is_real and r.is_positive]


def _on_interval(f: sp.Expr, s: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """Supremum of the rational function ``f`` over the open interval (lo, hi): its poles
    inside split it further; on each part, the limits at the ends and the values at the
    critical points."""
    poles = _positive_points(sp.fraction(f)[1], s)
    ends = [lo, *sorted((p for p in poles if _between(p, lo, hi)), key=lambda c: sp.N(c, 30)),
            hi]
    critical = _positive_points(sp.fraction(sp.together(sp.diff(f, s)))[0], s)
    candidates = [f.subs(s, c) for c in critical if _between(c, lo, hi) and c not in poles]
    for a, b in pairwise(ends):
        candidates += [_end(f, s, a, "+"), _end(f, s, b, "-")]
    return sp.Max(*candidates)


def _between(x: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> bool:
    return bool(lo < x) and (hi is sp.oo or bool(x < hi))


def _end(f: sp.Expr, s: sp.Symbol, at: sp.Expr, side: str) -> sp.Expr:
    """The limit of ``f`` as ``s`` tends to ``at`` from ``side``."""
    if at is not sp.oo:
        den = sp.fraction(f)[1]
        if den.subs(s, at) != 0:
            return f.subs(s, at)
        return sp.limit(f, s, at, side)  # a pole: +oo or -oo
    num, den = (sp.Poly(x, s) for x in sp.fraction(f))
    if num.degree() < den.degree():
        return sp.Integer(0)
    ratio = num.LC() / den.LC()
    return ratio if num.degree() == den.degree() else sp.oo * sp.sign(ratio)
