"""A two-matmul MLP trained over a mesh: FSDP over some axes, tensor parallel over others.

>>> from symroof.parallel.mesh import mesh
>>> s = mlp_step(mesh("X=16,Y=16", "tpu-v5e"), fsdp="XY")
>>> s.layout
'In[B_XY, D] W_in[D_XY, F] W_out[F, D_XY]'
>>> fwd = s.phase("forward")
>>> fwd.flops, [u.title for u in fwd.uses]
(B*D*F/64, ['fsdp: AllGather_XY W_in bf16[D_XY, F]', 'fsdp: AllGather_XY W_out bf16[F, D_XY]'])
>>> fwd.terms["fsdp"]
17*D*F/768000000000 + 1/31250
>>> s.critical_batch().per_chip
(418625*D*F + 605184000000)/(384*D*F)
>>> from symroof.core.choices import BOOK     # V/W per collective, no latency: C/(M W)
>>> mlp_step(s.mesh, fsdp="XY", choices=BOOK).critical_batch().per_chip
9850/9

The layer is the books' simplified Transformer block, ``In[B, D] x W_in[D, F] x W_out[F,
D]``, laid out as ``In[B_fsdp, D_tp] W_in[D_fsdp, F_tp] W_out[F_tp, D_fsdp]``: the batch
and the weights split over the FSDP axes, the hidden width F (and the activations' D) over
the tensor-parallel axes. Each matmul of the forward pass (two) and of the backward pass
(four: the two weight gradients and the two input gradients) is a sharded matmul of
:mod:`symroof.parallel.matmul`, so the collectives are the engine's own: FSDP gathers each
weight before use (again in the backward pass) and reduce-scatters the weight gradients;
tensor parallelism gathers the activations before W_in and reduce-scatters after W_out
(the backward pass gathers the output gradient and the input again and reduce-scatters the
input gradient). Several FSDP (or TP) axes of one torus gather at once, their bandwidths
adding (``M`` axes, ``M`` times the rate).

Each phase has a compute term (its FLOPs per device over the peak), a comm term per kind
(``fsdp``, ``tp``: the times of its collectives, under ``choices``: a ring's (n-1)/n exact
or as its leading term, latency on or off) and a term per link (collectives on one link
add; terms on different links overlap, as everywhere in the engine). The critical batch is
the global batch B above which each phase's compute exceeds every link term; ``per_chip``
is B over the chips the layout spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.choices import EXACT, Choices
from ..core.errors import DerivationError, InputError
from ..core.parse import symbol
from ..engine.critical import Critical
from ..engine.ops import Op
from ..engine.rooflines import Roofline, roofline
from ..engine.thresholds import between
from .collectives import TITLES, AxesSpec, Collective
from .matmul import ShardedMatmul, sharded_matmul
from .mesh import Mesh
from .sharding import ShardedArray, sharded

MLP_SHARDINGS = ("fsdp", "tp")
PHASES = ("forward", "backward")
# each matmul's operands and result, by phase, in the order mlp_step builds them
NAMES = {"forward": (("In", "W_in", "Tmp"), ("Tmp", "W_out", "Out")),
         "backward": (("Tmp^T", "dOut", "dW_out"), ("dOut", "W_out^T", "dTmp"),
                      ("dTmp^T", "In", "dW_in^T"), ("dTmp", "W_in^T", "dIn"))}


@dataclass(frozen=True)
class Use:
    """One collective of a phase: its ``kind`` (fsdp or tp), ``what`` it moves (an operand
    it gathers or the result it scatters: ``W_in``, ``dOut``) and the collective, costed
    under the step's choices."""

    kind: str
    what: str
    collective: Collective

    @property
    def title(self) -> str:
        c = self.collective
        return f"{self.kind}: {TITLES[c.kind]}_{''.join(c.axes)} {self.what} " \
            f"{c.array.text if c.array is not None else ''}".rstrip()


@dataclass(frozen=True, repr=False)
class Phase(tb.RichView):
    """The forward or backward pass of the layer on one device."""

    name: str
    matmuls: tuple[ShardedMatmul, ...]
    uses: tuple[Use, ...]
    mesh: Mesh

    @property
    def flops(self) -> sp.Expr:
        """FLOPs per device."""
        return sp.Add(*(m.flops for m in self.matmuls))

    @property
    def compute_time(self) -> sp.Expr:
        return self.flops / self.mesh.chip.peak(self.matmuls[0].lhs.dtype)

    def comm_time(self, kind: str) -> sp.Expr:
        """The summed times (bandwidth and latency terms) of ``kind``'s collectives."""
        if kind not in MLP_SHARDINGS:
            raise InputError(f"unknown kind {kind!r} (kinds: {', '.join(MLP_SHARDINGS)})")
        return sp.Add(*(u.collective.time for u in self.uses if u.kind == kind))

    @property
    def terms(self) -> dict[str, sp.Expr]:
        """``compute`` and the comm time of each kind that sends something."""
        kinds = [k for k in MLP_SHARDINGS if any(u.kind == k for u in self.uses)]
        return {"compute": self.compute_time, **{k: self.comm_time(k) for k in kinds}}

    @property
    def links(self) -> dict[str, sp.Expr]:
        """The time spent on each link: every stage of every collective that crosses it
        (its bandwidth and latency terms)."""
        out: dict[str, sp.Expr] = {}
        for u in self.uses:
            for s in u.collective.stages:
                out[s.link] = out.get(s.link, sp.S.Zero) + s.bandwidth_time + s.latency_time
        return out

    def roofline(self) -> Roofline:
        """The phase's roofline: compute, HBM (the local matmuls' operands and results) and
        one term per link."""
        reads = sp.Add(*(m.local_lhs.device_bytes + m.local_rhs.device_bytes
                         for m in self.matmuls))
        writes = sp.Add(*(m.partial.device_bytes for m in self.matmuls))
        op = Op(f"MLP {self.name}", self.flops, {"hbm": reads}, {"hbm": writes},
                dtype=self.matmuls[0].lhs.dtype)
        return roofline(op, self.mesh.chip, extra=self.links)

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [("FLOPs per device", self.flops),
                                       *((f"T_{k}, s", t) for k, t in self.terms.items()),
                                       *((u.title, u.collective.time) for u in self.uses)]
        return f"MLP {self.name} pass", tb.key_values(rows)


@dataclass(frozen=True, repr=False)
class MlpStep(tb.RichView):
    """A training step of one MLP layer on a mesh (see the module)."""

    mesh: Mesh
    fsdp: tuple[str, ...]
    tp: tuple[str, ...]
    batch: sp.Symbol
    sizes: Mapping[str, sp.Expr]
    dtype: str
    choices: Choices
    phases: tuple[Phase, ...]

    @property
    def layout(self) -> str:
        f, t = _sub(self.fsdp), _sub(self.tp)
        return f"In[B{f}, D{t}] W_in[D{f}, F{t}] W_out[F{t}, D{f}]"

    @property
    def chips(self) -> sp.Expr:
        """The chips the layout spans: the FSDP axes times the tensor-parallel axes."""
        return sp.Mul(*(self.mesh.axis(a).size for a in (*self.fsdp, *self.tp)))

    def phase(self, name: str) -> Phase:
        for p in self.phases:
            if p.name == name:
                return p
        raise InputError(f"unknown phase {name!r} (phases: {', '.join(PHASES)})")

    def critical_batch(self) -> Critical:
        """The global batch (the size of B) above which both phases are compute-bound
        against every link; a link whose term grows with B as fast as the compute does
        either never binds or always does, and the latter is a DerivationError."""
        b = self.batch
        if b not in self.phases[0].compute_time.free_symbols:
            raise InputError("the batch is a number: give it as a name to solve for it",
                             "critical batch")
        found: list[tuple[str, str, sp.Expr]] = []
        exists: list[sp.Basic] = []
        for p in self.phases:
            for link, t in p.links.items():
                for v, cond in _threshold(p, link, t, b):
                    found.append((p.name, link, v))
                    exists.append(cond)
        if not found:
            raise DerivationError("no link time grows slower than the compute: the step "
                                  "is compute-bound at every batch")
        n = self.chips
        value = sp.Max(*(v for _, _, v in found))
        return Critical(f"{b} > {sp.sstr(value)}", value,
                        int(sp.floor(value)) + 1 if value.is_number else None, size=b,
                        per_chip=sp.Max(*(sp.cancel(v / n) for _, _, v in found)), chips=n,
                        binding=tuple(found), existence=sp.And(*exists))

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [("layout", self.layout), ("chips", self.chips),
                                       ("choices", self.choices.describe())]
        for p in self.phases:
            rows += [(f"{p.name}: T_{k}, s", t) for k, t in p.terms.items()]
        return f"MLP step on {self.mesh.chip.name}", tb.key_values(rows)


def mlp_step(on: Mesh, *, fsdp: AxesSpec = (), tp: AxesSpec = (), batch: Any = "B",
             d_model: Any = "D", d_ff: Any = "F", dtype: str = "bf16",
             choices: Choices = EXACT) -> MlpStep:
    """One MLP layer's training step with the batch and weights split over ``fsdp`` and
    F over ``tp`` (each an axis name, a string of axis names, or a list)."""
    f = on.resolve(fsdp) if fsdp else ()
    t = on.resolve(tp) if tp else ()
    if not f and not t:
        raise InputError("give the FSDP axes, the tensor-parallel axes or both",
                         "mlp_step")
    shared = sorted(set(f) & set(t))
    if shared:
        raise InputError(f"axis {shared[0]} is given to both fsdp and tp", "mlp_step")
    dims = {"B": _size(batch, "batch"), "D": _size(d_model, "d_model"),
            "F": _size(d_ff, "d_ff")}
    bf, dt, df, ft = (f"{n}{_sub(a)}" for n, a in (("B", f), ("D", t), ("D", f), ("F", t)))

    def mm(lhs: str, rhs: str, scatter: str | None) -> ShardedMatmul:
        return sharded_matmul(_array(dtype, lhs, on, dims), _array(dtype, rhs, on, dims), on,
                              scatter=scatter)

    on_t, on_f = ("D" if t else None), ("D" if f else None)
    forward = (mm(f"{bf}, {dt}", f"{df}, {ft}", None),        # Tmp = In x W_in
               mm(f"{bf}, {ft}", f"{ft}, {df}", on_t))        # Out = Tmp x W_out
    backward = (mm(f"{ft}, {bf}", f"{bf}, {dt}", on_f),       # dW_out = Tmp^T x dOut
                mm(f"{bf}, D", f"{df}, {ft}", None),          # dTmp = dOut x W_out^T
                mm(f"{ft}, {bf}", f"{bf}, {dt}", on_f),       # dW_in^T = dTmp^T x In
                mm(f"{bf}, {ft}", f"{ft}, {df}", on_t))       # dIn = dTmp x W_in^T
    phases = tuple(Phase(name, ms, tuple(_uses(ms, NAMES[name], f, choices)), on)
                   for name, ms in (("forward", forward), ("backward", backward)))
    b = dims["B"]
    return MlpStep(on, f, t, b if isinstance(b, sp.Symbol) else symbol("B"), dims, dtype,
                   choices, phases)


def _uses(matmuls: tuple[ShardedMatmul, ...], names: tuple[tuple[str, str, str], ...],
          fsdp: tuple[str, ...], choices: Choices) -> list[Use]:
    """Each collective of each matmul, named by the array it moves: an operand it gathers
    or the result it scatters."""
    out = []
    for m, (lhs, rhs, result) in zip(matmuls, names, strict=True):
        for c in m.collectives:
            moved = [d.name for d in c.array.dims] if c.array is not None else []
            what = result if c in m.after else \
                lhs if moved == [d.name for d in m.lhs.dims] else rhs
            out.append(Use("fsdp" if set(c.axes) <= set(fsdp) else "tp", what,
                           c.under(choices)))
    return out


def _threshold(p: Phase, link: str, t: sp.Expr, b: sp.Symbol,
               ) -> list[tuple[sp.Expr, sp.Basic]]:
    """The batch above which ``p``'s compute exceeds its time ``t`` on ``link`` (none when
    it does at every batch)."""
    slope = sp.cancel(p.compute_time / b)
    rest = sp.expand(t - sp.diff(t, b) * b)
    if rest == 0:  # both grow with B: compare the slopes
        gap = sp.cancel(slope - sp.diff(t, b))
        if gap.is_nonnegative:
            return []
        if gap.is_negative:
            raise DerivationError(f"the {p.name} pass is bound by {link} at every batch: "
                                  f"its time grows with B faster than the compute")
        raise DerivationError(f"whether the {p.name} pass is ever compute-bound against "
                              f"{link} is not proven: it needs {sp.sstr(gap)} >= 0")
    try:
        th = between(p.roofline(), "math", link, b)
    except DerivationError as exc:
        raise DerivationError(f"the {p.name} pass is bound by {link} at every batch: "
                              f"{exc}") from None
    if th.direction != ">":
        raise DerivationError(f"the {p.name} pass is compute-bound against {link} only "
                              f"below B = {sp.sstr(th.exact)}")
    return [(th.exact, th.existence)]


def _array(dtype: str, body: str, on: Mesh, dims: dict[str, sp.Expr]) -> ShardedArray:
    return sharded(f"{dtype}[{body}]", on, dims=dims)


def _sub(axes: tuple[str, ...]) -> str:
    return f"_{''.join(axes)}" if axes else ""


def _size(value: Any, name: str) -> sp.Expr:
    if isinstance(value, str):
        return symbol(value) if value.isidentifier() else sp.Integer(_whole(value, name))
    if isinstance(value, bool) or not isinstance(value, (int, sp.Integer, sp.Symbol)):
        raise InputError(f"{name} is a whole number or a name, got {value!r}", "mlp_step")
    if isinstance(value, sp.Symbol):
        return value
    if int(value) < 1:
        raise InputError(f"{name} needs at least one element, got {value}", "mlp_step")
    return sp.Integer(int(value))


def _whole(text: str, name: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise InputError(f"{name} is a whole number or a name, got {text!r}", "mlp_step")
    return int(text)
