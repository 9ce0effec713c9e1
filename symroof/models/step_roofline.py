"""Rooflines of a model's step on a chip: per op of a layer, and for the whole step.

>>> from symroof import chip
>>> from symroof.models import model
>>> srl = step_roofline(layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024),
...                     chip("a100-80gb"))
>>> sorted({r.roofline.bound() for r in srl.rows})
['hbm']
>>> critical_batch(model("llama-2-7b"), chip("a100-80gb"), context=128).integer
954

Each op gets the engine's roofline on the chip (norms and lookups on the vector unit in
fp32 when the catalogue lists one, else on the matrix unit, a bound the note states).
The step's named terms (``compute``, ``hbm``, each collective) sum each op's times, times
its block's count; its T_lower sums each op's max plus its serial terms (ops run one after
another, each overlapping its own compute and memory; a collective after an op waits for
it), T_upper each op's sum. The bound is the largest term (``engine.rooflines.binding``);
the critical batch is where compute outlasts every other term (``engine.critical``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

import sympy as sp

from ..core import tables as tb
from ..core.choices import EXACT, OP_CHOICES, Choices
from ..core.errors import InputError
from ..core.parse import symbol
from ..engine.asymptotics import expansion
from ..engine.critical import Critical, critical_size
from ..engine.ops import Op
from ..engine.rooflines import Roofline, binding, roofline, with_terms
from ..hardware.catalog import Chip
from .config import ModelConfig
from .layers import DEFAULT_KERNEL, Block, Kernel, StepOps, layer_ops, spelled


@dataclass(frozen=True)
class Row:
    """One op of a block, its roofline, and the peak it was charged at."""

    block: Block
    op: Op
    roofline: Roofline
    peak_note: str

    @property
    def count(self) -> sp.Expr:
        return self.block.count


@dataclass(frozen=True, repr=False)
class StepRoofline(tb.RichView):
    """Per-op rooflines and the step's summed times on ``chip``."""

    step: StepOps
    chip: Chip
    rows: tuple[Row, ...]
    t_math: sp.Expr
    t_memory: sp.Expr
    t_upper: sp.Expr
    ridge: sp.Expr

    @cached_property
    def t_lower(self) -> sp.Expr:
        """Each op's overlapped time (its roofline's T_lower) times its count, summed: built
        when first asked, since a Max of symbolic terms compares them pairwise and a
        forecast that takes no overlap never asks."""
        return sp.Add(*(r.count * r.roofline.t_lower for r in self.rows))

    def _view(self) -> tuple[str, tb.Table]:
        rows = [(tb.cell(tb.text(r.block.name)), tb.cell(tb.text(r.op.name)),
                 tb.cell(tb.math(r.count)), tb.cell(tb.math(r.op.flops)),
                 tb.cell(tb.math(r.op.bytes())), tb.cell(tb.math(r.roofline.intensity)),
                 tb.cell(tb.text(r.roofline.bound())), tb.cell(tb.math(r.roofline.t_lower)))
                for r in self.rows]
        rows.append((tb.cell(tb.text("step")), tb.cell(tb.text("all, times their counts")),
                     tb.cell(tb.text("")), tb.cell(tb.math(self.flops)),
                     tb.cell(tb.math(self.bytes)), tb.cell(tb.math(self.intensity)),
                     tb.cell(tb.text(self.bound())), tb.cell(tb.math(self.t_lower))))
        table = tb.Table(tuple(tb.Column(t) for t in (
            "block", "op", "count", "FLOPs", "bytes", "intensity", "bound", "T_lower, s")),
            tuple(rows))
        return f"{self.step.phase} step on {self.chip.name}", table

    @property
    def flops(self) -> sp.Expr:
        return self.step.total().flops

    @property
    def bytes(self) -> sp.Expr:
        return self.step.total().bytes()

    @property
    def intensity(self) -> sp.Expr:
        return sp.cancel(self.flops / self.bytes)

    @property
    def terms(self) -> dict[str, sp.Expr]:
        """The step's named terms: ``compute``, each memory level, each collective (an op's
        extra term), each summed over the ops times their counts."""
        out: dict[str, sp.Expr] = {"compute": self.t_math}
        for r in self.rows:
            for k, v in (*r.roofline.t_comms.items(), *r.roofline.extra.items()):
                out[k] = out.get(k, sp.S.Zero) + r.count * v
        return out

    def bound(self) -> str:
        """The largest term (``compute``, ``hbm``, a collective), ``undetermined`` while
        sizes are symbolic."""
        return binding(self.terms)


def op_roofline(o: Op, chip: Chip, extra: Mapping[str, sp.Expr] | None = None,
                ) -> tuple[Roofline, str]:
    """The roofline of ``o``, with ``extra`` serial terms (a collective after it); a
    vector-unit op without a listed peak falls back as noted."""
    if extra:
        rl, note = op_roofline(o, chip)
        return with_terms(rl, extra, tuple(extra)), note
    terms, serial = dict(extra or {}), tuple(extra or ())
    if o.compute != "vpu":
        return roofline(o, chip, extra=terms, serial=serial), f"{o.compute} {o.dtype}"
    for dtype in (o.dtype, "fp32"):
        try:
            return (roofline(o, chip, dtype=dtype, compute="vpu", extra=terms, serial=serial),
                    f"vpu {dtype}")
        except InputError:
            continue
    return (roofline(o, chip, compute="mxu", extra=terms, serial=serial),
            f"mxu {o.dtype} (no vector-unit peak listed: an upper bound on its rate)")


def peak_rooflines(step: StepOps, chip: Chip) -> tuple[tuple[Roofline, str], ...]:
    """Each op's roofline on ``chip`` (and its peak's note) with no extra term: what
    ``step_roofline`` builds on, once for any number of collective costs and fractions."""
    return tuple(op_roofline(o, chip) for _, o in step.rows())


def step_roofline(step: StepOps, chip: Chip,
                  extras: Mapping[str, Mapping[str, sp.Expr]] | None = None,
                  fractions: Mapping[str, sp.Expr] | None = None,
                  base: tuple[tuple[Roofline, str], ...] | None = None) -> StepRoofline:
    """Rooflines of every op of ``step`` on ``chip``, and the step's summed times;
    ``extras`` adds serial time terms to ops by name (a collective after the op);
    ``fractions`` the achieved fraction of peak of ``compute`` and memory levels (their
    times divided by it, an assumption the caller states); ``base`` the ops' rooflines
    from ``peak_rooflines`` when already built (the same step under other fractions)."""
    rows = []
    slow = dict(fractions or {})
    base = base or peak_rooflines(step, chip)
    for (block, o), (bare, note) in zip(step.rows(), base, strict=True):
        extra = (extras or {}).get(o.name)
        rl = with_terms(bare, extra, tuple(extra)) if extra else bare
        if slow:
            rl = replace(rl, t_math=rl.t_math / slow.get("compute", 1),
                         t_comms={k: v / slow.get(k, 1) for k, v in rl.t_comms.items()})
        rows.append(Row(block, o, rl, note))
    t_math = sp.Add(*(r.count * r.roofline.t_math for r in rows))
    t_mem = sp.Add(*(r.count * sp.Add(*r.roofline.t_comms.values()) for r in rows))
    t_upper = sp.Add(*(r.count * r.roofline.t_upper for r in rows))
    return StepRoofline(step, chip, tuple(rows), t_math, t_mem, t_upper,
                        chip.ridge(step.dtype))


def critical_of(srl: StepRoofline, B: sp.Symbol | None = None) -> Critical:
    """The batch above which ``srl`` (a step in the symbol B) is compute-bound: the engine's
    ``critical_size`` of its compute term against each of its other terms."""
    B = B or symbol("B")
    terms = {k: spelled(v) for k, v in srl.terms.items()}
    return critical_size(terms["compute"], {k: v for k, v in terms.items() if k != "compute"},
                         B)


def critical_batch(cfg: ModelConfig, chip: Chip, *, context: int | sp.Expr, dtype: str = "bf16",
                   kv_dtype: str | None = None, kernel: Kernel = DEFAULT_KERNEL,
                   choices: Choices = EXACT) -> Critical:
    """The decode batch at which the step's T_math reaches its memory time at ``context``;
    ``choices`` may say which experts a mixture of experts reads (``experts=all``: every
    one, the large-batch regime, where the batch has a closed form) and which HBM traffic
    the step counts (``traffic=weights``: the weights alone, a text's floorline).

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> critical_batch(model("mixtral-8x7b"), chip("tpu-v5e"), context=1,
    ...                choices=Choices(experts="all")).relation
    'B > 447979930600/457080599'
    >>> critical_batch(model("llama-2-7b"), chip("tpu-v5e"), context=1,
    ...                choices=Choices(traffic="weights")).integer
    244
    """
    choices.within(OP_CHOICES, "a critical batch")
    return critical_of(step_roofline(layer_ops(cfg, "decode", batch=None, context=context,
                                               dtype=dtype, kv_dtype=kv_dtype,
                                               experts=choices.experts,
                                               traffic=choices.traffic,
                                               **kernel.options()), chip))


def decode_intensity(cfg: ModelConfig, *, dtype: str = "bf16", kv_dtype: str | None = None,
                     kernel: Kernel = DEFAULT_KERNEL,
                     experts: str = "touched",
                     traffic: str = "all") -> tuple[sp.Expr, sp.Expr]:
    """The decode step's intensity in B and T (FLOPs over HBM bytes), and its limit as T
    grows (the KV-cache read dominating; with the scores materialised, their traffic too);
    a mixture's routed experts read as ``experts`` says and the traffic counted as
    ``traffic`` says (``layer_ops``).

    >>> from symroof.models import model
    >>> decode_intensity(model("llama-2-7b"))[1], decode_intensity(
    ...     model("llama-2-7b"), kernel=Kernel("materialised"))[1]
    (1, 128/129)
    """
    total = layer_ops(cfg, "decode", dtype=dtype, kv_dtype=kv_dtype, experts=experts,
                      traffic=traffic, **kernel.options()).total()
    intensity = sp.cancel(total.flops / total.bytes())
    return intensity, sp.cancel(expansion(intensity, "T->oo").leading)
