"""The fastest Megatron-LM configuration of a model on a cluster: tensor, pipeline and data
parallel sizes, microbatch, interleaving and recomputation, under a calibration.

>>> from symroof.plans.published import published
>>> paper = published("korthikanti2022")
>>> best = search(paper.run("megatron-gpt-22b", "full"))
>>> best.time <= best.baseline, best.tried > 10
(True, True)

Every candidate is costed as ``symroof.plans.megatron.iteration`` costs it (each term's
time is linear in the microbatch and in the layers a stage holds, so one iteration per
tensor size and mode gives them all), plus the data-parallel AllReduce of the fp32
gradients over InfiniBand after the step; it fits when the first stage's parameters and
optimizer state (every parameter counted) and its activations fit in the chip's memory.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from sympy import Expr

from ..hardware.catalog import chip as chip_of
from .efficiency import Efficiency
from .megatron import MODES, Run, interleave_factor, iteration, layer_activation_bytes
from .megatron import parameters_optimizer as states

GRADIENT_BYTES = 4  # fp32 gradients, all-reduced over the data-parallel ranks


@dataclass(frozen=True)
class Found:
    """The chosen run, its time and memory, the given run's time, and how many were tried."""

    run: Run
    time: float
    memory: float
    baseline: float
    tried: int
    fit: int


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def search(given: Run, efficiency: Efficiency | None = None,
           modes: tuple[str, ...] = tuple(MODES)) -> Found:
    """The fastest run of ``given``'s model, GPUs, global batch and sequence that fits,
    under ``efficiency`` (default: the ``megatron-a100`` calibration)."""
    if efficiency is None:
        from .calibration import calibration
        efficiency = calibration("megatron-a100").efficiency()
    eff = efficiency
    cfg, gpus, batch = given.cfg, given.gpus, given.global_batch
    capacity = float(chip_of(given.chip).capacity("hbm"))
    per_mode: dict[tuple[int, str], tuple[float, float, float]] = {}
    best: tuple[float, float, Run] | None = None
    tried = fit = 0
    for t, mode in itertools.product((1, 2, 4, 8), modes):
        if gpus % t or cfg.heads % t:
            continue
        unit = replace(given, tensor=t, pipeline=1, data=1, global_batch=1, micro_batch=1,
                       interleave=1, mode=mode)
        it = iteration(unit)
        slot = {x.resource: 0.0 for x in it.per_microbatch}
        for x in it.per_microbatch:
            slot[x.resource] += float(x.time / eff.of(x.resource))
        # one microbatch's send per model chunk and direction, of its [s, b, h] / t
        send = float(2 * 2 * given.sequence * cfg.d_model / t
                     / (given.ib_per_gpu * eff.of("ib")))
        per_layer = float(layer_activation_bytes(unit))
        per_mode[t, mode] = (sum(slot.values()), send, per_layer)
        for p in _divisors(cfg.layers):
            if (gpus // t) % p:
                continue
            d = gpus // (t * p)
            for b, v in itertools.product(_divisors(batch // d) if batch % d == 0 else [],
                                          _divisors(cfg.layers // p)):
                if v > 1 and (p == 1 or v > 4):
                    continue
                run = replace(unit, pipeline=p, data=d, global_batch=batch, micro_batch=b,
                              interleave=v)
                tried += 1
                slot_time, send, act = per_mode[t, mode]
                memory = float(states(run, "exact")) + act * b * cfg.layers * float(
                    interleave_factor(run))
                if memory > capacity:
                    continue
                fit += 1
                time = _time(run, slot_time, send, eff)
                if best is None or (time, memory) < best[:2]:
                    best = (time, memory, run)
    baseline = float(iteration(given).time(eff)) + _allreduce(given, eff)
    assert best is not None, "the given run is among the candidates"
    return Found(best[2], best[0], best[1], baseline, tried, fit)


def _time(run: Run, slot: float, send: float, eff: Efficiency) -> float:
    p, v, m = run.pipeline, run.interleave, run.microbatches
    per_micro = slot * run.micro_batch / p + (send * run.micro_batch * v if p > 1 else 0.0)
    hbm = float(chip_of(run.chip).bandwidth("hbm")) * float(eff.of("hbm"))
    optimizer = 30 * float(states(run, "exact")) / 18 / hbm
    return (m + (p - 1) / v) * per_micro + optimizer + _allreduce(run, eff)


def _allreduce(run: Run, eff: Efficiency) -> float:
    """The data-parallel ring AllReduce of the stage's fp32 gradients over InfiniBand."""
    d = run.data
    if d == 1:
        return 0.0
    grads: Expr = GRADIENT_BYTES * states(run, "exact") / 18
    return float(2 * (d - 1) / d * grads / (run.ib_per_gpu * eff.of("ib")))
