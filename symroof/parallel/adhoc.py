"""Derivations on a mesh from the command line: ``symroof derive --mesh ... --between ...``
and ``symroof collective ...``.

>>> r = derive_on_mesh(mesh_spec="X=2", chip_name="tpu-v5e",
...                    matmul="bf16[B, D_X] x bf16[D_X, F]", solve="D", between="math,ici")
>>> r.threshold.inequality, r.threshold.integer
(D > 78800/9, 8756)

Every string is parsed by the safe parser; every number that comes out is derived.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.choices import EXACT, Choices, parse_choices
from ..core.errors import DerivationError, InputError
from ..core.parse import engine_name, exact, parse_assignments, parse_expr, symbol
from ..core.printer import number_value, text
from ..engine.formulas import AdHoc, command_line_chip, derive_from, size_value, term_pair
from ..engine.ops import op, positive
from ..engine.rooflines import Roofline, roofline
from ..engine.thresholds import UNPROVEN, Threshold, term_time
from ..engine.thresholds import between as between_terms
from .collectives import (
    Collective,
    all_gather,
    all_reduce,
    all_to_all,
    canonical_kind,
    collective,
    permute,
    reduce_scatter,
)
from .in_network import canonical_algorithm
from .matmul import sharded_matmul
from .mesh import Mesh, mesh
from .mlp import mlp_step

_TIMES = re.compile(r"\s+(?:x|@|\*|·|×)\s+")


def command_line_mesh(spec: str, chip_name: str, catalog: str | None,
                      overrides: Mapping[str, str], topology: str | None) -> Mesh:
    """The mesh of ``--mesh`` on the chip of ``--chip`` (with ``--set`` overrides)."""
    the_chip = command_line_chip(chip_name, catalog, overrides)
    try:
        return mesh(spec, the_chip, topology=topology)
    except InputError as exc:
        raise InputError(exc.message, exc.where or "--mesh") from None


def derive_on_mesh(*, mesh_spec: str, chip_name: str = "tpu-v5e", catalog: str | None = None,
                   overrides: Mapping[str, str] | None = None, topology: str | None = None,
                   matmul: str | None = None, flops: str | None = None,
                   bytes: str | None = None, comm_bytes: str | None = None,
                   link: str | None = None, dtype: str | None = None,
                   solve: str | None = None, regime: str | None = None,
                   subs: str | None = None, between: str | None = None,
                   scatter: str | None = None, mlp: str | None = None,
                   phase: str | None = None, choices: str | None = None,
                   serial: str | None = None) -> AdHoc:
    """A roofline on a mesh: a sharded matmul (``"LHS x RHS"``), one pass of an MLP
    layer's training step (``mlp="fsdp=XY,tp=Z"``, ``phase`` forward or backward, under
    ``choices``), or formulas whose comm bytes go over a mesh axis (``--link X``) at that
    axis's per-chip bandwidth."""
    m = command_line_mesh(mesh_spec, chip_name, catalog, overrides or {}, topology)
    if mlp is not None:
        if matmul or flops or bytes or comm_bytes:
            raise InputError("give either --mlp or --matmul or --flops/--bytes/--comm-bytes",
                             "--mlp")
        rl = _mlp_roofline(m, mlp, phase or "forward",
                           parse_choices(choices) if choices else EXACT)
        return derive_from(rl, solve=solve, regime=regime, subs=subs, between=between,
                           serial=serial)
    for flag, given in (("--phase", phase), ("--choices", choices)):
        if given is not None:
            raise InputError(f"{flag} goes with --mlp", flag)
    if matmul is not None:
        if flops or bytes or comm_bytes:
            raise InputError("give either --matmul or --flops/--bytes/--comm-bytes",
                             "--matmul")
        parts = _TIMES.split(matmul.strip())
        if len(parts) != 2:
            raise InputError(f"expected 'LHS x RHS', e.g. 'bf16[B, D_X] x bf16[D_X, F]', got "
                             f"{matmul!r}", "--matmul")
        try:
            rl = sharded_matmul(parts[0], parts[1], m, scatter=scatter).roofline()
        except InputError as exc:
            raise InputError(exc.message, f"--matmul: {exc.where}" if exc.where
                             else "--matmul") from None
    else:
        if flops is None or (bytes is None and comm_bytes is None):
            raise InputError("with --mesh give --matmul, or --flops with --bytes and/or "
                             "--comm-bytes", "--mesh")
        axis = m.axis(link or next(iter(m.axes)))
        comms = {axis.link.name: _formula(comm_bytes, "--comm-bytes")} if comm_bytes else {}
        built = op(f"flops {flops}", _formula(flops, "--flops"),
                   _formula(bytes, "--bytes") if bytes else 0, comms=comms,
                   dtype=dtype or "bf16")
        rl = roofline(built, m.chip, bandwidths={axis.link.name: axis.bandwidth})
    return derive_from(rl, solve=solve, regime=regime, subs=subs, between=between,
                       serial=serial)


def _mlp_roofline(m: Mesh, spec: str, phase: str, choices: Choices) -> Roofline:
    """The roofline of one pass of ``mlp_step`` from ``fsdp=AXES,tp=AXES``."""
    axes: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        kind, eq, names = part.partition("=")
        if kind.strip() not in ("fsdp", "tp") or not eq or not names.strip():
            raise InputError(f"expected fsdp=AXES and/or tp=AXES, e.g. 'fsdp=XY,tp=Z', got "
                             f"{part!r}", "--mlp")
        if kind.strip() in axes:
            raise InputError(f"{kind.strip()} is given twice", "--mlp")
        axes[kind.strip()] = names.strip()
    try:
        step = mlp_step(m, fsdp=axes.get("fsdp", ()), tp=axes.get("tp", ()), choices=choices)
    except InputError as exc:
        raise InputError(exc.message, "--mlp") from None
    try:
        return step.phase(phase).roofline()
    except InputError as exc:
        raise InputError(exc.message, "--phase") from None


def _formula(raw: str, where: str) -> sp.Expr:
    return positive(parse_expr(raw, where=where), raw, where)


@dataclass(frozen=True)
class CollectiveResult:
    """What ``symroof collective`` derived, at the given sizes."""

    collective: Collective
    values: Mapping[sp.Symbol, sp.Expr]
    threshold: Threshold | None
    pair: tuple[str, str] | None = None  # --between: the threshold is between these terms

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


def run_collective(*, kind: str, mesh_spec: str, axes: str, array: str | None = None,
                   nbytes: str | None = None, chip_name: str = "tpu-v5e",
                   catalog: str | None = None, overrides: Mapping[str, str] | None = None,
                   topology: str | None = None, dim: str | None = None,
                   subs: str | None = None, solve: str | None = None,
                   algorithm: str = "ring", choices: str | None = None,
                   between: str | None = None) -> CollectiveResult:
    """Build the collective of the command line and derive its latency-bound size, under
    ``choices`` (a preset such as ``book``, or ``collectives=leading,latency=off``); with
    ``between`` (``"nvlink,latency"``) the size where those two terms meet instead."""
    k = canonical_kind(kind, "collective")
    how = canonical_algorithm(algorithm)
    if how != "ring" and k != "allreduce":
        what = "reduces up a tree" if how == "tree" else "reduces in the switch"
        raise InputError(f"{how} {what}: it runs an AllReduce only, not {k}", "--algorithm")
    m = command_line_mesh(mesh_spec, chip_name, catalog, overrides or {}, topology)
    if (array is None) == (nbytes is None):
        raise InputError("give --array DTYPE[DIMS] or --bytes EXPR (one of them)", "collective")
    if dim is not None and not dim.strip():
        raise InputError("an empty dimension name", "--dim")
    if dim is not None and (array is None or k not in ("reducescatter", "alltoall")):
        what = "--bytes has no dimensions" if array is None else f"{k} splits no dimension"
        raise InputError(f"{what}: --dim is for a reducescatter or an alltoall of an --array",
                         "--dim")
    try:
        m.resolve(axes)
    except InputError as exc:
        raise InputError(exc.message, "--axes") from None
    if array is not None:
        try:
            c = all_reduce(array, axes, m, how) if how != "ring" else \
                _on_array(k, array, axes, m, dim)
        except InputError as exc:
            if exc.where == "--algorithm":
                raise
            raise InputError(exc.message, f"--array: {exc.where}" if exc.where
                             else "--array") from None
    else:
        assert nbytes is not None
        c = collective(k, _formula(nbytes, "--bytes"), axes, m, how)
    if choices is not None:
        c = c.under(parse_choices(choices))
    used = c.time.free_symbols | c.nbytes.free_symbols
    values = _values(subs, used)
    pair = term_pair(between)
    if pair is not None and solve is None:
        raise InputError("--between needs --solve SYMBOL: the size to solve for", "--between")
    th = None
    if solve is not None:
        s = symbol(solve.strip())
        if s not in c.nbytes.free_symbols:
            raise InputError(f"unknown size {solve!r}: the collective's bytes use "
                             f"{', '.join(sorted(map(str, c.nbytes.free_symbols))) or 'none'}",
                             "--solve")
        if s in values:
            raise InputError(f"{solve} is solved for, so it cannot be given a value", "--subs")
        th = c.threshold(s) if pair is None else _between(c, pair, s)
        th = th.at(values) if values else th
    return CollectiveResult(c, values, th, pair)


def _between(c: Collective, pair: tuple[str, str], s: sp.Symbol) -> Threshold:
    """Where the collective's terms ``pair`` (a link, ``latency``, ``bandwidth``) meet."""
    rl = c.roofline()
    for name in pair:
        term_time(rl, name)
    try:
        return between_terms(rl, pair[0], pair[1], s)
    except DerivationError as exc:
        raise DerivationError(exc.message, "--between") from None


def _on_array(kind: str, array: str, axes: str, m: Mesh, dim: str | None) -> Collective:
    if kind == "allgather":
        return all_gather(array, axes, m)
    if kind == "reducescatter":
        return reduce_scatter(array, axes, m, dim=dim)
    if kind == "allreduce":
        return all_reduce(array, axes, m)
    if kind == "alltoall":
        return all_to_all(array, axes, m, dim=dim)
    return permute(array, axes, m)


def _values(subs: str | None, used: set[sp.Basic]) -> dict[sp.Symbol, sp.Expr]:
    if subs is not None and not subs.strip():
        raise InputError("no sizes given (leave the flag out for none)", "--subs")
    out: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(subs or "", where="--subs").items():
        if engine_name(name):  # a link's latency alpha_<link>: seconds, not a whole size
            value = parse_expr(raw, where=f"--subs {name}")
            if not (value.is_Rational and value.is_positive):
                raise InputError(f"{name} must be a positive number, got {raw!r}", "--subs")
        else:
            value = size_value(name, raw)
        s = next((u for u in used if getattr(u, "name", None) == name), None)
        if s is None:
            raise InputError(f"unknown symbol {name!r}: the collective uses "
                             f"{', '.join(sorted(map(str, used))) or 'no symbols'}", "--subs")
        out[s] = value
    return out
