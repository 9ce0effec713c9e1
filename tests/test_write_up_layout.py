"""The write-ups' tables set for reading: rows of inline fractions do not touch, and a
formula too long for its PDF column is set under its row at full size, not shrunk."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from symroof.core.printer import shown
from symroof.core.tables import Column, Table, cell, math, text
from tests.conftest import require_tool, run_cli

CLAIMS = """
from symroof import chip, einsum
from symroof.claims import Chapter


def claims(ch: Chapter) -> None:
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("h100-sxm"))
    ch.add(a=rl.at({"B": 4096, "D": 4096, "F": 4096}).intensity,
           b=rl.at({"B": 12345, "D": 67891, "F": 4097}).intensity, c=rl.ridge)
"""
TABLE = """
[chapter]
id = "fractions-en"
title = "Fractions"
book = ""
language = "en"
prefix = "en_"

["S".a]
quote = "about 1365"
stated = "1365"

["S".b]
quote = "about 2943"
stated = "2943"

["S".c]
quote = "about 295"
stated = "295"
"""


@pytest.mark.slow
def test_rows_of_stacked_fractions_do_not_touch_in_the_pdf(tmp_path: Path) -> None:
    """4096/3 (row 1), 3433754676315/1166841287 (row 2), 19788/67 (row 3): each row's
    denominator ends at least 2 pt above the next row's numerator on the page."""
    require_tool("pdflatex")
    pdftotext = require_tool("pdftotext")
    folder = tmp_path / "fractions"
    folder.mkdir()
    (folder / "claims.py").write_text(textwrap.dedent(CLAIMS), encoding="utf-8")
    (folder / "en.toml").write_text(textwrap.dedent(TABLE), encoding="utf-8")
    done = run_cli("report", str(folder), "--format", "tex,pdf", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    boxes = subprocess.run([pdftotext, "-bbox", "-f", "1", "-l", "1",
                            str(tmp_path / "out" / "fractions-en.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    words: dict[str, list[tuple[float, float]]] = {}
    for y_min, y_max, word in re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">'
                                         r"([^<]+)</word>", boxes):
        words.setdefault(word, []).append((float(y_min), float(y_max)))
    pairs = [("4096", "3433754676315"), ("1166841287", "19788")]
    for below, above in pairs:
        bottom = words[below][0][1]  # the first on the page: in the claims table
        top = words[above][0][0]
        assert top - bottom >= 2, (below, above, bottom, top)


def test_a_formula_too_long_for_its_column_goes_under_the_row() -> None:
    n, k, m = sp.symbols("t_n t_k b_m", positive=True)
    long = 2 * m * n * (-2 * m * n + k * (m * n + k * m))
    table = Table((Column("claim", 0.24), Column("stated", 0.16), Column("why", 0.6)),
                  ((cell(text("tiled")), cell(math(long)), cell(text("a reason"))),
                   (cell(text("short")), cell(math(sp.Rational(4096, 3))), cell(text("r")))))
    tex = table.render("tex")
    rows = tex.split("\n")
    first = rows.index(next(r for r in rows if r.startswith("tiled")))
    assert rows[first] == r"tiled & {\scriptsize (\allowbreak{}1)} & a reason \\"
    assert rows[first + 1].startswith(r"\multicolumn{3}{")
    assert rows[first + 1].endswith(r"{(1) stated: \fit{$" + shown(long).latex + r"$}} \\")
    assert r"\fit{$\frac{4096}{3}" in rows[first + 2]  # a short one stays in its cell
