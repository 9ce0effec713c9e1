"""symroof's speed, measured side by side against a baseline, in one run.

Run from anywhere, with symroof installed (``make setup``):

    python3 benchmarks/run.py              # the full run (``make bench``), about a minute
    python3 benchmarks/run.py --quick      # a smoke run, well under a minute
    python3 benchmarks/run.py --repeats 9 --only verify,startup

Five pairs, each measured in this run with the two sides interleaved (ABAB...) after one
untimed warm-up of each side, so that machine noise hits both; the table gives medians and
the ratio (or difference) of the medians against the project's targets. ``--repeats N``
(default 5) sets the timed runs of the verify pair; the cheaper pairs take 4N.

1. verify     ``symroof verify`` (all bundled derivations) vs ``python -c "import sympy"``,
              both subprocesses; target: at most 5x. Also the 10 slowest claims (from
              ``symroof verify --json``, which is also side A's warm-up) and where the time
              goes, phase by phase (``verify_breakdown.py``; skipped with ``--quick``).
2. optimize   ``symroof.engine.optimize.lagrange`` on ``E + A/N**alpha + B/D**beta`` under
              ``6 N D = C`` (the power-law fast path) vs ``sympy.solve`` on the raw
              stationarity system with symbolic exponents; SymPy's cache is cleared before
              every timed call; target: at least 20x faster.
   concrete   the same with alpha = 0.34, beta = 0.28: the fast path's exact exponents
              (14/31, 17/31) vs plain ``sympy.solve`` in a subprocess given 60 s (5 s with
              ``--quick``); target: the fast path solves it where solve runs past the limit.
3. sweeps     attainable FLOP/s of ``B D, D F -> B F`` (bf16) against 10^6 batch sizes at
              fixed D, F on several chips: the engine (the roofline's intensity compiled with
              ``lambdify``, once per chip and sweep, inside the timing) vs the same formula
              written by hand in NumPy; both must agree (``np.allclose``); target: at least
              half NumPy's throughput.
4. startup    ``symroof --help`` vs ``python -c pass``; target: at most 0.15 s above it.
5. model      an 80-layer model's decode step with symbolic batch and context (LLaMA-3-70B on
              H100: every op's roofline, the summed T_lower, T_math and T_memory) with one
              layer's ops built once and counted 80 times, vs the same step unrolled into 80
              copies of the layer; both must agree exactly; target: at least 10x faster.
              Also times ``symroof model llama-3-70b --decode ... --json`` (a subprocess).

Subprocesses run the interpreter and the ``symroof`` console script of this Python directly
(never a version-manager shim, which would add its own start-up to both sides). The exit
code is 0 whether or not targets are met (a missed one prints MISSED); it is 1 when a
benchmark fails to run or the two sides of a pair disagree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plan_search  # benchmarks/plan_search.py: the plan search over 256 chips

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON = sys.executable

BENCHMARKS = ("verify", "optimize", "concrete", "sweeps", "startup", "plans", "model")
CHIPS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "h100-sxm", "a100-80gb", "b200")
SWEEP_D, SWEEP_F = 8192, 32768
SWEEP_POINTS = 10**6


class BenchError(Exception):
    """A benchmark could not run, or its two sides disagree."""


@dataclass(frozen=True)
class Row:
    """One line of the summary table."""

    name: str
    a: str
    b: str
    compared: str
    target: str
    met: bool


@dataclass(frozen=True)
class Pair:
    """The timings of the two sides of a pair, in the order they were taken."""

    a: list[float]
    b: list[float]

    @property
    def median_a(self) -> float:
        return statistics.median(self.a)

    @property
    def median_b(self) -> float:
        return statistics.median(self.b)

    def describe(self, label_a: str, label_b: str, unit: str = "s") -> str:
        def side(label: str, xs: list[float]) -> str:
            return (f"    {label:<34} median {_num(statistics.median(xs), unit)}  "
                    f"min {_num(min(xs), unit)}  max {_num(max(xs), unit)}  (n={len(xs)})")
        return "\n".join([side(label_a, self.a), side(label_b, self.b)])


def interleave(a: Callable[[], float], b: Callable[[], float], repeats: int,
               warm_up: bool = True) -> Pair:
    """Time ``a`` and ``b`` alternately (ABAB...), after one untimed call of each (unless the
    caller has warmed both up already).

    Each callable does its own set-up and returns the seconds of its timed part."""
    if warm_up:
        a()
        b()
    times_a: list[float] = []
    times_b: list[float] = []
    for _ in range(repeats):
        times_a.append(a())
        times_b.append(b())
    return Pair(times_a, times_b)


def _num(x: float, unit: str) -> str:
    if unit == "s":
        return f"{x:.3f} s" if x >= 0.01 else f"{x * 1e3:.2f} ms"
    return f"{x:.3g} {unit}"


def say(text: str = "") -> None:
    print(text, flush=True)


# ---------------------------------------------------------------- subprocesses


def symroof_command() -> list[str]:
    """The ``symroof`` console script beside this interpreter, else ``python -m symroof``."""
    script = Path(sysconfig.get_path("scripts")) / "symroof"
    return [str(script)] if script.is_file() else [PYTHON, "-m", "symroof"]


def run(command: Sequence[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(command), capture_output=True, text=True, cwd=REPO, check=False)
    if done.returncode not in ok:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {' | '.join(tail)}")
    return done


def timed(command: Sequence[str], ok: tuple[int, ...] = (0,)) -> Callable[[], float]:
    def call() -> float:
        start = time.perf_counter()
        run(command, ok)
        return time.perf_counter() - start
    return call


# ---------------------------------------------------------------- 1. verify


def bench_verify(repeats: int, breakdown: bool = True) -> Row:
    verify = [*symroof_command(), "verify"]
    baseline = [PYTHON, "-c", "import sympy"]
    # the --json run (for the slowest claims) doubles as the warm-up of side A;
    # exit 1 means a claim failed: still a valid timing, reported below
    data = json.loads(run([*verify, "--json"], ok=(0, 1)).stdout)
    run(baseline)
    pair = interleave(timed(verify, ok=(0, 1)), timed(baseline), repeats, warm_up=False)
    ratio = pair.median_a / pair.median_b
    say(f"  {' '.join(verify)}  vs  {' '.join(baseline)}")
    say(pair.describe("symroof verify", "python -c 'import sympy'"))
    # the same without the verdict cache: every claim derived afresh (not a target)
    cold = interleave(timed([*verify, "--no-cache"], ok=(0, 1)), timed(baseline), repeats,
                      warm_up=False)
    say(cold.describe("symroof verify --no-cache", "python -c 'import sympy'"))
    say(f"  without the cache: {cold.median_a / cold.median_b:.1f}x (every claim derived)")

    claims = data["claims"]
    say(f"  verdicts: {data['summary']}")
    if any(c["verdict"] in ("MISMATCH", "STALE", "ERROR", "TIMEOUT") for c in claims):
        say("  note: some claims failed (symroof verify exits 1); the timing still counts")
    slowest = sorted(claims, key=lambda c: c["seconds"] or 0.0, reverse=True)[:10]
    total = sum(c["seconds"] or 0.0 for c in claims)
    say(f"  10 slowest of {len(claims)} claims (one 'symroof verify --json' run; "
        f"all claims together {total:.3f} s):")
    for c in slowest:
        say(f"    {c['seconds']:8.4f} s  {c['derivation']:<24} {c['id']:<30} {c['verdict']}")
    if breakdown:
        _verify_phases()
    return Row("verify (all derivations)", _num(pair.median_a, "s"), _num(pair.median_b, "s"),
               f"{ratio:.1f}x", "<= 5x", ratio <= 5)


def _verify_phases() -> None:
    phases = json.loads(run([PYTHON, str(HERE / "verify_breakdown.py")]).stdout)
    say(f"  where the time goes (one process, {phases['total']:.3f} s in all):")
    say(f"    {phases['import sympy']:8.3f} s  import sympy")
    say(f"    {phases['import symroof.claims.runner']:8.3f} s  import symroof.claims.runner")
    say(f"    {phases['load total']:8.3f} s  load derivations (import + build()):")
    for name, s in sorted(phases["load (import + build) per module"].items(),
                          key=lambda kv: -kv[1]):
        say(f"    {'':8}    {s:8.3f} s  {name}")
    say(f"    {phases['claims total']:8.3f} s  run claims:")
    for name, s in sorted(phases["claims per derivation"].items(), key=lambda kv: -kv[1]):
        say(f"    {'':8}    {s:8.3f} s  {name}")


# ---------------------------------------------------------------- 2. optimize


def bench_optimize(repeats: int) -> Row:
    import sympy as sp
    from sympy.core.cache import clear_cache

    from symroof.engine.optimize import LAMBDA, lagrange

    N, D, C, A, B, E, alpha, beta = sp.symbols("N D C A B E alpha beta", positive=True)
    objective = E + A / N**alpha + B / D**beta
    constraint = sp.Eq(6 * N * D, C)
    result: dict[str, Any] = {}

    def fast() -> float:
        clear_cache()
        start = time.perf_counter()
        result["fast"] = lagrange(objective, constraint, [N, D])
        return time.perf_counter() - start

    def general() -> float:
        clear_cache()
        start = time.perf_counter()
        lagrangian = objective + LAMBDA * (constraint.lhs - constraint.rhs)
        system = [lagrangian.diff(N), lagrangian.diff(D), constraint.lhs - constraint.rhs]
        result["solve"] = sp.solve(system, [N, D, LAMBDA], dict=True)
        return time.perf_counter() - start

    pair = interleave(fast, general, repeats)
    _check_optimum(result["fast"], result["solve"], (N, D), (A, B, C, alpha, beta))
    speedup = pair.median_b / pair.median_a
    say(f"  objective {objective}, constraint {constraint}, method {result['fast'].method}")
    say(pair.describe("lagrange (power-law fast path)", "sympy.solve on the raw system"))
    say(f"  both give N* = {result['fast'].solution[N]}")
    return Row("optimize (Chinchilla, symbolic)", _num(pair.median_a, "s"),
               _num(pair.median_b, "s"), f"{speedup:.1f}x faster", ">= 20x faster",
               speedup >= 20)


CONCRETE_SOLVE = """
import sympy as sp
N, D, C, A, B, lam = sp.symbols("N D C A B lambda", positive=True)
L = A / N**sp.Rational(34, 100) + B / D**sp.Rational(28, 100) + lam * (6 * N * D - C)
print(sp.solve([L.diff(N), L.diff(D), 6 * N * D - C], [N, D, lam], dict=True))
"""


def bench_concrete(limit: float) -> Row:
    """alpha = 0.34, beta = 0.28: the fast path's exact answer, and plain ``sympy.solve``
    in a subprocess given ``limit`` seconds."""
    import sympy as sp
    from sympy.core.cache import clear_cache

    from symroof.engine.optimize import lagrange

    N, D, C, A, B = sp.symbols("N D C A B", positive=True)
    clear_cache()
    start = time.perf_counter()
    opt = lagrange(A / N**sp.Rational(34, 100) + B / D**sp.Rational(28, 100),
                   sp.Eq(6 * N * D, C), [N, D])
    fast = time.perf_counter() - start
    exponents = (opt.exponent(N, C), opt.exponent(D, C))
    if exponents != (sp.Rational(14, 31), sp.Rational(17, 31)):
        raise BenchError(f"the fast path gave exponents {exponents}, not 14/31 and 17/31")
    start = time.perf_counter()
    try:
        subprocess.run([PYTHON, "-c", CONCRETE_SOLVE], capture_output=True, timeout=limit,
                       check=True)
        slow, finished = time.perf_counter() - start, True
    except subprocess.TimeoutExpired:
        slow, finished = limit, False
    outcome = f"finished in {slow:.1f} s" if finished else f"did not finish in {limit:g} s"
    say(f"  alpha = 0.34, beta = 0.28: fast path {fast:.3f} s, exponents 14/31 and 17/31; "
        f"sympy.solve {outcome}")
    return Row("optimize (alpha=0.34, beta=0.28)", _num(fast, "s"),
               _num(slow, "s") if finished else f"> {limit:g} s",
               "solved" if not finished else f"{slow / fast:.0f}x faster",
               f"solve runs past {limit:g} s", not finished)


def _check_optimum(fast: Any, found: list[dict[Any, Any]], xs: tuple[Any, ...],
                   constants: tuple[Any, ...]) -> None:
    """Both sides must find the same stationary point (compared at a numeric point)."""
    import sympy as sp
    if fast.method != "power-law":
        raise BenchError(f"lagrange took the {fast.method!r} path, not the power-law one")
    point = dict(zip(constants, (sp.Rational(406, 1), sp.Rational(411, 1), sp.Float(1e23),
                                 sp.Rational(34, 100), sp.Rational(28, 100)), strict=True))
    mine = [complex(sp.N(fast.solution[x].subs(point))) for x in xs]
    for sol in found:
        theirs = [complex(sp.N(sol[x].subs(point))) for x in xs]
        if all(abs(m - t) <= 1e-9 * abs(m) for m, t in zip(mine, theirs, strict=True)):
            return
    raise BenchError(f"the fast path's optimum {mine} is not among sympy.solve's {found}")


# ---------------------------------------------------------------- 3. sweeps


def sweep_by_lambdify(rl: Any, symbol: Any, values: Any, fixed: Mapping[Any, Any]) -> Any:
    """Attainable FLOP/s of ``rl`` over ``values`` of ``symbol``, other sizes ``fixed``:
    min(peak, intensity x primary bandwidth), the intensity compiled once with lambdify.

    What the proposed ``Roofline.sweep(symbol, values, fixed)`` would do; used while the
    engine has no such helper."""
    import numpy as np
    import sympy as sp
    intensity = sp.lambdify(symbol, rl.intensity.subs(fixed), "numpy")
    peak = float(rl.peak)
    bandwidth = float(rl.bandwidths[rl.primary])
    return np.minimum(peak, intensity(values) * bandwidth)


def bench_sweeps(repeats: int, size: int) -> Row:
    import numpy as np

    from symroof.core.parse import symbol
    from symroof.engine.ops import einsum
    from symroof.engine.rooflines import Roofline, roofline
    from symroof.hardware.catalog import chip

    B, D, F = symbol("B"), symbol("D"), symbol("F")
    fixed = {D: SWEEP_D, F: SWEEP_F}
    op = einsum("B D, D F -> B F", "bf16")
    rooflines = {name: roofline(op, chip(name)) for name in CHIPS}
    helper = getattr(Roofline, "sweep", None)
    engine_sweep: Callable[..., Any]
    if callable(helper):
        def engine_sweep(rl: Any, s: Any, v: Any, f: Any) -> Any:
            return rl.sweep(s, v, f)
        how = "Roofline.sweep"
    else:
        engine_sweep = sweep_by_lambdify
        how = "lambdify(rl.intensity) in the benchmark (no Roofline.sweep helper yet)"
    # what a user of plain NumPy types: the chip's two numbers and the formula
    figures = {name: (float(rl.peak), float(rl.bandwidths[rl.primary]))
               for name, rl in rooflines.items()}
    batch = np.arange(1, size + 1, dtype=np.float64)
    out: dict[str, dict[str, Any]] = {"engine": {}, "numpy": {}}

    def engine() -> float:
        start = time.perf_counter()
        for name, rl in rooflines.items():
            out["engine"][name] = engine_sweep(rl, B, batch, fixed)
        return time.perf_counter() - start

    def by_hand() -> float:
        d, f = float(SWEEP_D), float(SWEEP_F)
        start = time.perf_counter()
        for name, (peak, bw) in figures.items():
            out["numpy"][name] = np.minimum(
                peak, 2 * batch * d * f / (2 * (batch * d + d * f + batch * f)) * bw)
        return time.perf_counter() - start

    pair = interleave(engine, by_hand, repeats)
    for name in CHIPS:
        if not np.allclose(out["engine"][name], out["numpy"][name], rtol=1e-12, atol=0):
            raise BenchError(f"the engine's and NumPy's sweeps differ on {name}")
    points = size * len(CHIPS)
    rate_a, rate_b = points / pair.median_a, points / pair.median_b
    say(f"  {size:.0e} batch sizes x {len(CHIPS)} chips ({', '.join(CHIPS)}), "
        f"D={SWEEP_D}, F={SWEEP_F}; engine via {how}")
    say(pair.describe("engine (compile + evaluate)", "NumPy by hand"))
    say(f"  throughput: engine {rate_a:.3g} points/s, NumPy {rate_b:.3g} points/s; "
        "both sides agree (np.allclose, rtol 1e-12)")
    if not callable(helper):
        compile_only = _compile_time(rooflines, B, fixed)
        say(f"  of which compiling (subs + lambdify, {len(CHIPS)} chips, measured apart): "
            f"median {_num(compile_only, 's')}")
    ratio = rate_a / rate_b
    return Row(f"sweeps ({size:.0e} B x {len(CHIPS)} chips)", f"{rate_a:.3g} pt/s",
               f"{rate_b:.3g} pt/s", f"{ratio:.2f}x", ">= 0.5x", ratio >= 0.5)


def _compile_time(rooflines: Mapping[str, Any], b: Any, fixed: Mapping[Any, Any]) -> float:
    import sympy as sp
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for rl in rooflines.values():
            sp.lambdify(b, rl.intensity.subs(fixed), "numpy")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------- 4. start-up


def bench_startup(repeats: int) -> Row:
    helps = [*symroof_command(), "--help"]
    baseline = [PYTHON, "-c", "pass"]
    pair = interleave(timed(helps), timed(baseline), repeats)
    extra = pair.median_a - pair.median_b
    say(f"  {' '.join(helps)}  vs  {' '.join(baseline)}")
    say(pair.describe("symroof --help", "python -c pass"))
    return Row("startup (symroof --help)", _num(pair.median_a, "s"), _num(pair.median_b, "s"),
               f"+{extra:.3f} s", "<= +0.150 s", extra <= 0.15)


# ---------------------------------------------------------------- 5. model


def bench_model(repeats: int) -> Row:
    import sympy as sp

    from symroof import chip
    from symroof.models import layer_ops, model, step_roofline
    from symroof.models.layers import Block, Step
    cfg, h100 = model("llama-3-70b"), chip("h100-sxm")
    results: dict[str, tuple[sp.Expr, ...]] = {}

    def times(step: Step) -> tuple[sp.Expr, ...]:
        srl = step_roofline(step, h100)
        return srl.t_lower, srl.t_math, srl.t_memory

    def counted() -> float:
        start = time.perf_counter()
        results["counted"] = times(layer_ops(cfg, "decode"))
        return time.perf_counter() - start

    def unrolled() -> float:
        start = time.perf_counter()
        st = layer_ops(cfg, "decode")
        layers = tuple(Block(f"layer {i}", st.blocks[0].ops, sp.S.One)
                       for i in range(cfg.layers))
        results["unrolled"] = times(Step(st.phase, st.batch, st.context, st.tokens,
                                         (*layers, *st.blocks[1:]), st.dtype))
        return time.perf_counter() - start

    pair = interleave(counted, unrolled, repeats)
    if any(sp.expand(a - b) != 0 for a, b in zip(results["counted"], results["unrolled"],
                                                  strict=True)):
        raise BenchError("the counted and the unrolled step differ")
    command = [*symroof_command(), "model", "llama-3-70b", "--decode", "--batch", "64",
               "--context", "1024", "--chip", "h100-sxm", "--json"]
    cli = statistics.median(timed(command)() for _ in range(max(repeats // 4, 1)))
    say(pair.describe("layer ops counted x80", "80 layer copies"))
    say(f"  {' '.join(command[-11:])}: {_num(cli, 's')} (median, subprocess)")
    ratio = pair.median_b / pair.median_a
    return Row("model (80-layer decode, symbolic B, T)", _num(pair.median_a, "s"),
               _num(pair.median_b, "s"), f"{ratio:.1f}x faster", ">= 10x", ratio >= 10)


# ---------------------------------------------------------------- driver


def table(rows: list[Row]) -> str:
    head = ("benchmark", "median A", "median B", "A vs B", "target", "status")
    cells = [head, *((r.name, r.a, r.b, r.compared, r.target, "met" if r.met else "MISSED")
                     for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in cells[1:]]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Measure symroof against its baselines, side by side, in one run.",
        epilog="A is symroof's side of each pair, B the baseline. Exit 0 whether or not the "
               "targets are met; 1 when a benchmark fails to run or its sides disagree.")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="timed repeats of the verify pair (default 5, 2 with --quick); the "
                        "cheaper pairs (optimize, sweeps, startup) take 4N")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 2 repeats (8 for the cheaper pairs) and no phase "
                        "breakdown of verify; well under a minute")
    p.add_argument("--only", metavar="NAMES",
                   help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 5
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
    n = args.repeats
    plans: dict[str, Callable[[], Row]] = {
        "verify": lambda: bench_verify(n, breakdown=not args.quick),
        "optimize": lambda: bench_optimize(4 * n),
        "concrete": lambda: bench_concrete(60 if not args.quick else 5),
        "sweeps": lambda: bench_sweeps(4 * n, SWEEP_POINTS),
        "startup": lambda: bench_startup(4 * n),
        "plans": lambda: Row(*plan_search.bench(n, say)),
        "model": lambda: bench_model(4 * n),
    }
    say(f"symroof benchmarks: Python {sys.version.split()[0]} at {PYTHON}; "
        f"repeats {n} (verify), {4 * n} (others); sides interleaved ABAB after a warm-up")
    rows: list[Row] = []
    errors: list[str] = []
    started = time.perf_counter()
    for name in args.names:
        say(f"\n[{name}]")
        try:
            rows.append(plans[name]())
        except Exception as exc:  # report it, run the rest, exit 1 at the end
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            say(f"  ERROR: {type(exc).__name__}: {exc}")
    say(f"\nSummary (A = symroof, B = baseline; medians; {time.perf_counter() - started:.0f} s "
        "in all)\n")
    if rows:
        say(table(rows))
    missed = [r.name for r in rows if not r.met]
    say()
    if missed:
        say(f"MISSED: {len(missed)} of {len(rows)} targets: {'; '.join(missed)}")
    elif rows:
        say(f"Targets met: {len(rows)} of {len(rows)} measured.")
    for e in errors:
        say(f"ERROR: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
