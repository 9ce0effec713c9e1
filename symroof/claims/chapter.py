"""Chapters in the v2 form: one language-free ``claims.py``, one table per translation.

>>> import pathlib, tempfile, textwrap
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "claims.py").write_text(textwrap.dedent('''
...     import sympy as sp
...     n = sp.Symbol("n", positive=True)
...     def claims(ch):
...         ch.add(half=sp.limit((2*n - 1) / (4*n + 2), n, sp.oo),
...                speed=ch.given("rate", 2) / 10**3)
... '''))
>>> _ = (folder / "en.toml").write_text(textwrap.dedent('''
...     [chapter]
...     id = "demo-en"
...     title = "Demo"
...     book = "A book"
...     [inputs]
...     rate = 3
...     ["Section one".half]
...     quote = "one half (0.5)"
...     stated = "0.5"
...     ["Section one".speed]
...     quote = "3 ms"
...     stated = "3 ms"
... '''))
>>> [(c.id, c.kind, c.source.section) for c in build_chapter(folder)[0].claims]
[('half', 'number', 'Section one'), ('speed', 'definition', 'Section one')]

``claims.py`` defines ``claims(ch)``: it builds what the chapter derives with the engine
(through ``ch``, a :class:`DerivationBuilder`, so steps are recorded) and adds every claim
once, as a value or a law (``ch.add(ridge=rl.ridge, ...)``); no lambdas. Inputs that differ
between translations (an example's chip count, a figure a problem uses) are read with
``ch.given(name, default)`` from the table's ``[inputs]``. Each translation table
(``ru.toml``, ``zh.toml``) holds, per section, the claims it prints: the quote, the stated
value (with its unit), and optionally an English statement, an erratum (``erratum``,
``right``), measurement ``evidence``, the ``meaning`` of a law, the ``figures`` the passage
prints (each printed in the quote, or in the quotes of the claims ``figures_in`` names), the
claims a summary ``sums_up``, ``assumes``, a ``tolerance`` in [0, 1), and the ``unit`` of a
number the text prints bare (``stated = "26.4"``, ``unit = "us"``: read as ``26.4 us``; a
bare number against a time, bytes, a bandwidth or a rate needs it). A table key that
claims.py does not add, or a claim the table neither states nor lists under ``omits``, is an
input error naming the file and key. The kind of a claim follows from its value and stated
value; a value claims.py writes down without computing anything (a literal, an input read
back, arithmetic on such) is a DEFINITION (:mod:`symroof.claims.restated`). A table says
``cache = false`` under ``[chapter]`` when its claims rest on what the verdict cache cannot
follow.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import product
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import sympy as sp

from ..core.choices import CANDIDATES, EXACT, OPTIONS, Tried, tried
from ..core.errors import InputError, SymroofError
from ..core.parse import exact_number, parse_expr, size_name
from ..core.units import (
    COUNT,
    ENGINE_DIMENSIONS,
    also_tried,
    recorded,
    recording,
    remade,
    unit_dimension,
)
from ..engine.rooflines import roofline
from .consistency import find_conflicts
from .model import (
    Claim,
    Derivation,
    DerivationBuilder,
    Erratum,
    Law,
    Source,
    declared,
    tolerance_of,
    truth,
)
from .printed import check_figures, check_stated, printed_values
from .restated import restated_folder
from .stated import read, refusal
from .tablefile import read_table

_META = ("chapter", "inputs")
_ROW = {"quote", "stated", "statement", "erratum", "right", "evidence", "meaning", "figures",
        "figures_in", "sums_up", "assumes", "tolerance", "known", "unit"}


@dataclass(frozen=True)
class Measured:
    """A claim the engine cannot derive: a measurement, with its evidence."""

    evidence: str = ""


@dataclass(frozen=True)
class Defined:
    """A claim that restates a definition (kind ``definition``, counted apart)."""

    value: Any


@dataclass(frozen=True)
class Assumed:
    """A value that rests on an input the text does not give, chosen because it
    reproduces the stated value: the claim reads UNVERIFIABLE, with what it gives."""

    value: Any
    assumption: str


#: what quantity() takes for a count or a ratio (no unit)
COUNTS = ("count", "ratio", "1")


@dataclass(frozen=True)
class Quantity:
    """A value with the unit its claims.py says it is in (``quantity(x, "s")``)."""

    value: Any
    unit: str


def quantity(value: Any, unit: str) -> Quantity:
    """Say what a value is measured in, where the engine cannot tell (a value computed by
    hand from chip figures, a model's parameter count): ``ch.add(t=quantity(flops / peak,
    "s"))``, ``quantity(params(cfg).total, "count")``. The judge reads a
    stated value of another dimension as a MISMATCH.

    >>> quantity(3, "s").unit
    's'
    """
    if unit not in COUNTS:
        unit_dimension(unit, where="quantity()")
    return Quantity(value, unit)


def dimension_of(value: Any, made: Any, known: dict[sp.Expr, tuple[int, int, int]] | None = None
                 ) -> tuple[int, int, int] | None:
    """The (byte, FLOP, second) exponents of a value a chapter adds: from its
    :func:`quantity`, else from the engine result it is (an attribute of a roofline the
    chapter recorded, ``ENGINE_DIMENSIONS``) or the product or quotient of two such; None
    when the engine did not make it.

    >>> from symroof import chip, einsum
    >>> ch = Chapter("d", "D", Source("b"))
    >>> rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
    >>> dimension_of(rl.ridge, ch), dimension_of(rl.peak / rl.ridge, ch)
    ((-1, 1, 0), (1, 0, -1))
    """
    if isinstance(value, Quantity):
        return (0, 0, 0) if value.unit in COUNTS else unit_dimension(value.unit)
    if isinstance(value, Tried):  # judged by its exact value
        value = value.value
    if hasattr(value, "inequality"):  # a threshold: its relation
        value = value.inequality
    if isinstance(value, sp.Rel):  # a relation: the dimension of its bound, a number
        bound = [side for side in (value.rhs, value.lhs) if side.is_number]
        if bound:
            return dimension_of(bound[0], made, known)
        for side in (value.rhs, value.lhs):  # or a formula the engine made (a time in D)
            got = dimension_of(side, made, known)
            if got is not None:
                return got
        return None
    if not isinstance(value, sp.Expr):
        return None
    if known is None:
        known = made if isinstance(made, dict) else engine_results(made)
    if value in known:
        return known[value]
    if not value.is_number or value == 0:
        return None
    # a product or a quotient of two results of one roofline (its peak over its ridge):
    # among the results of many, such a ratio is a coincidence of small numbers
    for one in ([known] if isinstance(made, dict) else
                [engine_results(SimpleNamespace(rooflines=[rl]))
                 for rl in getattr(made, "rooflines", ())]):
        for a, da in one.items():  # value / a or a / value is another
            for b, sign in ((value / a, 1), (a / value, -1)):
                db = one.get(b)
                if db is not None:
                    return (da[0] + sign * db[0], da[1] + sign * db[1],
                            da[2] + sign * db[2]) if sign == 1 else \
                        (da[0] - db[0], da[1] - db[1], da[2] - db[2])
    return None


def with_editions(value: Any, made: Any) -> Any:
    """``value``, or when it is a number a recorded roofline gives (its ridge, peak or a
    time) on a chip whose table has other editions, the value with what each edition gives
    (a :class:`Tried`): a stated value another edition reproduces is SIMPLIFIED, with the
    edition named (the vendor's 312 TFLOP/s, the book's 8.2e11 B/s). A number a collective
    gives (its time, bandwidth or latency time, its bytes) is judged as if made with
    ``ch.with_choices(collective, of=attr)``: the named choices of
    :data:`symroof.core.choices.CANDIDATES` (the leading term, latency off, one way) and
    the other editions of its links' figures are tried on it, marked or not. So is a
    number any engine helper made while the chapter was built and can make again under
    choices (:func:`symroof.core.units.remade`: a collective called directly, a sharded
    matmul, a plan, a model's count at its nominal size, a decode time, a model's memory),
    with the changes its helper takes besides and the chip table's editions it takes
    (:func:`symroof.core.units.also_tried`: a plan's step under the editions of its
    chip's figures).

    >>> from symroof import chip, mesh
    >>> ch = Chapter("d", "D", Source("b"))
    >>> ring = ch.collective("allgather", 10**6, "X", mesh("X=8", chip("tpu-v5e")))
    >>> [c.describe() for c, _ in with_editions(ring.time, ch).alternatives][:3]
    ['collectives=leading', 'latency=off', 'collectives=leading, latency=off']
    """
    if not isinstance(value, sp.Expr):
        return value
    for coll in getattr(made, "collectives", ()):
        attr = next((a for a in COLLECTIVE_VALUES
                     if _recorded_value(coll, a) == value), None)
        if attr is None:
            continue
        def remade_(c: Any, coll: Any = coll, attr: str = attr) -> Any:
            return getattr(coll.under(c), attr)
        try:
            return tried(remade_, editions=link_editions(coll))
        except SymroofError:  # a collective the choices cannot remake
            return value
    for rl in getattr(made, "rooflines", ()) if value.is_number else ():
        attr = next((a for a in ("ridge", "peak", "t_math", "t_lower", "t_upper")
                     if getattr(rl, a) == value), None)
        if attr is None:
            continue
        labels = tuple(sorted({a.label for f in rl.chip.figures.values()
                               for a in f.alternatives}))
        if not labels:
            return value

        def make(c: Any, rl: Any = rl, attr: str = attr) -> Any:
            again = roofline(rl.op, rl.chip.under(c), dtype=rl.dtype, compute=rl.compute,
                             primary=rl.primary, extra=dict(rl.extra) or None,
                             serial=rl.serial)
            return getattr(again, attr)
        try:
            if make(EXACT) != value:  # a roofline made with figures of its own
                return value
            return tried(make, None, candidates=(), editions=labels)
        except InputError:
            return value
    for entry, _ in getattr(made, "made", ()):
        again = _again(entry, value)
        if again is None:
            continue
        extra, labels, base = also_tried(entry)  # what its helper takes besides
        try:
            made_ = tried(again, candidates=(*CANDIDATES, *extra),
                          editions=link_editions(getattr(entry, "thing", None)) or labels,
                          base=EXACT.with_(**base))
        except (SymroofError, ArithmeticError, LookupError, TypeError, ValueError):
            continue  # a result the choices cannot remake: no diagnosis, not a failure
        if made_.value == value:  # made under the exact model, not a text's own choices
            return made_ if made_.alternatives else value
    return value


def _again(entry: Any, value: sp.Expr) -> Any:
    """``value`` as a function of the choices, when the helper entry made it (itself, or
    one of its terms) and can make it again; else None."""
    again = remade(entry)
    if again is None:
        return None
    got = _recorded_value(entry, "")
    if isinstance(got, Mapping):  # a step's terms: the one that is the value
        key = next((k for k, v in got.items() if v == value), None)
        return None if key is None else lambda c: again(c).get(key)
    return again if got == value else None


def link_editions(thing: Any) -> tuple[str, ...]:
    """The labels of the other editions of the figures of a collective's links (their
    bandwidth and hop latency), which ``Collective.under`` takes; () for anything else.

    >>> from symroof import chip, mesh
    >>> from symroof.parallel import all_gather
    >>> link_editions(all_gather("bf16[8_X]", "X", mesh("X=8", chip("tpu-v5e"))))
    ('B2-draft', 'GC-v5e')
    """
    if type(thing).__name__ != "Collective":
        return ()
    links = {p.link.name for a in thing.axes for p in thing.mesh.axis(a).stages()}
    return tuple(sorted({alt.label for key, f in thing.mesh.chip.figures.items()
                         if key.split(".")[0] in links and key.partition(".")[2]
                         in ("", "latency") for alt in f.alternatives}))


# the attributes of a collective the named choices change, in the order looked up
COLLECTIVE_VALUES = ("time", "bandwidth_time", "latency_time", "bytes_per_device")


def _recorded_value(coll: Any, attr: str) -> Any:
    try:
        return recorded(coll) if not attr else getattr(coll, attr)
    except SymroofError:  # an attribute the collective cannot give (a symbolic mesh)
        return None


def rounded_figures(claims: tuple[Claim, ...]) -> tuple[Claim, ...]:
    """Each numeric claim with the numbers the same text printed rounded (a stated value
    within 5% of its derived one, not equal to it) that its own quote prints again: a result
    that follows from the rounded figure, not the exact one, is a slip the diagnosis names
    ("a rounded intermediate carried forward")."""
    found: list[tuple[str, str, str]] = []
    for c in claims:
        raw = c.value.value if isinstance(c.value, Tried) else c.value
        if c.kind != "number" or c.reading is None or c.reading.count or \
                not isinstance(raw, sp.Expr) or not raw.is_number or raw == 0:
            continue
        ratio = c.reading.value / raw
        if ratio != 1 and abs(ratio - 1) <= sp.Rational(1, 20) and ratio.is_Rational:
            found.append((c.id, c.stated, str(ratio)))
    if not found:
        return claims
    by_id = {c.id: c for c in claims}

    def printed_in(c: Claim, other: str) -> bool:  # the figure is printed in c's quote
        p = by_id[other].reading
        assert p is not None
        shown = p.in_unit(abs(p.value))
        return Fraction(int(shown.p), int(shown.q)) in printed_values(c.quote)
    return tuple(replace(c, rounded=tuple(f for f in found if f[0] != c.id and
                                          printed_in(c, f[0])))
                 if c.kind == "number" else c for c in claims)


def own_figures(claims: tuple[Claim, ...], made: Any) -> tuple[Claim, ...]:
    """Each numeric claim with its value made again from each earlier claim's stated value
    in place of that claim's derived one (``follows``), where the chapter shows the one
    made from the other: a helper's total of which the earlier value is a part (a model's
    memory and its KV cache), a step of the chapter computed from it (a sum or a product of
    powers of its operands), or the earlier figure printed again in this claim's quote (a
    factor, a divisor, or a term of one dimension). A stated value the text's own figure
    reproduces, where the derived one does not, follows from that figure ("a wrong figure
    carried forward"); a claim the derived value reproduces is never told so.

    >>> from symroof.claims.model import Source
    >>> from symroof.models import inference_memory, model
    >>> src = Source("b")
    >>> with recording() as seen:
    ...     m = inference_memory(model("llama-2-7b"), batch=16, context=4096)
    >>> kv = Claim("kv", src, "s", "68.7 GB", "68.7 GB", value=m.parts["kv cache"])
    >>> total = Claim("sum", src, "s", "82 GB", "82 GB", value=m.total)
    >>> [f[0] for f in own_figures((kv, total), SimpleNamespace(made=seen))[1].follows]
    ['kv']
    """
    figures = []
    for i, c in enumerate(claims):
        raw = _number(c)
        if raw is not None and c.reading is not None and not c.reading.count and \
                c.reading.value != raw:
            figures.append((i, c, raw))
    if not figures:
        return claims
    sums, products = _made_from(made)
    out = []
    for j, c in enumerate(claims):
        raw = _number(c)
        found: list[tuple[str, str, str, str]] = []
        quoted = printed_values(c.quote) if raw is not None else set()
        for i, k, derived in figures if raw is not None else ():
            if i >= j:  # an earlier claim's figure only
                break
            assert k.reading is not None
            stated = k.reading.value
            alts = [a for a in [_replaced(raw, derived, stated, sums, products, 3)]
                    if a is not None]
            if Fraction(*_fraction(k.reading.in_unit(abs(stated)))) in quoted:
                # the figure printed again in this quote
                ratio = stated / derived
                alts += [raw * ratio, raw / ratio] + \
                    ([raw + stated - derived] if c.dimension == k.dimension else [])
            for alt in dict.fromkeys(alts):
                if alt != raw and alt != 0:
                    found.append((k.id, k.stated, str(derived), str(alt)))
        out.append(replace(c, follows=tuple(found)) if found else c)
    return tuple(out)


def _number(c: Claim) -> sp.Expr | None:
    """A numeric claim's derived value, a non-zero number; else None."""
    raw = c.value.value if isinstance(c.value, Tried) else c.value
    if c.kind != "number" or c.reading is None or not isinstance(raw, sp.Expr) or \
            not raw.is_number or not raw.is_Rational or raw == 0:
        return None
    return raw


def _fraction(x: sp.Expr) -> tuple[int, int]:
    return int(sp.Rational(x).p), int(sp.Rational(x).q)


def _made_from(made: Any) -> tuple[list[tuple[sp.Expr, tuple[sp.Expr, ...]]],
                                   list[tuple[sp.Expr, tuple[tuple[sp.Expr, int], ...]]]]:
    """What the chapter shows a number made from: the totals of the helpers' results that
    are the sums of their parts (a model's memory), and the steps whose output is the sum of
    their operands, or a product of whole powers of them, in one way only."""
    sums: list[tuple[sp.Expr, tuple[sp.Expr, ...]]] = []
    products: list[tuple[sp.Expr, tuple[tuple[sp.Expr, int], ...]]] = []
    for entry, _ in getattr(made, "made", ()):
        try:
            thing = getattr(entry, "thing", None)
            parts = getattr(thing, "parts", None)
            total = getattr(thing, "total", None) if isinstance(parts, Mapping) else None
        except (SymroofError, ArithmeticError, TypeError, ValueError):
            continue  # a result that cannot give its parts: no link through it
        if isinstance(parts, Mapping) and isinstance(total, sp.Expr) and total.is_number and \
                all(isinstance(v, sp.Expr) and v.is_number for v in parts.values()) and \
                sp.Add(*parts.values()) == total and (total, tuple(parts.values())) not in sums:
            sums.append((total, tuple(parts.values())))
    for value, operands in getattr(made, "operands", ()):
        ops = tuple(operands) if isinstance(operands, tuple | list) else (operands,)
        if not isinstance(value, sp.Expr) or not value.is_number or not 1 <= len(ops) <= 4 or \
                not all(isinstance(o, sp.Expr) and o.is_number and o != 0 for o in ops):
            continue
        if sp.Add(*ops) == value and len(ops) > 1:
            sums.append((value, ops))
            continue
        found = [powers for powers in product(range(-2, 3), repeat=len(ops))
                 if any(powers) and sp.Mul(*(o ** k for o, k in zip(ops, powers, strict=True)))
                 == value]
        if len(found) == 1:
            products.append((value, tuple(zip(ops, found[0], strict=True))))
    return sums, products


def _replaced(value: sp.Expr, old: sp.Expr, new: sp.Expr,
              sums: list[tuple[sp.Expr, tuple[sp.Expr, ...]]],
              products: list[tuple[sp.Expr, tuple[tuple[sp.Expr, int], ...]]],
              depth: int) -> sp.Expr | None:
    """``value`` made again with ``new`` for ``old`` through what the chapter shows it made
    from (at most ``depth`` steps back), or None when it shows no way."""
    if value == old:
        return new
    if depth == 0:
        return None
    for total, parts in sums:
        if total != value:
            continue
        for part in parts:
            again = _replaced(part, old, new, sums, products, depth - 1)
            if again is not None:
                return value - part + again
    for out, powers in products:
        if out != value:
            continue
        for operand, k in powers:
            again = _replaced(operand, old, new, sums, products, depth - 1)
            if again is not None and again != 0 and k != 0:
                return value * (again / operand) ** k
    return None


def engine_results(made: Any) -> dict[sp.Expr, tuple[int, int, int]]:
    """The engine results a builder recorded (its rooflines and their ops, its collectives,
    and what the engine's helpers made while it was built: a model's parameter count, its
    memory, a decode time), each with its dimension (``ENGINE_DIMENSIONS``, the helper's
    own); a value two results share with two
    dimensions is left out, and so is an unbounded one.

    >>> from symroof import chip, op
    >>> ch = Chapter("d", "D", Source("b"))
    >>> rl = ch.roofline(op("pure", flops="2*N"), chip("tpu-v5e"))
    >>> rl.intensity, sp.oo in engine_results(ch)
    (oo, False)
    """
    out: dict[sp.Expr, tuple[int, int, int]] = {}
    clash: set[sp.Expr] = set()
    rooflines = list(getattr(made, "rooflines", ()))
    found: list[tuple[Any, Any]] = list(getattr(made, "made", ()))
    others = getattr(made, "collectives", ())
    for thing in [*rooflines, *(rl.op for rl in rooflines), *others]:
        for (kind, attr), dim in ENGINE_DIMENSIONS.items():
            if type(thing).__name__ == kind:
                found.append((getattr(thing, attr, None), dim))
    for entry, dim in found:
        try:
            got = recorded(entry)
        except SymroofError:  # an attribute the result cannot give (a symbolic mesh)
            continue
        dims = (dim.byte, dim.flop, dim.second)
        for v in (got.values() if isinstance(got, Mapping) else [got]):
            # an unbounded intensity (an op that moves no bytes) divides any number
            # into itself: it would give every value a dimension, so it gives none
            if _bounded(v):
                if out.get(v, dims) != dims:
                    clash.add(v)
                out[v] = dims
    for v, dims in getattr(made, "dimensioned", ()):  # a step's or definition's unit
        if _bounded(v):
            if out.get(v, dims) != dims:
                clash.add(v)
            out[v] = dims
    # a threshold solves for a size (a batch, an axis size): a count, unless the value is
    # already another result (B_crit of a matmul is its ridge, FLOP/B, in number)
    for t in getattr(made, "thresholds", ()):
        for v in (t.exact, t.asymptotic):
            if _bounded(v) and v not in out and v not in clash:
                out[v] = (COUNT.byte, COUNT.flop, COUNT.second)
    known = {v: d for v, d in out.items() if v not in clash}
    for v, operands in getattr(made, "operands", ()):  # steps, in the order recorded
        if _bounded(v) and v not in known and v not in clash:
            derived = monomial_dimension(v, operands, known)
            if derived is not None:
                known[v] = derived
    return known


def monomial_dimension(value: Any, operands: Any, known: Mapping[Any, tuple[int, int, int]]
                       ) -> tuple[int, int, int] | None:
    """The dimension of ``value`` when it is a product of whole powers (-2 to 2) of
    ``operands`` (one value or a tuple of up to four), exactly and in one way only, and
    each operand's dimension is ``known``; else None.

    >>> monomial_dimension(sp.Integer(6), (sp.Integer(12), sp.Integer(2)),
    ...                    {sp.Integer(12): (0, 1, 0), sp.Integer(2): (0, 1, -1)})
    (0, 0, 1)
    """
    ops = tuple(operands) if isinstance(operands, tuple | list) else (operands,)
    if not 1 <= len(ops) <= 4 or not isinstance(value, sp.Expr) or \
            not all(isinstance(o, sp.Expr) and o in known for o in ops):
        return None
    found = set()
    for powers in product(range(-2, 3), repeat=len(ops)):
        if any(powers) and sp.cancel(sp.Mul(*(o ** k for o, k in zip(ops, powers,
                                                                     strict=True))) - value) == 0:
            found.add(tuple(sum(k * known[o][i] for o, k in zip(ops, powers, strict=True))
                            for i in range(3)))
    return found.pop() if len(found) == 1 else None  # type: ignore[return-value]


def _dimensioned(value: Any, where: str) -> tuple[Any, tuple[int, int, int] | None]:
    """A step's or definition's value in base units, with the dimension its unit says: a
    :func:`quantity`, or text printed with a unit; anything else as it is."""
    if isinstance(value, Quantity):
        return value.value, dimension_of(value, None, {})
    if isinstance(value, str):
        got = read(value)
        if got is None or got.dims is None:
            raise InputError(f"a value given as text is a number printed with its unit "
                             f"(\"1.97e14 FLOP/s\"), got {value!r:.60}", where)
        return got.value, got.dims
    return value, None


def _bounded(v: Any) -> bool:
    return isinstance(v, sp.Expr) and v != 0 and not v.has(sp.oo, sp.zoo, sp.nan)


def real(names: str) -> tuple[sp.Symbol, ...]:
    """Symbols that may be negative or zero (logits, a shifted maximum), where ``sizes``
    makes positive ones: a formula equal only for positive values of them is not equal.

    >>> m1, m2 = real("m1 m2")
    >>> m1.is_real, m1.is_positive
    (True, None)
    """
    return tuple(sp.Symbol(size_name(n, "real()"), real=True) for n in names.split())


class MeasuredValue(sp.Dummy):
    """A number measured, not derived (``measured("22.0 ms")``): a symbol while claims.py
    computes with it, its value in base units (``exact``) when the claims are built."""

    exact: sp.Rational
    printed: str
    dims: tuple[int, int, int] | None


def measured(evidence: str = "") -> Any:
    """A measured number other claims compute from, when ``evidence`` is one as printed
    (``measured("22.0 ms")``: its value in base units; a claim computed from it is judged
    as checked arithmetic on data, MEASURED); else a mark of a claim as a measurement
    (evidence here or in the table's row: UNVERIFIABLE).

    >>> step = measured("22.0 ms")
    >>> on_data(32 / step)
    (16000/11, ('22.0 ms',))
    >>> measured("a profile of 12 runs")
    Measured(evidence='a profile of 12 runs')
    >>> on_data(abs(measured("−3 ms")))
    (3/1000, ('−3 ms',))
    """
    try:
        got = read(evidence)
    except InputError:
        got = None
    if got is None:
        return Measured(evidence)
    # its sign as measured (SymPy simplifies by it: Abs(x) is x for a positive x)
    value = MeasuredValue(evidence, positive=True) if got.value > 0 else \
        MeasuredValue(evidence, real=True, positive=False)
    value.exact, value.printed, value.dims = got.value, evidence, got.dims
    return value


def data_dimension(value: Any) -> tuple[int, int, int] | None:
    """The dimension of a value computed from measured numbers with printed units, by the
    powers it takes them to (a product, a quotient, a sum of one dimension); None when a
    number it uses has no unit, or a plain number scales it (32 sequences or 14e9 FLOPs:
    the code does not say which).

    >>> data_dimension(measured("2 GB") / measured("22.0 ms")), data_dimension(measured("2 GB") * 3)
    ((1, 0, -1), None)
    """
    if isinstance(value, Quantity | Assumed | Defined):
        return data_dimension(value.value)
    if isinstance(value, MeasuredValue):
        return value.dims
    if not isinstance(value, sp.Expr) or not value.atoms(MeasuredValue):
        return None
    if value.is_Mul:
        parts = [data_dimension(a) for a in value.args]
        known = [d for d in parts if d is not None]
        if len(known) < len(parts):
            return None
        return (sum(d[0] for d in known), sum(d[1] for d in known),
                sum(d[2] for d in known))
    if value.is_Pow and value.exp.is_Integer:
        d = data_dimension(value.base)
        k = int(value.exp)
        return None if d is None else (d[0] * k, d[1] * k, d[2] * k)
    if value.is_Add:
        terms = {data_dimension(a) for a in value.args}
        return terms.pop() if len(terms) == 1 else None  # (None when one has none)
    return None


def on_data(value: Any) -> tuple[Any, tuple[str, ...]]:
    """``value`` with its measured numbers put in, and those numbers as printed."""
    if isinstance(value, Quantity | Assumed | Defined):
        inner, found = on_data(value.value)
        return replace(value, value=inner), found
    if isinstance(value, Tried):  # the exact value and each alternative
        inner, found = on_data(value.value)
        alternatives = tuple((c, on_data(v)[0]) for c, v in value.alternatives)
        return replace(value, value=inner, alternatives=alternatives), found
    if isinstance(value, Law):
        return value, ()
    if not isinstance(value, sp.Basic):
        return value, ()
    atoms = sorted(value.atoms(MeasuredValue), key=lambda m: m.printed)
    if not atoms:
        return value, ()
    return value.xreplace({m: m.exact for m in atoms}), tuple(m.printed for m in atoms)


def definition(value: Any) -> Defined:
    """Mark a claim as restating a definition."""
    return Defined(value)


def assumed(value: Any, assumption: str) -> Assumed:
    """Mark a value as resting on an input chosen to reproduce the text."""
    return Assumed(value, assumption)


def law(condition: Any, meaning: str = "") -> Law:
    """A yes/no law (``sp.degree(x, B) == 1``); the table's ``meaning`` may say more."""
    return Law(truth(condition, "law()"), meaning)


def within(value: Any, lo: Any, hi: Any, meaning: str = "") -> Law:
    """The law ``lo <= value <= hi``, saying where the value lies.

    >>> within(sp.Rational(5, 3), sp.Rational(9, 5), 2).meaning
    '1.67 outside [1.8, 2]'
    """
    from ..core.printer import approx
    v, a, b = (_rational(x) for x in (value, lo, hi))
    holds = truth((a <= v) & (v <= b), "within()")
    where = f"{approx(v)} {'in' if holds else 'outside'} [{approx(a)}, {approx(b)}]"
    return Law(holds, f"{meaning}: {where}" if meaning else where, approx(v, 6))


def equals(value: Any, expected: Any, meaning: str = "") -> Law:
    """The law ``value = expected``, proven (their difference cancels to 0), and when it
    does not hold, saying what the value is, and whether the two name one symbol with other
    assumptions (symroof's sizes are positive: ``sizes("B")``, not ``sympy.Symbol("B")``).

    >>> from symroof import sizes
    >>> (B,) = sizes("B")
    >>> equals(B * (1 + B) / (1 + B), B, "tends to B").holds
    True
    >>> equals(2 * B, B, "tends to B").meaning
    'tends to B: the value is 2*B, not B'
    >>> print(equals(B, sp.Symbol("B")).meaning)  # doctest: +NORMALIZE_WHITESPACE
    the value is B, not B (B has other assumptions on each side: symroof's sizes are
    positive symbols, sizes("B"), not sympy.Symbol("B"))
    """
    from ..engine.algebra import cancel
    v, e = (sp.sympify(x, strict=True) for x in (value, expected))
    holds = cancel(v - e) == 0
    if holds:
        return Law(True, meaning or f"{v} = {e}")
    said = f"the value is {v}, not {e}"
    names = {s.name for s in e.free_symbols} & {s.name for s in v.free_symbols}
    clashes = sorted(n for n in names if len({s for s in v.free_symbols | e.free_symbols
                                              if s.name == n}) > 1)
    if clashes:
        said += (f" ({', '.join(clashes)} has other assumptions on each side: symroof's sizes "
                 f'are positive symbols, sizes("{clashes[0]}"), not '
                 f'sympy.Symbol("{clashes[0]}"))')
    return Law(False, f"{meaning}: {said}" if meaning else said)


def _rational(x: Any) -> Any:
    """``x`` as an exact number: rationals and SymPy's finite real numbers as they are, a
    float as its shortest decimal, text through the formula parser."""
    if isinstance(x, sp.Basic) and not isinstance(x, sp.Rational):
        value = sp.sympify(x, strict=True)
        if not (value.is_number and value.is_finite and value.is_extended_real):
            raise InputError(f"needs finite real numbers, got {value}", "within()")
        return sp.Rational(str(value)) if value.is_Float else value
    return exact_number(x, "within()")


@dataclass
class Chapter(DerivationBuilder):
    """The builder ``claims(ch)`` receives: engine steps as in any derivation, plus the
    translation's inputs and the claims it adds."""

    inputs: Mapping[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    # the outputs of steps and definitions with the dimension their unit says, and the
    # outputs of steps with the operands they were computed from (``engine_results``)
    dimensioned: list[tuple[Any, tuple[int, int, int]]] = field(default_factory=list)
    operands: list[tuple[Any, Any]] = field(default_factory=list)

    def given(self, name: str, default: Any) -> Any:
        """The translation's input ``name`` (its ``[inputs]`` table), else ``default``."""
        self.used.add(name)
        return self.inputs.get(name, default)

    def define(self, title: str, name: str, value: Any, justification: str = "") -> Any:
        """Record a definition ``name = value`` and return the value. A value printed with
        its unit (``"1.97e14 FLOP/s"``, read as a stated value is) or given as
        :func:`quantity` is returned in base units, and has that dimension: a claim that
        states it in another is a MISMATCH that says so.

        >>> ch = Chapter("d", "D", Source("b"))
        >>> ch.define("the peak the text prints", "C", "1.9e14 FLOP/s"), ch.dimensioned
        (190000000000000, [(190000000000000, (0, 1, -1))])
        """
        plain, dims = _dimensioned(value, f"define {name}")
        out = super().define(title, name, plain, justification)
        if dims is not None:
            self.dimensioned.append((out, dims))
        return out

    def step(self, kind: str, title: str, input: Any, output: Any,
             justification: str = "") -> Any:
        """Record a step of one's own and return its output. An output given as
        :func:`quantity` has its unit's dimension; otherwise an output that is a product of
        whole powers of its ``input`` (one operand, or a tuple of them: ``(flops, peak)``
        for ``flops / peak``), exactly, takes the dimension those powers give, where the
        operands' are known (engine results, definitions with a unit, earlier steps). A
        number times a factor has none: 2 x a count of elements may be bytes.

        >>> from symroof import chip, einsum
        >>> ch = Chapter("d", "D", Source("b"))
        >>> rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
        >>> with recording() as made:  # as a chapter's claims(ch) runs
        ...     work = rl.at({"B": 4096, "D": 8192, "F": 8192}).op.flops
        >>> ch.made.extend(made)
        >>> peak = ch.define("the peak the text prints", "C", "1.9e14 FLOP/s")
        >>> t = ch.step("evaluate", "the time at that peak", (work, peak), work / peak)
        >>> engine_results(ch)[t], engine_results(ch)[work]
        ((0, 0, 1), (0, 1, 0))
        """
        plain, dims = _dimensioned(output, f"step {title!r}")
        out = super().step(kind, title, input, plain, justification)
        if dims is not None:
            self.dimensioned.append((out, dims))
        elif input is not None:
            self.operands.append((out, input))
        return out

    def with_choices(self, make: Any, of: str = "time",
                     editions: tuple[str, ...] | None = None, **choices: Any) -> Tried:
        """A value the judge can diagnose: ``make(choices)`` (or ``make.under(choices).of``
        for a collective) under the exact model, under the text's own ``choices`` when
        named (``collectives="leading", latency="off"``, noted in the write-up) and under
        the candidates of :data:`symroof.core.choices.CANDIDATES` and the chip table's other
        ``editions`` (labels of alternatives, such as ``("B1",)``; for a collective, by
        default the other editions of its links' figures, as its plain values get them)."""
        declared = EXACT.with_(**choices) if choices else None
        if declared is not None and declared != EXACT:
            said = "; ".join(f"{n} = {getattr(declared, n)}: {OPTIONS[n][getattr(declared, n)]}"
                             for n in declared.changed())
            if f"The text's choices: {said}." not in self.notes:
                self.note(f"The text's choices: {said}.")
        if hasattr(make, "under"):
            thing = make
            if type(thing).__name__ == "Collective" and thing not in self.collectives:
                self.collectives.append(thing)
            return tried(lambda c: getattr(thing.under(c), of), declared,
                         editions=link_editions(thing) if editions is None else editions)
        if not callable(make):
            raise InputError(f"with_choices takes a function of the choices or a collective, "
                             f"got {type(make).__name__}", "claims.py")
        return tried(make, declared, editions=editions or ())

    def add(self, **values: Any) -> None:
        """Add claims by id: each a value, a law, or a mark (measured, definition, ...)."""
        for key, value in values.items():
            if key in self.values:
                raise InputError("claim id added twice", f"claims.py: {key}")
            self.values[key] = value


def build_chapter(folder: Path) -> list[Derivation]:
    """One Derivation per translation table of a chapter folder, in file-name order, with
    the consistency findings of each text and across the translations attached."""
    folder = Path(folder)
    tables = sorted(p for p in folder.glob("*.toml") if _is_translation(p))
    if not (folder / "claims.py").is_file():
        raise InputError("a chapter folder needs claims.py", str(folder))
    if not tables:
        raise InputError("a chapter folder needs a translation table (ru.toml, ...)",
                         str(folder))
    module = _load(folder / "claims.py")
    built = [_translation(module, table) for table in tables]
    return find_conflicts(built)


@contextmanager
def _on_path(folder: Path) -> Iterator[None]:
    entry = str(folder.resolve())
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        if entry in sys.path:
            sys.path.remove(entry)


def _load(file: Path) -> ModuleType:
    name = f"symroof_chapter_{file.parent.name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InputError("cannot load as a Python module", str(file))
    module = importlib.util.module_from_spec(spec)
    with _on_path(file.parent):
        spec.loader.exec_module(module)
    if not callable(getattr(module, "claims", None)):
        raise InputError("defines no claims(ch) function", str(file))
    return module


def _is_translation(file: Path) -> bool:
    """Whether a ``.toml`` beside claims.py is a translation table: it has a ``[chapter]``
    table, or rows of claims (then its missing ``[chapter]`` is reported). Any other
    ``.toml`` (a chip catalogue claims.py reads) is data, not a translation."""
    table = read_table(file)
    if "chapter" in table:
        return True
    return any(isinstance(rows, dict) and any(isinstance(r, dict) and "stated" in r
                                              for r in rows.values())
               for rows in table.values())


def _translation(module: ModuleType, file: Path) -> Derivation:
    table = read_table(file)
    meta = table.get("chapter")
    if not isinstance(meta, dict):
        raise InputError("needs a [chapter] table (id, title, book, language, ...)", str(file))
    for key in ("id", "title", "book"):
        if not isinstance(meta.get(key), str):
            raise InputError(f"[chapter] needs {key} = \"...\"", str(file))
    language = str(meta.get("language", file.stem))
    src = Source(meta["book"], str(meta.get("chapter", "")), "", str(meta.get("seed", "")),
                 language)
    inputs = table.get("inputs", {})
    ch = Chapter(meta["id"], meta["title"], src, inputs=inputs)
    with _on_path(file.parent), recording() as helpers:
        module.claims(ch)
    ch.made.extend(helpers)
    for name in sorted(set(inputs) - ch.used):
        raise InputError("an input claims.py never reads", f"{file}: [inputs] {name}")
    rows = rows_of(table, file)
    check_figures(rows, str(file))
    for name in ("omits", "assumptions", "notes"):
        got = meta.get(name, [])
        if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
            raise InputError(f"[chapter] {name} must be a list of texts, got {got!r:.60}",
                             str(file))
    omits = set(meta.get("omits", []))
    prefix = str(meta.get("prefix", ""))
    for key in rows:
        if key not in ch.values:
            raise InputError("a claim claims.py does not add", f"{file}: {key}")
    missing = [key for key in ch.values if key not in rows and key not in omits]
    if len(missing) == 1:
        raise InputError("a claim of claims.py this table neither states nor omits",
                         f"{file}: {missing[0]}")
    if missing:  # every one at once: a new translation's table lacks them all
        raise InputError(f"{len(missing)} claims of claims.py this table neither states nor "
                         "omits (a row for each, or list it under [chapter] omits)",
                         f"{file}: {', '.join(missing)}")
    plain = restated_in(module, ch)
    made = engine_results(ch)
    data = {key: on_data(value) for key, value in ch.values.items()}
    claims = tuple(_claim(prefix + key, replace(src, section=section), row,
                          data[key][0] if key in plain or data[key][1]
                          else with_editions(ch.values[key], ch),
                          f"{file}: {key}", prefix, plain.get(key, ""),
                          data_dimension(ch.values[key]) if data[key][1]
                          else dimension_of(ch.values[key], ch, made), data[key][1])
                   for key, (section, row) in rows.items())
    check_stated(rows, str(file), language)
    ch.assumptions.extend(meta.get("assumptions", []))
    claims = own_figures(rounded_figures(claims), ch)
    ch.notes.extend(meta.get("notes", []))
    d = ch.build()
    known = tuple(sorted((str(k), str(v)) for k, v in meta.get("known", {}).items()))
    return replace(d, claims=claims, origin=str(file), known=known,
                   defines=_defines(meta, file))


def _defines(meta: Mapping[str, Any], file: Path) -> tuple[tuple[str, str, str], ...]:
    """``[chapter.defines]``: figure = { value = "as printed", place = "where" }."""
    table = meta.get("defines", {})
    if not isinstance(table, dict):
        raise InputError("defines is a table: figure = { value = ..., place = ... }",
                         f"{file}: [chapter] defines")
    out = []
    for figure, row in sorted(table.items()):
        if not isinstance(row, dict) or set(row) != {"value", "place"} or \
                not all(isinstance(v, str) for v in row.values()):
            raise InputError("needs { value = \"as printed\", place = \"where\" }",
                             f"{file}: [chapter.defines] {figure}")
        out.append((str(figure), row["value"], row["place"]))
    return tuple(out)


def rows_of(table: Mapping[str, Any], file: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    rows: dict[str, tuple[str, dict[str, Any]]] = {}
    for section, entries in table.items():
        if section in _META:
            continue
        if not isinstance(entries, dict):
            raise InputError("a section is a table of claims", f"{file}: {section}")
        for key, row in entries.items():
            where = f"{file}: {key}"
            if not isinstance(row, dict) or "stated" not in row or "quote" not in row:
                raise InputError("a claim row needs quote and stated", where)
            unknown = sorted(set(row) - _ROW)
            if unknown:
                raise InputError(f"unknown field {unknown[0]!r} (fields: "
                                 f"{', '.join(sorted(_ROW))})", where)
            if key in rows:
                raise InputError("claim stated twice", where)
            _check_fields(row, where)
            rows[key] = (section, row)
    return rows


# what each field of a claim row holds: text, a list of texts, or a table of texts;
# stated is text or a number (TOML's 240), tolerance a number or text
_TEXT, _TEXTS = (str,), "texts"
_FIELDS: dict[str, Any] = {
    "quote": _TEXT, "statement": _TEXT, "erratum": _TEXT, "right": _TEXT, "evidence": _TEXT,
    "meaning": _TEXT, "known": _TEXT, "unit": _TEXT, "assumes": (str, list), "figures_in": _TEXTS,
    "sums_up": _TEXTS, "stated": (str, int, float), "tolerance": (str, int, float),
    "figures": "table"}


def _check_fields(row: Mapping[str, Any], where: str) -> None:
    for name, value in row.items():
        want = _FIELDS.get(name, object)
        if want == "table":
            ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
            kind = "a table of texts (figure = \"value as printed\")"
        elif want == _TEXTS or (want == (str, list) and isinstance(value, list)):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            kind = "a list of texts"
        else:
            ok = isinstance(value, want) and not isinstance(value, bool)
            kind = "text" if want == _TEXT else "text or a list of texts" \
                if want == (str, list) else "text or a number"
        if not ok:
            raise InputError(f"{name} must be {kind}, got {value!r:.60}", where)
        if name == "stated" and isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"stated must be a finite number, got {value!r}", where)


def restated_in(module: ModuleType, ch: Chapter) -> dict[str, str]:
    """The claims of ``claims.py`` that restate a literal or an input (see
    :mod:`symroof.claims.restated`), and those whose value is an input itself."""
    file = getattr(module, "__file__", None)
    out = restated_folder(Path(file).parent) if isinstance(file, str) else {}
    for key, value in ch.values.items():
        for name in ch.used:
            if name in ch.inputs and value is ch.inputs[name] and \
                    not isinstance(value, bool | type(None)):
                out.setdefault(key, f"restates the input {name}")
    return out


def _claim(id: str, src: Source, row: Mapping[str, Any], value: Any, where: str,
           prefix: str, plain: str = "", dimension: tuple[int, int, int] | None = None,
           data: tuple[str, ...] = ()) -> Claim:
    options: dict[str, Any] = {"dimension": dimension, "measured": data}
    if isinstance(value, Quantity):
        value = value.value
    figures = row.get("figures", {})
    if not isinstance(figures, dict):
        raise InputError("figures is a table: figure = \"value as printed\"", where)
    options["figures"] = tuple(sorted((str(k), str(v)) for k, v in figures.items()))
    options["sums_up"] = tuple(prefix + str(k) for k in row.get("sums_up", []))
    stated = str(row["stated"])
    if "unit" in row:  # the unit of a number the text prints bare
        stated = declared(stated, row["unit"], src.language, f"{where}: unit")
    if isinstance(value, Measured):
        kind, evidence = "measurement", row.get("evidence", value.evidence)
        if not evidence:
            raise InputError("a measurement needs its evidence", where)
        options["evidence"] = evidence
        value = None
    elif isinstance(value, Defined):
        kind, value = "definition", value.value
    elif plain and not isinstance(value, Assumed) and not data:
        kind, options["restates"] = "definition", f"no engine computation: {plain}"
    else:
        if isinstance(value, Assumed):
            options["assumed"] = value.assumption
            value = value.value
        try:
            kind = kind_of(stated, value, src.language)
        except InputError as exc:  # a number beyond a formula's limits
            raise InputError(exc.message, f"{where}: stated") from None
        if kind == "qualitative" and not isinstance(value, Law):
            why = refusal(stated, src.language)
            if why is not None:
                raise InputError(why, f"{where}: stated")
            raise InputError(f"cannot read the stated value {stated!r:.60} as a number, an "
                             "expression or a relation (words need a law in claims.py)",
                             f"{where}: stated")
    if "meaning" in row and not isinstance(value, Law):
        raise InputError("meaning says what a law decides; this claim's value is not a law",
                         f"{where}: meaning")
    if isinstance(value, Law) and row.get("meaning"):
        value = replace(value, meaning=f"{row['meaning']}: {value.meaning}"
                        if value.meaning else str(row["meaning"]))
    if "erratum" in row:
        options["erratum"] = Erratum(str(row["erratum"]), str(row.get("right", "")))
    if "tolerance" in row:
        options["tolerance"] = tolerance_of(row["tolerance"], f"{where}: tolerance")
    if "assumes" in row:
        assumes = row["assumes"]
        options["assumptions"] = (assumes,) if isinstance(assumes, str) \
            else tuple(assumes)  # _check_fields made it a list of texts
    try:
        return Claim(id, src, str(row.get("statement", "")), str(row["quote"]), stated,
                     None, kind, value=value, **options)
    except InputError as exc:  # named by the table's row, not by the claim built from it
        inner = (exc.where or "").partition(": ")[2]
        raise InputError(exc.message, f"{where}: {inner}" if inner else where) from None


def kind_of(stated: str, value: Any, language: str = "en") -> str:
    """The kind a claim's stated value and value give it.

    >>> kind_of("240", 1), kind_of("B > 240", None), kind_of("2*B", None), kind_of("pcie", "x")
    ('number', 'relation', 'expr', 'label')
    """
    if isinstance(value, Law):
        return "qualitative"
    if isinstance(value, str):
        return "label"
    if read(stated, language) is not None:
        return "number"
    if any(op in stated for op in ("<", ">", "=")):
        return "relation"
    try:
        expr = parse_expr(stated)
    except InputError:
        return "qualitative"
    return "number" if expr.is_Rational else "expr"
