"""Sealed runs: nothing a derivation does (exit, print, catch the time limit, loop, kill
itself) makes ``symroof verify`` report success or reach its output; the verdict cache
follows every file a build read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

HEAD = ("import os, sys, time\nfrom symroof.claims.model import Derivation, Source\n"
        "def build():\n    d = Derivation.begin({id!r}, 't', Source('b'))\n")
ONE = "    d.claim('c', stated='1', statement='s', quote='q', derive=lambda: {expr})\n"
FINE = "    d.claim('fine', stated='2', statement='s', quote='q', derive=lambda: 2)\n"
END = "    return d.build()\n"


def unit(id: str, expr: str = "1", before: str = "", body: str = "") -> str:
    return before + HEAD.format(id=id) + body + ONE.format(expr=expr) + FINE + END


SPIN = "def spin():\n    while True:\n        try:\n            time.sleep(1)\n" \
       "        except BaseException:\n            pass\n"

# file name -> (source, expected rows as (id, verdict, text in the detail))
HOSTILE: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "exit_import.py": ("import sys\nsys.exit(0)\n" + unit("exit_import"),
                       [("exit_import.py", "ERROR", "exit_import.py:2: called sys.exit(0)")]),
    "exit_build.py": (unit("exit_build", body="    raise SystemExit(3)\n"),
                      [("exit_build.py", "ERROR", "exit_build.py:5: called sys.exit(3)")]),
    "exit_claim.py": (unit("exit_claim", expr="sys.exit(5)"),
                      [("c", "ERROR", "exit_claim.py:5: called sys.exit(5)"),
                       ("fine", "OK", "")]),
    "hard_exit.py": (unit("hard_exit", expr="os._exit(0)"),
                     [("c", "ERROR", "process exited with code 0 during this claim"),
                      ("fine", "OK", "")]),
    "killed.py": (unit("killed", expr="os.kill(os.getpid(), 9)"),
                  [("c", "ERROR", "was killed by signal SIGKILL"), ("fine", "OK", "")]),
    "catches.py": (unit("catches", expr="spin()", before=SPIN),
                   [("c", "TIMEOUT", "no result within 1 s"), ("fine", "OK", "")]),
    "prints.py": ("print('noise at import')\n" + unit(
        "prints", expr="print('{\"claims\": 0}') or 1",
        body="    print('noise in build', file=sys.stderr)\n    os.write(1, b'raw')\n"),
        [("c", "OK", ""), ("fine", "OK", "")]),
    "loops.py": ("while True:\n    pass\n" + unit("loops"),
                 [("loops.py", "TIMEOUT", "import and build() ran past 1 s")]),
    "no_build.py": ("x = 1\n", [("no_build.py", "ERROR", "defines no build() function")]),
    "returns_none.py": ("def build():\n    return None\n",
                        [("returns_none.py", "ERROR", "build() returned None")]),
    "interrupts.py": (unit("interrupts", expr="(_ for _ in ()).throw(KeyboardInterrupt)"),
                      [("c", "ERROR", "KeyboardInterrupt"), ("fine", "OK", "")]),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for name, (source, _) in HOSTILE.items():
        (folder / name).write_text(source, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def hostile_run(hostile: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("verify", str(hostile), "--json", "--no-cache", "--timeout", "1")


def test_no_derivation_can_make_verify_succeed_without_checking(
        hostile_run: subprocess.CompletedProcess[str]) -> None:
    assert hostile_run.returncode == 1, hostile_run.stderr
    rows = json.loads(hostile_run.stdout)["claims"]  # strict JSON: nothing printed mixed in
    got: dict[str, list[tuple[str, str, str]]] = {}
    for r in rows:
        got.setdefault(Path(r["derivation"]).name if r["kind"] == "unit" else r["derivation"],
                       []).append((r["id"], r["verdict"], r["detail"]))
    for name, (_, expected) in HOSTILE.items():
        rows_of = got[name if expected[0][0] == name else _id_of(name)]
        assert [(i, v) for i, v, _ in rows_of] == [(i, v) for i, v, _ in expected], name
        for (_, _, detail), (_, _, want) in zip(rows_of, expected, strict=True):
            assert want in detail, (name, detail)
    assert "noise" not in hostile_run.stdout and "raw" not in hostile_run.stdout


def _id_of(name: str) -> str:
    return name.removesuffix(".py")


@pytest.mark.slow
def test_rows_are_sorted_by_file_whatever_the_parallelism(hostile: Path) -> None:
    outs = [run_cli("verify", str(hostile), "--json", "--no-timing", "--no-cache",
                    "--timeout", "1", "--jobs", jobs).stdout for jobs in ("1", "3")]
    assert outs[0] == outs[1]
    units = [Path(r["derivation"]).name.removesuffix(".py")
             for r in json.loads(outs[0])["claims"]]
    assert units == sorted(units) and set(units) == {_id_of(n) for n in HOSTILE}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_timeout_must_be_finite_and_positive(value: str) -> None:
    done = run_cli("verify", f"--timeout={value}")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().startswith("symroof: error: --timeout: must be a positive "
                                          "number of seconds, got")


@pytest.mark.slow
def test_a_fully_cached_run_builds_nothing_and_judges_again(tmp_path: Path) -> None:
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path)}
    fresh = run_cli("verify", "--json", "--no-timing", env=env)
    assert fresh.returncode == 0
    # no derivation is imported: a unit's own module would be in sys.modules
    probe = ("import sys, json\nfrom symroof.cli.main import main\n"
             "code = main(['verify', '--json'])\n"
             "print(code, any(m.startswith('symroof_derivation') for m in "
             "sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert done.stderr.split() == ["0", "False"]
    rows = json.loads(done.stdout)["claims"]
    assert rows and all(r["cached"] for r in rows)
    again = run_cli("verify", "--json", "--no-timing", env=env)
    assert json.loads(again.stdout) == json.loads(fresh.stdout)


MODULE = '''
from pathlib import Path
from symroof import chip
from symroof.claims.model import Derivation, Source
import _helper
import sibling

def build():
    d = Derivation.begin("deps", "t", Source("b"))
    value = (Path(__file__).parent / "value.txt").read_text().strip()
    d.claim("helper", stated="3", statement="s", quote="q", derive=lambda: _helper.THREE)
    d.claim("sibling", stated="4", statement="s", quote="q", derive=lambda: sibling.FOUR)
    d.claim("data", stated="5", statement="s", quote="q", derive=lambda: int(value))
    d.claim("chip", stated="9.9e14", statement="s", quote="q",
            derive=lambda: chip("x").peak("bf16"))
    return d.build()
'''

CATALOG = '''[sources]
a = "a test"
[chips.x.peak.mxu.bf16]
value = "{peak} TFLOP/s"
source = "a"
'''


@pytest.mark.slow
def test_the_cache_follows_every_file_the_build_read(tmp_path: Path) -> None:
    unit_dir, lib = tmp_path / "unit", tmp_path / "lib"
    unit_dir.mkdir()
    lib.mkdir()
    (unit_dir / "deps.py").write_text(MODULE)
    (unit_dir / "_helper.py").write_text("THREE = 3\n")
    (lib / "sibling.py").write_text("FOUR = 4\n")
    (unit_dir / "value.txt").write_text("5\n")
    catalog = tmp_path / "chips.toml"
    catalog.write_text(CATALOG.format(peak="990"))
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(lib)}

    def verdicts() -> list[tuple[str, bool]]:
        done = run_cli("verify", str(unit_dir / "deps.py"), "--catalog", str(catalog),
                       "--json", env=env)
        assert done.returncode in (0, 1), done.stderr
        return [(r["verdict"], r["cached"]) for r in json.loads(done.stdout)["claims"]]

    assert verdicts() == [("OK", False)] * 4
    assert verdicts() == [("OK", True)] * 4
    edits = [(unit_dir / "_helper.py", "THREE = 30\n", 0), (lib / "sibling.py", "FOUR = 40\n", 1),
             (unit_dir / "value.txt", "50\n", 2), (catalog, CATALOG.format(peak="500"), 3)]
    for path, text, k in edits:
        path.write_text(text)
        got = verdicts()
        assert got[k] == ("MISMATCH", False), (path.name, got)
        assert verdicts()[k] == ("MISMATCH", True)


@pytest.mark.slow
def test_only_the_edited_unit_is_rebuilt_and_a_bad_entry_is_ignored(tmp_path: Path) -> None:
    for name, stated in (("one.py", "1"), ("two.py", "2")):
        (tmp_path / name).write_text(unit(name[:-3]).replace("stated='1'", f"stated={stated!r}")
                                     .replace("lambda: 1", f"lambda: {stated}"))
    cache = tmp_path / "cache"
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(cache)}

    def cached() -> list[bool]:
        done = run_cli("verify", str(tmp_path / "one.py"), str(tmp_path / "two.py"), "--json",
                       env=env)
        assert done.returncode == 0, done.stderr
        return [r["cached"] for r in json.loads(done.stdout)["claims"]]
    assert cached() == [False] * 4
    (tmp_path / "two.py").write_text((tmp_path / "two.py").read_text() + "# edited\n")
    assert cached() == [True, True, False, False]
    for entry in cache.glob("*.json"):
        entry.write_text('{"claims": []}')
    assert cached() == [False] * 4
    for entry in cache.glob("*.json"):
        entry.write_text('{"version": 3, "claims": [{"verdict": "OK"}], "deps": 5}')
    assert cached() == [False] * 4


@pytest.mark.slow
def test_a_bundled_unit_by_name_or_id() -> None:
    for name, ids in (("rooflines-ru", {"rooflines-ru"}),
                      ("rooflines", {"rooflines-ru", "rooflines-zh"})):
        done = run_cli("verify", name, "--json")
        assert done.returncode == 0, done.stderr
        assert {r["derivation"] for r in json.loads(done.stdout)["claims"]} == ids
