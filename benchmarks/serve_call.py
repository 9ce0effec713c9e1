"""One in-process ``serve`` call (LLaMA-3-70B, TP 8 on H100, batch 16, 4096 prompt tokens),
timed here and, with ``--against DIR``, in another checkout of symroof (the previous release)
run the same way in a child process, with the ratio of the two medians.

    python3 benchmarks/serve_call.py
    python3 benchmarks/serve_call.py --against ../symroof-previous --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

TIMER = """
import json, statistics, time
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.serving import serve
cfg, m = model("llama-3-70b"), mesh("X=8", "h100-sxm")
serve(cfg, m, batch=16, context=4096)
runs = []
for _ in range(RUNS):
    t = time.perf_counter()
    serve(cfg, m, batch=16, context=4096)
    runs.append(time.perf_counter() - t)
print(json.dumps({"median_s": statistics.median(runs), "runs_s": runs}))
"""


def timed(root: Path, runs: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", TIMER.replace("RUNS", str(runs))], env=env,
                          cwd=root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", metavar="DIR", help="another checkout to time beside")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    out = {"this": timed(here, args.runs)}
    if args.against:
        out["against"] = timed(Path(args.against).resolve(), args.runs)
    ratio = (float(out["against"]["median_s"]) / float(out["this"]["median_s"])  # type: ignore[arg-type]
             if args.against else None)
    if args.json:
        print(json.dumps({**out, "ratio": ratio}, indent=2))
    else:
        for name, r in out.items():
            print(f"{name}: median {1e3 * float(r['median_s']):.0f} ms per serve call "  # type: ignore[arg-type]
                  f"over {args.runs} runs")
        if ratio is not None:
            print(f"the other checkout's median over this one's: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
