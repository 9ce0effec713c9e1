"""Sparse polynomials with exact coefficients, and lowest terms of their quotients.

>>> from symroof import sizes
>>> B, D = sizes("B D")
>>> p = to_sparse(2*B*D + 4*B, {B: 0, D: 1})
>>> p == {((0, 1), (1, 1)): 2, ((0, 1),): 4}
True
>>> top, bottom = lowest_terms(p, to_sparse(6*B**2, {B: 0, D: 1}))
>>> to_expr(top, [B, D]), to_expr(bottom, [B, D])
(D + 2, 3*B)

A monomial is a tuple of (variable index, exponent) pairs, sorted by index: it costs what
its own variables cost, not the number of variables in the ring (SymPy's rings store a
tuple of every variable's exponent in every monomial, so a product of many sums costs the
square of the variables). Variables are numbered in the order of SymPy's rings, so the
leading term (lexicographic) and with it the sign of a denominator are SymPy's.

``lowest_terms`` takes out the common monomial and the integer content structurally and
*proves* that nothing else is common, one variable at a time: both polynomials, evaluated
modulo a prime at a point for every other variable, have a constant GCD in that variable.
(If G divided both with degree d in x, its image would divide both images with degree d
whenever the leading coefficient in x does not vanish there, which is checked.) Each check
costs one pass over the variable's terms. The variables no check clears are the only ones a
common factor can contain; with a few of them, that factor is the GCD of the coefficients
over the other variables, computed exactly by SymPy on the few; with more, only the
monomial and the content are cancelled (the quotient stays exact).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from fractions import Fraction
from math import gcd, lcm
from typing import Any

import sympy as sp

Monomial = tuple[tuple[int, int], ...]
Sparse = dict[Monomial, Any]  # coefficients: int or Fraction
PRIME = 2**61 - 1
MAX_SHARED = 4  # a common factor in more variables than this is left in place


def to_sparse(expr: sp.Basic, index: Mapping[sp.Basic, int]) -> Sparse | None:
    """``expr`` as a sparse polynomial in the symbols of ``index``; None when it is not a
    polynomial in them (a negative or fractional power, a function, an unknown symbol)."""
    if expr.is_Rational:
        return {(): Fraction(int(expr.p), int(expr.q))} if expr != 0 else {}
    if expr in index:
        return {((index[expr], 1),): 1}
    if expr.is_Add:
        total: Sparse = {}
        for arg in expr.args:
            part = to_sparse(arg, index)
            if part is None:
                return None
            for m, c in part.items():
                total[m] = total.get(m, 0) + c
        return {m: c for m, c in total.items() if c != 0}
    if expr.is_Mul:
        product: Sparse | None = {(): 1}
        for arg in expr.args:
            part = to_sparse(arg, index)
            if part is None or product is None:
                return None
            product = multiply(product, part)
        return product
    if expr.is_Pow and expr.exp.is_Integer and expr.exp >= 0:
        base = to_sparse(expr.base, index)
        if base is None:
            return None
        out: Sparse = {(): 1}
        for _ in range(int(expr.exp)):
            out = multiply(out, base)
        return out
    return None


def multiply(a: Sparse, b: Sparse) -> Sparse:
    out: Sparse = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = _times(ma, mb)
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c != 0}


def _times(a: Monomial, b: Monomial) -> Monomial:
    if not a:
        return b
    if not b:
        return a
    exps = dict(a)
    for v, e in b:
        exps[v] = exps.get(v, 0) + e
    return tuple(sorted(exps.items()))


def to_expr(poly: Sparse, gens: Sequence[sp.Basic]) -> sp.Expr:
    """The SymPy expression of a sparse polynomial over ``gens``."""
    return sp.Add(*(sp.Mul(sp.Rational(c), *(gens[v]**e for v, e in m))
                    for m, c in poly.items()))


def lex_key(m: Monomial) -> tuple[tuple[int, int], ...]:
    """Orders monomials as SymPy's lex order does on dense exponent tuples."""
    return tuple((-v, e) for v, e in m)


def lowest_terms(num: Sparse, den: Sparse) -> tuple[dict[Monomial, int], dict[Monomial, int]]:
    """Coprime numerator and denominator of ``num / den`` with integer coefficients, the
    denominator's leading coefficient positive (as ``sympy.cancel`` leaves them)."""
    scale = lcm(*(Fraction(c).denominator for c in (*num.values(), *den.values())))
    f = {m: int(c * scale) for m, c in num.items()}
    g = {m: int(c * scale) for m, c in den.items()}
    if not f:
        return {}, {(): 1}
    low = _monomial_gcd([*f, *g])
    content = 0
    for c in (*f.values(), *g.values()):
        content = gcd(content, c)
    f = {_divide(m, low): c // content for m, c in f.items()}
    g = {_divide(m, low): c // content for m, c in g.items()}
    shared = _shared_variables(f, g)
    if shared and len(shared) <= MAX_SHARED:
        f, g = _divide_common(f, g, shared)
    if g[max(g, key=lex_key)] < 0:
        f = {m: -c for m, c in f.items()}
        g = {m: -c for m, c in g.items()}
    return f, g


def _monomial_gcd(monomials: list[Monomial]) -> dict[int, int]:
    count: dict[int, int] = {}
    least: dict[int, int] = {}
    for m in monomials:
        for v, e in m:
            count[v] = count.get(v, 0) + 1
            least[v] = min(least.get(v, e), e)
    return {v: e for v, e in least.items() if count[v] == len(monomials)}


def _divide(m: Monomial, low: dict[int, int]) -> Monomial:
    if not low:
        return m
    return tuple((v, e - low.get(v, 0)) for v, e in m if e != low.get(v, 0))


def _shared_variables(f: dict[Monomial, int], g: dict[Monomial, int]) -> set[int]:
    """Variables in which a common factor of ``f`` and ``g`` might have positive degree:
    every other variable is proved absent from it."""
    in_f = {v for m in f for v, _ in m}
    in_g = {v for m in g for v, _ in m}
    suspects = in_f & in_g
    rng = random.Random(len(f) * 1_000_003 + len(g))
    for _ in range(2):  # a second point clears what an unlucky first one kept
        if not suspects:
            break
        point = {v: rng.randrange(2, PRIME - 1) for v in sorted(in_f | in_g)}
        fv, gv = _Values(f, point), _Values(g, point)
        suspects = {v for v in suspects if not _cleared(fv, gv, v)}
    return suspects


class _Values:
    """A polynomial's terms evaluated modulo PRIME at one point, kept per variable so that
    its image as a polynomial in any one variable costs one pass over that variable's terms."""

    def __init__(self, terms: dict[Monomial, int], point: Mapping[int, int]) -> None:
        self.point = point
        self.by_var: dict[int, list[tuple[int, int]]] = {}
        self.total = 0
        for m, c in terms.items():
            value = c % PRIME
            for v, e in m:
                value = value * pow(point[v], e, PRIME) % PRIME
            for v, e in m:
                self.by_var.setdefault(v, []).append((e, value))
            self.total = (self.total + value) % PRIME

    def image(self, v: int) -> list[int]:
        """Dense coefficients (constant first) in variable ``v``, the others at the point."""
        terms = self.by_var.get(v, [])
        coeffs = [0] * (max((e for e, _ in terms), default=0) + 1)
        coeffs[0] = self.total
        inverse = pow(self.point[v], -1, PRIME)
        for e, value in terms:
            coeffs[0] = (coeffs[0] - value) % PRIME
            coeffs[e] = (coeffs[e] + value * pow(inverse, e, PRIME)) % PRIME
        return coeffs


def _cleared(f: _Values, g: _Values, v: int) -> bool:
    """True when a common factor of the two polynomials provably has degree 0 in ``v``."""
    a, b = f.image(v), g.image(v)
    if a[-1] == 0 and b[-1] == 0:
        return False  # the degree may have dropped at this point: no proof
    return len(_gcd_mod(a, b)) == 1


def _gcd_mod(a: list[int], b: list[int]) -> list[int]:
    """GCD of two dense polynomials modulo PRIME (constant first)."""
    a, b = _trim(a), _trim(b)
    while b != [0]:
        a, b = b, _remainder(a, b)
    return a


def _trim(a: list[int]) -> list[int]:
    while len(a) > 1 and a[-1] == 0:
        a = a[:-1]
    return a


def _remainder(a: list[int], b: list[int]) -> list[int]:
    """``a mod b`` modulo PRIME, ``b`` not zero."""
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
                   ) -> tuple[dict[Monomial, int], dict[Monomial, int]]:
    """Divide out the common factor, which lives in the ``shared`` variables only: it is the
    GCD of the coefficients of ``f`` and ``g`` as polynomials in the other variables."""
    from sympy.polys.domains import ZZ
    from sympy.polys.rings import ring as make_ring

    keep = sorted(shared)
    small, *_ = make_ring([f"x{v}" for v in keep], ZZ)

    def split(terms: dict[Monomial, int]) -> dict[Monomial, Any]:
        parts: dict[Monomial, dict[tuple[int, ...], int]] = {}
        for m, c in terms.items():
            exps = dict(m)
            rest = tuple((v, e) for v, e in m if v not in shared)
            parts.setdefault(rest, {})[tuple(exps.get(v, 0) for v in keep)] = c
        return {rest: small.from_dict(p) for rest, p in parts.items()}

    fs, gs = split(f), split(g)
    common: Any = None
    for part in (*fs.values(), *gs.values()):
        common = part if common is None else common.gcd(part)
        if common.is_ground:
            return f, g

    def join(parts: dict[Monomial, Any]) -> dict[Monomial, int]:
        out: dict[Monomial, int] = {}
        for rest, p in parts.items():
            for m, c in p.exquo(common).items():
                own = tuple((v, e) for v, e in zip(keep, m, strict=True) if e)
                out[tuple(sorted((*rest, *own)))] = int(c)
        return out
    return join(fs), join(gs)
