"""Critical thresholds: where compute time meets a memory or link time.

>>> from symroof import einsum, chip, roofline
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> t = threshold(rl, "B", regime="B<<D,F")
>>> t.asymptotic, t.relation
(9850/41, B > B_crit)
>>> t.at({"D": 8192, "F": 32768}).integer
250

The threshold solves T_math = T_x for one symbol. Its ``exact`` value is symbolic in the
other sizes, ``asymptotic`` is that value's leading term in the regime, ``existence`` is
the condition on the other sizes under which a positive threshold exists at all, and at
concrete sizes ``integer`` is the first whole number on the compute-bound side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..core.errors import DerivationError, InputError, expect
from ..core.memo import memo
from ..core.parse import symbol
from ..core.steps import Step
from ..core.tables import RichView, Table, key_values
from .algebra import cancel, polynomial_coefficients, substitute
from .asymptotics import Regime, expansion, parse_regime
from .equations import may_be_positive
from .rooflines import Roofline, size_values
from .sides import UNPROVEN, side, sign_changes


@dataclass(frozen=True, repr=False)
class Threshold(RichView):
    """``symbol > exact`` (or ``<``) makes the op compute-bound against ``resource``:
    there ``t_math`` exceeds ``t_other``, the time on that resource."""

    symbol: sp.Symbol
    resource: str
    exact: sp.Expr
    direction: str
    existence: sp.Basic
    asymptotic: sp.Expr | None
    correction: sp.Expr | None
    regime: Regime | None
    steps: tuple[Step, ...]
    t_math: sp.Expr = sp.S.Zero
    t_other: sp.Expr = sp.S.Zero

    @property
    def relation(self) -> sp.Rel:
        """``B > B_crit``; the value is ``exact`` (kept apart so both print cleanly).
        ``B = B_crit`` when the side that is compute-bound is not proven."""
        crit = symbol(f"{self.symbol}_crit")
        if self.direction == UNPROVEN:
            return sp.Eq(self.symbol, crit, evaluate=False)
        return sp.Rel(self.symbol, crit, self.direction)

    def _view(self) -> tuple[str, Table]:
        rows: list[tuple[str, Any]] = [
            ("compute-bound when", self.inequality) if self.direction != UNPROVEN else
            ("balance at", self.inequality)]
        if self.direction == UNPROVEN:
            rows.append(("direction", "not proven: on which side the first term is the "
                                      "larger"))
        if self.asymptotic is not None:
            rows.append((f"deep in {self.regime.text if self.regime else 'the regime'}",
                         sp.Rel(self.symbol, self.asymptotic, self.direction)))
        if self.integer is not None:
            rows.append(("first whole number", sp.Integer(self.integer)))
        rows.append(("exists when", self.existence))
        return f"threshold in {self.symbol} against {self.resource}", key_values(rows)

    @property
    def inequality(self) -> sp.Rel:
        """``symbol > exact`` as one relation (``symbol = exact`` when the direction is not
        proven)."""
        if self.direction == UNPROVEN:
            return sp.Eq(self.symbol, self.exact, evaluate=False)
        return sp.Rel(self.symbol, self.exact, self.direction, evaluate=False)

    @property
    def integer(self) -> int | None:
        """The first whole number on the compute-bound side, when ``exact`` is a number
        (None when the side is not proven)."""
        if not self.exact.is_number or self.direction == UNPROVEN:
            return None
        if self.direction == ">":
            return int(sp.floor(self.exact)) + 1
        return int(sp.ceiling(self.exact)) - 1

    def at(self, values: Mapping[str | sp.Symbol, sp.Expr | int]) -> Threshold:
        """The threshold at concrete other sizes."""
        subs = size_values(values)
        if self.symbol in subs:
            raise InputError(f"cannot fix {self.symbol}: it is the symbol solved for")
        exact = cancel(substitute(self.exact, subs))
        exists = substitute(self.existence, subs) if isinstance(self.existence, sp.Basic) \
            else True
        times = {"t_math": substitute(self.t_math, subs),
                 "t_other": substitute(self.t_other, subs)}
        if exists is sp.false:
            raise DerivationError(f"no threshold in {self.symbol} at "
                                  f"{', '.join(f'{k}={v}' for k, v in subs.items())}: "
                                  f"it needs {self.existence}")
        step = Step("evaluate", "threshold at given sizes", self.exact, exact,
                    ", ".join(f"{k} = {v}" for k, v in subs.items()))
        return replace(self, exact=exact, existence=exists, steps=(*self.steps, step), **times)


@memo
def threshold(rl: Roofline, name: str | sp.Symbol, *, resource: str | None = None,
              regime: Regime | str | None = None) -> Threshold:
    """Solve T_math = T_resource for ``name`` (default resource: the roofline's primary).

    >>> from symroof import chip, einsum, roofline
    >>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
    >>> threshold(rl, "B", regime="B<<D,F").asymptotic
    9850/41
    """
    expect(rl, Roofline, "a Roofline (roofline(...))", "threshold")
    expect(name, (str, sp.Symbol), "a size name such as 'B'", "threshold")
    res = resource or rl.primary
    wanted = name if isinstance(name, str) else name.name
    if res not in rl.t_comms:
        raise InputError(f"the roofline has no time on {res!r} "
                         f"(it has: {', '.join(rl.t_comms)})")
    free = rl.t_math.free_symbols | rl.t_comms[res].free_symbols
    # by name, so a size declared integer is found too
    s = next((f for f in free if f.name == wanted), symbol(wanted))
    if s not in free:
        raise InputError(f"symbol {s} is not in the formulas (they use: "
                         f"{', '.join(sorted(map(str, free))) or 'no symbols'})")
    steps: list[Step] = [Step("solve", f"T_math = T_{res} for {s}",
                              sp.Eq(rl.t_math, rl.t_comms[res], evaluate=False), None,
                              "balance point")]
    try:
        degree, coeffs, poly, signed = _gap(rl.t_math - rl.t_comms[res], s)
    except sp.PolynomialError:  # exp, log, max, floor, a root of s: solve, or say so
        degree, coeffs, signed = -1, {}, False
        exact, direction, existence = solve_gap(rl.t_math - rl.t_comms[res], s,
                                                f"T_math = T_{res}")
    if degree == 1 and coeffs[0] == 0:
        raise DerivationError(f"T_math and T_{res} do not cross as {s} varies: their ratio "
                              f"does not depend on {s}")
    if degree == 1:
        a, b = coeffs[1], coeffs[0]
        exact = cancel(-b / a)
        direction = ">" if _positive(a, b) else "<"
        existence = _existence(a, b)
        if existence is sp.false:
            raise DerivationError(f"T_math and T_{res} cross at {s} = {exact}, which is not "
                                  f"positive: the op is never compute-bound against {res}")
    elif 0 <= degree < 1:
        raise DerivationError(f"T_math and T_{res} do not cross as {s} varies")
    elif degree > 1:
        exact, direction, existence = _nonlinear(poly(), s, res,
                                                 (rl.t_math, rl.t_comms[res]), signed)
    steps[0] = replace(steps[0], output=sp.Eq(s, exact, evaluate=False))
    asym, corr, reg = _in_regime(exact, regime, steps)
    return Threshold(s, res, exact, direction, existence, asym, corr, reg, tuple(steps),
                     rl.t_math, rl.t_comms[res])


def _gap(gap: sp.Expr, s: sp.Symbol,
         ) -> tuple[int, dict[int, sp.Expr], Callable[[], sp.Poly], bool]:
    """The numerator of T_math - T_x over a positive denominator, as a polynomial in ``s``:
    its degree, its coefficients, (built only when asked) the SymPy ``Poly``, and whether
    the denominator is known positive (then the numerator has the gap's sign).

    When both times are polynomials in the sizes (the usual case: FLOPs and bytes over
    numeric rates), the numerator's coefficients come from one pass over its terms;
    otherwise from ``together``, a fraction and a ``Poly`` in ``s``."""
    split = polynomial_coefficients(gap, s)
    if split is not None:
        _, coeffs = split
        nonzero = [k for k, c in coeffs.items() if c != 0]
        degree = max(nonzero) if nonzero else 0
        full = {k: coeffs.get(k, sp.Integer(0)) for k in range(degree + 1)}
        return degree, full, lambda: sp.Poly(sum((c * s**k for k, c in full.items()),
                                                 sp.Integer(0)), s), True
    num, den = sp.fraction(sp.together(gap))
    if den.is_positive is False:
        num = -num
    poly = sp.Poly(sp.expand(num), s)
    coeffs = {k: c for k, c in enumerate(reversed(poly.all_coeffs()))}
    return poly.degree(), coeffs, lambda: poly, den.is_positive is not None


def _positive(a: sp.Expr, b: sp.Expr) -> bool:
    """Direction of a linear gap a*s + b: compute-bound above the root when a > 0.

    With the sign of ``a`` unknown, the sign of ``b`` decides (a positive root needs
    opposite signs)."""
    if a.is_positive or b.is_negative:
        return True
    return not (a.is_negative or b.is_positive)


def _existence(a: sp.Expr, b: sp.Expr) -> sp.Basic:
    """The condition for a positive root of a*s + b."""
    if b.is_negative:
        return solve_condition(a > 0)
    if b.is_positive:
        return solve_condition(a < 0)
    return sp.And(a * b < 0)


def solve_condition(rel: sp.Basic) -> sp.Basic:
    """Solve a one-symbol condition (``D**2*c - D*k > 0`` becomes ``D > k/c``)."""
    if rel in (sp.true, sp.false) or not isinstance(rel, sp.Rel):
        return rel
    free = rel.free_symbols
    if len(free) != 1:
        return rel
    (x,) = free
    side = _linear_side(rel, x)
    return _solved(rel, x) if side is None else side


def _solved(rel: sp.Rel, x: sp.Symbol) -> sp.Basic:
    """``solve_condition`` by SymPy's ``solve_univariate_inequality``, the bounds that only
    restate the size's sign left out."""
    try:
        solved = sp.solve_univariate_inequality(rel, x, relational=True)
    except (NotImplementedError, ValueError):
        return rel
    parts = [p for p in sp.And.make_args(solved)
             if not ((isinstance(p, sp.Rel) and p.rhs in (0, sp.oo)) or p.lhs in (0, sp.oo))]
    return sp.And(*map(_symbol_first, parts)) if parts else solved


_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _linear_side(rel: sp.Rel, x: sp.Symbol) -> sp.Basic | None:
    """``k x + c > 0`` (or ``>=``, ``<``, ``<=``) for a positive ``x`` and rational k, c
    whose root -c/k is positive: ``x`` on the root's side, what ``_solved`` gives (a law in
    tests/test_threshold_sides.py) without SymPy's interval arithmetic, which took a fifth
    of a plan's critical batches; None for any other relation (a root not positive, where
    every positive x or none holds it, is left to ``_solved``).

    >>> x = sp.Symbol("x", positive=True)
    >>> _linear_side(6 - 4 * x > 0, x), _linear_side(2 * x - 1 >= 0, x)
    (x < 3/2, x >= 1/2)
    >>> _linear_side(x**2 > 4, x) is None
    True
    """
    if not x.is_positive or rel.rel_op not in _FLIPPED:
        return None
    poly = (rel.lhs - rel.rhs).as_poly(x)
    if poly is None or poly.degree() != 1:
        return None
    k, c = poly.all_coeffs()
    if not (k.is_Rational and c.is_Rational):
        return None
    root = -c / k
    if not root.is_positive:
        return None
    return sp.Rel(x, root, rel.rel_op if k.is_positive else _FLIPPED[rel.rel_op])


def _symbol_first(rel: sp.Basic) -> sp.Basic:
    """``19700/41 < D`` reads better as ``D > 19700/41``."""
    if isinstance(rel, sp.Rel) and rel.lhs.is_number and not rel.rhs.is_number:
        return rel.reversed
    return rel


def _nonlinear(poly: sp.Poly, s: sp.Symbol, res: str,
               terms: tuple[sp.Expr, ...] = (), signed: bool = True,
               ) -> tuple[sp.Expr, str, sp.Basic]:
    """The one positive root; a root where every term is zero (an axis of one chip, where
    neither time is spent) balances nothing and is left out. The direction is the side the
    gap is proven positive on (``side``), or ``UNPROVEN``."""
    found = [r for r in sp.solve(poly.as_expr(), s) if may_be_positive(r)]
    idle = [r for r in found
            if terms and all(sp.simplify(t.subs(s, r)) == 0 for t in terms)]
    roots = [r for r in found if r not in idle]
    if len(roots) > 1 and not idle and sign_changes(poly) == 1:
        # Descartes: exactly one positive root, so it is the largest real one
        roots = [r for r in roots if all(sp.together(r - q).is_positive for q in roots
                                         if q is not r)] \
            or roots
    if len(roots) != 1:
        raise DerivationError(f"T_math = T_{res} has {len(roots)} positive solutions in {s}: "
                              f"{roots}")
    direction = side(poly, s, roots[0], whole=not idle) if signed else UNPROVEN
    if direction == UNPROVEN and signed and idle:
        direction = _past_idle(poly, s, roots[0], idle)
    return sp.simplify(roots[0]), direction, sp.true


def _past_idle(poly: sp.Poly, s: sp.Symbol, root: sp.Expr, idle: list[sp.Expr]) -> str:
    """The side of ``root`` once the factors the terms share (``s - r`` for each idle root
    r, where every term vanishes: ``Y - 1`` for an axis of one chip) are divided out.
    Each such factor is positive past its idle root, the sizes the threshold is about, so
    the gap has the sign of the quotient there; the quotient's side is proven as
    ``side`` proves any (its one positive root, by Descartes).

    >>> Y, a, b = sp.symbols("Y a b", positive=True)
    >>> _past_idle(sp.Poly(sp.expand((Y - 1) * (a * Y - b)), Y), Y, b / a, [sp.S.One])
    '>'
    """
    factor = sp.Mul(*(s - r for r in idle))
    quotient, remainder = sp.div(poly.as_expr(), factor, s)
    if sp.expand(remainder) != 0:
        return UNPROVEN
    q = sp.Poly(sp.expand(quotient), s)
    if q.degree() < 1:
        return UNPROVEN
    return side(q, s, root, whole=q.degree() == 1 or sign_changes(q) == 1)


ALIASES = {"math": "compute", "flops": "compute"}
NO_CLOSED_FORM_SECONDS = 10  # of CPU time, so a busy machine finds the same closed forms


def term_time(rl: Roofline, name: str) -> sp.Expr:
    """A named term's time: ``compute`` (or ``math``), a memory level, a link, an extra
    term such as ``latency``, or ``bandwidth`` (every link term summed)."""
    key = ALIASES.get(name.strip(), name.strip())
    terms = rl.terms
    if key in terms:
        return terms[key]
    links = [k for k in rl.t_comms if k not in rl.op.levels]
    if key == "bandwidth" and links:
        return sp.Add(*(rl.t_comms[k] for k in links))
    known = ["math", *(k for k in terms if k != "compute"), *(["bandwidth"] if links else [])]
    raise InputError(f"no term {name!r} in the roofline (terms: {', '.join(known)})",
                     "between")


def term_pair(between: str | None) -> tuple[str, str] | None:
    """``"math,ici"``: the pair of terms to solve between (None when not given).

    >>> term_pair("math, ici")
    ('math', 'ici')
    """
    if between is None:
        return None
    parts = [p.strip() for p in between.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError(f"expected two different terms, e.g. 'math,ici', got {between!r}",
                         "between")
    return parts[0], parts[1]


def between(rl: Roofline, first: str, second: str, name: str | sp.Symbol, *,
            regime: Regime | str | None = None) -> Threshold:
    """Where term ``first`` meets term ``second``, solved for ``name``; ``direction``
    says on which side of the threshold ``first`` is the larger.

    >>> from symroof import einsum, chip, roofline
    >>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
    >>> between(rl, "math", "hbm", "B", regime="B<<D,F").asymptotic
    9850/41

    A gap that is not polynomial in ``name`` (a square root of a size) is solved in closed
    form when SymPy can; otherwise the answer is a DerivationError saying there is no
    closed form.
    """
    ta, tb = term_time(rl, first), term_time(rl, second)
    label = f"T_{first} = T_{second}"
    wanted = name if isinstance(name, str) else name.name
    free = ta.free_symbols | tb.free_symbols
    s = next((f for f in free if getattr(f, "name", None) == wanted), symbol(wanted))
    if s not in free:
        raise InputError(f"symbol {s} is not in T_{first} or T_{second} (they use: "
                         f"{', '.join(sorted(map(str, free))) or 'no symbols'})")
    exact, direction, existence = solve_gap(ta - tb, s, label, (ta, tb))
    steps: list[Step] = [Step("solve", f"{label} for {s}", sp.Eq(ta, tb, evaluate=False),
                              sp.Eq(s, exact, evaluate=False), "balance point")]
    asym, corr, reg = _in_regime(exact, regime, steps)
    return Threshold(s, f"{first},{second}", exact, direction, existence, asym, corr, reg,
                     tuple(steps), ta, tb)


def solve_gap(gap: sp.Expr, s: sp.Symbol, label: str,
              terms: tuple[sp.Expr, ...] = ()) -> tuple[sp.Expr, str, sp.Basic]:
    """The positive root of ``gap`` in ``s``, the side where ``gap > 0``, and the
    condition for the root to exist (a root where all ``terms`` vanish is not one)."""
    if polynomial_coefficients(gap, s) is None:
        num, den = sp.fraction(sp.together(gap))
        if den.is_positive is False:
            num = -num
        num = sp.expand(num)
        if not num.is_polynomial(s):
            return _closed_form(num, s, label, den.is_positive is not None)
    degree, coeffs, poly, signed = _gap(gap, s)
    if degree < 1 or (degree == 1 and coeffs[0] == 0):
        raise DerivationError(f"the terms of {label} do not cross as {s} varies: their "
                              f"ratio does not depend on {s}")
    if degree == 1:
        a, b = coeffs[1], coeffs[0]
        existence = _existence(a, b)
        if existence is sp.false:
            raise DerivationError(f"{label} at {s} = {cancel(-b / a)}, which is not "
                                  f"positive: the terms never cross")
        return cancel(-b / a), ">" if _positive(a, b) else "<", existence
    return _nonlinear(poly(), s, label.split(" = ")[1].removeprefix("T_"), terms, signed)


def _closed_form(num: sp.Expr, s: sp.Symbol, label: str,
                 signed: bool = True) -> tuple[sp.Expr, str, sp.Basic]:
    from ..core.timelimits import TimeLimit, time_limit
    try:
        with time_limit(NO_CLOSED_FORM_SECONDS, cpu=True):
            roots = sp.solve(num, s)
    except (NotImplementedError, TimeLimit, ValueError, TypeError):
        roots = None
    if roots is None:
        raise DerivationError(f"{label} has no closed form in {s}")
    positive = [r for r in roots if may_be_positive(r) and not r.has(sp.I)]
    if len(positive) != 1:
        raise DerivationError(f"{label} has no closed form in {s}: {len(positive)} "
                              f"positive solutions found")
    root = sp.simplify(positive[0])
    slope = sp.diff(num, s).subs(s, root)
    direction = UNPROVEN if not signed else ">" if slope.is_positive else \
        "<" if slope.is_negative else UNPROVEN
    return root, direction, sp.true


def _in_regime(exact: sp.Expr, regime: Regime | str | None, steps: list[Step],
               ) -> tuple[sp.Expr | None, sp.Expr | None, Regime | None]:
    """The threshold's leading term and first correction deep in ``regime`` (a step records
    the limit), or Nones without a regime."""
    reg = parse_regime(regime) if isinstance(regime, str) else regime
    if reg is None:
        return None, None, None
    x = expansion(exact, reg)
    steps.append(Step("limit", "threshold in the regime", exact, x.leading, reg.text))
    return x.leading, x.correction, reg
