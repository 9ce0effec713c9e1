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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NoReturn

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from ..claims.rules import proof
from ..core.errors import InputError
from ..core.parse import parse_expr
from ..core.sizes import DTYPES
from ..engine.asymptotics import Regime, expansion, parse_regime
from ..engine.ops import Op, einsum
from ..engine.rooflines import roofline
from ..engine.thresholds import Threshold, threshold
from ..hardware.catalog import Catalog, Chip, load_catalog

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.strategies import SearchStrategy

Size = int | Fraction
Point = dict[sp.Symbol, Size]

EXAMPLES = 30                      # per assertion, unless the profile or the call says
SIZES = (1, 2**16)                 # random sizes
BASE = (1, 64)                     # sizes before they are moved deep into a regime
DEEP = Fraction(1, 1000)           # deep enough: first correction / leading term below this
DEPTHS = tuple(10**j for j in range(1, 19))
SCALINGS = 25                      # sizes are scaled up to 2**24 to find a threshold
STATED = Fraction(1, 100)          # a stated threshold may be off by this much
EXACT = Fraction(1, 10**6)         # and the engine's exact threshold by this much
DIGITS = 60                        # mpmath precision for formulas that are not rational


@dataclass(frozen=True)
class Report:
    """What a passing check ran: the claim in words and every point it held at."""

    claim: str
    points: tuple[Point, ...]

    @property
    def examples(self) -> int:
        return len(self.points)


# -- strategies ---------------------------------------------------------------------------

def size_values(lo: Size = SIZES[0], hi: Size = SIZES[1], *,
                integer: bool = True) -> SearchStrategy[Size]:
    """Sizes between ``lo`` and ``hi``: whole numbers, or exact fractions."""
    from hypothesis import strategies as st
    if integer:
        return st.integers(math.ceil(Fraction(lo)), math.floor(Fraction(hi)))
    return st.fractions(Fraction(lo), Fraction(hi), max_denominator=1000)


def points(symbols: Iterable[sp.Symbol] | str | sp.Basic, *, lo: Size = SIZES[0],
           hi: Size = SIZES[1], integer: bool = True) -> SearchStrategy[Point]:
    """Random sizes for ``symbols`` (a list, ``"B D F"``, or an expression's symbols);
    symbols declared integer always get whole numbers."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({s: size_values(lo, hi, integer=integer or bool(s.is_integer))
                                  for s in _symbols(symbols)}).map(_ordered)


def deep_points(regime: Regime | str, symbols: Iterable[sp.Symbol] | str | sp.Basic, *,
                depth: int = 10**4, lo: Size = BASE[0], hi: Size = BASE[1],
                integer: bool = True) -> SearchStrategy[Point]:
    """Points ``depth`` deep in ``regime``: random sizes in [lo, hi], then the regime's large
    symbols multiplied by ``depth`` and its small ones divided by it.

    >>> from hypothesis import find
    >>> find(deep_points("B<<D,F", "B D F", depth=1000), lambda p: True)
    {B: 1, D: 1000, F: 1000}
    """
    reg = _bind(_regime(regime), _symbols(symbols))
    return points(symbols, lo=lo, hi=hi, integer=integer).map(lambda p: _deepen(reg, p, depth))


def chips(names: Iterable[str] | None = None, *, having: Iterable[str] = (),
          catalog: Catalog | None = None) -> SearchStrategy[Chip]:
    """Chips from the catalogue (all, or ``names``) that have every figure in ``having``
    (``"mxu.int8"``, ``"ici"``)."""
    from hypothesis import strategies as st
    cat = catalog or load_catalog()
    keys = list(having)
    pool = [cat[n] for n in (sorted(cat.chips) if names is None else names)]
    pool = [c for c in pool if all(_has(c, k) for k in keys)]
    if not pool:
        raise InputError(f"no chip in {cat.path} has {', '.join(keys)}")
    return st.sampled_from(pool)


def dtypes(names: Iterable[str] | None = None, *, chip: Chip | None = None,
           unit: str = "mxu") -> SearchStrategy[str]:
    """Dtype names (all, or ``names``), those ``chip`` has a ``unit`` peak for if given."""
    from hypothesis import strategies as st
    pool = list(DTYPES if names is None else names)
    if chip is not None:
        pool = [d for d in pool if f"{unit}.{d}" in chip.figures]
    if not pool:
        raise InputError(f"no dtype with a {unit} peak on {chip.name if chip else 'any chip'}")
    return st.sampled_from(pool)


def chip_dtypes(unit: str = "mxu", *, catalog: Catalog | None = None,
                ) -> SearchStrategy[tuple[Chip, str]]:
    """(chip, dtype) pairs such that the chip has a ``unit`` peak in that dtype."""
    from hypothesis import strategies as st
    cat = catalog or load_catalog()
    return st.sampled_from([(cat.chips[n], d) for n in sorted(cat.chips) for d in DTYPES
                            if f"{unit}.{d}" in cat.chips[n].figures])


def einsum_ops(dims: str = "B D F G", *, max_operands: int = 2,
               dtype_names: Sequence[str] | None = None) -> SearchStrategy[Op]:
    """Random einsum ops over ``dims``: one to ``max_operands`` operands of one to three
    dimensions each, any output, random dtypes per operand."""
    from hypothesis import strategies as st
    names = dims.split()
    kinds = list(DTYPES if dtype_names is None else dtype_names)

    @st.composite
    def build(draw: Callable[[SearchStrategy[Any]], Any]) -> Op:
        operand = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
        operands = draw(st.lists(operand, min_size=1, max_size=max_operands))
        used = sorted({d for o in operands for d in o}, key=names.index)
        output = draw(st.lists(st.sampled_from(used), unique=True, max_size=len(used)))
        types = draw(st.lists(st.sampled_from(kinds), min_size=len(operands),
                              max_size=len(operands)))
        spec = ", ".join(" ".join(o) for o in operands) + " -> " + " ".join(output)
        return einsum(spec, types)

    return build()


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
    reg = _bind(_regime(regime), _symbols(e, lead, *([] if given is None else [given])))
    corr = _first_correction(e, reg) if given is None else given
    claim = f"{e} ~ {lead} when {reg}"
    checks = [e / lead - 1, corr / lead]
    if given is not None and corr != 0:
        checks.append((e - lead - corr) / corr)
    syms = _symbols(e, lead, corr)
    f = _Compiled(checks, syms)

    def check(base: Point) -> Point:
        k = _depth(depth, lambda k: abs(f(_deepen(reg, base, k))[1]) <= DEEP) or DEPTHS[-1]
        near, far = _deepen(reg, base, k), _deepen(reg, base, 10 * k)
        try:
            (rel1, bound1, *rest1), (rel2, bound2, *rest2) = f(near), f(far)
        except ZeroDivisionError:
            _fail(f"{claim}: the leading term {lead} is 0 at {_show(near)}")
        where = f"(depth {k} from {_show(base)})"
        for rel, bound, at in ((rel1, bound1, near), (rel2, bound2, far)):
            if abs(rel) > factor * abs(bound):
                _fail(f"leading term {lead} of {e} ({reg}) is off by {_pct(rel)} at "
                      f"{_show(at)} {where}; the first correction {corr} allows "
                      f"{factor} x {_pct(bound)}")
        if not (abs(rel2) < abs(rel1) or rel1 == rel2 == 0):
            _fail(f"the relative error of the leading term {lead} of {e} ({reg}) does not "
                  f"shrink: {_pct(rel1)} at {_show(near)} {where}, {_pct(rel2)} at "
                  f"{_show(far)}")
        if rest1 and not (abs(rest2[0]) <= abs(rest1[0]) * Fraction(4, 5)):
            _fail(f"{corr} is not the first correction of {e} ({reg}): what it leaves out "
                  f"is {_pct(rest1[0])} of it at {_show(near)} {where} and "
                  f"{_pct(rest2[0])} at {_show(far)}, ten times deeper")
        return near

    return _run("assert_leading", claim, check, points(syms, lo=lo, hi=hi, integer=integer),
                max_examples)


def assert_threshold(op: Op, chip: Chip | str, symbol: str | sp.Symbol,
                     value: sp.Expr | str | float | None = None, *,
                     regime: Regime | str | None = None, resource: str | None = None,
                     direction: str | None = None, dtype: str | None = None,
                     unit: str | None = None, delta: Fraction | float | None = None,
                     depth: int | None = None, lo: Size | None = None, hi: Size | None = None,
                     integer: bool = True, max_examples: int | None = None) -> Report:
    """The bound flips at ``symbol = value``: ``B > 240`` on ``chip`` means bound by
    ``resource`` (the roofline's primary, HBM for an einsum) at 240 x (1 - delta) and
    compute-bound at 240 x (1 + delta); ``direction="<"`` the other way round.

    Checked at random other sizes where the threshold exists, or deep in ``regime`` when one
    is given (then ``value`` may be the asymptotic threshold). ``value`` defaults to the
    engine's exact threshold, checked with delta = 1e-6; a stated value with delta = 1%.
    ``dtype`` and ``unit`` pick the chip's peak as for ``roofline``.
    """
    from ..hardware.catalog import chip as named_chip
    the_chip = named_chip(chip) if isinstance(chip, str) else chip
    t = threshold(roofline(op, the_chip, dtype=dtype, unit=unit), symbol, resource=resource,
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
    exists = sp.sympify(t.existence)
    if exists is sp.false:
        raise InputError(f"no positive threshold in {s} exists at any sizes ({s} = {t.exact})")
    free = _symbols(t.t_math, t.t_other, t.exact, claimed, exists)
    reg = None if regime is None else _bind(_regime(regime), free)
    formulas = [t.exact, claimed, exists]
    if reg is not None and value is not None:  # how far the exact value is from its limit
        lead = t.asymptotic if t.regime == reg and t.asymptotic is not None else \
            expansion(t.exact, reg).leading
        formulas.append(t.exact / lead - 1)
    syms = [x for x in _symbols(t.t_math, t.t_other, *formulas) if x != s]
    at_sizes = _Compiled(formulas, syms)
    times = _Compiled([t.t_math, t.t_other, t.t_math - t.t_other], [*syms, s])
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
            k = next((2**j for j in range(SCALINGS) if usable(_scale(base, 2**j))), None)
            assume(k is not None)
            assert k is not None
            p, how = _scale(base, k), "scaled by"
        else:
            k = _depth(depth, lambda k: usable(_deepen(reg, base, k)))
            if k is None:
                _fail(f"{claim}: no threshold near its leading term at {_show(base)} even "
                      f"at depth {DEPTHS[-1]}")
            p, how = _deepen(reg, base, k), "depth"
        exact, v = at_sizes(p)[:2]
        where = _show(p) + ("" if k == 1 else f" ({how} {k} from {_show(base)})")
        if not (_real(v) and v > 0):
            _fail(f"the claimed threshold {s} = {claimed} is {_num(v)} at {where}")
        sides = []
        for side, x in (("1 - delta", _fraction(v) * (1 - d)),
                        ("1 + delta", _fraction(v) * (1 + d))):
            t_math, t_other, gap = times({**p, s: _size(x)})
            sides.append((gap > 0, f"at {s} = {_num(x, digits)} ({side}) T_math = "
                                   f"{_num(t_math, digits)} {'>' if gap > 0 else '<='} "
                                   f"T_{t.resource} = {_num(t_other, digits)}"))
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
    syms = _symbols(a, b)
    f = _Compiled([a, b, a - b], syms)
    claim = f"{a} = {b}"

    def check(p: Point) -> Point:
        try:
            va, vb, diff = f(p)
        except ZeroDivisionError:
            assume(False)
            raise
        scale = max(abs(va), abs(vb), 1)
        if not (diff == 0 if f.exact else abs(diff) <= scale * Fraction(1, 10**30)):
            _fail(f"{a} != {b} at {_show(p)}: {_num(va)} against {_num(vb)} (they differ "
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

class _FractionPrinter(PythonCodePrinter):
    """Python code whose numbers are Fractions: rational formulas evaluate exactly."""

    def _print_Rational(self, expr: sp.Rational) -> str:
        return f"Fraction({expr.p}, {expr.q})"

    _print_Half = _print_Rational


_EXACT = (sp.Symbol, sp.Rational, sp.Add, sp.Mul, sp.Max, sp.Min, sp.Abs, sp.Rel, sp.And,
          sp.Or, sp.Not, sp.logic.boolalg.BooleanAtom)


class _Compiled:
    """Formulas lambdified once; Fractions in and out when every one is rational."""

    def __init__(self, exprs: Sequence[sp.Basic], symbols: Sequence[sp.Symbol]) -> None:
        self.symbols = tuple(symbols)
        self.exact = all(_rational(e) for e in exprs)
        if self.exact:
            self.fn = sp.lambdify(self.symbols, list(exprs), modules=[{"Fraction": Fraction}],
                                  printer=_FractionPrinter)
        else:
            self.fn = sp.lambdify(self.symbols, list(exprs), modules="mpmath")

    def __call__(self, point: Mapping[sp.Symbol, Size]) -> list[Any]:
        args = [Fraction(point[s]) for s in self.symbols]
        if self.exact:
            return list(self.fn(*args))
        import mpmath
        with mpmath.workdps(DIGITS):
            out = self.fn(*(mpmath.mpf(x.numerator) / x.denominator for x in args))
        return [_fraction(v.real) if isinstance(v, mpmath.mpf | mpmath.mpc) and v.imag == 0
                and mpmath.isfinite(v.real) else v for v in out]


def _rational(expr: sp.Basic) -> bool:
    return all(isinstance(n, _EXACT) or (isinstance(n, sp.Pow) and n.exp.is_Integer)
               for n in sp.preorder_traversal(expr))


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


def _deepen(reg: Regime, base: Point, k: int) -> Point:
    out = dict(base)
    for s in reg.large:
        if s in out:
            out[s] = _size(out[s] * k)
    for s in reg.small:
        if s in out:
            out[s] = _size(Fraction(out[s], k))
    return out


def _scale(base: Point, k: int) -> Point:
    return {s: _size(v * k) for s, v in base.items()}


def _bind(reg: Regime, symbols: Iterable[sp.Symbol]) -> Regime:
    """The regime over the formulas' own symbols (``B`` in ``B<<D`` matches an integer B)."""
    named = {s.name: s for s in symbols}
    return replace(reg, large=tuple(named.get(s.name, s) for s in reg.large),
                   small=tuple(named.get(s.name, s) for s in reg.small))


def _symbols(*items: Iterable[sp.Symbol] | str | sp.Basic) -> list[sp.Symbol]:
    found: set[sp.Symbol] = set()
    for item in items:
        if isinstance(item, str):
            found |= {sp.Symbol(n, positive=True) for n in item.replace(",", " ").split()}
        elif isinstance(item, sp.Basic):
            found |= {s for s in item.free_symbols if isinstance(s, sp.Symbol)}
        else:
            found |= set(item)
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"symbol {twice[0]} appears with two different sets of assumptions")
    return sorted(found, key=lambda s: s.name)


def _regime(regime: Regime | str) -> Regime:
    return parse_regime(regime, where=None) if isinstance(regime, str) else regime


def _expr(value: sp.Expr | str | float) -> sp.Expr:
    if isinstance(value, str):
        return parse_expr(value)
    if isinstance(value, float):
        return sp.Rational(str(value))
    return sp.sympify(value)


def _has(c: Chip, key: str) -> bool:
    try:
        c.resolve(key)
    except InputError:
        return False
    return True


def _real(v: Any) -> bool:
    return isinstance(v, Fraction) or getattr(v, "imag", 0) == 0


def _fraction(x: Any) -> Fraction:
    """A Fraction, exactly (an mpmath value is a binary fraction)."""
    if isinstance(x, Fraction | int):
        return Fraction(x)
    sign, man, exp, _ = x._mpf_
    man = -man if sign else man
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def _size(x: Any) -> Size:
    """An int when whole, else a Fraction."""
    f = _fraction(x)
    return f.numerator if f.denominator == 1 else f


def _num(v: Any, digits: int = 6) -> str:
    """A derived value for a message: whole numbers exactly, else ``digits`` digits."""
    if isinstance(v, Fraction | int) and Fraction(v).denominator == 1:
        return str(v)
    return f"{float(v):.{digits}g}" if _real(v) else str(v)


def _ordered(p: Point) -> Point:
    return dict(sorted(p.items(), key=lambda kv: kv[0].name))


def _show(p: Mapping[sp.Symbol, Size]) -> str:
    """Sizes for a message, exactly, so that they can be pasted back."""
    return ", ".join(f"{s}={Fraction(p[s])}" for s in sorted(p, key=lambda s: s.name))


def _pct(r: Any) -> str:
    return f"{100 * abs(float(r)):.3g}%"


def _fail(message: str) -> NoReturn:
    raise AssertionError(message)
