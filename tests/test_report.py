"""Write-ups: golden Markdown and LaTeX, KaTeX-safe math, escaping, determinism, PDF."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from symroof.claims.runner import load_derivations, verify
from symroof.render.files import stale, write
from symroof.render.pdf import compile_pdf
from symroof.render.report import render
from tests.conftest import ROOT, require_tool, run_cli

SMALL = ROOT / "tests" / "data" / "small.py"
GOLDEN = ROOT / "tests" / "golden"

# Commands KaTeX renders (the subset the printer and templates can emit, and more).
KATEX = {
    "frac", "cdot", "approx", "left", "right", "mathrm", "text", "leq", "geq", "lt", "gt",
    "max", "min", "log", "exp", "sqrt", "infty", "alpha", "beta", "gamma", "delta",
    "epsilon", "lambda", "mu", "nu", "pi", "sigma", "theta", "tau", "phi", "quad", "qquad",
    "longrightarrow", "to", "rightarrow", "lfloor", "rfloor", "lceil", "rceil", "begin",
    "end", "cases", "otherwise", "times", "ldots", "dots", "operatorname", "neq", "ne",
    "le", "ge", "sum", "prod", "limits", "in", "partial", "Theta", "ll", "gg",
    "ln", "mathbb", "boldsymbol", "int", "Delta", "omega", "eta", "xi", "rho", "kappa",
    "zeta", "chi", "psi", "Omega", "Lambda", "Sigma", "Phi", "Pi", "Gamma", "vee", "wedge",
    "equiv", "sim", "propto", "cdots", "vdots", "hat", "bar", "tilde", "overline", "dot",
    "ddot", "prime", "Re", "Im", "wp", "lvert", "rvert", "mid", "vert", "textrm",
    "mathit", "mathbf", "displaystyle", "pm", "mp", "circ", "bmod", "pmod", "binom",
    "emptyset", "land", "lor", "neg", "not", "forall", "exists", "varepsilon",
    "vartheta", "varphi", "upsilon", "iota", "nabla", "mathcal", "dfrac", "tfrac", "notin",
    "Rightarrow", "mapsto", "lVert", "rVert", "underbrace", "top", "Xi", "Psi", "sin", "cos",
    "fit", "ast", "star", "Vert", "implies", "iff", "Leftrightarrow", "leftrightarrow",
}


def small_render(fmt: str) -> dict[str, str | bytes]:
    result = verify(load_derivations([str(SMALL)]))
    return dict(render(result, [fmt], plots=False).files)


@pytest.mark.parametrize(("fmt", "name"), [("md", "small.md"), ("tex", "small.tex"),
                                           ("md", "index.md"), ("tex", "index.tex")])
def test_golden(fmt: str, name: str) -> None:
    got = small_render(fmt)[name]
    assert isinstance(got, str)
    golden = GOLDEN / name
    if os.environ.get("SYMROOF_UPDATE_GOLDEN"):
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8")


def test_small_write_up_shows_steps_verdicts_and_escaped_text() -> None:
    md = small_render("md")["small.md"]
    assert isinstance(md, str)
    assert "| 3 | Compute-bound when B &gt; 240. `threshold` | $B > 240$ | " \
        "$B > \\frac{9850}{41} \\approx 240.24$ | holds |" in md
    assert "erratum" in md and "digits swapped" in md
    assert "A dollar \\$y\\$ is text here" in md  # a dollar in user text cannot open math
    # a quote's own math is shown as math, OCR spacing removed; unsafe math stays text
    assert "$y_{max}$ \\$\\\\input{z}\\$" in md
    tex = small_render("tex")["small.tex"]
    assert isinstance(tex, str)
    assert r"A dollar \$y\$ is text here, \textbackslash{}input\{x\} too." in tex
    assert r"50\% of readers skip this \& that\_1 \#2." in tex
    index = small_render("md")["index.md"]
    assert isinstance(index, str)
    assert "| [ridge\\_typo](small.md)<br>Matmul | 204 | $\\frac{9850}{41} \\approx 240.24$ | " \
        "digits swapped |" in index


def _math_segments(text: str) -> list[str]:
    clean = text.replace("\\$", "")
    clean = re.sub(r"`[^`]*`", "", clean)
    parts = clean.split("$")
    assert len(parts) % 2 == 1, "unbalanced $ delimiters"
    return parts[1::2]


@pytest.mark.slow
def test_bundled_markdown_has_balanced_katex_math() -> None:
    result = verify(load_derivations([]))
    files = render(result, ["md"], plots=False).files
    for name, text in files.items():
        if not name.endswith(".md"):
            continue
        assert isinstance(text, str)
        for math in _math_segments(text):
            assert math.count("{") == math.count("}"), (name, math)
            assert len(re.findall(r"\\left(?![a-z])", math)) == len(
                re.findall(r"\\right(?![a-z])", math)), (name, math)
            for command in re.findall(r"\\([A-Za-z]+)", math):
                assert command in KATEX, (name, command, math)


def test_languages_translate_the_words_not_the_formulas() -> None:
    result = verify(load_derivations([str(SMALL)]))
    ru = render(result, ["md"], lang="ru", plots=False).files["small.md"]
    zh = render(result, ["md"], lang="zh", plots=False).files["small.md"]
    assert isinstance(ru, str) and isinstance(zh, str)
    assert "## Утверждения" in ru and "ошибка в тексте" in ru
    assert "## 论断" in zh and "勘误" in zh
    assert "$B > \\frac{9850}{41} \\approx 240.24$" in ru
    assert "$B > \\frac{9850}{41} \\approx 240.24$" in zh


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["0", "12345"])
def test_committed_reports_match_a_fresh_render_whatever_the_hash_seed(seed: str) -> None:
    """Two renders under different hash seeds both equal the committed files, figures
    included: the write-ups are deterministic and reports/ is current."""
    done = run_cli("report", "--check", env={**os.environ, "PYTHONHASHSEED": seed})
    assert done.returncode == 0, done.stdout
    assert _have_matplotlib(), "the committed figures are checked only with matplotlib"


def _have_matplotlib() -> bool:
    from symroof.render.plots import have_matplotlib
    return have_matplotlib()


@pytest.mark.slow
def test_check_reports_a_stale_file(tmp_path: Path) -> None:
    result = verify(load_derivations([str(SMALL)]))
    rendered = render(result, ["md"], plots=False)
    write(rendered.files, tmp_path)
    assert stale(rendered.files, tmp_path) == []
    (tmp_path / "small.md").write_text("edited by hand\n")
    assert stale(rendered.files, tmp_path) == ["small.md"]
    (tmp_path / "index.md").unlink()
    done = run_cli("report", str(SMALL), "--format", "md", "--out", str(tmp_path), "--check")
    assert done.returncode == 1
    assert f"stale: {tmp_path / 'small.md'}" in done.stdout
    assert f"missing: {tmp_path / 'index.md'}" in done.stdout
    assert f"compared against {tmp_path.resolve()}: 1 of " in done.stdout


def test_check_without_the_folder_says_there_is_nothing_to_compare(tmp_path: Path) -> None:
    done = run_cli("report", str(SMALL), "--format", "md", "--out", "nowhere", "--check",
                   cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith(f"nothing to compare against: {tmp_path.resolve() / 'nowhere'}")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_unwritable_output_folder_is_an_input_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_cli("report", str(SMALL), "--out", str(blocker / "sub"))
    assert done.returncode == 2 and "cannot create the output folder" in done.stderr


@pytest.mark.slow
def test_pdf_compiles_without_shell_escape() -> None:
    require_tool("pdflatex")
    tex = small_render("tex")["small.tex"]
    assert isinstance(tex, str)
    pdf = compile_pdf(tex, "small.tex")
    assert pdf.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 1 <= pages <= 3


def test_pdflatex_failure_names_the_first_error() -> None:
    require_tool("pdflatex")
    from symroof.render.pdf import LatexFailed
    with pytest.raises(LatexFailed, match=r"^broken.tex: pdflatex failed: Undefined control "
                                          r"sequence"):
        compile_pdf("\\documentclass{article}\\begin{document}\\nosuchmacro\\end{document}",
                    "broken.tex")


@pytest.mark.slow
def test_installed_wheel_reports_from_an_empty_folder(tmp_path: Path) -> None:
    """``pip install .`` (not editable) ships derivations, templates and KaTeX: the HTML
    write-ups need no checkout (the empty folder is outside it)."""
    require_tool("npm")  # the build takes KaTeX from the npm registry
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(ROOT)]
    subprocess.run(pip, check=True, capture_output=True, timeout=600)
    work = tmp_path / "empty"
    work.mkdir()
    formats = "md,tex,html,pdf" if _pdflatex_or_required() else "md,tex,html"
    done = subprocess.run([str(venv / "bin" / "symroof"), "report", "--format", formats,
                           "--out", "out"], cwd=work, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    out = work / "out"
    names = {p.name for p in out.iterdir()}
    assert {"index.md", "index.tex", "rooflines-ru.md", "rooflines-zh.tex",
            "index.html", "katex"} <= names
    packaged, = venv.glob("lib/python*/site-packages/symroof/render/katex/katex.min.js")
    assert (out / "katex" / "katex.min.js").read_bytes() == packaged.read_bytes()
    if "pdf" in formats:
        assert (out / "index.pdf").read_bytes().startswith(b"%PDF")


def _pdflatex_or_required() -> bool:
    require_tool("pdflatex")
    return True


def test_without_matplotlib_the_report_says_figures_were_left_out(tmp_path: Path) -> None:
    block = tmp_path / "block" / "matplotlib"
    block.mkdir(parents=True)
    (block / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    env = {**os.environ, "PYTHONPATH": str(block.parent)}
    out = tmp_path / "out"
    done = run_cli("report", str(SMALL), "--format", "md", "--out", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert "figures were left out" in done.stderr
    assert 'pip install "symroof[plot]"' in done.stderr
    assert "Figures need matplotlib" in (out / "small.md").read_text("utf-8")
    assert not (out / "figures").exists()
