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
