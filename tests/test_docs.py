"""Every module of the package opens with a runnable example (the suite runs them all as
doctests), so a reader learns a module from its first lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

MODULES = sorted(p for p in (ROOT / "symroof").rglob("*.py") if p.name != "__main__.py")


@pytest.mark.parametrize("file", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_docstring_has_a_runnable_example(file: Path) -> None:
    doc = ast.get_docstring(ast.parse(file.read_text("utf-8"))) or ""
    assert ">>>" in doc, f"{file.relative_to(ROOT)}: the module docstring has no example"
