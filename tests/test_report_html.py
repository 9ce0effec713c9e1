"""The HTML write-ups in a real headless Chromium: every page loads, KaTeX typesets every
formula without an error, and no page asks for anything outside its folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from symroof.claims.runner import load_derivations, verify
from symroof.render.files import write
from symroof.render.report import render
from tests.browser import Browser
from tests.conftest import ROOT, require_tool, run_cli

pytestmark = pytest.mark.slow  # a browser or pdflatex pass over every write-up

PROBE = """JSON.stringify({
  errors: [...document.querySelectorAll('.katex-error')].map(e => e.title || e.textContent),
  tex: document.querySelectorAll('.tex').length,
  typeset: document.querySelectorAll('.tex > .katex, .tex > .katex-display').length,
  broken: [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
    .map(i => i.src),
  title: document.title})"""


def _katex_or_required() -> None:
    if not (ROOT / "node_modules" / "katex" / "dist" / "katex.min.js").is_file():
        if os.environ.get("SYMROOF_REQUIRE_TOOLS"):
            pytest.fail("KaTeX is required in CI but is not installed (make katex)")
        pytest.skip("KaTeX is not installed (npm ci)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _katex_or_required()
    out = tmp_path_factory.mktemp("html")
    write(render(verify(load_derivations([])), ["html"]).files, out)
    return out


@pytest.fixture(scope="module")
def visits(site: Path) -> dict[str, tuple[dict[str, object], list[str], list[str]]]:
    browser = Browser(require_tool("chromium"))
    try:
        seen = {}
        for page in sorted(site.glob("*.html")):
            v = browser.visit(page, PROBE)
            seen[page.name] = (json.loads(v.probe), v.requests, v.failed + v.console_errors)
        return seen
    finally:
        browser.close()


def test_every_page_typesets_its_math_without_an_error(
        visits: dict[str, tuple[dict[str, object], list[str], list[str]]]) -> None:
    assert {"index.html", "rooflines-ru.html", "rooflines-zh.html"} <= set(visits)
    for name, (probe, _, problems) in visits.items():
        assert probe["errors"] == [], name
        assert probe["tex"] == probe["typeset"] and probe["tex"], name
        assert probe["broken"] == [] and problems == [], name


def test_no_page_asks_for_anything_outside_its_folder(
        site: Path, visits: dict[str, tuple[dict[str, object], list[str], list[str]]]) -> None:
    folder = site.resolve().as_uri() + "/"
    for name, (_, requests, _) in visits.items():
        assert requests and all(u.startswith(folder) for u in requests), (name, requests)
        assert any(u.endswith("katex/katex.min.js") for u in requests), name


def test_a_bad_formula_is_seen(site: Path, tmp_path: Path) -> None:
    """The check can fail: a page with broken math shows a KaTeX error in the browser."""
    page = (site / "index.html").read_text("utf-8").replace(
        "</h1>", '</h1><span class="tex">\\frac{1}{</span>', 1)
    bad = site / "broken-probe.html"
    bad.write_text(page, encoding="utf-8")
    browser = Browser(require_tool("chromium"))
    try:
        probe = json.loads(browser.visit(bad, PROBE).probe)
    finally:
        browser.close()
        bad.unlink()
    assert len(probe["errors"]) == 1


def test_html_without_katex_is_a_clear_input_error(tmp_path: Path) -> None:
    env = {**os.environ, "SYMROOF_KATEX_DIR": str(tmp_path)}
    done = run_cli("report", str(ROOT / "tests" / "data" / "small.py"), "--format", "html",
                   "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 2
    assert done.stderr == (f"symroof: error: --format html: SYMROOF_KATEX_DIR={tmp_path} has "
                           "no katex.min.css or katex.min.js (it names KaTeX's dist folder)\n")
    assert not (tmp_path / "out").exists()


LAYOUT = """JSON.stringify([...document.querySelectorAll('table')].map(t => ({
  heading: (t.previousElementSibling && t.previousElementSibling.previousElementSibling ||
            {}).textContent || '',
  right: t.getBoundingClientRect().right,
  width: t.getBoundingClientRect().width,
  columns: [...t.querySelectorAll('thead th')].map(th => th.getBoundingClientRect().width),
  overflowing: [...t.querySelectorAll('td')].filter(td => td.scrollWidth > td.clientWidth + 1)
    .map(td => td.textContent.slice(0, 40))})).concat([{
  viewport: document.documentElement.clientWidth}]))"""


@pytest.fixture(scope="module")
def layouts(site: Path) -> dict[str, list[dict[str, object]]]:
    """The tables of the index and of one chapter, laid out in a 1280-pixel-wide window."""
    browser = Browser(require_tool("chromium"))
    try:
        return {name: json.loads(browser.visit(site / name, LAYOUT, width=1280).probe)
                for name in ("index.html", "rooflines-ru.html")}
    finally:
        browser.close()


def test_tables_fit_a_1280_pixel_window_and_no_cell_spills(
        layouts: dict[str, list[dict[str, object]]]) -> None:
    for name, found in layouts.items():
        *tables, last = found
        viewport = last["viewport"]  # 1280 less the scroll bar
        assert isinstance(viewport, int) and 1240 <= viewport <= 1280 and tables, name
        for table in tables:
            assert table["right"] <= viewport and table["overflowing"] == [], (name, table)


def test_the_errata_give_their_reasons_a_readable_column_at_1280_pixels(
        layouts: dict[str, list[dict[str, object]]]) -> None:
    """The reason column keeps its share of the table (38%, about 340 of 900 pixels), so a
    reason is a paragraph, not a ribbon of a dozen characters, whatever the formulas beside."""
    tables = [t for t in layouts["index.html"] if "viewport" not in t]
    errata = tables[1]  # the verdicts of each derivation, then the errata
    columns = errata["columns"]
    assert isinstance(columns, list) and len(columns) == 4
    width = float(errata["width"])  # type: ignore[arg-type]
    assert width >= 800
    assert columns[3] >= 0.37 * width and columns[3] >= 300
    assert min(columns) >= 0.15 * width
