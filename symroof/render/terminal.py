"""Text, Markdown and LaTeX views of derive results and chips, for the command line.

>>> from symroof.hardware.catalog import load_catalog
>>> print(chips_lines(load_catalog())[1])
a100-40gb        3.12e14    1.56e12     4e10   200.64  NVIDIA A100 40GB (SXM4)

Renders only: every value shown was derived before it gets here.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import InputError
from ..core.printer import approx, md_escape, number_value, shown, si, text
from ..engine.analysis import RooflineAnalysis
from ..engine.optimize import OptimizeResult
from ..hardware.catalog import Catalog, Chip, Figure
from .verdicts import COLORS, VerdictLine, verdict_lines  # noqa: F401  (re-exported)


def _num(value: sp.Expr) -> str:
    """A number through the readable-form rule: ``9850/41 ≈ 240.24``."""
    return shown(value).text


def _rows(result: RooflineAnalysis) -> list[tuple[str, sp.Basic | str, str]]:
    """(label, value, unit) rows shared by every format."""
    rl = result.roofline
    rows: list[tuple[str, sp.Basic | str, str]] = [
        *((label, said, "") for label, said in result.notes),
        ("FLOPs", rl.op.flops, ""),
    ]
    for level in rl.op.levels:
        rows.append((f"bytes ({level})", rl.op.bytes(level), "B"))
    for link, sent in rl.op.comms.items():
        rows.append((f"bytes ({link})", sent, "B"))
    rows += [
        ("peak", rl.peak, "FLOP/s"),
        ("intensity", rl.intensity, "FLOP/byte"),
        ("critical intensity", rl.ridge, "FLOP/byte"),
        ("T_math", rl.t_math, "s"),
        *((f"T_{k}", v, "s") for k, v in rl.t_comms.items()),
        *((f"T_{k}", v, "s") for k, v in rl.extra.items()),
        ("bound", rl.bound(), ""),
    ]
    if rl.serial:  # terms that add instead of overlapping
        rows += [("serial terms", ", ".join("math" if k == "compute" else k
                                            for k in rl.serial), ""),
                 ("T_lower", rl.t_lower, "s")]
    if result.expansion is not None:
        x = result.expansion
        rows.insert(rows.index(("intensity", rl.intensity, "FLOP/byte")) + 1,
                    (f"intensity, {x.regime.text}", x.leading,
                     f"(first correction {text(x.correction)})"))
    th = result.threshold
    if th is not None:
        rows.append(("threshold", th.inequality, f"(against {th.resource})"))
        if th.asymptotic is not None:
            rows.append((f"threshold, {th.regime}", th.asymptotic, ""))
        if th.integer is not None:
            which = "smallest" if th.direction == ">" else "largest"
            rows.append((f"{which} integer", sp.Integer(th.integer), ""))
        rows.append(("exists when", result.existence if result.existence is not None
                     else sp.true, ""))
    return rows


def derive_table(result: RooflineAnalysis) -> tuple[str, tb.Table]:
    """The derive result as a title and a (quantity, value) table."""
    rl = result.roofline
    title = f"{rl.op.name} on {rl.chip.name} ({rl.compute or rl.op.compute} " \
        f"{rl.dtype or rl.op.dtype})"
    rows = tuple((tb.cell(tb.text(label)), _value_cell(value, unit))
                 for label, value, unit in _rows(result))
    return title, tb.Table((tb.Column("quantity"), tb.Column("value")), rows)


def _value_cell(value: sp.Basic | str, unit: str) -> tuple[tb.Part, ...]:
    """A time, byte count or rate that is a number prints as a decimal with its unit
    (``10.9 µs``, ``34.6 MB``, ``1.97e14 FLOP/s``; the exact value is in --json); anything
    else through the readable-form rule."""
    if isinstance(value, str):
        return tb.cell(tb.text(value), tb.text(unit))
    if unit in ("s", "B", "FLOP/s") and value.is_number:
        return tb.cell(tb.text(si(value, unit)))
    return tb.cell(tb.math(value), tb.text("bytes" if unit == "B" else unit))


def derive_lines(result: RooflineAnalysis, fmt: str = "text") -> list[str]:
    """The derive result as lines of text, a Markdown table, or a LaTeX tabular."""
    title, table = derive_table(result)
    if fmt == "md":
        return [f"**{md_escape(title)}**", "", *table.render("md").splitlines()]
    if fmt == "tex":
        titled = tb.Table((tb.Column(title), tb.Column("value")), table.rows)
        return titled.render("tex", tex_env="tabular").splitlines()
    body = table.render("text", max_width=10_000).splitlines()[1:]
    return [title, *(f"  {line}" for line in body)]


def chips_lines(catalog: Catalog) -> list[str]:
    """One line per chip: bf16 peak, HBM bandwidth and capacity, critical intensity."""
    head = f"{'chip':<11} {'bf16 peak':>12} {'HBM B/s':>10} {'HBM':>8} {'ridge':>8}  title"
    lines = [head]
    for name, c in sorted(catalog.chips.items()):
        peak = c.figures.get("mxu.bf16")
        hbm = c.figures.get("hbm")
        cap = c.figures.get("hbm.capacity")
        ridge = approx(peak.value / hbm.value) if peak and hbm else "-"
        lines.append(f"{name:<11} {_short(peak):>12} {_short(hbm):>10} {_short(cap):>8} "
                     f"{ridge:>8}  {c.title}")
    return lines


def _short(fig: Figure | None) -> str:
    return approx(fig.value, 3) if fig else "-"


def _figure(value: sp.Expr, digits: int) -> str:
    """A chip figure: a number as a text prints it, a text's letter (``--set hbm=W``) as is."""
    return approx(value, digits) if sp.sympify(value).is_number else str(value)


def chip_lines(c: Chip) -> list[str]:
    """Every figure of a chip with its source and alternatives."""
    lines = [f"{c.name}: {c.title}" + (f" ({c.vendor})" if c.vendor else "")]
    for key in sorted(c.figures):
        fig = c.figures[key]
        link = c.link(key) if key in c.links else None
        conv = f" [{link.direction} per {link.per}" + (f", {link.count} links" if link.count
                                                       else "") + "]" if link else ""
        lines.append(f"  {key:<14} {fig.text:<18} = {_figure(fig.value, 4):<9} "
                     f"source {fig.source}{conv}" + (f"  ({fig.note})" if fig.note else ""))
        for alt in fig.alternatives:
            lines.append(f"  {'':<14}   alternative {alt.label}: {alt.text} "
                         f"(source {alt.source})" + (f"  ({alt.note})" if alt.note else ""))
    if c.links:
        lines.append("  links (one way / both ways):")
        for name in sorted(c.links):
            ln = c.link(name)
            lat = (f"{_figure(ln.latency, 3)} s per hop (source {ln.latency_source})"
                   if ln.latency_known else f"{ln.latency} (no source gives a per-hop latency)")
            lines.append(f"    {name:<8} {_figure(ln.one_way, 4)} / {_figure(ln.bidirectional, 4)}"
                         f" B/s per {ln.per}; latency {lat}")
    if c.topologies:
        lines.append("  topologies:")
        lines += [f"    {t.describe()}" for t in c.topologies.values()]
    used = sorted({f.source for f in c.figures.values()} |
                  {a.source for f in c.figures.values() for a in f.alternatives} |
                  {t.source for t in c.topologies.values()})
    lines.append("  sources:")
    lines += [f"    {k}: {c.sources[k]}" for k in used if k in c.sources]
    if c.figures.get("mxu.bf16") and c.figures.get("hbm"):
        lines.append(f"  critical intensity (bf16 / hbm): {_num(c.ridge())} FLOP/byte")
    for key in sorted(k for k in c.figures if k.startswith("micro.flops_per_clock")):
        dtype = key.rsplit(".", 1)[1]
        sheet = c.figures.get(f"mxu.{dtype}")
        try:
            derived = f"{approx(c.micro_peak(dtype), 5)} FLOP/s" + \
                (f" (catalogue: {sheet.text})" if sheet else "")
        except InputError as exc:  # a figure the sources do not give
            derived = f"not derived: {exc.message.split(' has ', 1)[-1]}"
        lines.append(f"  peak from the microarchitecture ({dtype}): SMs x tensor cores per SM x "
                     f"FLOPs per clock x clock = {derived}")
    if any(k in c.figures for k in ("micro.fp32_lanes_per_sm", "micro.vpu_lanes")):
        sheet = c.figures.get("vpu.fp32")
        lines.append(f"  vector peak from the microarchitecture (fp32, a multiply-add as two "
                     f"FLOPs): {approx(c.micro_vector_peak(), 5)} FLOP/s" +
                     (f" (catalogue: {sheet.text})" if sheet else ""))
    if c.figures.get("mxu.bf16"):
        for name in sorted(c.links):
            one, both, per = link_ridges(c, name)
            lines.append(f"  critical intensity (bf16 / {name}, {per}): {_num(one)} "
                         f"FLOP/byte one way, {_num(both)} both ways")
    return lines


def link_ridges(c: Chip, name: str) -> tuple[sp.Expr, sp.Expr, str]:
    """The bf16 peak over a link's one-way and two-way figure: per link as the book's
    alpha = C / W; a host's (node's) figure shared by the chips behind it.

    >>> from symroof import chip
    >>> link_ridges(chip("tpu-v5e"), "dcn")
    (63040, 31520, "a host's share per chip (8 chips)")
    """
    ln = c.link(name)
    per = f"per {ln.per}"
    topo = next(iter(c.topologies.values()), None)
    if ln.per in ("host", "node") and topo is not None and topo.chips_per_host > 1:
        per = f"a {ln.per}'s share per chip ({topo.chips_per_host} chips)"
    return c.ridge(over=name), c.ridge(over=name, both_ways=True), per


def chip_json(c: Chip, brief: bool = False) -> dict[str, Any]:
    """A chip as JSON: exact values as strings with floats beside them."""
    def fig(f: Figure) -> dict[str, Any]:
        out: dict[str, Any] = {"value": text(f.value), "value_value": number_value(f.value),
                               "text": f.text, "source": f.source, "label": f.label}
        if f.note:
            out["note"] = f.note
        if f.alternatives and not brief:
            out["alternatives"] = [fig(a) for a in f.alternatives]
        return out
    data: dict[str, Any] = {"name": c.name, "title": c.title, "vendor": c.vendor,
                            "figures": {k: fig(c.figures[k]) for k in sorted(c.figures)}}
    if not brief:
        data["links"] = {k: _link_json(c, k) for k in sorted(c.links)}
        data["topologies"] = {t.name: {"title": t.title, "kind": t.kind,
                                       "shape": list(t.shape), "link": t.link,
                                       "wraparound": t.wraparound,
                                       "wrap_multiple": t.wrap_multiple or None,
                                       "chips_per_host": t.chips_per_host,
                                       "scale_out": t.scale_out, "source": t.source,
                                       "note": t.note} for t in c.topologies.values()}
        data["sources"] = {k: c.sources[k] for k in sorted(
            {f.source for f in c.figures.values()} |
            {a.source for f in c.figures.values() for a in f.alternatives} |
            {t.source for t in c.topologies.values()}) if k in c.sources}
    return data


def _link_json(c: Chip, name: str) -> dict[str, Any]:
    ln = c.link(name)
    ridge = {}
    if c.figures.get("mxu.bf16"):
        one, both, _ = link_ridges(c, name)
        ridge = {"ridge_bf16": text(one), "ridge_bf16_value": number_value(one),
                 "ridge_bf16_bidirectional": text(both),
                 "ridge_bf16_bidirectional_value": number_value(both)}
    return {**ridge, "direction": ln.direction, "per": ln.per, "count": ln.count,
            "one_way": text(ln.one_way), "one_way_value": number_value(ln.one_way),
            "bidirectional": text(ln.bidirectional),
            "bidirectional_value": number_value(ln.bidirectional),
            "latency": text(ln.latency), "latency_value": number_value(ln.latency),
            "latency_source": ln.latency_source or None}


def optimum_lines(result: OptimizeResult, exact_in: str = "to_json()") -> list[str]:
    """The optimum: constants, conditions, solution, exponents, and numbers at a budget.
    Long exact forms print through the readable-form rule (the exact ones are in
    ``exact_in``, the JSON form)."""
    o = result.optimum
    lines = [f"minimise   {text(o.objective)}", f"subject to {text(o.constraint)}"]
    if result.known:
        lines.append("constants  " + ", ".join(f"{k} = {shown(v).text}"
                                               for k, v in result.known.items())
                     + (f" ({result.constants})" if result.constants else ""))
    lines += [f"method     {o.method}", "conditions"]
    lines += [f"  {shown(c).text}" for c in o.conditions]
    if o.balance is not None:
        lines.append(f"optimality {shown(o.balance).text}")
    for x, v in o.solution.items():
        s = shown(v)
        lines.append(f"{x}* = {s.text}" + ("" if s.exact else
                                           f"  (decimals; exact form in {exact_in})"))
    for x, e in result.exponents.items():
        lines.append(f"d log {x}* / d log {result.budget} = {_num(e)}")
    for key, value in result.numbers.items():
        out = approx(value, 4) if value.is_number and value.is_finite else str(value)
        lines.append(f"{key:<10} {out}")
    return lines
