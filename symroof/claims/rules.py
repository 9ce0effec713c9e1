"""Verdict rules: a stated value against a derived one, at the printed precision.

>>> judge_number("240", sp.Rational(9850, 41)).verdict
<Verdict.OK: 'OK'>
>>> judge_number("8755", sp.Rational(78800, 9)).detail
'truncated: 8755.56 printed as 8755'
>>> judge_expr("(2*N - 1)/(4*N + 2)", parse_expr("(N - 1/2)/(2*N + 1)")).verdict
<Verdict.OK: 'OK'>

A printed number states its precision (:mod:`symroof.claims.stated`): within it the claim
holds (OK). If the printed digits are the derived value cut off or rounded the other way
(8755.56 printed as 8755) it is ROUNDING, provided the relative error stays within the
claim's tolerance. Anything else is a MISMATCH. Which comparison a claim gets is the table
``RULES`` (by kind); how a claim's marks (an erratum, a definition, an assumption chosen
to reproduce the text, a conflict with another passage) turn that comparison into its
verdict is the table ``MARKS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr, parse_relation, printed_digits
from ..core.printer import approx, text
from ..core.units import dimension_text
from .model import Claim, Law
from .proof import Comparison, compare, proof
from .stated import (
    TOLERANCE,
    UNIT_WORDS,
    Stated,
    formula_bound,
    plain_numbers,
    read,
    relation_formula,
    stated,
    unit_bound,
    without_marks,
)


class Verdict(StrEnum):
    """The outcome of a claim, in report order."""

    OK = "OK"  # equal, or equal at the printed precision
    ROUNDING = "ROUNDING"  # the printed digits are the derived value cut off
    APPROX = "APPROX"  # a marked approximation within 5%: holds, counted apart
    SIMPLIFIED = "SIMPLIFIED"  # what a named modelling choice gives: holds, counted apart
    DEFINITION = "DEFINITION"  # restates a definition: holds, counted apart
    MEASURED = "MEASURED"  # checked arithmetic on measured numbers: holds, counted apart
    ERRATUM = "ERRATUM"  # a known error of the text
    UNVERIFIABLE = "UNVERIFIABLE"  # a measurement, or an input chosen to fit the text
    INCONSISTENT = "INCONSISTENT"  # the text prints another value elsewhere
    NOT_PROVEN = "NOT PROVEN"  # no proof of equality, and no point where they differ
    MISMATCH = "MISMATCH"
    STALE = "STALE"  # an erratum mark on a claim that holds
    ERROR = "ERROR"
    TIMEOUT = "TIMEOUT"

    @property
    def fails(self) -> bool:
        """Whether this verdict fails a run (exit code 1)."""
        return self in FAILING


# INCONSISTENT is a finding about the text (it contradicts itself), like ERRATUM: reported,
# listed under conflicts, and it does not fail a run
FAILING = frozenset({Verdict.NOT_PROVEN, Verdict.MISMATCH, Verdict.STALE, Verdict.ERROR,
                     Verdict.TIMEOUT})
OK, ROUNDING, MISMATCH = Verdict.OK, Verdict.ROUNDING, Verdict.MISMATCH
NOT_PROVEN = Verdict.NOT_PROVEN


@dataclass(frozen=True)
class Judgement:
    """A verdict with the derived value, its relative error and why; for NOT PROVEN, the
    points where stated and derived agreed (each a tuple of (size, value))."""

    verdict: Verdict
    derived: str
    derived_value: float | None = None
    rel_error: float | None = None
    detail: str = ""
    samples: tuple[tuple[tuple[str, str], ...], ...] = ()
    # the choice or slip that reproduces the stated value: {choice, kind, value, ...}
    diagnosis: dict[str, Any] | None = None


def printed(text_: str, where: str | None = None, language: str = "en") -> Stated:
    """Read a printed number with its precision (see :func:`symroof.claims.stated.stated`).

    >>> printed("9.89e14").half_unit
    500000000000
    """
    try:
        return stated(text_, language, where)
    except InputError:
        value = parse_expr(text_, where=where)
        if not value.is_Rational:
            raise
        return Stated(value, sp.Integer(0))


def as_quantity(p: Stated, dimension: tuple[int, int, int] | None) -> Stated:
    """The reading of ``p`` a value of ``dimension`` takes: a B after the digits is a
    billion for a count, bytes otherwise."""
    return p.as_count if p.as_count is not None and dimension == (0, 0, 0) else p


def dimension_clash(c: Claim) -> bool:
    """Whether the claim states a unit of another dimension than its derived value's."""
    if c.dimension is None or c.reading is None:
        return False
    p = as_quantity(c.reading, c.dimension)
    return p.dims is not None and p.dims != c.dimension


def shown_number(value: Any) -> str:
    """A derived number with the digits that tell it from a printed one: 1.395, not 1.4.

    >>> shown_number(sp.Rational(78800, 9)), shown_number(sp.Rational(1979, 2) * 10**12)
    ('8755.56', '9.895e14')
    """
    number = float(sp.N(value, 30))
    if number == 0 or 1e-4 <= abs(number) < 1e3:
        return f"{number:.6g}"
    return approx(number, 6)


def judge_number(stated: str, derived: Any, tolerance: sp.Rational = TOLERANCE,
                 where: str | None = None, language: str = "en",
                 dimension: tuple[int, int, int] | None = None) -> Judgement:
    """OK within the printed precision, ROUNDING for truncation or rounding the other way,
    MISMATCH otherwise. A stated unit (``1.01 ms``) reads the derived value (seconds) in
    that unit; when the derived value's ``dimension`` is known, a stated unit of another
    dimension is a MISMATCH that says so, and a B after the digits of a count is a
    billion.

    >>> judge_number("243 s", sp.Rational(19700, 81), dimension=(-1, 1, 0)).detail
    'stated in s, derived in FLOP/B (243.21 FLOP/B)'
    """
    p = as_quantity(printed(stated, where, language), dimension)
    d = _exact_number(derived, where)
    if dimension is not None and p.dims is not None and p.dims != dimension:
        said = "as a count" if p.count else f"in {UNIT_WORDS.get(p.unit, p.unit)}"
        got = dimension_text(dimension)
        real = shown_number(d) + ("" if dimension == (0, 0, 0) else f" {got}")
        return Judgement(MISMATCH, text(d), _float(d), None,
                         f"stated {said}, derived in {got} ({real})")
    diff = d - p.value
    rel = float(abs(diff) / abs(p.value)) if p.value != 0 else float(abs(diff))
    inu = p.in_unit(d)
    unit = p.display_unit
    shown = text(inu) if inu.is_Rational and inu.q < 10**6 else approx(inu, 8)
    shown = f"{shown} {unit}" if unit else shown
    value = float(inu)
    real = shown_number(inu) + (f" {unit}" if unit else "")
    # a tie (9.895 printed at two decimals) holds only when rounded half away from zero
    tie_ok = abs(diff) == p.half_unit and abs(p.value) > abs(d)
    if p.shown and p.shown != stated.strip():  # full-width digits, a minus sign, 10⁸
        stated = f"{stated.strip()} (read as {p.shown})"
    if abs(diff) < p.half_unit or tie_ok or diff == 0:
        detail = "exact" if diff == 0 else f"{real} at the printed precision"
        return Judgement(OK, shown, value, rel, detail)
    if p.unit_size > 0:
        down = sp.floor(d / p.unit_size) * p.unit_size
        up = sp.ceiling(d / p.unit_size) * p.unit_size
        # one rule for every written form: the printed digits are the derived value's cut
        # off at the last printed digit (1.5e12 for 1.555e12 as 8755 for 8755.56), or
        # rounded the other way within the tolerance; a single significant digit (2 for
        # 2.9) is a truncation only within the tolerance too
        truncated = (p.value == down) == (d > 0)
        if p.value in (down, up) and (rel <= tolerance or (truncated and p.digits >= 2)):
            cut = "truncated" if truncated else "rounded up"
            return Judgement(ROUNDING, shown, value, rel,
                             f"{cut}: {real} printed as {stated.strip()}")
    return Judgement(MISMATCH, shown, value, rel, f"derived {real}, stated {stated.strip()}")


def judge_expr(stated: str, derived: Any, where: str | None = None) -> Judgement:
    """Equal expressions when SymPy proves them so (:mod:`symroof.claims.proof`); MISMATCH
    with a point where they differ; NOT PROVEN otherwise, with the points that agreed.

    >>> judge_expr("2*B", parse_expr("2*B + floor(B/100)")).detail
    'differs from 2*B: at B = 100: stated 200, derived 201'
    """
    d = _exact(derived, where)
    # a name the derived value declares real is read as that symbol, not as a size: the
    # stated Abs(m1) must not become m1 before it is compared
    real = {x.name: x for x in d.free_symbols
            if isinstance(x, sp.Symbol) and x.is_real and not x.is_positive}
    s = parse_expr(stated, where=where, symbols=real or None)
    shown = text(d)
    c = compare(s, d)
    if c.equal:
        return Judgement(OK, shown, _float(d), 0.0 if d.is_number else None, c.how)
    if d.is_number and s.is_number:
        return judge_number(stated, d, where=where)
    return _unequal(c, shown, _float(d), f"differs from {text(s)}")


def _unequal(c: Comparison, shown: str, value: float | None, what: str) -> Judgement:
    """MISMATCH when ``c`` shows they differ, NOT PROVEN when nothing decided it."""
    if c.proven_unequal:
        return Judgement(MISMATCH, shown, value, None,
                         f"{what}: {c.where('stated', 'derived')}")
    return Judgement(NOT_PROVEN, shown, value, None,
                     f"equality not proven; {c.where() or 'no point could be evaluated'}",
                     c.samples)


def _exact(value: Any, where: str | None) -> sp.Expr:
    """A derived value as a SymPy expression: never text (text is parsed by the judge's
    own reader, not by ``sympify``)."""
    if isinstance(value, str):
        raise InputError(f"the derived value {value!r} is text, not a value", where)
    try:
        out = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError):
        raise InputError(f"the derived value {value!r} is not a number or expression",
                         where) from None
    if not isinstance(out, sp.Expr):
        raise InputError(f"the derived value {text(out)} is not a number or expression", where)
    return out


def judge_relation(stated: str, derived: Any, tolerance: sp.Rational,
                   where: str | None = None, language: str = "en",
                   dimension: tuple[int, int, int] | None = None) -> Judgement:
    """Same direction (> or >=, < or <=) and the same bound (a number at the printed
    precision, or an equal expression). A bound printed with a unit (``B > 240 ms``) is
    read in it and checked against the ``dimension`` of the value it is compared with, as
    a stated number is.

    >>> B = sp.Symbol("B", positive=True)
    >>> judge_relation("B > 240 ms", B > sp.Rational(19700, 81), TOLERANCE,
    ...                dimension=(-1, 1, 0)).detail
    'stated in ms, derived in FLOP/B (243.21 FLOP/B)'

    A bound printed as a formula followed by a unit (``T > 2*D us``) is compared in that
    unit, after its unit's dimension:

    >>> T, D = sp.symbols("T D", positive=True)
    >>> judge_relation("T > 2*D us", T > 2 * D / 10**6, TOLERANCE, dimension=(0, 0, 1)).verdict
    <Verdict.OK: 'OK'>
    >>> judge_relation("T > 2*D GB", T > 2 * D / 10**6, TOLERANCE, dimension=(0, 0, 1)).detail
    'stated in GB, derived in s (D/500000 s)'
    """
    rel = parse_relation(relation_formula(stated, language), where=where)
    printed_bound = _unit_bound(stated, language)
    got = derived.inequality if hasattr(derived, "inequality") else derived
    if not isinstance(got, sp.Rel):
        raise InputError(f"derived {got!r} is not a relation", where)
    if rel.rel_op == "==" or got.rel_op == "==":
        return _judge_equation(rel, got)
    s_sym, s_dir, s_bound = _normal(rel)
    d_sym, d_dir, d_bound = _normal(got)
    shown = text(got if got.lhs == d_sym else got.reversed)
    left = s_sym != d_sym and rel.rhs == d_sym  # a formula bound before its subject
    if left:  # (2*D us < T): read as the subject first
        s_sym, s_dir, s_bound = _normal(rel.reversed)
    if s_sym != d_sym:
        about = compare(s_sym, d_sym)
        if not about.equal:
            return _unequal(about, shown, None, f"about {d_sym}, not {s_sym}")
    if s_dir != d_dir:
        return Judgement(MISMATCH, shown, None, None, f"direction {d_dir}, stated {s_dir}")
    split = re.split(r"[<>]=?", printed_digits(stated), maxsplit=1)
    bound_text = (split[0] if left else split[1]) if len(split) == 2 and (
        left or rel.lhs == s_sym) else str(s_bound)
    formula = formula_bound(stated, language) if printed_bound is None else None
    if printed_bound is not None and d_bound.is_number:  # read in its unit, its dimension
        j = judge_number(printed_bound, d_bound, tolerance, where, language, dimension)
    elif formula is not None:  # a formula in a unit: its dimension, then in that unit
        j = _judge_formula_bound(formula[1], as_quantity(formula[2], dimension), d_bound,
                                 where, dimension)
    elif s_bound.is_number and d_bound.is_number:
        j = judge_number(bound_text, d_bound, tolerance, where)
    else:  # a formula for a bound: its marks say nothing to an equality
        j = judge_expr(without_marks(bound_text), d_bound, where)
    return Judgement(j.verdict, shown, j.derived_value, j.rel_error, j.detail)


def _judge_formula_bound(formula: str, unit: Stated, derived: sp.Expr, where: str | None,
                         dimension: tuple[int, int, int] | None) -> Judgement:
    """A relation's bound printed as a formula followed by a unit (``2*D us``): a unit of
    another dimension than the bounded value's is a MISMATCH that says so, as for a
    number; otherwise the formula is compared with the derived bound read in that unit."""
    if dimension is not None and unit.dims is not None and unit.dims != dimension:
        said = "as a count" if unit.count else f"in {UNIT_WORDS.get(unit.unit, unit.unit)}"
        got = dimension_text(dimension)
        return Judgement(MISMATCH, text(derived), _float(derived), None,
                         f"stated {said}, derived in {got} ({text(derived)} {got})")
    j = judge_expr(without_marks(formula), unit.in_unit(derived), where)
    if unit.scale == 1:
        return j
    return replace(j, detail=f"{j.detail} (the bound read in {unit.display_unit})")


def _unit_bound(stated: str, language: str) -> str | None:
    """The bound of a relation printed with a unit, as printed (marks kept); None when no
    side of the inequality is a number with a unit."""
    bound = unit_bound(stated, language)
    if bound is None:
        return None
    return re.split(r"[<>]=?", printed_digits(stated), maxsplit=1)[bound[0] // 2].strip()


def _judge_equation(stated: sp.Rel, got: sp.Rel) -> Judgement:
    """Equations hold either way round: side by side, swapped, or as lhs - rhs up to sign."""
    shown = text(got)
    if got.rel_op != "==" or stated.rel_op != "==":
        return Judgement(MISMATCH, shown, None, None, f"{text(got)} is not {text(stated)}")
    for a, b in ((got.lhs, got.rhs), (got.rhs, got.lhs)):
        how_l, how_r = proof(stated.lhs, a), proof(stated.rhs, b)
        if how_l and how_r:
            return Judgement(OK, shown, None, None, f"each side: {how_l}; {how_r}")
    same = compare(stated.lhs - stated.rhs, got.lhs - got.rhs)
    swapped = compare(stated.lhs - stated.rhs, got.rhs - got.lhs)
    for c in (same, swapped):
        if c.equal:
            return Judgement(OK, shown, None, None, f"lhs - rhs: {c.how}")
    if same.proven_unequal and swapped.proven_unequal:
        return Judgement(MISMATCH, shown, None, None,
                         f"differs from {text(stated)}: {same.where('stated', 'derived')}")
    return _unequal(same if not same.proven_unequal else swapped, shown, None,
                    f"differs from {text(stated)}")


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
    expr = _exact(value, where)
    if not expr.is_number or not expr.is_finite:
        raise InputError(f"the derived value {text(expr)} is not a finite number", where)
    if expr.is_Float:
        return sp.Rational(str(expr))
    return expr if expr.is_Rational else sp.Rational(str(sp.N(expr, 40)))


def _float(value: sp.Expr) -> float | None:
    return float(value) if value.is_number and value.is_finite else None


def judge_law(stated: str, derived: Any, where: str | None = None) -> Judgement:
    """A yes/no law the engine derives: OK when it holds."""
    if not isinstance(derived, Law):
        raise InputError(f"words ({stated!r}) state a law; the claim gives {derived!r}", where)
    verdict = OK if derived.holds else MISMATCH
    shown = derived.shown or ("holds" if derived.holds else "fails")
    return Judgement(verdict, shown, None, None,
                     f"{derived.meaning}: {'holds' if derived.holds else 'does not hold'}")


def _number_rule(c: Claim, v: Any, w: str) -> Judgement:
    return judge_number(c.stated, v, c.tolerance, w, c.source.language, c.dimension)


def _definition_rule(c: Claim, v: Any, w: str) -> Judgement:
    if isinstance(v, str):  # a label claims.py spells itself
        return judge_label(c.stated, v)
    if isinstance(v, Law):  # a law over values claims.py writes itself
        return judge_law(c.stated, v, w)
    if isinstance(v, sp.Rel):
        return judge_relation(plain_numbers(c.stated, c.source.language), v, c.tolerance, w,
                              c.source.language, c.dimension)
    if c.reading is not None:
        return _number_rule(c, v, w)
    return judge_expr(c.stated, v, w)


def _qualitative_rule(c: Claim, v: Any, w: str) -> Judgement:
    if isinstance(v, Law):
        return judge_law(c.stated, v, w)
    assert c.within is not None
    return judge_within(v, c.within, c.meaning, w)


# which comparison a claim of each kind gets: (claim, derived value, where) -> Judgement
RULES: dict[str, Callable[[Any, Any, str], Judgement]] = {
    "number": _number_rule,
    "expr": lambda c, v, w: judge_expr(c.stated, v, w),
    "relation": lambda c, v, w: judge_relation(plain_numbers(c.stated, c.source.language), v,
                                               c.tolerance, w, c.source.language,
                                               c.dimension),
    "qualitative": _qualitative_rule,
    "label": lambda c, v, w: judge_label(c.stated, v),
    "definition": _definition_rule,
}

# the marks of APPROX and SIMPLIFIED: they hold, as OK does, except that an erratum mark on
# a marked approximation stays an erratum (the text's figure is off, and known to be)
MARKS_V3: dict[tuple[str, Verdict], Verdict] = {
    **{("assumed", v): Verdict.UNVERIFIABLE for v in (Verdict.APPROX, Verdict.SIMPLIFIED)},
    ("erratum", Verdict.APPROX): Verdict.ERRATUM,
    ("erratum", Verdict.SIMPLIFIED): Verdict.STALE,
    ("erratum", Verdict.MEASURED): Verdict.STALE,
    **{("conflict", v): Verdict.INCONSISTENT for v in (Verdict.APPROX, Verdict.SIMPLIFIED)},
}

# how a claim's mark turns the comparison's verdict into the claim's verdict, applied in
# this order; a (mark, verdict) pair that is not listed keeps the verdict
_COMPARED = (OK, ROUNDING, MISMATCH)
MARKS: dict[tuple[str, Verdict], Verdict] = {
    # a value that restates what the text types cannot fail, printed whole or rounded
    **{("definition", v): Verdict.DEFINITION for v in (OK, ROUNDING)},
    **{("measured", v): Verdict.MEASURED for v in (OK, ROUNDING)},
    **{("assumed", v): Verdict.UNVERIFIABLE for v in _COMPARED},
    ("erratum", MISMATCH): Verdict.ERRATUM,
    ("erratum", Verdict.UNVERIFIABLE): Verdict.ERRATUM,
    ("erratum", OK): Verdict.STALE,
    ("erratum", ROUNDING): Verdict.STALE,
    **MARKS_V3,
    # a conflict explains a claim that holds on its passage's figures; a MISMATCH stays one
    **{("conflict", v): Verdict.INCONSISTENT
       for v in (OK, ROUNDING, Verdict.DEFINITION, Verdict.MEASURED, Verdict.ERRATUM,
                 Verdict.UNVERIFIABLE)},
}


def read_number(value: str, language: str = "en") -> bool:
    """Whether ``value`` reads as a stated number."""
    return read(value, language) is not None


def judge(claim: Claim) -> Judgement:
    """Derive the claim's value (or take the one it was built with) and compare it with
    what the text states, by the claim's kind (``RULES``)."""
    where = f"claim {claim.id!r}"
    if claim.kind == "measurement":
        return Judgement(Verdict.UNVERIFIABLE, "", None, None,
                         f"a measurement: {claim.evidence}")
    derived = claim.derive() if claim.derive is not None else claim.value
    return RULES[claim.kind](claim, derived, where)


def mark(claim: Claim, j: Judgement) -> Judgement:
    """The claim's verdict: its judgement turned by its marks (``MARKS``)."""
    marks: list[tuple[str, str]] = []
    if claim.kind == "definition":
        marks.append(("definition", claim.restates or "restates a definition"))
    if claim.measured:  # arithmetic on data: checked, and said whatever the verdict
        said = f"arithmetic on the measured {', '.join(claim.measured)}"
        j = replace(j, detail=f"{j.detail}; {said}" if j.detail else said)
        marks.append(("measured", ""))
    if claim.assumed:
        marks.append(("assumed", f"assumes {claim.assumed}, which gives {j.derived or '-'}"
                                 f" ({j.verdict.value.lower()}: {j.detail})"))
    if claim.erratum is not None:
        marks.append(("erratum", ""))
    unknown = [c for c in claim.conflicts if not c.known and claim.id not in c.agreeing]
    if unknown:
        marks.append(("conflict", "; ".join(c.describe(claim.id) for c in unknown)))
    for name, why in marks:
        turned = MARKS.get((name, j.verdict))
        if turned is None:
            continue
        if name == "definition" and j.verdict == ROUNDING:  # as the text prints it
            why = f"{why}; {j.detail}"
        if name == "conflict" and j.verdict != OK:  # the claim's own verdict, kept in view
            why = f"{why}; on its own figures: {j.verdict.value} ({j.detail})"
        if name == "erratum":
            why = (f"known erratum: {claim.erratum.why}" if turned == Verdict.ERRATUM  # type: ignore[union-attr]
                   else f"marked as an erratum but holds ({j.detail})")
            if turned == Verdict.ERRATUM and j.diagnosis:  # the slip the diagnosis names
                why = f"{why}; {j.diagnosis['said']}"
        j = replace(j, verdict=turned, detail=why or j.detail)
    return noted(claim, j)


def noted(claim: Claim, j: Judgement) -> Judgement:
    """A claim that uses the value the defining place prints keeps its verdict, with the
    conflict noted in its detail."""
    notes = [c.describe(claim.id) for c in claim.conflicts if not c.known and
             claim.id in c.agreeing]
    if not notes:
        return j
    said = f"uses the defining value; conflict noted: {'; '.join(notes)}"
    return replace(j, detail=f"{j.detail}; {said}" if j.detail else said)
