"""Every bundled write-up compiles with pdflatex and no box overflows by more than 1 pt."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from symroof.claims.runner import load_derivations, verify
from symroof.render.pdf import compile_tex, overfull_boxes
from symroof.render.report import render
from tests.conftest import require_tool

pytestmark = pytest.mark.slow  # a browser or pdflatex pass over every write-up

TOLERANCE_PT = 1.0


@pytest.fixture(scope="module")
def bundled_logs() -> dict[str, str]:
    require_tool("pdflatex")
    files = render(verify(load_derivations([])), ["tex"], plots=False).files
    names = sorted(k for k in files if k.endswith(".tex"))

    def log(name: str) -> str:
        source = files[name]
        assert isinstance(source, str)
        return compile_tex(source, name).log

    with ThreadPoolExecutor(2) as pool:  # pdflatex runs are processes: two at a time
        return dict(zip(names, pool.map(log, names), strict=True))


def test_every_bundled_write_up_compiles(bundled_logs: dict[str, str]) -> None:
    assert {"index.tex", "rooflines-ru.tex", "rooflines-zh.tex"} <= set(bundled_logs)
    assert all("Output written on doc.pdf" in log for log in bundled_logs.values())


def test_no_box_overflows_by_more_than_a_point(bundled_logs: dict[str, str]) -> None:
    over = {name: [(pt, where) for pt, where in overfull_boxes(log) if pt > TOLERANCE_PT]
            for name, log in bundled_logs.items()}
    assert {k: v for k, v in over.items() if v} == {}


def test_the_log_check_sees_an_overflow() -> None:
    require_tool("pdflatex")
    wide = "\\documentclass{article}\\begin{document}\\noindent\\rule{30cm}{1pt}\\end{document}"
    boxes = overfull_boxes(compile_tex(wide, "wide.tex").log)
    assert boxes and boxes[0][0] > 300
