"""Roots of the equations a derivation meets: polynomials and rational functions in one
size, and balances of power laws, solved exactly without ``sympy.solve``'s general search.

>>> from symroof import sizes
>>> L, k = sizes("L k")
>>> positive_root(sp.diff(L / k + k, k), k)
sqrt(L)
>>> A, B, N, D, a, b = sizes("A B N D alpha beta")
>>> positive_root(sp.Eq(A * a / N**a, B * b / D**b), D)
(B*N**alpha*beta/(A*alpha))**(1/beta)

A rational equation's roots are those of its numerator (found by ``sympy.roots``: the
closed forms of degree 1 to 4) where no denominator vanishes; a balance of two products of
powers is solved by isolating the size's power, both sides taken positive (sizes, rates
and constants are). Anything else goes to ``sympy.solve`` under a time limit.
"""

from __future__ import annotations

import sympy as sp

from ..core.errors import DerivationError
from .algebra import cancel, is_rational_function

SOLVE_SECONDS = 10  # of CPU time: the answer does not depend on the machine's load
MAX_DEGREE = 1000  # as a formula's exponent: roots of a higher power are not attempted


def roots(equation: sp.Basic, s: sp.Symbol) -> list[sp.Expr]:
    """The roots in ``s`` of ``equation`` (an ``Eq``, or an expression equal to 0), as
    ``sympy.solve`` returns them (a root ``s``'s assumptions rule out is left out).

    >>> from symroof import sizes
    >>> N, d = sizes("N d")
    >>> roots(sp.Eq(N**2, N * d), N)
    [d]
    >>> roots(sp.Eq(N, N + 1), N)
    []
    """
    gap = _gap(equation)
    if not gap.has(s):
        return []
    degree = _degree(gap, s)
    if degree > MAX_DEGREE:
        raise DerivationError(f"the equation has degree {degree:.3g} in {s}; roots of a "
                              f"degree beyond {MAX_DEGREE} are not attempted")
    found = _rational(gap, s)
    if found is None:
        found = _power_balance(equation, s)
    if found is None:
        found = _general(gap, s)
    return sorted((r for r in found if _admitted(r, s)), key=sp.default_sort_key)


def positive_root(equation: sp.Basic, s: sp.Symbol) -> sp.Expr:
    """The one root of ``equation`` in ``s`` that can be positive; a DerivationError that
    counts them otherwise.

    >>> from symroof import sizes
    >>> M, d = sizes("M d")
    >>> positive_root(sp.Eq(M / (4 * d), d), M)
    4*d**2
    """
    # a balance of positive powers has one positive root whatever its exponent, even where
    # the equation is also a polynomial of high degree whose other roots SymPy cannot place
    balanced = _power_balance(equation, s) if isinstance(equation, sp.Eq) else None
    found = [r for r in (balanced if balanced is not None else roots(equation, s))
             if _admitted(r, s) and may_be_positive(r)]
    if len(found) != 1:
        raise DerivationError(f"{_shown(equation)} has {len(found)} positive roots in {s}"
                              + (f": {found}" if found else ""))
    return found[0]


def may_be_positive(r: sp.Expr) -> bool:
    """Whether a root can be a positive size: neither known not positive nor known not real.

    >>> may_be_positive(sp.sqrt(2)), may_be_positive(-sp.sqrt(2)), may_be_positive(sp.I)
    (True, False, False)
    """
    return r.is_positive is not False and r.is_real is not False


def _degree(e: sp.Basic, s: sp.Symbol) -> float:
    """An upper bound on the degree of ``e`` in ``s``, its powers counted as written (the
    denominator's too), without expanding it.

    >>> B = sp.Symbol("B")
    >>> _degree((B**2 + 1)**3 / B, B), _degree(sp.exp(B), B)
    (7.0, 1.0)
    """
    if e == s:
        return 1.0
    if not e.has(s):
        return 0.0
    if isinstance(e, sp.Pow) and e.exp.is_Number:
        return float(abs(e.exp)) * _degree(e.base, s)
    if isinstance(e, sp.Mul):
        return float(sum(_degree(a, s) for a in e.args))
    return max(_degree(a, s) for a in e.args)


def _gap(equation: sp.Basic) -> sp.Expr:
    if equation is sp.false:  # an Eq SymPy decided: no value satisfies it
        return sp.Integer(1)
    if equation is sp.true:
        raise DerivationError("the equation holds for every value")
    if isinstance(equation, sp.Eq):
        return equation.lhs - equation.rhs
    if isinstance(equation, sp.Expr):
        return equation
    raise DerivationError(f"{equation} is not an equation")


def _shown(equation: sp.Basic) -> str:
    return f"{equation.lhs} = {equation.rhs}" if isinstance(equation, sp.Eq) \
        else f"{equation} = 0"


def _rational(gap: sp.Expr, s: sp.Symbol) -> list[sp.Expr] | None:
    """Roots of a rational function of ``s`` (its other symbols anywhere), None for
    anything else."""
    num, den = sp.fraction(sp.together(gap))
    if not (_polynomial_in(num, s) and _polynomial_in(den, s)):
        return None
    poly = sp.Poly(sp.expand(num), s)
    if poly.degree() == 1:
        a, b = poly.all_coeffs()
        found = [cancel(-b / a)]
    else:
        try:
            closed = sp.roots(poly, s)
        except (NotImplementedError, sp.PolynomialError):
            return None
        if sum(closed.values()) != poly.degree():  # some roots have no closed form
            return None
        found = list(closed)
    if den.has(s):
        found = [r for r in found if cancel(den.subs(s, r)) != 0]
    return found


def _polynomial_in(e: sp.Expr, s: sp.Symbol) -> bool:
    return is_rational_function(e) or e.is_polynomial(s)


def _power_balance(equation: sp.Basic, s: sp.Symbol) -> list[sp.Expr] | None:
    """``c1 * s**k * ... = c2 * ...`` solved as ``s = (c2 * ... / (c1 * ...))**(1/k)``,
    both sides products of powers of positive factors and ``s`` a bare base in them."""
    if not isinstance(equation, sp.Eq):
        return None
    k = sp.Integer(0)
    rest: list[sp.Expr] = []
    for side, sign in ((equation.lhs, 1), (equation.rhs, -1)):
        for f in sp.Mul.make_args(side):
            base, exp = f.as_base_exp()
            if base == s and not exp.has(s):
                k += sign * exp
            elif f.has(s) or f.is_positive is not True:
                return None
            else:
                rest.append(f ** -sign)
    if k == 0:
        return None
    ratio = sp.Mul(*rest)  # s**k = ratio
    if k.could_extract_minus_sign():
        return [(1 / ratio) ** (1 / -k)]
    return [ratio ** (1 / k)]


def _general(gap: sp.Expr, s: sp.Symbol) -> list[sp.Expr]:
    from ..core.timelimits import TimeLimit, time_limit
    try:
        with time_limit(SOLVE_SECONDS, cpu=True):
            return list(sp.solve(gap, s))
    except TimeLimit:
        raise DerivationError(f"{gap} = 0 has no closed form in {s} that SymPy finds "
                              f"within {SOLVE_SECONDS:g} s of CPU time") from None
    except (NotImplementedError, ValueError, TypeError):
        raise DerivationError(f"{gap} = 0 has no closed form in {s} that SymPy finds"
                              ) from None


def _admitted(r: sp.Expr, s: sp.Symbol) -> bool:
    """Whether ``s``'s assumptions allow ``r`` (as ``sympy.solve`` checks them)."""
    if s.is_positive and r.is_positive is False:
        return False
    if s.is_nonnegative and r.is_nonnegative is False:
        return False
    return not (s.is_real and r.is_real is False)
