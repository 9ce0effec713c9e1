"""Rooflines of a model's step on a chip: per op of a layer, and for the whole step.

>>> from symroof import chip
>>> from symroof.models import model
>>> srl = step_roofline(layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024),
...                     chip("a100-80gb"))
>>> sorted({r.roofline.bound() for r in srl.rows})
['hbm']
>>> critical_batch(model("llama-2-7b"), chip("a100-80gb"), context=128).integer
1082

Each op gets the engine's roofline on the chip (norms and lookups on the vector unit in
fp32 when the catalogue lists one, else on the matrix unit, a bound the note states).
The step's T_math and T_memory sum each op's times, times its block's count; its T_lower
sums each op's max (ops run one after another, each overlapping its own compute and
memory), T_upper each op's sum. The step is compute-bound when its summed T_math exceeds
its summed memory time; the critical batch solves that balance for B.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import sympy as sp

from ..core import tables as tb
from ..core.errors import DerivationError, InputError
from ..core.parse import symbol
from ..engine.asymptotics import expansion
from ..engine.ops import Op
from ..engine.rooflines import Roofline, roofline
from ..engine.thresholds import Threshold, threshold
from ..hardware.catalog import Chip
from .config import ModelConfig
from .layers import Block, Step, layer_ops

SEARCH_LIMIT = 2**24


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

    step: Step
    chip: Chip
    rows: tuple[Row, ...]
    t_math: sp.Expr
    t_memory: sp.Expr
    t_lower: sp.Expr
    t_upper: sp.Expr
    ridge: sp.Expr
    t_network: sp.Expr = sp.S.Zero

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

    def bound(self) -> str:
        """``compute``, ``hbm`` or ``network`` (the collectives), whichever sums to the most
        time over the step; ``undetermined`` while sizes are symbolic."""
        times = {"compute": self.t_math, "hbm": self.t_memory, "network": self.t_network}
        if not all(t.is_number for t in times.values()):
            return "undetermined"
        return max(times, key=lambda k: (times[k], k == "compute"))


def op_roofline(o: Op, chip: Chip, extra: Mapping[str, sp.Expr] | None = None,
                ) -> tuple[Roofline, str]:
    """The roofline of ``o``, with ``extra`` serial terms (a collective after it); a
    vector-unit op without a listed peak falls back as noted."""
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


def step_roofline(step: Step, chip: Chip,
                  extras: Mapping[str, Mapping[str, sp.Expr]] | None = None) -> StepRoofline:
    """Rooflines of every op of ``step`` on ``chip``, and the step's summed times;
    ``extras`` adds serial time terms to ops by name (``ShardedStep.extras()``)."""
    rows = []
    for block, o in step.rows():
        rl, note = op_roofline(o, chip, (extras or {}).get(o.name))
        rows.append(Row(block, o, rl, note))
    t_math = sp.Add(*(r.count * r.roofline.t_math for r in rows))
    t_mem = sp.Add(*(r.count * sp.Add(*r.roofline.t_comms.values()) for r in rows))
    t_net = sp.Add(*(r.count * sp.Add(*r.roofline.extra.values()) for r in rows))
    t_lower = sp.Add(*(r.count * r.roofline.t_lower for r in rows))
    t_upper = sp.Add(*(r.count * r.roofline.t_upper for r in rows))
    return StepRoofline(step, chip, tuple(rows), t_math, t_mem, t_lower, t_upper,
                        chip.ridge(step.dtype), t_net)


@dataclass(frozen=True)
class CriticalBatch:
    """The batch above which decode is compute-bound at a context, or why there is none.
    ``exact`` is the balance point when it has a closed form; ``integer`` the first whole
    batch on the compute-bound side; ``reason`` says why none exists."""

    relation: str
    exact: sp.Expr | None
    integer: int | None
    reason: str = ""
    threshold: Threshold | None = None


def critical_batch(cfg: ModelConfig, chip: Chip, *, context: int | sp.Expr, dtype: str = "bf16",
                   kv_dtype: str | None = None) -> CriticalBatch:
    """The decode batch at which the step's T_math reaches its memory time at ``context``."""
    B = symbol("B")
    srl = step_roofline(layer_ops(cfg, "decode", batch=None, context=context, dtype=dtype,
                                  kv_dtype=kv_dtype), chip)
    gap = sp.expand(srl.t_math - srl.t_memory)
    if gap.is_polynomial(B):
        base = roofline(srl.step.total(), chip)
        rl = replace(base, t_math=srl.t_math, t_comms={"hbm": srl.t_memory}, primary="hbm")
        try:
            th = threshold(rl, B)
        except DerivationError as exc:
            return CriticalBatch("none", None, None, _never(srl, B) or exc.message)
        if not th.exact.is_number:
            return CriticalBatch(f"B > {th.exact}", th.exact, None, "", th)
        return CriticalBatch(f"B {th.direction} {th.exact}", th.exact, th.integer, "", th)
    return _search(gap, B, srl)


def _never(srl: StepRoofline, B: sp.Symbol) -> str:
    limit = intensity_limit_in_batch(srl.flops, srl.bytes, B)
    if limit is not None and limit <= srl.ridge:
        return (f"decode never turns compute-bound here: its intensity tends to "
                f"{limit} (about {float(limit):.4g}) <= {srl.ridge} FLOP/byte, the chip's "
                f"ridge, as B grows: the KV cache read grows with B like the FLOPs")
    return ""


def intensity_limit_in_batch(flops: sp.Expr, moved: sp.Expr, B: sp.Symbol) -> sp.Expr | None:
    """FLOPs over bytes as B grows: the ratio of their leading coefficients in B, terms
    r^B with 0 < r < 1 (experts not yet touched) dropped as they vanish."""
    def leading(expr: sp.Expr) -> tuple[int, sp.Expr] | None:
        poly = sp.Add(*(t for t in sp.Add.make_args(sp.expand(expr)) if t.is_polynomial(B)))
        p = sp.Poly(poly, B)
        return (p.degree(), p.LC()) if not p.is_zero else None
    top, bottom = leading(flops), leading(moved)
    if top is None or bottom is None:
        return None
    if top[0] != bottom[0]:
        return sp.oo if top[0] > bottom[0] else sp.S.Zero
    return sp.cancel(top[1] / bottom[1])


def _search(gap: sp.Expr, B: sp.Symbol, srl: StepRoofline) -> CriticalBatch:
    """The first whole B with gap >= 0 when the gap has no closed-form root (routed experts
    touched E (1 - (1 - k/E)^B)). The gap is a polynomial in B plus terms c r^B with
    0 < r < 1, bounded by |c|: the sign is exact, and r^B is computed only where the
    bound leaves it open. The gap is convex in B, so its sign changes at most once."""
    terms = sp.Add.make_args(gap)
    decaying = [t for t in terms if not t.is_polynomial(B)]
    poly = sp.Add(*(t for t in terms if t.is_polynomial(B)))
    bound = sp.Add(*(abs(t.subs(B, 0)) for t in decaying))
    if sp.Poly(poly, B).LC() <= 0:
        return CriticalBatch("none", None, None, _never(srl, B) or
                             "decode never turns compute-bound here as B grows")

    def ok(b: int) -> bool:
        base = poly.subs(B, b)
        if base - bound >= 0:
            return True
        if base + bound < 0:
            return False
        return bool(gap.subs(B, b) >= 0)
    if ok(1):
        return CriticalBatch("B >= 1", None, 1)
    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > SEARCH_LIMIT:
            return CriticalBatch("none", None, None,
                                 f"not compute-bound at any B up to {SEARCH_LIMIT}")
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return CriticalBatch(f"B >= {hi}", None, hi, "no closed form: the experts a batch "
                         "touches grow like E (1 - (1 - k/E)^B); the integer is exact")


def decode_intensity(cfg: ModelConfig, *, dtype: str = "bf16",
                     kv_dtype: str | None = None) -> tuple[sp.Expr, sp.Expr]:
    """The decode step's intensity in B and T (FLOPs over HBM bytes), and its limit as T
    grows (the KV-cache read dominating).

    >>> from symroof.models import model
    >>> decode_intensity(model("llama-2-7b"))[1]
    128/129
    """
    total = layer_ops(cfg, "decode", dtype=dtype, kv_dtype=kv_dtype).total()
    intensity = sp.cancel(total.flops / total.bytes())
    return intensity, sp.cancel(expansion(intensity, "T->oo").leading)
