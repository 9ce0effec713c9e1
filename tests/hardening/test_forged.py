"""Lines a derivation writes to its worker's pipe in shapes the worker never sends (a
``built`` message missing fields, a ``start`` without its number) make the unit ERROR, never
a traceback of verify. Run as a process: the forger writes to every descriptor it has."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

FORGER = """import os
for fd in range(3, 64):
    try:
        os.write(fd, {lines!r})
    except OSError:
        pass
os._exit(0)
"""
TABLE = '[chapter]\nid = "h-en"\ntitle = "h"\nbook = "b"\n[s.a]\nquote = "q"\nstated = "0.7"\n'
BUILT = {"t": "built", "derivations": [{"id": "h-en", "claims": [{"id": "a"}],
                                        "facts": [{"kind": "measurement"}]}]}


@pytest.mark.parametrize("messages", [
    [BUILT, {"t": "done"}],
    [{"t": "start"}, {"t": "done"}],
    [{"t": "deps", "files": 5}, {"t": "done"}],
    [{"t": "fail"}],
], ids=["built without fields", "start without i", "deps not a list", "fail without kind"])
def test_a_forged_message_of_the_wrong_shape_is_an_error(messages: list[dict[str, object]],
                                                          tmp_path: Path) -> None:
    folder = tmp_path / "ch"
    folder.mkdir()
    lines = "".join(json.dumps(m) + "\n" for m in messages).encode()
    (folder / "claims.py").write_text(FORGER.format(lines=lines))
    (folder / "en.toml").write_text(TABLE)
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path / "cache")}
    done = run_cli("verify", str(folder), "--no-cache", "--timeout", "5", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "ERROR" in done.stdout and "OK" not in done.stdout
