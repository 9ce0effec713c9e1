"""Verdict rules: a stated value against a derived one, at the printed precision.

>>> judge_number("240", sp.Rational(9850, 41)).verdict
'OK'
>>> judge_number("8755", sp.Rational(78800, 9)).detail
'truncated: 8755.56 printed as 8755'
>>> judge_expr("(2*N - 1)/(4*N + 2)", parse_expr("(N - 1/2)/(2*N + 1)")).verdict
'OK'

A printed number states its precision: ``240`` means 240 +/- 0.5, ``9.89e14`` means
(9.89 +/- 0.005) x 10^14. Within that it holds (OK). If the printed digits are the derived
value cut off or rounded the other way (8755.56 printed as 8755) it is ROUNDING, provided
the relative error stays within the claim's tolerance. Anything else is a MISMATCH.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr, parse_relation
from ..core.printer import approx, text

OK, ROUNDING, MISMATCH = "OK", "ROUNDING", "MISMATCH"
_NUMBER = re.compile(r"\s*(?:≈|~|about\s+)?\s*([-+]?)(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?"
                     r"\s*(%?)\s*\Z")
TOLERANCE = sp.Rational(2, 100)


@dataclass(frozen=True)
class Judgement:
    """A verdict with the derived value, its relative error and why."""

    verdict: str
    derived: str
    derived_value: float | None = None
    rel_error: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class Printed:
    """A printed decimal: its exact value and half a unit of its last digit."""

    value: sp.Rational
    half_unit: sp.Rational

    @property
    def unit(self) -> sp.Rational:
        return 2 * self.half_unit


def printed(stated: str, where: str | None = None) -> Printed:
    """Read a printed number with its precision.

    >>> printed("9.89e14").half_unit
    500000000000
    >>> printed("13.9%").value
    139/1000
    """
    m = _NUMBER.match(stated)
    if m:
        sign, whole, frac, exp, pct = m.groups()
        frac = frac or ""
        e = int(exp or 0) - len(frac) - (2 if pct else 0)
        value = sp.Integer(int(whole + frac)) * sp.Rational(10) ** e
        return Printed(-value if sign == "-" else value, sp.Rational(10) ** e / 2)
    value = parse_expr(stated, where=where)
    if not value.is_Rational:
        raise InputError(f"cannot read the stated value {stated!r} as a number", where)
    return Printed(value, sp.Integer(0))


def judge_number(stated: str, derived: Any, tolerance: sp.Rational = TOLERANCE,
                 where: str | None = None) -> Judgement:
    """OK within the printed precision, ROUNDING for truncation or rounding the other way,
    MISMATCH otherwise."""
    p = printed(stated, where)
    d = _exact_number(derived, where)
    diff = d - p.value
    rel = float(abs(diff) / abs(p.value)) if p.value != 0 else float(abs(diff))
    shown = text(d) if d.is_Rational and d.q < 10**6 else approx(d, 8)
    value = float(d)
    # a tie (9.895 printed at two decimals) holds only when rounded half away from zero
    tie_ok = abs(diff) == p.half_unit and abs(p.value) > abs(d)
    if abs(diff) < p.half_unit or tie_ok or diff == 0:
        detail = "exact" if diff == 0 else f"{approx(d, 6)} at the printed precision"
        return Judgement(OK, shown, value, rel, detail)
    if p.unit > 0:
        down = sp.floor(d / p.unit) * p.unit
        up = sp.ceiling(d / p.unit) * p.unit
        if p.value in (down, up) and rel <= tolerance:
            cut = "truncated" if (p.value == down) == (d > 0) else "rounded up"
            return Judgement(ROUNDING, shown, value, rel,
                             f"{cut}: {approx(d, 6)} printed as {stated.strip()}")
    return Judgement(MISMATCH, shown, value, rel,
                     f"derived {approx(d, 6)}, stated {stated.strip()}")


def judge_expr(stated: str, derived: Any, where: str | None = None) -> Judgement:
    """Equal expressions: by structure, simplify, expand_log, then at random points."""
    s = parse_expr(stated, where=where)
    d = sp.sympify(derived)
    shown = text(d)
    how = proof(s, d)
    if how:
        return Judgement(OK, shown, _float(d), 0.0 if d.is_number else None, how)
    if d.is_number and s.is_number:
        return judge_number(stated, d, where=where)
    return Judgement(MISMATCH, shown, _float(d), None, f"differs from {text(s)}")


def judge_relation(stated: str, derived: Any, tolerance: sp.Rational,
                   where: str | None = None) -> Judgement:
    """Same direction (> or >=, < or <=) and the same bound (a number at the printed
    precision, or an equal expression)."""
    rel = parse_relation(stated, where=where)
    got = derived.inequality if hasattr(derived, "inequality") else derived
    if not isinstance(got, sp.Rel):
        raise InputError(f"derived {got!r} is not a relation", where)
    if rel.rel_op == "==" or got.rel_op == "==":
        return _judge_equation(rel, got)
    s_sym, s_dir, s_bound = _normal(rel)
    d_sym, d_dir, d_bound = _normal(got)
    shown = text(got if got.lhs == d_sym else got.reversed)
    if sp.simplify(s_sym - d_sym) != 0:
        return Judgement(MISMATCH, shown, None, None, f"about {d_sym}, not {s_sym}")
    if s_dir != d_dir:
        return Judgement(MISMATCH, shown, None, None, f"direction {d_dir}, stated {s_dir}")
    split = re.split(r"[<>]=?", stated, maxsplit=1)
    bound_text = split[1] if len(split) == 2 and rel.lhs == s_sym else str(s_bound)
    if s_bound.is_number and d_bound.is_number:
        j = judge_number(bound_text, d_bound, tolerance, where)
    else:
        j = judge_expr(bound_text, d_bound, where)
    return Judgement(j.verdict, shown, j.derived_value, j.rel_error, j.detail)


def _judge_equation(stated: sp.Rel, got: sp.Rel) -> Judgement:
    """Equations hold either way round: side by side, swapped, or as lhs - rhs up to sign."""
    shown = text(got)
    if got.rel_op != "==" or stated.rel_op != "==":
        return Judgement(MISMATCH, shown, None, None, f"{text(got)} is not {text(stated)}")
    for a, b in ((got.lhs, got.rhs), (got.rhs, got.lhs)):
        how_l, how_r = proof(stated.lhs, a), proof(stated.rhs, b)
        if how_l and how_r:
            return Judgement(OK, shown, None, None, f"each side: {how_l}; {how_r}")
    how = proof(stated.lhs - stated.rhs, got.lhs - got.rhs) or \
        proof(stated.lhs - stated.rhs, got.rhs - got.lhs)
    if how:
        return Judgement(OK, shown, None, None, f"lhs - rhs: {how}")
    return Judgement(MISMATCH, shown, None, None, f"differs from {text(stated)}")


def judge_within(derived: Any, within: tuple[sp.Rational, sp.Rational], meaning: str,
                 where: str | None = None) -> Judgement:
    """A qualitative claim: the derived number lies in the interval its words mean."""
    d = _exact_number(derived, where)
    lo, hi = within
    verdict = OK if lo <= d <= hi else MISMATCH
    return Judgement(verdict, approx(d, 6), float(d), None,
                     f"{meaning}: {approx(d, 6)} {'in' if verdict == OK else 'outside'} "
                     f"[{approx(lo)}, {approx(hi)}]")


def judge_label(stated: str, derived: Any) -> Judgement:
    got = str(derived)
    verdict = OK if got.strip().lower() == stated.strip().lower() else MISMATCH
    return Judgement(verdict, got, None, None, "" if verdict == OK else f"derived {got!r}")


def _normal(rel: sp.Rel) -> tuple[sp.Expr, str, sp.Expr]:
    """(symbol side, direction, bound side) with the non-number on the left."""
    lhs, rhs, op = rel.lhs, rel.rhs, rel.rel_op
    if lhs.is_number and not rhs.is_number:
        lhs, rhs, op = rhs, lhs, {">": "<", ">=": "<=", "<": ">", "<=": ">="}.get(op, op)
    direction = {">": ">", ">=": ">", "<": "<", "<=": "<"}.get(op, op)
    return lhs, direction, rhs


def _exact_number(value: Any, where: str | None) -> sp.Expr:
    expr = sp.sympify(value)
    if not expr.is_number or not expr.is_finite:
        raise InputError(f"the derived value {text(expr)} is not a finite number", where)
    if expr.is_Float:
        return sp.Rational(str(expr))
    return expr if expr.is_Rational else sp.Rational(str(sp.N(expr, 40)))


def _float(value: sp.Expr) -> float | None:
    return float(value) if value.is_number and value.is_finite else None


def proof(a: sp.Expr, b: sp.Expr) -> str:
    """How a and b were shown equal, or '' when they were not.

    >>> proof(parse_expr("2*B/(B + B**2)"), parse_expr("2/(1 + B)"))
    'equal rational functions'
    """
    if a == b:
        return "same expression"
    diff = a - b
    if sp.expand(sp.numer(sp.together(diff))) == 0:
        return "equal rational functions"
    if diff.has(sp.Max, sp.Min):
        if sp.simplify(diff.rewrite(sp.Piecewise)) == 0:
            return "equal by cases"
    elif sp.simplify(diff) == 0:
        return "equal after simplify"
    if a.has(sp.Pow) and not a.is_number and (b != 0):
        ratio = sp.expand_log(sp.log(a / b), force=True)
        if sp.simplify(ratio) == 0:
            return "equal after expand_log"
    return "numerically equal at random points" if _numerically_equal(a, b) else ""


def _numerically_equal(a: sp.Expr, b: sp.Expr, points: int = 8) -> bool:
    """Equal to 25 significant digits at random points of moderate size (1/2 to 8), where
    no power law collapses towards zero and no relative difference hides."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(0)
    for _ in range(points if symbols else 1):
        point = {s: sp.Rational(rng.randint(50, 800), 100) for s in symbols}
        va, vb = sp.N(a.subs(point), 40), sp.N(b.subs(point), 40)
        if not (va.is_number and vb.is_number and va.is_finite and vb.is_finite):
            return False
        scale = max(abs(va), abs(vb))
        if scale == 0:
            continue
        if abs(va - vb) > sp.Float("1e-25") * scale:
            return False
    return True
