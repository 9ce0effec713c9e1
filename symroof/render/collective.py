"""The text view of ``symroof collective``: renders only, every value was derived before.

>>> from symroof import all_gather, mesh
>>> from symroof.parallel.analysis import CollectiveAnalysis
>>> r = CollectiveAnalysis(all_gather("bf16[B_X, D]", "X", mesh("X=16", "tpu-v5e")), {},
...                        None)
>>> lines = collective_lines(r)
>>> lines[0]
'AllGather_X bf16[B_X, D] on tpu-v5e (mesh X=16, topology tpu-v5e-pod)'
>>> [" ".join(line.split()) for line in lines if "latency-bound" in line]
['latency-bound below V < 768 kB']
"""

from __future__ import annotations

import sympy as sp

from ..core.printer import approx, si, text
from ..engine.thresholds import UNPROVEN
from ..parallel.analysis import CollectiveAnalysis
from ..parallel.collectives import Collective

NBYTES = {"allgather": "gathered bytes per device", "reducescatter": "bytes reduced per device",
          "allreduce": "bytes reduced per device", "alltoall": "bytes per device",
          "permute": "bytes per device"}


def _show(value: sp.Expr | None, unit: str = "") -> str:
    """Bytes and seconds that are numbers as decimals with SI prefixes (``3.889 ms``; the
    exact values are in --json); formulas and other numbers as the readable-form rule."""
    if value is None:
        return "-"
    value = sp.sympify(value)
    if unit in ("s", "B") and value.is_number:
        return si(value, unit)
    shown = text(value)
    if (value.is_number and not value.is_Integer) or (value.is_Integer and abs(value) >= 10**7):
        shown += f" ≈ {approx(value)}"
    return f"{shown} {unit}".rstrip()


def collective_lines(result: CollectiveAnalysis) -> list[str]:
    """The collective's terms, one per line."""
    c: Collective = result.collective
    m = c.mesh
    v = result.value
    head = f"{c.title} on {m.chip.name} (mesh {m.spec}" + (
        f", topology {m.topology.name})" if m.topology else ")")
    rows: list[tuple[str, str]] = [(f"axis {a}", m.axis(a).describe()) for a in c.axes]
    if c.result is not None:
        rows.append(("result", c.result.text))
    rows += [(f"V ({NBYTES[c.kind]})", _show(v(c.nbytes), "B")),
             ("bytes per device", _show(v(c.bytes_per_device), "B"))]
    rows += [(f"bytes per link ({k})", _show(v(b), "B")) for k, b in c.bytes_per_link.items()]
    rows += [("bandwidth time", _show(v(c.bandwidth_time), "s")),
             ("latency time", _show(v(c.latency_time), "s") + f"  ({text(c.hops)} hops)"),
             ("time", _show(v(c.time), "s"))]
    bound = c.latency_bound_below
    rows.append(("latency-bound below", "-" if bound is None else
                 f"V < {_show(v(bound), 'B')}"))
    th = result.threshold
    if th is not None and result.pair is not None:
        a, b = result.pair
        if th.direction == UNPROVEN:
            rows.append((f"T_{a} = T_{b}", f"{th.symbol} = {_show(th.exact)} (which side "
                                           f"has the larger is not proven)"))
        else:
            rows.append((f"T_{a} > T_{b} when", f"{th.symbol} {th.direction} "
                                                f"{_show(th.exact)}"))
    elif th is not None and th.direction == UNPROVEN:
        rows.append(("latency meets bandwidth", f"{th.symbol} = {_show(th.exact)} (which "
                                                "side is latency-bound is not proven)"))
    elif th is not None:
        side = "<" if th.direction == ">" else ">"
        rows.append(("latency-bound when", f"{th.symbol} {side} {_show(th.exact)}"))
    rows += [("assumption", note) for note in m.assumptions]
    rows += [("choice", line) for line in c.choices.lines() if line.split(" = ")[0] in
             c.choices.changed()]
    width = max(len(k) for k, _ in rows)
    return [head, *(f"  {k:<{width}}  {val}" for k, val in rows)]
