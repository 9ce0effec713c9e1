"""Tree AllReduce: NCCL's double binary tree, an algorithm beside the ring and the in-switch
reduction.

>>> from symroof.parallel.mesh import mesh
>>> from symroof.parallel.collectives import collective
>>> m = mesh("X=8", "h100-sxm")
>>> tree = collective("allreduce", "V", "X", m, algorithm="tree")
>>> tree.bytes_per_device, tree.bandwidth_time, tree.hops
(2*V, V/225000000000, 6)
>>> ring = collective("allreduce", "V", "X", m)
>>> ring.bytes_per_device, ring.hops
(7*V/4, 14)

The data is split in two halves, each reduced up one binary tree and broadcast back down it;
the second tree mirrors the first, so a device that is interior in one is a leaf of the
other (Sanders, Speck and Traeff 2009, two-tree reduction; NCCL 2.4). An interior device
with a parent and two children receives 2 x V/2 and sends V/2 up, then receives V/2 and
sends 2 x V/2 down; as a leaf of the other tree it sends V/2 up and receives V/2: 2V each
way through its port. NCCL's tuning model charges every tree that (``src/graph/tuning.cc``:
the tree's algorithm bandwidth is half its bus bandwidth), so the bandwidth term is 2V / W,
against the ring's 2 (n-1)/n V / W: never less, equal in the limit of many devices. The
latency is the trees' depth up and down, 2 floor(log2 n) steps (NCCL: 2 log2i(nNodes)
network latencies) against the ring's 2 (n - 1): the tree wins where the latency term
dominates. A tree's edges join arbitrary devices, so it runs on one switched network (an
NVSwitch or a scale-out fabric); a ring or torus axis, or axes over two networks, are
refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from ..core.errors import InputError

if TYPE_CHECKING:
    from .mesh import Axis
    from .rings import Stage

SOURCE = ("Sanders, Speck and Traeff 2009, Two-tree algorithms for full bandwidth broadcast, "
          "reduction and scan; NCCL 2.4 double binary trees, src/graph/tuning.cc")
SWITCHED = ("switch", "scale-out")


def tree_stages(kind: str, v: sp.Expr, axes: list[Axis]) -> tuple[Stage, ...]:
    """The stage of a double-binary-tree AllReduce of V bytes over ``axes``: 2V through the
    busiest port, 2 floor(log2 n) steps."""
    from .in_network import one_network
    from .rings import Stage
    out = []
    for name, s in one_network("tree", kind, axes):
        if s.kind not in SWITCHED:
            raise InputError(f"a tree's edges join any two devices: it needs a switch or a "
                             f"scale-out axis; axis {name} is a {s.kind} over {s.link.name}",
                             "algorithm")
        depth = sp.floor(sp.log(s.size, 2))
        out.append(Stage(name, s.size, s.link.name, s.bandwidth, 2 * v, 2 * v, 2 * depth,
                         s.latency))
    return tuple(out)
