"""An 80-layer model's decode step with symbolic batch and context (LLaMA-3-70B on H100:
every op's roofline, the summed T_lower, T_math and T_memory) with one layer's ops built
once and counted 80 times, against the same step unrolled into 80 copies of the layer; both
must agree exactly; target: at least 10x faster. Also times ``symroof model llama-3-70b
--decode ... --json`` (a subprocess)."""

from __future__ import annotations

import time
from typing import Any

from common import (
    BenchError,
    Row,
    describe,
    fresh,
    interleave,
    median,
    num,
    say,
    symroof_command,
    timed,
)


def bench_model_step(repeats: int) -> list[Row]:
    import sympy as sp

    from symroof import chip
    from symroof.models import layer_ops, model, step_roofline
    from symroof.models.layers import Block, StepOps
    cfg, h100 = model("llama-3-70b"), chip("h100-sxm")
    results: dict[str, tuple[Any, ...]] = {}

    def times(step: StepOps) -> tuple[Any, ...]:
        srl = step_roofline(step, h100)
        return srl.t_lower, srl.t_math, srl.t_memory

    def counted() -> float:
        fresh()
        start = time.perf_counter()
        results["counted"] = times(layer_ops(cfg, "decode"))
        return time.perf_counter() - start

    def unrolled() -> float:
        fresh()
        start = time.perf_counter()
        st = layer_ops(cfg, "decode")
        layers = tuple(Block(f"layer {i}", st.blocks[0].ops, sp.S.One)
                       for i in range(cfg.layers))
        results["unrolled"] = times(StepOps(st.phase, st.batch, st.context, st.tokens,
                                         (*layers, *st.blocks[1:]), st.dtype))
        return time.perf_counter() - start

    a, b = interleave([counted, unrolled], repeats)
    if any(sp.expand(x - y) != 0 for x, y in zip(results["counted"], results["unrolled"],
                                                  strict=True)):
        raise BenchError("the counted and the unrolled step differ")
    command = [*symroof_command(), "model", "llama-3-70b", "--decode", "--batch", "64",
               "--context", "1024", "--chip", "h100-sxm", "--json"]
    cli = median([timed(command)() for _ in range(max(repeats // 4, 1))])
    say(describe("layer ops counted x80", a))
    say(describe("80 layer copies", b))
    say(f"  {' '.join(command[-11:])}: {num(cli)} (median, subprocess)")
    ratio = median(b) / median(a)
    return [Row("model step (80-layer decode, symbolic B, T)", num(median(a)), num(median(b)),
                f"{ratio:.1f}x faster", ">= 10x", ratio >= 10)]
