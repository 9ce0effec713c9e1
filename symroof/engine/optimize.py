"""Constrained optima by Lagrange multipliers, with a fast path for power laws.

>>> from symroof import sizes
>>> N, D, C, A, B = sizes("N D C A B")
>>> alpha, beta = sp.Rational(34, 100), sp.Rational(28, 100)
>>> opt = lagrange(A / N**alpha + B / D**beta, sp.Eq(6 * N * D, C), [N, D])
>>> opt.method, opt.exponent(N, C), opt.exponent(D, C)
('power-law', 14/31, 17/31)

For a sum of power laws, one per variable, under a monomial constraint (the Chinchilla
form ``A/N^alpha + B/D^beta`` with ``6 N D = C``), the stationarity conditions are linear
in the logs n = log N, d = log D: ``x dL/dx = 0`` gives ``e_j T_j = lambda k_j G`` for each
term ``T_j`` with exponent ``e_j`` and constraint exponent ``k_j``. That system solves in
milliseconds, with symbolic or concrete exponents alike, where ``sympy.solve`` on the raw
conditions takes about a second, or does not finish. Other forms go through ``sympy.solve``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.memo import memo
from ..core.parse import exact
from ..core.printer import number_value, text
from ..core.steps import Step
from ..core.timelimits import TimeLimit, time_limit
from .algebra import cancel

LAMBDA = sp.Symbol("lambda")


@dataclass(frozen=True)
class Optimum:
    """The stationary point of ``objective`` under ``constraint``, as functions of the
    budget and the constants."""

    objective: sp.Expr
    constraint: sp.Eq
    variables: tuple[sp.Symbol, ...]
    lagrangian: sp.Expr
    conditions: tuple[sp.Eq, ...]
    solution: Mapping[sp.Symbol, sp.Expr]
    balance: sp.Eq | None
    method: str
    steps: tuple[Step, ...]

    def exponent(self, variable: sp.Symbol, budget: sp.Symbol) -> sp.Expr:
        """d log x* / d log budget, exact.

        For power-law optima x* is a product of powers, so the exponent is read off."""
        return cancel(log_slope(self.solution[variable], budget))

    def value(self) -> sp.Expr:
        """The objective at the optimum."""
        return self.objective.subs(self.solution)

    def at(self, values: Mapping[sp.Symbol, sp.Expr]) -> dict[sp.Symbol, sp.Expr]:
        """The optimum's variables at concrete constants and budget."""
        return {x: exact(v).subs(values) for x, v in self.solution.items()}


def log_slope(x: sp.Expr, budget: sp.Symbol) -> sp.Expr:
    """d log x / d log budget, read off a product of powers factor by factor (uncancelled).

    >>> from symroof import sizes
    >>> C, A, a = sizes("C A a")
    >>> log_slope(A * (C / 6)**a * C**2, C)
    a + 2

    A factor that is not a power of the budget times constants is differentiated.
    """
    if not x.has(budget):
        return sp.Integer(0)
    if x == budget:
        return sp.Integer(1)
    if isinstance(x, sp.Mul):
        return sp.Add(*(log_slope(f, budget) for f in x.args))
    if isinstance(x, sp.Pow) and not x.exp.has(budget):
        return x.exp * log_slope(x.base, budget)
    return sp.diff(x, budget) * budget / x


@memo
def lagrange(objective: sp.Expr, constraint: sp.Eq, variables: Sequence[sp.Symbol],
             *, method: str = "auto", timeout: float = 30) -> Optimum:
    """Minimise ``objective`` subject to ``constraint`` over ``variables``.

    ``method`` is ``auto`` (the power-law fast path when the form allows it), ``power-law``
    (fail when it does not) or ``general`` (``sympy.solve`` on the stationarity system,
    given ``timeout`` seconds of CPU time; :class:`Unsolved`, saying why, when it gives no optimum).
    An objective that is a positive power (or a positive multiple) of a power-law sum has
    the same optimum as the sum, and takes the fast path.
    """
    xs = tuple(variables)
    if not xs:
        raise InputError("no variables to optimise over")
    f = exact(objective)
    missing = [x for x in xs if x not in f.free_symbols]
    if missing:
        raise InputError(f"the objective does not depend on {missing[0]}")
    if not isinstance(constraint, sp.Equality):
        raise InputError(f"the constraint must be an equation, got {constraint}")
    g = constraint.lhs - constraint.rhs
    lagrangian = f + LAMBDA * g
    conditions = tuple(sp.Eq(sp.diff(lagrangian, x), 0, evaluate=False) for x in xs)
    steps = [
        Step("define", "Lagrangian", None, sp.Eq(sp.Symbol("L"), lagrangian, evaluate=False),
             f"minimise {text(f)} subject to {text(constraint)}"),
        *(Step("define", f"stationarity in {x}", None, c, "dL/dx = 0")
          for x, c in zip(xs, conditions, strict=True)),
    ]
    if method not in ("auto", "power-law", "general"):
        raise InputError(f"unknown method {method!r} (auto, power-law, general)")
    inner = _monotone_core(f, xs)
    if inner != f:
        steps.append(Step("simplify", "the same optimum", f, inner,
                          "a positive power or multiple of a positive sum is increasing in it"))
    form = _power_form(inner, constraint, xs) if method != "general" else None
    if form is None and method == "power-law":
        raise DerivationError("the objective is not a sum of one power law per variable under "
                              "a monomial constraint")
    if form is not None:
        solution, balance, more = _solve_power_law(*form, xs)
        steps += more
        chosen = "power-law"
    else:
        solution = _solve_general(conditions, g, xs, timeout)
        balance = None
        chosen = "general"
        steps.append(Step("solve", "stationarity and constraint", None,
                          [sp.Eq(x, solution[x], evaluate=False) for x in xs], "sympy.solve"))
    return Optimum(f, constraint, xs, lagrangian, conditions, solution, balance, chosen,
                   tuple(steps))


_PowerForm = tuple[list[tuple[sp.Expr, sp.Expr]], sp.Expr, list[sp.Expr], sp.Expr]


def _power_form(f: sp.Expr, constraint: sp.Eq,
                xs: tuple[sp.Symbol, ...]) -> _PowerForm | None:
    """(per-variable (coefficient, exponent), constraint coefficient, constraint exponents,
    budget), or None when the form does not fit."""
    per_var: dict[sp.Symbol, tuple[sp.Expr, sp.Expr]] = {}
    for term in sp.Add.make_args(sp.expand(f)):
        if not term.free_symbols & set(xs):
            continue  # a constant such as E shifts the value, not the optimum
        term = sp.expand_power_base(term, force=True)  # (N_c/N)**a -> N_c**a * N**-a
        coeff, rest = term.as_independent(*xs, as_Add=False)
        powers = sp.powsimp(rest).as_powers_dict()
        if len(powers) != 1:
            return None
        ((base, exp),) = powers.items()
        if base not in xs or exp.free_symbols & set(xs) or base in per_var:
            return None
        per_var[base] = (coeff, exp)
    if set(per_var) != set(xs):
        return None
    for lhs, rhs in ((constraint.lhs, constraint.rhs), (constraint.rhs, constraint.lhs)):
        if rhs.free_symbols & set(xs) or not lhs.free_symbols & set(xs):
            continue
        c, mono = lhs.as_independent(*xs, as_Add=False)
        powers = sp.powsimp(mono).as_powers_dict()
        if set(powers) != set(xs) or any(e.free_symbols & set(xs) for e in powers.values()):
            return None
        return [per_var[x] for x in xs], c, [powers[x] for x in xs], rhs
    return None


def _solve_power_law(terms: list[tuple[sp.Expr, sp.Expr]], c: sp.Expr, ks: list[sp.Expr],
                     budget: sp.Expr, xs: tuple[sp.Symbol, ...],
                     ) -> tuple[dict[sp.Symbol, sp.Expr], sp.Eq | None, list[Step]]:
    """Solve the log-linear system: unknowns n_j = log x_j and m = log nu, where
    ``-e_j A_j x_j^e_j / k_j = nu`` for every j and ``c prod x_j^k_j = budget``.

    Written with L_j = log(-e_j A_j / k_j), the rows are ``L_j + e_j n_j = m`` and
    ``L_c + sum k_j n_j = L_budget``, so with S = sum k_j / e_j, in closed form:
    ``m = (L_budget - L_c + sum k_j L_j / e_j) / S`` and ``n_j = (m - L_j) / e_j``."""
    ns = [sp.Symbol(f"n_{x}") for x in xs]
    m = sp.Symbol("m")
    # bases whose logs are the system's right-hand sides
    bases: list[sp.Expr] = []

    def log_of(value: sp.Expr) -> sp.Symbol:
        bases.append(value)
        return sp.Symbol(f"L{len(bases) - 1}")

    rows = []
    for (coeff, e), k, n in zip(terms, ks, ns, strict=True):
        # log(-e A / k) + e n = m
        rows.append(sp.Eq(log_of(-e * coeff / k) + e * n, m, evaluate=False))
    rows.append(sp.Eq(log_of(c) + sum(k * n for k, n in zip(ks, ns, strict=True)),
                      log_of(budget), evaluate=False))
    es = [e for _, e in terms]
    total = sp.Add(*(k / e for k, e in zip(ks, es, strict=True)))
    if cancel(total) == 0:
        raise DerivationError("the log-linear stationarity system has no solution")
    solution: dict[sp.Symbol, sp.Expr] = {}
    for j, x in enumerate(xs):
        # n_j = sum over the logs L of weight_L L: the L_i, then L_c, then L_budget
        scale = 1 / (es[j] * total)
        weights = [k / e * scale - (1 / es[j] if i == j else 0)
                   for i, (k, e) in enumerate(zip(ks, es, strict=True))]
        weights += [-scale, scale]
        factors = []
        for w, base in zip(weights, bases, strict=True):
            weight = cancel(w)
            if weight != 0:
                # numeric bases stay as written: evaluated, SymPy would merge them into
                # integers of hundreds of digits
                factors.append(sp.Pow(base, weight, evaluate=not base.is_number))
        solution[x] = sp.Mul(*factors)
    lhs_terms = [-e * coeff * x**e / k for (coeff, e), k, x in zip(terms, ks, xs, strict=True)]
    balance = sp.Eq(lhs_terms[0], lhs_terms[1], evaluate=False) if len(xs) > 1 else None
    steps = [
        Step("simplify", "multiply each condition by its variable", None,
             [sp.Eq(t, sp.Symbol("nu"), evaluate=False) for t in lhs_terms],
             "x dL/dx = 0 with a monomial constraint: every term is proportional to nu"),
        Step("substitute", "take logs: n = log x", None, rows, "linear in the logs"),
        Step("solve", "the linear system", None,
             [sp.Eq(x, v, evaluate=False) for x, v in solution.items()],
             "in closed form: m first, then each n = (m - L) / e"),
    ]
    return solution, balance, steps


def _monotone_core(f: sp.Expr, xs: tuple[sp.Symbol, ...]) -> sp.Expr:
    """``f`` without outer positive powers and positive factors free of the variables:
    ``((N_c/N)**a + D_c/D)**b`` becomes ``(N_c/N)**a + D_c/D``."""
    while True:
        if isinstance(f, sp.Pow) and not f.exp.free_symbols & set(xs) and f.exp.is_positive \
                and f.base.is_positive:
            f = f.base
            continue
        coeff, rest = f.as_independent(*xs, as_Add=False)
        if coeff != 1 and coeff.is_positive and rest.is_positive:
            f = rest
            continue
        return f


class Unsolved(DerivationError):
    """The general solver gave no optimum; the message says ``unsolved:`` and why.

    >>> str(Unsolved("sympy.solve found no solution"))
    'unsolved: sympy.solve found no solution'
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        text = message if message.startswith("unsolved: ") else f"unsolved: {message}"
        super().__init__(text, where)


def _solve_general(conditions: tuple[sp.Eq, ...], g: sp.Expr, xs: tuple[sp.Symbol, ...],
                   timeout: float) -> dict[sp.Symbol, sp.Expr]:
    """``sympy.solve`` on the stationarity conditions and the constraint, given ``timeout``
    seconds; :class:`Unsolved` when it finishes with no usable optimum or runs out of time."""
    system = [c.lhs for c in conditions] + [g]
    unknowns = ", ".join(map(str, [*xs, LAMBDA]))
    where = f"{len(system)} stationarity equations in {unknowns}"
    try:
        with time_limit(timeout, cpu=True):
            found = sp.solve(system, [*xs, LAMBDA], dict=True)
    except NotImplementedError as exc:
        raise Unsolved(f"sympy.solve cannot solve the {where}: {exc}") from None
    except TimeLimit:
        raise Unsolved(f"sympy.solve did not finish within {timeout:g} s of CPU time on the "
                       f"{where} (the power-law fast path does not apply to this form)") from None
    if not found:
        raise Unsolved(f"sympy.solve found no solution of the {where}")
    complete = [s for s in found if all(x in s for x in xs)]
    if not complete:
        free = sorted(str(x) for x in xs if x not in found[0])
        raise Unsolved(f"sympy.solve left {', '.join(free)} undetermined: the {where} do "
                       "not fix a single point")
    positive = [s for s in complete if all(s[x].is_positive is not False for x in xs)]
    if not positive:
        raise Unsolved(f"none of the {len(complete)} stationary points sympy.solve found has "
                       f"every one of {', '.join(map(str, xs))} positive")
    best = positive[0]
    return {x: best[x] for x in xs}


@dataclass(frozen=True)
class OptimizeResult:
    """An optimum with its exponents in the budget and numbers at a budget (``numbers``)."""

    optimum: Optimum
    budget: sp.Symbol
    exponents: Mapping[sp.Symbol, sp.Expr]
    numbers: Mapping[str, sp.Expr]
    constants: str | None
    known: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)  # the constants substituted

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
