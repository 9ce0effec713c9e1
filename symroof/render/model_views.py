"""Text, Markdown and JSON views of a transformer's counts, step rooflines and capacity.

Renders only: every value shown was derived before it gets here.

>>> exact_json(sp.Integer(6738415616)), exact_json(sp.Rational(1, 3))
(6738415616, '1/3')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from ..core import vocabulary
from ..core.printer import approx, latex, md_escape, si, text
from ..engine.critical import Critical
from ..engine.thresholds import UNPROVEN
from ..models.capacity import Fit
from ..models.config import ModelConfig
from ..models.counts import Summary
from ..models.memory import Memory
from ..models.step_roofline import StepRoofline
from ..plans.device_step import DeviceStep, overlap_said
from ..plans.meets import Meet


def exact_json(value: sp.Basic) -> int | str:
    """An exact value for JSON: an integer as a number, anything else as its text."""
    value = sp.sympify(value)
    return int(value) if value.is_Integer else text(value)


def _with_value(data: dict[str, Any], key: str, value: sp.Basic) -> None:
    data.update(vocabulary.exact(key, value))


def _num(value: sp.Basic) -> str:
    value = sp.sympify(value)
    if value.is_number and (not value.is_Integer or abs(value) >= 10**7):
        return f"{text(value)} ≈ {approx(value)}"
    return text(value)


def describe(cfg: ModelConfig) -> str:
    """One line of the config's structure."""
    parts = [f"{cfg.layers} layers", f"d_model {cfg.d_model}", f"d_ff {cfg.d_ff} ({cfg.mlp})",
             f"{cfg.heads} heads", f"{cfg.kv_heads} KV heads", f"head dim {cfg.head_dim}",
             f"vocab {cfg.vocab}", "tied" if cfg.tied_embeddings else "untied", cfg.norm,
             f"learned positions {cfg.max_positions}" if cfg.positions == "learned"
             else cfg.positions]
    if cfg.mla:
        parts.append(f"latent attention (KV rank {cfg.mla.kv_rank}, rope {cfg.mla.rope_dim}, "
                     f"value head {cfg.mla.v_dim}"
                     + (f", query rank {cfg.mla.q_rank})" if cfg.mla.q_rank else ")"))
    if cfg.sliding_window:
        parts.append(f"sliding window {cfg.sliding_window} (counted as full attention)")
    biases = [n for n, on in (("qkv", cfg.qkv_bias), ("out", cfg.out_bias),
                              ("mlp", cfg.mlp_bias)) if on]
    if biases:
        parts.append("biases " + "/".join(biases))
    if cfg.moe:
        m = cfg.moe
        moe = f"MoE {m.experts} experts x d_ff {m.d_ff}, top-{m.top_k}"
        if m.shared:
            moe += f", {m.shared} shared x d_ff {m.shared_d_ff}"
        if m.dense_layers:
            moe += f", first {m.dense_layers} layers dense"
        parts.append(moe)
    return ", ".join(parts)


def config_json(cfg: ModelConfig) -> dict[str, Any]:
    return {"layers": cfg.layers, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "mlp": cfg.mlp,
            "heads": cfg.heads, "kv_heads": cfg.kv_heads, "head_dim": cfg.head_dim,
            "vocab": cfg.vocab, "tied_embeddings": cfg.tied_embeddings, "norm": cfg.norm,
            "qkv_bias": cfg.qkv_bias, "out_bias": cfg.out_bias, "mlp_bias": cfg.mlp_bias,
            "positions": cfg.positions, "max_positions": cfg.max_positions,
            "moe": None if cfg.moe is None else {
                "experts": cfg.moe.experts, "top_k": cfg.moe.top_k, "d_ff": cfg.moe.d_ff,
                "shared": cfg.moe.shared, "shared_d_ff": cfg.moe.shared_d_ff,
                "dense_layers": cfg.moe.dense_layers}}


def summary_json(s: Summary) -> dict[str, Any]:
    data: dict[str, Any] = {"model": s.cfg.name, "source": dict(s.cfg.source),
                            "config": config_json(s.cfg), "dtype": s.dtype,
                            "kv_dtype": s.kv_dtype,
                            "context": None if s.context is None else exact_json(s.context)}
    _with_value(data, "params", s.params.total)
    _with_value(data, "params_active", s.params.active)
    _with_value(data, "params_embedding", s.params.embedding)
    data.update(vocabulary.exact_map("params_parts",
                                     {k.replace(" ", "_"): v for k, v in s.params.parts().items()}))
    _with_value(data, "flops_per_token", s.flops)
    _with_value(data, "training_flops_per_token", s.training_flops)
    _with_value(data, "kv_bytes_per_token", s.kv_bytes)
    if s.symbolic:
        data["symbolic"] = {k: text(v) for k, v in s.symbolic.items()}
    if s.chosen and s.choices is not None:
        data["choices"] = s.choices.describe()
        data.update(vocabulary.exact_map("under_choices", dict(s.chosen)))
    return data


def summary_lines(s: Summary, fmt: str = "text") -> list[str]:
    at = "" if s.context is None else f" at context {s.context}"
    rows: list[tuple[str, sp.Basic | str]] = [
        ("parameters", s.params.total),
        *((f"  {k}", v) for k, v in s.params.parts().items()),
        ("active per token", s.params.active),
        ("non-embedding", s.params.non_embedding),
        (f"forward FLOPs per token{at}", s.flops),
        (f"training FLOPs per token{at}", s.training_flops),
        (f"KV cache per token ({s.kv_dtype})", s.kv_bytes),
    ]
    if s.symbolic:
        rows += [(f"{k} (symbolic)", v) for k, v in s.symbolic.items()]
    if s.chosen and s.choices is not None:
        said = s.choices.describe()
        label = {"params": "parameters", "params_active": "active per token",
                 "kv_bytes_per_token": f"KV cache per token ({s.kv_dtype})",
                 "flops_per_token": "FLOPs per token" + (
                     " (2 per parameter)" if s.choices.flops == "full" else "")}
        rows += [(f"{label[k]}, {said}", v) for k, v in s.chosen.items()]
        if s.choices.sizes == "nominal":
            from ..models.nominal import round_figures
            rows.append(("sizes", f"nominal: {round_figures(s.cfg)}"))
    title = f"{s.cfg.name}: {describe(s.cfg)}"
    source = s.cfg.source.get("repo") or s.cfg.source.get("file", "")
    if fmt == "md":
        lines = [f"**{md_escape(s.cfg.name)}** ({md_escape(describe(s.cfg))})", "",
                 "| quantity | value |", "|---|---|"]
        lines += [f"| {md_escape(k.strip(), table=True)} | ${latex(v)}$ |" for k, v in rows]
        return lines + ([f"\nsource: {md_escape(source)}"] if source else [])
    width = max(len(k) for k, _ in rows)
    lines = [title] + ([f"  source: {source}"] if source else [])
    lines += [f"  {k:<{width}}  {_num(v) if isinstance(v, sp.Basic) else v}"
              + (" B" if k.startswith("KV cache") and isinstance(v, sp.Basic) and v.is_number
                 else "") for k, v in rows]
    return lines


# ---------------------------------------------------------------- steps

def _row_json(srl: StepRoofline, i: int) -> dict[str, Any]:
    r = srl.rows[i]
    rl = r.roofline
    data: dict[str, Any] = {"name": r.op.name, "block": r.block.name,
                            "count": int(r.count)}
    _with_value(data, "flops", r.op.flops)
    _with_value(data, "bytes", r.op.bytes())
    _with_value(data, "intensity", rl.intensity)
    data["bound"] = rl.bound()
    _with_value(data, "t_lower", rl.t_lower)
    data["compute"] = r.peak_note
    return data


def step_json(step: DeviceStep, critical: Critical | None,
              intensity: tuple[sp.Expr, sp.Expr] | None) -> dict[str, Any]:
    srl = step.roofline
    data: dict[str, Any] = {"phase": step.name, "batch": exact_json(srl.step.batch),
                            "context": exact_json(srl.step.context), "chip": srl.chip.name,
                            "layers": [_row_json(srl, i) for i in range(len(srl.rows))]}
    body = vocabulary.step_json(step.flops, step.bytes, step.terms, step.lower,
                                step.t_upper, step.bound)
    body.update(vocabulary.exact("latency", step.latency))
    body["overlap"] = step.overlap
    body.update(vocabulary.exact("intensity", srl.intensity))
    body.update(vocabulary.exact("ridge", srl.ridge))
    body["assumptions"] = [overlap_said(step.overlap), *step.notes]
    data["step"] = body
    if critical is not None:
        data["critical_batch"] = vocabulary.critical_json(
            critical.relation, critical.value, critical.integer,
            "sequences in the decode batch", critical.reason)
    if intensity is not None:
        data["decode_intensity"] = {**vocabulary.exact("expression", intensity[0]),
                                    **vocabulary.exact("limit_t_to_oo", intensity[1])}
    return data


def _time(value: sp.Basic) -> str:
    """Seconds with an SI prefix: ``6.881 ms``; an expression as it is."""
    return si(value, "s")


def _short(value: sp.Basic) -> str:
    if not sp.sympify(value).is_number:
        return text(value)
    return "0" if value == 0 else approx(value, 4)


def step_lines(step: DeviceStep, critical: Critical | None,
               intensity: tuple[sp.Expr, sp.Expr] | None, fmt: str = "text",
               title: str = "") -> list[str]:
    srl = step.roofline
    head = ("op", "x", "FLOPs", "bytes", "intensity", "bound", "T_lower")
    rows = [(r.op.name if r.block.name in ("layer", "head") else f"{r.op.name} "
             f"({r.block.name})", text(r.count), _short(r.op.flops),
             _short(r.op.bytes()), _short(r.roofline.intensity), r.roofline.bound(),
             _time(r.roofline.t_lower)) for r in srl.rows]
    total = ("step", "", _short(step.flops), _short(step.bytes), _short(srl.intensity),
             step.bound, _time(step.lower))
    notes = ["terms: " + ", ".join(f"{k} {_time(v)}" for k, v in step.terms.items()),
             f"T_upper {_time(step.t_upper)}; critical intensity {approx(srl.ridge)} FLOP/byte",
             *([f"latency {_time(step.latency)} (overlap none: T_upper)"]
               if step.overlap == "none" else []),
             overlap_said(step.overlap), *step.notes]
    if critical is not None:
        if critical.integer is None:
            shown = f"none ({critical.reason})"
        else:
            shown = f"first whole batch {critical.integer}" + (
                f" (B > {_num(critical.value)})" if critical.value is not None else "") + (
                f"; {critical.reason}" if critical.reason else "")
        notes.append(f"critical batch at context {text(srl.step.context)}: {shown}")
    if intensity is not None:
        notes.append(f"decode intensity: {text(intensity[0])}; as T -> oo: "
                     f"{_num(intensity[1])}")
    if fmt == "md":
        lines = ([f"**{md_escape(title)}**", ""] if title else []) + [
            "| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * 3 + "---|---:|"]
        lines += ["| " + " | ".join(md_escape(c, table=True) for c in row) + " |"
                  for row in rows]
        lines.append("| " + " | ".join(f"**{md_escape(c, table=True)}**" if c else ""
                                       for c in total) + " |")
        return lines + [""] + [md_escape(n) for n in notes]
    widths = [max(len(str(row[i])) for row in (head, *rows, total)) for i in range(len(head))]
    right = {1, 2, 3, 4, 6}

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
    return ([title] if title else []) + [line(head), *map(line, rows), line(total)] + notes


# ---------------------------------------------------------------- capacity

def _fit_json(fit: Fit | None, reason: str) -> dict[str, Any] | None:
    if fit is None:
        return {"relation": None, "exact": None, "integer": None, "reason": reason}
    data: dict[str, Any] = {"relation": text(fit.relation), "integer": fit.integer}
    _with_value(data, "exact", fit.exact)
    return data


def fit_json(memory: Memory, capacity: sp.Expr, fits: Mapping[str, tuple[Fit | None, str]],
             facts: Mapping[str, Any]) -> dict[str, Any]:
    parts = {k.replace(" ", "_"): v for k, v in memory.parts.items()}
    data: dict[str, Any] = {**facts, **vocabulary.exact_map("memory", parts)}
    data.update(vocabulary.exact("capacity", capacity))
    data["assumptions"] = dict(memory.assumptions)
    for key, (fit, reason) in fits.items():
        data[key] = _fit_json(fit, reason)
    return data


def fit_lines(title: str, memory: Memory, capacity: sp.Expr,
              fits: Mapping[str, tuple[Fit | None, str]], labels: Mapping[str, str],
              fmt: str = "text") -> list[str]:
    rows: list[tuple[str, str]] = [(k, si(v, "B")) for k, v in memory.parts.items()]
    rows.append(("memory per chip", si(capacity, "B")))
    if "sizes" in memory.assumptions:
        rows.append(("sizes", memory.assumptions["sizes"]))
    for key, (fit, reason) in fits.items():
        shown = reason if fit is None else (
            f"{text(fit.relation)}" + (f" (≈ {approx(fit.exact)})" if not fit.exact.is_Integer
                                       else "") + f", so {fit.integer}")
        rows.append((labels[key], shown))
    if fmt == "md":
        return [f"**{md_escape(title)}**", "", "| quantity | value |", "|---|---|",
                *(f"| {md_escape(k, table=True)} | {md_escape(v, table=True)} |"
                  for k, v in rows)]
    width = max(len(k) for k, _ in rows)
    return [title, *(f"  {k:<{width}}  {v}" for k, v in rows)]


def meet_line(met: Meet) -> str:
    """The batch where two terms of a step meet, as one line."""
    if met.direction == UNPROVEN:
        return (f"T_{met.first} = T_{met.second} at {text(met.relation)} (which side has the "
                f"larger is not proven)")
    return f"T_{met.first} > T_{met.second} when {text(met.symbol)} {met.direction} " \
        f"{_num(met.exact)}"
