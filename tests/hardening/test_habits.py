"""Shell habits: a closed standard output is an error, as a full one is; a write-up that
cannot be written (a file size limit) leaves nothing behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_a_closed_stdout_is_an_error_like_a_full_one() -> None:
    closed = subprocess.run([sys.executable, "-m", "symroof", "chips"], cwd=ROOT,
                            stdout=None, stderr=subprocess.PIPE, text=True, timeout=120,
                            preexec_fn=lambda: os.close(1))
    assert (closed.returncode, closed.stderr) == (
        1, "symroof: error: cannot write the output: the standard output is closed\n")


@pytest.mark.slow
def test_a_write_up_past_the_file_size_limit_leaves_no_folder(tmp_path: Path) -> None:
    ch = tmp_path / "ch"
    ch.mkdir()
    (ch / "claims.py").write_text("import sympy as sp\ndef claims(ch):\n"
                                  "    ch.add(a=sp.Rational(1, 2))\n")
    (ch / "en.toml").write_text('[chapter]\nid = "h-en"\ntitle = "h"\nbook = "b"\n[s.a]\n'
                                'quote = "q"\nstated = "0.5"\n')

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "symroof", "report", str(ch), "--out",
                           str(tmp_path / "out" / "deep"), "--format", "md,tex"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env,
                          preexec_fn=limited)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith("/out/deep: cannot write: File too large\n")
    assert not (tmp_path / "out").exists()
