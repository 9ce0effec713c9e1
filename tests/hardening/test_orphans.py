"""A derivation's descendants that leave the worker's process group (a new session, a double
fork) end with the run: verify adopts them while it lasts and kills them at its end."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from symroof.cli.main import main

ESCAPES = {
    "new session": ("import subprocess\n"
                    "subprocess.Popen(['sleep', '{tag}'], start_new_session=True)\n"),
    "double fork": ("import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                    "        os.execvp('sleep', ['sleep', '{tag}'])\n    os._exit(0)\n"),
}


def _running(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[:2] == [
                    b"sleep", tag.encode()]:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_a_process_a_derivation_leaves_behind_ends_with_the_run(
        escape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tag = f"{900 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 10**9}"
    (tmp_path / "ch").mkdir()
    (tmp_path / "ch" / "claims.py").write_text(
        ESCAPES[escape].replace("{tag}", tag)
        + "import sympy as sp\ndef claims(ch):\n    ch.add(a=sp.Rational(1, 2))\n")
    (tmp_path / "ch" / "en.toml").write_text(
        '[chapter]\nid = "h-en"\ntitle = "h"\nbook = "b"\n[s.a]\nquote = "q"\nstated = "0.7"\n')
    env = {"SYMROOF_CACHE_DIR": str(tmp_path / "cache")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        code = main(["verify", str(tmp_path / "ch"), "--no-cache", "--timeout", "5"])
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
        left = _running(tag)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert code == 1 and "MISMATCH" in capsys.readouterr().out
    assert left == []
