"""``symroof derive``: one op on one chip (or on a mesh) from formula strings, analysed.

>>> r = derive(DeriveRequest(einsum="B D, D F -> B F", chip="tpu-v5e",
...                          overrides={"hbm": "B1"}, solve="B", regime="B<<D,F"))
>>> r.threshold.asymptotic
9850/41

Every string is parsed by ``symroof.parse`` (never ``eval``); every number that comes out
is derived. Errors name the request's fields (``where="comm_bytes"``); the command line
names its flags.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import sympy as sp

from ..core.choices import EXACT, LINK_CHOICES, Choices, parse_choices
from ..core.errors import DerivationError, InputError
from ..core.parse import parse_assignments, parse_expr, symbol, too_large
from ..core.sizes import by_bytes, size_value
from ..engine.analysis import RooflineAnalysis
from ..engine.asymptotics import expansion, parse_regime
from ..engine.ops import Op, einsum, op, positive
from ..engine.rooflines import Roofline, roofline
from ..engine.thresholds import ALIASES, solve_condition, term_pair, term_time, threshold
from ..engine.thresholds import between as between_terms
from ..hardware import DEFAULT_CHIP
from ..hardware.catalog import Chip, chip_with
from ..parallel.matmul import sharded_matmul
from ..parallel.mesh import Mesh, mesh
from ..parallel.mlp import mlp_step
from ..parallel.stationary import weight_stationary

_TIMES = re.compile(r"\s+(?:x|@|\*|·|×)\s+")


@dataclass(frozen=True)
class DeriveRequest:
    """What to derive: an op from formulas (``flops``, ``bytes``, ``comm_bytes`` over
    ``link``) or an ``einsum`` spec, on ``chip`` (with figure ``overrides``); on a ``mesh``
    a sharded ``matmul`` (``"LHS x RHS"``), one pass (``phase``) of an ``mlp`` layer's
    training step, or formulas whose comm bytes go over an axis; then the expansion in
    ``regime``, the threshold in ``solve`` (``between`` two named terms), at ``subs``."""

    flops: str | None = None
    bytes: str | None = None
    comm_bytes: str | None = None
    link: str | None = None
    einsum: str | None = None
    dtypes: str | None = None
    out_dtype: str | None = None
    chip: str = DEFAULT_CHIP
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    dtype: str | None = None
    compute: str = "mxu"
    solve: str | None = None
    regime: str | None = None
    subs: str | None = None
    between: str | None = None
    serial: str | None = None
    mesh: str | None = None
    topology: str | None = None
    matmul: str | None = None
    scatter: str | None = None
    mlp: str | None = None
    phase: str | None = None
    stationary: str | None = None
    choices: str | None = None
    comm_per: str = "direction"


COMM_PER = {"direction": "one-way", "both": "bidirectional"}


def mesh_notes(m: Mesh) -> tuple[tuple[str, str], ...]:
    """What a mesh took: its topology (a line) and each axis, then its assumptions.

    >>> from symroof.hardware.catalog import chip
    >>> mesh_notes(mesh("X=16:wraps", chip("tpu-v5e")))[0]
    ('mesh', 'X=16:wraps on topology tpu-v5e-pod')
    """
    where = f"topology {m.topology.name}" if m.topology else "no topology (links only)"
    return (("mesh", f"{m.spec or ', '.join(m.axes)} on {where}"),
            *((f"axis {a.name}", a.describe()) for a in m.axes.values()),
            *(("assumption", note) for note in m.assumptions))


def derive(request: DeriveRequest) -> RooflineAnalysis:
    """Parse, build the op (on the mesh when there is one), and analyse its roofline."""
    r = request
    if r.comm_per not in COMM_PER:
        raise InputError(f"comm bytes are counted per 'direction' or over 'both' directions, "
                         f"got {r.comm_per!r}", "comm_per")
    if r.comm_per != "direction" and r.comm_bytes is None:
        raise InputError("`comm_per` says how `comm_bytes` are counted: give `comm_bytes`",
                         "comm_per")
    notes: tuple[tuple[str, str], ...] = ()
    if r.mesh is not None:
        rl, notes = _on_mesh(r)
    else:
        the_chip = chip_with(r.chip, r.catalog, r.overrides)
        built = _op(r)
        rl = roofline(built, the_chip)  # a link the chip lacks is refused here
        if r.comm_bytes is not None:
            name = r.link or "ici"
            if r.comm_per == "both":
                try:
                    bw = the_chip.link(name).bidirectional
                except InputError as exc:
                    raise exc.at("link") from None
                rl = roofline(built, the_chip, bandwidths={name: bw})
            notes = (_comm_note(name, r.comm_per, rl.bandwidths[name]),)
    return analyse(rl, solve=r.solve, regime=r.regime, subs=r.subs, between=r.between,
                   serial=r.serial, notes=notes)


def _comm_note(link: str, per: str, bandwidth: sp.Expr) -> tuple[str, str]:
    """How the comm bytes over ``link`` were counted and timed."""
    if per == "both":
        return (f"bytes ({link}) counted", f"over both directions, timed at the "
                f"bidirectional {sp.sstr(bandwidth)} B/s per chip")
    return (f"bytes ({link}) counted", f"per direction, timed at the one-way "
            f"{sp.sstr(bandwidth)} B/s per chip")


def analyse(rl: Roofline, *, solve: str | None = None, regime: str | None = None,
            subs: str | None = None, between: str | None = None,
            serial: str | None = None,
            notes: tuple[tuple[str, str], ...] = ()) -> RooflineAnalysis:
    """Expansion, threshold and values of a roofline.

    ``between`` (``"math,ici"``, ``"hbm,ici"``, ``"latency,bandwidth"``) asks for the
    threshold between two named terms instead of compute against the primary resource;
    ``serial`` (``"ici,latency"``) names the terms that do not overlap the others (they add
    to T_lower)."""
    if serial is not None:
        rl = replace(rl, serial=_serial(rl, serial))
    pair = term_pair(between)
    used = rl.op.flops.free_symbols.union(*(t.free_symbols for t in rl.terms.values()))
    if pair is not None:
        for name in pair:
            term_time(rl, name)
        if solve is None:
            raise InputError("`between` needs `solve` SYMBOL: the size to solve for",
                             "between")
    values = _values(subs, used)
    solve_symbol = None
    if solve is not None:
        solve_symbol = symbol(solve.strip())
        if solve_symbol not in used:
            raise InputError(f"unknown symbol {solve!r}: the formulas use "
                             f"{', '.join(sorted(map(str, used))) or 'no symbols'}", "solve")
        if solve_symbol in values:
            raise InputError(f"{solve} is solved for, so it cannot be given a value", "subs")
    reg = parse_regime(regime) if regime is not None else None
    if reg is not None:
        unknown = [s for s in reg.named if s not in used]
        if unknown:
            raise InputError(f"the regime names {unknown[0]}, which no formula uses", "regime")
    try:
        exp = expansion(rl.intensity, reg) if reg is not None else None
    except DerivationError as exc:
        raise DerivationError(exc.message, "regime") from None
    th = None
    existence = None
    if solve_symbol is not None:
        try:
            th = threshold(rl, solve_symbol, regime=reg) if pair is None else \
                between_terms(rl, pair[0], pair[1], solve_symbol, regime=reg)
            existence = th.existence
            if values:
                th = th.at(values)
                existence = solve_condition(th.existence) if isinstance(th.existence, sp.Rel) \
                    else th.existence
        except DerivationError as exc:
            raise DerivationError(exc.message, "between" if pair else "solve") from None
    if values:
        rl = rl.at(values)
        if any(too_large(t) for t in (rl.op.flops, rl.t_math, *rl.t_comms.values())):
            raise InputError("the values make a number beyond 10**1000", "subs")
    return RooflineAnalysis(rl, exp, th, existence, values, notes)


def _serial(rl: Roofline, spec: str) -> tuple[str, ...]:
    """The terms ``spec`` names (``math`` is ``compute``), each a term of ``rl``, once."""
    names = [p.strip() for p in spec.split(",")]
    if not all(names):
        raise InputError(f"expected term names separated by commas, e.g. 'ici,latency', got "
                         f"{spec!r}", "serial")
    out: list[str] = []
    for name in names:
        key = ALIASES.get(name, name)
        if key not in rl.terms:
            known = ["math", *(k for k in rl.terms if k != "compute")]
            raise InputError(f"no term {name!r} in the roofline (terms: {', '.join(known)})",
                             "serial")
        if key in out:
            raise InputError(f"term {name!r} is named twice", "serial")
        out.append(key)
    return tuple(out)


def _op(r: DeriveRequest) -> Op:
    if r.einsum is not None:
        if r.flops or r.bytes:
            raise InputError("give either `einsum` or `flops`/`bytes`, not both", "einsum")
        if r.dtypes is not None and not r.dtypes.strip():
            raise InputError("an empty list of dtypes (leave the flag out for bf16)", "dtypes")
        kinds = [d.strip() for d in (r.dtypes or "bf16").split(",")]
        if by_bytes(kinds[0]) and r.dtype is None:
            raise InputError(f"the dtype {kinds[0]!r} is given by its bytes and names no "
                             f"peak: give the compute dtype, `dtype` (e.g. bf16)", "dtypes")
        built = einsum(r.einsum, kinds[0] if len(kinds) == 1 else kinds, out=r.out_dtype,
                       compute=r.dtype, name=r.einsum)
        comms = _comms(r.comm_bytes, r.link)
        return Op(built.name, built.flops, built.reads, built.writes, comms, built.dtype,
                  r.compute)
    if r.flops is None:
        raise InputError("give `flops` (and `bytes` or `comm_bytes`), or `einsum`", "derive")
    f = _formula(r.flops, "flops")  # alone: a pure-FLOP op, compute-bound at any size
    b = _formula(r.bytes, "bytes") if r.bytes is not None else 0
    name = f"flops {r.flops}" + (f", bytes {r.bytes}" if r.bytes else "")
    return op(name, f, b, comms=_comms(r.comm_bytes, r.link), dtype=r.dtype or "bf16",
              compute=r.compute)


def _comms(comm_bytes: str | None, link: str | None) -> dict[str, sp.Expr]:
    if comm_bytes is None:
        if link is not None:
            raise InputError("`link` needs `comm_bytes`", "link")
        return {}
    return {(link or "ici"): _formula(comm_bytes, "comm_bytes")}


def _formula(text_: str, where: str) -> sp.Expr:
    return positive(parse_expr(text_, where=where), text_, where)


def _values(subs: str | None, used: set[sp.Basic]) -> dict[sp.Symbol, sp.Expr]:
    if subs is None:
        return {}
    if not subs.strip():
        raise InputError("no sizes given (leave the flag out for none)", "subs")
    out: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(subs, where="subs").items():
        value = size_value(name, raw, "subs")
        s = symbol(name)
        if s not in used:
            raise InputError(f"unknown symbol {name!r}: the formulas use "
                             f"{', '.join(sorted(map(str, used)))}", "subs")
        out[s] = value
    return out


def _on_mesh(r: DeriveRequest) -> tuple[Roofline, tuple[tuple[str, str], ...]]:
    """A roofline on a mesh: a sharded matmul (``"LHS x RHS"``), one pass of an MLP layer's
    training step (``mlp="fsdp=XY,tp=Z"``, ``phase`` forward or backward, under
    ``choices``), or formulas whose comm bytes go over a mesh axis (``link`` names it) at
    that axis's per-chip bandwidth."""
    assert r.mesh is not None
    m = mesh_with(r.mesh, chip_with(r.chip, r.catalog, r.overrides), r.topology)
    notes = mesh_notes(m)
    if r.comm_per != "direction" and (r.mlp is not None or r.matmul is not None
                                      or r.stationary is not None):
        raise InputError("`comm_per` goes with `comm_bytes`", "comm_per")
    rl = _mesh_roofline(r, m)
    notes = (*notes, *_totals(r, m), *_split(r, m))
    if r.comm_bytes is not None and r.mlp is None and r.matmul is None and \
            r.stationary is None:
        link = next(iter(rl.op.comms))
        label, said = _comm_note(link, r.comm_per, rl.bandwidths[link])
        notes = (*notes, (label, f"{said} on axis {r.link or next(iter(m.axes))}"))
    return rl, notes


def _totals(r: DeriveRequest, m: Mesh) -> tuple[tuple[str, str], ...]:
    """A sharded matmul's totals over every chip of the mesh: its FLOPs and each operand's
    bytes (``ShardedMatmul.total_flops``, ``ShardedArray.total_bytes``: replicated work and
    copies counted on each chip)."""
    if r.matmul is None or r.mlp is not None or r.stationary is not None:
        return ()
    lhs, rhs = _TIMES.split(r.matmul.strip())
    mm = sharded_matmul(lhs, rhs, m, scatter=r.scatter)
    from ..core.printer import si, text

    def shown(value: sp.Expr, unit: str) -> str:
        return f"{si(value, unit)} ({text(value)})" if value.is_number else si(value, unit)

    return (("FLOPs, all chips", f"{shown(mm.total_flops, 'FLOP')} on {text(m.devices)} "
             f"chips, replicated work counted on each"),
            *((f"{side}, all chips", f"{shown(a.total_bytes, 'B')}, each element on "
               f"{text(a.replication)} chip{'' if a.replication == 1 else 's'}")
              for side, a in (("lhs", mm.lhs), ("rhs", mm.rhs))))


def _split(r: DeriveRequest, m: Mesh) -> tuple[tuple[str, str], ...]:
    """A 2-D weight-stationary layout on a mesh whose sizes are names: its best split of N
    chips and the chips past which it beats 1-D over the same axes (none when the choices
    keep terms that depend on more than the groups' products, such as the hops), at the
    sizes ``subs`` gives (B, D, F; the split is solved in N)."""
    if r.stationary is None:
        return ()
    axes = dict(part.strip().partition("=")[::2] for part in r.stationary.split(","))
    sizes_ = [m.axis(a).size for a in m.resolve(axes.get("d", "") + axes.get("f", ""))]
    if not axes.get("d") or not all(x.is_Symbol for x in sizes_) or \
            any(str(x) == "N" for x in sizes_):
        return ()
    from ..core.printer import text
    choices = parse_choices(r.choices) if r.choices else EXACT
    two = weight_stationary(m, d=axes["d"], f=axes["f"], choices=choices)
    one = weight_stationary(m, f=axes["d"] + axes["f"], choices=choices)
    try:
        best = two.best_split("N")
        past = two.chips_to_beat(one, "N")
    except (DerivationError, InputError):
        return ()
    at: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(r.subs or "", where="subs").items():
        at[symbol(name)] = size_value(name, raw, "subs")

    def sized(x: sp.Expr) -> sp.Expr:
        return sp.simplify(x.xreplace(at)) if at else x
    sizes = ", ".join(f"{k} = {text(sized(v))}" for k, v in best.sizes.items())
    return (("best split", f"{sizes} for N chips: {text(sized(best.comm_time))} s of comms"),
            ("beats 1-D", f"past N = {text(sized(past))} chips"))


def _mesh_roofline(r: DeriveRequest, m: Mesh) -> Roofline:
    if r.stationary is not None:
        if r.mlp or r.matmul or r.flops or r.bytes or r.comm_bytes:
            raise InputError("give either `stationary` or `mlp` or `matmul` or "
                             "`flops`/`bytes`/`comm_bytes`", "stationary")
        if r.phase is not None:
            raise InputError("`phase` goes with `mlp` (a weight-stationary layout is the "
                             "inference forward)", "phase")
        return _stationary_roofline(m, r.stationary,
                                    parse_choices(r.choices) if r.choices else EXACT)
    if r.mlp is not None:
        if r.matmul or r.flops or r.bytes or r.comm_bytes:
            raise InputError("give either `mlp` or `matmul` or `flops`/`bytes`/`comm_bytes`",
                             "mlp")
        return _mlp_roofline(m, r.mlp, r.phase or "forward",
                             parse_choices(r.choices) if r.choices else EXACT)
    for name, given in (("phase", r.phase), ("choices", r.choices)):
        if given is not None:
            raise InputError(f"`{name}` goes with `mlp`" + (" or `stationary`" if
                                                            name == "choices" else ""), name)
    if r.matmul is not None:
        if r.flops or r.bytes or r.comm_bytes:
            raise InputError("give either `matmul` or `flops`/`bytes`/`comm_bytes`", "matmul")
        parts = _TIMES.split(r.matmul.strip())
        if len(parts) != 2:
            raise InputError(f"expected 'LHS x RHS', e.g. 'bf16[B, D_X] x bf16[D_X, F]', got "
                             f"{r.matmul!r}", "matmul")
        try:
            return sharded_matmul(parts[0], parts[1], m, scatter=r.scatter).roofline()
        except InputError as exc:
            raise exc.at("matmul") from None
    if r.flops is None:
        raise InputError("with `mesh` give `matmul`, or `flops` (with `bytes` and/or "
                         "`comm_bytes`)", "mesh")
    try:
        axis = m.axis(r.link or next(iter(m.axes)))
    except InputError as exc:
        raise exc.at("link") from None
    comms = {axis.link.name: _formula(r.comm_bytes, "comm_bytes")} if r.comm_bytes else {}
    built = op(f"flops {r.flops}", _formula(r.flops, "flops"),
               _formula(r.bytes, "bytes") if r.bytes else 0, comms=comms,
               dtype=r.dtype or "bf16")
    bw = axis.bandwidth * 2 if r.comm_per == "both" else axis.bandwidth
    return roofline(built, m.chip, bandwidths={axis.link.name: bw})


def mesh_with(spec: str, the_chip: Chip, topology: str | None) -> Mesh:
    """The mesh ``spec`` on ``the_chip``; an error the mesh does not locate is the mesh's."""
    try:
        return mesh(spec, the_chip, topology=topology)
    except InputError as exc:
        raise InputError(exc.message, exc.where or "mesh") from None


def _mlp_roofline(m: Mesh, spec: str, phase: str, choices: Choices) -> Roofline:
    """The roofline of one pass of ``mlp_step`` from ``fsdp=AXES,tp=AXES``."""
    axes: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        kind, eq, names = part.partition("=")
        if kind.strip() not in ("fsdp", "tp") or not eq or not names.strip():
            raise InputError(f"expected fsdp=AXES and/or tp=AXES, e.g. 'fsdp=XY,tp=Z', got "
                             f"{part!r}", "mlp")
        if kind.strip() in axes:
            raise InputError(f"{kind.strip()} is given twice", "mlp")
        axes[kind.strip()] = names.strip()
    try:
        step = mlp_step(m, fsdp=axes.get("fsdp", ()), tp=axes.get("tp", ()), choices=choices)
    except InputError as exc:
        raise InputError(exc.message, "mlp") from None
    try:
        return step.phase(phase).roofline()
    except InputError as exc:
        raise InputError(exc.message, "phase") from None


def _stationary_roofline(m: Mesh, spec: str, choices: Choices) -> Roofline:
    """The roofline of ``weight_stationary`` from ``f=AXES`` or ``d=AXES,f=AXES``."""
    axes: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        kind, eq, names = part.partition("=")
        if kind.strip() not in ("d", "f") or not eq or not names.strip():
            raise InputError(f"expected f=AXES, or d=AXES,f=AXES for a 2-D layout, e.g. "
                             f"'d=X,f=YZ', got {part!r}", "stationary")
        if kind.strip() in axes:
            raise InputError(f"{kind.strip()} is given twice", "stationary")
        axes[kind.strip()] = names.strip()
    if "f" not in axes:
        raise InputError("give the axes F is split over: f=AXES (and d=AXES for a 2-D "
                         "layout)", "stationary")
    choices.within(LINK_CHOICES, "a weight-stationary layout")
    try:
        return weight_stationary(m, f=axes["f"], d=axes.get("d", ()),
                                 choices=choices).roofline()
    except InputError as exc:
        raise InputError(exc.message, "stationary") from None
