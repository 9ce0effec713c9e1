"""Offloading a serving plan's weights or KV cache to host memory: the host link (PCIe)
streams them in every step, beside the chip's work.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.serving import serve
>>> s = serve(model("llama-2-7b"), mesh("X=1", "h100-sxm"), batch=8, context=2048)
>>> o = offload_serving(s, ("weights",), mesh("X=1", "h100-sxm").chip, layers=32)
>>> o.decode.terms[IN] == s.memory["weights"] / 64_000_000_000
True
>>> o.decode.t_lower == max(s.decode.t_lower, o.decode.terms[IN])
True

What crosses the host link, per device and step (W its one-way bandwidth; the two
directions at once, each a term of its own):

- ``weights``: the device's weights live in host memory and stream in layer by layer in
  every step, prefill and decode alike; HBM keeps one layer's share.
- ``kv``: the KV cache lives in host memory; a decode step reads the device's whole cache in
  and writes each sequence's new position out, a prefill writes the prompts' cache out; HBM
  keeps one layer's share.

The link streams while the chip computes (the next layer's share is fetched during this
one's): a step's T_lower is the larger of its own and each direction's time, its T_upper
their sum. On a pipeline each stage's device streams its own stage's share over its own
link while it runs its layers: a stage's time is the larger of its own and its link's, and
the step's latency and throughput follow its stages (``DeviceStep.stages``). The host
memory's capacity is not checked (the catalogue has no figure for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.units import records
from ..engine.rooflines import binding
from ..hardware.catalog import Chip
from .device_step import DeviceStep, restaged
from .efficiency import PEAK, Efficiency
from .offload import HOST, IN, LINK, OUT, host_rate
from .serving import SERVING_VALUES, Serving, per_request, pipeline_note

SERVING_PARTS = ("weights", "kv")


def parse_serving_offload(spec: str | None, where: str = "offload") -> tuple[str, ...]:
    """``"kv, weights"`` -> the parts a serving plan offloads, in a fixed order.

    >>> parse_serving_offload("kv, weights")
    ('weights', 'kv')
    """
    if spec is None:
        return ()
    parts = [p.strip().lower() for p in spec.split(",")]
    for p in parts:
        if p not in SERVING_PARTS:
            raise InputError(f"a serving plan offloads {' or '.join(SERVING_PARTS)}, not "
                             f"{p!r}", where)
    if len(set(parts)) != len(parts):
        raise InputError(f"{spec!r} names a part twice", where)
    return tuple(k for k in SERVING_PARTS if k in parts)


def _streamed(step: DeviceStep, into: Expr, out: Expr, bw: Expr) -> DeviceStep:
    """``step`` with ``into`` and ``out`` bytes crossing the host link beside it."""
    extra = {name: b / bw for name, b in ((IN, into), (OUT, out)) if b != 0}
    terms = {**step.terms, **extra}
    t_lower = sp.Max(step.t_lower, *extra.values())
    t_upper = step.t_upper + sp.Add(*extra.values())
    return replace(step, terms=terms, t_lower=t_lower, t_upper=t_upper,
                   bound=binding(terms) if t_lower != step.t_lower else step.bound,
                   throughput=step.throughput * step.t_lower / t_lower)


def _staged(step: DeviceStep, into: Mapping[str, Expr], out: Mapping[str, Expr],
            bw: Expr) -> DeviceStep:
    """Pipelined ``step`` with each stage's device moving its own ``into`` and ``out``
    bytes (by stage name) over its own host link while it runs its layers: a stage's time
    the larger of its own and each direction's, the path's terms each direction's times
    along the stages."""
    stages, path = [], {IN: sp.S.Zero, OUT: sp.S.Zero}
    for st in step.stages:
        extra = {name: b[st.name] / bw for name, b in ((IN, into), (OUT, out))
                 if b[st.name] != 0}
        stages.append(replace(st, time=sp.Max(st.time, *extra.values())))
        for name, t in extra.items():
            path[name] += st.count * t
    terms = {**step.terms, **{k: v for k, v in path.items() if v != 0}}
    moved = restaged(step, tuple(stages), terms=terms,
                     t_upper=step.t_upper + path[IN] + path[OUT])
    return replace(moved, bound=binding(terms) if moved.t_lower != step.t_lower
                   else step.bound)


@records(SERVING_VALUES, through={"s": None})
def offload_serving(s: Serving, what: tuple[str, ...], chip: Chip, *, layers: int,
                    efficiency: Efficiency = PEAK) -> Serving:
    """Serving plan ``s`` with ``what`` (``SERVING_PARTS``) in host memory; ``layers`` is
    the model's (a device holds those of its pipeline stage)."""
    if not what:
        return s
    if s.chunked is not None:
        raise InputError("offloading with a chunked prefill is not modelled", "offload")
    bw = host_rate(chip, efficiency)
    pp = s.decode.pipeline  # batches in flight
    layers_held = sp.Rational(layers, pp)
    weights, cache = s.memory["weights"], s.memory["kv_cache"]
    hbm = {k: v for k, v in s.memory.items() if k != "total"}
    host = sp.S.Zero
    notes = []
    if "weights" in what:
        host += weights
        hbm["weights"] = weights / layers_held
        notes.append("weights offloaded: streamed in layer by layer in every prefill and "
                     "decode step; HBM keeps one layer's share")
    if "kv" in what:
        host += cache
        hbm["kv_cache"] = cache / layers_held
        notes.append("KV cache offloaded: a decode step reads the whole cache in and writes "
                     "the new positions out; a prefill writes the prompts' cache out; HBM "
                     "keeps one layer's share")
    notes.append(f"host link: {LINK} at {sp.sstr(bw)} B/s one way per chip, both directions "
                 "at once, streaming while the chip computes; host memory capacity not "
                 "checked; the decode grid is left out")
    hbm = {k: sp.cancel(v) for k, v in hbm.items()}
    hbm["total"] = sp.Add(*hbm.values())
    hbm[HOST] = sp.cancel(host)
    if pp > 1:
        notes.append("with a pipeline, each stage's device moves its own stage's share over "
                     "its own host link while it runs its layers (the first and the last "
                     "stage their head parts too): a stage's time is the larger of its own "
                     "and its link's")
        accounts = {n: x for n, x in {**s.memory_stages, "middle": s.memory_middle}.items()
                    if x}

        def staged(step: DeviceStep) -> DeviceStep:
            moved = {n: _moved(x, what, step.name, s.context) for n, x in accounts.items()}
            return _staged(step, {n: m[0] for n, m in moved.items()},
                           {n: m[1] for n, m in moved.items()}, bw)
        prefill, decode = staged(s.prefill), staged(s.decode)
        # the pipeline's note names the slowest stages the offloaded steps have
        before, after = (pipeline_note(p, d, pp) for p, d in ((s.prefill, s.decode),
                                                               (prefill, decode)))
        said = tuple(after if a == before else a for a in s.assumptions)
    else:
        said = s.assumptions
        prefill, decode = (_streamed(step, *_moved(s.memory, what, step.name, s.context), bw)
                           for step in (s.prefill, s.decode))
    requests = per_request(prefill, decode, s.generate, pp, sp.Integer(s.devices))
    return replace(s, memory=hbm, prefill=prefill, decode=decode,
                   balance=prefill.latency / (s.generate * decode.latency),
                   assumptions=(*said, *notes), grid=(), requests=requests)


def _moved(account: Mapping[str, Expr], what: tuple[str, ...], phase: str,
           context: Expr) -> tuple[Expr, Expr]:
    """The bytes a device holding ``account`` (its weights and KV cache) moves in and out
    over its host link in a ``phase`` step with ``what`` offloaded: the weights in, every
    step; the KV cache read in and each sequence's new position written out by a decode
    step, written out by a prefill.

    >>> held = {"weights": sp.Integer(10), "kv_cache": sp.Integer(64)}
    >>> _moved(held, ("weights", "kv"), "decode", sp.Integer(32)), _moved(
    ...     held, ("kv",), "prefill", sp.Integer(32))
    ((74, 2), (0, 64))
    """
    weights = account["weights"] if "weights" in what else sp.S.Zero
    cache = account["kv_cache"] if "kv" in what else sp.S.Zero
    if phase == "decode":
        return weights + cache, cache / context
    return weights, cache
