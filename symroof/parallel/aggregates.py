"""What a whole mesh adds up to, and the plain transfers and counts the later chapters use.

>>> from symroof.parallel.mesh import mesh
>>> t = totals(mesh("X=16,Y=16", "tpu-v5e"))
>>> t.chips, t.hosts, t.flops, t.hbm, t.hbm_bandwidth
(256, 32, 50432000000000000, 4096000000000, 207360000000000)
>>> t.cores, t.core_kind, totals(mesh("X=8", "h100-sxm")).cores
(256, 'TensorCores', 1056)
>>> flops_time(6 * 10**21, 256, "tpu-v5e", mfu="1/2")
46875000/197
>>> global_batch(240, 256, experts=8, active=2)
245760

- ``totals(mesh, dtype)``: chips, hosts (chips over the chips behind one host), cores (a
  GPU's SMs or a TPU's TensorCores, where the catalogue counts them), aggregate peak
  FLOP/s in ``dtype``, HBM capacity and HBM bandwidth of all chips together.
- ``flops_time(F, chips, chip, mfu, dtype)``: the time of F FLOPs on ``chips`` chips that
  run at ``mfu`` of their peak: F / (chips * peak * mfu).
- ``global_batch(per_chip, chips, experts, active)``: the global batch a per-chip critical
  batch asks for: per_chip * chips, times E/k for a mixture of experts (each token reaches
  k of the E experts, so each expert sees k/E of the batch).
- ``send(nbytes, axis, mesh, hops)``: a point-to-point transfer of ``nbytes`` to a chip
  ``hops`` away along ``axis``: nbytes / W + hops * latency.
- ``pipeline_sends(nbytes, axis, mesh, microbatches, stages)``: the activations a pipeline
  passes between stages over ``axis``: nbytes / N_MB per microbatch, N_MB + N_stages - 2
  sends on the critical path (the GPU book's pipeline comms), each at the axis's one-way
  bandwidth per chip (across nodes, the chip's share of the node's egress into the leaf).
- ``gather_to_one(nbytes, axes, mesh)``: every shard of ``nbytes`` (the gathered size)
  sent to one chip: it receives (n-1)/n of them over its links, as a device of an
  AllGather does, so the costs are the AllGather's; only one chip ends with the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import InputError
from ..core.parse import parse_expr
from ..core.units import CAPACITY, TIME, records
from ..hardware.catalog import Chip, chip
from .collectives import AxesSpec, Collective, collective
from .mesh import Mesh


@dataclass(frozen=True, repr=False)
class Totals(tb.RichView):
    """A mesh's chips, hosts and aggregate figures (exact)."""

    mesh: Mesh
    dtype: str
    chips: sp.Expr
    hosts: sp.Expr
    flops: sp.Expr  # peak FLOP/s of all chips in dtype
    hbm: sp.Expr  # HBM bytes of all chips
    hbm_bandwidth: sp.Expr  # HBM bytes/s of all chips
    cores: sp.Expr | None = None  # SMs or TensorCores of all chips (None: not catalogued)
    core_kind: str = ""  # "SMs" or "TensorCores"

    def _view(self) -> tuple[str, tb.Table]:
        rows = [("chips", self.chips), ("hosts", self.hosts),
                *([(self.core_kind, self.cores)] if self.cores is not None else []),
                (f"peak FLOP/s ({self.dtype})", self.flops), ("HBM, bytes", self.hbm),
                ("HBM bandwidth, bytes/s", self.hbm_bandwidth)]
        return f"totals of mesh {self.mesh.spec or ', '.join(self.mesh.axes)} on " \
            f"{self.mesh.chip.name}", tb.key_values(rows)


def totals(m: Mesh, dtype: str = "bf16") -> Totals:
    """The mesh's totals (see the module)."""
    n = m.devices
    per_host = m.topology.chips_per_host if m.topology is not None else 1
    cores = m.chip.cores()
    return Totals(m, dtype, n, sp.ceiling(n / per_host) if n.is_Integer else n / per_host,
                  n * m.chip.peak(dtype), n * m.chip.capacity("hbm"), n * m.chip.bandwidth(),
                  n * cores[0] if cores else None, cores[1] if cores else "")


def flops_time(flops: Any, chips: Any, on: Chip | str, mfu: Any = 1,
               dtype: str = "bf16") -> sp.Expr:
    """Seconds to run ``flops`` on ``chips`` chips at ``mfu`` of their peak."""
    the_chip = chip(on) if isinstance(on, str) else on
    f, n, u = (_exact(x, name) for x, name in ((flops, "flops"), (chips, "chips"),
                                               (mfu, "mfu")))
    if u.is_number and not 0 < u <= 1:
        raise InputError(f"an MFU is a fraction of the peak in (0, 1], got {u}", "mfu")
    if n.is_number and not n > 0:
        raise InputError(f"needs at least one chip, got {n}", "chips")
    return f / (n * the_chip.peak(dtype) * u)


def global_batch(per_chip: Any, chips: Any, experts: Any = None, active: Any = None,
                 ) -> sp.Expr:
    """The global batch a per-chip batch asks for (times E/k for a mixture of experts)."""
    if (experts is None) != (active is None):
        raise InputError("a mixture of experts needs both its experts E and the active k",
                         "global_batch")
    out = _exact(per_chip, "per_chip") * _exact(chips, "chips")
    if experts is not None:
        out = out * _exact(experts, "experts") / _exact(active, "active")
    return out


@dataclass(frozen=True, repr=False)
class Transfer(tb.RichView):
    """A point-to-point transfer: its bytes, its bandwidth and latency terms."""

    nbytes: sp.Expr
    axis: str
    hops: sp.Expr
    bandwidth: sp.Expr
    latency: sp.Expr

    @property
    def bandwidth_time(self) -> sp.Expr:
        return self.nbytes / self.bandwidth

    @property
    def latency_time(self) -> sp.Expr:
        return self.hops * self.latency

    @property
    def time(self) -> sp.Expr:
        return self.bandwidth_time + self.latency_time

    def _view(self) -> tuple[str, tb.Table]:
        rows = [("bytes", self.nbytes), ("bandwidth term, s", self.bandwidth_time),
                ("latency term, s", self.latency_time), ("time, s", self.time)]
        return f"send over {self.axis}, {self.hops} hops", tb.key_values(rows)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, nbytes=CAPACITY)
def send(nbytes: Any, axis: str, on: Mesh, hops: Any = 1, *,
         src: tuple[int, ...] | None = None,
         dst: tuple[int, ...] | None = None) -> Transfer:
    """``nbytes`` to a chip ``hops`` away along ``axis`` (one link's one-way bandwidth).

    >>> from symroof.parallel.mesh import mesh
    >>> send("V", "X", mesh("X=16", "tpu-v5e"), hops=3).time
    V/45000000000 + 3/1000000

    Over several axes (``"XY"``) the route uses every outgoing link at once: the bytes
    are split over one link per axis (the bandwidths add up), and the hops are those from
    the chip at coordinates ``src`` to the one at ``dst`` (one per axis named; on an axis
    that wraps the shorter way round), or ``hops`` per axis as a mapping.

    >>> m = mesh("X=4,Y=4", "tpu-v5e")
    >>> t = send("V", "XY", m, src=(0, 0), dst=(3, 1))
    >>> t.hops, t.time
    (4, V/90000000000 + 1/250000)
    """
    names = on.resolve(axis)
    if len(names) == 1 and src is None and dst is None and not isinstance(hops, dict):
        a = on.axis(names[0])
        h = _exact(hops, "hops")
        if h.is_number and not (h.is_Integer and h >= 1):
            raise InputError(f"hops is a whole number of links, at least 1, got {h}", "send")
        return Transfer(_exact(nbytes, "nbytes"), names[0], h, a.bandwidth, a.latency)
    per_axis = _route_hops(names, on, hops, src, dst)
    total = sp.Add(*per_axis.values())
    if total == 0:
        raise InputError("the route goes nowhere: src and dst are the same chip", "send")
    used = [n for n in names if per_axis[n] != 0]
    bandwidth = sp.Add(*(on.axis(n).bandwidth for n in used))
    latency = sp.cancel(sp.Add(*(per_axis[n] * on.axis(n).latency for n in used)) / total)
    return Transfer(_exact(nbytes, "nbytes"), "".join(used), total, bandwidth, latency)


def _route_hops(names: tuple[str, ...], on: Mesh, hops: Any,
                src: tuple[int, ...] | None, dst: tuple[int, ...] | None) -> dict[str, Any]:
    """Hops along each axis of a route: from coordinates, or given per axis."""
    if isinstance(hops, dict):
        if src is not None or dst is not None:
            raise InputError("give hops per axis or src and dst coordinates, not both",
                             "send")
        unknown = [k for k in hops if k not in names]
        if unknown:
            raise InputError(f"hops names axis {unknown[0]!r}, not one of the route's "
                             f"({', '.join(names)})", "send")
        return {n: _exact(hops.get(n, 0), "hops") for n in names}
    if src is None or dst is None:
        raise InputError(f"a route over axes {''.join(names)} needs src and dst coordinates "
                         f"(one per axis) or hops per axis", "send")
    if len(src) != len(names) or len(dst) != len(names):
        raise InputError(f"src and dst give one coordinate per axis of the route "
                         f"({''.join(names)}: {len(names)}), got {len(src)} and {len(dst)}",
                         "send")
    out: dict[str, Any] = {}
    for n, a, b in zip(names, src, dst, strict=True):
        ax = on.axis(n)
        if not (isinstance(a, int) and isinstance(b, int)) or min(a, b) < 0 or \
                (ax.size.is_Integer and max(a, b) >= ax.size):
            raise InputError(f"coordinates on axis {n} run from 0 to {ax.size - 1}, got "
                             f"{a} and {b}", "send")
        d = abs(b - a)
        out[n] = sp.Integer(min(d, int(ax.size) - d) if ax.wraps and ax.size.is_Integer
                            else d)
    return out


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME, nbytes=CAPACITY)
def pipeline_sends(nbytes: Any, axis: str, on: Mesh, microbatches: Any,
                   stages: Any = None) -> Transfer:
    """A pipeline's sends between stages over ``axis`` (its size the stages, unless
    ``stages`` says): ``nbytes`` of activations per batch, split into ``microbatches``.

    >>> from symroof.parallel.mesh import mesh
    >>> t = pipeline_sends("2*B*D", "node", mesh("node=16,gpu=8", "h100-sxm"), 8)
    >>> t.hops, t.bandwidth, t.bandwidth_time
    (22, 50000000000, 11*B*D/100000000000)
    """
    names = on.resolve(axis)
    if len(names) != 1:
        raise InputError(f"a pipeline's stages lie along one axis, got {''.join(names)}",
                         "pipeline_sends")
    a = on.axis(names[0])
    n_mb = _exact(microbatches, "microbatches")
    n_st = a.size if stages is None else _exact(stages, "stages")
    for name, v in (("microbatches", n_mb), ("stages", n_st)):
        if v.is_number and not (v.is_Integer and v >= 1):
            raise InputError(f"{name} is a whole number, at least 1, got {v}",
                             "pipeline_sends")
    if n_st.is_number and n_st < 2:
        raise InputError("a pipeline of one stage sends nothing between stages",
                         "pipeline_sends")
    sends = n_mb + n_st - 2
    return Transfer(sp.cancel(_exact(nbytes, "nbytes") / n_mb * sends), names[0], sends,
                    a.bandwidth, a.latency)


def gather_to_one(nbytes: Any, axes: AxesSpec, on: Mesh) -> Collective:
    """Every shard to one chip: the AllGather's costs (see the module)."""
    return collective("allgather", _exact(nbytes, "nbytes"), axes, on)


def _exact(x: Any, name: str) -> sp.Expr:
    if isinstance(x, str):
        return parse_expr(x, where=name)
    if isinstance(x, float):
        raise InputError(f"give {name} exactly (an integer, a fraction as text, or an "
                         f"expression), got the float {x!r}", name)
    return sp.sympify(x)
