"""Write-ups: every derivation as Markdown and LaTeX (and PDF), plus an index with errata.

Templates lay out, printers format: this module turns derivations and verdicts into plain
strings (escaped user text, LaTeX math from the one printer), and the Jinja templates in
``templates/`` arrange them. Output is deterministic: same input, same bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import sympy as sp

from ..claims.model import Derivation
from ..claims.runner import Verdict, Verification
from ..core.errors import InputError, SymroofError
from ..core.printer import approx, latex, latex_value, math_text, md_escape, tex_escape
from ..core.resources import bundled
from .plots import FigureData, figures, have_matplotlib, pgfplots, svg

FORMATS = ("md", "tex", "pdf")
LANGUAGES = ("en", "ru", "zh")


@lru_cache(maxsize=1)
def strings() -> dict[str, dict[str, Any]]:
    """The words of the write-ups per language (``templates/strings.toml``)."""
    with open(bundled("templates") / "strings.toml", "rb") as handle:
        return tomllib.load(handle)


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
    """Files of a render: relative path to text (or to bytes for PDFs)."""

    files: Mapping[str, str | bytes]


def render(verification: Verification, formats: Sequence[str] = ("md", "tex"),
           lang: str = "en", plots: bool | None = None,
           pdflatex: str | None = None) -> Rendered:
    """Render every derivation and the index in ``formats``."""
    if lang not in LANGUAGES:
        raise InputError(f"unknown language {lang!r} (languages: {', '.join(LANGUAGES)})",
                         "--lang")
    words = strings()[lang]
    plots = have_matplotlib() if plots is None else plots
    files: dict[str, str | bytes] = {}
    by_derivation: dict[str, list[Verdict]] = {}
    for v in verification.verdicts:
        by_derivation.setdefault(v.derivation, []).append(v)
    pages = []
    for d in verification.derivations:
        verdicts = by_derivation.get(d.id, [])
        figs = figures(d)
        pages.append((d, verdicts, figs))
        if "md" in formats:
            names = []
            for fig in figs:
                if plots:
                    files[f"figures/{fig.name}.svg"] = svg(fig, *_axes(fig, words, "md"))
                names.append((f"figures/{fig.name}.svg", _caption(fig, words)))
            files[f"{d.id}.md"] = _render("derivation.md.j2", "md",
                                          _page(d, verdicts, words, "md", names, plots))
        if "tex" in formats or "pdf" in formats:
            tex_figs = [pgfplots(f, *_axes(f, words, "tex"), tex_escape(_caption(f, words)))
                        for f in figs]
            files[f"{d.id}.tex"] = _render("derivation.tex.j2", "tex",
                                           _page(d, verdicts, words, "tex", tex_figs, plots))
    index_context = _index(verification, pages, words)
    if "md" in formats:
        files["index.md"] = _render("index.md.j2", "md", {**index_context, "fmt": "md"})
    if "tex" in formats or "pdf" in formats:
        files["index.tex"] = _render("index.tex.j2", "tex", {**index_context, "fmt": "tex"})
    if "pdf" in formats:
        for name in sorted(k for k in files if k.endswith(".tex")):
            text = files[name]
            assert isinstance(text, str)
            files[name[:-4] + ".pdf"] = compile_pdf(text, name, pdflatex)
        if "tex" not in formats:
            for name in [k for k in files if k.endswith(".tex")]:
                del files[name]
    return Rendered(dict(sorted(files.items())))


def _render(template: str, kind: str, context: Mapping[str, Any]) -> str:
    try:
        return _environment(kind).get_template(template).render(**context)
    except jinja2.TemplateError as exc:
        raise InputError(f"template error: {exc}", f"templates/{template}") from None


def _axes(fig: FigureData, words: Mapping[str, Any], fmt: str) -> tuple[str, str]:
    x = words["intensity_axis"] if fig.kind == "roofline" else fig.xlabel
    y = words["attainable_axis"]
    return (tex_escape(x), tex_escape(y)) if fmt == "tex" else (x, y)


def _caption(fig: FigureData, words: Mapping[str, Any]) -> str:
    key = "roofline_caption" if fig.kind == "roofline" else "curve_caption"
    return str(words[key]).format(**fig.caption_args)


def _page(d: Derivation, verdicts: list[Verdict], words: Mapping[str, Any], fmt: str,
          figs: Sequence[Any], plots: bool) -> dict[str, Any]:
    esc: Callable[[str], str] = tex_escape if fmt == "tex" else md_escape
    cell: Callable[[str], str] = tex_escape if fmt == "tex" else (
        lambda s: md_escape(s, table=True))
    steps = []
    for s in d.steps:
        math = _step_math(s.input, s.output, s.kind, fmt)
        steps.append({"kind": words["kinds"].get(s.kind, s.kind), "title": esc(s.title),
                      "math": math, "why": esc(s.justification)})
    claims = [_claim(v, words, esc, cell, fmt) for v in verdicts]
    counts = _counts(verdicts)
    return {
        "title": esc(d.title), "id": d.id, "source": esc(d.source.cite()),
        "language": d.source.language,
        "assumptions": [esc(a) for a in d.assumptions], "notes": [esc(n) for n in d.notes],
        "steps": steps, "claims": claims, "figures": figs, "plots": plots,
        "counts": [{"verdict": k, "word": words["verdicts"][k], "count": n}
                   for k, n in counts.items()],
        "s": words, "fmt": fmt,
    }


def _claim(v: Verdict, words: Mapping[str, Any], esc: Callable[[str], str],
           cell: Callable[[str], str], fmt: str) -> dict[str, Any]:
    c = v.claim
    derived = _derived_math(v, fmt)
    return {
        "id": c.id, "id_tex": tex_escape(c.id), "statement": cell(c.statement),
        "quote": esc(c.quote), "section": esc(c.source.section),
        "stated": cell(c.stated), "derived": derived, "verdict": v.verdict,
        "verdict_word": words["verdicts"][v.verdict],
        "detail": "" if v.verdict == "OK" else cell(c.erratum.why if v.verdict == "ERRATUM"
                                                    and c.erratum else v.detail),
        "erratum": None if c.erratum is None else {"why": esc(c.erratum.why),
                                                   "right": esc(c.erratum.right)},
        "meaning": esc(c.meaning), "evidence": esc(c.evidence),
    }


def _derived_math(v: Verdict, fmt: str) -> str:
    """The derived value in math: the exact form, with a decimal beside a fraction."""
    if not v.derived:
        return ""
    try:
        from ..core.parse import parse_expr, parse_relation
        expr: sp.Basic = (parse_relation(v.derived) if re.search(r"[<>]", v.derived)
                          else parse_expr(v.derived))
    except SymroofError:
        return math_text(v.derived, fmt)
    shown = latex(expr)
    if isinstance(expr, sp.Expr) and expr.is_number and not expr.is_Integer:
        shown += r" \approx " + approx(expr)
    return _md_math(shown) if fmt == "md" else shown


def _md_math(math: str) -> str:
    """Math for a Markdown table: a bar would end the cell."""
    return math.replace("|", r"\vert ")


def _step_math(input: Any, output: Any, kind: str, fmt: str) -> str:
    if output is None and input is None:
        return ""
    if input is None or (kind in ("define", "evaluate", "solve") and output is not None):
        shown = latex_value(output if output is not None else input, fmt)
    elif output is None:
        shown = latex_value(input, fmt)
    else:
        shown = latex_value(input, fmt) + r" \;\longrightarrow\; " + latex_value(output, fmt)
    return _md_math(shown) if fmt == "md" else shown


def _counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    from ..claims.runner import VERDICTS
    counts = {k: 0 for k in VERDICTS}
    for v in verdicts:
        counts[v.verdict] += 1
    return {k: n for k, n in counts.items() if n}


def _index(verification: Verification, pages: list[Any],
           words: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    errata = []
    for d, verdicts, _ in pages:
        counts = _counts(verdicts)
        rows.append({"id": d.id, "id_tex": tex_escape(d.id), "title_md": md_escape(d.title),
                     "title_tex": tex_escape(d.title), "claims": len(verdicts),
                     "counts_md": ", ".join(f"{n} {words['verdicts'][k]}"
                                            for k, n in counts.items()),
                     "counts": counts})
        for v in verdicts:
            if v.verdict in ("ERRATUM", "MISMATCH", "STALE"):
                c = v.claim
                errata.append({
                    "derivation": d.id, "id": c.id, "id_tex": tex_escape(c.id),
                    "section_md": md_escape(c.source.section, table=True),
                    "section_tex": tex_escape(c.source.section),
                    "stated_md": md_escape(c.stated, table=True),
                    "stated_tex": tex_escape(c.stated), "derived_md": _derived_math(v, "md"),
                    "derived_tex": _derived_math(v, "tex"),
                    "why_md": md_escape(c.erratum.why if c.erratum else v.detail, table=True),
                    "why_tex": tex_escape(c.erratum.why if c.erratum else v.detail),
                    "verdict": words["verdicts"][v.verdict]})
    total = _counts(verification.verdicts)
    return {"rows": rows, "errata": errata, "s": words,
            "total": [{"verdict": k, "word": words["verdicts"][k], "count": n}
                      for k, n in total.items()],
            "n_claims": len(verification.verdicts)}


class LatexFailed(SymroofError):
    """pdflatex did not produce a PDF."""


def compile_pdf(source: str, name: str, pdflatex: str | None = None) -> bytes:
    """Compile a standalone LaTeX document in a temporary folder, without shell escape.

    Runs twice (long tables settle on the second pass). On failure the first error of the
    log is raised, naming the file.
    """
    exe = pdflatex or shutil.which("pdflatex")
    if exe is None:
        raise InputError("pdflatex is not installed (Debian: apt-get install "
                         "texlive-latex-recommended texlive-pictures texlive-lang-cyrillic "
                         "latex-cjk-chinese)", "--format pdf")
    with tempfile.TemporaryDirectory(prefix="symroof-tex-") as tmp:
        path = Path(tmp) / "doc.tex"
        path.write_text(source, encoding="utf-8")
        env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1",
               "openin_any": "p", "openout_any": "p"}
        for _ in range(2):
            done = subprocess.run(
                [exe, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
                 "doc.tex"], cwd=tmp, capture_output=True, env=env, timeout=300)
            if done.returncode != 0 or not (Path(tmp) / "doc.pdf").exists():
                log = (Path(tmp) / "doc.log")
                text = log.read_text("utf-8", "replace") if log.exists() else \
                    done.stdout.decode("utf-8", "replace")
                raise LatexFailed(_first_error(text), name)
        return (Path(tmp) / "doc.pdf").read_bytes()


def _first_error(log: str) -> str:
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("!"):
            context = " ".join(x.strip() for x in lines[i + 1:i + 3] if x.strip())
            return f"pdflatex failed: {line[1:].strip()} {context}".strip()
    return "pdflatex failed without an error line in its log"


def write(rendered: Rendered, out: Path) -> list[str]:
    """Write every file atomically (a temporary file, then a rename), after all of them
    rendered: an interrupted run leaves the previous files whole."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder: {exc.strerror}", str(out)) \
            from None
    if not os.access(out, os.W_OK):
        raise InputError("the output folder is not writable", str(out))
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, content in rendered.files.items():
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".symroof-", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            staged.append((Path(tmp), target))
        with _signals_held():
            for tmp_path, target in staged:
                os.replace(tmp_path, target)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", str(out)) from None
    finally:
        for tmp_path, _ in staged:
            if tmp_path.exists():
                tmp_path.unlink()
    return list(rendered.files)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while files are swapped in, so an interrupted run leaves
    either every previous file or every new one."""
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stale(rendered: Rendered, out: Path) -> list[str]:
    """Files under ``out`` that differ from a fresh render (missing ones included)."""
    differing = []
    for rel, content in rendered.files.items():
        target = out / rel
        data = content.encode("utf-8") if isinstance(content, str) else content
        if not target.is_file() or target.read_bytes() != data:
            differing.append(rel)
    return differing
