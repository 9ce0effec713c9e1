"""Figures for the vocabulary of systems: the latency and bandwidth regimes of a collective,
the per-layer roofline of a model's step, and a plan's step time against batch per strategy.

>>> from symroof.parallel.collectives import collective
>>> from symroof.parallel.mesh import mesh
>>> fig = collective_figure(collective("allgather", "V", "X", mesh("X=16", "tpu-v5e")))
>>> [s.label for s in fig.series], fig.marks
(['bandwidth term', 'latency term', 'time'], ((768000.0, 'latency = bandwidth'),))

The figure lays out what the collective holds (its two terms, exact, sampled); the
crossover is the collective's own ``latency_bound_below``.
"""

from __future__ import annotations

import sympy as sp

from ..core.errors import InputError
from ..models.step_roofline import StepRoofline
from ..parallel.collectives import Collective
from ..plans.training import Plan
from .plots import SAMPLES, FigureData, Series, roof_label


def collective_figure(c: Collective, span: tuple[float, float] | None = None) -> FigureData:
    """Time of a collective against its size (log-log): the bandwidth term, the latency
    term and their sum, with the size where they meet marked."""
    free = sorted(c.nbytes.free_symbols, key=str)
    if len(free) != 1:
        raise InputError(f"a figure of {c.title} needs its size in one symbol, got "
                         f"{', '.join(map(str, free)) or 'a number'}")
    size = free[0]
    latency = c.latency_time
    crossover = c.latency_bound_below
    if not latency.is_number or crossover is None or not crossover.is_number:
        raise InputError(f"{c.title}: the latency term must be a number to draw it (the "
                         "chip's sources give no per-hop latency for this link)")
    cross = float(crossover)
    lo, hi = span or (cross / 1000, cross * 1000)
    xs = tuple(lo * (hi / lo) ** (k / (SAMPLES - 1)) for k in range(SAMPLES))
    per = sp.lambdify(size, c.bandwidth_time, "math")
    band = tuple(float(per(x)) for x in xs)
    lat = tuple(float(latency) for _ in xs)
    total = tuple(b + t for b, t in zip(band, lat, strict=True))
    series = (Series("bandwidth term", xs, band, style=1),
              Series("latency term", xs, lat, style=2),
              Series("time", xs, total, style=0))
    title = f"{c.title} on {c.mesh.chip.name}"
    return FigureData(f"collective-{c.kind}-{''.join(c.axes)}", "collective",
                      {"title": title, "size": str(size), "crossover": f"{cross:.4g}"},
                      f"{size} (bytes)", series, ((cross, "latency = bandwidth"),),
                      ylabel="time (s)", title=title)


def step_figure(srl: StepRoofline) -> FigureData:
    """The roofline of a model's step: the chip's roof for the matrix unit against HBM,
    every op of the step as a point at its intensity, and the step itself.

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> from symroof.models.step_roofline import layer_ops, step_roofline
    >>> step = layer_ops(model("llama-2-7b"), "decode", batch=8, context=1024)
    >>> fig = step_figure(step_roofline(step, chip("a100-80gb")))
    >>> fig.series[0].label.startswith("mxu bf16"), len(fig.series)
    (True, 11)
    """
    matmuls = [r for r in srl.rows if r.roofline.compute == "mxu"]
    if not matmuls:
        raise InputError("the step has no matrix-unit op to draw its roof from")
    roof = matmuls[0].roofline
    peak, bw = roof.peak, roof.bandwidths[roof.primary]
    if not all(x.is_number for x in (peak, bw, srl.intensity)):
        raise InputError("a step's roofline figure needs concrete batch and context")
    ridge = float(peak / bw)
    points = [(r.op.name, float(r.roofline.intensity), float(r.roofline.attainable), k)
              for k, r in enumerate(srl.rows, 1) if r.roofline.intensity.is_number
              and r.roofline.intensity > 0]
    step_i = float(srl.intensity)
    xs = [p[1] for p in points] + [step_i, ridge]
    lo, hi = min(xs) / 10, max(xs) * 10
    series = [Series(f"{roof_label(roof)} (ridge {ridge:.4g})", (lo, ridge, hi),
                     (lo * float(bw), float(peak), float(peak)))]
    series += [Series(name, (i,), (a,), points=True, style=k) for name, i, a, k in points]
    series.append(Series(f"whole step (intensity {step_i:.4g})", (step_i,),
                         (min(float(peak), step_i * float(bw)),), points=True, style=0))
    step = srl.step
    title = f"{step.phase} step, batch {step.batch}, context {step.context}, on {srl.chip.name}"
    return FigureData(f"step-{step.phase}-{srl.chip.name}", "step", {"title": title},
                      "arithmetic intensity (FLOP/byte)", tuple(series),
                      ((ridge, "ridge"),), ylabel="attainable FLOP/s", title=title)


def batch_figure(plans: list[Plan]) -> FigureData:
    """Step time (T_lower, and T_upper dashed) against batch, one line per strategy, from
    plans already derived at each batch.

    >>> from symroof.models import model
    >>> from symroof.parallel.mesh import mesh
    >>> from symroof.plans.strategy import parse_strategy
    >>> from symroof.plans.training import train
    >>> m = mesh("X=16", "tpu-v5e")
    >>> plans = [train(model("llama-2-7b"), m, parse_strategy(s), batch=b, context=1024)
    ...          for s in ("fsdp=X", "tp=X") for b in (16, 64)]
    >>> [s.label for s in batch_figure(plans).series]
    ['fsdp=X', 'fsdp=X (upper)', 'tp=X', 'tp=X (upper)']
    """
    if not plans:
        raise InputError("a batch figure needs at least one plan")
    by: dict[str, list[Plan]] = {}
    for p in plans:
        if not (p.batch.is_number and p.t_lower.is_number and p.t_upper.is_number):
            raise InputError(f"plan {p.strategy}: batch and times must be numbers to draw")
        by.setdefault(p.strategy, []).append(p)
    series: list[Series] = []
    for k, (strategy, group) in enumerate(by.items()):
        group.sort(key=lambda p: float(p.batch))
        xs = tuple(float(p.batch) for p in group)
        series.append(Series(strategy, xs, tuple(float(p.t_lower) for p in group), style=k,
                             dash=0))
        series.append(Series(f"{strategy} (upper)", xs,
                             tuple(float(p.t_upper) for p in group), style=k, dash=1))
    first = plans[0]
    title = f"{first.mode} {first.model} on {first.mesh} {first.chip}: step time"
    return FigureData(f"plan-{first.model}-{first.chip}", "plan", {"title": title},
                      "batch (sequences per step)", tuple(series), ylabel="step time (s)",
                      title=title)
