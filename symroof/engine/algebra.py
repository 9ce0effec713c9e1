"""Rational-function algebra whose cost stays polynomial in the size of its input.

>>> from symroof import sizes
>>> B, D, F = sizes("B D F")
>>> cancel((2*B*D*F + 2*B*F*F) / (2*B*D + 2*B*F + 2*D*F))
(B*D*F + B*F**2)/(B*D + B*F + D*F)

``cancel`` returns exactly what ``sympy.cancel`` returns (the unique coprime numerator and
denominator with integer coefficients and a positive leading coefficient below), but it
finds the common factor another way. SymPy's heuristic GCD evaluates both polynomials at
one integer per variable, and those integers grow with the number of variables: a chain of
matmuls whose widths all differ takes seconds at 20 ops and hours at 50. Here the common
monomial and the integer content are taken out structurally, and that nothing else is
common is *proved* one variable at a time: the two polynomials, evaluated modulo a prime
at a point for every other variable, have a constant GCD in that variable. (If G divided
both and had degree d in x, its image there would divide both images with the same degree
d whenever the leading coefficient in x does not vanish, which is checked.) Each check
costs one pass over the terms. The variables a check cannot clear are the only ones a
common factor can involve; with a few of them, that factor is the GCD of the
coefficients over the other variables, found exactly by SymPy on the few; with more,
nothing beyond the monomial and the content is cancelled (the result is still exact).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from fractions import Fraction
from math import gcd, lcm
from typing import Any

import sympy as sp

PRIME = 2**61 - 1
MAX_SHARED = 4  # a common factor in more variables than this is left in place
Monomial = tuple[int, ...]


def cancel(expr: sp.Expr) -> sp.Expr:
    """``sympy.cancel(expr)``, in time polynomial in its terms and symbols."""
    from sympy.polys.polyerrors import PolynomialError
    from sympy.polys.rings import sring
    from sympy.simplify.simplify import signsimp

    f = sp.sympify(expr)
    if not isinstance(f, sp.Expr) or f.is_Number or f.has(sp.Piecewise) or \
            not f.is_commutative:
        return sp.cancel(f)
    if not is_rational_function(f):
        # the generators may depend on the form: prepare it as sympy.cancel does
        f = sp.factor_terms(signsimp(f), radical=True)
    p, q = f.as_numer_denom()
    try:
        ring, (num, den) = sring((p, q))
    except PolynomialError:
        return sp.cancel(f)
    if not ring.ngens:
        return f.expand()
    if not (ring.domain.is_ZZ or ring.domain.is_QQ):
        return sp.cancel(f)
    top, bottom = _lowest_terms(num, den)
    return ring.from_dict(top).as_expr() / ring.from_dict(bottom).as_expr()


def substitute(expr: sp.Basic, values: Mapping[sp.Basic, sp.Basic]) -> sp.Basic:
    """``expr.subs(values)``; when every key is a symbol and every value a number, in one
    pass over ``expr`` (``subs`` walks it once per key).

    >>> from symroof import sizes
    >>> B, D = sizes("B D")
    >>> substitute(B*D/(B + D), {B: 2, D: 6})
    3/2
    """
    if all(k.is_Symbol for k in values) and all(sp.sympify(v).is_number
                                                 for v in values.values()):
        return expr.xreplace({k: sp.sympify(v) for k, v in values.items()})
    return expr.subs(values)


def is_rational_function(expr: sp.Basic) -> bool:
    """True when ``expr`` is built of symbols and rational numbers by ``+``, ``*`` and
    integer powers alone (its generators are then its symbols, whatever its form).

    >>> from symroof import sizes
    >>> B, D = sizes("B D")
    >>> is_rational_function(B / (B + D)**2), is_rational_function(sp.sqrt(B))
    (True, False)
    """
    stack = [expr]
    while stack:
        e = stack.pop()
        if e.is_Symbol or e.is_Rational:
            continue
        if e.is_Pow:
            if not e.exp.is_Integer:
                return False
            stack.append(e.base)
        elif e.is_Add or e.is_Mul:
            stack.extend(e.args)
        else:
            return False
    return True


def polynomial_coefficients(expr: sp.Expr, s: sp.Symbol,
                            ) -> tuple[sp.Integer, dict[int, sp.Expr]] | None:
    """``(L, {k: c_k})`` with ``L * expr = sum of c_k s**k``: ``L`` the least common
    denominator of the coefficients, each ``c_k`` free of ``s`` with integer coefficients;
    None unless ``expr`` is a polynomial in its symbols.

    >>> from symroof import sizes
    >>> B, D = sizes("B D")
    >>> polynomial_coefficients(B*D/6 - D/4 + 1, B)
    (12, {0: 12 - 3*D, 1: 2*D})
    """
    from sympy.polys.polyerrors import PolynomialError
    from sympy.polys.rings import sring

    if not is_rational_function(expr):
        return None
    try:
        ring, poly = sring(sp.expand(expr))
    except PolynomialError:
        return None
    if not all(g.is_Symbol for g in ring.symbols) or \
            not (ring.domain.is_ZZ or ring.domain.is_QQ):
        return None
    terms = _fractions(poly)
    scale = lcm(*(c.denominator for c in terms.values())) if terms else 1
    at = ring.symbols.index(s) if s in ring.symbols else None
    parts: dict[int, dict[Monomial, int]] = {}
    for m, c in terms.items():
        k = m[at] if at is not None else 0
        rest = m if at is None else (*m[:at], 0, *m[at + 1:])
        parts.setdefault(k, {})[rest] = int(c * scale)
    return sp.Integer(scale), {k: ring.from_dict(part).as_expr()
                               for k, part in sorted(parts.items())}


def _lowest_terms(num: object, den: object) -> tuple[dict[Monomial, int], dict[Monomial, int]]:
    """Coprime integer numerator and denominator of ``num / den`` (ring elements over ZZ or
    QQ), the denominator's leading coefficient positive."""
    f, g = _fractions(num), _fractions(den)
    scale = lcm(*(c.denominator for c in (*f.values(), *g.values())))
    f_int = {m: int(c * scale) for m, c in f.items()}
    g_int = {m: int(c * scale) for m, c in g.items()}
    if not f_int:
        return {}, {(0,) * len(next(iter(g_int))): 1}
    n = len(next(iter(f_int)))
    low = tuple(min(m[i] for m in (*f_int, *g_int)) for i in range(n))
    content = 0
    for c in (*f_int.values(), *g_int.values()):
        content = gcd(content, c)
    f_int = {_minus(m, low): c // content for m, c in f_int.items()}
    g_int = {_minus(m, low): c // content for m, c in g_int.items()}
    shared = _shared_variables(f_int, g_int, n)
    if shared and len(shared) <= MAX_SHARED:
        f_int, g_int = _divide_common(f_int, g_int, shared, n)
    lead = max(g_int)  # lex order on exponent tuples: the ring's leading term
    if g_int[lead] < 0:
        f_int = {m: -c for m, c in f_int.items()}
        g_int = {m: -c for m, c in g_int.items()}
    return f_int, g_int


def _fractions(poly: object) -> dict[Monomial, Fraction]:
    """A ring element's terms with its coefficients (ZZ or QQ) as exact fractions."""
    return {m: Fraction(int(getattr(c, "numerator", c)), int(getattr(c, "denominator", 1)))
            for m, c in poly.items()}  # type: ignore[attr-defined]


def _minus(m: Monomial, low: Monomial) -> Monomial:
    return tuple(a - b for a, b in zip(m, low, strict=True))


def _shared_variables(f: dict[Monomial, int], g: dict[Monomial, int], n: int) -> set[int]:
    """Variables in which a common factor of ``f`` and ``g`` might have positive degree:
    all others are proved absent from it."""
    rng = random.Random(len(f) * 1_000_003 + len(g))
    suspects = set(range(n))
    for _ in range(2):  # a second point clears what an unlucky first one kept
        point = [rng.randrange(2, PRIME - 1) for _ in range(n)]
        fv, gv = _Values(f, point), _Values(g, point)
        suspects = {i for i in suspects if not _cleared(fv, gv, i)}
        if not suspects:
            break
    return suspects


class _Values:
    """A polynomial's terms evaluated modulo PRIME at one point, kept per variable so that
    its image as a polynomial in any one variable costs one pass over that variable's terms."""

    def __init__(self, terms: dict[Monomial, int], point: Sequence[int]) -> None:
        self.point = point
        self.by_var: dict[int, list[tuple[int, int]]] = {}
        self.total = 0
        for m, c in terms.items():
            v = c % PRIME
            for i, e in enumerate(m):
                if e:
                    v = v * pow(point[i], e, PRIME) % PRIME
            for i, e in enumerate(m):
                if e:
                    self.by_var.setdefault(i, []).append((e, v))
            self.total = (self.total + v) % PRIME

    def image(self, i: int) -> list[int]:
        """Dense coefficients (constant first) in variable ``i``, the others at the point."""
        terms = self.by_var.get(i, [])
        degree = max((e for e, _ in terms), default=0)
        coeffs = [0] * (degree + 1)
        coeffs[0] = self.total
        inverse = pow(self.point[i], -1, PRIME)
        for e, v in terms:
            coeffs[0] = (coeffs[0] - v) % PRIME
            coeffs[e] = (coeffs[e] + v * pow(inverse, e, PRIME)) % PRIME
        return coeffs


def _cleared(f: _Values, g: _Values, i: int) -> bool:
    """True when a common factor of the two polynomials provably has degree 0 in ``i``."""
    if i not in f.by_var or i not in g.by_var:
        return True
    a, b = f.image(i), g.image(i)
    if a[-1] == 0 and b[-1] == 0:
        return False  # the degree may have dropped at this point: no proof
    return len(_gcd_mod(a, b)) == 1


def _gcd_mod(a: list[int], b: list[int]) -> list[int]:
    """GCD of two dense polynomials over the integers modulo PRIME (constant first)."""
    a, b = _trim(a), _trim(b)
    while b != [0]:
        a, b = b, _remainder(a, b)
    return a


def _trim(a: list[int]) -> list[int]:
    while len(a) > 1 and a[-1] == 0:
        a = a[:-1]
    return a


def _remainder(a: list[int], b: list[int]) -> list[int]:
    """``a mod b`` for dense polynomials modulo PRIME, ``b`` not zero."""
    a = list(a)
    inverse = pow(b[-1], -1, PRIME)
    while len(a) >= len(b) and a != [0]:
        k = a[-1] * inverse % PRIME
        shift = len(a) - len(b)
        for j, c in enumerate(b):
            a[shift + j] = (a[shift + j] - k * c) % PRIME
        a = _trim(a)
    return a


def _divide_common(f: dict[Monomial, int], g: dict[Monomial, int], shared: set[int],
                   n: int) -> tuple[dict[Monomial, int], dict[Monomial, int]]:
    """Divide out the common factor, which lives in the ``shared`` variables only: it is the
    GCD of the coefficients of ``f`` and ``g`` as polynomials in the other variables."""
    from sympy.polys.domains import ZZ
    from sympy.polys.rings import ring as make_ring

    keep = sorted(shared)
    small, *_ = make_ring([f"x{i}" for i in keep], ZZ)

    def split(terms: dict[Monomial, int]) -> dict[Monomial, object]:
        parts: dict[Monomial, dict[Monomial, int]] = {}
        for m, c in terms.items():
            rest = tuple(0 if i in shared else e for i, e in enumerate(m))
            parts.setdefault(rest, {})[tuple(m[i] for i in keep)] = c
        return {rest: small.from_dict(p) for rest, p in parts.items()}

    fs, gs = split(f), split(g)
    common: Any = None
    for part in (*fs.values(), *gs.values()):
        common = part if common is None else common.gcd(part)
        if common.is_ground:
            return f, g
    assert common is not None

    def join(parts: dict[Monomial, object]) -> dict[Monomial, int]:
        out: dict[Monomial, int] = {}
        for rest, p in parts.items():
            for m, c in p.exquo(common).items():  # type: ignore[attr-defined]
                full = list(rest)
                for i, e in zip(keep, m, strict=True):
                    full[i] = e
                out[tuple(full)] = int(c)
        return out
    return join(fs), join(gs)
