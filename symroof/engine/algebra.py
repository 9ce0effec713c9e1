"""Rational-function algebra whose cost stays polynomial in the size of its input.

>>> from symroof import sizes
>>> B, D, F = sizes("B D F")
>>> cancel((2*B*D*F + 2*B*F*F) / (2*B*D + 2*B*F + 2*D*F))
(B*D*F + B*F**2)/(B*D + B*F + D*F)

``cancel`` returns exactly what ``sympy.cancel`` returns (the unique coprime numerator and
denominator with integer coefficients, the denominator's leading coefficient positive), but
finds the common factor another way (``symroof.engine.sparse``). SymPy's heuristic GCD
evaluates both polynomials at one integer per variable, and those integers grow with the
number of variables: a chain of matmuls whose widths all differ takes seconds at 20 ops and
hours at 50. Here the cost grows with the number of terms and their variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from math import lcm

import sympy as sp

from .sparse import Sparse, lowest_terms, to_expr, to_sparse


def cancel(expr: sp.Expr) -> sp.Expr:
    """``sympy.cancel(expr)``, in time polynomial in its terms and symbols."""
    f = sp.sympify(expr)
    if not isinstance(f, sp.Expr) or f.is_Number or f.has(sp.Piecewise) or \
            not f.is_commutative:
        return sp.cancel(f)
    if is_rational_function(f):
        p, q = f.as_numer_denom()
        gens = ordered_symbols(p.free_symbols | q.free_symbols)
        index = {g: i for i, g in enumerate(gens)}
        num, den = to_sparse(p, index), to_sparse(q, index)
        if num is None or den is None:  # not reached: p and q are polynomials
            return sp.cancel(f)
    else:
        split = _through_ring(f)
        if split is None:
            return sp.cancel(f)
        gens, num, den = split
    top, bottom = lowest_terms(num, den)
    return to_expr(top, gens) / to_expr(bottom, gens)


def combine_powers(expr: sp.Expr) -> sp.Expr:
    """Powers of one base merged and their exponents in lowest terms, bases taken positive
    (as sizes, rates and constants are): what ``simplify`` makes of a product of power
    laws, at a fraction of its cost.

    >>> from symroof import sizes
    >>> C, a, b = sizes("C a b")
    >>> combine_powers(6 * (C/6)**(a/(a + b)) * (C/6)**(b/(a + b)))
    C

    A product is read factor by factor (a power of a product is the product of the powers);
    anything else goes through ``powsimp``.
    """
    e = sp.sympify(expr)
    exponents: dict[sp.Expr, sp.Expr] = {}
    if _collect_powers(e, sp.Integer(1), exponents):
        return sp.Mul(*(sp.Pow(b, cancel(x)) for b, x in exponents.items()))
    merged = sp.powsimp(sp.expand_power_base(e, force=True), force=True)
    return merged.replace(lambda t: t.is_Pow, lambda t: sp.Pow(t.base, cancel(t.exp)))


def _collect_powers(e: sp.Expr, k: sp.Expr, exponents: dict[sp.Expr, sp.Expr]) -> bool:
    """Add ``e**k``'s bases and exponents to ``exponents``; False for a sum or a function."""
    if isinstance(e, sp.Mul):
        return all(_collect_powers(f, k, exponents) for f in e.args)
    if isinstance(e, sp.Pow):
        return _collect_powers(e.base, k * e.exp, exponents)
    if isinstance(e, sp.Rational) and e.q != 1:
        return (_collect_powers(sp.Integer(e.p), k, exponents)
                and _collect_powers(sp.Integer(e.q), -k, exponents))
    if not (isinstance(e, (sp.Symbol, sp.Integer)) or (e.is_number and e.is_positive)):
        return False
    if e != 1:
        exponents[e] = exponents.get(e, sp.Integer(0)) + k
    return True


def _through_ring(f: sp.Expr) -> tuple[list[sp.Basic], Sparse, Sparse] | None:
    """Numerator and denominator over SymPy's generators (powers, functions) for an
    expression that is not a rational function of its symbols, prepared as
    ``sympy.cancel`` prepares it, since then the generators depend on the form."""
    from sympy.polys.polyerrors import PolynomialError
    from sympy.polys.rings import sring
    from sympy.simplify.simplify import signsimp

    p, q = sp.factor_terms(signsimp(f), radical=True).as_numer_denom()
    try:
        ring, (num, den) = sring((p, q))
    except PolynomialError:
        return None
    if not ring.ngens or not (ring.domain.is_ZZ or ring.domain.is_QQ):
        return None

    def sparse(poly: object) -> Sparse:
        return {tuple((v, e) for v, e in enumerate(m) if e): ring.domain.to_sympy(c)
                for m, c in poly.items()}  # type: ignore[attr-defined]
    return list(ring.symbols), sparse(num), sparse(den)


def ordered_symbols(symbols: set[sp.Basic]) -> list[sp.Basic]:
    """Symbols in the order of the generators of SymPy's polynomial rings.

    >>> from symroof import sizes
    >>> ordered_symbols(set(sizes("D10 B D9 D2")))
    [B, D2, D9, D10]

    SymPy orders generators by a rank of their name's letters (x, y, z first, then p to w,
    then a to o, then everything else), then by name, then by a trailing index as a number;
    that order decides which term of a polynomial leads, and so the sign ``cancel`` gives.
    """
    return sorted(sorted(symbols, key=str), key=_generator_key)


# one-letter names in the order SymPy's polynomial module ranks them; any other name after
_LETTER_RANK = {c: i for i, c in enumerate("xyz" "pqrstuvw" "abcdefghijklmno")}
_INDEXED = re.compile(r"(.*?)(\d*)", re.DOTALL)


def _generator_key(s: sp.Basic) -> tuple[int, str, int]:
    match = _INDEXED.fullmatch(str(s))
    assert match is not None  # the pattern matches every string
    name, index = match.groups()
    return _LETTER_RANK.get(name, len(_LETTER_RANK)), name, int(index) if index else 0


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
    if not is_rational_function(expr):
        return None
    gens = ordered_symbols(expr.free_symbols | {s})
    index = {g: i for i, g in enumerate(gens)}
    poly = to_sparse(expr, index)
    if poly is None:
        return None
    scale = lcm(*(Fraction(c).denominator for c in poly.values()))
    at = index[s]
    parts: dict[int, Sparse] = {}
    for m, c in poly.items():
        k = next((e for v, e in m if v == at), 0)
        parts.setdefault(k, {})[tuple((v, e) for v, e in m if v != at)] = int(c * scale)
    return sp.Integer(scale), {k: to_expr(part, gens) for k, part in sorted(parts.items())}
