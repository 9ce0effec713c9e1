"""One printer for all output: text, Markdown math, LaTeX and HTML share these rules.

>>> import sympy as sp
>>> text(sp.Rational(9850, 41)), approx(sp.Rational(9850, 41)), approx(1.97e14)
('9850/41', '240.24', '1.97e14')
>>> latex(sp.Symbol("T_math") + sp.Symbol("d_model") + sp.Symbol("lam"))
'T_{\\\\mathrm{math}} + d_{\\\\mathrm{model}} + \\\\lambda'
>>> shown(sp.Rational(9850, 41)).latex
'\\\\frac{9850}{41} \\\\approx 240.24'

The readable-form rule (``shown``): an exact value prints in closed form when it is short,
else as its decimal (``Shown.exact`` is then False, and the caller says where the exact
value is); never ``x ≈ x``; equations with ``=``; Greek names as Greek; long merged
integers and radicals inside a formula become decimals while short exponents stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.printing.latex import LatexPrinter, greek_letters_set

from .decimals import decimal_text
from .escape import escape, html_escape, math_text, md_escape, tex_escape

__all__ = [
    "Shown",
    "SymroofLatexPrinter",
    "approx",
    "escape",
    "html_escape",
    "latex",
    "latex_value",
    "math_text",
    "md_escape",
    "number_value",
    "shown",
    "si",
    "tex_escape",
    "text",
]

# names a derivation spells in ASCII for a Greek letter
GREEK_ALIASES = {"lam": "lambda", "lamda": "lambda", "eps": "epsilon"}
SHORT = 24        # characters of plain text an exact number may take in closed form
LONG_DIGITS = 15  # an integer with more digits prints as a decimal


class SymroofLatexPrinter(LatexPrinter):
    """LaTeX with names printed literally (``hbm`` is not an accent; multi-letter names and
    subscripts upright: ``T_{\\mathrm{math}}``), Greek names as Greek, and large numbers as
    a text prints them (``1.97 \\cdot 10^{14}``)."""

    printmethod = "_symroof_latex"

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        base = {"fold_short_frac": False}
        super().__init__({**base, **(settings or {})})

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        head, sep, sub = expr.name.partition("_")
        shown = _name(head)
        if not sep:
            return shown
        if sub.isdigit() or len(sub) == 1 or sub.lower() in greek_letters_set:
            return f"{shown}_{{{_name(sub)}}}"
        return f"{shown}_{{\\mathrm{{{_plain(sub)}}}}}"

    def _print_Integer(self, expr: sp.Integer) -> str:
        return _scientific(int(expr)) or str(int(expr))

    def _print_Float(self, expr: sp.Float) -> str:
        return _scientific_float(expr)


def _plain(name: str) -> str:
    return name.replace("_", r"\_")


def _name(name: str) -> str:
    """A name's LaTeX: Greek as Greek, one letter italic, longer names upright."""
    name = GREEK_ALIASES.get(name, name)
    if name.lower() in greek_letters_set:
        return "\\" + ("lambda" if name == "lamda" else name)
    if len(name) == 1 or name.isdigit():
        return name
    return rf"\mathrm{{{_plain(name)}}}"


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


def _scientific_float(value: Any) -> str:
    x = float(value)
    if not math.isfinite(x) or (x == 0 and value != 0):  # beyond a float: SymPy's digits
        mantissa, _, exponent = sp.sstr(sp.Float(value, 5)).partition("e")
        return f"{mantissa.rstrip('0').rstrip('.')} \\cdot 10^{{{int(exponent or 0)}}}"
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.5g}"
    mantissa, exponent = f"{x:.4e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')} \\cdot 10^{{{int(exponent)}}}"


_LATEX = SymroofLatexPrinter()


def latex(expr: Any) -> str:
    """LaTeX of a SymPy object (or a number) through the one printer."""
    return str(_LATEX.doprint(sp.sympify(expr)))


def text(expr: Any) -> str:
    """Plain text of an exact SymPy object: ``9850/41``, ``B*D*F/(B*D + B*F + D*F)``;
    an equation with ``=`` (``6*D*N = C``, not ``Eq(6*D*N, C)``)."""
    if isinstance(expr, sp.Equality):
        return f"{text(expr.lhs)} = {text(expr.rhs)}"
    if not isinstance(expr, sp.Basic):
        return str(expr)
    try:
        return _text(expr)
    except TypeError:  # an object with no hash: printed each time
        return sp.sstr(expr, order="lex")


@lru_cache(maxsize=4096)
def _text(expr: sp.Basic) -> str:
    """An expression's text, printed once: equal expressions are equal trees (a Float's
    precision is part of it), so they print alike."""
    return sp.sstr(expr, order="lex")


def approx(value: Any, digits: int = 5) -> str:
    """A number as a text prints it: ``240.24``, ``8755.6``, ``1.97e+14``."""
    number = float(sp.N(value, 30)) if isinstance(value, sp.Basic) else float(value)
    return decimal_text(number, digits)


PREFIXES = {"s": (("", 1.0), ("m", 1e-3), ("µ", 1e-6), ("n", 1e-9)),
            "B": (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))}


EXACT: ContextVar[bool] = ContextVar("exact", default=False)


@contextmanager
def exact_views(on: bool = True) -> Iterator[None]:
    """Text views inside print each quantity's exact form beside its decimal (``--exact``).

    >>> with exact_views():
    ...     si(sp.Rational(1, 125000), "s")
    '1/125000 s ≈ 8 µs'
    """
    token = EXACT.set(on)
    try:
        yield
    finally:
        EXACT.reset(token)


def si(value: Any, unit: str, digits: int = 4) -> str:
    """The one rule for a quantity in a text view: a decimal of ``digits`` significant
    digits with an SI prefix (seconds down to ns, bytes up to TB), other units as
    ``approx`` prints the number; an expression prints as it is, with its unit. Inside
    ``exact_views`` a number that is not an integer shows its exact form first.

    >>> si(sp.Rational(53254594, 5888671875), "s"), si(141.1e9, "B"), si(1.55e12, "FLOP/s")
    ('9.044 ms', '141.1 GB', '1.55e12 FLOP/s')
    """
    expr = sp.sympify(value)
    if not expr.is_number:
        return f"{text(expr)} {unit}"
    if EXACT.get() and not expr.is_Float and not (expr.is_Integer and abs(expr) < 1000):
        return f"{text(expr)} {unit} ≈ {si_decimal(expr, unit, digits)}"
    return si_decimal(expr, unit, digits)


def si_decimal(expr: sp.Expr, unit: str, digits: int = 4) -> str:
    """``si`` without the exact form."""
    number = float(sp.N(expr, 20))
    for prefix, scale in PREFIXES.get(unit, ()):
        if abs(number) >= scale or scale == PREFIXES[unit][-1][1]:
            return f"{float(f'{number / scale:.{digits}g}'):g} {prefix}{unit}"
    return f"{approx(number, digits)} {unit}"


def number_value(value: Any) -> float | None:
    """A float for JSON, or None when ``value`` is not a number."""
    expr = sp.sympify(value)
    return float(expr) if expr.is_number and expr.is_finite else None


@dataclass(frozen=True)
class Shown:
    """A value as a reader sees it: LaTeX, plain text, and whether it is the exact value
    (False: a decimal stands in for a long exact form)."""

    latex: str
    text: str
    exact: bool = True


def _short(expr: sp.Expr) -> bool:
    if expr.is_Integer:
        return len(str(abs(int(expr)))) <= LONG_DIGITS
    return len(text(expr)) <= SHORT


def _decimal_shown(expr: sp.Expr) -> Shown:
    value = float(sp.N(expr, 30))
    return Shown(_scientific_float(value), approx(value), exact=False)


def _tidy(expr: sp.Basic) -> tuple[sp.Basic, bool]:
    """Long numbers inside a formula as 5-digit decimals; short exponents stay exact."""
    if isinstance(expr, sp.Expr) and expr.is_number:
        if _short(expr) or not expr.is_finite or not expr.is_real:
            return expr, True
        return sp.Float(sp.N(expr, 20), 5), False
    if not expr.args or isinstance(expr, sp.Symbol):
        return expr, True
    if isinstance(expr, sp.Mul):  # the numeric factors together: 17*2**(29/31)*.../5880
        numeric = sp.Mul(*(a for a in expr.args if a.is_number))
        if numeric != 1 and not _short(numeric) and numeric.is_finite and numeric.is_real:
            rest = [_tidy(a) for a in expr.args if not a.is_number]
            return sp.Mul(sp.Float(sp.N(numeric, 20), 5), *(p for p, _ in rest)), False
    parts = [_tidy(a) for a in expr.args]
    if all(ok for _, ok in parts):
        return expr, True
    return expr.func(*[p for p, _ in parts]), False


def shown(value: Any) -> Shown:
    """The readable form of a value (the rule of this module).

    >>> shown(sp.Integer(2) ** 200).text
    '1.6069e60'
    >>> shown(sp.Eq(sp.Symbol("a"), 2)).latex
    'a = 2'
    """
    if value is None:
        return Shown("", "")
    if isinstance(value, bool) or value is sp.true or value is sp.false:
        word = "true" if bool(value) else "false"
        return Shown(rf"\text{{{word}}}", word)
    if isinstance(value, str):
        return Shown(math_text(value, "md"), value)
    expr = sp.sympify(value)
    if isinstance(expr, sp.Rel):
        lhs, rhs = shown(expr.lhs), shown(expr.rhs)
        op = {"==": "=", ">=": r"\geq", "<=": r"\leq", "!=": r"\neq"}.get(expr.rel_op,
                                                                          expr.rel_op)
        top = {"==": "="}.get(expr.rel_op, expr.rel_op)
        return Shown(f"{lhs.latex} {op} {rhs.latex}", f"{lhs.text} {top} {rhs.text}",
                     lhs.exact and rhs.exact)
    if isinstance(expr, sp.Expr) and expr.is_number:
        if not expr.is_finite or not expr.is_real:
            return Shown(latex(expr), text(expr))
        if expr.is_Float:
            return _decimal_shown(expr)
        if not _short(expr):
            return _decimal_shown(expr)
        if expr.is_Integer:
            plain = text(expr) if abs(expr) < 10**7 else f"{text(expr)} ≈ {approx(expr)}"
            return Shown(latex(expr), plain)
        dec = approx(expr)
        if dec == text(expr):
            return Shown(latex(expr), dec)
        return Shown(f"{latex(expr)} \\approx {_scientific_float(float(sp.N(expr, 30)))}",
                     f"{text(expr)} ≈ {dec}")
    tidy, exact = _tidy(expr)
    return Shown(latex(tidy), text(tidy), exact)


def latex_value(value: Any, fmt: str = "tex") -> str:
    """LaTeX of whatever a step holds: an expression, an equation, a list, a mapping.

    ``fmt`` is ``tex`` (pdflatex), ``md`` or ``html`` (KaTeX): text inside math is escaped
    for it."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return r",\quad ".join(
            f"{latex(k) if isinstance(k, sp.Basic) else latex(sp.Symbol(str(k)))}"
            f" = {latex_value(v, fmt)}" for k, v in sorted(value.items(),
                                                          key=lambda kv: str(kv[0])))
    if isinstance(value, list | tuple):
        return r",\quad ".join(latex_value(v, fmt) for v in value)
    if isinstance(value, str):
        return math_text(value, fmt)
    return shown(value).latex
