"""Shared fixtures and the hypothesis profiles (CI: derandomised, no example database)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# a test chapter's claims.py is data that `symroof verify` runs, not a module of the suite
# (three of them share the name claims.py, which doctest collection cannot import twice)
collect_ignore_glob = ["data/*/claims.py"]

# Hypothesis profiles: "dev" (the default), "ci" (CI set: derandomised, no example database,
# half the examples of the slow laws) and "full" (`make check-full`: five times the examples).
# SYMROOF_HYPOTHESIS names one. A law's own count goes through `examples(n)`; the slow laws
# all have one (a law without one runs hypothesis's 100 in every profile).
PROFILE = os.environ.get("SYMROOF_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
_SCALE = {"dev": 1.0, "ci": 0.5, "full": 5.0}
if PROFILE not in _SCALE:
    raise pytest.UsageError(f"SYMROOF_HYPOTHESIS={PROFILE}: profiles are {', '.join(_SCALE)}")
settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.register_profile("full", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """A law's own example count under the profile: ``n`` in dev, half (at least 5) in CI,
    five times in full."""
    return max(min(n, 5), round(n * _SCALE[PROFILE]))

ROOT = Path(__file__).resolve().parent.parent

# verdicts cached by the command line go to a folder of this test session, not the user's
os.environ.setdefault("SYMROOF_CACHE_DIR", tempfile.mkdtemp(prefix="symroof-test-cache-"))


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    """Run ``symroof ARGS`` in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "symroof", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, env=env, timeout=120)


def require_tool(name: str) -> str:
    """The path of an external tool; skip when missing, fail in CI (SYMROOF_REQUIRE_TOOLS)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("SYMROOF_REQUIRE_TOOLS"):
            pytest.fail(f"{name} is required in CI but is not installed")
        pytest.skip(f"{name} is not installed")
    return path
