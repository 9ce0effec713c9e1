"""The hostile run 3 fixtures (a cache, a protocol and an output that no derivation can
bend), each as a process: the true verdict and exit code, ``--timeout 5`` ending within
10 s, ``--json`` stdout one JSON document, and nothing a derivation forges kept or printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from symroof.claims.sandbox import abi
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(abi() < 1, reason="the cache needs Landlock")]

DERIVE = '''
from symroof import chip, einsum
def claims(ch):
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
    ch.add(a=rl.ridge)
'''
TABLE = '[chapter]\nid = "{id}"\ntitle = "h"\nbook = "b"\n[s.a]\nquote = "q"\n' \
        'stated = "{stated}"\n'
PIPES = '''
import os, stat, fcntl, time, threading
def pipe_fds():
    out = []
    for n in os.listdir('/proc/self/fd'):
        fd = int(n)
        if fd < 3:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISFIFO(st.st_mode) and \\
                    (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) == os.O_WRONLY:
                out.append(fd)
        except OSError:
            pass
    return out
def beat(line, seconds, pause):
    t0 = time.time()
    while time.time() - t0 < seconds:
        try:
            for fd in pipe_fds():
                os.write(fd, line)
            time.sleep(pause)
        except BaseException:
            pass
'''


def chapter(root: Path, name: str, prefix: str, stated: str, id: str = "h-en") -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "claims.py").write_text(prefix + DERIVE)
    (folder / "en.toml").write_text(TABLE.format(id=id, stated=stated))
    return folder


def verify(*args: str, cache: Path, extra: dict[str, str] | None = None,
           ) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(cache), **(extra or {})}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "symroof", "verify", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    return done, time.monotonic() - start


def rows(done: subprocess.CompletedProcess[str]) -> list[tuple[str, str, bool]]:
    """The rows of a --json run; the stdout must be one JSON document."""
    return [(r["id"], r["verdict"], r["cached"]) for r in json.loads(done.stdout)["claims"]]


def test_one_chapter_cannot_flip_another_chapters_cached_verdict(tmp_path: Path) -> None:
    flip = '''
import os, glob, json
for f in glob.glob(os.path.join(os.environ["SYMROOF_CACHE_DIR"], "*")):
    try:
        e = json.load(open(f))
        text = json.dumps(e).replace('19700/81', '300').replace('MISMATCH', 'OK')
        open(f, "w").write(text)
    except Exception:
        pass
'''
    t = chapter(tmp_path, "t", "", "300", "t-en")
    p = chapter(tmp_path, "p", flip, "243.2", "p-en")
    cache = tmp_path / "cache"
    first, _ = verify(str(t), "--json", cache=cache)
    assert (first.returncode, rows(first)) == (1, [("a", "MISMATCH", False)])
    other, _ = verify(str(p), "--json", cache=cache)
    assert (other.returncode, rows(other)) == (0, [("a", "OK", False)])
    again, _ = verify(str(t), "--json", cache=cache)
    assert (again.returncode, rows(again)) == (1, [("a", "MISMATCH", True)])


def test_a_chapter_cannot_forge_its_own_entry_then_fail(tmp_path: Path) -> None:
    forge = '''
import os, json, sys
from pathlib import Path
from symroof.claims.cache import VerdictCache
here = Path(__file__).resolve().parent
vc = VerdictCache()
for unit in (here, here / "en.toml"):
    for t in (30.0, 5.0, 5):
        slot = vc.slot(unit, t)
        try:
            slot.parent.mkdir(parents=True, exist_ok=True)
            slot.write_text(json.dumps({"entry": "{}", "mac": ""}))
        except OSError:
            pass
raise RuntimeError("fail so that the parent stores nothing")
'''
    ch = chapter(tmp_path, "ch", forge, "300")
    cache = tmp_path / "cache"
    for _ in range(2):  # a chapter whose claims.py raises is a bad input, every time
        done, _ = verify(str(ch), "--json", "--timeout", "5", cache=cache)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr.endswith("the derivation raised RuntimeError: fail so that the "
                                    "parent stores nothing\n")
    assert sorted(p.name for p in cache.iterdir()) == ["key"]  # nothing forged, nothing kept


def test_a_hand_edited_entry_is_never_served(tmp_path: Path) -> None:
    ch = chapter(tmp_path, "ch", "", "300")
    cache = tmp_path / "cache"
    assert rows(verify(str(ch), "--json", cache=cache)[0]) == [("a", "MISMATCH", False)]
    import sympy as sp

    from symroof.claims.serial import dump
    (entry,) = cache.glob("*.json")
    outer = json.loads(entry.read_text())
    inner = json.loads(outer["entry"])
    inner["values"][0]["value"] = dump(sp.Integer(300))  # what the table states
    entry.write_text(json.dumps({**outer, "entry": json.dumps(inner)}))
    done, _ = verify(str(ch), "--json", cache=cache)
    assert (done.returncode, rows(done)) == (1, [("a", "MISMATCH", False)])
    # a cached value is judged again against the table as it is now
    assert rows(verify(str(ch), "--json", cache=cache)[0]) == [("a", "MISMATCH", True)]
    (ch / "en.toml").write_text(TABLE.format(id="h-en", stated="243.2"))
    done, _ = verify(str(ch), "--json", cache=cache)
    assert (done.returncode, rows(done)) == (0, [("a", "OK", False)])


OUT_OF_TURN = "the worker sent a message out of turn (start)"


@pytest.mark.parametrize(("name", "prefix", "ended"), [
    ("start at import", PIPES + "beat(b'{\"t\":\"start\",\"i\":0}\\n', 150, 0.5)\n",
     OUT_OF_TURN),
    ("unknown kind", PIPES + "beat(b'{\"t\":\"ping\"}\\n', 150, 0.5)\n",
     "the worker sent a garbled message"),
    ("from a thread while a claim sleeps", PIPES + (
        "threading.Thread(target=beat, args=(b'{\"t\":\"start\",\"i\":0}\\n', 150, 0.5),"
        " daemon=True).start()\n"
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"), OUT_OF_TURN),
    ("a flood of lines", PIPES + "beat(b'{\"t\":\"start\",\"i\":0}\\n' * 100000, 40, 0)\n",
     OUT_OF_TURN),
    ("a flood without newline", PIPES + "beat(b'x' * (1 << 24), 40, 0)\n",
     "the worker sent a message longer than 256 MiB"),
])
def test_a_worker_cannot_move_its_deadline(name: str, prefix: str, ended: str,
                                           tmp_path: Path) -> None:
    """A worker that writes for 40 to 150 s is ended by the parent at the first message out
    of the protocol (the unit an ERROR that says which), not when it stops writing."""
    ch = chapter(tmp_path, "ch", prefix, "300")
    done, seconds = verify(str(ch), "--no-cache", "--json", "--timeout", "5",
                           cache=tmp_path / "cache")
    assert done.returncode == 1, done.stderr
    (row,) = json.loads(done.stdout)["claims"]
    assert (row["verdict"], row["detail"]) == ("ERROR", f"{ch}: {ended}"), (name, row)
    assert seconds < 30, (name, seconds)  # the writing alone lasts 40 s or more


def test_a_heartbeat_inside_a_claim_ends_in_its_timeout(tmp_path: Path) -> None:
    beats = PIPES + '''
def slow():
    threading.Thread(target=beat, args=(b'{"t":"start","i":0}\\n', 150, 0.5),
                     daemon=True).start()
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
'''
    folder = tmp_path / "ch"
    folder.mkdir()
    (folder / "claims.py").write_text(beats + "def claims(ch):\n    ch.add(a=slow())\n")
    (folder / "en.toml").write_text(TABLE.format(id="h-en", stated="300"))
    done, seconds = verify(str(folder), "--no-cache", "--json", "--timeout", "5",
                           cache=tmp_path / "cache")
    assert seconds < 60 and done.returncode == 1  # not the 150 s or forever it asks for
    (row,) = json.loads(done.stdout)["claims"]
    assert row["verdict"] in ("ERROR", "TIMEOUT")


def test_a_derivation_cannot_write_to_verifys_stdout(tmp_path: Path) -> None:
    forge = '''
import os
for fd in (1, 2):
    try:
        with open(f'/proc/{os.getppid()}/fd/{fd}', 'w') as f:
            f.write('OK        a      300     300\\n{"claims": []}\\n')
    except OSError:
        pass
'''
    ch = chapter(tmp_path, "ch", forge, "300")
    done, _ = verify(str(ch), "--no-cache", "--json", "--timeout", "5",
                     cache=tmp_path / "cache")
    assert done.returncode == 1
    assert rows(done) == [("a", "MISMATCH", False)]  # one document: nothing forged before it
    assert "OK " not in done.stdout and "OK " not in done.stderr


def test_a_derivation_cannot_stop_verify(tmp_path: Path) -> None:
    stop = ("import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGSTOP)\n"
            "except OSError:\n    pass\n")
    ch = chapter(tmp_path, "ch", stop, "300")
    done, seconds = verify(str(ch), "--no-cache", "--json", "--timeout", "5",
                           cache=tmp_path / "cache")
    assert seconds < 60 and done.returncode == 1  # not the 150 s or forever it asks for
    assert rows(done) == [("a", "MISMATCH", False)]


@pytest.mark.parametrize("stated", ["243.2", "300"])
def test_a_device_named_as_a_dependency_is_never_hashed(stated: str, tmp_path: Path) -> None:
    devzero = ("import symroof.claims.worker as w\nw._real_file = lambda p: True\n"
               "open('/dev/zero', 'rb').read(1)\n")
    ch = chapter(tmp_path, "ch", devzero, stated)
    cache = tmp_path / "cache"
    verdict = "OK" if stated == "243.2" else "MISMATCH"
    for _ in range(2):
        done, seconds = verify(str(ch), "--json", "--timeout", "5", cache=cache)
        assert seconds < 60  # reading /dev/zero would never end
        assert (done.returncode, rows(done)) == (int(verdict != "OK"), [("a", verdict, False)])
    assert not list(cache.glob("*.json"))  # a dependency that is not a regular file: not kept


def test_a_file_changed_while_its_unit_runs_is_not_kept(tmp_path: Path) -> None:
    ch, data = tmp_path / "ch", tmp_path / "data"  # outside the unit: it may write there
    ch.mkdir()
    data.mkdir()
    (data / "data.txt").write_text("1\n")
    (ch / "claims.py").write_text(
        "from pathlib import Path\n"
        "data = Path(__file__).parent.parent / 'data' / 'data.txt'\n"
        "value = int(data.read_text())\n"
        "data.write_text(str(value + 1))  # changed after it was read\n"
        "def claims(ch):\n    ch.add(a=value)\n")
    (ch / "en.toml").write_text(TABLE.format(id="h-en", stated="1"))
    done, _ = verify(str(ch), "--json", cache=tmp_path / "cache")
    # a number read from a file is no engine computation: a DEFINITION that holds
    assert (done.returncode, rows(done)) == (0, [("a", "DEFINITION", False)])
    done, _ = verify(str(ch), "--json", cache=tmp_path / "cache")
    assert (done.returncode, rows(done)) == (1, [("a", "MISMATCH", False)])  # 2, not served


CHANNELS = {
    "os.environb": "value = int(os.environb[b'PROBE_VALUE'])",
    "posix.environ": "import posix\nvalue = int(posix.environ[b'PROBE_VALUE'])",
    "os.environ._data": "value = int(os.environ._data[b'PROBE_VALUE'])",
    "repr(os.environ)": "value = int(repr(os.environ).split(\"'PROBE_VALUE': '\")[1][0])",
    "/proc/self/environ": "raw = open('/proc/self/environ', 'rb').read()\n"
                          "value = int(raw.split(b'PROBE_VALUE=')[1][:1])",
    "ctypes getenv": "import ctypes\nlib = ctypes.CDLL(None)\n"
                     "lib.getenv.restype = ctypes.c_char_p\n"
                     "value = int(lib.getenv(b'PROBE_VALUE'))",
    "os.readlink": "value = int(os.readlink(os.path.join(os.path.dirname(__file__), 'link')))",
}


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_every_channel_of_the_environment_is_in_the_key(channel: str, tmp_path: Path) -> None:
    ch = tmp_path / "ch"
    ch.mkdir()
    (ch / "claims.py").write_text(f"import os\n{CHANNELS[channel]}\n"
                                  "def claims(ch):\n    ch.add(a=value)\n")
    (ch / "en.toml").write_text(TABLE.format(id="h-en", stated="1"))
    cache = tmp_path / "cache"
    got = []
    # a plain name (SYMROOF_* variables are in every slot's key)
    for value in ("1", "1", "2"):
        link = ch / "link"
        if link.is_symlink():
            link.unlink()
        link.symlink_to(value)
        done, _ = verify(str(ch), "--json",
                         cache=cache, extra={"PROBE_VALUE": value})
        got.append(rows(done)[0][1])
    # a number read from outside claims.py is no engine computation: a DEFINITION that holds
    assert got == ["DEFINITION", "DEFINITION", "MISMATCH"], (channel, got)


def test_a_derivation_cannot_rewrite_its_own_table(tmp_path: Path) -> None:
    swap = ("import pathlib\nt = pathlib.Path(__file__).parent / 'en.toml'\n"
            "try:\n    t.write_text(t.read_text().replace('300', '243.2'))\n"
            "except OSError:\n    pass\n")
    ch = chapter(tmp_path, "ch", swap, "300")
    done, _ = verify(str(ch), "--no-cache", "--json", cache=tmp_path / "cache")
    assert (done.returncode, rows(done)) == (1, [("a", "MISMATCH", False)])
    assert 'stated = "300"' in (ch / "en.toml").read_text()


def test_a_module_changed_after_its_import_from_a_pyc_is_not_kept(tmp_path: Path) -> None:
    import py_compile
    import threading
    lib, marks = tmp_path / "lib", tmp_path / "marks"
    lib.mkdir()
    marks.mkdir()
    (lib / "helper_38.py").write_text("VALUE = 1\n")
    py_compile.compile(str(lib / "helper_38.py"))  # imported from its .pyc: never opened
    (tmp_path / "ch").mkdir()
    (tmp_path / "ch" / "claims.py").write_text(
        "import helper_38, pathlib, time\n"
        f"marks = pathlib.Path({str(marks)!r})\n"
        "(marks / 'imported').touch()\n"
        "for _ in range(400):  # until the editor below has saved\n"
        "    if (marks / 'edited').exists():\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "def claims(ch):\n    ch.add(a=helper_38.VALUE)\n")
    (tmp_path / "ch" / "en.toml").write_text(TABLE.format(id="h-en", stated="1"))

    def editor() -> None:  # an editor saving the helper while verify runs
        for _ in range(400):
            if (marks / "imported").exists():
                # another size: a .pyc whose source has the same size and the same second
                # of mtime is taken as fresh by Python itself
                (lib / "helper_38.py").write_text("VALUE = 22\n")
                (marks / "edited").touch()
                return
            time.sleep(0.05)
    thread = threading.Thread(target=editor)
    thread.start()
    extra = {"PYTHONPATH": str(lib)}
    done, _ = verify(str(tmp_path / "ch"), "--json", cache=tmp_path / "cache", extra=extra)
    thread.join()
    assert rows(done) == [("a", "OK", False)]  # the value it imported
    assert not list((tmp_path / "cache").glob("*.json"))  # changed during the run: not kept
    done, _ = verify(str(tmp_path / "ch"), "--json", cache=tmp_path / "cache", extra=extra)
    assert rows(done) == [("a", "MISMATCH", False)]


def test_a_run_that_times_out_deletes_its_units_entry(tmp_path: Path) -> None:
    ch = chapter(tmp_path, "ch", "", "243.2")
    cache = tmp_path / "cache"
    assert rows(verify(str(ch), "--json", "--timeout", "5", cache=cache)[0]) == \
        [("a", "OK", False)]
    assert len(list(cache.glob("*.json"))) == 1
    (ch / "claims.py").write_text("while True:\n    pass\n" + DERIVE)
    done, seconds = verify(str(ch), "--json", "--timeout", "5", cache=cache)
    assert seconds < 60 and done.returncode == 1  # not the 150 s or forever it asks for
    assert [r["verdict"] for r in json.loads(done.stdout)["claims"]] == ["TIMEOUT"]
    assert not list(cache.glob("*.json"))


def test_report_cannot_be_kept_running_by_a_heartbeat(tmp_path: Path) -> None:
    ch = chapter(tmp_path, "ch", PIPES + "beat(b'{\"t\":\"start\",\"i\":0}\\n', 150, 0.5)\n",
                 "300")
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path / "cache")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "symroof", "report", str(ch), "--out",
                           str(tmp_path / "out"), "--format", "md", "--timeout", "5"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert time.monotonic() - start < 60  # the heartbeat lasts 150 s
    assert done.returncode == 1, done.stderr
