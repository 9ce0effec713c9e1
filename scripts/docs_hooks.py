"""MkDocs hooks for the documentation site (mkdocs.yml names this file).

- The nav keeps a slot for each topic page; a slot whose page is not in docs/ yet is left out,
  and a page of docs/ that the nav does not list is added under "More topics", so a branch
  that adds a page builds before the nav names it.
- A docstring's examples (``>>>`` lines and the output under them, up to a blank line) are
  set as code, as a Python console session, not read as Markdown.
- The API page lists each public name of a package where it is defined: a line
  ``<!-- members of PACKAGE -->`` becomes one mkdocstrings entry per name of its ``__all__``.
- The figures the pages show are the generated ones the suite checks (reports/figures/ from
  ``symroof report``, benchmarks/reality.svg from benchmarks/reality.py), added to the site as
  they are, never copied into docs/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
# the site folder of the figures -> the folder that holds it
FIGURES = {"figures": ROOT / "reports", "benchmarks": ROOT}


def _present(items: list[Any], docs: Path) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                inner = _present(value, docs)
                if inner:
                    kept.append({title: inner})
            elif (docs / value).is_file():
                kept.append(item)
        elif (docs / item).is_file():
            kept.append(item)
    return kept


def _listed(items: list[Any]) -> set[str]:
    names: set[str] = set()
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        names |= _listed(value) if isinstance(value, list) else {value}
    return names


def _doctest_blocks(lines: list[str]) -> list[str]:
    """Fence every run of ``>>>`` lines (with their output) outside a fenced block."""
    out: list[str] = []
    fenced = session = False
    for line in lines:
        bare = line.strip()
        if session and not bare:
            out.append("```")
            session = False
        if bare.startswith("```"):
            fenced = not fenced
        elif not fenced and not session and bare.startswith(">>>"):
            out.extend(["", "```pycon"])
            session = True
        out.append(line.strip() if session else line)
    if session:
        out.append("```")
    return out


def _doctest_extension() -> Any:
    from markdown import Extension
    from markdown.preprocessors import Preprocessor

    class Sessions(Preprocessor):
        def run(self, lines: list[str]) -> list[str]:
            return _doctest_blocks(lines)

    class Doctests(Extension):
        def extendMarkdown(self, md: Any) -> None:  # Markdown's name for the hook
            md.preprocessors.register(Sessions(md), "doctest_sessions", 40)

    return Doctests()


@event_priority(100)  # before mkdocstrings reads the Markdown extensions
def on_config(config: Any) -> Any:
    config["markdown_extensions"].append(_doctest_extension())
    docs = Path(config["docs_dir"])
    nav = _present(config["nav"] or [], docs)
    listed = _listed(nav)
    extra = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
                   if p.relative_to(docs).as_posix() not in listed)
    if extra:
        nav.append({"More topics": extra})
    config["nav"] = nav
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File
    for prefix, parent in FIGURES.items():
        for svg in sorted((parent / prefix).glob("*.svg")):
            files.append(File(f"{prefix}/{svg.name}", str(parent), config["site_dir"],
                              config["use_directory_urls"]))
    return files


MEMBERS = re.compile(r"^<!-- members of ([\w.]+) -->$", re.M)


def _members(package: str) -> str:
    """One mkdocstrings entry per public name of ``package`` that is a class or a function,
    under the module that defines it (constants are listed by name)."""
    import importlib
    module = importlib.import_module(package)
    entries, constants = [], []
    for name in sorted(getattr(module, "__all__", []), key=str.lower):
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None)
        if home and home.startswith("symroof") and hasattr(obj, "__qualname__"):
            entries.append(f"::: {home}.{obj.__qualname__}\n"
                           "    options:\n      heading_level: 3\n"
                           "      show_root_full_path: false\n")
        else:
            constants.append(f"`{name}`")
    tail = f"Constants: {', '.join(constants)}.\n" if constants else ""
    return "\n".join(entries) + "\n" + tail


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return MEMBERS.sub(lambda m: _members(m.group(1)), markdown)
