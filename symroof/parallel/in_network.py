"""In-network reduction: an AllReduce the switch sums (NVLink SHARP, "NVLS", on an NVSwitch;
SHARP on an InfiniBand switch), an algorithm beside the ring.

>>> from symroof.parallel.mesh import mesh
>>> from symroof.parallel.collectives import collective
>>> m = mesh("X=8", "h100-sxm")
>>> nvls = collective("allreduce", "V", "X", m, algorithm="nvls")
>>> ring = collective("allreduce", "V", "X", m)
>>> nvls.bytes_per_device, nvls.bandwidth_time, nvls.hops
(V, V/450000000000, 2)
>>> ring.bytes_per_device, ring.bandwidth_time, ring.hops
(7*V/4, 7*V/1800000000000, 14)

The model is the idealised in-switch reduction: every device sends its V bytes to the
switch once and receives the reduced V bytes once, both directions of its port at once, so
the bandwidth term is V / W (the ring's is 2 (n-1)/n V / W, equal at n = 2 and larger
above) and the latency is two steps, one up to the switch and one down, whatever n (the
ring's is 2 (n-1)). V / W is also the least any AllReduce can take through a port of W
bytes per second each way: every byte of the sum depends on the other devices' data, so each
device receives at least V bytes; the switch attains that bound. NCCL's NVLS kernels split
V into n parts loaded with a reduction and stored with a multicast, which moves a further
V/n each way; that is not counted here.
The switch does the additions, so no reduction FLOPs fall on a device either way.

It runs on one switched network: an axis of ``switch`` kind (NVSwitch) for ``nvls``, of
``scale-out`` kind (an InfiniBand fabric) for ``sharp``; an axis that spans two networks, or
a ring, is refused with the axis named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy as sp

from ..core.errors import InputError

if TYPE_CHECKING:
    from .mesh import Axis
    from .rings import Stage

ALGORITHMS = ("ring", "tree", "nvls", "sharp")
#: the axis kind each in-switch algorithm runs on
NETWORK = {"nvls": "switch", "sharp": "scale-out"}
SOURCES = {"nvls": "NVIDIA, NVLink SHARP in the third-generation NVSwitch (Hopper), "
                   "NCCL 2.17 NVLS algorithm",
           "sharp": "Graham et al. 2016, Scalable Hierarchical Aggregation Protocol (SHArP)"}
#: latency steps of one in-switch AllReduce: up to the switch, down from it
STEPS = 2
# how each AllReduce-only algorithm reduces, for the error that refuses another collective
REDUCES = {"tree": "reduces up a tree", "nvls": "reduces in the switch",
           "sharp": "reduces in the switch"}


def canonical_algorithm(name: str, where: str | None = "algorithm") -> str:
    """``NVLS`` -> ``nvls``; an unknown name is an input error naming the known ones.

    >>> canonical_algorithm("SHARP")
    'sharp'
    """
    key = name.strip().lower().replace("-", "").replace("_", "")
    if key not in ALGORITHMS:
        raise InputError(f"unknown collective algorithm {name!r} (known: "
                         f"{', '.join(ALGORITHMS)})", where)
    return key


def in_switch_algorithm(axes: list[Axis]) -> str | None:
    """The in-switch algorithm an AllReduce over ``axes`` can use: ``nvls`` on one NVSwitch
    network, ``sharp`` on one scale-out network, None otherwise (a ring, or two networks).

    >>> from symroof.parallel.mesh import mesh
    >>> m = mesh("X=32,Y=8", "h100-sxm")
    >>> in_switch_algorithm([m.axis("Y")]), in_switch_algorithm([m.axis("X"), m.axis("Y")])
    ('nvls', None)
    """
    nets = [s for a in axes for s in a.stages() if s.size != 1]
    if len(nets) != 1:
        return None
    return next((k for k, kind in NETWORK.items() if kind == nets[0].kind), None)


def allreduce_only(algorithm: str, kind: str) -> None:
    """An AllReduce-only ``algorithm`` refuses another collective ``kind``, naming both."""
    if kind != "allreduce":
        raise InputError(f"{algorithm} {REDUCES[algorithm]}: it runs an AllReduce only, not "
                         f"{kind}", "algorithm")


def one_network(algorithm: str, kind: str, axes: list[Axis]) -> list[tuple[str, Any]]:
    """(axis, its stage) of the one network an AllReduce-only ``algorithm`` runs on; another
    collective, or axes over two networks, is an input error naming them."""
    allreduce_only(algorithm, kind)
    nets = [(a.name, s) for a in axes for s in a.stages() if s.size != 1]
    if len(nets) > 1:
        raise InputError(f"{algorithm} runs on one switched network; axes "
                         f"{''.join(a.name for a in axes)} cross {len(nets)} networks "
                         f"({', '.join(s.link.name for _, s in nets)})", "algorithm")
    return nets


def in_switch_stages(algorithm: str, kind: str, v: sp.Expr,
                     axes: list[Axis]) -> tuple[Stage, ...]:
    """The stages of an in-switch AllReduce of V bytes over ``axes``: one per axis."""
    from .rings import Stage
    wanted = NETWORK[algorithm]
    out = []
    for name, s in one_network(algorithm, kind, axes):
        if s.kind != wanted:
            raise InputError(f"{algorithm} needs a {wanted} axis; axis {name} is a {s.kind} "
                             f"over {s.link.name}", "algorithm")
        out.append(Stage(name, s.size, s.link.name, s.bandwidth, v, v, sp.Integer(STEPS),
                         s.latency))
    return tuple(out)
