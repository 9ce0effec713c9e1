"""User text made safe for each output: pdflatex, Markdown (GitHub and KaTeX), HTML.

>>> tex_escape(r"50% of $x_1$ \\input{evil}")
'50\\\\% of \\\\$x\\\\_1\\\\$ \\\\textbackslash{}input\\\\{evil\\\\}'
>>> md_escape("costs $5 | 6", table=True)
'costs \\\\$5 \\\\| 6'
>>> html_escape("<b> & \\"q\\"")
'&lt;b&gt; &amp; &quot;q&quot;'

One table per output and nothing else escapes text: the printer, the table writer and the
templates all come here.
"""

from __future__ import annotations

import re

# C0 controls (but tab and newline), DEL and the bidirectional overrides: dropped from every
# output, so no escape sequence, bell or reordering reaches a terminal, a PDF or a page
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def printable(value: object) -> str:
    """``value`` as text without control characters.

    >>> printable("a\x1b[31mb\u202ec")
    'a[31mbc'
    """
    return _CONTROLS.sub("", str(value))

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
# Where a long word of code or formula may break in a narrow column.
_BREAK_AFTER = frozenset("_/*=,(+")


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (0x2E80 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF
            or 0x3000 <= code <= 0x303F)


def _is_cyrillic(ch: str) -> bool:
    return 0x0400 <= ord(ch) <= 0x04FF


def tex_escape(value: str, breaks: bool = False) -> str:
    """User text made safe for pdflatex: specials escaped, runs of Cyrillic wrapped in
    ``\\cyr{}`` (T2A, defined in the preamble), runs of CJK in a CJKutf8 environment, other
    symbols spelled out. With ``breaks``, a line may break after ``_ / * = , ( +``.

    >>> tex_escape("a_b/c", breaks=True)
    'a\\\\_\\\\allowbreak{}b/\\\\allowbreak{}c'
    """
    value = printable(value)
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
        if breaks and ch in _BREAK_AFTER:
            out.append(r"\allowbreak{}")
    flush()
    return "".join(out)


def md_escape(value: str, table: bool = False) -> str:
    """User text made safe for Markdown with math: ``$`` cannot open math, and in a table
    ``|`` cannot end a cell."""
    escaped = printable(value).replace("\\", "\\\\").replace("$", "\\$").replace("*", "\\*")
    escaped = escaped.replace("_", "\\_").replace("<", "&lt;").replace(">", "&gt;")
    escaped = escaped.replace("[", "&#91;").replace("]", "&#93;")  # no link, no image
    escaped = " ".join(escaped.split())
    return escaped.replace("|", "\\|") if table else escaped


_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def html_escape(value: str) -> str:
    """Text made safe for HTML element content and attribute values; a ``$`` is kept out
    of the math renderer by wrapping it."""
    escaped = "".join(_HTML.get(ch, ch) for ch in printable(value))
    return escaped.replace("$", '<span class="dollar">$</span>')


# Inside \text{} both pdflatex (T1) and KaTeX take these escapes.
_MATH_TEXT = {"\\": "/", "{": r"\{", "}": r"\}", "$": r"\$", "%": r"\%", "&": r"\&",
              "#": r"\#", "_": r"\_", "^": "**", "~": " "}


def math_text(value: str, fmt: str = "tex") -> str:
    """``\\text{...}`` holding user text, escaped for pdflatex (``tex``) or KaTeX (``md``,
    ``html``).

    >>> math_text("ik,kj->ij_1", "md")
    '\\\\text{ik,kj->ij\\\\_1}'
    """
    if fmt == "tex":
        return r"\text{" + tex_escape(value) + "}"
    inner = "".join(_MATH_TEXT.get(ch, ch) for ch in value)
    if fmt == "html":
        inner = "".join(_HTML.get(ch, ch) for ch in inner)
    return r"\text{" + inner + "}"


def escape(value: str, fmt: str, table: bool = False) -> str:
    """Text for ``fmt`` (``tex``, ``md``, ``html``, ``text``): the one switch over formats.

    >>> escape("a_b", "tex"), escape("a_b", "md"), escape("a_b", "text")
    ('a\\\\_b', 'a\\\\_b', 'a_b')
    """
    if fmt == "tex":
        return tex_escape(value, breaks=table)
    if fmt == "md":
        return md_escape(value, table=table)
    if fmt == "html":
        return html_escape(value)
    return " ".join(printable(value).split())
