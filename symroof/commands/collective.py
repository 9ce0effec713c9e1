"""``symroof collective``: one collective over mesh axes, costed and solved for its
latency-bound size.

>>> r = collective_of(CollectiveRequest(kind="allgather", mesh="X=16", axes="X",
...                                     array="bf16[B_X, D]", solve="B"))
>>> r.threshold.symbol, r.collective.kind
(B, 'allgather')

Every string is parsed by the safe parser; every number that comes out is derived. Errors
name the request's fields; the command line names its flags.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sympy as sp

from ..core.choices import EXACT, LINK_CHOICES, TOGETHER_CHOICES, parse_choices
from ..core.errors import DerivationError, InputError
from ..core.parse import engine_name, parse_assignments, parse_expr, symbol
from ..core.sizes import size_value
from ..engine.ops import positive
from ..engine.thresholds import Threshold, term_pair, term_time
from ..engine.thresholds import between as between_terms
from ..hardware import DEFAULT_CHIP
from ..hardware.catalog import chip_with
from ..parallel.aggregates import Transfer
from ..parallel.analysis import CollectiveAnalysis
from ..parallel.collectives import (
    Collective,
    all_gather,
    all_reduce,
    all_to_all,
    canonical_kind,
    collective,
    permute,
    reduce_scatter,
)
from ..parallel.concurrent import Together
from ..parallel.in_network import allreduce_only, canonical_algorithm
from ..parallel.mesh import Mesh
from .derive import mesh_with


def _at(expr: sp.Expr, values: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
    """``expr`` at the sizes ``values`` (itself without them)."""
    return sp.sympify(expr).subs(values) if values else sp.sympify(expr)


def _both(out: dict[str, object], exprs: Mapping[str, sp.Expr],
          at: Callable[[sp.Expr], sp.Expr]) -> None:
    """Each of ``exprs`` evaluated by ``at`` into ``out``: its exact text under its key and
    its number under ``KEY_value``."""
    from ..core.printer import number_value, text
    for key, expr in exprs.items():
        v = at(expr)
        out[key] = text(v)
        out[f"{key}_value"] = number_value(v)


@dataclass(frozen=True)
class CollectiveRequest:
    """A collective of ``kind`` over ``axes`` of ``mesh``: of a sharded ``array``
    (``"bf16[B_X, D]"``, split along ``dim``) or of ``nbytes``, by ``algorithm``, under
    ``choices`` (a preset such as ``book``, or ``collectives=leading,latency=off``); solved
    in ``solve`` (a size of the bytes or of an axis, ``X=N``) for its latency-bound size,
    or where the terms ``between`` meet. ``total`` says an AllToAll's ``nbytes`` is the
    total over the group's devices, not what each device holds."""

    kind: str
    mesh: str
    axes: str
    array: str | None = None
    nbytes: str | None = None
    chip: str = DEFAULT_CHIP
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    topology: str | None = None
    dim: str | None = None
    subs: str | None = None
    solve: str | None = None
    algorithm: str = "ring"
    choices: str | None = None
    between: str | None = None
    total: bool = False


def collective_of(request: CollectiveRequest) -> CollectiveAnalysis:
    """Build the collective of ``request`` and derive its latency-bound size (or where the
    two terms ``between`` meet)."""
    r = request
    k = canonical_kind(r.kind, "collective")
    how = canonical_algorithm(r.algorithm, "algorithm")
    if how != "ring":
        allreduce_only(how, k)
    m = mesh_with(r.mesh, chip_with(r.chip, r.catalog, r.overrides), r.topology)
    if (r.array is None) == (r.nbytes is None):
        raise InputError("give `array` DTYPE[DIMS] or `nbytes` EXPR (one of them)",
                         "collective")
    if r.dim is not None and not r.dim.strip():
        raise InputError("an empty dimension name", "dim")
    if r.dim is not None and (r.array is None or k not in ("reducescatter", "alltoall")):
        what = "`nbytes` has no dimensions" if r.array is None else \
            f"{k} splits no dimension"
        raise InputError(f"{what}: `dim` is for a reducescatter or an alltoall of an `array`",
                         "dim")
    try:
        m.resolve(r.axes)
    except InputError as exc:
        raise InputError(exc.message, "axes") from None
    if r.total and (r.array is not None or k != "alltoall"):
        raise InputError("`total` says an alltoall's `nbytes` are the total over its devices" +
                         (", not of an `array`" if r.array is not None else
                          f", not of the {k}"), "total")
    if r.array is not None:
        try:
            c = all_reduce(r.array, r.axes, m, how) if how != "ring" else \
                _on_array(k, r.array, r.axes, m, r.dim)
        except InputError as exc:
            if exc.where is not None and exc.where.lstrip("-") == "algorithm":
                raise
            raise exc.at("array") from None
    else:
        assert r.nbytes is not None
        c = collective(k, positive(parse_expr(r.nbytes, where="nbytes"), r.nbytes, "nbytes"),
                       r.axes, m, how, total=r.total)
    if r.choices is not None:  # what a collective costed alone takes; the rest is refused
        c = c.under(parse_choices(r.choices).within(LINK_CHOICES, "a collective"))
    used = c.time.free_symbols | c.nbytes.free_symbols
    values = _values(r.subs, used)
    pair = term_pair(r.between)
    if pair is not None and r.solve is None:
        raise InputError("`between` needs `solve` SYMBOL: the size to solve for", "between")
    th = None
    if r.solve is not None:
        s = symbol(r.solve.strip())
        sizes = c.nbytes.free_symbols | c.devices.free_symbols
        if s not in sizes:
            raise InputError(f"unknown size {r.solve!r}: the collective's bytes and axes use "
                             f"{', '.join(sorted(map(str, sizes))) or 'none'}", "solve")
        if s in values:
            raise InputError(f"{r.solve} is solved for, so it cannot be given a value", "subs")
        th = c.threshold(s) if pair is None else _between(c, pair, s)
        th = th.at(values) if values else th
    return CollectiveAnalysis(c, values, th, pair)


def _between(c: Collective, pair: tuple[str, str], s: sp.Symbol) -> Threshold:
    """Where the collective's terms ``pair`` (a link, ``latency``, ``bandwidth``) meet."""
    rl = c.roofline()
    for name in pair:
        term_time(rl, name)
    try:
        return between_terms(rl, pair[0], pair[1], s)
    except DerivationError as exc:
        raise DerivationError(exc.message, "between") from None


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
        raise InputError("no sizes given (leave the flag out for none)", "subs")
    out: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(subs or "", where="subs").items():
        if engine_name(name):  # a link's latency alpha_<link>: seconds, not a whole size
            value = parse_expr(raw, where=f"subs {name}")
            if not (value.is_Rational and value.is_positive):
                raise InputError(f"{name} must be a positive number, got {raw!r}", "subs")
        else:
            value = size_value(name, raw, "subs")
        s = next((u for u in used if getattr(u, "name", None) == name), None)
        if s is None:
            raise InputError(f"unknown symbol {name!r}: the collective uses "
                             f"{', '.join(sorted(map(str, used))) or 'no symbols'}", "subs")
        out[s] = value
    return out


@dataclass(frozen=True)
class SendRequest:
    """A point-to-point transfer of ``nbytes`` over ``axes`` of ``mesh``: from the chip at
    coordinates ``src`` to the one at ``dst`` (``"0,0"``, one per axis), or ``hops`` away
    (a number on one axis, ``"X=3,Y=1"`` per axis), at ``subs``."""

    mesh: str
    axes: str
    nbytes: str
    chip: str = DEFAULT_CHIP
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    topology: str | None = None
    src: str | None = None
    dst: str | None = None
    hops: str | None = None
    subs: str | None = None
    microbatches: str | None = None
    stages: str | None = None


@dataclass(frozen=True)
class SendAnalysis:
    """A transfer (``parallel.aggregates.send``) and the sizes it was evaluated at."""

    transfer: Transfer
    mesh: Mesh
    values: Mapping[sp.Symbol, sp.Expr]

    def value(self, expr: sp.Expr) -> sp.Expr:
        return _at(expr, self.values)

    def to_json(self) -> dict[str, object]:
        from ..core.printer import text
        t = self.transfer
        out: dict[str, object] = {"send": t.axis, "mesh": self.mesh.spec,
                                  "chip": self.mesh.chip.name,
                                  "values": {str(k): text(v) for k, v in self.values.items()}}
        _both(out, {"nbytes": t.nbytes, "hops": t.hops, "bandwidth": t.bandwidth,
                    "bandwidth_time": t.bandwidth_time, "latency_time": t.latency_time,
                    "time": t.time}, self.value)
        return out


def send_of(request: SendRequest) -> SendAnalysis:
    """The transfer of ``request`` (``parallel.aggregates.send``), evaluated at ``subs``.

    >>> r = send_of(SendRequest(mesh="X=4,Y=4", axes="XY", nbytes="V", src="0,0",
    ...                         dst="3,1"))
    >>> r.transfer.hops, r.transfer.time
    (4, V/90000000000 + 1/250000)

    With ``microbatches`` (and ``stages``, else the axis size) the sends of a pipeline
    between its stages (``parallel.aggregates.pipeline_sends``).
    """
    from ..parallel.aggregates import pipeline_sends, send
    r = request
    m = mesh_with(r.mesh, chip_with(r.chip, r.catalog, r.overrides), r.topology)
    try:
        names = m.resolve(r.axes)
    except InputError as exc:
        raise InputError(exc.message, "axes") from None
    if r.stages is not None and r.microbatches is None:
        raise InputError("`stages` goes with a pipeline's `microbatches`", "stages")
    if r.microbatches is not None:
        for name, given in (("src", r.src), ("dst", r.dst), ("hops", r.hops)):
            if given is not None:
                raise InputError("a pipeline's sends go stage to stage along its axis: no "
                                 "coordinates or hops", name)
        if len(names) != 1:
            raise InputError(f"a pipeline's stages lie along one axis, got {''.join(names)}",
                             "axes")
        nbytes = positive(parse_expr(r.nbytes, where="nbytes"), r.nbytes, "nbytes")
        counts = {k: size_value(k, v, k) for k, v in (("microbatches", r.microbatches),
                                                      ("stages", r.stages)) if v is not None}
        try:
            t = pipeline_sends(nbytes, names[0], m, counts["microbatches"],
                               counts.get("stages"))
        except InputError as exc:
            raise InputError(exc.message, "stages" if "stage" in exc.message
                             else "microbatches") from None
        return SendAnalysis(t, m, _values(r.subs, t.time.free_symbols | t.nbytes.free_symbols))
    if r.hops is not None and (r.src is not None or r.dst is not None):
        raise InputError("give `hops` or `src` and `dst` coordinates, not both", "hops")
    if (r.src is None) != (r.dst is None):
        raise InputError("give both ends of the route: `src` and `dst`",
                         "src" if r.src is None else "dst")
    nbytes = positive(parse_expr(r.nbytes, where="nbytes"), r.nbytes, "nbytes")
    src = _coordinates(r.src, "src") if r.src is not None else None
    dst = _coordinates(r.dst, "dst") if r.dst is not None else None
    hops: object = 1
    if r.hops is not None:
        if "=" in r.hops:
            hops = {k: size_value(k, v, "hops") for k, v in
                    parse_assignments(r.hops, where="hops").items()}
        else:
            hops = size_value("hops", r.hops, "hops")
    if len(names) > 1 and src is None and not isinstance(hops, dict):
        raise InputError(f"a route over axes {''.join(names)} needs `src` and `dst` "
                         f"coordinates (one per axis) or `hops` per axis, e.g. "
                         f"'{names[0]}=1,{names[1]}=1'", "axes")
    try:
        t = send(nbytes, r.axes, m, hops, src=src, dst=dst)
    except InputError as exc:
        raise InputError(exc.message, "hops" if r.hops is not None else "src") from None
    used = t.time.free_symbols | t.nbytes.free_symbols
    return SendAnalysis(t, m, _values(r.subs, used))


def _coordinates(text_: str, where: str) -> tuple[int, ...]:
    """``"0,3"`` -> (0, 3): whole numbers from 0, one per axis of the route."""
    parts = [p.strip() for p in text_.split(",")]
    if not all(p.isdigit() for p in parts):
        raise InputError(f"coordinates are whole numbers from 0, one per axis, e.g. '0,3'; "
                         f"got {text_!r}", where)
    return tuple(int(p) for p in parts)


@dataclass(frozen=True)
class TogetherRequest:
    """Collectives issued together on ``mesh``: each ``KIND``, ``KIND:BYTES`` or
    ``KIND:BYTES:AXES`` of ``collectives``, the bytes and axes defaulting to ``nbytes`` and
    ``axes``; costed under ``choices`` (``concurrent=shared``: at once, their bytes adding on
    a link they share), at ``subs``."""

    collectives: tuple[str, ...]
    mesh: str
    axes: str
    nbytes: str
    chip: str = DEFAULT_CHIP
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    topology: str | None = None
    choices: str | None = None
    subs: str | None = None


@dataclass(frozen=True)
class TogetherAnalysis:
    """Collectives issued together (``parallel.concurrent.together``), at ``values``."""

    together: Together
    mesh: Mesh
    values: Mapping[sp.Symbol, sp.Expr]

    def value(self, expr: sp.Expr) -> sp.Expr:
        return _at(expr, self.values)

    def to_json(self) -> dict[str, object]:
        from ..core.printer import number_value, text
        t = self.together
        out: dict[str, object] = {
            "together": [{"collective": c.title, "time": text(self.value(c.time)),
                          "time_value": number_value(self.value(c.time))}
                         for c in t.collectives],
            "mesh": self.mesh.spec, "chip": self.mesh.chip.name,
            "choices": t.choices.describe(),
            "values": {str(k): text(v) for k, v in self.values.items()}}
        links = {k: self.value(v) for k, v in t.per_link.items()}
        out["per_link"] = {k: text(v) for k, v in links.items()}
        out["per_link_value"] = {k: number_value(v) for k, v in links.items()}
        _both(out, {"bandwidth_time": t.bandwidth_time, "latency_time": t.latency_time,
                    "time": t.time}, self.value)
        return out


def together_of(request: TogetherRequest) -> TogetherAnalysis:
    """The collectives of ``request`` issued together (``parallel.concurrent.together``).

    >>> r = together_of(TogetherRequest(("allgather", "reducescatter"), mesh="X=16",
    ...                                 axes="X", nbytes="V",
    ...                                 choices="concurrent=shared,latency=off"))
    >>> r.together.time
    V/48000000000
    """
    from ..parallel.concurrent import together
    r = request
    m = mesh_with(r.mesh, chip_with(r.chip, r.catalog, r.overrides), r.topology)
    if len(r.collectives) < 2:
        raise InputError("collectives issued together: give at least one more with `with`",
                         "with")
    made = []
    for spec in r.collectives:
        kind, colon, rest = spec.partition(":")
        nbytes, colon2, axes = rest.partition(":")
        if (colon and not nbytes.strip()) or (colon2 and not axes.strip()):
            raise InputError(f"{spec!r}: KIND, KIND:BYTES or KIND:BYTES:AXES, nothing empty "
                             "after a ':'", "with")
        k = canonical_kind(kind.strip(), "with")
        text_ = nbytes.strip() or r.nbytes
        v = positive(parse_expr(text_, where="with"), text_, "with")
        try:
            made.append(collective(k, v, axes.strip() or r.axes, m))
        except InputError as exc:
            raise InputError(f"{spec}: {exc.message}", "with") from None
    choices = parse_choices(r.choices) if r.choices is not None else EXACT
    t = together(*made, choices=choices.within(TOGETHER_CHOICES, "collectives issued "
                                                                  "together"))
    return TogetherAnalysis(t, m, _values(r.subs, t.time.free_symbols))
