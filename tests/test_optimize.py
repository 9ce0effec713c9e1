"""Constrained optima (symroof.engine.optimize.lagrange) and ``symroof optimize``: the laws of the
Chinchilla optimum over random exponents and constants, exact exponents of the published
constant sets, errors, and the command line."""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from types import FrameType

import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symroof.core.errors import DerivationError, InputError
from symroof.core.sizes import sizes
from symroof.engine.optimize import LAMBDA, lagrange
from symroof.topics.scaling_laws import constant_set
from tests.conftest import examples, run_cli

N, D, C, A, B, E, alpha, beta, k = sizes("N D C A B E alpha beta k")
BUDGET = sp.Eq(6 * N * D, C)
CHINCHILLA = E + A / N**alpha + B / D**beta

exponents = st.fractions(min_value=Fraction(1, 20), max_value=3, max_denominator=20)
coefficients = st.fractions(min_value=Fraction(1, 10), max_value=1000, max_denominator=20)
budgets = st.fractions(min_value=Fraction(1, 100), max_value=10**26, max_denominator=100)


def rational(x: Fraction) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


def same(a: sp.Expr, b: sp.Expr) -> bool:
    """Equal products of powers: the log of a/b expands to 0.

    The symbolic logs must cancel; the numeric ones, sum c log n with rational c, are
    checked exactly as prod n^(c L) = 1 with integer powers (L clears the denominators).
    SymPy leaves constants such as 3705...^(1/139) unfactored, so simplify alone cannot
    show them equal."""
    logs = sp.expand_log(sp.log(a / b), force=True)
    symbolic = sp.S.Zero
    numeric: list[tuple[sp.Rational, sp.Rational]] = []
    for term in sp.Add.make_args(logs):
        if term.free_symbols:
            symbolic += term
            continue
        c, rest = term.as_coeff_Mul()
        if not (isinstance(rest, sp.log) and rest.args[0].is_Rational and c.is_Rational):
            return sp.simplify(logs) == 0
        numeric.append((c, rest.args[0]))
    if sp.simplify(symbolic) != 0:
        return False
    scale = math.lcm(*(int(c.q) for c, _ in numeric)) if numeric else 1
    up, down = 1, 1
    for c, n in numeric:
        e = int(c * scale)
        num, den = (int(n.p), int(n.q)) if e > 0 else (int(n.q), int(n.p))
        up, down = up * num ** abs(e), down * den ** abs(e)
    return up == down


def test_same_tells_equal_from_unequal() -> None:
    third = sp.Rational(1, 3)
    assert same(sp.Integer(8) ** third * C, 2 * C)
    assert same(sp.Rational(3, 7) ** sp.Rational(5, 3), sp.Rational(3, 7) ** (2 * third) * 3 / 7)
    assert not same(2 * C, C)
    assert not same(sp.Integer(2) ** third * C, C)
    assert not same(sp.sqrt(A) * C, C)


def chinchilla(a: Fraction, b: Fraction, coeffs: tuple[sp.Expr, sp.Expr] = (A, B)) -> sp.Expr:
    return E + coeffs[0] / N**rational(a) + coeffs[1] / D**rational(b)


# ---------------------------------------------------------------- laws, random exponents

@settings(max_examples=examples(20))
@given(exponents, exponents)
def test_exponents_sum_to_one(a: Fraction, b: Fraction) -> None:
    opt = lagrange(chinchilla(a, b), BUDGET, [N, D])
    assert opt.method == "power-law"
    ea, eb = opt.exponent(N, C), opt.exponent(D, C)
    assert ea + eb == 1
    assert ea == rational(b) / (rational(a) + rational(b))


def numerically(expr: sp.Expr, at: dict[sp.Symbol, sp.Expr]) -> sp.Float:
    """A value at 50 digits: concrete constants enter only here (exact powers of long
    rationals would be needlessly slow)."""
    return sp.N(expr, 50, subs=at)


@pytest.mark.slow
@settings(max_examples=examples(20))
@given(exponents, exponents, coefficients, coefficients, budgets)
def test_budget_is_spent_exactly(a: Fraction, b: Fraction, ca: Fraction, cb: Fraction,
                                 c: Fraction) -> None:
    opt = lagrange(chinchilla(a, b), BUDGET, [N, D])
    spent = 6 * opt.solution[N] * opt.solution[D]
    assert sp.powsimp(spent, force=True) == C or same(spent, C)
    at = {A: rational(ca), B: rational(cb), C: rational(c)}
    assert numerically(spent, at) == pytest.approx(float(c), rel=1e-12)


@settings(max_examples=examples(20))
@given(exponents, exponents)
def test_optimum_does_not_depend_on_e(a: Fraction, b: Fraction) -> None:
    full = lagrange(chinchilla(a, b), BUDGET, [N, D])
    reducible = lagrange(chinchilla(a, b) - E, BUDGET, [N, D])
    for x in (N, D):
        assert E not in full.solution[x].free_symbols
        assert full.solution[x] == reducible.solution[x]


@settings(max_examples=examples(20))
@given(exponents, exponents, coefficients, coefficients, budgets, budgets)
def test_scaling_the_budget(a: Fraction, b: Fraction, ca: Fraction, cb: Fraction,
                            c: Fraction, factor: Fraction) -> None:
    """N*(kC) = k^a N*(C) with a = beta/(alpha+beta): exactly for a symbolic k, and at
    random constants, budget and k."""
    opt = lagrange(chinchilla(a, b), BUDGET, [N, D])
    n_star, e = opt.solution[N], opt.exponent(N, C)
    assert same(n_star.subs(C, k * C), k**e * n_star)
    at = {A: rational(ca), B: rational(cb), C: rational(c)}
    scaled = numerically(n_star.subs(C, rational(factor) * C), at)
    assert scaled == pytest.approx(float(numerically(rational(factor)**e * n_star, at)),
                                   rel=1e-12)


@pytest.mark.slow
@settings(max_examples=examples(20))
@given(exponents, exponents, coefficients, coefficients, budgets)
def test_balance_holds_at_the_optimum(a: Fraction, b: Fraction, ca: Fraction, cb: Fraction,
                                      c: Fraction) -> None:
    opt = lagrange(chinchilla(a, b), BUDGET, [N, D])
    assert opt.balance is not None
    lhs, rhs = (side.subs(opt.solution, simultaneous=True) for side in opt.balance.args)
    assert same(lhs, rhs)
    at = {A: rational(ca), B: rational(cb), C: rational(c)}
    assert numerically(lhs, at) == pytest.approx(float(numerically(rhs, at)), rel=1e-12)


# general-solver cases: pairs for which sympy.solve finishes in well under a second
FAST_PAIRS = [(1, 1), (1, 2), (2, 1), (2, 2), (Fraction(1, 2), Fraction(1, 2)),
              (Fraction(1, 2), 1), (1, Fraction(1, 2)), (Fraction(1, 3), Fraction(2, 3)),
              (Fraction(2, 3), Fraction(1, 3)), (1, Fraction(1, 3)),
              (Fraction(1, 4), Fraction(3, 4))]


class _Slow(Exception):
    pass


@contextmanager
def limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow
@settings(max_examples=examples(8))
@given(st.sampled_from(FAST_PAIRS), st.integers(1, 9), st.integers(1, 9), st.booleans())
def test_fast_path_agrees_with_sympy_solve(pair: tuple[Fraction, Fraction], ca: int, cb: int,
                                           symbolic: bool) -> None:
    a, b = (Fraction(x) for x in pair)
    coeffs = (A, B) if symbolic else (sp.Integer(ca), sp.Integer(cb))
    objective = chinchilla(a, b, coeffs)
    fast = lagrange(objective, BUDGET, [N, D])
    try:
        with limit(3):
            general = lagrange(objective, BUDGET, [N, D], method="general")
    except (_Slow, DerivationError):
        assume(False)  # compare only where both finish
        return
    assert (fast.method, general.method) == ("power-law", "general")
    assert general.balance is None
    for x in (N, D):
        assert same(general.solution[x], fast.solution[x])


# ---------------------------------------------------------------- exact values

def test_rounded_chinchilla_exponents_are_14_31_and_17_31() -> None:
    opt = lagrange(CHINCHILLA.subs({alpha: sp.Rational(34, 100), beta: sp.Rational(28, 100)}),
                   BUDGET, [N, D])
    assert opt.method == "power-law"
    assert (opt.exponent(N, C), opt.exponent(D, C)) == (sp.Rational(14, 31), sp.Rational(17, 31))


def test_constant_set_hoffmann2022_gives_the_same_exponents() -> None:
    s = constant_set("hoffmann2022")
    assert (s.values["alpha"], s.values["beta"]) == (sp.Rational(17, 50), sp.Rational(7, 25))
    opt = lagrange(s.form.subs({alpha: s.values["alpha"], beta: s.values["beta"]}), s.budget,
                   [N, D])
    assert opt.exponent(N, C) == sp.Rational(14, 31)


def test_besiroglu_refit_exponent() -> None:
    s = constant_set("besiroglu2024")
    opt = lagrange(s.form.subs({alpha: s.values["alpha"], beta: s.values["beta"]}), s.budget,
                   [N, D])
    a = opt.exponent(N, C)
    assert a == sp.Rational(1829, 3568)
    assert float(a) == pytest.approx(0.513, abs=5e-4)
    assert opt.exponent(D, C) == 1 - a


def test_symbolic_optimum_lagrangian_conditions_and_balance() -> None:
    opt = lagrange(A / N**alpha + B / D**beta, BUDGET, [N, D])
    assert opt.method == "power-law"
    assert sp.expand(opt.lagrangian - (A / N**alpha + B / D**beta + LAMBDA * (6 * N * D - C))) \
        == 0
    cn, cd = opt.conditions
    assert cn.rhs == 0 and cd.rhs == 0
    assert sp.simplify(cn.lhs - (-alpha * A * N**(-alpha - 1) + 6 * LAMBDA * D)) == 0
    assert sp.simplify(cd.lhs - (-beta * B * D**(-beta - 1) + 6 * LAMBDA * N)) == 0
    # the optimality condition alpha A N^-alpha = beta B D^-beta
    assert opt.balance == sp.Eq(alpha * A / N**alpha, beta * B / D**beta)
    # the closed form of [H22] Eq. 4
    g = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    assert same(opt.solution[N], g * (C / 6) ** (beta / (alpha + beta)))
    assert same(opt.solution[D], (C / 6) ** (alpha / (alpha + beta)) / g)
    assert opt.exponent(N, C) == beta / (alpha + beta)


def test_a_power_of_a_power_law_sum_takes_the_fast_path() -> None:
    # Kaplan's L = ((N_c/N)**(a_N/a_D) + D_c/D)**a_D has the optimum of the inner sum
    kaplan = constant_set("kaplan2020")
    opt = lagrange(kaplan.form, kaplan.budget, [N, D])
    a_n, a_d = sp.Symbol("alpha_N", positive=True), sp.Symbol("alpha_D", positive=True)
    assert opt.method == "power-law"
    assert sp.simplify(opt.exponent(N, C) - a_d / (a_n + a_d)) == 0
    fitted = lagrange(kaplan.form.subs(kaplan.subs()), kaplan.budget, [N, D])
    assert fitted.exponent(N, C) == sp.Rational(103, 179)


def test_constraint_must_be_an_equation() -> None:
    with pytest.raises(InputError, match="equation"):
        lagrange(A / N**alpha + B / D**beta, sp.Gt(6 * N * D, C), [N, D])


@pytest.mark.parametrize(("objective", "constraint"), [
    (A / N**alpha + B / D**beta + N / D, BUDGET),              # a term in both variables
    (A / N**alpha + B / N**beta + D, BUDGET),                  # two power laws in N
    (A / N**alpha + B / D**beta, sp.Eq(6 * N * D + N, C)),     # the budget is not a monomial
])
def test_power_law_method_rejects_forms_that_do_not_fit(objective: sp.Expr,
                                                        constraint: sp.Eq) -> None:
    with pytest.raises(DerivationError, match="power law"):
        lagrange(objective, constraint, [N, D], method="power-law")


def test_unknown_method_and_missing_variable() -> None:
    with pytest.raises(InputError, match="method"):
        lagrange(CHINCHILLA, BUDGET, [N, D], method="newton")
    with pytest.raises(InputError, match="does not depend"):
        lagrange(A / N**alpha, BUDGET, [N, D])


# ---------------------------------------------------------------- the command line

def _json(*args: str) -> dict:
    done = run_cli("optimize", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cli_exponents_for_034_028() -> None:
    out = _json("--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D = C",
                "--vars", "N,D", "--values", "alpha=0.34,beta=0.28")
    assert out["method"] == "power-law"
    assert out["exponents"] == {"N": "14/31", "D": "17/31"}


def test_cli_hoffmann2022_at_chinchilla_compute() -> None:
    out = _json("--constants", "hoffmann2022", "--at", "C=5.76e23")
    # independently: [H22] Eq. 4 in floating point, N* = G (C/6)^a, D* = (C/6)/N*
    a_, b_, A_, B_, C_ = 0.34, 0.28, 406.4, 410.7, 5.76e23
    n_opt = (a_ * A_ / (b_ * B_)) ** (1 / (a_ + b_)) * (C_ / 6) ** (b_ / (a_ + b_))
    d_opt = C_ / 6 / n_opt
    at = out["at_value"]
    assert at["N*"] == pytest.approx(n_opt, rel=1e-9)
    assert at["D*"] == pytest.approx(d_opt, rel=1e-9)
    assert at["D*/N*"] == pytest.approx(d_opt / n_opt, rel=1e-9)
    assert round(at["D*/N*"], 1) == 92.6
    assert math.isclose(at["objective"], 1.69 + A_ / n_opt**a_ + B_ / d_opt**b_, rel_tol=1e-9)


@pytest.mark.parametrize(("args", "where"), [
    (["--constants", "chinchilla-2099"], "--constants"),
    (["--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D = C", "--vars", "N,X"],
     "--vars"),
    (["--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D > C"], "--subject-to"),
    (["--minimize", "A/N**alpha + B/D**beta + N/D", "--subject-to", "6*N*D = C",
      "--method", "power-law"], "optimize"),
])
def test_cli_bad_input_exits_2_with_one_line(args: list[str], where: str) -> None:
    done = run_cli("optimize", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"symroof: error: {where}:")
