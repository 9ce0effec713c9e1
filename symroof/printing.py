"""One printer for all output: text, Markdown math and LaTeX share these rules.

>>> import sympy as sp
>>> text(sp.Rational(9850, 41)), approx(sp.Rational(9850, 41)), approx(1.97e14)
('9850/41', '240.24', '1.97e14')
>>> latex(sp.Symbol("T_math") + sp.Symbol("d_model"))
'T_{\\\\mathrm{math}} + d_{\\\\mathrm{model}}'
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp
from sympy.printing.latex import LatexPrinter


class SymroofLatexPrinter(LatexPrinter):
    """LaTeX with multi-letter subscripts set upright (``T_{\\mathrm{math}}``) and large
    numbers printed as a text would (``1.97 \\cdot 10^{14}``)."""

    printmethod = "_symroof_latex"

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        base = {"fold_short_frac": False}
        super().__init__({**base, **(settings or {})})

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        name = expr.name
        head, sep, sub = name.partition("_")
        if sep and len(sub) > 1 and sub.isalpha():
            return f"{self._print(sp.Symbol(head))}_{{\\mathrm{{{sub}}}}}"
        return str(super()._print_Symbol(expr))

    def _print_Integer(self, expr: sp.Integer) -> str:
        return _scientific(int(expr)) or str(int(expr))

    def _print_Float(self, expr: sp.Float) -> str:
        return _scientific_float(float(expr))


def _scientific(value: int) -> str | None:
    """``197000000000000`` as ``1.97 \\cdot 10^{14}``: integers of 7 digits or more that end
    in at least 6 zeros."""
    if abs(value) < 10**6:
        return None
    digits = str(abs(value))
    stripped = digits.rstrip("0")
    zeros = len(digits) - len(stripped)
    if zeros < 6:
        return None
    exponent = len(digits) - 1
    mantissa = stripped[0] + ("." + stripped[1:] if len(stripped) > 1 else "")
    sign = "-" if value < 0 else ""
    if mantissa == "1":
        return f"{sign}10^{{{exponent}}}"
    return f"{sign}{mantissa} \\cdot 10^{{{exponent}}}"


def _scientific_float(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e6:
        return f"{value:.6g}"
    mantissa, exponent = f"{value:.4e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')} \\cdot 10^{{{int(exponent)}}}"


_LATEX = SymroofLatexPrinter()


def latex(expr: Any) -> str:
    """LaTeX of a SymPy object (or a number) through the one printer."""
    return str(_LATEX.doprint(sp.sympify(expr)))


def text(expr: Any) -> str:
    """Plain text of an exact SymPy object: ``9850/41``, ``B*D*F/(B*D + B*F + D*F)``."""
    return sp.sstr(expr, order="lex") if isinstance(expr, sp.Basic) else str(expr)


def approx(value: Any, digits: int = 5) -> str:
    """A number as a text prints it: ``240.24``, ``8755.6``, ``1.97e+14``."""
    number = float(sp.N(value, 30)) if isinstance(value, sp.Basic) else float(value)
    if number == 0 or not math.isfinite(number):
        return str(number)
    if 1e-4 <= abs(number) < 1e7:
        return f"{number:.{digits}g}" if abs(number) < 1 else _decimal(number, digits)
    mantissa, exponent = f"{number:.{digits - 1}e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _decimal(number: float, digits: int) -> str:
    """Two decimals for numbers below 10^4 (240.24), fewer as they grow (8755.6)."""
    whole = len(str(int(abs(number))))
    places = max(digits - whole, 0) if whole > 3 else 2
    return f"{number:.{places}f}".rstrip("0").rstrip(".") if "." in f"{number:.{places}f}" \
        else f"{number:.{places}f}"


def number_value(value: Any) -> float | None:
    """A float for JSON, or None when ``value`` is not a number."""
    expr = sp.sympify(value)
    return float(expr) if expr.is_number and expr.is_finite else None
