"""Formulas compiled once with ``lambdify``: exact Fractions for rational functions, mpmath
at 60 digits otherwise.

>>> import sympy as sp
>>> x = sp.Symbol("x", positive=True)
>>> Compiled([x / 3, x**2], [x])({x: 4})
[Fraction(4, 3), Fraction(16, 1)]
>>> Compiled([sp.sqrt(x)], [x])({x: 4})
[Fraction(2, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from .points import Size, fraction

DIGITS = 60                        # mpmath precision for formulas that are not rational


class _FractionPrinter(PythonCodePrinter):
    """Python code whose numbers are Fractions: rational formulas evaluate exactly."""

    def _print_Rational(self, expr: sp.Rational) -> str:
        return f"Fraction({expr.p}, {expr.q})"

    _print_Half = _print_Rational


_EXACT = (sp.Symbol, sp.Rational, sp.Add, sp.Mul, sp.Max, sp.Min, sp.Abs, sp.Rel, sp.And,
          sp.Or, sp.Not, sp.logic.boolalg.BooleanAtom)


class Compiled:
    """Formulas lambdified once; Fractions in and out when every one is rational."""

    def __init__(self, exprs: Sequence[sp.Basic], symbols: Sequence[sp.Symbol]) -> None:
        self.symbols = tuple(symbols)
        self.exact = all(rational(e) for e in exprs)
        if self.exact:
            self.fn = sp.lambdify(self.symbols, list(exprs), modules=[{"Fraction": Fraction}],
                                  printer=_FractionPrinter)
        else:
            self.fn = sp.lambdify(self.symbols, list(exprs), modules="mpmath")

    def __call__(self, point: Mapping[sp.Symbol, Size]) -> list[Any]:
        args = [Fraction(point[s]) for s in self.symbols]
        if self.exact:
            return list(self.fn(*args))
        import mpmath
        with mpmath.workdps(DIGITS):
            out = self.fn(*(mpmath.mpf(x.numerator) / x.denominator for x in args))
        return [fraction(v.real) if isinstance(v, mpmath.mpf | mpmath.mpc) and v.imag == 0
                and mpmath.isfinite(v.real) else v for v in out]


def rational(expr: sp.Basic) -> bool:
    return all(isinstance(n, _EXACT) or (isinstance(n, sp.Pow) and n.exp.is_Integer)
               for n in sp.preorder_traversal(expr))
