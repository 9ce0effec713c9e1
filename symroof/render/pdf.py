"""PDF from a write-up's LaTeX: pdflatex in a temporary folder, no shell escape, and the
boxes its log says overflow.

>>> overfull_boxes("Overfull \\\\hbox (12.5pt too wide) in paragraph at lines 3--4\\n")
[(12.5, 'lines 3--4')]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, SymroofError

TEX_PACKAGES = ("texlive-latex-recommended texlive-pictures texlive-lang-cyrillic "
                "latex-cjk-chinese")


class LatexFailed(SymroofError):
    """pdflatex did not produce a PDF."""


@dataclass(frozen=True)
class Compiled:
    """A compiled document: the PDF and pdflatex's log of the last pass."""

    pdf: bytes
    log: str


def with_pdfs(files: dict[str, str | bytes], formats: Sequence[str], pdflatex: str | None,
              timeout: float) -> dict[str, str | bytes]:
    """``files`` with a PDF compiled from each ``.tex`` when ``formats`` asks for pdf, and the
    ``.tex`` sources left out unless it asks for tex too."""
    if "pdf" not in formats:
        return files
    out = dict(files)
    for name in sorted(k for k in files if k.endswith(".tex")):
        source = files[name]
        assert isinstance(source, str)
        out[name[:-4] + ".pdf"] = compile_pdf(source, name, pdflatex, timeout)
    if "tex" not in formats:
        out = {k: v for k, v in out.items() if not k.endswith(".tex")}
    return out


def compile_pdf(source: str, name: str, pdflatex: str | None = None,
                timeout: float = 300) -> bytes:
    """Compile a standalone LaTeX document in a temporary folder, without shell escape.

    Runs twice (long tables settle on the second pass), both passes together within
    ``timeout`` seconds. On failure the first error of the log is raised, naming the file.
    """
    return compile_tex(source, name, pdflatex, timeout).pdf


def compile_tex(source: str, name: str, pdflatex: str | None = None,
                timeout: float = 300) -> Compiled:
    """``compile_pdf`` with the log kept, for the overflow check."""
    exe = pdflatex or shutil.which("pdflatex")
    if exe is None:
        raise InputError(f"pdflatex is not installed (Debian: apt-get install {TEX_PACKAGES})",
                         "format pdf")
    with tempfile.TemporaryDirectory(prefix="symroof-tex-") as tmp:
        path = Path(tmp) / "doc.tex"
        path.write_text(source, encoding="utf-8")
        env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1",
               "openin_any": "p", "openout_any": "p"}
        log = Path(tmp) / "doc.log"
        deadline = time.monotonic() + timeout
        for _ in range(2):
            try:
                done = subprocess.run(
                    [exe, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
                     "doc.tex"], cwd=tmp, capture_output=True, env=env,
                    timeout=max(0.001, deadline - time.monotonic()), stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise LatexFailed(f"pdflatex ran past the time limit of {timeout:g} s",
                                  name) from None
            if done.returncode != 0 or not (Path(tmp) / "doc.pdf").exists():
                text = log.read_text("utf-8", "replace") if log.exists() else \
                    done.stdout.decode("utf-8", "replace")
                raise LatexFailed(_first_error(text), name)
        text = log.read_text("utf-8", "replace") if log.exists() else ""
        return Compiled((Path(tmp) / "doc.pdf").read_bytes(), text)


def _first_error(log: str) -> str:
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("!"):
            context = " ".join(x.strip() for x in lines[i + 1:i + 3] if x.strip())
            return f"pdflatex failed: {line[1:].strip()} {context}".strip()
    return "pdflatex failed without an error line in its log"


_OVERFULL = re.compile(r"Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\) (?:in|detected)"
                       r"[^\n]*?(lines? [\d-]+|at line \d+)?\n")


def overfull_boxes(log: str) -> list[tuple[float, str]]:
    """Every overfull box of a pdflatex log: (points, where)."""
    return [(float(m.group(1)), m.group(2) or "") for m in _OVERFULL.finditer(log)]
