"""The engine in one process: the growth of roofline + threshold with the number of ops
(matmul chains of distinct widths, an 80-layer model's decode step of about 1,000 ops),
sweeps against NumPy on the same formula, and the optimiser against ``sympy.solve``."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from functools import partial
from typing import Any

from common import PYTHON, BenchError, Row, describe, fresh, interleave, median, num, say

CHAIN_SIZES = (1, 10, 50, 200)


def chain(n: int) -> Any:
    """``n`` matmuls ``B W_i, W_i W_i+1 -> B W_i+1``: every width a symbol of its own."""
    from symroof.engine.ops import einsum, sequence
    return sequence(*(einsum(f"B W{i}, W{i} W{i + 1} -> B W{i + 1}", "bf16")
                      for i in range(n)))


OUTCOMES: dict[str, str] = {}


def roofline_and_threshold(op: Any) -> float:
    """Seconds to derive the roofline and the threshold in B (or to prove there is none:
    a decode step that reads a KV cache per sequence never turns compute-bound)."""
    from symroof.core.errors import DerivationError
    from symroof.engine.rooflines import roofline
    from symroof.engine.thresholds import threshold
    from symroof.hardware.catalog import chip
    fresh()
    start = time.perf_counter()
    try:
        found = threshold(roofline(op, chip("tpu-v5e")), "B")
        OUTCOMES[op.name] = f"B {found.direction} {found.exact}" if found.exact.is_number \
            else "B > a threshold in the widths"
    except DerivationError as exc:
        OUTCOMES[op.name] = f"no threshold ({exc.message.split(':')[0]})"
    return time.perf_counter() - start


def bench_growth(repeats: int) -> list[Row]:
    """Roofline + threshold in B for chains of 1, 10, 50, 200 ops (SymPy's cache cleared
    before each), sizes in rotation."""
    ops = [chain(n) for n in CHAIN_SIZES]
    times = interleave([partial(roofline_and_threshold, o) for o in ops], repeats)
    say("  roofline + threshold(B), distinct-width matmul chains, caches cleared each time")
    rows, previous = [], None
    for n, xs in zip(CHAIN_SIZES, times, strict=True):
        m = median(xs)
        growth = ""
        if previous is not None:
            k = n / previous[0]
            nlogn = k * math.log(n) / max(math.log(previous[0]), 1)
            growth = f"x{m / previous[1]:.1f} for x{k:g} ops (n log n: x{nlogn:.1f})"
        say(describe(f"{n} ops", xs) + (f"  {growth}" if growth else ""))
        target = {50: 1.0, 200: 5.0}.get(n)
        rows.append(Row(f"chain of {n} ops: roofline + threshold", num(m), f"{num(m / n)} per op",
                        growth, f"< {target:g} s" if target else "",
                        (m < target) if target else None))
        previous = (n, m)
    return rows


def on_mxu(op: Any) -> Any:
    """A whole step charged at the matrix unit (as ``symroof.models`` charges a step)."""
    from dataclasses import replace
    return replace(op, compute="mxu")


def decode_graph() -> tuple[Any, int, str]:
    """An 80-layer model's decode step unrolled op by op: llama-3-70b's real layer ops
    (symroof.models) repeated for each of its 80 layers, the batch symbolic."""
    from symroof.engine.ops import sequence
    from symroof.models.hf import model
    from symroof.models.layers import layer_ops
    cfg = model("llama-3-70b")
    step = layer_ops(cfg, "decode", context=4096)
    ops = [o.renamed(f"{b.name} {i}: {o.name}") for b in step.blocks
           for i in range(int(b.count)) for o in b.ops]
    return on_mxu(sequence(*ops)), len(ops), \
        f"llama-3-70b decode, context 4096, {cfg.layers} layers"


def synthetic_graph(layers: int = 80) -> tuple[Any, int, str]:
    """The same shape with symbols: 12 ops per layer (norm, q/k/v/o projections, scores,
    softmax, weighted sum, MLP norm, up, gate, down), each layer with widths of its own."""
    from symroof.core.sizes import sizes
    from symroof.engine.ops import einsum, elementwise, sequence
    from symroof.engine.ops import op as by_hand
    B, T = sizes("B T")
    ops = []
    for l in range(layers):  # noqa: E741
        d, h = sizes(f"D{l} H{l}")
        ops += [elementwise(f"norm {l}", B * d, flops_per_element=4),
                einsum(f"B D{l}, D{l} H{l} -> B H{l}", name=f"q {l}"),
                einsum(f"B D{l}, D{l} H{l} -> B H{l}", name=f"k {l}"),
                einsum(f"B D{l}, D{l} H{l} -> B H{l}", name=f"v {l}"),
                by_hand(f"scores {l}", 2 * B * T * h, 2 * B * h + 2 * B * T * h,
                        writes=2 * B * T),
                elementwise(f"softmax {l}", B * T, flops_per_element=5),
                by_hand(f"weighted sum {l}", 2 * B * T * h, 2 * B * T + 2 * B * T * h,
                        writes=2 * B * h),
                einsum(f"B H{l}, H{l} D{l} -> B D{l}", name=f"o {l}"),
                elementwise(f"MLP norm {l}", B * d, flops_per_element=4),
                einsum(f"B D{l}, D{l} F{l} -> B F{l}", name=f"up {l}"),
                einsum(f"B D{l}, D{l} F{l} -> B F{l}", name=f"gate {l}"),
                einsum(f"B F{l}, F{l} D{l} -> B D{l}", name=f"down {l}")]
    return on_mxu(sequence(*ops)), len(ops), \
        f"synthetic, {layers} layers x 12 ops, widths per layer"


def bench_model(repeats: int) -> list[Row]:
    rows = []
    for build in (decode_graph, synthetic_graph):
        start = time.perf_counter()
        op, count, what = build()
        built = time.perf_counter() - start
        (xs,) = interleave([partial(roofline_and_threshold, op)], repeats)
        say(f"  {what}: {count} ops, built and summed in {num(built)}; "
            f"{OUTCOMES.get(op.name, '')}")
        say(describe("roofline + threshold(B)", xs))
        rows.append(Row(f"{count}-op graph ({what.split(',')[0]})", num(median(xs)),
                        f"{num(median(xs) / count)} per op", "", "", None))
    return rows


def bench_sweeps(sizes: tuple[int, ...], budget: float) -> list[Row]:
    """Attainable FLOP/s of a matmul over B at D = 8192, F = 32768 on TPU v5e: Roofline.sweep
    (compiled once, cached) vs NumPy evaluating the same simplified formula, written out."""
    import numpy as np
    import sympy as sp

    from symroof.core.parse import symbol
    from symroof.engine.ops import einsum
    from symroof.engine.rooflines import roofline
    from symroof.hardware.catalog import chip
    rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
    fixed = {"D": 8192, "F": 32768}
    formula = rl.intensity.subs({symbol("D"): 8192, symbol("F"): 32768})
    num_, den = sp.fraction(formula)  # c1*B / (c2*B + c3): read the constants off it
    c1 = float(num_ / symbol("B"))
    c2, c3 = (float(den.coeff(symbol("B"))), float(den.subs(symbol("B"), 0)))
    peak, bw = float(rl.peak), float(rl.bandwidths["hbm"])
    say(f"  the formula both sides evaluate: min({rl.peak}, {formula} * {rl.bandwidths['hbm']})")
    rows = []
    for n in sizes:
        x = np.arange(1, n + 1, dtype=np.float64)
        loops = max(1, int(2e6 // n))
        out: dict[str, Any] = {}

        def engine(x: Any = x, loops: int = loops, out: dict[str, Any] = out) -> float:
            start = time.perf_counter()
            for _ in range(loops):
                out["engine"] = rl.sweep("B", x, fixed)
            return (time.perf_counter() - start) / loops

        def by_hand(x: Any = x, loops: int = loops, out: dict[str, Any] = out) -> float:
            start = time.perf_counter()
            for _ in range(loops):
                out["numpy"] = np.minimum(peak, c1 * x / (c2 * x + c3) * bw)
            return (time.perf_counter() - start) / loops

        repeats = max(5, min(41, int(budget / max(n * 2e-8 * loops, 1e-3))))
        a, b = interleave([engine, by_hand], repeats)
        if not np.allclose(out["engine"], out["numpy"], rtol=1e-12, atol=0):
            raise BenchError(f"the engine's and NumPy's sweeps differ at {n} points")
        ratio, extra = median(b) / median(a), median(a) - median(b)
        say(describe(f"Roofline.sweep, {n:.0e} points (per call)", a))
        say(describe(f"NumPy, same formula, {n:.0e} points", b))
        target = (">= 0.8x", ratio >= 0.8) if n >= 10**7 else \
            ("<= +50 us", extra <= 50e-6) if n <= 1000 else ("", None)
        rows.append(Row(f"sweep {n:.0e} points", num(median(a)), f"NumPy {num(median(b))}",
                        f"{ratio:.2f}x ({'+' if extra >= 0 else '-'}{num(abs(extra))})",
                        target[0], target[1]))
    return rows


SOLVE = """
import sympy as sp
xs = sp.symbols("{xs}", positive=True)
cs = sp.symbols("{cs}", positive=True)
es = {exps}
C, lam = sp.symbols("C lambda", positive=True)
f = sum(c / x**e for c, x, e in zip(cs, xs, es))
g = 6 * sp.Mul(*xs) - C
L = f + lam * g
print(len(sp.solve([L.diff(x) for x in xs] + [g], [*xs, lam], dict=True)))
"""


def _bounded(command: list[str], limit: float) -> tuple[float, bool]:
    """Seconds ``command`` took and whether it finished within ``limit``; past the limit,
    or if this process is stopped meanwhile, it is killed with everything it started."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        _, err = child.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        return limit, False
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    if child.returncode != 0:
        raise BenchError(f"sympy.solve failed: {err.decode(errors='replace').strip()[-200:]}")
    return time.perf_counter() - start, True


def bench_optimize(limit: float) -> list[Row]:
    """The power-law fast path vs ``sympy.solve`` on the same stationarity system, 2 to 4
    variables, symbolic exponents, and 2 variables with alpha = 0.34, beta = 0.28; solve
    runs in a subprocess given ``limit`` seconds."""
    import sympy as sp

    from symroof.core.sizes import sizes
    from symroof.engine.optimize import lagrange
    rows = []
    cases = [(n, None) for n in (2, 3, 4)] + [(2, ("sp.Rational(34, 100)",
                                                    "sp.Rational(28, 100)"))]
    for n, concrete in cases:
        xs, cs = sizes(" ".join("NDPQ"[:n])), sizes(" ".join("ABGH"[:n]))
        es = sizes(" ".join(("alpha", "beta", "gamma", "delta")[:n])) if concrete is None \
            else (sp.Rational(34, 100), sp.Rational(28, 100))
        objective = sp.Add(*(c / x**e for c, x, e in zip(cs, xs, es, strict=True)))
        budget = sp.Eq(6 * sp.Mul(*xs), sizes("C")[0])
        times = []
        for _ in range(5):
            fresh()
            start = time.perf_counter()
            opt = lagrange(objective, budget, xs)
            times.append(time.perf_counter() - start)
        if opt.method != "power-law":
            raise BenchError(f"{n} variables took the {opt.method} path")
        exps = f"sp.symbols('{' '.join(map(str, es))}', positive=True)" if concrete is None \
            else f"({', '.join(concrete)})"
        script = SOLVE.format(xs=" ".join(map(str, xs)), cs=" ".join(map(str, cs)), exps=exps)
        slow, finished = _bounded([PYTHON, "-c", script], limit)
        what = f"{n} variables, " + ("symbolic exponents" if concrete is None
                                      else "alpha=0.34, beta=0.28")
        fast = median(times)
        outcome = f"{num(slow)} (fresh process)" if finished else f"did not finish in {limit:g} s"
        say(f"  {what}: fast path median {num(fast)}; sympy.solve {outcome}")
        rows.append(Row(f"optimum, {what}", num(fast),
                        f"sympy.solve {num(slow)}" if finished else f"solve > {limit:g} s",
                        f"{slow / fast:.0f}x faster" if finished else "solved; solve not",
                        "", None))
    return rows
