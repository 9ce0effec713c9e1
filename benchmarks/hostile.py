"""A fresh hostile corpus: seeded inputs none of which is in the pinned set
(tests/hardening/cases.toml), each run as its own ``python -m symroof`` process under a wall
bound, and classified.

    python benchmarks/hostile.py --count 500 --seed 1       # a few minutes on 2 cores
    python benchmarks/hostile.py --count 40 --json

Classes: ``traceback`` (the word Traceback in the output, or an exit code other than 0, 1, 2),
``hang`` (killed at the wall bound), ``unchecked pass`` (verify exit 0, or an OK verdict, for a
claim whose work did not run or whose stated value is wrong by construction), ``leak`` (a
process a derivation started still runs after verify), ``injection`` (a quote's TeX control
sequence reaches the .tex, or raw HTML the .md), ``unclear refusal`` (exit 2 without exactly
one line ``symroof: error: ...``), and the fine ones: ``refused`` (exit 2, one line) and
``answered`` (exit 0 or 1 with a right verdict, or an answer). The exit code is 1 when any
case is in a class that is not fine."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_chapters import (
    GOOD_FILES,
    TEX_MARKS,
    catalogue_case,
    chapter_case,
    config_case,
)
from hostile_inputs import FLAG_SURFACES, Case

REPO = Path(__file__).resolve().parent.parent
WALL = 60.0
# the verdict line of claim a, however it is spaced (a forged "OK a" line too)
VERDICT = re.compile(r"^([A-Z][A-Z ]*?) +a(?: |$)")
PASS = ("OK", "ROUNDING")
BAD = ("traceback", "hang", "unchecked pass", "forged output", "leak", "injection",
       "unclear refusal")


def pinned() -> set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
    """The command lines and files of the pinned set, to keep out of the corpus."""
    cases = tomllib.loads((REPO / "tests/hardening/cases.toml").read_text("utf-8"))["case"]
    return {(tuple(c["args"]), tuple(sorted(c.get("files", {}).items()))) for c in cases}


def corpus(seed: int, count: int) -> list[Case]:
    """``count`` distinct cases from ``seed``: about half command-line flags over every verb,
    a third chapter folders, the rest catalogues and model configs."""
    rng = random.Random(seed)
    skip = pinned()
    seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
    out: list[Case] = []
    while len(out) < count:
        r = rng.random()
        if r < 0.5:
            surface = rng.choice(sorted(FLAG_SURFACES))
            args = FLAG_SURFACES[surface](rng)
            files = GOOD_FILES if any(a == "{tmp}/ch" for a in args) else ()
            case = Case(surface, args, files)
        elif r < 0.82:
            case = chapter_case(rng, len(out))
        elif r < 0.92:
            case = catalogue_case(rng)
        else:
            case = config_case(rng)
        key = (case.args, tuple(sorted(case.files)))
        if key in skip or key in seen or any("\x00" in a for a in case.args):
            continue
        seen.add(key)
        out.append(case)
    return out


def _run(args: tuple[str, ...], tmp: Path, env: dict[str, str]) -> dict[str, object]:
    argv = [sys.executable, "-m", "symroof", *(a.replace("{tmp}", str(tmp)) for a in args)]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=tmp,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=WALL)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group this run started
        out, err = proc.communicate()
        rc = None
    return {
        "rc": rc,
        "seconds": round(time.monotonic() - start, 2),
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def _leftover(tag: str) -> list[int]:
    """Processes still running ``sleep TAG`` (a derivation's grandchildren)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd[:2] == [b"sleep", tag.encode()]:
                pids.append(int(p.name))
    return pids


def classify(case: Case, run: dict[str, object], tmp: Path) -> tuple[str, str]:
    """The class of one outcome and why."""
    rc, out, err = run["rc"], str(run["stdout"]), str(run["stderr"])
    if rc is None:
        return "hang", f"killed after {WALL:g} s"
    if rc == 130 and err == "symroof: interrupted\n" and not out:
        return "answered", "the derivation raised KeyboardInterrupt: the run ends (exit 130)"
    if "Traceback" in out + err or rc not in (0, 1, 2):
        line = [ln for ln in err.splitlines() if ln.strip()][-1:] or [""]
        return "traceback", f"exit {rc}: {line[0][:160]}"
    if rc == 2:
        lines = err.strip().splitlines()
        if out or len(lines) != 1 or not lines[0].startswith("symroof: error: "):
            return (
                "unclear refusal",
                f"stdout {len(out)} chars, stderr {len(lines)} lines: {err[:160]!r}",
            )
        return "refused", lines[0][:160]
    shown = [m.group(1) for m in map(VERDICT.match, out.splitlines()) if m]
    if "--json" in case.args:  # the whole stdout is one JSON document, nothing before it
        try:
            doc = json.loads(out)
        except ValueError as exc:
            return "forged output", f"exit {rc}: stdout is not one JSON document ({exc})"
        claims = doc.get("claims", []) if isinstance(doc, dict) else []
        shown = [str(r.get("verdict")) for r in claims
                 if isinstance(r, dict) and r.get("id") == "a"]
    if case.expect == "not-ok" and (any(v in PASS for v in shown) or (rc == 0 and not shown)):
        return "unchecked pass", f"exit {rc}: verdicts {shown}"
    return "answered", f"exit {rc}"


BASELINE: dict[str, int] = {}  # how often each TeX mark is in a harmless chapter's .tex


def baseline() -> dict[str, int]:
    """The TeX marks of the write-up of a harmless chapter (the template's own)."""
    with tempfile.TemporaryDirectory(prefix="symroof-hostile-") as name:
        tmp = Path(name)
        for rel, body in GOOD_FILES:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(body, encoding="utf-8")
        env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp / ".cache"), "PYTHONPATH": str(REPO)}
        _run(("report", "{tmp}/ch", "--out", "{tmp}/out", "--format", "md,tex"), tmp, env)
        tex = "".join(p.read_text("utf-8") for p in (tmp / "out").rglob("*.tex"))
        return {m: tex.count(m) for m in TEX_MARKS}


def run_case(case: Case) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="symroof-hostile-") as name:
        tmp = Path(name)
        for rel, body in case.files:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(body, encoding="utf-8", errors="surrogateescape")
        env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp / ".cache"), "PYTHONPATH": str(REPO)}
        run = _run(case.args, tmp, env)
        cls, why = classify(case, run, tmp)
        if case.tag:
            time.sleep(0.2)
            left = _leftover(case.tag)
            for pid in left:  # started by this case's derivation: end it
                os.kill(pid, signal.SIGKILL)
            if left and cls not in ("traceback", "hang", "unchecked pass"):
                cls, why = "leak", f"{len(left)} process(es) left running"
        if case.extra and cls in ("answered", "refused"):
            second = _run(case.extra, tmp, env)
            cls2, why2 = classify(Case(case.surface, case.extra, expect=case.expect), second,
                                  tmp)
            tex = (
                "".join(p.read_text("utf-8", "replace") for p in (tmp / "out").rglob("*.tex"))
                if (tmp / "out").is_dir()
                else ""
            )
            marks = [m for m in TEX_MARKS if tex.count(m) > BASELINE.get(m, 0)]
            md = "".join(p.read_text("utf-8", "replace") for p in (tmp / "out").rglob("*.md")
                         if (tmp / "out").is_dir() and p.name != "index.md")
            tags = re.findall(r"<(?!br>)[A-Za-z/!?][^<>]{0,20}", md.split("-->", 1)[-1])
            if cls2 in BAD:
                cls, why = cls2, "report: " + why2
            elif marks:
                cls, why = "injection", f"report wrote {marks} into the .tex"
            elif tags:
                cls, why = "injection", f"report wrote raw HTML {tags[:3]} into the .md"
        return {
            "surface": case.surface,
            "class": cls,
            "why": why,
            "note": case.note,
            "seconds": run["seconds"],
            "case": asdict(case),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="every case and its class as JSON")
    a = ap.parse_args(argv)
    cases = corpus(a.seed, a.count)
    start = time.monotonic()
    BASELINE.update(baseline())
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(run_case, cases))
    seconds = time.monotonic() - start
    totals = Counter(str(r["class"]) for r in results)
    if a.json:
        print(
            json.dumps(
                {
                    "seed": a.seed,
                    "count": a.count,
                    "seconds": round(seconds, 1),
                    "totals": dict(totals),
                    "cases": results,
                },
                ensure_ascii=False,
                indent=1,
            )
        )
    else:
        by: dict[str, Counter[str]] = {}
        for r in results:
            by.setdefault(str(r["surface"]), Counter())[str(r["class"])] += 1
        classes = [c for c in ("refused", "answered", *BAD)]
        print(f"{'surface':<14}" + "".join(f"{c:>16}" for c in classes))
        for s in sorted(by):
            print(f"{s:<14}" + "".join(f"{by[s][c]:>16}" for c in classes))
        print(f"{'total':<14}" + "".join(f"{totals[c]:>16}" for c in classes))
        print(f"\n{len(results)} inputs (seed {a.seed}) in {seconds:.0f} s")
        for r in results:
            if r["class"] in BAD:
                c = r["case"]
                print(
                    f"\n{r['class']}: {r['note'] or ''} {r['why']}\n  symroof "
                    + " ".join(repr(x)[:120] for x in c["args"])
                )  # type: ignore[index]
    return 1 if any(totals[c] for c in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
