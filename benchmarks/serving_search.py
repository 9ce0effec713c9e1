"""The serving search's speed: compiling the worker shapes (one symbolic hybrid step each,
lambdified), then searching the configurations in process, and the command end to end.

    python3 benchmarks/serving_search.py          # LLaMA-3-70B on 8 H100, TTFT 3 s, TPOT 20 ms
    python3 benchmarks/serving_search.py --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

COMMAND = ["plan", "llama-3-70b", "--serve", "--search", "8", "--chip", "h100-sxm",
           "--context", "4096", "--generate", "256", "--ttft", "3s", "--tpot", "20ms"]


def measure() -> dict[str, Any]:
    from symroof.hardware.catalog import chip
    from symroof.models import model
    from symroof.plans.serving_search import search_serving, shapes_for
    cfg, h100 = model("llama-3-70b"), chip("h100-sxm")
    t0 = time.perf_counter()
    shapes = shapes_for(cfg, h100, 8, context=4096, end=4352, dtype="bf16", kv_dtype="bf16")
    t1 = time.perf_counter()
    found = search_serving(cfg, h100, 8, ttft=3.0, tpot=0.02, context=4096, generate=256,
                           shapes=shapes)
    t2 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "symroof", *COMMAND], capture_output=True,
                          text=True, check=True)
    t3 = time.perf_counter()
    assert "best" in done.stdout
    return {"shapes": len(shapes), "compile_s": t1 - t0, "configurations": found.searched,
            "search_s": t2 - t1, "command_s": t3 - t2,
            "best": found.best.describe() if found.best else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    r = measure()
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print(f"compiled {r['shapes']} worker shapes in {r['compile_s']:.2f} s; searched "
              f"{r['configurations']} configurations in {r['search_s']:.3f} s in process; "
              f"the command took {r['command_s']:.2f} s; best: {r['best']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
