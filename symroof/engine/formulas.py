"""Ad hoc derivations from formula strings: the engine behind ``symroof derive``.

>>> r = derive_adhoc(einsum_spec="B D, D F -> B F", chip_name="tpu-v5e",
...                  overrides={"hbm": "B1"}, solve="B", regime="B<<D,F")
>>> r.threshold.asymptotic
9850/41

Every string is parsed by ``symroof.parse`` (never ``eval``); every number that comes out
is derived here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import parse_assignments, parse_expr, symbol, too_large
from ..core.printer import number_value, text
from ..hardware.catalog import Chip, chip, load_catalog
from .asymptotics import Expansion, expansion, parse_regime
from .ops import Op, einsum, op, positive
from .rooflines import Roofline, roofline
from .thresholds import ALIASES, Threshold, solve_condition, term_time, threshold
from .thresholds import between as between_terms


@dataclass(frozen=True)
class AdHoc:
    """What ``symroof derive`` derived: the roofline (at the given sizes), the intensity's
    expansion in the regime, and the threshold."""

    roofline: Roofline
    expansion: Expansion | None
    threshold: Threshold | None
    existence: sp.Basic | None
    values: Mapping[sp.Symbol, sp.Expr]

    def to_json(self) -> dict[str, Any]:
        """The JSON of the command-line contract: exact values as strings, floats beside."""
        rl = self.roofline
        out: dict[str, Any] = {
            "op": rl.op.name,
            "chip": rl.chip.name,
            "dtype": rl.op.dtype,
            "compute": rl.op.compute,
            "values": {str(k): text(v) for k, v in self.values.items()},
        }
        fields = {"flops": rl.op.flops, "bytes": rl.op.bytes(rl.primary) if rl.primary in
                  rl.op.levels else rl.op.comms[rl.primary], "intensity": rl.intensity,
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


def derive_adhoc(*, flops: str | None = None, bytes: str | None = None,
                 comm_bytes: str | None = None, link: str | None = None,
                 einsum_spec: str | None = None, dtypes: str | None = None,
                 out_dtype: str | None = None, chip_name: str = "tpu-v5e",
                 catalog: str | None = None, overrides: Mapping[str, str] | None = None,
                 dtype: str | None = None, compute: str = "mxu", solve: str | None = None,
                 regime: str | None = None, subs: str | None = None,
                 between: str | None = None, serial: str | None = None) -> AdHoc:
    """Parse, build the op, and derive roofline, expansion and threshold."""
    the_chip = command_line_chip(chip_name, catalog, overrides or {})
    the_op = _op(flops, bytes, comm_bytes, link, einsum_spec, dtypes, out_dtype, dtype, compute)
    rl = roofline(the_op, the_chip)
    return derive_from(rl, solve=solve, regime=regime, subs=subs, between=between,
                       serial=serial)


def derive_from(rl: Roofline, *, solve: str | None = None, regime: str | None = None,
                subs: str | None = None, between: str | None = None,
                serial: str | None = None) -> AdHoc:
    """Expansion, threshold and values for a roofline built elsewhere (on a mesh).

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
            raise InputError("--between needs --solve SYMBOL: the size to solve for",
                             "--between")
    values = _values(subs, used)
    solve_symbol = None
    if solve is not None:
        solve_symbol = symbol(solve.strip())
        if solve_symbol not in used:
            raise InputError(f"unknown symbol {solve!r}: the formulas use "
                             f"{', '.join(sorted(map(str, used))) or 'no symbols'}", "--solve")
        if solve_symbol in values:
            raise InputError(f"{solve} is solved for, so it cannot be given a value",
                             "--subs")
    reg = parse_regime(regime) if regime is not None else None  # '' is refused there
    if reg is not None:
        unknown = [s for s in reg.named if s not in used]
        if unknown:
            raise InputError(f"the regime names {unknown[0]}, which no formula uses", "--regime")
    try:
        exp = expansion(rl.intensity, reg) if reg is not None else None
    except DerivationError as exc:
        raise DerivationError(exc.message, "--regime") from None
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
            raise DerivationError(exc.message, "--between" if pair else "--solve") from None
    if values:
        rl = rl.at(values)
        if any(too_large(t) for t in (rl.op.flops, rl.t_math, *rl.t_comms.values())):
            raise InputError("the values make a number beyond 10**1000", "--subs")
    return AdHoc(rl, exp, th, existence, values)


def _serial(rl: Roofline, spec: str) -> tuple[str, ...]:
    """The terms ``spec`` names (``math`` is ``compute``), each a term of ``rl``, once."""
    names = [p.strip() for p in spec.split(",")]
    if not all(names):
        raise InputError(f"expected term names separated by commas, e.g. 'ici,latency', got "
                         f"{spec!r}", "--serial")
    out: list[str] = []
    for name in names:
        key = ALIASES.get(name, name)
        if key not in rl.terms:
            known = ["math", *(k for k in rl.terms if k != "compute")]
            raise InputError(f"no term {name!r} in the roofline (terms: {', '.join(known)})",
                             "--serial")
        if key in out:
            raise InputError(f"term {name!r} is named twice", "--serial")
        out.append(key)
    return tuple(out)


def term_pair(between: str | None) -> tuple[str, str] | None:
    """``"math,ici"`` as the pair of terms of ``--between`` (None when not given).

    >>> term_pair("math, ici")
    ('math', 'ici')
    """
    if between is None:
        return None
    parts = [p.strip() for p in between.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError(f"expected two different terms, e.g. 'math,ici', got {between!r}",
                         "--between")
    return parts[0], parts[1]


def command_line_chip(name: str, catalog: str | None, overrides: Mapping[str, str]) -> Chip:
    try:
        found = chip(name, catalog=load_catalog(catalog))
    except InputError as exc:
        raise InputError(exc.message, exc.where or "--chip") from None
    return found.with_figures(overrides) if overrides else found


def _op(flops: str | None, bytes_: str | None, comm_bytes: str | None, link: str | None,
        spec: str | None, dtypes: str | None, out_dtype: str | None, dtype: str | None,
        compute: str) -> Op:
    if spec is not None:
        if flops or bytes_:
            raise InputError("give either --einsum or --flops/--bytes, not both", "--einsum")
        if dtypes is not None and not dtypes.strip():
            raise InputError("an empty list of dtypes (leave the flag out for bf16)",
                             "--dtypes")
        kinds = [d.strip() for d in (dtypes or "bf16").split(",")]
        built = einsum(spec, kinds[0] if len(kinds) == 1 else kinds, out=out_dtype,
                       compute=dtype, name=spec)
        comms = _comms(comm_bytes, link)
        return Op(built.name, built.flops, built.reads, built.writes, comms, built.dtype, compute)
    if flops is None:
        raise InputError("give --flops (and --bytes or --comm-bytes), or --einsum", "derive")
    f = _formula(flops, "--flops")
    if bytes_ is None and comm_bytes is None:
        raise InputError("give --bytes, --comm-bytes, or both", "derive")
    b = _formula(bytes_, "--bytes") if bytes_ is not None else 0
    name = f"flops {flops}" + (f", bytes {bytes_}" if bytes_ else "")
    return op(name, f, b, comms=_comms(comm_bytes, link), dtype=dtype or "bf16", compute=compute)


def _comms(comm_bytes: str | None, link: str | None) -> dict[str, sp.Expr]:
    if comm_bytes is None:
        if link is not None:
            raise InputError("--link needs --comm-bytes", "--link")
        return {}
    return {(link or "ici"): _formula(comm_bytes, "--comm-bytes")}


def _formula(text_: str, where: str) -> sp.Expr:
    return positive(parse_expr(text_, where=where), text_, where)


def _values(subs: str | None, used: set[sp.Basic]) -> dict[sp.Symbol, sp.Expr]:
    if subs is None:
        return {}
    if not subs.strip():
        raise InputError("no sizes given (leave the flag out for none)", "--subs")
    out: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(subs, where="--subs").items():
        value = size_value(name, raw)
        s = symbol(name)
        if s not in used:
            raise InputError(f"unknown symbol {name!r}: the formulas use "
                             f"{', '.join(sorted(map(str, used)))}", "--subs")
        out[s] = value
    return out


def size_value(name: str, raw: str) -> sp.Integer:
    """The value ``--subs`` gives size ``name``: a positive whole number (a count of elements,
    bytes or chips; 1/2 or pi is no size).

    >>> size_value("D", "8192"), size_value("B", "1.6e4")
    (8192, 16000)
    """
    value = parse_expr(raw, where=f"--subs {name}")
    if not value.is_number:
        raise InputError(f"{name} must be a number, got {raw!r}", "--subs")
    if not value.is_positive:
        raise InputError(f"size {name} must be positive, got {raw}", "--subs")
    if not value.is_Integer:
        raise InputError(f"size {name} must be a whole number, got {raw}", "--subs")
    return value
