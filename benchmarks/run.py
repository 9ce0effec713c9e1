"""symroof's speed, measured side by side against baselines, in one run.

    python3 benchmarks/run.py              # the full run (``make bench``), ~10 minutes
    python3 benchmarks/run.py --quick      # a smoke run, ~2 minutes
    python3 benchmarks/run.py --only growth,sweeps --repeats 7

Every pair is measured in this run with its sides in rotation (ABAB...) after one untimed
warm-up of each, so machine noise hits both; the table gives medians. The machine may be
shared: read ratios, not absolute times. The headline case of each benchmark is first.

verify    ``symroof verify`` in a fresh process against ``python -c "import sympy"``: cold
          (``--no-cache``), after editing one derivation file (the others cached), and with
          every file cached; on a copy of the bundled derivations with a cache of its own.
claims    ``verify --no-cache`` on generated derivation files of 10, 100, 1000 claims (one
          matmul intensity each): the time per claim.
growth    roofline + threshold of matmul chains of 1, 10, 50, 200 ops whose widths all
          differ (SymPy's cache cleared each time): growth against n log n.
model     the same on a ~1,000-op graph: an 80-layer model's decode step (llama-3-70b, its
          layer ops from symroof.models, unrolled), and a synthetic graph of the same shape
          with widths of its own per layer.
sweeps    ``Roofline.sweep`` against NumPy evaluating the same simplified formula at 1e3,
          1e5 and 1e7 points (per call; both must agree to 1e-12).
optimize  the power-law fast path against ``sympy.solve`` on the same stationarity system,
          2, 3 and 4 variables with symbolic exponents and 2 with alpha = 0.34, beta = 0.28;
          solve runs in a subprocess, bounded (60 s; 5 s with ``--quick``).
startup   ``python -m symroof --help`` against ``python -c pass``.
plans     the plan search over 256 chips against the exact plan one candidate at a time
          (``plan_search.py``).
model-step  an 80-layer decode step with one layer counted 80 times against 80 unrolled
          copies (``model_step.py``).

Exit code 0 whether or not targets are met (a missed one prints MISSED); 1 when a
benchmark fails to run or the sides of a pair disagree.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import plan_search  # benchmarks/plan_search.py: the plan search over 256 chips
from bench_engine import bench_growth, bench_model, bench_optimize, bench_sweeps
from bench_verify import bench_claims, bench_verify
from common import (
    PYTHON,
    REPO,
    Row,
    describe,
    interleave,
    median,
    num,
    say,
    symroof_command,
    table,
    timed,
)
from model_step import bench_model_step

sys.path.insert(0, str(REPO))
BENCHMARKS = ("verify", "claims", "growth", "model", "sweeps", "optimize", "startup", "plans",
              "model-step")


def bench_startup(repeats: int) -> list[Row]:
    helps = [*symroof_command(), "--help"]
    a, b = interleave([timed(helps), timed([PYTHON, "-c", "pass"])], repeats)
    say(describe("python -m symroof --help", a))
    say(describe("python -c pass", b))
    extra = median(a) - median(b)
    return [Row("startup (symroof --help)", num(median(a)), f"python -c pass {num(median(b))}",
                f"+{num(extra)}", "<= +0.150 s", extra <= 0.15)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Measure symroof against its baselines, side by side, in one run.",
        epilog="Exit 0 whether or not the targets are met; 1 when a benchmark fails to run "
               "or its sides disagree.")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="timed repeats per side (default 5, 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: one repeat, claims files of 10 and 100, solve bounded "
                        "at 5 s")
    p.add_argument("--only", metavar="NAMES",
                   help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    names = [n.strip() for n in (args.only or ",".join(BENCHMARKS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        p.error(f"--only: unknown benchmark {unknown[0] if unknown else '(none)'!r} "
                f"(choose from {', '.join(BENCHMARKS)})")
    args.names = names
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    n, quick = args.repeats, args.quick
    plans: dict[str, Callable[[], list[Row]]] = {
        "verify": lambda: bench_verify(max(n, 2) if not quick else 1),
        "claims": lambda: bench_claims((10, 100) if quick else (10, 100, 1000),
                                       1 if quick else max(1, n // 2)),
        "growth": lambda: bench_growth(n),
        "model": lambda: bench_model(n),
        "sweeps": lambda: bench_sweeps((10**3, 10**5, 10**7), 2.0 if quick else 10.0),
        "optimize": lambda: bench_optimize(5 if quick else 60),
        "startup": lambda: bench_startup(4 * n),
        "plans": lambda: [Row(*plan_search.bench(n, say))],
        "model-step": lambda: bench_model_step(4 * n),
    }
    say(f"symroof benchmarks: Python {sys.version.split()[0]}; repeats {n}; sides in "
        "rotation after a warm-up; medians")
    rows: list[Row] = []
    errors: list[str] = []
    started = time.perf_counter()
    for name in args.names:
        say(f"\n[{name}]")
        try:
            rows += plans[name]()
        except Exception as exc:  # report it, run the rest, exit 1 at the end
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            say(f"  ERROR: {type(exc).__name__}: {exc}")
    say(f"\nSummary (medians; {time.perf_counter() - started:.0f} s in all)\n")
    if rows:
        say(table(rows))
    targeted = [r for r in rows if r.met is not None]
    missed = [r.name for r in targeted if not r.met]
    say()
    if missed:
        say(f"MISSED: {len(missed)} of {len(targeted)} targets: {'; '.join(missed)}")
    elif targeted:
        say(f"Targets met: {len(targeted)} of {len(targeted)}.")
    for e in errors:
        say(f"ERROR: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
