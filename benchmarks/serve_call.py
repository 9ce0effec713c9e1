"""One in-process ``serve`` call (LLaMA-3-70B, TP 8 on H100, batch 16, 4096 prompt tokens),
timed here and, with ``--against DIR``, in another checkout of symroof (the previous release)
run the same way in a child process, with the ratio of the two medians.

    python3 benchmarks/serve_call.py
    python3 benchmarks/serve_call.py --against ../symroof-previous --json
    python3 benchmarks/serve_call.py --forecast --against ../symroof-previous

``--forecast`` times what a forecast plan (``plan --serve --efficiency ...``) builds: the
plan under fractions of peak (compute 0.7, hbm 0.85, nvlink 0.8; no overlap, as the shipped
serving calibrations take, or with ``--overlap`` the bound's) and its bound at peak, from
one ``serve(..., bound=True)`` call where the checkout has it, else two ``serve`` calls;
each median is printed beside a plain call's in the same checkout.
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
out = {"median_s": statistics.median(runs), "runs_s": runs}
if FORECAST:
    import inspect
    import sympy as sp
    from symroof.plans.efficiency import PEAK, Efficiency
    # a checkout whose overlap is a rule's name, or an older one's yes/no
    rule = OVERLAP if isinstance(PEAK.overlap, bool) else ("op" if OVERLAP else "none")
    eff = Efficiency({"compute": sp.Rational(7, 10), "hbm": sp.Rational(17, 20),
                      "nvlink": sp.Rational(4, 5)}, overlap=rule)
    params = inspect.signature(serve).parameters
    once = "bound" in params
    if "options" in params:  # a checkout whose steps take one StepOptions value
        from symroof.plans.options import StepOptions
        kw = {"options": StepOptions(efficiency=eff)}
    else:
        kw = {"efficiency": eff}
    def forecast():
        if once:
            return serve(cfg, m, batch=16, context=4096, bound=True, **kw)
        return (serve(cfg, m, batch=16, context=4096, **kw),
                serve(cfg, m, batch=16, context=4096))
    forecast()
    both = []
    for _ in range(RUNS):
        t = time.perf_counter()
        forecast()
        both.append(time.perf_counter() - t)
    out.update(forecast_median_s=statistics.median(both), forecast_runs_s=both,
               forecast_builds_once=once)
print(json.dumps(out))
"""


def timed(root: Path, runs: int, forecast: bool = False,
          overlap: bool = False) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = (TIMER.replace("RUNS", str(runs)).replace("FORECAST", str(forecast))
            .replace("OVERLAP", str(overlap)))
    done = subprocess.run([sys.executable, "-c", code], env=env,
                          cwd=root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", metavar="DIR", help="another checkout to time beside")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--forecast", action="store_true",
                        help="also time a forecast plan's serving build (and its bound)")
    parser.add_argument("--overlap", action="store_true",
                        help="with --forecast: fractions whose forecast keeps the bound's "
                             "overlap (default: none, as the shipped serving calibrations)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    out = {"this": timed(here, args.runs, args.forecast, args.overlap)}
    if args.against:
        out["against"] = timed(Path(args.against).resolve(), args.runs, args.forecast,
                               args.overlap)
    ratio = (float(out["against"]["median_s"]) / float(out["this"]["median_s"])  # type: ignore[arg-type]
             if args.against else None)
    forecast_ratio = (float(out["against"]["forecast_median_s"])  # type: ignore[arg-type]
                      / float(out["this"]["forecast_median_s"])  # type: ignore[arg-type]
                      if args.against and args.forecast else None)
    if args.json:
        print(json.dumps({**out, "ratio": ratio, "forecast_ratio": forecast_ratio}, indent=2))
    else:
        for name, r in out.items():
            print(f"{name}: median {1e3 * float(r['median_s']):.0f} ms per serve call "  # type: ignore[arg-type]
                  f"over {args.runs} runs")
            if args.forecast:
                how = ("one serve call with its bound" if r["forecast_builds_once"]
                       else "two serve calls")
                print(f"{name}: median {1e3 * float(r['forecast_median_s']):.0f} ms for a "  # type: ignore[arg-type]
                      f"forecast and its bound ({how})")
        if ratio is not None:
            print(f"the other checkout's median over this one's: {ratio:.1f}x")
        if forecast_ratio is not None:
            print(f"the same for a forecast and its bound: {forecast_ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
