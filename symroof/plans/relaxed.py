"""The continuous relaxation of choosing a mix: FSDP over d_zero chips and tensor parallel
over d_tp, with d_zero d_tp = n, solved by Lagrange multipliers.

>>> from symroof.models import model
>>> r = relaxed_mix(model("llama-2-7b"), "tpu-v5p", 256, batch=256, context=4096)
>>> r.optimum.method, r.tp, r.nearest()
('power-law', 3*sqrt(15351)/172, [(128, 2), (64, 4)])

The objective is the step's communication time per device from the plan's own collectives
(``symroof.plans.template``: FSDP gathers each layer's weights, a 1/d_tp share of them, and
Megatron all-reduces activations, a 1/d_zero share of the batch), each byte costed at what
``symroof.parallel.collectives`` charges it on a long axis of the chip's network (N -> oo).
Terms that depend on neither degree do not move the optimum and are dropped. The objective
is then A/d_tp + B/d_zero under d_zero d_tp = n: the power-law fast path gives
d_tp* = sqrt(A n / B) exactly, balancing the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.parse import symbol
from ..engine.optimize import Optimum, lagrange
from ..hardware.catalog import Chip, load_catalog
from ..models.config import ModelConfig
from ..parallel.collectives import collective
from ..parallel.mesh import mesh
from .template import BATCH, D_PP, D_TP, D_ZERO, MICRO, training_template

N_AXIS = symbol("N")


@dataclass(frozen=True)
class Relaxed:
    """The relaxed optimum: d_tp* and d_zero* (exact), the objective, the Lagrange record."""

    objective: sp.Expr
    optimum: Optimum
    tp: sp.Expr
    zero: sp.Expr
    chips: int

    def nearest(self) -> list[tuple[int, int]]:
        """The whole (d_zero, d_tp) splits of the chips nearest the relaxed d_tp, below and
        above it."""
        splits = [(self.chips // t, t) for t in range(1, self.chips + 1)
                  if self.chips % t == 0]
        below = [s for s in splits if s[1] <= self.tp]
        above = [s for s in splits if s[1] >= self.tp]
        return sorted({*(below[-1:]), *(above[:1])}, key=lambda s: s[1])


def relaxed_mix(cfg: ModelConfig, chip: Chip | str, chips: int, *, batch: int,
                context: int) -> Relaxed:
    """The continuous optimum of FSDP x tensor parallel over ``chips`` chips."""
    the_chip = load_catalog()[chip] if isinstance(chip, str) else chip
    axis = mesh(f"X={N_AXIS}", the_chip)
    per_byte = {}
    for kind in ("allgather", "reducescatter", "allreduce"):
        t = collective(kind, 1, ["X"], axis).bandwidth_time
        per_byte[kind] = sp.limit(t, N_AXIS, sp.oo)
    template = training_template(cfg, context=context, kinds=("zero", "tp"), zero_stage=3)
    b = sp.Integer(batch) / D_ZERO
    total = sp.S.Zero
    for u in template.uses:
        count = sp.sympify(u.per_step).subs({MICRO: 1, D_PP: 1})
        total += count * u.nbytes.subs(BATCH, b) * per_byte[u.collective]
    total = sp.expand(total)
    moving = sp.Add(*(t for t in sp.Add.make_args(total) if t.has(D_TP) or t.has(D_ZERO)))
    x, y = sp.symbols("d_zero d_tp", positive=True)
    objective = moving.subs({D_ZERO: x, D_TP: y})
    opt = lagrange(objective, sp.Eq(x * y, chips), [x, y], method="power-law")
    return Relaxed(objective, opt, sp.radsimp(opt.solution[y]), sp.radsimp(opt.solution[x]),
                   chips)
