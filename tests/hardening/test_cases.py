"""The table of hostile command lines (cases.toml): each exits with its code and prints its
one line; an error prints nothing on stdout, no traceback, and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from symroof.cli.main import main
from tests.conftest import ROOT, run_cli

CASES: list[dict[str, Any]] = tomllib.loads(
    (Path(__file__).parent / "cases.toml").read_text("utf-8"))["case"]

GENERATED: dict[str, Callable[[Path], None]] = {
    "nested": lambda p: p.write_text("a = " + "[" * 100_000 + "]" * 100_000),
    "big": lambda p: p.write_bytes(b"# " + b"x" * (48 * 2**20 - 3) + b"\n"),
    "fifo": lambda p: os.mkfifo(p),
    "bigintjson": lambda p: p.write_text('{"model_type": "llama", "hidden_size": 1'
                                         + "0" * 4400 + "}"),
    "deepjson": lambda p: p.write_text('{"model_type": "llama", "x": '
                                       + "[" * 100_000 + "]" * 100_000 + "}"),
    # a stated value whose exponent has 5000 digits (past int()'s 4300-digit limit)
    "stated5000": lambda p: p.write_text('[chapter]\nid = "t-en"\ntitle = "t"\nbook = "b"\n'
                                         '[s.a]\nquote = "q"\nstated = "1e' + "1" * 5000
                                         + '"\n'),
}


def _arg(raw: str, tmp: Path) -> str:
    if raw == "@sum400":
        return "+".join(["B"] * 400)
    if raw == "@name300":  # longer than a file name may be
        return "a" * 300
    if raw == "@array5000":  # a dimension past Python's 4300-digit limit
        return "bf16[1" + "0" * 5000 + "_X]"
    if raw == "@dims10000":  # ten thousand dimensions: minutes of work without a limit
        return "bf16[B_X, " + ", ".join(f"D{i}" for i in range(10_000)) + "]"
    return raw.replace("{tmp}", str(tmp))


@pytest.mark.parametrize("case", CASES, ids=[f"case-{i}" for i in range(len(CASES))])
def test_hostile_command_line(case: dict[str, Any], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    for name, body in case.get("files", {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if body.startswith("@"):
            GENERATED[body[1:]](tmp_path / name)
        else:
            (tmp_path / name).write_text(body, encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    try:
        code = main([_arg(a, tmp_path) for a in case["args"]])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert code == case.get("code", 2), (out, err)
    message = case["message"].replace("{tmp}", str(tmp_path))
    if code in (2, 130):  # an error, or the run interrupted: one line, nothing on stdout
        assert out == "" and "Traceback" not in err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("symroof: error: " if code == 2 else "symroof: ")
        assert message in lines[0], lines[0]
        assert sorted(tmp_path.rglob("*")) == before  # nothing half-written
    else:
        assert message in out.splitlines() or any(
            message in line for line in out.splitlines()), out


def test_the_corpus_has_at_least_100_hostile_inputs() -> None:
    from tests import test_hardening, test_sealed
    total = (len(CASES) + len(test_hardening.CORPUS) + len(test_hardening.CATALOGS)
             + len(test_hardening.DERIVATIONS) + len(test_sealed.HOSTILE))
    assert total >= 100, total


def test_output_into_a_closed_pipe_ends_quietly() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "symroof", "chips"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before symroof writes (like `| head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert err == ""


def test_no_color_is_honoured(tmp_path: Path) -> None:
    probe = ("import sys\nsys.stdout.isatty = lambda: True\nfrom symroof.cli.main import main\n"
             "main(['verify', 'rooflines-ru'])")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert "\033[" not in done.stdout and "OK" in done.stdout
    env.pop("NO_COLOR")
    coloured = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=120)
    assert "\033[32m" in coloured.stdout


def test_a_chapter_folder_without_a_table_or_claims_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "ch1"
    folder.mkdir()
    (folder / "claims.py").write_text("x = 1\n")
    done = run_cli("verify", str(folder))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().endswith(f"{folder}: a chapter folder needs a translation "
                                        "table (ru.toml, ...)")
    (folder / "ru.toml").write_text("")  # a .toml with no [chapter] nor claims is data
    done = run_cli("verify", str(folder))
    assert done.stderr.strip().endswith(f"{folder}: a chapter folder needs a translation "
                                        "table (ru.toml, ...)")
    (folder / "ru.toml").write_text('[chapter]\nid = "ch1-ru"\ntitle = "T"\nbook = "B"\n')
    done = run_cli("verify", str(folder))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().endswith(f"{folder / 'claims.py'}: defines no claims(ch) "
                                        "function")
