"""A roofline analysed: its times at given sizes, its intensity's expansion in a regime and
a threshold, with one JSON form (exact values as strings, floats beside).

>>> from symroof import chip, einsum, roofline
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> RooflineAnalysis(rl, None, None, None, {}).to_json()["ridge"]
'9850/41'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..core.printer import number_value, text
from .asymptotics import Expansion
from .rooflines import Roofline
from .thresholds import Threshold


@dataclass(frozen=True)
class RooflineAnalysis:
    """A roofline analysed: the roofline (at the given sizes), the intensity's expansion in a
    regime, and a threshold with the condition that it exists."""

    roofline: Roofline
    expansion: Expansion | None
    threshold: Threshold | None
    existence: sp.Basic | None
    values: Mapping[sp.Symbol, sp.Expr]
    notes: tuple[tuple[str, str], ...] = ()  # (label, sentence): what the figures assumed

    def to_json(self) -> dict[str, Any]:
        """The JSON of the command-line contract: exact values as strings, floats beside."""
        rl = self.roofline
        out: dict[str, Any] = {
            "op": rl.op.name,
            "chip": rl.chip.name,
            "dtype": rl.op.dtype,
            "compute": rl.op.compute,
            "values": {str(k): text(v) for k, v in self.values.items()},
            "notes": [{"label": label, "text": said} for label, said in self.notes],
        }
        moved = rl.op.bytes(rl.primary) if rl.primary in rl.op.levels else \
            rl.op.comms.get(rl.primary, sp.S.Zero)
        fields = {"flops": rl.op.flops, "bytes": moved, "intensity": rl.intensity,
                  "ridge": rl.ridge, "peak": rl.peak, "t_math": rl.t_math,
                  "t_lower": rl.t_lower, "t_upper": rl.t_upper}
        for key, value in fields.items():
            _put(out, key, value)
        out["primary"] = rl.primary
        out["t_comms"] = {k: text(v) for k, v in rl.t_comms.items()}
        out["t_comms_value"] = {k: number_value(v) for k, v in rl.t_comms.items()}
        out["terms"] = {k: text(v) for k, v in rl.terms.items()}
        out["terms_value"] = {k: number_value(v) for k, v in rl.terms.items()}
        out["serial"] = list(rl.serial)
        out["bound"] = rl.bound()
        out["compute_bound_when"] = text(rl.condition())
        if self.expansion is not None:
            _put(out, "intensity_leading", self.expansion.leading)
            _put(out, "intensity_correction", self.expansion.correction)
            out["regime"] = self.expansion.regime.text
        else:
            out["intensity_leading"] = None
        th = self.threshold
        if th is None:
            out["threshold"] = None
        else:
            block: dict[str, Any] = {"symbol": str(th.symbol), "resource": th.resource,
                                     "between": th.resource.split(",") if "," in
                                     th.resource else ["math", th.resource],
                                     "relation": text(th.inequality),
                                     "direction": th.direction}
            _put(block, "exact", th.exact)
            _put(block, "asymptotic", th.asymptotic)
            block["integer"], block["integer_of"] = th.integer, "exact"
            if th.integer is None and th.asymptotic is not None and th.asymptotic.is_number:
                block["integer"] = replace(th, exact=th.asymptotic).integer
                block["integer_of"] = "asymptotic"
            block["exists_when"] = text(self.existence)
            out["threshold"] = block
        return out


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    out[key] = None if value is None else text(value)
    out[f"{key}_value"] = None if value is None else number_value(value)
