"""Write-ups: every derivation as Markdown, LaTeX, PDF or HTML, plus an index with errata.

>>> from symroof.claims.loader import load_derivations
>>> from symroof.claims.runner import verify
>>> from tests.conftest import ROOT
>>> result = verify(load_derivations([str(ROOT / "tests" / "data" / "small.py")]))
>>> sorted(render(result, ["md"], plots=False).files)
['index.md', 'small.md']

Templates lay out, the printer and the table writer format (``render.pages``): this module
picks the formats, draws the figures and hands pages to the templates. PDFs come from
``render.pdf``, files reach the disk through ``render.files``. Output is deterministic: same
input, same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2

from ..claims.runner import ClaimVerdict, Verification
from ..core.errors import InputError
from ..core.escape import escape, tex_escape
from ..core.resources import bundled
from .html import assets as html_assets
from .pages import derivation_page, index_page, strings
from .pdf import with_pdfs
from .plots import FigureData, figures, have_matplotlib, pgfplots, svg

FORMATS = ("md", "tex", "pdf", "html")
LANGUAGES = ("en", "ru", "zh")
NO_PLOTS = ("figures were left out: they need matplotlib (pip install \"symroof[plot]\"); "
            "the LaTeX and PDF write-ups draw theirs with pgfplots")


def _environment(kind: str) -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(bundled("templates")))
    common: dict[str, Any] = {"loader": loader, "undefined": jinja2.StrictUndefined,
                              "autoescape": False, "trim_blocks": True,
                              "lstrip_blocks": True, "keep_trailing_newline": True}
    if kind == "tex":
        common.update(block_start_string=r"\BLOCK{", block_end_string="}",
                      variable_start_string=r"\VAR{", variable_end_string="}",
                      comment_start_string=r"\#{", comment_end_string="}",
                      line_statement_prefix="%%", line_comment_prefix="%#")
    return jinja2.Environment(**common)


@dataclass(frozen=True)
class Rendered:
    """Files of a render: relative path to text (or to bytes for PDFs and assets)."""

    files: Mapping[str, str | bytes]
    notes: tuple[str, ...] = ()


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# the names of the files and folders beside the derivations' pages (the index, the figures,
# the HTML assets): a derivation with one of them as its id would overwrite them
RESERVED = ("index", "figures", "katex", "symroof")


def render(verification: Verification, formats: Sequence[str] = ("md", "tex"),
           lang: str = "en", plots: bool | None = None,
           pdflatex: str | None = None, timeout: float = 300) -> Rendered:
    """Render every derivation and the index in ``formats`` (pdflatex within ``timeout``
    seconds per document)."""
    if lang not in LANGUAGES:
        raise InputError(f"unknown language {lang!r} (languages: {', '.join(LANGUAGES)})",
                         "lang")
    for d in verification.derivations:
        if not _PLAIN.match(d.id) or ".." in d.id:
            raise InputError(f"derivation id {d.id!r} is not a plain name (letters, digits "
                             "and . _ -); it names the write-up's files", d.origin or None)
        if d.id.split(".")[0].lower() in RESERVED:
            raise InputError(f"derivation id {d.id!r} is reserved: the write-up's "
                             f"{', '.join(RESERVED)} files and folders have these names",
                             d.origin or None)
    words = strings()[lang]
    plots = have_matplotlib() if plots is None else plots
    files: dict[str, str | bytes] = {}
    by_derivation: dict[str, list[ClaimVerdict]] = {}
    for v in verification.verdicts:
        by_derivation.setdefault(v.derivation, []).append(v)
    tex = "tex" in formats or "pdf" in formats
    any_figures = False
    for d in verification.derivations:
        verdicts = by_derivation.get(d.id, [])
        figs = figures(d)
        any_figures = any_figures or bool(figs)
        svg_names = [(f"figures/{f.name}.svg", _caption(f, words)) for f in figs]
        if plots and ("md" in formats or "html" in formats):
            for fig in figs:
                files[f"figures/{fig.name}.svg"] = svg(fig, *_axes(fig, words))
        for fmt in ("md", "html"):
            if fmt in formats:
                page = derivation_page(d, verdicts, words, fmt)
                page["figures"] = [(p, escape(c, fmt)) for p, c in svg_names]
                page["plots"] = plots
                page["lang"] = lang
                files[f"{d.id}.{fmt}"] = _render(f"derivation.{fmt}.j2", fmt, page)
        if tex:
            page = derivation_page(d, verdicts, words, "tex")
            page["figures"] = [pgfplots(f, tex_escape(_axes(f, words)[0]),
                                        tex_escape(_axes(f, words)[1]),
                                        tex_escape(_caption(f, words))) for f in figs]
            page["plots"] = True
            files[f"{d.id}.tex"] = _render("derivation.tex.j2", "tex", page)
    for fmt, suffix in (("md", "md"), ("tex", "tex"), ("html", "html")):
        if fmt in formats or (fmt == "tex" and tex):
            context = {**index_page(verification, words, fmt, suffix), "lang": lang}
            files[f"index.{fmt}"] = _render(f"index.{fmt}.j2", fmt, context)
    if "html" in formats:
        files.update(html_assets())
    files = with_pdfs(files, formats, pdflatex, timeout)
    notes = (NO_PLOTS,) if any_figures and not plots and \
        ("md" in formats or "html" in formats) else ()
    return Rendered(dict(sorted(files.items())), notes)


def _render(template: str, kind: str, context: Mapping[str, Any]) -> str:
    try:
        return _environment(kind).get_template(template).render(**context)
    except jinja2.TemplateError as exc:
        raise InputError(f"template error: {exc}", f"templates/{template}") from None


def _axes(fig: FigureData, words: Mapping[str, Any]) -> tuple[str, str]:
    if fig.kind == "roofline":
        return words["intensity_axis"], words["attainable_axis"]
    return fig.xlabel, fig.ylabel or words["attainable_axis"]


def _caption(fig: FigureData, words: Mapping[str, Any]) -> str:
    key = {"roofline": "roofline_caption", "curve": "curve_caption"}.get(fig.kind)
    return str(words[key]).format(**fig.caption_args) if key else fig.caption_args["title"]
