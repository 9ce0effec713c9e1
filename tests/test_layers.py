"""The package's imports flow one way, down the layers of the layout: a module imports only
from its own folder and the folders below it, and the engine never imports a topic model."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

# top to bottom; a module may import from its own layer and any layer after it
LAYERS = ("cli", "commands", "render", "testing", "claims", "plans", "models", "topics", "parallel",
          "engine", "hardware", "core")
PACKAGE = ROOT / "symroof"


def imported(file: Path) -> set[str]:
    """The ``symroof.*`` modules a file imports, as dotted names."""
    here = file.relative_to(ROOT).with_suffix("").parts
    out: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("symroof"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[:-node.level])  # here ends in the module's own name
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            if name.startswith("symroof"):
                out.add(name)
    return out


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE)


@pytest.mark.parametrize("file", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_downward(file: Path) -> None:
    own = file.relative_to(PACKAGE).parts[0]
    upward = sorted(m for m in imported(file)
                    if (lay := layer(m)) is not None and LAYERS.index(lay) < LAYERS.index(own))
    assert not upward, f"{file.relative_to(ROOT)} imports upward: {', '.join(upward)}"


def test_every_folder_is_a_layer() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    bad = PACKAGE / "engine" / "_probe_upward.py"
    bad.write_text("from ..models import attention\nfrom symroof.render import report\n")
    try:
        found = {m for m in imported(bad) if LAYERS.index(layer(m) or "core") <
                 LAYERS.index("engine")}
    finally:
        bad.unlink()
    assert found == {"symroof.models", "symroof.render"}
