"""The one table writer: a table as data (columns, rows of cells made of parts), written
for the terminal, Markdown, LaTeX, HTML, and as a math array for Jupyter's LaTeX view.

>>> import sympy as sp
>>> t = Table((Column("claim"), Column("value", align="r")),
...           ((cell(text("ridge"), code("v5e")), cell(math(sp.Rational(9850, 41)))),))
>>> print(t.render("text"))
claim                 value
ridge v5e  9850/41 ≈ 240.24
>>> print(t.render("md"))
| claim | value |
|---|---:|
| ridge `v5e` | $\\frac{9850}{41} \\approx 240.24$ |

Cells hold parts (text, math, code, small print, links, breaks); every part is escaped or
printed here, through ``core.escape`` and ``core.printer``, never by a caller.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .escape import escape, html_escape, math_text, md_escape, tex_escape

if TYPE_CHECKING:  # the printer (SymPy) only where a cell holds math: tables of text,
    from .printer import Shown  # such as a cached verdict table, import no SymPy

FORMATS = ("text", "md", "tex", "html", "nb", "array")


@dataclass(frozen=True)
class Part:
    """A piece of a cell: ``kind`` is text, math, code, small, link or br."""

    kind: str
    value: Any = ""
    href: str = ""


def text(value: str) -> Part:
    return Part("text", str(value))


def math(value: Any) -> Part:
    """A value through the readable-form rule (or a ``Shown`` already made)."""
    from .printer import Shown, shown
    return Part("math", value if isinstance(value, Shown) else shown(value))


def code(value: str) -> Part:
    return Part("code", str(value))


def small(value: str) -> Part:
    return Part("small", str(value))


def link(value: str, href: str) -> Part:
    return Part("link", str(value), href)


BR = Part("br")


def cell(*parts: Part) -> tuple[Part, ...]:
    return tuple(p for p in parts if p.kind == "br" or p.value)


@dataclass(frozen=True)
class Column:
    """A column: its title, its share of the line in LaTeX (0: natural width) and its
    alignment (``l`` or ``r``)."""

    title: str
    width: float = 0.0
    align: str = "l"


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[tuple[tuple[Part, ...], ...], ...]

    def render(self, fmt: str, max_width: int = 60, tex_env: str = "longtable") -> str:
        """The table in ``fmt`` (one of FORMATS); ``max_width`` cuts terminal cells;
        ``tex_env`` is ``longtable`` (a write-up) or ``tabular`` (a snippet)."""
        if fmt == "text":
            return _text_table(self, max_width)
        if fmt == "md":
            return _md_table(self)
        if fmt == "tex":
            return _tex_table(self, tex_env)
        if fmt in ("html", "nb"):
            return _html_table(self, fmt)
        if fmt == "array":
            return _array(self)
        raise ValueError(f"unknown table format {fmt!r}")


def part(p: Part, fmt: str) -> str:
    """One part in ``fmt``."""
    if p.kind == "br":
        return {"md": "<br>", "html": "<br>", "tex": r"\newline "}.get(fmt, " ")
    if p.kind == "math":
        s: Shown = p.value
        if fmt == "text":
            return s.text
        if fmt == "md":
            return "$" + s.latex.replace("|", r"\vert ") + "$"
        if fmt == "html":
            return f'<span class="tex">{html_escape(s.latex)}</span>'
        if fmt == "nb":  # Jupyter typesets $...$ in HTML output with MathJax
            return "$" + html_escape(s.latex) + "$"
        if fmt == "array":
            return s.latex
        return r"\fit{$" + s.latex + "$}"
    value = str(p.value)
    if fmt == "nb":
        fmt = "html"
    if fmt == "array":
        return math_text(value, "md")
    if p.kind == "code":
        return {"md": f"`{value}`", "html": f"<code>{html_escape(value)}</code>",
                "tex": r"{\scriptsize\texttt{" + tex_escape(value, breaks=True) + "}}"
                }.get(fmt, value)
    if p.kind == "small":
        return {"html": f"<small>{html_escape(value)}</small>",
                "tex": r"{\scriptsize " + tex_escape(value, breaks=True) + "}",
                "md": md_escape(value, table=True)}.get(fmt, value)
    if p.kind == "link":
        if fmt == "md":
            return f"[{md_escape(value, table=True)}]({p.href})"
        if fmt == "html":
            return f'<a href="{html_escape(p.href)}">{html_escape(value)}</a>'
    return escape(value, fmt, table=True)


def cell_text(parts: Sequence[Part], fmt: str) -> str:
    return " ".join(part(p, fmt) for p in parts).replace(" <br> ", "<br>").replace(
        r" \newline  ", r"\newline ")


def counted(n: int, noun: str) -> str:
    """``n`` and an English noun, plural unless ``n`` is 1 (the nouns the views count take
    an s).

    >>> counted(1, "derivation"), counted(7, "derivation"), counted(1, "chip")
    ('1 derivation', '7 derivations', '1 chip')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def width(value: str) -> int:
    """Columns a string takes on a terminal (CJK characters take two).

    >>> width("B > 240"), width("临界")
    (7, 4)
    """
    if value.isascii():
        return len(value)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in value)


def cut(value: str, limit: int) -> str:
    """``value`` in at most ``limit`` columns, cut with an ellipsis.

    >>> cut("9850/41", 10), cut("9850/41", 5), cut("临界批量", 6)
    ('9850/41', '9850…', '临界…')
    """
    if width(value) <= limit:
        return value
    used = 0
    for end, ch in enumerate(value):
        used += width(ch)
        if used > limit - 1:
            return value[:end] + "…"
    return value + "…"


def _text_table(t: Table, max_width: int) -> str:
    cells = [[c.title for c in t.columns]] + [
        [cut(cell_text(c, "text"), max_width) for c in row] for row in t.rows]
    widths = [max(width(r[i]) for r in cells) for i in range(len(t.columns))]
    lines = []
    for r in cells:
        padded = []
        for i, (value, col) in enumerate(zip(r, t.columns, strict=True)):
            fill = " " * (widths[i] - width(value))
            last = i == len(r) - 1
            padded.append(fill + value if col.align == "r" else value + ("" if last else fill))
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)


def _md_table(t: Table) -> str:
    head = "| " + " | ".join(md_escape(c.title, table=True) for c in t.columns) + " |"
    rule = "|" + "|".join("---:" if c.align == "r" else "---" for c in t.columns) + "|"
    body = ["| " + " | ".join(cell_text(c, "md") for c in row) + " |" for row in t.rows]
    return "\n".join([head, rule, *body])


def _tex_spec(c: Column) -> str:
    if not c.width:
        return "r" if c.align == "r" else "l"
    align = r"\raggedleft" if c.align == "r" else r"\raggedright"
    return (rf">{{{align}\arraybackslash}}"
            rf"p{{\dimexpr {c.width:g}\linewidth-2\tabcolsep\relax}}")


def _tex_table(t: Table, env: str = "longtable") -> str:
    spec = "".join(_tex_spec(c) for c in t.columns)
    head = " & ".join(r"\textbf{" + tex_escape(c.title) + "}" for c in t.columns)
    lines = [rf"\begin{{{env}}}{{{spec}}}", r"\toprule", head + r" \\", r"\midrule"]
    if env == "longtable":
        lines.append(r"\endhead")
    def tex_cell(c: tuple[Part, ...], col: Column) -> str:
        out = cell_text(c, "tex")  # natural-width columns never break
        return out if col.width else out.replace(r"\allowbreak{}", "")

    for row in t.rows:
        # a formula that would shrink below SHRINK_AT of its size in its column is set
        # under the row, across the table, numbered, and its cell holds the number
        below: list[str] = []
        cells = []
        for c, col in zip(row, t.columns, strict=True):
            kept = []
            for p in c:
                if env == "longtable" and col.width and p.kind == "math" and \
                        _tex_points(p.value.text) * SHRINK_AT > col.width * LINE_PT:
                    below.append(rf"{tex_escape(col.title)}: \fit{{${p.value.latex}$}}")
                    kept.append(small(f"({len(below)})"))
                else:
                    kept.append(p)
            cells.append(tex_cell(tuple(kept), col))
        lines.append(" & ".join(cells) + r" \\")
        lines += [rf"\multicolumn{{{len(t.columns)}}}{{>{{\raggedright\arraybackslash}}"
                  rf"p{{\dimexpr\linewidth-2\tabcolsep\relax}}}}{{({i}) {f}}} \\"
                  for i, f in enumerate(below, 1)]
    lines += [r"\bottomrule", rf"\end{{{env}}}"]
    return "\n".join(lines)


LINE_PT = 483.0  # the text width of an A4 write-up (2 cm margins), in points
SHRINK_AT = 0.7  # the smallest scale a formula is set at inside its cell


def _tex_points(plain: str) -> float:
    """A formula's width in points, estimated from its plain form (about 5.5 pt a character
    at 11 pt): enough to tell a formula that fits its column from one that would shrink to
    an unreadable size."""
    return 5.5 * len(plain.replace("*", "").replace(" ", ""))


def _html_table(t: Table, fmt: str = "html") -> str:
    def th(c: Column) -> str:
        return f'<th class="{c.align}">{html_escape(c.title)}</th>'

    head = "<tr>" + "".join(th(c) for c in t.columns) + "</tr>"
    body = ["<tr>" + "".join(f'<td class="{col.align}">{cell_text(c, fmt)}</td>'
                             for c, col in zip(row, t.columns, strict=True)) + "</tr>"
            for row in t.rows]
    # columns with a share of the line keep it in the browser too (as in LaTeX), so a long
    # formula or id cannot squeeze the column of prose beside it
    shares = [c.width for c in t.columns]
    if fmt == "html" and any(shares):
        rest = max(0.0, 1 - sum(shares)) / max(1, shares.count(0.0))
        cols = "".join(f'<col style="width: {100 * (w or rest):.4g}%">' for w in shares)
        opening = ['<table class="shares">', f"<colgroup>{cols}</colgroup>"]
    else:
        opening = ["<table>"]
    return "\n".join([*opening, f"<thead>{head}</thead>", "<tbody>", *body, "</tbody>",
                      "</table>"])


def _array(t: Table) -> str:
    """A math-mode array (for ``_repr_latex_``: Jupyter shows it with MathJax)."""
    spec = "".join("r" if c.align == "r" else "l" for c in t.columns)
    head = " & ".join(r"\textbf{" + math_text(c.title, "md")[6:-1] + "}" for c in t.columns)
    rows = [" & ".join(r"\;".join(part(p, "array") for p in c if p.kind != "br") or "{}"
                       for c in row) for row in t.rows]
    return (r"\begin{array}{" + spec + "}\n" + head + " \\\\ \\hline\n" +
            " \\\\\n".join(rows) + "\n\\end{array}")


def rich_html(title: str, table: Table, note: str = "") -> str:
    """A titled HTML table, as ``_repr_html_`` returns it."""
    tail = f"<p>{html_escape(note)}</p>" if note else ""
    return (f'<div class="symroof"><strong>{html_escape(title)}</strong>\n'
            f"{table.render('nb')}{tail}</div>")


def rich_latex(title: str, table: Table) -> str:
    """A titled math array, as ``_repr_latex_`` returns it."""
    return ("$$\\begin{array}{l}\n" + math_text(title, "md") + " \\\\\n" +
            table.render("array") + "\n\\end{array}$$")


def key_values(rows: Sequence[tuple[str, Any]]) -> Table:
    """A two-column table of (name, value) rows: values through the readable-form rule,
    strings as text."""
    return Table((Column("quantity"), Column("value")),
                 tuple((cell(text(k)), cell(text(v) if isinstance(v, str) else math(v)))
                       for k, v in rows))


class RichView:
    """Rich notebook views for any object that says what it shows: ``_view()`` returns a
    title and a Table; Jupyter then gets HTML, LaTeX and Markdown from the one table
    writer.

    >>> class Pair(RichView):
    ...     def _view(self) -> tuple[str, Table]:
    ...         return "pair", key_values([("x", 1)])
    >>> print(Pair()._repr_markdown_())
    **pair**
    <BLANKLINE>
    | quantity | value |
    |---|---|
    | x | $1$ |
    """

    def _view(self) -> tuple[str, Table]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self._view()[0]}>"

    def _repr_html_(self) -> str:
        return rich_html(*self._view())

    def _repr_latex_(self) -> str:
        return rich_latex(*self._view())

    def _repr_markdown_(self) -> str:
        title, table = self._view()
        return f"**{md_escape(title)}**\n\n{table.render('md')}"
