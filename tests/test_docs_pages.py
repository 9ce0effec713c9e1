"""Every ``console`` example of the README and of the documentation site (docs/) runs, and
prints the lines the page shows: a page's commands run in order in one empty folder of their
own (so a tour that scaffolds a chapter and then verifies it runs as a user would), and the
lines shown, less those that are only ``...``, appear in the output in the order shown.
A command is written as a user types it, ``$ symroof ...``; a line ending in a backslash
goes on on the next. Set-up commands (``make``) are written in ``sh`` blocks, not run here.

The Python examples run too: a ``pycon`` block is a doctest; a ``python`` block runs, in
one namespace per page, and every ``test_*`` function it defines is called; a block whose
first line names a file (``# derivations/mychapter/claims.py``, ``# .../ru.toml``) is that
file: a chapter's files are written to a folder and verified, a ``conftest.py`` is compiled.

A number with a unit in the prose is printed by an example of the page, or by the command a
``<!-- figures: $ ... -->`` comment names (run here), or declared with its reason in a
``<!-- given: ... -->`` comment (an input, a published or a measured figure).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Example:
    """One command of a page, with the lines the page shows it printing."""
    page: str
    line: int
    command: str
    shown: tuple[str, ...]


def examples(page: Path) -> list[Example]:
    """The ``$ ...`` commands of a page's ``console`` blocks, in order."""
    found: list[Example] = []
    lines = page.read_text("utf-8").split("\n")
    inside = False
    current: list[str] | None = None
    start, shown = 0, []
    name = page.relative_to(ROOT).as_posix()

    def close() -> None:
        if current is not None:
            found.append(Example(name, start, " ".join(current), tuple(shown)))

    for i, line in enumerate(lines, 1):
        if not inside:
            inside = line.strip() == "```console"
            continue
        if line.strip() == "```":
            close()
            inside, current, shown = False, None, []
            continue
        if line.startswith("$ "):
            close()
            current, start, shown = [line[2:].rstrip("\\").strip()], i, []
            continuing = line.endswith("\\")
        elif current is not None and continuing:
            current.append(line.rstrip("\\").strip())
            continuing = line.endswith("\\")
        else:
            assert current is not None, f"{name}:{i}: a console block opens with '$ command'"
            shown.append(line)
    return found


ALL = {page.relative_to(ROOT).as_posix(): examples(page) for page in PAGES}


def test_pages_have_examples_and_every_command_is_symroof() -> None:
    assert sum(map(len, ALL.values())) >= 20
    for page, found in ALL.items():
        for ex in found:
            assert shlex.split(ex.command, comments=True)[0] == "symroof", \
                f"{page}:{ex.line}: a console example runs symroof (set-up goes in sh blocks)"


def _run(command: str) -> tuple[int, str]:
    from symroof.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(shlex.split(command, comments=True)[1:])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue() + err.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p, found in ALL.items() if found])
def test_every_console_example_prints_what_the_page_shows(
        page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    for ex in ALL[page]:
        code, printed = _run(ex.command)
        got = [line.rstrip() for line in printed.split("\n")]
        kept = [line.rstrip() for line in ex.shown if line.strip() != "..."]
        where = f"{ex.page}:{ex.line}: $ {ex.command}"
        assert code in (0, 1) or any("error:" in line for line in kept), (where, printed)
        missing = [line for line in kept if line not in got]
        assert not missing, f"{where}\nshown but not printed: {missing}\nprinted:\n{printed}"
        order = [line for line in got if line in kept]
        assert _in_order(kept, order), f"{where}: printed in another order:\n{printed}"


def _in_order(kept: list[str], printed: list[str]) -> bool:
    """Whether ``kept`` is a subsequence of ``printed``."""
    it = iter(printed)
    return all(any(line == p for p in it) for line in kept)


def test_the_readme_is_short_and_starts_its_tour_with_the_command_on_path() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.split("\n")) < 200
    assert re.search(r"make shell|\. \.venv/bin/activate", readme.split("```console", 1)[0])
    assert os.path.exists(ROOT / "docs" / "index.md")


def blocks(page: Path, *kinds: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``kinds`` in a page, as (kind, text)."""
    found = re.findall(r"(?ms)^```(\w+)\n(.*?)^```$", page.read_text("utf-8"))
    return [(kind, text) for kind, text in found if kind in kinds]


CODE = {p.relative_to(ROOT).as_posix(): blocks(p, "python", "pycon", "toml") for p in PAGES}


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p, found in CODE.items()
                                  if any(kind != "toml" for kind, _ in found)])
def test_every_python_example_runs(page: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    chapters: set[Path] = set()
    for kind, text in CODE[page]:
        first = text.split("\n", 1)[0]
        named = re.fullmatch(r"# ([\w./-]+\.(?:py|toml))", first)
        if kind == "pycon":
            test = doctest.DocTestParser().get_doctest(text, {}, page, page, 0)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, out=lambda s: pytest.fail(f"{page}: {s}"))
        elif named and (named.group(1).endswith(".toml") or
                        named.group(1).endswith("/claims.py")):
            path = tmp_path / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            chapters.add(path.parent)
        elif named and named.group(1) == "conftest.py":
            compile(text, f"{page}: conftest.py", "exec")  # it would set the profile here
        elif kind == "python":
            exec(compile(text, page, "exec"), namespace)
    for name, function in list(namespace.items()):
        if name.startswith("test_") and callable(function):
            function()
    for folder in sorted(chapters):
        code, printed = _run(f"symroof verify {folder} --no-cache")
        assert code == 0, f"{page}: the chapter example does not verify:\n{printed}"


# -- the figures of the prose ---------------------------------------------------------------
# A number with a unit in a page's prose is either printed by one of the page's console
# examples (its shown lines), or printed by the command a `<!-- figures: $ COMMAND -->`
# comment before its paragraph names (run here), or declared by a `<!-- given: ... -->`
# comment before its paragraph: an input, a published or a measured figure, with its reason
# (every figure written in that comment is declared). No figure a command prints is typed
# by hand unchecked.

UNIT = (r"(?:[TPGM]?FLOP/s|FLOP/B|FLOPs|[KkMGT]?B/s|tokens/s|requests/s|GiB|[KkMGT]B|ms|us|"
        r"µs|ns|s|USD|B)")
FIGURE = re.compile(r"(?<![\w.,/])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?:%| " + UNIT +
                    r"(?![\w/])| bytes\b)")


@dataclass(frozen=True)
class Paragraph:
    """A block of prose (a paragraph, a list, a table) with the figures it prints and the
    commands and declarations of the comments before it."""
    page: str
    line: int
    figures: tuple[str, ...]
    commands: tuple[str, ...]
    given: tuple[str, ...]


def paragraphs(page: Path) -> list[Paragraph]:
    """The prose of ``page`` by paragraph, fenced blocks left out."""
    text = page.read_text("utf-8")
    name = page.relative_to(ROOT).as_posix()
    text = re.sub(r"(?ms)^```.*?^```$", lambda m: "\n" * m.group(0).count("\n"), text)
    found: list[Paragraph] = []
    commands: list[str] = []
    given: list[str] = []
    line = 1
    for block in re.split(r"(\n\s*\n)", text):
        if not block.strip():
            line += block.count("\n")
            continue
        notes = re.findall(r"(?s)<!--\s*(figures|given):(.*?)-->", block)
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?s)<!--.*?-->", "", block))
        for kind, body in notes:
            if kind == "figures":
                commands.append(" ".join(body.split()).removeprefix("$ "))
            else:
                given += FIGURE.findall(body)
        if prose.strip():
            found.append(Paragraph(name, line, tuple(FIGURE.findall(prose)), tuple(commands),
                                   tuple(given)))
            commands, given = [], []
        line += block.count("\n")
    return found


PROSE = {page.relative_to(ROOT).as_posix(): paragraphs(page) for page in PAGES}


def _printed(figure: str, text: str) -> bool:
    """Whether ``text`` prints ``figure`` (a count of bytes as the bare number a step's
    table prints under its "bytes" heading)."""
    figure = figure.removesuffix(" bytes")
    return re.search(r"(?<![\d.])" + re.escape(figure) + r"(?!\d)", text) is not None


def _unaccounted(page: str) -> list[tuple[Paragraph, list[str]]]:
    """Each paragraph's figures that neither the page's console examples show nor a
    comment declares (the ones its `figures:` commands must print)."""
    shown = "\n".join(line for ex in ALL.get(page, []) for line in ex.shown)
    out = []
    for par in PROSE[page]:
        left = [f for f in par.figures if not _printed(f, shown) and f not in par.given]
        if left:
            out.append((par, left))
    return out


def test_every_figure_of_the_prose_is_printed_or_declared() -> None:
    """The static half: a figure no example shows and no comment declares has a command."""
    bare = [f"{par.page}:{par.line}: {left}" for page in PROSE
            for par, left in _unaccounted(page) if not par.commands]
    assert not bare, "figures typed by hand, printed by no example:\n" + "\n".join(bare)


def _run_any(command: str) -> str:
    if command.startswith("symroof "):
        code, printed = _run(command)
        assert code in (0, 1), (command, printed)
        return printed
    import subprocess
    import sys
    words = shlex.split(command)
    assert words[0] == "python" and (words[1] == "-c" or words[1].startswith("benchmarks/")), \
        command
    done = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PROSE
                                  if any(par.commands for par, _ in _unaccounted(p))])
def test_the_figures_a_paragraph_names_a_command_for_are_what_it_prints(
        page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the commands read the checkout's test chapters; none writes
    monkeypatch.setenv("COLUMNS", "100")
    outputs: dict[str, str] = {}  # a command that several paragraphs name runs once
    for par, left in _unaccounted(page):
        if not par.commands:
            continue
        for c in par.commands:
            if c not in outputs:
                outputs[c] = _run_any(c)
        printed = "\n".join(outputs[c] for c in par.commands)
        missing = [f for f in left if not _printed(f, printed)]
        assert not missing, (f"{page}:{par.line}: not printed by {par.commands}: {missing}")
