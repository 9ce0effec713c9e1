"""Equality of two expressions, proved by SymPy or refuted at a point; never taken from samples.

>>> compare(parse_expr("2*B/(B + B**2)"), parse_expr("2/(1 + B)")).how
'equal rational functions'
>>> c = compare(parse_expr("2*B + floor(B/100)"), parse_expr("2*B"))
>>> c.equal, c.witness
(False, ((('B', '100'),), '201', '200'))

Sizes are positive: every symbol is compared as a positive symbol of its name, except a
name either side declares real (``real("m1")``, ``sp.Symbol("x", real=True)``): it may be
negative or zero, and is tried at 0 and below too. A proof is
one of: the same tree; equal rational functions (their difference cancels to 0); equal by
cases (Min, Max, Abs, sign and Piecewise rewritten into cases over the sizes' positivity,
each case's difference proved 0); ``simplify``; ``expand_log``; for a number, a minimal
polynomial. A difference that is a rational function and does not cancel to 0 is proved
non-zero. Otherwise both are evaluated exactly (or to 50 digits) at points from 1/3 to
10**9: a point where they differ is a witness that they are not equal; when every point
agrees, equality is **not proven** (:attr:`Comparison.samples` says where they agreed),
which is never a pass.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import sympy as sp

from ..core.parse import parse_expr
from ..core.printer import text
from ..engine.algebra import cancel, is_rational_function

__all__ = ["Comparison", "compare", "parse_expr", "proof"]

_CASES = (sp.Min, sp.Max, sp.Abs, sp.sign, sp.Piecewise, sp.Heaviside)
# the fixed points every comparison tries first (one per symbol, in turn), then random ones
_POINTS = (sp.Rational(1, 3), sp.Rational(7, 2), sp.Integer(100), sp.Integer(4097),
           sp.Rational(10**6, 7), sp.Integer(10**9))
_SAMPLES = 12
_REAL_POINTS = (sp.Integer(0), sp.Rational(-1, 3), sp.Rational(-7, 2), sp.Integer(-100))


@dataclass(frozen=True)
class Comparison:
    """How two expressions compare: ``how`` they were proved equal (empty when not);
    ``witness``, a point where they differ, with both values; ``samples``, the points where
    they agreed when neither a proof nor a witness was found (equality not proven)."""

    how: str = ""
    witness: tuple[tuple[tuple[str, str], ...], str, str] | None = None
    samples: tuple[tuple[tuple[str, str], ...], ...] = ()
    unequal: str = ""  # why they are known to differ without a point (a rational function)

    @property
    def equal(self) -> bool:
        return bool(self.how)

    @property
    def proven_unequal(self) -> bool:
        return self.witness is not None or bool(self.unequal)

    def where(self, first: str = "", second: str = "") -> str:
        """The witness or the samples, as a reader reads them; ``first`` and ``second``
        name the two expressions.

        >>> compare(parse_expr("Min(B, 4096)"), parse_expr("B")).where("min", "B")
        'at B = 4097: min 4096, B 4097'
        """
        if self.witness is not None:
            at, a, b = self.witness
            return f"at {_point(at)}: {first} {a}, {second} {b}".replace("  ", " ") \
                if first or second else f"at {_point(at)}: {a} and {b}"
        if self.unequal:
            return self.unequal
        if self.samples:
            return "agree at " + "; ".join(_point(p) for p in self.samples) + \
                ", which proves nothing"
        return ""


def proof(a: sp.Expr, b: sp.Expr) -> str:
    """How a and b were proved equal, or '' when they were not.

    >>> proof(parse_expr("floor(M/(4*d))"), parse_expr("ceiling(M/(4*d))"))
    ''
    """
    return compare(a, b).how


def compare(a: sp.Expr, b: sp.Expr) -> Comparison:
    """Prove ``a == b``, or find a point where they differ, or say where they agreed."""
    a, b = sp.sympify(a, strict=True), sp.sympify(b, strict=True)
    real = _real_names(a, b)
    a, b = _positive(a, real), _positive(b, real)
    if a == b:
        return Comparison("same expression")
    diff = a - b
    rational = is_rational_function(diff)
    if rational:
        if cancel(diff) == 0:
            return Comparison("equal rational functions")
        return Comparison(unequal="their difference is a rational function that is not 0")
    if sp.expand(sp.numer(sp.together(diff))) == 0:
        return Comparison("equal rational functions")
    witness, samples = _sample(a, b)
    if witness is not None:
        return Comparison(witness=witness)
    how = _prove(diff, a, b)
    return Comparison(how) if how else Comparison(samples=samples)


def _prove(diff: sp.Expr, a: sp.Expr, b: sp.Expr) -> str:
    if diff.has(*_CASES):
        leaves = _split(diff, 6)
        if leaves:
            return f"equal by cases ({leaves} cases over positive sizes)"
        cases = _by_cases(diff)
        if cases:
            return cases
    if sp.simplify(diff) == 0:
        return "equal after simplify"
    if a.has(sp.Pow) and not a.is_number and b != 0:
        ratio = sp.expand_log(sp.log(a / b), force=True)
        if sp.simplify(ratio) == 0:
            return "equal after expand_log"
    if diff.is_number and not diff.free_symbols:
        try:
            if sp.minimal_polynomial(diff, sp.Dummy("x")).is_Symbol:
                return "equal numbers (minimal polynomial)"
        except (NotImplementedError, ValueError, sp.polys.polyerrors.PolynomialError):
            pass
    return ""


def _by_cases(diff: sp.Expr) -> str:
    """Every case of ``diff`` (Min, Max, Abs and sign as Piecewise) proved 0, or ''. With
    one size, the cases are sets of positive numbers: a case no positive size reaches is
    skipped, a case of single points is checked at each."""
    folded = sp.piecewise_fold(diff.rewrite(sp.Piecewise))
    if not isinstance(folded, sp.Piecewise):
        return "equal by cases" if _zero(folded) else ""
    symbols = list(folded.free_symbols)
    left: sp.Set | None = (sp.Interval.open(0, sp.oo) if symbols[0].is_positive else
                           sp.S.Reals) if len(symbols) == 1 else None
    n = 0
    for expr, cond in folded.args:
        if left is not None:
            try:
                region = sp.Intersection(cond.as_set(), left) if cond is not sp.true \
                    else left
            except (NotImplementedError, TypeError, ValueError):
                left = None
            else:
                if region is sp.EmptySet:
                    continue
                if isinstance(region, sp.FiniteSet):
                    if any(expr.xreplace({symbols[0]: x}) != 0 for x in region):
                        return ""
                elif not _zero(expr):
                    return ""
                n += 1
                left = sp.Complement(left, region)
                if left is sp.EmptySet:
                    break
                continue
        if cond is sp.false or sp.simplify(cond) is sp.false:
            continue
        if not _zero(expr):
            return ""
        n += 1
        if cond is sp.true:
            break
    return f"equal by cases ({n} cases over positive sizes)"


def _split(e: sp.Expr, depth: int, signs: dict[sp.Expr, bool] | None = None) -> int:
    """The number of cases that prove ``e`` is 0, or 0: the first Min, Max (of two) or Abs
    is replaced by what it is on each side of its argument's sign, down to ``depth``
    levels; a side the sizes' positivity, or a sign already chosen, rules out is skipped
    (where an argument is 0 both sides agree). Each case proves ``e`` 0 where its
    conditions hold, and the cases cover every size."""
    signs = signs or {}
    atoms = sorted((x for x in e.atoms(sp.Min, sp.Max, sp.Abs)
                    if isinstance(x, sp.Abs) or len(x.args) == 2), key=sp.count_ops)
    if not atoms:
        return 1 if not e.has(*_CASES) and _zero(e) else 0
    if depth == 0:
        return 0
    x = atoms[0]
    if isinstance(x, sp.Abs):
        sign, sides = x.args[0], (x.args[0], -x.args[0])
    else:
        a, b = x.args
        sign = a - b
        sides = (a, b) if isinstance(x, sp.Max) else (b, a)
    sign = sp.expand(sign)
    known = signs.get(sign, None if -sign not in signs else not signs[-sign])
    total = 0
    for side, nonnegative in ((sides[0], True), (sides[1], False)):
        if (known is not None and known != nonnegative) or \
                (sign.is_negative if nonnegative else sign.is_positive):
            continue
        n = _split(e.xreplace({x: side}), depth - 1, {**signs, sign: nonnegative})
        if not n:
            return 0
        total += n
    return total


def _zero(e: sp.Expr) -> bool:
    return bool(cancel(e) == 0) if is_rational_function(e) else bool(sp.simplify(e) == 0)


def _real_names(a: sp.Expr, b: sp.Expr) -> frozenset[str]:
    """The names either side declares real and not positive (``real("m1")`` in a chapter,
    ``sp.Symbol("x", real=True)``): such a symbol may be negative or zero."""
    return frozenset(s.name for s in a.free_symbols | b.free_symbols
                     if isinstance(s, sp.Symbol) and s.is_real and not s.is_positive)


def _positive(e: sp.Expr, real: frozenset[str] = frozenset()) -> sp.Expr:
    """Every symbol as the positive size of its name, or as a real number where a side
    declares its name real."""
    swap = {}
    for s in e.free_symbols:
        if isinstance(s, sp.Symbol):
            want = sp.Symbol(s.name, real=True) if s.name in real else \
                sp.Symbol(s.name, positive=True)
            if s != want:
                swap[s] = want
    return e.xreplace(swap) if swap else e


_Point = tuple[tuple[str, str], ...]


def _sample(a: sp.Expr, b: sp.Expr) -> tuple[tuple[_Point, str, str] | None,
                                               tuple[_Point, ...]]:
    """A point where a and b are finite and differ (with both values), else the points
    where they agreed."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(0)
    agreed: list[_Point] = []
    points: list[dict[sp.Symbol, sp.Expr]] = []
    if not symbols:
        points.append({})
    for value in _POINTS:
        points.append(dict.fromkeys(symbols, value))
    for value in _REAL_POINTS:  # a real symbol is tried at 0 and below, the sizes above
        if any(not s.is_positive for s in symbols):
            points.append({s: value if not s.is_positive else _POINTS[1] for s in symbols})
    while len(points) < _SAMPLES and symbols:
        points.append({s: rng.choice(_POINTS) * sp.Rational(rng.randint(50, 150), 100)
                       for s in symbols})
    for point in points:
        va, vb = _value(a, point), _value(b, point)
        if va is None or vb is None:
            continue
        shown = tuple((str(s), text(v)) for s, v in point.items())
        if _differ(va, vb):
            return (shown, _shown(va), _shown(vb)), ()
        agreed.append(shown)
    return None, tuple(agreed)


def _value(e: sp.Expr, point: dict[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    try:
        v = e.xreplace(point) if point else e
        v = v if v.is_Rational else sp.N(v, 50)
    except (TypeError, ValueError, ZeroDivisionError, ArithmeticError):
        return None
    if not (v.is_number and v.is_finite and v.is_extended_real):
        return None
    return v


def _differ(va: sp.Expr, vb: sp.Expr) -> bool:
    if va.is_Rational and vb.is_Rational:
        return bool(va != vb)
    scale = max(abs(va), abs(vb))
    return bool(abs(va - vb) > sp.Float("1e-35", 50) * scale)


def _shown(v: sp.Expr) -> str:
    if v.is_Rational and v.q < 10**4 and abs(v.p) < 10**12:
        return text(v)
    return f"{float(v):.12g}"


def _point(at: _Point) -> str:
    return ", ".join(f"{k} = {v}" for k, v in at) if at else "no sizes"
