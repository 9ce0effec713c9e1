"""ruff and mypy, as configured in pyproject.toml, are clean."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("tool", [["ruff", "check", "symroof", "tests", "derivations",
                                   "benchmarks", "examples"], ["mypy"]])
def test_tool_is_clean(tool: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", *tool], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
