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

A quote cut out of a formula is closed again: one that starts inside math (LaTeX before its
first unmatched ``$``) or ends inside it gets the missing delimiter, an alignment ``&`` is
dropped, and the arrows a text types as characters are read as their commands:

>>> segments(r"\\frac{1}{2}$$ at $N$")
[('display', '\\\\frac{1}{2}'), ('text', ' at '), ('math', 'N')]
>>> segments(r"$\\frac{D}{2}")
[('math', '\\\\frac{D}{2}')]
>>> segments(r"⟺ \\frac{Computation FLOPs}{Bytes}")
[('math', '\\\\Leftrightarrow \\\\frac{\\\\text{Computation FLOPs}}{\\\\text{Bytes}}')]
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
    "rfloor", "propto", "Longrightarrow", "ll", "gg", "pm", "mp", "circ", "alpha", "beta",
    "gamma", "delta",
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


# characters a text types for what LaTeX writes as a command, read inside math
_SYMBOLS = {"⟺": r"\Leftrightarrow ", "⇔": r"\Leftrightarrow ", "⇒": r"\Rightarrow ",
            "→": r"\rightarrow ", "≈": r"\approx ", "≤": r"\le ", "≥": r"\ge ",
            "×": r"\times ", "·": r"\cdot ", "∞": r"\infty ", "−": "-", "⟹": r"\Longrightarrow ",
            "≪": r"\ll ", "≫": r"\gg ", "≠": r"\neq ", "∈": r"\in ", "∝": r"\propto "}
_DELIMITER = re.compile(r"\$\$|\$")


def _as_math(text: str) -> str:
    """Math as a text cut it: typed symbols as commands, no alignment ``&``, words in another
    script than Latin set as text, and a quote that starts inside a ``\\text{}`` argument
    (an unmatched ``}`` before any command) opened again."""
    for char, command in _SYMBOLS.items():
        text = text.replace(char, command)
    text = re.sub(r" {2,}", " ", re.sub(r"(?<!\\)&", "", text)).strip()
    depth = 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            if "\\" not in text[:i]:
                text = r"\text{" + text
            break
    pieces = re.split(r"(\\(?:text|mathrm|operatorname)\{[^{}]*\})", text)
    return "".join(p if i % 2 else re.sub(r"[^\x00-\x7f]+", lambda m: rf"\text{{{m.group()}}}", p)
                   for i, p in enumerate(pieces))


def _closed(quote: str) -> str:
    """The quote with a formula cut at either end closed again (see the module)."""
    marks = _DELIMITER.findall(quote.replace(r"\$", ""))
    if len(marks) % 2 == 0:
        return quote
    first = _DELIMITER.search(quote)
    assert first is not None
    head = quote[:first.start()]
    if re.search(r"\\[A-Za-z]+|[_^]\{", head):
        return first.group() + _as_math(head) + quote[first.start():]
    last = marks[-1]
    return quote + last


def _bare_math(quote: str) -> str | None:
    """A quote that is a formula without ``$`` (``T_{ma t h} = \\frac{Computation FLOPs}
    {Accelerator FLOPs/s}``): with LaTeX commands or scripts, safe, non-ASCII only inside
    ``\\text{}``; words in braces are set as text."""
    if "$" in quote or not re.search(r"\\[A-Za-z]+|[_^]\{", quote):
        return None
    body = re.sub(r"(?<![_^])(?<!\\text)(?<!\\mathrm)(?<!\\operatorname)"
                  r"\{([A-Za-z][A-Za-z/]*(?: [A-Za-z/()]+)*)\}", _braced_words,
                  _clean(_as_math(quote)))
    return body if _safe(body) else None


def _braced_words(m: re.Match[str]) -> str:
    """``{Computation FLOPs}`` as text: words of three letters or more (a single word of
    four), so ``{BF}`` and ``{B D F}`` stay math."""
    words = m.group(1)
    longest = max(len(re.sub(r"[^A-Za-z]", "", w)) for w in words.split())
    if longest >= (3 if " " in words else 4):
        return f"{{\\text{{{words}}}}}"
    return m.group(0)


def segments(quote: str) -> list[tuple[str, str]]:
    """The quote as (kind, text) pieces: ``text``, ``math`` or ``display``."""
    bare = _bare_math(quote)
    if bare is not None:
        return [("math", bare.strip())]
    quote = _closed(quote)
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _MATH.finditer(quote):
        display, inline = m.group(1), m.group(2)
        body = _clean(_as_math(display if display is not None else inline))
        if not _safe(body):
            continue
        if m.start() > pos:
            out.append(("text", quote[pos:m.start()]))
        out.append(("display" if display is not None else "math", body.strip()))
        pos = m.end()
    if pos < len(quote):
        out.extend(_elided_tail(quote[pos:]))
    return out


def _elided_tail(text: str) -> list[tuple[str, str]]:
    """Text that ends, after an ellipsis, in a formula its quote left without ``$``
    (``计算量是： … 2 \\cdot b_{m}``): the formula as math."""
    head, mark, tail = text.rpartition("…")
    math = _bare_math(tail) if mark else None
    if math is None:
        return [("text", text)]
    return [("text", head + mark + " "), ("math", math.strip())]


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
            math = _no_tags(math)
            pieces.append(f"$${math}$$" if kind == "display" else f"${math}$")
        else:
            cls = "tex display" if kind == "display" else "tex"
            pieces.append(f'<span class="{cls}">{html_escape(math)}</span>')
    return "".join(pieces)


def _no_tags(math: str) -> str:
    """Math for Markdown, where ``<`` before a letter, ``/``, ``!`` or ``?`` opens raw HTML:
    that ``<`` as ``\\lt`` (``\\textless{}`` in a ``\\text{}`` argument), the same sign to
    KaTeX and MathJax.

    >>> _no_tags(r"</span><script> \\text{<img>}")
    '\\\\lt /span>\\\\lt script> \\\\text{\\\\textless{}img>}'
    """
    pieces = re.split(r"(\\text\{[^{}]*\})", math)
    return "".join(re.sub(r"<(?=[A-Za-z/!?])", r"\\textless{}" if i % 2 else r"\\lt ", p)
                   for i, p in enumerate(pieces))
