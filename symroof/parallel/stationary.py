"""Weight-stationary inference: an MLP's forward with its weights at rest, sharded over one
group of mesh axes (1-D, Megatron) or over two (2-D), and the communication each costs a chip.

>>> from symroof.core.choices import BOOK
>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=4,Y=4,Z=4", "tpu-v5p")
>>> one = weight_stationary(m, f="XYZ", choices=BOOK)
>>> one.layout, [c.title for c in one.collectives]
('In[B, D_XYZ] W_in[D, F_XYZ] W_out[F_XYZ, D]', ['AllGather_XYZ bf16[B, D_XYZ]', \
'ReduceScatter_XYZ bf16[B, D]'])
>>> one.comm_time                      # 4 B D / (3 W): V/W over three rings at once
B*D/135000000000
>>> two = weight_stationary(m, d="X", f="YZ", choices=BOOK)
>>> two.layout, [c.kind for c in two.collectives]
('In[B, D_XYZ] W_in[D_X, F_YZ] W_out[F_YZ, D_X]', ['allgather', 'allreduce', \
'reducescatter'])
>>> two.comm_time                      # 2 B D / (X W) + 4 B F / (Y Z W)
B*D/360000000000 + B*F/720000000000

The layer is the books' ``In[B, D] x W_in[D, F] x W_out[F, D]`` at decode: the weights
``W_in[D_d, F_f]`` and ``W_out[F_f, D_d]`` never move, and the activations rest between
layers as ``In[B, D_df]`` (D split over every axis of the layout). A 1-D layout (``d``
empty: 1-D weight-stationary, Megatron) gathers the input over the ``f`` axes, multiplies
locally and reduce-scatters the output; a 2-D layout (ESTI's 2-D weight-stationary) gathers
only over ``f`` to ``In[B, D_d]``, all-reduces the first matmul's partial sums over ``d``
and reduce-scatters the second's over ``f``. Every step is the engine's own: the gather is
:func:`~symroof.parallel.collectives.all_gather`, the matmuls
:func:`~symroof.parallel.matmul.sharded_matmul` (which finds the AllReduce and the
ReduceScatter), each collective costed under ``choices``. ``comm_time`` is their summed
times (the steps depend on each other: none overlaps the next); ``flops`` the FLOPs per
chip; ``roofline()`` has the terms compute, hbm (the weight shards and the activations
read, the results written), each link, and latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.choices import EXACT, LINK_CHOICES, Choices
from ..core.errors import DerivationError, InputError
from ..core.parse import exact
from ..core.units import FLOPS, TIME, records
from ..engine.equations import positive_root
from ..engine.ops import Op
from ..engine.optimize import lagrange
from ..engine.rooflines import Roofline, roofline
from .collectives import LATENCY, AxesSpec, Collective, all_gather
from .matmul import ShardedMatmul, sharded_matmul
from .mesh import Mesh
from .mlp import _size, _sub
from .sharding import ShardedArray, sharded


@dataclass(frozen=True, repr=False)
class WeightStationary(tb.RichView):
    """An MLP forward with stationary weights on a mesh (see the module)."""

    mesh: Mesh
    d: tuple[str, ...]
    f: tuple[str, ...]
    gather: Collective
    matmuls: tuple[ShardedMatmul, ShardedMatmul]
    choices: Choices = EXACT

    @property
    def kind(self) -> str:
        """``1-D`` (the weights split along F only) or ``2-D`` (along D and F)."""
        return "2-D" if self.d else "1-D"

    @property
    def layout(self) -> str:
        """``In[B, D_XYZ] W_in[D_X, F_YZ] W_out[F_YZ, D_X]``."""
        d, f, df = _sub(self.d), _sub(self.f), _sub((*self.d, *self.f))
        return f"In[B, D{df}] W_in[D{d}, F{f}] W_out[F{f}, D{d}]"

    @property
    def chips(self) -> sp.Expr:
        """The chips the layout spans: the product of its axes' sizes."""
        return sp.Mul(*(self.mesh.axis(a).size for a in (*self.d, *self.f)))

    @property
    def collectives(self) -> tuple[Collective, ...]:
        """The gather, then the matmuls' collectives, in the order they run."""
        return (self.gather, *self.matmuls[0].collectives, *self.matmuls[1].collectives)

    @property
    def flops(self) -> sp.Expr:
        """FLOPs per chip: the two local matmuls."""
        return self.matmuls[0].flops + self.matmuls[1].flops

    @property
    def comm_time(self) -> sp.Expr:
        """Each chip's communication time: its collectives' times, summed."""
        return sp.Add(*(c.time for c in self.collectives))

    @property
    def comm_bytes(self) -> dict[str, sp.Expr]:
        """Bytes on the busiest link of each kind, over every collective."""
        out: dict[str, sp.Expr] = {}
        for c in self.collectives:
            for link, b in c.op.comms.items():
                out[link] = out.get(link, sp.S.Zero) + b
        return out

    def in_chips(self, chips: Any = "N") -> sp.Expr:
        """``comm_time`` with the layout's axis sizes given by their product ``chips``
        (for a 1-D layout; a 2-D one has two groups to size: :meth:`best_split`).

        >>> from symroof.core.choices import BOOK
        >>> from symroof.parallel.mesh import mesh
        >>> weight_stationary(mesh("X=X:wraps", "tpu-v5e"), f="X", choices=BOOK).in_chips()
        B*D/22500000000
        """
        n = exact(chips)
        if self.d:
            raise DerivationError(f"a {self.kind} layout has two groups of axes to size: "
                                  f"take best_split({sp.sstr(n)})")
        [t], _ = _grouped(self, (self.f,), n)
        return t

    def best_split(self, chips: Any = "N") -> Split:
        """The sizes of the ``d`` and ``f`` groups, their product ``chips``, that make
        ``comm_time`` least, and that time (the Lagrange optimum of the engine).

        >>> from symroof.core.choices import BOOK
        >>> from symroof.parallel.mesh import mesh
        >>> m = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", "tpu-v5p")
        >>> s = weight_stationary(m, d="X", f="YZ", d_model=8192, d_ff=32768,
        ...                       choices=BOOK).best_split()
        >>> s.sizes, s.comm_time
        ({'X': sqrt(2)*sqrt(N)/4, 'YZ': 2*sqrt(2)*sqrt(N)}, 32*sqrt(2)*B/(87890625*sqrt(N)))
        """
        n = exact(chips)
        if not self.d:
            raise DerivationError("a 1-D layout has one group of axes: its size is the "
                                  "chips (in_chips)")
        [t], groups = _grouped(self, (self.d, self.f), None)
        g = list(groups)
        opt = lagrange(t, sp.Eq(g[0] * g[1], n), g)
        best = sp.simplify(opt.value())
        return Split({str(s): opt.solution[s] for s in g}, best, n)

    def chips_to_beat(self, other: WeightStationary, chips: Any = "N") -> sp.Expr:
        """The chips past which this 2-D layout, at its best split, costs each chip less
        communication than the 1-D layout ``other`` on as many chips.

        >>> from symroof.core.choices import BOOK
        >>> from symroof.parallel.mesh import mesh
        >>> m = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", "tpu-v5p")
        >>> sizes = {"d_model": 8192, "d_ff": 32768, "choices": BOOK}
        >>> weight_stationary(m, d="X", f="YZ", **sizes).chips_to_beat(
        ...     weight_stationary(m, f="XYZ", **sizes))
        72
        """
        n = exact(chips)
        if not isinstance(n, sp.Symbol):
            raise InputError(f"chips is the name to solve for, got {chips!r}", "chips_to_beat")
        mine, theirs = self.best_split(n).comm_time, other.in_chips(n)
        try:
            return positive_root(sp.Eq(mine, theirs), n)
        except DerivationError as exc:
            raise DerivationError(f"no chip count where the {self.kind} layout meets the "
                                  f"{other.kind} one: {exc.message}") from None

    def under(self, choices: Choices) -> WeightStationary:
        """The same layout with its collectives costed under ``choices``.

        >>> from symroof.core.choices import BOOK
        >>> from symroof.parallel.mesh import mesh
        >>> ws = weight_stationary(mesh("X=8", "tpu-v5e"), f="X")
        >>> ws.under(BOOK).comm_time == weight_stationary(ws.mesh, f="X", choices=BOOK).comm_time
        True
        """
        choices.within(LINK_CHOICES, "a weight-stationary layout")
        return WeightStationary(self.mesh, self.d, self.f, self.gather.under(choices),
                                (self.matmuls[0].under(choices),
                                 self.matmuls[1].under(choices)), choices)

    def roofline(self) -> Roofline:
        """Named terms: compute, hbm, each link, and latency."""
        reads = sp.Add(*(m.local_lhs.device_bytes + m.local_rhs.device_bytes
                         for m in self.matmuls))
        writes = sp.Add(*(m.partial.device_bytes for m in self.matmuls))
        op = Op(f"{self.kind} weight-stationary {self.layout}", self.flops, {"hbm": reads},
                {"hbm": writes}, self.comm_bytes, self.matmuls[0].lhs.dtype)
        bws: dict[str, sp.Expr] = {}
        for c in self.collectives:
            for k, v in c.bandwidths().items():
                bws.setdefault(k, v)
        latency = sp.Add(*(c.latency_time for c in self.collectives))
        return roofline(op, self.mesh.chip, bandwidths=bws, extra={LATENCY: latency})

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [
            ("layout", self.layout), ("chips", self.chips),
            ("choices", self.choices.describe()), ("FLOPs per chip", self.flops),
            *((f"{c.title}, s", c.time) for c in self.collectives),
            ("communication per chip, s", self.comm_time)]
        return f"{self.kind} weight-stationary MLP forward on {self.mesh.chip.name}", \
            tb.key_values(rows)


@dataclass(frozen=True)
class Split:
    """The best sizes of a 2-D layout's two groups of axes (``X``, ``YZ``), their product
    ``chips``, and the communication time per chip there."""

    sizes: dict[str, sp.Expr]
    comm_time: sp.Expr
    chips: sp.Expr


def _grouped(ws: WeightStationary, groups: tuple[tuple[str, ...], ...],
             chips: sp.Expr | None) -> tuple[list[sp.Expr], tuple[sp.Symbol, ...]]:
    """``comm_time`` in each group's product of sizes (a symbol named by the group, or
    ``chips`` for a single group): each group's first size is the product over the rest."""
    t = ws.comm_time
    names: list[sp.Symbol] = []
    for group in groups:
        sizes = [ws.mesh.axis(a).size for a in group]
        if not all(isinstance(s, sp.Symbol) for s in sizes):
            raise InputError(f"sizing the axes {''.join(group)} needs them as names (a mesh "
                             f"such as 'X=X:wraps'), got {', '.join(map(sp.sstr, sizes))}",
                             "weight_stationary")
        p = chips if chips is not None else sp.Symbol("".join(group), positive=True)
        t = t.subs(sizes[0], p / sp.Mul(*sizes[1:]))
        t = sp.cancel(t)
        if t.free_symbols & set(sizes[1:]):
            raise DerivationError(f"the communication depends on the sizes of "
                                  f"{''.join(group)} beyond their product (under exact "
                                  f"choices a ring's hops do: take latency=off)")
        names.append(p)
    return [t], tuple(names)


@records(flops=FLOPS, comm_time=TIME)
def weight_stationary(on: Mesh, *, f: AxesSpec, d: AxesSpec = (), batch: Any = "B",
                      d_model: Any = "D", d_ff: Any = "F", dtype: str = "bf16",
                      choices: Choices = EXACT) -> WeightStationary:
    """The forward of an MLP whose weights stay put: F split over the ``f`` axes and, for a
    2-D layout, D over the ``d`` axes (see the module).

    >>> from symroof.parallel.mesh import mesh
    >>> weight_stationary(mesh("X=8", "tpu-v5e"), f="X").kind
    '1-D'
    """
    where = "weight_stationary"
    fs = on.resolve(f) if f else ()
    ds = on.resolve(d) if d else ()
    if not fs:
        raise InputError("give the axes F is split over (f=...)", where)
    shared = sorted(set(fs) & set(ds))
    if shared:
        raise InputError(f"axis {shared[0]} is given to both d and f", where)
    choices.within(LINK_CHOICES, "a weight-stationary layout", where)
    dims = {"B": _size(batch, "batch"), "D": _size(d_model, "d_model"),
            "F": _size(d_ff, "d_ff")}

    def array(body: str) -> ShardedArray:
        return sharded(f"{dtype}[{body}]", on, dims=dims)

    sub_d, sub_f = _sub(ds), _sub(fs)
    resting = array(f"B, D{_sub((*ds, *fs))}")
    gather = all_gather(resting, fs, on)
    first = sharded_matmul(gather.result or resting, array(f"D{sub_d}, F{sub_f}"), on)
    second = sharded_matmul(first.result, array(f"F{sub_f}, D{sub_d}"), on, scatter="D")
    return WeightStationary(on, ds, fs, gather, (first, second)).under(choices)
