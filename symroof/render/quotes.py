"""A source's quote for a write-up: its LaTeX shown as math, its words as escaped text.

>>> quote_markup(r"peak $9.89 \\times 1 0^{14}$ FLOPs/s, 50%", "md")
'peak $9.89 \\\\times 10^{14}$ FLOPs/s, 50%'
>>> quote_markup(r"bad $\\input{x}$", "md")
'bad \\\\$\\\\\\\\input{x}\\\\$'
>>> quote_markup(r"q $^^5cjobname$ r", "tex")
'q \\\\$\\\\textasciicircum{}\\\\textasciicircum{}5cjobname\\\\$ r'

Only math that both pdflatex and KaTeX take is kept as math: balanced braces, commands from
a short list, non-ASCII characters only inside ``\\text{}``. Anything else stays text,
escaped, so a quote can never inject markup. The seeds' OCR spacing is removed where it is
unambiguous: digits split by single spaces (``1 0^{14}``) and letters split inside a
subscript (``T_{ma t h}``).
"""

from __future__ import annotations

import re

from ..core.escape import html_escape, math_text, md_escape, tex_escape

ALLOWED = frozenset({
    "ast", "star", "Vert", "implies", "iff", "Leftrightarrow", "leftrightarrow",
    "frac", "dfrac", "tfrac", "times", "cdot", "cdots", "ldots", "dots", "le", "leq", "ge", "geq",
    "approx", "sim", "neq", "ne", "to", "rightarrow", "leftarrow", "Rightarrow", "mapsto", "in",
    "notin", "infty", "sqrt", "sum", "prod", "int", "partial", "nabla", "prime", "left", "right",
    "quad", "qquad", "text", "mathrm", "mathbf", "mathcal", "mathbb", "mathit", "boldsymbol",
    "operatorname", "exp", "log", "ln", "max", "min", "sin", "cos", "bar", "hat", "tilde",
    "overline", "underbrace", "mid", "vert", "lVert", "rVert", "lceil", "rceil", "lfloor",
    "rfloor", "propto", "ll", "gg", "pm", "mp", "circ", "alpha", "beta", "gamma", "delta",
    "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "kappa", "lambda", "mu", "nu",
    "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma",
    "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega", "O",
    "limits", "displaystyle", "top",
})
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
_COMMAND = re.compile(r"\\([A-Za-z]+)|\\(.)")
_TEXT_ARG = re.compile(r"\\(text|mathrm|operatorname)\{([^{}]*)\}")


def _clean(math: str) -> str:
    """Undo the OCR spacing that cannot mean anything else."""
    out = math
    while True:
        joined = re.sub(r"(?<![\d.])(\d) (?=\d)", r"\1", out)
        if joined == out:
            break
        out = joined

    def squeeze(m: re.Match[str]) -> str:
        inner = m.group(2)
        if re.fullmatch(r"[A-Za-z](?: ?[A-Za-z])*", inner):
            inner = inner.replace(" ", "")
        return f"{m.group(1)}{{{inner}}}"

    return re.sub(r"([_^])\{([^{}]*)\}", squeeze, out)


def _safe(math: str) -> bool:
    """Whether pdflatex and KaTeX read ``math`` as the whitelist sees it: TeX's ``^^``
    notation (``^^5c`` is a backslash) and control characters are refused before any
    command is looked at."""
    if "^^" in math or any((ord(ch) < 0x20 and ch not in "\n\t") or ord(ch) == 0x7F
                           for ch in math):
        return False
    depth = 0
    for ch in math:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    if depth:
        return False
    for name, symbol in _COMMAND.findall(math):
        if name and name not in ALLOWED:
            return False
        if symbol and symbol not in ",;:! {}|_%#&":
            return False
    outside = _TEXT_ARG.sub("", math)
    return all(ord(ch) < 0x80 for ch in outside) and "%" not in outside.replace(r"\%", "")


def _math_for(math: str, fmt: str) -> str:
    """Text arguments escaped for the output (Cyrillic needs ``\\cyr`` in pdflatex)."""
    def arg(m: re.Match[str]) -> str:
        inner = math_text(m.group(2), fmt)[len(r"\text{"):-1]
        return f"\\{m.group(1)}{{{inner}}}"
    return _TEXT_ARG.sub(arg, math)


def _bare_math(quote: str) -> str | None:
    """A quote that is a formula without ``$`` (``T_{ma t h} = \\frac{Computation FLOPs}
    {Accelerator FLOPs/s}``): ASCII, with LaTeX commands or scripts, safe; words in braces
    are set as text."""
    if "$" in quote or not quote.isascii() or not re.search(r"\\[A-Za-z]+|[_^]\{", quote):
        return None
    body = re.sub(r"\{([A-Za-z][A-Za-z/]*(?: [A-Za-z/()]+)+)\}", r"{\\text{\1}}",
                  _clean(quote))
    return body if _safe(body) else None


def segments(quote: str) -> list[tuple[str, str]]:
    """The quote as (kind, text) pieces: ``text``, ``math`` or ``display``."""
    bare = _bare_math(quote)
    if bare is not None:
        return [("math", bare.strip())]
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _MATH.finditer(quote):
        display, inline = m.group(1), m.group(2)
        body = _clean(display if display is not None else inline)
        if not _safe(body):
            continue
        if m.start() > pos:
            out.append(("text", quote[pos:m.start()]))
        out.append(("display" if display is not None else "math", body.strip()))
        pos = m.end()
    if pos < len(quote):
        out.append(("text", quote[pos:]))
    return out


def quote_markup(quote: str, fmt: str) -> str:
    """The quote in ``fmt`` (``tex``, ``md`` or ``html``)."""
    pieces = []
    for kind, body in segments(quote):
        if kind == "text":
            esc = {"tex": tex_escape, "md": md_escape, "html": html_escape}[fmt](body).strip()
            lead = " " if body[:1].isspace() else ""
            tail = " " if body[-1:].isspace() and esc else ""
            pieces.append(lead + esc + tail)
            continue
        math = _math_for(body, fmt)
        if fmt == "tex":
            pieces.append(rf"\fitline{{$\displaystyle {math}$}}" if kind == "display"
                          else f"${math}$")
        elif fmt == "md":  # no raw HTML tag can open inside the math of a Markdown page
            math = math.replace("<", r"\lt ").replace(">", r"\gt ")
            pieces.append(f"$${math}$$" if kind == "display" else f"${math}$")
        else:
            cls = "tex display" if kind == "display" else "tex"
            pieces.append(f'<span class="{cls}">{html_escape(math)}</span>')
    return "".join(pieces)
