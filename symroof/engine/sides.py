"""Which side of its one positive root a polynomial is positive on, as far as SymPy proves
it, and Descartes' count of its positive roots. Nothing is sampled.

>>> x, K = sp.symbols("x K", positive=True)
>>> side(sp.Poly(x**2 - K**2, x), x, K), sign_changes(sp.Poly(x**2 - K*x - 1, x))
('>', 1)
"""

from __future__ import annotations

from itertools import pairwise

import sympy as sp

# the direction of a threshold whose side SymPy cannot prove: only the balance point is known
UNPROVEN = "unproven"


def sign_changes(poly: sp.Poly) -> int | None:
    """Sign changes along the coefficients (Descartes' bound on the positive roots), or None
    while a coefficient's sign is unknown.

    >>> K, M, x = sp.symbols("K M x", positive=True)
    >>> sign_changes(sp.Poly(x**2 - K*x - M, x)), sign_changes(sp.Poly(x**2 + (K - M)*x, x))
    (1, None)
    """
    signs = []
    for c in poly.all_coeffs():
        if c == 0:
            continue
        if c.is_positive is None and c.is_negative is None:
            return None
        signs.append(bool(c.is_positive))
    return sum(a != b for a, b in pairwise(signs))


def side(poly: sp.Poly, s: sp.Symbol, root: sp.Expr, whole: bool = True) -> str:
    """On which side of ``root`` (the one positive root of ``poly``) the polynomial is
    positive, as far as SymPy proves it: ``>`` above the root, ``<`` below it, or
    ``UNPROVEN``.

    The slope at the root decides when its sign is known; otherwise, with no other
    positive root (``whole``), the leading coefficient gives the sign above the root and
    the lowest nonzero one the sign below it. Nothing is sampled.

    >>> K = sp.Symbol("K", positive=True)
    >>> x = sp.Symbol("x", positive=True)
    >>> side(sp.Poly(x**2 - K**2, x), x, K), side(sp.Poly(K**2 - x**2, x), x, K)
    ('>', '<')
    >>> c = sp.Symbol("c", real=True)
    >>> side(sp.Poly(c * (x - K), x), x, K)
    'unproven'
    """
    slope = sp.diff(poly.as_expr(), s).subs(s, root)
    if slope.is_positive:
        return ">"
    if slope.is_negative:
        return "<"
    coeffs = [c for c in poly.all_coeffs() if c != 0]
    if whole and coeffs and coeffs[0].is_positive:
        return ">"
    if whole and coeffs and coeffs[-1].is_positive:
        return "<"
    return UNPROVEN
