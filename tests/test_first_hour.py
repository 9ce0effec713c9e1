"""What a new user meets first: the command on PATH after set-up, and a ``report`` whose
default output never touches a checkout's committed files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

SMALL = ROOT / "tests" / "data" / "small.py"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout


@pytest.mark.slow
def test_report_in_a_checkout_leaves_the_committed_reports_alone(tmp_path: Path) -> None:
    """``symroof report PATH`` run in a checkout (its committed reports/ and .gitignore) writes
    into write-ups/, which git ignores: git status stays clean and reports/ is untouched."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    checkout = tmp_path / "checkout"
    (checkout / "reports").mkdir(parents=True)
    shutil.copy(ROOT / ".gitignore", checkout / ".gitignore")
    shutil.copy(ROOT / "reports" / "index.md", checkout / "reports" / "index.md")
    shutil.copy(SMALL, checkout / "small.py")
    _git(checkout, "init", "-q")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-q", "-m", "a checkout")
    done = run_cli("report", "small.py", cwd=checkout)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote ") and " files to write-ups (" in done.stdout
    assert (checkout / "write-ups" / "index.md").is_file()
    assert _git(checkout, "status", "--porcelain", "--untracked-files=all") == ""
    assert (checkout / "reports" / "index.md").read_bytes() == \
        (ROOT / "reports" / "index.md").read_bytes()


def test_report_help_states_the_default_folder_and_the_exit_codes() -> None:
    done = run_cli("report", "--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0
    assert "default write-ups" in text
    assert ("Exit 0 when everything is written and no claim fails; 1 when everything is "
            "written but a claim is NOT PROVEN, MISMATCH, STALE, ERROR or TIMEOUT") in text
    assert "2 on bad input (nothing written)" in text


def _outside_make() -> dict[str, str]:
    """The environment without the flags of a make that runs the suite (`make check`), nor
    the variables it was given (`make check PYTHON=...` in CI puts PYTHON in it)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PYTHON", "VENV", "SYSTEM_PYTHON",
                         "JOBS")}


def test_make_shell_puts_symroof_on_path(tmp_path: Path) -> None:
    """``make shell`` opens the user's shell with the environment's bin/ first on PATH: the
    README's commands run there as written."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "symroof").exists():
        pytest.skip("symroof is not installed as a command next to this interpreter")
    stamp = bin_dir / ".symroof-setup"
    if not stamp.exists() or any(stamp.stat().st_mtime < (ROOT / name).stat().st_mtime
                                 for name in ("pyproject.toml", "constraints.txt")):
        pytest.skip("this environment was not made (or is not current) by `make setup`")
    env = {**_outside_make(), "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "shell",
                           f"PYTHON={sys.executable}"],
                          input="command -v symroof\nsymroof --help\n", capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("symroof is on PATH in this shell")
    assert lines[1] == str(bin_dir.resolve() / "symroof")
    assert "usage: symroof" in done.stdout


def test_set_up_ends_by_saying_how_to_run_symroof() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for target in ("setup", "reports"):
        done = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), target],
                              capture_output=True, text=True, timeout=60, env=_outside_make())
        plan = done.stdout.rstrip("\n").splitlines()
        assert "run symroof as .venv/bin/symroof, or put it on PATH for this shell with " \
               "'. .venv/bin/activate', or open a shell with it: make shell" in plan[-1], target


def test_every_help_example_keeps_its_line_continuations() -> None:
    """An example that goes on on the next line ends in a backslash; none is run together
    (a lost backslash leaves a run of spaces before the next flag inside one line)."""
    import argparse

    from symroof.cli.main import build_parser
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    seen = 0
    for name, sub in verbs.choices.items():
        epilog = sub.epilog or ""
        for line in epilog.split("\n"):
            if line.lstrip().startswith("symroof "):
                seen += 1
                assert not re.search(r"\S {3,}--", line), f"{name}: {line.strip()[:70]}"
    assert seen >= 30


def test_model_says_when_it_chose_the_chip() -> None:
    defaulted = run_cli("model", "llama-2-7b", "--decode", "--batch", "8", "--context", "1024")
    chosen = run_cli("model", "llama-2-7b", "--decode", "--batch", "8", "--context", "1024",
                     "--chip", "tpu-v5e")
    assert defaulted.returncode == chosen.returncode == 0
    assert defaulted.stdout.splitlines()[0] == (
        "llama-2-7b decode, batch 8, context 1024, on tpu-v5e (the default chip; --chip NAME "
        "for another) (bf16 weights, bf16 KV cache)")
    assert chosen.stdout.splitlines()[0] == (
        "llama-2-7b decode, batch 8, context 1024, on tpu-v5e (bf16 weights, bf16 KV cache)")
    assert defaulted.stdout.splitlines()[1:] == chosen.stdout.splitlines()[1:]


def test_plan_says_when_it_chose_the_chip() -> None:
    """Training, serving and the serving search name the default chip as such; a plan on
    the same chip named by --chip prints the same lines without the note."""
    note = " (the default chip; --chip NAME for another)"
    for args, head in (
            (("--train", "--mesh", "X=8", "--strategy", "dp=X", "--batch", "8", "--context",
              "1024"), "llama-2-7b training on tpu-v5e{}, mesh X=8 (8 chips), dp=X"),
            (("--serve", "--mesh", "X=8", "--batch", "8", "--context", "1024"),
             "llama-2-7b serving on tpu-v5e{}, mesh X=8 (8 chips), tp=X")):
        defaulted = run_cli("plan", "llama-2-7b", *args)
        chosen = run_cli("plan", "llama-2-7b", *args, "--chip", "tpu-v5e")
        assert defaulted.returncode == chosen.returncode == 0, defaulted.stderr
        assert defaulted.stdout.splitlines()[0] == head.format(note)
        assert chosen.stdout.splitlines()[0] == head.format("")
        assert defaulted.stdout.splitlines()[1:] == chosen.stdout.splitlines()[1:]
    found = run_cli("plan", "llama-2-7b", "--serve", "--search", "8", "--ttft", "3s",
                    "--tpot", "50ms")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(f"llama-2-7b serving on 8 x tpu-v5e{note}: TTFT <= 3 s")


def test_a_failed_equality_law_says_the_value_and_the_plain_symbol_trap(tmp_path: Path) -> None:
    """The scaffold's law compared with a plain sympy.Symbol("B") (not a positive size)
    fails, and the verdict shows the value found and why the two B differ."""
    folder = tmp_path / "ch"
    assert run_cli("claims", "new", str(folder), "--lang", "en").returncode == 0
    code = (folder / "claims.py").read_text("utf-8")
    (folder / "claims.py").write_text(
        code.replace(".leading, B,", ".leading, __import__('sympy').Symbol('B'),"), "utf-8")
    done = run_cli("verify", "--no-cache", str(folder))
    assert done.returncode == 1
    row = next(line for line in done.stdout.splitlines() if "en_small_batch" in line)
    assert row.split(None, 1)[0] == "MISMATCH"
    assert ("fails (intensity tends to B: the value is B, not B (B has other assumptions on "
            "each side: symroof's sizes are positive symbols, sizes(\"B\"), not "
            "sympy.Symbol(\"B\")): does not hold)") in row


def test_the_notebook_imports_only_public_names() -> None:
    import json
    notebook = json.loads((ROOT / "examples" / "symroof.ipynb").read_text("utf-8"))
    code = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    modules = set(re.findall(r"^(?:from|import) (symroof[\w.]*)", code, re.M))
    assert modules and modules <= {"symroof", "symroof.claims", "symroof.models",
                                   "symroof.plans", "symroof.testing"}, modules
