"""Sharded matmuls: the collectives a product of sharded arrays needs, and its roofline.

>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=2", "tpu-v5e")
>>> mm = sharded_matmul("bf16[B, D_X]", "bf16[D_X, F]", m)
>>> [c.title for c in mm.after], mm.result.text
(['AllReduce_X bf16[B, F]'], 'bf16[B, F]')
>>> mm.flops, mm.roofline().t_comms["ici"]
(B*D*F, B*F/22500000000)
>>> from symroof.engine.thresholds import between
>>> t = between(mm.roofline(), "math", "ici", "D")
>>> t.inequality, t.integer
(D > 78800/9, 8756)

The cases of the books (``A[I, J] x B[J, K]``, J contracted): no contracted dimension
split: a local matmul; one operand's contracted dimension split: AllGather it first; both
split over the same axes: a local matmul of partial sums, then an AllReduce (or, with
``scatter=DIM``, a ReduceScatter onto DIM); both outputs split over one axis: AllGather the
right operand first. Per-device FLOPs, HBM bytes (operands after gathering, the local
result) and comms add up in one op whose roofline has the terms ``compute``, ``hbm``,
each link, and ``latency``; they overlap unless named in ``serial``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from ..core.choices import Choices
from ..core.errors import InputError
from ..core.units import FLOPS, TIME, records
from ..engine.ops import Op
from ..engine.rooflines import Roofline, roofline
from .collectives import LATENCY, Collective, all_gather, all_reduce, reduce_scatter
from .mesh import Mesh
from .sharding import Dim, ShardedArray, sharded


@dataclass(frozen=True)
class ShardedMatmul:
    """``lhs x rhs`` over a mesh: collectives ``before`` and ``after`` the local matmul."""

    lhs: ShardedArray
    rhs: ShardedArray
    local_lhs: ShardedArray
    local_rhs: ShardedArray
    contracted: tuple[str, ...]
    partial: ShardedArray
    result: ShardedArray
    before: tuple[Collective, ...]
    after: tuple[Collective, ...]
    mesh: Mesh
    serial: tuple[str, ...] = ()

    @property
    def collectives(self) -> tuple[Collective, ...]:
        return (*self.before, *self.after)

    @property
    def flops(self) -> sp.Expr:
        """FLOPs per device: 2 x the product of every local dimension."""
        sizes = {d.name: s for d, s in zip(self.local_lhs.dims, self.local_lhs.device_shape,
                                           strict=True)}
        sizes.update({d.name: s for d, s in zip(self.local_rhs.dims,
                                                self.local_rhs.device_shape, strict=True)})
        return 2 * sp.Mul(*sizes.values())

    @property
    def total_flops(self) -> sp.Expr:
        """FLOPs over all devices of the mesh (replicated work counted on each device).

        >>> from symroof.parallel.mesh import mesh
        >>> sharded_matmul("bf16[B_X, D]", "bf16[D, F]", mesh("X=8", "tpu-v5e")).total_flops
        2*B*D*F
        """
        return sp.cancel(self.flops * self.mesh.devices)

    def under(self, choices: Choices) -> ShardedMatmul:
        """The same matmul with its collectives costed under ``choices`` (the book's V/W:
        ``BOOK``).

        >>> from symroof.core.choices import BOOK
        >>> from symroof.parallel.mesh import mesh
        >>> mm = sharded_matmul("bf16[B, D_X]", "bf16[D_X, F]", mesh("X=8", "tpu-v5e"))
        >>> mm.under(BOOK).latency_time, mm.latency_time
        (0, 7/500000)
        """
        return replace(self, before=tuple(c.under(choices) for c in self.before),
                       after=tuple(c.under(choices) for c in self.after))

    @property
    def bytes(self) -> sp.Expr:
        """HBM bytes per device: both local operands read, the local result written."""
        return self.local_lhs.device_bytes + self.local_rhs.device_bytes + \
            self.partial.device_bytes

    @property
    def comms(self) -> dict[str, sp.Expr]:
        """Bytes on the busiest link of each kind, over every collective."""
        out: dict[str, sp.Expr] = {}
        for c in self.collectives:
            for link, b in c.op.comms.items():
                out[link] = out.get(link, sp.S.Zero) + b
        return out

    @property
    def latency_time(self) -> sp.Expr:
        return sp.Add(*(c.latency_time for c in self.collectives))

    @property
    def op(self) -> Op:
        name = f"{self.lhs.text} x {self.rhs.text}"
        return Op(name, self.flops, {"hbm": self.local_lhs.device_bytes +
                                     self.local_rhs.device_bytes},
                  {"hbm": self.partial.device_bytes}, self.comms, self.lhs.dtype)

    @records(t_lower=TIME, t_upper=TIME, t_comms=TIME,
             again=lambda choices, mm: mm.under(choices).roofline())
    def roofline(self) -> Roofline:
        """Named terms: compute, hbm, each link, and latency (when collectives run)."""
        bws: dict[str, sp.Expr] = {}
        for c in self.collectives:
            for k, v in c.bandwidths().items():
                bws.setdefault(k, v)
        extra = {LATENCY: self.latency_time} if self.collectives else {}
        return roofline(self.op, self.mesh.chip, bandwidths=bws, extra=extra,
                        serial=self.serial)


@records(flops=FLOPS, total_flops=FLOPS, latency_time=TIME)
def sharded_matmul(lhs: str | ShardedArray, rhs: str | ShardedArray, on: Mesh, *,
                   scatter: str | None = None,
                   serial: tuple[str, ...] = ()) -> ShardedMatmul:
    """The sharded product ``lhs x rhs``, contracting the dimensions both name."""
    a, b = sharded(lhs, on), sharded(rhs, on)
    where = f"matmul {a.text} x {b.text}"
    names_a, names_b = [d.name for d in a.dims], [d.name for d in b.dims]
    contracted = tuple(n for n in names_a if n in names_b)
    if not contracted:
        raise InputError("the operands share no dimension to contract", where)
    for n in contracted:
        if a.dim(n).size != b.dim(n).size:
            raise InputError(f"dimension {n} has sizes {a.dim(n).size} and {b.dim(n).size}",
                             where)
    before: list[Collective] = []
    for n in contracted:
        ax_a, ax_b = a.dim(n).axes, b.dim(n).axes
        if ax_a == ax_b:
            continue
        if ax_a:
            before.append(all_gather(a, ax_a, on))
            a = before[-1].result or a
        if ax_b:
            before.append(all_gather(b, ax_b, on))
            b = before[-1].result or b
    out_a = [d for d in a.dims if d.name not in contracted]
    out_b = [d for d in b.dims if d.name not in contracted]
    used_a = {x for d in out_a for x in d.axes}
    clash = [x for d in out_b for x in d.axes if x in used_a]
    summed = tuple(x for n in contracted for x in a.dim(n).axes)
    clash += [x for d in (*out_a, *out_b) for x in d.axes if x in summed]
    if clash:
        axes = tuple(dict.fromkeys(x for d in out_b for x in d.axes if x in clash))
        if not axes:
            raise InputError(f"axis {clash[0]} splits both a contracted and an output "
                             f"dimension", where)
        before.append(all_gather(b, axes, on))
        b = before[-1].result or b
        out_b = [d for d in b.dims if d.name not in contracted]
    dtype = a.dtype
    partial = ShardedArray(dtype, tuple(Dim(d.name, d.size, d.axes) for d in
                                        (*out_a, *out_b)), on)
    after: list[Collective] = []
    result = partial
    if summed:
        if scatter is not None:
            after.append(reduce_scatter(partial, summed, on, dim=scatter))
        else:
            after.append(all_reduce(partial, summed, on))
        result = after[-1].result or partial
    elif scatter is not None:
        raise InputError("scatter needs a contraction over split dimensions", where)
    return ShardedMatmul(sharded(lhs, on), sharded(rhs, on), a, b, contracted, partial,
                         result, tuple(before), tuple(after), on, tuple(serial))
