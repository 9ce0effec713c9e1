"""Cold ``symroof verify`` of this checkout against another one (the baseline), side by side:
each run a fresh process over the bundled derivations with an empty cache folder, the two
checkouts in turn (A B A B ...), so that noise on a shared machine hits both; then the same
with the cache filled (every unit served from it).

    python benchmarks/verify_cold.py --baseline ../main --repeats 7

The baseline is a checkout with its own ``.venv`` (each side runs ``.venv/bin/python -m
symroof verify`` in its own folder). Prints the medians, min and max, and the ratio of the
medians; the target of the untrusted-derivation work is a cold ratio of at most 1.10.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def once(checkout: Path, cache: Path, fresh: bool) -> float:
    """Seconds of one ``verify`` run of ``checkout`` (``fresh``: with an empty cache)."""
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([str(checkout / ".venv/bin/python"), "-m", "symroof", "verify"],
                          cwd=checkout, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: verify exited with {done.returncode}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    sides = {"this": REPO, "baseline": a.baseline.resolve()}
    with tempfile.TemporaryDirectory(prefix="symroof-cold-") as tmp:
        caches = {name: Path(tmp) / name for name in sides}
        for fresh, label in ((True, "cold (empty cache)"), (False, "cached")):
            times: dict[str, list[float]] = {name: [] for name in sides}
            for name, checkout in sides.items():  # one untimed warm-up each
                once(checkout, caches[name], fresh)
            for _ in range(a.repeats):
                for name, checkout in sides.items():
                    times[name].append(once(checkout, caches[name], fresh))
            print(f"verify, {label}, {a.repeats} runs each:")
            for name, got in times.items():
                print(f"  {name:<9} median {statistics.median(got):6.2f} s  "
                      f"(min {min(got):.2f}, max {max(got):.2f})")
            ratio = statistics.median(times["this"]) / statistics.median(times["baseline"])
            print(f"  this / baseline: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
