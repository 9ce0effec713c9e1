"""Where two terms of a serving step meet, solved for the batch (``symroof model --between``).

>>> from symroof import chip
>>> from symroof.models import model
>>> m = step_between(model("llama-2-7b"), "prefill", chip("h100-sxm"), None, "math,hbm",
...                  context=16)
>>> m.first, m.second, m.relation
('compute', 'hbm', B > 82269171/3826049)

The step is the one ``symroof model --decode/--prefill`` times (``plans.serving.step_on``),
built with the batch B as a symbol; its terms are ``compute``, ``hbm`` and one per
collective kind and axes (``tp over X (nvlink)``), which ``--between`` may name by the
link in parentheses. The two are balanced by the engine's ``solve_gap``: the batch B, and
on which side the first term is the larger (or that this is not proven).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import symbol
from ..core.printer import number_value, text
from ..engine.thresholds import ALIASES, UNPROVEN, solve_gap, term_pair
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.layers import DEFAULT_KERNEL, Kernel, spelled
from ..parallel.mesh import Mesh
from .device_step import device_step
from .options import StepOptions
from .serving import serving_axes, tp_over


@dataclass(frozen=True)
class Meet:
    """Terms ``first`` and ``second`` of a step are equal at ``symbol = exact``; above it
    (``direction`` ``>``) or below it (``<``) the first is the larger, or ``unproven``."""

    first: str
    second: str
    symbol: sp.Symbol
    exact: sp.Expr
    direction: str
    existence: sp.Basic

    @property
    def relation(self) -> sp.Rel:
        """``B > exact`` where the first term is the larger (``B = exact`` if unproven)."""
        if self.direction == UNPROVEN:
            return sp.Eq(self.symbol, self.exact, evaluate=False)
        return sp.Rel(self.symbol, self.exact, self.direction, evaluate=False)

    def to_json(self) -> dict[str, Any]:
        return {"terms": [self.first, self.second], "symbol": str(self.symbol),
                "relation": text(self.relation), "direction": self.direction,
                "exact": text(self.exact), "exact_value": number_value(self.exact)}


def step_between(cfg: ModelConfig, phase: str, chip: Chip | None, m: Mesh | None,
                 spec: str, *, context: int, dtype: str = "bf16",
                 kv_dtype: str | None = None, kernel: Kernel = DEFAULT_KERNEL) -> Meet:
    """Where the terms ``spec`` names (``"math,nvlink"``) of the step meet, in the batch."""
    pair = term_pair(spec)
    assert pair is not None
    axes = serving_axes(cfg, m, tp_over(m)) if m is not None else {}
    step = device_step(cfg, phase, m, axes, batch=None, context=context, chip=chip,
                       options=StepOptions(dtype=dtype, kv_dtype=kv_dtype, kernel=kernel))
    terms = {k: spelled(v) for k, v in step.terms.items()}
    a, b = (_term(terms, name) for name in pair)
    if a == b:
        raise InputError(f"{pair[0]!r} and {pair[1]!r} name the same term {a!r}", "between")
    s = symbol("B")
    try:
        exact, direction, existence = solve_gap(terms[a] - terms[b], s, f"T_{a} = T_{b}",
                                                (terms[a], terms[b]))
    except DerivationError as exc:
        raise DerivationError(exc.message, "between") from None
    return Meet(a, b, s, exact, direction, existence)


def _term(terms: Mapping[str, sp.Expr], name: str) -> str:
    """A term by its name, ``math`` for compute, or the one link in parentheses it names."""
    key = ALIASES.get(name, name)
    if key in terms:
        return key
    over = [k for k in terms if k.endswith(")") and
            name in k.rsplit("(", 1)[-1].rstrip(")").split(", ")]
    if len(over) == 1:
        return over[0]
    known = ", ".join("math" if k == "compute" else k for k in terms)
    why = f"{len(over)} terms run over {name!r}" if over else f"no term {name!r}"
    raise InputError(f"{why} in the step (terms: {known})", "between")
