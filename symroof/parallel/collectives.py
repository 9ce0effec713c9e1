"""Collectives over mesh axes: bytes per device and per link, a bandwidth and a latency term.

>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=16", "tpu-v5e")
>>> ag = all_gather("bf16[B_X, D]", "X", m)
>>> ag.result.text, ag.bytes_per_device, ag.bandwidth_time, ag.latency_time
('bf16[B, D]', 15*B*D/8, B*D/48000000000, 1/125000)
>>> ag.latency_bound_below
768000
>>> collective("allreduce", 1000, "X", m).bandwidth_time == 2 * collective(
...     "allgather", 1000, "X", m).bandwidth_time
True

``nbytes`` (V) follows NCCL's size convention: the gathered bytes per device for an
AllGather, the bytes reduced per device for a ReduceScatter and an AllReduce, the bytes
each device holds for an AllToAll and a permute. On one axis of n chips with one-way
bandwidth W per link or port:

- ring with wraparound, both directions: AllGather (n-1)/n V / (2W), floor(n/2) hops;
- ring in one direction, or a line (no wraparound): (n-1)/n V / W, n-1 hops;
- switch (NVSwitch, a scale-out fabric): (n-1)/n V / W per port, n-1 steps;
- ReduceScatter costs what AllGather costs; AllReduce = ReduceScatter + AllGather;
- AllToAll: floor(n^2/4) V/(2nW) on a wrapped bidirectional ring, (n-1) V/(2W) one way,
  floor(n^2/4) V/(nW) on a line, (n-1)/n V/W on a switch (one step);
- permute (a shift by one along the axis): V/W, one hop (n-1 on a line).

Over several axes (or a hierarchical axis) a collective runs stage by stage, AllGather in
the order given (outermost network first), ReduceScatter in the reverse order; rings of one
torus link gather at once, their bandwidths adding up and their hops too (the book's
AllGather_XY: V / (W N_axes), T_min sum |X_i| / 2; an AllToAll waits for its longest
ring). Latency = hops x per-hop latency,
which stays the symbol ``alpha_<link>`` where no source gives one. Reductions' FLOPs are
not counted.

``algorithm="nvls"`` (or ``"sharp"``) makes an AllReduce on one switch reduce in the switch
(:mod:`symroof.parallel.in_network`): V / W, two steps; ``algorithm="tree"`` runs NCCL's
double binary tree (:mod:`symroof.parallel.tree`): 2V / W, 2 floor(log2 n) steps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import sympy as sp

from ..core import tables as tb
from ..core.choices import EXACT, Choices
from ..core.errors import DerivationError, InputError
from ..core.names import COLLECTIVES
from ..core.parse import exact, parse_expr
from ..core.units import CAPACITY, TIME, records
from ..engine.ops import Op, positive
from .in_network import canonical_algorithm, in_switch_stages
from .mesh import Axis, Mesh
from .rings import Stage as Stage  # re-exported: a collective's stages
from .rings import stages as _ring_stages
from .sharding import ShardedArray, sharded
from .tree import tree_stages

if TYPE_CHECKING:
    from ..engine.rooflines import Roofline
    from ..engine.thresholds import Threshold

TITLES = {"allgather": "AllGather", "reducescatter": "ReduceScatter",
          "allreduce": "AllReduce", "alltoall": "AllToAll", "permute": "permute"}
LATENCY = "latency"
AxesSpec = str | list[str] | tuple[str, ...]


@dataclass(frozen=True, repr=False)
class Collective(tb.RichView):
    """A collective's costs; every value an exact SymPy expression."""

    kind: str
    axes: tuple[str, ...]
    nbytes: sp.Expr
    stages: tuple[Stage, ...]
    mesh: Mesh
    array: ShardedArray | None = None
    result: ShardedArray | None = None
    algorithm: str = "ring"  # or an in-switch reduction (in_network.ALGORITHMS)
    choices: Choices = EXACT

    def under(self, choices: Choices) -> Collective:
        """The same collective costed under ``choices`` (the book's V/W: ``BOOK``; another
        edition of the chip table: its link figures)."""
        on = self.mesh.under(choices)
        axes = [on.axis(a) for a in self.axes]
        return replace(self, stages=_stages(self.kind, self.nbytes, axes, choices,
                                            self.algorithm), choices=choices, mesh=on)

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [("devices in a group", self.devices),
                                       ("bytes per device", self.bytes_per_device),
                                       ("bandwidth term, s", self.bandwidth_time),
                                       ("latency term, s", self.latency_time),
                                       ("time, s", self.time)]
        below = self.latency_bound_below
        if below is not None:
            rows.append(("latency-bound below, bytes", below))
        if self.result is not None:
            rows.append(("result", self.result.text))
        return f"{self.title} on {self.mesh.chip.name}", tb.key_values(rows)

    @property
    def title(self) -> str:
        on = "".join(self.axes)
        what = self.array.text if self.array is not None else f"{sp.sstr(self.nbytes)} bytes"
        how = "" if self.algorithm == "ring" else f" ({self.algorithm})"
        return f"{TITLES[self.kind]}_{on} {what}{how}"

    @property
    def devices(self) -> sp.Expr:
        """Devices in one group: the product of the axes' sizes."""
        return sp.Mul(*(self.mesh.axis(a).size for a in self.axes))

    @property
    def bytes_per_device(self) -> sp.Expr:
        """Bytes each device sends."""
        return sp.Add(*(s.sent for s in self.stages))

    @property
    def bytes_per_link(self) -> dict[str, sp.Expr]:
        """Bytes on the busiest directed link (or port) of each link type."""
        out: dict[str, sp.Expr] = {}
        for s in self.stages:
            out[s.link] = out.get(s.link, sp.S.Zero) + s.per_link
        return out

    @property
    def bandwidth_time(self) -> sp.Expr:
        """The stages' bandwidth terms, added; under ``levels=slowest`` the networks work at
        once and the slowest sets the time (the stages on one link still add).

        >>> from symroof.core.choices import Choices
        >>> from symroof.parallel.mesh import mesh
        >>> c = collective("allgather", "V", "node,gpu", mesh("node=2,gpu=8", "h100-sxm"))
        >>> c.bandwidth_time, c.under(Choices(levels="slowest")).bandwidth_time
        (23*V/7200000000000, 7*V/3600000000000)
        """
        return _bandwidth_time(self.stages, self.choices)

    @property
    def latency_time(self) -> sp.Expr:
        return sp.Add(*(s.latency_time for s in self.stages))

    @property
    def hops(self) -> sp.Expr:
        return sp.Add(*(s.hops for s in self.stages))

    @property
    def time(self) -> sp.Expr:
        """Bandwidth term plus latency term."""
        return self.bandwidth_time + self.latency_time

    @property
    def latency_bound_below(self) -> sp.Expr | None:
        """The size V (bytes, in ``nbytes``' convention) below which the latency term
        exceeds the bandwidth term; None when the collective costs nothing or pays no
        latency."""
        probe = sp.Dummy("V", positive=True)
        stages = _stages(self.kind, probe, [self.mesh.axis(a) for a in self.axes],
                         self.choices, self.algorithm)
        per_byte = sp.cancel(_bandwidth_time(stages, self.choices) / probe)
        if per_byte == 0 or self.latency_time == 0:
            return None
        return sp.cancel(self.latency_time / per_byte)

    @property
    def op(self) -> Op:
        """The collective as an op: no FLOPs, bytes on each link (for a roofline)."""
        return Op(self.title, sp.S.Zero, comms=self._comms(), dtype=self._dtype())

    def bandwidths(self) -> dict[str, sp.Expr]:
        """The one-way bytes per second per chip each link term is divided by."""
        out: dict[str, sp.Expr] = {}
        for s in self.stages:
            out.setdefault(s.link, s.bandwidth)
        return out

    def terms(self) -> dict[str, sp.Expr]:
        """Named time terms: one per link, and ``latency``."""
        bws = self.bandwidths()
        return {**{k: v / bws[k] for k, v in self._comms().items()},
                LATENCY: self.latency_time}

    def roofline(self) -> Roofline:
        """The collective's roofline: its link terms and its latency term."""
        from ..engine.rooflines import roofline
        if not self.stages or self.nbytes == 0:
            raise DerivationError(f"{self.title} moves no bytes")
        return roofline(self.op, self.mesh.chip, bandwidths=self.bandwidths(),
                        extra={LATENCY: self.latency_time})

    def threshold(self, name: str | sp.Symbol) -> Threshold:
        """The size of ``name`` where the bandwidth term meets the latency term (above
        it the collective is bandwidth-bound)."""
        from ..engine.thresholds import between
        return between(self.roofline(), "bandwidth", LATENCY, name)

    def _comms(self) -> dict[str, sp.Expr]:
        bws = self.bandwidths()
        out: dict[str, sp.Expr] = {}
        for s in self.stages:
            out[s.link] = out.get(s.link, sp.S.Zero) + s.bandwidth_time * bws[s.link]
        return {k: sp.cancel(v) for k, v in out.items()}

    def _dtype(self) -> str:
        return self.array.dtype if self.array is not None else "bf16"


def canonical_kind(kind: str, where: str | None = None) -> str:
    """``all_gather``, ``AllGather``, ``all-gather`` -> ``allgather``."""
    key = kind.replace("_", "").replace("-", "").replace(" ", "").lower()
    if key == "collectivepermute":
        key = "permute"
    if key not in COLLECTIVES:
        raise InputError(f"unknown collective {kind!r} (known: {', '.join(COLLECTIVES)})", where)
    return key


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def collective(kind: str, nbytes: sp.Expr | int | str, axes: AxesSpec,
               on: Mesh, algorithm: str = "ring", *, total: bool = False) -> Collective:
    """A collective of ``nbytes`` (NCCL's size convention) over ``axes`` of a mesh;
    ``total=True`` says an AllToAll's ``nbytes`` is the total over the group's devices
    (each then holds ``nbytes / n``).

    >>> from symroof.parallel.mesh import mesh
    >>> m = mesh("X=8", "h100-sxm")
    >>> c = collective("allreduce", "2*P", "X", m)
    >>> c.bytes_per_device, c.bandwidth_time
    (7*P/2, 7*P/900000000000)
    >>> collective("alltoall", "V", "X", m, total=True).nbytes
    V/8
    """
    k = canonical_kind(kind)
    v = parse_expr(nbytes, where="nbytes") if isinstance(nbytes, str) else exact(nbytes)
    v = positive(sp.simplify(v) if v.has(sp.log) else v, str(nbytes), "nbytes")
    names = on.resolve(axes)
    if k == "permute" and len(names) != 1:
        raise InputError(f"a permute runs along one axis, got {', '.join(names)}")
    if total:
        if k != "alltoall":
            raise InputError(f"total=True is for an alltoall's bytes, not the {k}'s", "total")
        v = v / sp.Mul(*(on.axis(n).size for n in names))
    how = canonical_algorithm(algorithm)
    return Collective(k, names, v, _stages(k, v, [on.axis(n) for n in names], algorithm=how),
                      on, algorithm=how)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def all_gather(array: str | ShardedArray, axes: AxesSpec, on: Mesh) -> Collective:
    """Gather the shards of ``array`` over ``axes``: ``[B_X, D] -> [B, D]``."""
    a = sharded(array, on)
    names = on.resolve(axes)
    result = a
    for name in names:
        dim = next((d for d in a.dims if name in d.axes), None)
        if dim is None:
            raise InputError(f"no dimension of {a.text} is split over {name}: nothing to "
                             f"gather", f"AllGather over {''.join(names)}")
        current = result.dim(dim.name)
        result = result.with_axes(dim.name, tuple(x for x in current.axes if x != name))
    v = result.device_bytes
    return Collective("allgather", names, v, _stages("allgather", v, _axes(on, names)), on,
                      a, result)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def reduce_scatter(array: str | ShardedArray, axes: AxesSpec, on: Mesh,
                   dim: str | None = None) -> Collective:
    """Sum partial results of ``array`` over ``axes`` and split ``dim`` over them:
    ``[B, F] {partial over X} -> [B, F_X]`` (default dim: the last one not split)."""
    a = _partial(array, axes, on, "ReduceScatter")
    names = on.resolve(axes)
    last = next((d for d in reversed(a.dims) if not d.axes), a.dims[-1])
    target = a.dim(dim) if dim is not None else last
    result = a.with_axes(target.name, (*target.axes, *names))
    sharded(result.text, on)  # checks divisibility
    v = a.device_bytes
    return Collective("reducescatter", names, v, _stages("reducescatter", v, _axes(on, names)),
                      on, a, result)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def all_reduce(array: str | ShardedArray, axes: AxesSpec, on: Mesh,
               algorithm: str = "ring") -> Collective:
    """Sum partial results of ``array`` over ``axes``; every device keeps the sum."""
    a = _partial(array, axes, on, "AllReduce")
    names = on.resolve(axes)
    v, how = a.device_bytes, canonical_algorithm(algorithm)
    return Collective("allreduce", names, v,
                      _stages("allreduce", v, _axes(on, names), algorithm=how), on, a, a, how)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def all_to_all(array: str | ShardedArray, axes: AxesSpec, on: Mesh,
               dim: str | None = None) -> Collective:
    """Move the split over ``axes`` from one dimension to ``dim``: ``[B_X, D] -> [B, D_X]``
    (default: the first dimension not split)."""
    a = sharded(array, on)
    names = on.resolve(axes)
    source = next((d for d in a.dims if set(names) <= set(d.axes)), None)
    if source is None:
        raise InputError(f"no dimension of {a.text} is split over {''.join(names)}",
                         f"AllToAll over {''.join(names)}")
    target = a.dim(dim) if dim is not None else next((d for d in a.dims if not d.axes),
                                                    None)
    if target is None or target.name == source.name:
        raise InputError(f"give the dimension of {a.text} to split over {''.join(names)}",
                         f"AllToAll over {''.join(names)}")
    result = a.with_axes(source.name, tuple(x for x in source.axes if x not in names))
    result = result.with_axes(target.name, (*target.axes, *names))
    sharded(result.text, on)
    v = a.device_bytes
    return Collective("alltoall", names, v, _stages("alltoall", v, _axes(on, names)), on,
                      a, result)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, bytes_per_device=CAPACITY,
         nbytes=CAPACITY)
def permute(array: str | ShardedArray, axis: str, on: Mesh) -> Collective:
    """Send every device's shard to its neighbour along ``axis`` (a shift by one)."""
    a = sharded(array, on)
    names = on.resolve(axis)
    if len(names) != 1:
        raise InputError(f"a permute runs along one axis, got {', '.join(names)}")
    v = a.device_bytes
    return Collective("permute", names, v, _stages("permute", v, _axes(on, names)), on, a, a)


def _partial(array: str | ShardedArray, axes: AxesSpec, on: Mesh,
             what: str) -> ShardedArray:
    a = sharded(array, on)
    names = on.resolve(axes)
    clash = [n for n in names if n in a.used_axes]
    if clash:
        raise InputError(f"{a.text} is already split over {clash[0]}; {what} sums partial "
                         f"results over axes no dimension is split over", f"{what} over "
                         f"{''.join(names)}")
    return a


def _bandwidth_time(stages: tuple[Stage, ...], choices: Choices) -> sp.Expr:
    """Stages in sequence (their times add) or, under ``levels=slowest``, each link's
    stages at once with the others: the largest link's sum."""
    if choices.levels != "slowest":
        return sp.Add(*(s.bandwidth_time for s in stages))
    per_link: dict[str, sp.Expr] = {}
    for s in stages:
        per_link[s.link] = per_link.get(s.link, sp.S.Zero) + s.bandwidth_time
    return sp.Max(*per_link.values()) if per_link else sp.S.Zero


def _axes(on: Mesh, names: tuple[str, ...]) -> list[Axis]:
    return [on.axis(n) for n in names]


def _stages(kind: str, v: sp.Expr, axes: list[Axis], choices: Choices = EXACT,
            algorithm: str = "ring") -> tuple[Stage, ...]:
    """The stages of a collective: rings (``rings.stages``, under ``choices``), a tree
    (``tree.tree_stages``) or an in-switch reduction."""
    if algorithm == "tree":
        return tree_stages(kind, v, axes)
    if algorithm != "ring":
        return in_switch_stages(canonical_algorithm(algorithm), kind, v, axes)
    return _ring_stages(kind, v, axes, choices)
