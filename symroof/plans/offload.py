"""Offloading to host memory: a second memory tier over the chip's host link (PCIe), with
time terms of its own, one per direction of the link.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.strategy import parse_strategy
>>> from symroof.plans.options import StepOptions
>>> from symroof.plans.training import train
>>> p = train(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy("zero2=X"),
...           batch=8, context=4096, options=StepOptions(offload=parse_offload("optimizer")))
>>> p.memory["optimizer"], p.memory["host (offloaded)"]
(0, 10107623424)
>>> p.terms["host link out (pcie)"].phases["backward"]
1645121/62500000
>>> p.terms["host link in (pcie)"].phases["forward"]
1645121/62500000

What moves, per device and step (W the host link's one-way bandwidth, both directions at
once, so each direction is a term of its own that overlaps its phase's compute):

- ``optimizer`` (ZeRO-Offload, Ren et al. 2021): the optimizer state of the device's shard
  lives in host memory and the update runs on the host; the shard's gradients go out during
  the backward pass and its updated working weights come back during the forward pass, once
  per step. The host's update time is not counted.
- ``weights`` (ZeRO-Infinity, Rajbhandari et al. 2021): the device's weights live in host
  memory and stream in layer by layer, in the forward and again in the backward pass of
  every microbatch; HBM keeps one layer's share (the weights over the layers a device holds).
- ``activations``: the activations a step keeps go out as the forward pass makes them and
  come back for the backward pass, every microbatch; HBM keeps one layer's share.

The host memory's capacity is not checked (the catalogue has no figure for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..engine.ops import Op
from ..engine.rooflines import roofline
from ..hardware.catalog import Chip
from .efficiency import PEAK, Efficiency
from .train_step import Term

OFFLOAD_PARTS = ("optimizer", "weights", "activations")
LINK = "pcie"
HOST = "host (offloaded)"
IN, OUT = f"host link in ({LINK})", f"host link out ({LINK})"


def parse_offload(spec: str | None, where: str = "offload") -> tuple[str, ...]:
    """``"optimizer,activations"`` -> the parts offloaded, in a fixed order.

    >>> parse_offload("activations, optimizer")
    ('optimizer', 'activations')
    """
    if spec is None:
        return ()
    parts = [p.strip().lower() for p in spec.split(",")]
    for p in parts:
        if p not in OFFLOAD_PARTS:
            raise InputError(f"cannot offload {p!r} (known: {', '.join(OFFLOAD_PARTS)})", where)
    if len(set(parts)) != len(parts):
        raise InputError(f"{spec!r} names a part twice", where)
    return tuple(k for k in OFFLOAD_PARTS if k in parts)


@dataclass(frozen=True)
class Tier:
    """The host tier of a plan: HBM bytes after offloading (``memory``, with the host's
    bytes under ``host (offloaded)``), the link's terms in each direction, the notes."""

    memory: Mapping[str, Expr]
    terms: Mapping[str, Term]
    notes: tuple[str, ...]


def host_rate(chip: Chip, efficiency: Efficiency = PEAK) -> Expr:
    """Bytes per second one way over ``chip``'s host link at the assumed fraction: one over
    the engine's time of a byte on it (``engine.rooflines.roofline``)."""
    try:
        per_byte = roofline(Op("a byte to the host", 0, comms={LINK: 1}), chip).t_comms[LINK] \
            / efficiency.of(LINK)
    except InputError as exc:
        raise InputError(exc.message, "offload") from None
    return 1 / per_byte


def host_tier(what: tuple[str, ...], memory: Mapping[str, Expr], per: Mapping[str, int],
              chip: Chip, layers: Expr, micro: Expr, in_flight: Expr,
              efficiency: Efficiency) -> Tier:
    """Move ``what`` out of a device's ``memory`` (bytes by part, of ``layers`` layers and
    ``in_flight`` microbatches of activations) to host memory over the chip's host link."""
    bw = host_rate(chip, efficiency)
    hbm = {k: v for k, v in memory.items() if k != "total"}
    host = sp.S.Zero
    moved = {ph: {IN: sp.S.Zero, OUT: sp.S.Zero} for ph in ("forward", "backward")}
    notes = []
    if "optimizer" in what:
        if per["optimizer"] == 0:
            raise InputError("this optimizer keeps no state to offload", "offload")
        shard = memory["optimizer"] / per["optimizer"]
        moved["backward"][OUT] += shard * per["gradients"]
        moved["forward"][IN] += shard * per["weights"]
        host += memory["optimizer"]
        hbm["optimizer"] = sp.S.Zero
        notes.append("optimizer offloaded: its state in host memory, the update on the host "
                     "(not timed); gradients out in the backward pass, updated weights in "
                     "for the forward pass, once per step")
    if "weights" in what:
        host += memory["weights"]
        hbm["weights"] = memory["weights"] / layers
        for ph in moved:
            moved[ph][IN] += micro * memory["weights"]
        notes.append("weights offloaded: streamed in for the forward and the backward pass "
                     "of every microbatch; HBM keeps one layer's share")
    if "activations" in what:
        host += memory["activations"]
        hbm["activations"] = memory["activations"] / layers
        each = micro * memory["activations"] / in_flight
        moved["forward"][OUT] += each
        moved["backward"][IN] += each
        notes.append("activations offloaded: out as the forward pass makes them, in for the "
                     "backward pass, every microbatch; HBM keeps one layer's share (those "
                     "outside the layers, a part of their own, stay)")
    notes.append(f"host link: {LINK} at {sp.sstr(bw)} B/s one way per chip, both directions "
                 "at once; host memory capacity not checked")
    hbm = {k: sp.cancel(v) for k, v in hbm.items()}
    hbm["total"] = sp.Add(*hbm.values())
    hbm[HOST] = sp.cancel(host)
    terms = {}
    for name in (IN, OUT):
        phases = {ph: sp.cancel(moved[ph][name] / bw) for ph in moved
                  if moved[ph][name] != 0}
        if phases:
            terms[name] = Term(name, phases, f"bytes over {LINK} per device / its one-way "
                                             "bandwidth")
    return Tier(hbm, terms, tuple(notes))
