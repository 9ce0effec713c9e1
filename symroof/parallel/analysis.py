"""A collective analysed: its costs at given sizes and the size below which it is
latency-bound (or where two named terms meet), with one JSON form.

>>> from symroof import all_gather, mesh
>>> c = all_gather("bf16[B_X, D]", "X", mesh("X=16", "tpu-v5e"))
>>> CollectiveAnalysis(c, {}, None).to_json()["hops"]
'8'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.parse import exact
from ..core.printer import number_value, text
from ..engine.thresholds import UNPROVEN, Threshold
from .collectives import Collective


@dataclass(frozen=True)
class CollectiveAnalysis:
    """A collective at given sizes, with the size below which it is latency-bound (or where
    two of its terms meet, ``pair``)."""

    collective: Collective
    values: Mapping[sp.Symbol, sp.Expr]
    threshold: Threshold | None
    pair: tuple[str, str] | None = None  # the threshold is between these terms

    def value(self, expr: sp.Expr | None) -> sp.Expr | None:
        return None if expr is None else exact(expr).subs(self.values)

    def to_json(self) -> dict[str, Any]:
        """The contract's fields, exact as strings with ``_value`` floats beside."""
        c = self.collective
        out: dict[str, Any] = {
            "collective": c.kind, "algorithm": c.algorithm, "axes": list(c.axes),
            "mesh": c.mesh.spec,
            "chip": c.mesh.chip.name,
            "topology": c.mesh.topology.name if c.mesh.topology else None,
            "array": c.array.text if c.array is not None else None,
            "result": c.result.text if c.result is not None else None,
            "values": {str(k): text(v) for k, v in self.values.items()},
            "assumptions": list(c.mesh.assumptions),
            "choices": c.choices.to_json(),
        }
        devices = self.value(c.devices)
        out["devices"] = int(devices) if devices is not None and devices.is_Integer else \
            None if devices is None else text(devices)
        for key, expr in (("nbytes", c.nbytes),
                          ("bytes_per_device", c.bytes_per_device),
                          ("bandwidth_time", c.bandwidth_time),
                          ("latency_time", c.latency_time), ("time", c.time),
                          ("hops", c.hops), ("latency_bound_below", c.latency_bound_below)):
            v = self.value(expr)
            out[key] = None if v is None else text(v)
            out[f"{key}_value"] = None if v is None else number_value(v)
        out["bytes_per_link"] = {k: text(self.value(v)) for k, v in c.bytes_per_link.items()}
        out["axes_detail"] = [c.mesh.axis(a).describe() for a in c.axes]
        th = self.threshold
        if self.pair is not None and th is not None:
            out["latency_bound"] = None
            out["between"] = {"terms": list(self.pair), "symbol": str(th.symbol),
                              "relation": text(th.inequality), "direction": th.direction,
                              "exact": text(th.exact), "exact_value": number_value(th.exact),
                              "integer": th.integer}
            return out
        out["latency_bound"] = None if th is None else {
            "symbol": str(th.symbol), "relation": text(sp.Rel(th.symbol, th.exact,
                                                              _flip(th.direction))),
            "exact": text(th.exact), "exact_value": number_value(th.exact),
            "integer": _last_below(th)}
        return out


def _flip(direction: str) -> str:
    """The latency-bound side; ``==`` (the balance point only) when it is not proven."""
    return "==" if direction == UNPROVEN else "<" if direction == ">" else ">"


def _last_below(th: Threshold) -> int | None:
    """The largest whole size still latency-bound, when the threshold is a number."""
    if not th.exact.is_number or th.direction == UNPROVEN:
        return None
    return int(sp.ceiling(th.exact)) - 1 if th.direction == ">" else int(sp.floor(th.exact)) + 1
