"""What the training search adds to each candidate beyond compute and HBM: its collectives'
cost per byte and latency on the axes they run over (a ring, or with ``in_network`` an
AllReduce reduced in the switch of one switched network), and an offload's host tier.

>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=8", "h100-sxm")
>>> ring, nvls = Costs(), Costs(in_network=True)
>>> sig = (signature(m, "X"),)
>>> ring.get("allreduce", ("X",), m, sig)[0] / nvls.get("allreduce", ("X",), m, sig)[0]
1.75

The host tier is ``plans.offload.host_tier``'s, derived once with the memory parts, the
layers a device holds and the microbatches as symbols and compiled for NumPy, so the search
and the plan it rebuilds share one formula.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import sympy as sp

from ..engine.sweeps import to_numpy
from ..hardware.catalog import Chip
from ..models.memory import OUTSIDE_PART
from ..parallel.collectives import collective
from ..parallel.in_network import in_switch_algorithm
from ..parallel.mesh import Mesh
from .efficiency import PEAK, Efficiency

PARTS = ("weights", "gradients", "optimizer", "activations", OUTSIDE_PART)


class Costs:
    """Seconds per byte and latency of a collective over axes, by what the axes are; each
    byte at ``efficiency``'s fraction of its links or of its strategy kind (``label``),
    the least of them (``plans.training``'s rule)."""

    def __init__(self, in_network: bool = False, efficiency: Efficiency = PEAK) -> None:
        self.in_network = in_network
        self.efficiency = efficiency
        self.cache: dict[tuple[Any, ...], tuple[float, float]] = {}
        self.exact: dict[tuple[Any, ...], tuple[sp.Expr, sp.Expr, tuple[str, ...]]] = {}
        self.unknown: set[str] = set()
        self.algorithms: set[str] = set()

    def get(self, kind: str, axes: tuple[str, ...], m: Mesh,
            signature: tuple[Any, ...], label: str = "") -> tuple[float, float]:
        key = (kind, signature, label)
        if key not in self.cache:
            if (kind, signature) not in self.exact:  # the collective once for every label
                how = "ring"
                if self.in_network and kind == "allreduce":
                    how = in_switch_algorithm([m.axis(a) for a in axes]) or "ring"
                    self.algorithms.add(how)
                c = collective(kind, 1, list(axes), m, how)  # linear in the bytes: one byte's
                latency = c.latency_time
                for sym in latency.free_symbols:
                    self.unknown.add(str(sym))
                latency = latency.subs({s: 0 for s in latency.free_symbols})
                self.exact[kind, signature] = (c.bandwidth_time, latency,
                                               tuple(c.bandwidths()))
            bandwidth, latency, links = self.exact[kind, signature]
            f = min((self.efficiency.of(x) for x in (*links, label)), default=sp.S.One)
            self.cache[key] = (float(bandwidth / f), float(latency))
        return self.cache[key]


def signature(m: Mesh, name: str) -> tuple[Any, ...]:
    """What an axis's collectives' costs depend on."""
    a = m.axis(name)
    return (a.size, a.kind, a.link.name, a.wraps, a.bidirectional, a.bandwidth, a.latency,
            tuple((p.size, p.kind, p.link.name, p.bandwidth) for p in a.parts))


def offload_functions(what: tuple[str, ...], per: Mapping[str, int], chip: Chip,
                      efficiency: Efficiency,
                      ) -> tuple[Callable[..., Any], dict[tuple[str, str], Callable[..., Any]],
                                 tuple[str, ...]]:
    """NumPy functions of (weights, gradients, optimizer, activations, layers per device,
    microbatches, microbatches in flight): the HBM total after offloading ``what``, and
    each host-link term's time by (term, phase); and the tier's notes."""
    from .offload import host_tier
    parts = {k: sp.Symbol(f"mem_{k}", nonnegative=True) for k in PARTS}
    layers, micro, flight = sp.symbols("layers micro flight", positive=True)
    tier = host_tier(what, {**parts, "total": sp.Add(*parts.values())}, per, chip, layers,
                     micro, flight, efficiency)
    args = (*parts.values(), layers, micro, flight)
    total = _numpy(tier.memory["total"], args)
    terms = {(name, ph): _numpy(v, args) for name, t in tier.terms.items()
             for ph, v in t.phases.items()}
    return total, terms, tier.notes


def _numpy(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> Callable[..., Any]:
    raw = to_numpy(args, expr)

    def fn(*values: Any) -> Any:
        return np.broadcast_to(np.asarray(raw(*values), dtype=np.float64),
                               np.shape(values[-1]))
    return fn
