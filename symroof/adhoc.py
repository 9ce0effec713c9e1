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
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .asymptotics import Expansion, expansion, parse_regime
from .errors import DerivationError, InputError
from .hardware import Chip, chip, load_catalog
from .ops import Op, einsum, op
from .optimize import Optimum, lagrange
from .parse import parse_assignments, parse_expr, parse_relation, symbol
from .printing import number_value, text
from .rooflines import Roofline, roofline
from .scaling import constant_set
from .thresholds import Threshold, solve_condition, threshold


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
            "unit": rl.op.unit,
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
                                     "relation": text(th.inequality),
                                     "direction": th.direction}
            _put(block, "exact", th.exact)
            _put(block, "asymptotic", th.asymptotic)
            block["integer"] = th.integer
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
                 dtype: str | None = None, unit: str = "mxu", solve: str | None = None,
                 regime: str | None = None, subs: str | None = None) -> AdHoc:
    """Parse, build the op, and derive roofline, expansion and threshold."""
    the_chip = _chip(chip_name, catalog, overrides or {})
    the_op = _op(flops, bytes, comm_bytes, link, einsum_spec, dtypes, out_dtype, dtype, unit)
    rl = roofline(the_op, the_chip)
    used = rl.op.flops.free_symbols.union(*(rl.t_comms[k].free_symbols for k in rl.t_comms))
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
    reg = parse_regime(regime) if regime else None
    if reg is not None:
        unknown = [s for s in reg.named if s not in used]
        if unknown:
            raise InputError(f"the regime names {unknown[0]}, which no formula uses", "--regime")
    exp = expansion(rl.intensity, reg) if reg is not None else None
    th = None
    existence = None
    if solve_symbol is not None:
        try:
            th = threshold(rl, solve_symbol, regime=reg)
            existence = th.existence
            if values:
                th = th.at(values)
                existence = solve_condition(th.existence) if isinstance(th.existence, sp.Rel) \
                    else th.existence
        except DerivationError as exc:
            raise DerivationError(exc.message, "--solve") from None
    if values:
        rl = rl.at(values)
    return AdHoc(rl, exp, th, existence, values)


def _chip(name: str, catalog: str | None, overrides: Mapping[str, str]) -> Chip:
    try:
        found = chip(name, catalog=load_catalog(catalog))
    except InputError as exc:
        raise InputError(exc.message, exc.where or "--chip") from None
    return found.with_figures(overrides) if overrides else found


def _op(flops: str | None, bytes_: str | None, comm_bytes: str | None, link: str | None,
        spec: str | None, dtypes: str | None, out_dtype: str | None, dtype: str | None,
        unit: str) -> Op:
    if spec is not None:
        if flops or bytes_:
            raise InputError("give either --einsum or --flops/--bytes, not both", "--einsum")
        kinds = [d.strip() for d in (dtypes or "bf16").split(",")]
        built = einsum(spec, kinds[0] if len(kinds) == 1 else kinds, out=out_dtype,
                       compute=dtype, name=spec)
        comms = _comms(comm_bytes, link)
        return Op(built.name, built.flops, built.reads, built.writes, comms, built.dtype, unit)
    if flops is None:
        raise InputError("give --flops (and --bytes or --comm-bytes), or --einsum", "derive")
    f = _formula(flops, "--flops")
    if bytes_ is None and comm_bytes is None:
        raise InputError("give --bytes, --comm-bytes, or both", "derive")
    b = _formula(bytes_, "--bytes") if bytes_ is not None else 0
    name = f"flops {flops}" + (f", bytes {bytes_}" if bytes_ else "")
    return op(name, f, b, comms=_comms(comm_bytes, link), dtype=dtype or "bf16", unit=unit)


def _comms(comm_bytes: str | None, link: str | None) -> dict[str, sp.Expr]:
    if comm_bytes is None:
        if link is not None:
            raise InputError("--link needs --comm-bytes", "--link")
        return {}
    return {(link or "ici"): _formula(comm_bytes, "--comm-bytes")}


def _formula(text_: str, where: str) -> sp.Expr:
    expr = parse_expr(text_, where=where)
    if expr.is_number and not expr.is_positive:
        raise InputError(f"{text_!r} must be positive", where)
    return expr


def _values(subs: str | None, used: set[sp.Basic]) -> dict[sp.Symbol, sp.Expr]:
    if not subs:
        return {}
    out: dict[sp.Symbol, sp.Expr] = {}
    for name, raw in parse_assignments(subs, where="--subs").items():
        value = parse_expr(raw, where=f"--subs {name}")
        if not value.is_number:
            raise InputError(f"{name} must be a number, got {raw!r}", "--subs")
        if not value.is_positive:
            raise InputError(f"size {name} must be positive, got {raw}", "--subs")
        s = symbol(name)
        if s not in used:
            raise InputError(f"unknown symbol {name!r}: the formulas use "
                             f"{', '.join(sorted(map(str, used)))}", "--subs")
        out[s] = value
    return out


@dataclass(frozen=True)
class AdHocOptimum:
    """What ``symroof optimize`` derived: the optimum, its exponents, and numbers at ``at``."""

    optimum: Optimum
    budget: sp.Symbol
    exponents: Mapping[sp.Symbol, sp.Expr]
    numbers: Mapping[str, sp.Expr]
    constants: str | None

    def to_json(self) -> dict[str, Any]:
        o = self.optimum
        out: dict[str, Any] = {
            "objective": text(o.objective), "constraint": text(o.constraint),
            "variables": [str(x) for x in o.variables], "method": o.method,
            "constants": self.constants, "budget": str(self.budget),
            "conditions": [text(c) for c in o.conditions],
            "balance": text(o.balance) if o.balance is not None else None,
            "solution": {str(x): text(v) for x, v in o.solution.items()},
            "exponents": {str(x): text(e) for x, e in self.exponents.items()},
            "exponents_value": {str(x): number_value(e) for x, e in self.exponents.items()},
        }
        if self.numbers:
            out["at"] = {k: text(v) if v.is_Rational else None for k, v in self.numbers.items()}
            out["at_value"] = {k: number_value(v) for k, v in self.numbers.items()}
        return out


def optimize_adhoc(*, minimize: str | None, subject_to: str | None, variables: str | None,
                   values: str | None = None, constants: str | None = None,
                   at: str | None = None, method: str = "auto") -> AdHocOptimum:
    """Parse, substitute known constants, and solve by Lagrange multipliers."""
    chosen = constant_set(constants) if constants else None
    objective = parse_expr(minimize, where="--minimize") if minimize else (
        chosen.form if chosen else None)
    constraint = parse_relation(subject_to, where="--subject-to") if subject_to else (
        chosen.budget if chosen else None)
    if objective is None:
        raise InputError("give --minimize EXPR (or --constants NAME for a published form)",
                         "optimize")
    if constraint is None or not isinstance(constraint, sp.Equality):
        raise InputError("give an equation such as '6*N*D = C'", "--subject-to")
    names = [v.strip() for v in (variables or "N,D").split(",") if v.strip()]
    xs = [symbol(n) for n in names]
    for x in xs:
        if x not in objective.free_symbols:
            raise InputError(f"unknown variable {x}: the objective uses "
                             f"{', '.join(sorted(map(str, objective.free_symbols)))}", "--vars")
    known: dict[sp.Symbol, sp.Expr] = dict(chosen.subs()) if chosen else {}
    for name, raw in parse_assignments(values or "", where="--values").items():
        s = symbol(name)
        if s not in objective.free_symbols | constraint.free_symbols:
            raise InputError(f"unknown symbol {name!r}", "--values")
        known[s] = parse_expr(raw, where=f"--values {name}")
    free_budget = sorted(constraint.free_symbols - set(xs) - set(known), key=str)
    if len(free_budget) != 1:
        raise InputError("the constraint needs exactly one budget symbol besides the "
                         f"variables, found {', '.join(map(str, free_budget)) or 'none'}",
                         "--subject-to")
    (budget,) = free_budget
    # exponents are substituted exactly before solving; coefficients stay symbolic and are
    # evaluated numerically at the end (exact powers of long rationals are needlessly slow)
    in_exponents = set().union(*(p.exp.free_symbols for p in objective.atoms(sp.Pow)))
    exact = {k: v for k, v in known.items() if k in in_exponents}
    later = {k: v for k, v in known.items() if k not in in_exponents}
    try:
        opt = lagrange(objective.subs(exact), constraint.subs(known), xs, method=method)
    except DerivationError as exc:
        raise DerivationError(exc.message, "optimize") from None
    exponents = {x: opt.exponent(x, budget) for x in xs}
    numbers: dict[str, sp.Expr] = {}
    if at:
        point = {symbol(k): parse_expr(v, where=f"--at {k}") for k, v in
                 parse_assignments(at, where="--at").items()}
        if budget not in point:
            raise InputError(f"give the budget {budget}, e.g. {budget}=5.76e23", "--at")
        values_at = {**later, **point}
        sol = {x: v.evalf(30, subs=values_at) for x, v in opt.solution.items()}
        for x, v in sol.items():
            numbers[f"{x}*"] = v
        if len(xs) == 2:
            numbers[f"{xs[1]}*/{xs[0]}*"] = sol[xs[1]] / sol[xs[0]]
        loss = objective.subs(exact).evalf(30, subs={**values_at, **sol})
        numbers["objective"] = loss if loss.is_number else sp.nan
    return AdHocOptimum(opt, budget, exponents, numbers, constants)
