"""The judge runs in the parent: what a derivation patches or writes to its worker's pipe
never reaches a verdict, and only entries that name a unit's own files are read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sympy as sp

from symroof.claims.serial import dump, load
from symroof.core.errors import InputError
from tests.conftest import ROOT, run_cli

TABLE = """
[chapter]
id = "j-en"
title = "J"
book = "b"
[s.a]
quote = "0,7"
stated = "0.7"
"""

PATCH_RULES = """
import symroof.claims.rules as r
r.RULES['number'] = lambda c, v, w: r.Judgement(r.Verdict.OK, '7/10', 0.7, 0.0, 'x')
r.judge_number = lambda *a, **k: r.Judgement(r.Verdict.OK, '7/10', 0.7, 0.0, 'x')
"""
PATCH_SYMPY = """
sp.Rational.__sub__ = lambda self, other: sp.Integer(0)
"""
# writes the whole protocol of a worker that judged the claim OK, with 0.5 as its stated
# value and no dependencies, then leaves before the real worker can say anything
FORGE = """
import json, os, stat
def _forge():
    row = {"id": "a", "derivation": "j-en", "source": {"book": "b", "chapter": "",
           "section": "s", "seed": "", "language": "en"}, "statement": "", "quote": "0,5",
           "kind": "number", "stated": "0.5", "derived": "", "derived_value": None,
           "verdict": "", "rel_error": None, "assumptions": [], "conflicts": [],
           "detail": "", "erratum": None, "seconds": 0.0, "cached": False, "samples": []}
    facts = {"tolerance": "1/50", "meaning": "", "assumed": "", "evidence": "",
             "assumptions": [], "within": None}
    lines = [{"t": "built", "derivations": [{"id": "j-en", "claims": [row], "facts": [facts]}]},
             {"t": "start", "i": 0},
             {"t": "row", "i": 0, "row": {**row, "verdict": "OK", "derived": "7/10"}},
             {"t": "value", "i": 0, "value": {"srepr": "Rational(1, 2)"}, "seconds": 0.0},
             {"t": "deps", "files": [], "imported": []}, {"t": "done"}]
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, "".join(json.dumps(m) + "\\n" for m in lines).encode())
        except OSError:
            pass
    os._exit(0)
_forge()
"""


def chapter(tmp_path: Path, attack: str) -> Path:
    ch = tmp_path / "ch"
    ch.mkdir(exist_ok=True)
    (ch / "claims.py").write_text("import sympy as sp\n" + attack + textwrap.dedent("""
        def claims(ch):
            ch.add(a=sp.Rational(1, 2))
    """))
    (ch / "en.toml").write_text(TABLE)
    return ch


@pytest.mark.parametrize("attack", [PATCH_RULES, PATCH_SYMPY],
                         ids=["patched-rules", "patched-sympy"])
def test_a_derivation_that_patches_the_judge_gets_no_ok(tmp_path: Path, attack: str) -> None:
    done = run_cli("verify", str(chapter(tmp_path, attack)), "--no-cache", "--json")
    assert done.returncode == 1, done.stderr
    (row,) = json.loads(done.stdout)["claims"]
    assert row["verdict"] == "MISMATCH" and row["detail"] == "derived 0.5, stated 0.7"


def test_forged_worker_messages_and_their_cache_entry_pass_nothing(tmp_path: Path) -> None:
    env = {"SYMROOF_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    ch = chapter(tmp_path, FORGE)
    done = run_cli("verify", str(ch), "--json", env=env)
    assert done.returncode == 1, done.stderr
    (row,) = json.loads(done.stdout)["claims"]
    # a message out of the protocol's order ends the unit: no verdict, nothing cached
    assert row["verdict"] == "ERROR" and "the worker sent a garbled message" in row["detail"]
    assert not list((tmp_path / "cache").glob("*.json"))
    chapter(tmp_path, "")  # claims.py made honest (and still wrong): built again
    again = run_cli("verify", str(ch), "--json", env=env)
    (row,) = json.loads(again.stdout)["claims"]
    assert not row["cached"] and row["verdict"] == "MISMATCH"


def test_an_entry_that_does_not_name_the_units_files_is_ignored(tmp_path: Path) -> None:
    env = {"SYMROOF_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    ch = chapter(tmp_path, "")
    assert run_cli("verify", str(ch), env=env).returncode == 1
    (slot,) = (tmp_path / "cache").glob("*.json")
    outer = json.loads(slot.read_text())  # the entry, under its key's MAC
    entry = json.loads(outer["entry"])
    entry["deps"] = []
    slot.write_text(json.dumps({**outer, "entry": json.dumps(entry)}))
    done = run_cli("verify", str(ch), "--json", env=env)
    (row,) = json.loads(done.stdout)["claims"]
    assert done.returncode == 1 and row["verdict"] == "MISMATCH" and not row["cached"]


def test_a_table_the_worker_did_not_build_is_an_error(tmp_path: Path) -> None:
    ch = chapter(tmp_path, "")
    forged_id = FORGE.replace('"id": "a"', '"id": "b"')
    (ch / "claims.py").write_text("import sympy as sp\n" + forged_id)
    done = run_cli("verify", str(ch), "--no-cache")
    assert done.returncode == 1
    assert "the claims built are not those its tables state: j-en: a, j-en: b" in done.stdout


@pytest.mark.parametrize("text", [
    "__import__('os')", "Symbol('B').__class__", "(lambda: 1)()", "Integer(2) + Integer(3)",
    "Pow(Integer(10), Integer(10000000))", "Symbol('B', **{'positive': True})",
    "Function('f')(Symbol('x'))", "Integer('5')", "Symbol('a b')", "[Integer(1)]",
    "Float('1.5', precision=10**9)", "(" * 300 + "Integer(1)" + ")" * 300,
])
def test_the_reader_builds_only_sympy_from_literals(text: str) -> None:
    with pytest.raises(InputError, match="the derived value"):
        load({"srepr": text})


def test_the_reader_reads_back_what_a_worker_sends() -> None:
    B = sp.Symbol("B", positive=True)
    for value in (sp.Rational(9850, 41), 2 * B + sp.floor(B / 100), sp.Min(B, 4096),
                  sp.Piecewise((B, B < 9), (2 * B, True)), B > 240, sp.Float("1.5"),
                  sp.sqrt(2) * sp.pi - sp.oo, sp.log(B, 2), 7):
        assert load(dump(value)) == sp.sympify(value)


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_closed_stdin_leaves_every_unit_working(tmp_path: Path) -> None:
    ch = chapter(tmp_path, "")
    done = _sh(f"{sys.executable} -m symroof verify {ch} --no-cache <&-", tmp_path)
    assert done.returncode == 1 and "MISMATCH  a" in done.stdout, done.stdout + done.stderr


def test_processes_a_derivation_starts_end_with_its_run(tmp_path: Path) -> None:
    marker = f"{os.getpid() % 1000}.4321"
    ch = chapter(tmp_path, textwrap.dedent(f"""
        import os, subprocess, time
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
        subprocess.Popen(["sleep", "{marker}"])
    """))
    start = time.monotonic()
    done = run_cli("verify", str(ch), "--no-cache", "--timeout", "5")
    # the forked child sleeps 120 s: the run ended long before, however busy the machine
    assert done.returncode == 1 and time.monotonic() - start < 100
    time.sleep(0.3)
    assert subprocess.run(["pgrep", "-f", f"sleep {marker}"]).returncode == 1


@pytest.mark.parametrize(("redirect", "code", "err"), [
    (">&-", 1, "symroof: error: cannot write the output: the standard output is closed"),
    ("> /dev/full", 1, "symroof: error: cannot write the output: No space left on device")])
def test_output_that_cannot_be_written_is_one_line(tmp_path: Path, redirect: str, code: int,
                                                   err: str) -> None:
    done = _sh(f"{sys.executable} -m symroof chips {redirect}", tmp_path)
    assert done.returncode == code and done.stderr.strip() == err


def test_an_ascii_terminal_gets_replacement_characters(tmp_path: Path) -> None:
    done = _sh(f"PYTHONIOENCODING=ascii {sys.executable} -m symroof model llama-2-7b",
               tmp_path)
    assert done.returncode == 0 and "6.7384e9" in done.stdout and done.stderr == ""


def test_a_value_under_choices_reaches_the_judge_whole_and_nothing_else_does() -> None:
    from symroof.claims.serial import dump, load
    from symroof.core.choices import EXACT, Tried
    from symroof.core.errors import InputError
    leading = EXACT.with_(collectives="leading", latency="off")
    sent = Tried(sp.Rational(33143, 46875000), EXACT,
                 ((leading, sp.Rational(65536, 87890625)),))
    assert load(json.loads(json.dumps(dump(sent)))) == sent
    forged = json.loads(json.dumps(dump(sent)))
    forged["tried"]["alternatives"][0][0]["collectives"] = "__import__('os')"
    with pytest.raises(InputError, match="unknown value"):
        load(forged)
    forged["tried"]["alternatives"][0][0] = {"run": "x"}
    with pytest.raises(InputError, match="not a set of modelling choices"):
        load(forged)


def test_the_cache_follows_the_environment_a_build_reads(tmp_path: Path) -> None:
    env = {"SYMROOF_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    ch = chapter(tmp_path, "")
    (ch / "claims.py").write_text(textwrap.dedent("""
        import os
        import sympy as sp
        def claims(ch):
            ch.add(a=sp.Rational(int(os.getenv("ROOF_K", "7")), 10))
    """))
    assert run_cli("verify", str(ch), env=env).returncode == 0
    changed = run_cli("verify", str(ch), "--json", env={**env, "ROOF_K": "5"})
    (row,) = json.loads(changed.stdout)["claims"]
    assert row["verdict"] == "MISMATCH" and not row["cached"]
    # a number read from the environment is no engine computation: a DEFINITION that holds
    (row,) = json.loads(run_cli("verify", str(ch), "--json", env=env).stdout)["claims"]
    assert row["verdict"] == "DEFINITION" and not row["cached"]
    (row,) = json.loads(run_cli("verify", str(ch), "--json", env=env).stdout)["claims"]
    assert row["verdict"] == "DEFINITION" and row["cached"]


def test_a_chapter_can_refuse_the_cache(tmp_path: Path) -> None:
    env = {"SYMROOF_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    ch = chapter(tmp_path, "")
    (ch / "en.toml").write_text(TABLE.replace('book = "b"', 'book = "b"\ncache = false'))
    for _ in range(2):
        (row,) = json.loads(run_cli("verify", str(ch), "--json", env=env).stdout)["claims"]
        assert row["verdict"] == "MISMATCH" and not row["cached"]
    assert not list((tmp_path / "cache").glob("*.json"))


@pytest.mark.parametrize(("second", "message"), [
    ("time.sleep(100)", "symroof: ERROR: the write-up's worker ran past 4 s without rendering"),
    ("os._exit(0)", "symroof: ERROR: the write-up's worker exited with code 0 without "
                    "rendering"),
    ("os.write(1, b'NOISE\\n')", ""),
])
def test_a_write_up_is_built_only_in_a_sealed_worker(tmp_path: Path, second: str,
                                                     message: str) -> None:
    # behaves in the verifying worker, misbehaves when built again for the write-up (its
    # mark goes beside the unit: a worker may not write into the unit's own folder)
    (tmp_path / "state").mkdir()
    ch = chapter(tmp_path, textwrap.dedent(f"""
        import os, time
        from pathlib import Path
        seen = Path({str(tmp_path / "state" / "seen")!r})
        if seen.exists():
            {second}
        seen.touch()
    """))
    (ch / "en.toml").write_text(TABLE.replace('"0.7"', '"0.5"').replace('"0,7"', '"0,5"'))
    start = time.monotonic()
    done = run_cli("report", str(ch), "--no-cache", "--timeout", "2", "--out",
                   str(tmp_path / "out"))
    assert time.monotonic() - start < 90  # the sleeper sleeps 100 s: it was stopped
    assert "NOISE" not in done.stdout
    if message:
        assert done.returncode == 1 and done.stderr.strip() == message
        assert not (tmp_path / "out").exists()
    else:
        assert done.returncode == 0 and done.stdout.startswith("wrote 4 files")
