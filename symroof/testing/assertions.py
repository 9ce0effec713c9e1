"""Property tests for asymptotic, threshold and identity claims, with hypothesis.

>>> from symroof import chip, einsum, roofline, sizes
>>> B, D, F = sizes("B D F")
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> assert_leading(rl.intensity, B, "B<<D,F").examples > 0
True
>>> assert_threshold(rl.op, rl.chip, "B", 240, regime="B<<D,F").claim
'compute-bound against hbm when B > 240 (B<<D,F)'
>>> assert_identity(rl.intensity, rl.op.flops / rl.op.bytes()).examples > 0
True
>>> assert_leading(rl.intensity, 2*B, "B<<D,F")  # doctest: +ELLIPSIS
Traceback (most recent call last):
AssertionError: leading term 2*B of B*D*F/(B*D + B*F + D*F) (B<<D,F) is off by 50.1% at B=1, \
D=1000, F=1000 ...

Each assertion builds a hypothesis test inside itself and runs it at once, so it is called
from a plain test function (not from inside ``@given``). A failure raises AssertionError
whose message names the sizes that broke the claim, after hypothesis has shrunk them.

- ``assert_leading(expr, leading, regime)``: deep in the regime (the depth k is raised
  tenfold until the first correction is below 0.1% of the leading term) the relative
  error |expr/leading - 1| is at most ``factor`` x |correction/leading| at depth k and 10k,
  and shrinks from k to 10k. A given ``correction`` is checked too: what it leaves out
  shrinks relative to it.
- ``assert_threshold(op, chip, symbol, value)`` and ``assert_flips(threshold, value)``: at
  sizes where the threshold exists (deep in ``regime`` when one is given) the op is bound
  by the resource at value x (1 - delta) and compute-bound at value x (1 + delta), or the
  other way round when the claim is ``<``.
- ``assert_identity(lhs, rhs)``: equal at random sizes, then proven equal exactly.

Strategies for one's own ``@given`` tests: ``size_values``, ``points``, ``deep_points``,
``chips``, ``dtypes``, ``chip_dtypes``, ``einsum_ops``.

Formulas are compiled once with ``lambdify`` and evaluated exactly with Fractions when they
are rational functions (mpmath at 60 digits otherwise). The assertions run under the active
hypothesis profile (its seed, derandomisation and example database; a CI profile with
``database=None`` writes none); ``max_examples`` is 30 unless the profile or the call
sets it. hypothesis is imported only when a strategy or an assertion is used.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NoReturn

import sympy as sp

from ..claims.rules import proof
from ..core.errors import InputError
from ..core.parse import exact, parse_expr
from ..core.printer import si
from ..engine.asymptotics import Regime, expansion
from ..engine.ops import Op
from ..engine.rooflines import roofline
from ..engine.thresholds import Threshold, threshold
from ..hardware.catalog import Chip
from .compiled import Compiled
from .points import (
    BASE,
    SIZES,
    Point,
    Size,
    bind,
    deepen,
    fraction,
    regime_of,
    scaled,
    show,
    size,
    symbols_of,
)
from .strategies import points

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.strategies import SearchStrategy


EXAMPLES = 30                      # per assertion, unless the profile or the call says
DEEP = Fraction(1, 1000)           # deep enough: first correction / leading term below this
DEPTHS = tuple(10**j for j in range(1, 19))
SCALINGS = 25                      # sizes are scaled up to 2**24 to find a threshold
STATED = Fraction(1, 100)          # a stated threshold may be off by this much
EXACT = Fraction(1, 10**6)         # and the engine's exact threshold by this much


@dataclass(frozen=True)
class Report:
    """What a passing check ran: the claim in words and every point it held at."""

    claim: str
    points: tuple[Point, ...]

    @property
    def examples(self) -> int:
        return len(self.points)


# -- strategies ---------------------------------------------------------------------------


# -- assertions ---------------------------------------------------------------------------

def assert_leading(expr: sp.Expr | str, leading: sp.Expr | str, regime: Regime | str, *,
                   correction: sp.Expr | str | None = None, factor: int = 2,
                   depth: int | None = None, lo: Size = BASE[0], hi: Size = BASE[1],
                   integer: bool = True, max_examples: int | None = None) -> Report:
    """``expr ~ leading`` deep in ``regime``, within ``factor`` x the first correction.

    The correction is the engine's (its first non-zero one) unless given; ``depth`` fixes k
    instead of raising it until the correction is below 0.1% of the leading term.
    """
    e, lead = _expr(expr), _expr(leading)
    if lead == 0:
        raise InputError(f"the leading term of {e} cannot be 0")
    given = None if correction is None else _expr(correction)
    reg = bind(regime_of(regime), symbols_of(e, lead, *([] if given is None else [given])))
    corr = _first_correction(e, reg) if given is None else given
    claim = f"{e} ~ {lead} when {reg}"
    checks = [e / lead - 1, corr / lead]
    if given is not None and corr != 0:
        checks.append((e - lead - corr) / corr)
    syms = symbols_of(e, lead, corr)
    f = Compiled(checks, syms)

    def check(base: Point) -> Point:
        k = _depth(depth, lambda k: abs(f(deepen(reg, base, k))[1]) <= DEEP) or DEPTHS[-1]
        near, far = deepen(reg, base, k), deepen(reg, base, 10 * k)
        try:
            (rel1, bound1, *rest1), (rel2, bound2, *rest2) = f(near), f(far)
        except ZeroDivisionError:
            _fail(f"{claim}: the leading term {lead} is 0 at {show(near)}")
        where = f"(depth {k} from {show(base)})"
        for rel, bound, at in ((rel1, bound1, near), (rel2, bound2, far)):
            if abs(rel) > factor * abs(bound):
                _fail(f"leading term {lead} of {e} ({reg}) is off by {_pct(rel)} at "
                      f"{show(at)} {where}; the first correction {corr} allows "
                      f"{factor} x {_pct(bound)}")
        if not (abs(rel2) < abs(rel1) or rel1 == rel2 == 0):
            _fail(f"the relative error of the leading term {lead} of {e} ({reg}) does not "
                  f"shrink: {_pct(rel1)} at {show(near)} {where}, {_pct(rel2)} at "
                  f"{show(far)}")
        if rest1 and not (abs(rest2[0]) <= abs(rest1[0]) * Fraction(4, 5)):
            _fail(f"{corr} is not the first correction of {e} ({reg}): what it leaves out "
                  f"is {_pct(rest1[0])} of it at {show(near)} {where} and "
                  f"{_pct(rest2[0])} at {show(far)}, ten times deeper")
        return near

    return _run("assert_leading", claim, check, points(syms, lo=lo, hi=hi, integer=integer),
                max_examples)


def assert_threshold(op: Op, chip: Chip | str, symbol: str | sp.Symbol,
                     value: sp.Expr | str | float | None = None, *,
                     regime: Regime | str | None = None, resource: str | None = None,
                     direction: str | None = None, dtype: str | None = None,
                     compute: str | None = None, delta: Fraction | float | None = None,
                     depth: int | None = None, lo: Size | None = None, hi: Size | None = None,
                     integer: bool = True, max_examples: int | None = None) -> Report:
    """The bound flips at ``symbol = value``: ``B > 240`` on ``chip`` means bound by
    ``resource`` (the roofline's primary, HBM for an einsum) at 240 x (1 - delta) and
    compute-bound at 240 x (1 + delta); ``direction="<"`` the other way round.

    Checked at random other sizes where the threshold exists, or deep in ``regime`` when one
    is given (then ``value`` may be the asymptotic threshold). ``value`` defaults to the
    engine's exact threshold, checked with delta = 1e-6; a stated value with delta = 1%.
    ``dtype`` and ``compute`` pick the chip's peak as for ``roofline``.
    """
    from ..hardware.catalog import chip as named_chip
    the_chip = named_chip(chip) if isinstance(chip, str) else chip
    t = threshold(roofline(op, the_chip, dtype=dtype, compute=compute), symbol, resource=resource,
                  regime=regime)
    return assert_flips(t, value, regime=regime, direction=direction, delta=delta, depth=depth,
                        lo=lo, hi=hi, integer=integer, max_examples=max_examples)


def assert_flips(t: Threshold, value: sp.Expr | str | float | None = None, *,
                 regime: Regime | str | None = None, direction: str | None = None,
                 delta: Fraction | float | None = None, depth: int | None = None,
                 lo: Size | None = None, hi: Size | None = None, integer: bool = True,
                 max_examples: int | None = None) -> Report:
    """``assert_threshold`` for a Threshold the engine derived (``Derivation.thresholds``).

    Deep in a regime, a stated value is checked where the exact threshold is within
    delta/10 of its leading term (the depth is raised tenfold until it is), so that an
    asymptotic value such as 240 is held to what it claims; ``depth`` fixes the depth.
    """
    from hypothesis import assume
    if t.t_math == 0 and t.t_other == 0:
        raise InputError(f"the threshold in {t.symbol} carries no times to compare")
    s = t.symbol
    d = Fraction(str(delta)) if delta is not None else STATED if value is not None else EXACT
    claimed = t.exact if value is None else _expr(value)
    want = direction or t.direction
    if want not in (">", "<") or s in claimed.free_symbols or not 0 < d < 1:
        raise InputError(f"cannot check {s} {want} {claimed} with delta {d}: give a "
                         f"direction '>' or '<', a value free of {s}, 0 < delta < 1")
    exists = exact(t.existence)
    if exists is sp.false:
        raise InputError(f"no positive threshold in {s} exists at any sizes ({s} = {t.exact})")
    free = symbols_of(t.t_math, t.t_other, t.exact, claimed, exists)
    reg = None if regime is None else bind(regime_of(regime), free)
    formulas = [t.exact, claimed, exists]
    if reg is not None and value is not None:  # how far the exact value is from its limit
        lead = t.asymptotic if t.regime == reg and t.asymptotic is not None else \
            expansion(t.exact, reg).leading
        formulas.append(t.exact / lead - 1)
    syms = [x for x in symbols_of(t.t_math, t.t_other, *formulas) if x != s]
    at_sizes = Compiled(formulas, syms)
    times = Compiled([t.t_math, t.t_other, t.t_math - t.t_other], [*syms, s])
    tail = f" ({reg})" if reg is not None else ""
    digits = max(6, 3 - math.floor(math.log10(d)))  # enough to tell the two sides apart
    claim = f"compute-bound against {t.resource} when {s} {want} {claimed}{tail}"

    def usable(p: Point) -> bool:
        try:
            exact, _, ok, *off = at_sizes(p)
        except ZeroDivisionError:
            return False
        return bool(ok) and _real(exact) and exact > 0 and all(abs(o) <= d / 10 for o in off)

    def check(base: Point) -> Point:
        if reg is None:  # sizes where it exists: these, or these scaled up by a power of 2
            k = next((2**j for j in range(SCALINGS) if usable(scaled(base, 2**j))), None)
            assume(k is not None)
            assert k is not None
            p, how = scaled(base, k), "scaled by"
        else:
            k = _depth(depth, lambda k: usable(deepen(reg, base, k)))
            if k is None:
                _fail(f"{claim}: no threshold near its leading term at {show(base)} even "
                      f"at depth {DEPTHS[-1]}")
            p, how = deepen(reg, base, k), "depth"
        exact, v = at_sizes(p)[:2]
        where = show(p) + ("" if k == 1 else f" ({how} {k} from {show(base)})")
        if not (_real(v) and v > 0):
            _fail(f"the claimed threshold {s} = {claimed} is {_num(v)} at {where}")
        sides = []
        for side, x in (("1 - delta", fraction(v) * (1 - d)),
                        ("1 + delta", fraction(v) * (1 + d))):
            t_math, t_other, gap = times({**p, s: size(x)})
            sides.append((gap > 0, f"at {s} = {_num(x, digits)} ({side}) T_math = "
                                   f"{si(t_math, 's', digits)} {'>' if gap > 0 else '<='} "
                                   f"T_{t.resource} = {si(t_other, 's', digits)}"))
        (below, text_below), (above, text_above) = sides
        if (below, above) != ((False, True) if want == ">" else (True, False)):
            derived = "" if value is None else \
                f"; the engine's exact threshold there is {s} = {_num(exact, digits)}"
            _fail(f"{s} {want} {claimed}{tail} fails at {where}: the bound does not flip "
                  f"around {s} = {_num(v, digits)}: {text_below}; {text_above}{derived}")
        return p

    default = BASE if reg is not None else SIZES
    strategy = points(syms, lo=default[0] if lo is None else lo,
                      hi=default[1] if hi is None else hi, integer=integer)
    return _run("assert_threshold", claim, check, strategy, max_examples)


def assert_identity(lhs: sp.Expr | str, rhs: sp.Expr | str, *, lo: Size = SIZES[0],
                    hi: Size = SIZES[1], integer: bool = True, exact: bool = True,
                    max_examples: int | None = None) -> Report:
    """``lhs == rhs``: equal at random sizes (a counterexample is shrunk), then proven equal
    by the engine's rules (structure, rational functions, cases, simplify, expand_log)
    unless ``exact=False``."""
    from hypothesis import assume
    a, b = _expr(lhs), _expr(rhs)
    syms = symbols_of(a, b)
    f = Compiled([a, b, a - b], syms)
    claim = f"{a} = {b}"

    def check(p: Point) -> Point:
        try:
            va, vb, diff = f(p)
        except ZeroDivisionError:
            assume(False)
            raise
        scale = max(abs(va), abs(vb), 1)
        if not (diff == 0 if f.exact else abs(diff) <= scale * Fraction(1, 10**30)):
            _fail(f"{a} != {b} at {show(p)}: {_num(va)} against {_num(vb)} (they differ "
                  f"by {_num(diff)})")
        return p

    report = _run("assert_identity", claim, check, points(syms, lo=lo, hi=hi, integer=integer),
                  max_examples)
    if exact:
        how = proof(a, b)
        if not how or how.startswith("numerically"):
            raise AssertionError(f"{a} = {b} holds at {report.examples} random points but "
                                 f"is not proven exactly (pass exact=False to accept that)")
    return report


def active_settings(max_examples: int | None = None) -> Settings:
    """The settings every assertion runs under: the active profile's (seed, derandomisation,
    database, deadline, health checks), with ``max_examples`` from the call, else from the
    profile if it sets one, else 30; one error reported, and no explain phase."""
    from hypothesis import Phase, settings
    profile = settings()
    if max_examples is None:
        builtin = settings.get_profile("default").max_examples
        max_examples = profile.max_examples if profile.max_examples != builtin else EXAMPLES
    # the explain phase would trace lines of this module: slow, and no help to the reader
    phases = tuple(p for p in profile.phases if p != Phase.explain)
    return settings(profile, max_examples=max_examples, report_multiple_bugs=False,
                    phases=phases)


# -- internals ----------------------------------------------------------------------------


def _run(name: str, claim: str, check: Callable[[Point], Point], strategy: SearchStrategy[Point],
         max_examples: int | None) -> Report:
    """Run ``check`` as a hypothesis test named ``name`` over ``strategy``."""
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable
    seen: list[Point] = []

    def run(sizes: Point) -> None:
        seen.append(check(sizes))

    run.__name__ = run.__qualname__ = name
    # a database key (and a derandomised seed) of its own for each claim
    run.__dict__["_hypothesis_internal_add_digest"] = hashlib.sha256(claim.encode()).digest()
    try:
        given(sizes=strategy)(active_settings(max_examples)(run))()
    except Unsatisfiable as exc:
        raise InputError(f"too few sizes in range to check {claim}: {exc}") from None
    return Report(claim, tuple(seen))


def _first_correction(e: sp.Expr, reg: Regime) -> sp.Expr:
    """The first non-zero term after the leading one (0 when the leading term is exact)."""
    x = expansion(e, reg)
    if x.correction != 0:
        return x.correction
    rest = sp.cancel(e - x.leading)
    return sp.Integer(0) if rest == 0 else expansion(rest, reg).leading


def _depth(fixed: int | None, deep_enough: Callable[[int], bool]) -> int | None:
    """``fixed``, or the first power of ten that is deep enough (None if none is)."""
    if fixed is not None:
        return fixed
    for k in DEPTHS:
        try:
            if deep_enough(k):
                return k
        except ZeroDivisionError:
            continue
    return None


def _expr(value: sp.Expr | str | float) -> sp.Expr:
    if isinstance(value, str):
        return parse_expr(value)
    if isinstance(value, float):
        return sp.Rational(str(value))
    return exact(value)


def _real(v: Any) -> bool:
    return isinstance(v, Fraction) or getattr(v, "imag", 0) == 0


def _num(v: Any, digits: int = 6) -> str:
    """A derived value for a message: whole numbers exactly, else ``digits`` digits."""
    if isinstance(v, Fraction | int) and Fraction(v).denominator == 1:
        return str(v)
    return f"{float(v):.{digits}g}" if _real(v) else str(v)


def _pct(r: Any) -> str:
    return f"{100 * abs(float(r)):.3g}%"


def _fail(message: str) -> NoReturn:
    raise AssertionError(message)
