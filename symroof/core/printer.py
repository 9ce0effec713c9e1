"""One printer for all output: text, Markdown math and LaTeX share these rules.

>>> import sympy as sp
>>> text(sp.Rational(9850, 41)), approx(sp.Rational(9850, 41)), approx(1.97e14)
('9850/41', '240.24', '1.97e14')
>>> latex(sp.Symbol("T_math") + sp.Symbol("d_model"))
'T_{\\\\mathrm{math}} + d_{\\\\mathrm{model}}'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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


def latex_value(value: Any, fmt: str = "tex") -> str:
    """LaTeX of whatever a step holds: an expression, an equation, a list, a mapping.

    ``fmt`` is ``tex`` (pdflatex) or ``md`` (KaTeX): text inside math is escaped for it."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ", ".join(f"{latex(k) if isinstance(k, sp.Basic) else latex(sp.Symbol(str(k)))}"
                         f" = {latex_value(v, fmt)}" for k, v in
                         sorted(value.items(), key=lambda kv: str(kv[0])))
    if isinstance(value, list | tuple):
        return ",\\quad ".join(latex_value(v, fmt) for v in value)
    if isinstance(value, bool):
        return r"\text{true}" if value else r"\text{false}"
    if isinstance(value, str):
        return math_text(value, fmt)
    expr = sp.sympify(value)
    shown = latex(expr)
    if expr.is_number and not expr.is_Integer and expr.is_finite and expr.is_real:
        shown += r" \approx " + _scientific_float(float(expr)) if abs(float(expr)) >= 1e6 \
            or abs(float(expr)) < 1e-3 else r" \approx " + approx(expr)
    return shown


# Inside \text{} both pdflatex (T1) and KaTeX take these escapes.
_MATH_TEXT = {"\\": "/", "{": r"\{", "}": r"\}", "$": r"\$", "%": r"\%", "&": r"\&",
              "#": r"\#", "_": r"\_", "^": "**", "~": " "}


def math_text(value: str, fmt: str = "tex") -> str:
    """``\\text{...}`` holding user text, escaped for pdflatex (``tex``) or KaTeX (``md``).

    >>> math_text("ik,kj->ij_1", "md")
    '\\\\text{ik,kj->ij\\\\_1}'
    """
    if fmt == "tex":
        return r"\text{" + tex_escape(value) + "}"
    return r"\text{" + "".join(_MATH_TEXT.get(ch, ch) for ch in value) + "}"


# Characters that pdflatex with utf8 inputenc, T1/T2A fonts and CJKutf8 cannot take as they
# are, and what to write instead (text mode).
TEX_SPECIALS = {
    "\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
TEX_UNICODE = {
    "≈": r"$\approx$", "×": r"$\times$", "·": r"$\cdot$", "⋅": r"$\cdot$", "≤": r"$\leq$",
    "≥": r"$\geq$", "≪": r"$\ll$", "≫": r"$\gg$", "→": r"$\to$", "←": r"$\leftarrow$",
    "−": r"$-$", "∞": r"$\infty$", "µ": r"$\mu$", "μ": r"$\mu$", "α": r"$\alpha$",
    "β": r"$\beta$", "λ": r"$\lambda$", "Θ": r"$\Theta$", "θ": r"$\theta$", "∝": r"$\propto$",
    "≠": r"$\neq$", "±": r"$\pm$", "√": r"$\surd$", "∑": r"$\sum$", "∂": r"$\partial$",
    "ε": r"$\varepsilon$", "π": r"$\pi$", "σ": r"$\sigma$", "Δ": r"$\Delta$", "∈": r"$\in$",
    "′": "'", "“": "``", "”": "''", "„": ",,", "‘": "`", "’": "'", "—": "---", "–": "--",
    "…": r"\dots{}", "«": r"\guillemotleft{}", "»": r"\guillemotright{}", "\u00a0": "~",
    "\u202f": r"\,", "\u2009": r"\,", "°": r"\textdegree{}", "€": "EUR", "✓": "v",
    "⁰": r"\textsuperscript{0}", "¹": r"\textsuperscript{1}", "²": r"\textsuperscript{2}",
    "³": r"\textsuperscript{3}", "⁴": r"\textsuperscript{4}", "⁵": r"\textsuperscript{5}",
    "⁶": r"\textsuperscript{6}", "⁷": r"\textsuperscript{7}", "⁸": r"\textsuperscript{8}",
    "⁹": r"\textsuperscript{9}", "⁻": r"\textsuperscript{-}", "₀": r"\textsubscript{0}",
    "₁": r"\textsubscript{1}", "₂": r"\textsubscript{2}",
}


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (0x2E80 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF
            or 0x3000 <= code <= 0x303F)


def _is_cyrillic(ch: str) -> bool:
    return 0x0400 <= ord(ch) <= 0x04FF


def tex_escape(value: str) -> str:
    """User text made safe for pdflatex: specials escaped, runs of Cyrillic wrapped in
    ``\\cyr{}`` (T2A, defined in the preamble), runs of CJK in a CJKutf8 environment, other
    symbols spelled out.

    >>> tex_escape(r"50% of $x_1$ \\input{evil}")
    '50\\\\% of \\\\$x\\\\_1\\\\$ \\\\textbackslash{}input\\\\{evil\\\\}'
    """
    out: list[str] = []
    cjk: list[str] = []
    cyr: list[str] = []

    def flush() -> None:
        if cjk:
            out.append(r"\begin{CJK}{UTF8}{gbsn}" + "".join(cjk) + r"\end{CJK}")
            cjk.clear()
        if cyr:
            out.append(r"\cyr{" + "".join(cyr) + "}")
            cyr.clear()

    for ch in str(value):
        if _is_cjk(ch):
            if cyr:
                flush()
            cjk.append(TEX_SPECIALS.get(ch, ch))
            continue
        if _is_cyrillic(ch):
            if cjk:
                flush()
            cyr.append(ch)
            continue
        flush()
        if ch in TEX_SPECIALS:
            out.append(TEX_SPECIALS[ch])
        elif ch in TEX_UNICODE:
            out.append(TEX_UNICODE[ch])
        elif ch in "\n\r\t":
            out.append(" ")
        elif ord(ch) < 0x80 or 0xA0 <= ord(ch) <= 0xFF:
            out.append(ch)
        elif ord(ch) >= 0x1F000 or 0x2600 <= ord(ch) <= 0x27BF or 0xFE00 <= ord(ch) <= 0xFE0F:
            continue  # emoji and pictographs have no glyph in the fonts used
        else:
            out.append(f"[U+{ord(ch):04X}]")
    flush()
    return "".join(out)


def md_escape(value: str, table: bool = False) -> str:
    """User text made safe for Markdown with math: ``$`` cannot open math, and in a table
    ``|`` cannot end a cell.

    >>> md_escape("costs $5 | 6", table=True)
    'costs \\\\$5 \\\\| 6'
    """
    escaped = str(value).replace("\\", "\\\\").replace("$", "\\$").replace("*", "\\*")
    escaped = escaped.replace("_", "\\_").replace("<", "&lt;").replace(">", "&gt;")
    escaped = " ".join(escaped.split())
    return escaped.replace("|", "\\|") if table else escaped
