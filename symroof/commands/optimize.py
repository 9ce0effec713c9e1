"""``symroof optimize``: a typed objective and constraint, or a published scaling law's
constant set, solved by Lagrange multipliers.

>>> r = optimize(OptimizeRequest(minimize="A/N**alpha + B/D**beta", subject_to="6*N*D = C",
...                              variables="N,D", values="alpha=0.34,beta=0.28"))
>>> r.exponents
{N: 14/31, D: 17/31}
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import parse_assignments, parse_expr, parse_relation, symbol
from ..engine.optimize import OptimizeResult, lagrange
from ..topics.scaling_laws import constant_set


@dataclass(frozen=True)
class OptimizeRequest:
    """Minimise ``minimize`` subject to ``subject_to`` over ``variables`` (``"N,D"``), with
    ``values`` for constants or a published constant set ``constants`` (its form and budget
    when the formulas are not given); evaluated at a budget ``at`` (``"C=5.76e23"``)."""

    minimize: str | None = None
    subject_to: str | None = None
    variables: str | None = None
    values: str | None = None
    constants: str | None = None
    at: str | None = None
    method: str = "auto"


def optimize(request: OptimizeRequest) -> OptimizeResult:
    """Parse, substitute known constants, and solve by Lagrange multipliers."""
    minimize, subject_to, variables = request.minimize, request.subject_to, request.variables
    values, constants, at, method = request.values, request.constants, request.at, \
        request.method
    chosen = constant_set(constants) if constants else None
    objective = parse_expr(minimize, where="minimize") if minimize else (
        chosen.form if chosen else None)
    constraint = parse_relation(subject_to, where="subject_to") if subject_to else (
        chosen.budget if chosen else None)
    if objective is None:
        raise InputError("give `minimize` EXPR (or `constants` NAME for a published form)",
                         "optimize")
    if constraint is None or not isinstance(constraint, sp.Equality):
        raise InputError("give an equation such as '6*N*D = C'", "subject_to")
    names = [v.strip() for v in (variables or "N,D").split(",") if v.strip()]
    xs = [symbol(n) for n in names]
    for x in xs:
        if x not in objective.free_symbols:
            raise InputError(f"unknown variable {x}: the objective uses "
                             f"{', '.join(sorted(map(str, objective.free_symbols)))}", "variables")
    known: dict[sp.Symbol, sp.Expr] = dict(chosen.subs()) if chosen else {}
    for name, raw in parse_assignments(values or "", where="values").items():
        s = symbol(name)
        if s not in objective.free_symbols | constraint.free_symbols:
            raise InputError(f"unknown symbol {name!r}", "values")
        known[s] = parse_expr(raw, where=f"values {name}")
    free_budget = sorted(constraint.free_symbols - set(xs) - set(known), key=str)
    if len(free_budget) != 1:
        raise InputError("the constraint needs exactly one budget symbol besides the "
                         f"variables, found {', '.join(map(str, free_budget)) or 'none'}",
                         "subject_to")
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
        point = {}
        coefficients = (objective.free_symbols | constraint.free_symbols) - set(xs) - \
            set(exact)
        for k, v in parse_assignments(at, where="at").items():
            value = parse_expr(v, where=f"at {k}")
            if symbol(k) != budget and symbol(k) not in set(later) | coefficients:
                raise InputError(f"unknown symbol {k!r}: give the budget {budget}", "at")
            if not value.is_number or not value.is_positive:
                raise InputError(f"{k} must be a positive number, got {v!r}", "at")
            point[symbol(k)] = value
        if budget not in point:
            raise InputError(f"give the budget {budget}, e.g. {budget}=5.76e23", "at")
        values_at = {**later, **point}
        missing = sorted(set().union(*(v.free_symbols for v in opt.solution.values()),
                                     objective.subs(exact).free_symbols - set(xs))
                         - set(values_at), key=str)
        if missing:
            said = ", ".join(map(str, missing))
            raise InputError(f"the optimum still depends on {said}: give {said} too "
                             f"(`at` {budget}=...,{missing[0]}=...) or with `values`", "at")
        sol = {x: v.evalf(30, subs=values_at) for x, v in opt.solution.items()}
        for x, v in sol.items():
            numbers[f"{x}*"] = v
        if len(xs) == 2:
            numbers[f"{xs[1]}*/{xs[0]}*"] = sol[xs[1]] / sol[xs[0]]
        loss = objective.subs(exact).evalf(30, subs={**values_at, **sol})
        numbers["objective"] = loss
    return OptimizeResult(opt, budget, exponents, numbers, constants,
                        dict(sorted(known.items(), key=lambda kv: str(kv[0]))))
