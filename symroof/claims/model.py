"""The data model of a derivation: sources, claims, errata, and the steps a write-up shows.

>>> from symroof import chip, einsum
>>> d = Derivation.begin("demo", "A matmul on TPU v5e", Source("How To Scale Your Model",
...                      "1", "Rooflines", seed="000", language="ru"))
>>> rl = d.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> c = d.claim("ridge", stated="240", statement="critical intensity of v5e in bf16",
...             quote="B > 240", derive=lambda: rl.ridge)
>>> [s.kind for s in d.build().steps][:2]
['define', 'define']

A derivation module defines ``build() -> Derivation``; a chapter folder holds a
language-free ``claims.py`` and one table per translation (:mod:`symroof.claims.chapter`).
Either states what the text says and how to derive it; the verdict is the engine's
(:mod:`symroof.claims.rules`), never the module's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import InputError
from ..core.parse import exact_number, parse_expr, parse_relation
from ..core.steps import Step
from ..engine.asymptotics import Expansion, Regime, expansion
from ..engine.ops import Op
from ..engine.rooflines import Roofline, roofline
from ..engine.thresholds import Threshold, threshold
from ..hardware.catalog import Chip
from .stated import (
    TOLERANCE,
    Stated,
    bare_bound,
    bare_refusal,
    formula_tail_refusal,
    read,
    refusal,
    relation_formula,
    stray_comma,
    with_unit,
)

CLAIM_KINDS = ("number", "expr", "relation", "qualitative", "label", "measurement", "definition")
_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*\Z")


@dataclass(frozen=True)
class Source:
    """Where a claim is printed."""

    book: str
    chapter: str = ""
    section: str = ""
    seed: str = ""
    language: str = "en"

    def cite(self) -> str:
        parts = [self.book, f"ch. {self.chapter}" if self.chapter else "",
                 f"“{self.section}”" if self.section else "",
                 f"seed {self.seed}" if self.seed else ""]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class Erratum:
    """A known error of the text: why it is wrong, and the right value in words.

    The right value itself is the engine's derived value; ``right`` says it as a reader
    would ("+2 b_m b_n, not -2 b_m b_n")."""

    why: str
    right: str = ""


def truth(condition: Any, where: str) -> bool:
    """A law's condition as a bool: Python's or SymPy's True and False only (NaN, a number
    or an undecided relation is an InputError, never truthy).

    >>> truth(sp.Integer(2) > 1, "law"), truth(False, "law")
    (True, False)
    """
    if isinstance(condition, bool):
        return condition
    if condition is sp.true or condition is sp.false:
        return bool(condition)
    if type(condition).__name__ == "bool_":  # NumPy's
        return bool(condition)
    raise InputError(f"a law's condition must be True or False, got {condition!r:.60}", where)


@dataclass(frozen=True)
class Law:
    """A yes/no fact the engine derives (``degree == 1``), with what it means.

    >>> Law(True, "linear in B").holds
    True
    """

    holds: bool
    meaning: str
    shown: str = ""  # the derived value the law is about, as a write-up shows it


@dataclass(frozen=True)
class Conflict:
    """One figure (or one claim) printed with two values: each value with the claims that
    use it, as ``(value, (claim id, ...))`` pairs, and where they are. ``known`` says why a
    conflict is accepted; an unknown one makes its claims INCONSISTENT."""

    figure: str
    values: tuple[tuple[str, tuple[str, ...]], ...]
    text: str = ""  # the derivation (or derivations) it was found in
    known: str = ""
    defined_by: str = ""  # the place that defines the figure (the text's table, a spec line)
    defining: str = ""  # the value that place prints
    agreeing: tuple[str, ...] = ()  # the claims that use the defining value

    def describe(self, claim: str = "") -> str:
        others = "; ".join(f"{v} in {', '.join(ids)}" for v, ids in self.values)
        place = f"; {self.defined_by} defines {self.defining}" if self.defined_by else ""
        return f"{self.figure} printed as {others}{place}"

    def to_json(self) -> dict[str, Any]:
        return {"figure": self.figure, "text": self.text, "known": self.known or None,
                "values": [{"value": v, "claims": list(ids)} for v, ids in self.values],
                "defined_by": self.defined_by or None, "defining": self.defining or None,
                "agreeing": list(self.agreeing)}


@dataclass(frozen=True, repr=False)
class Claim(tb.RichView):
    """What a text states, next to how to derive it.

    ``stated`` is the value as printed, written in formula syntax: a number (``240``,
    ``9.89e14``, ``13.9%``), an expression (``(2*N - 1)/(4*N + 2)``), a relation
    (``B > 240``), a label (``memory``) or, for a qualitative claim, the words
    (``nearly twice``) that a :class:`Law` decides (or ``within`` spells out as an
    interval). ``value`` is the engine's value (``derive``, a function, computes it late in
    the module-with-build() form). A ``measurement`` cannot be derived: it is recorded
    with its ``evidence``. ``assumed`` names an input the text does not give that was
    chosen because it reproduces the stated value: the claim is then UNVERIFIABLE, with
    what the assumption gives. ``conflicts`` are the consistency findings it is part of.
    """

    id: str
    source: Source
    statement: str
    quote: str
    stated: str
    derive: Callable[[], Any] | None = None
    kind: str = "number"
    within: tuple[sp.Rational, sp.Rational] | None = None
    meaning: str = ""
    erratum: Erratum | None = None
    tolerance: sp.Rational = TOLERANCE
    evidence: str = ""
    value: Any = None
    assumed: str = ""
    assumptions: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    figures: tuple[tuple[str, str], ...] = ()  # (figure, value as printed) of the passage
    sums_up: tuple[str, ...] = ()  # ids of the claims a summary restates
    restates: str = ""  # what a value made without computation restates (a DEFINITION)
    # the (byte, FLOP, second) exponents of the derived value, when the engine made it
    dimension: tuple[int, int, int] | None = None
    # the measured numbers (as printed in claims.py) its value is computed from
    measured: tuple[str, ...] = ()
    # the numbers its text printed rounded: (claim id, as printed, stated over derived)
    rounded: tuple[tuple[str, str, str], ...] = ()
    # its value made again with an earlier claim's stated value for that claim's derived
    # one, where the chapter shows the one made from the other: (claim id, as printed,
    # its derived value, this claim's value made again), exact values as text
    follows: tuple[tuple[str, str, str, str], ...] = ()
    # the stated value as the table of printed numbers reads it (None: not a number)
    reading: Stated | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = f"claim {self.id!r}"
        try:
            object.__setattr__(self, "reading", read(self.stated, self.source.language))
        except InputError:
            if self.kind == "number":
                raise
        if not _ID.match(self.id):
            raise InputError("claim ids are lower-case letters, digits, '_', '.', '-'", where)
        if self.kind in ("number", "definition"):
            bare = bare_refusal(self.reading, self.dimension, self.stated)
            if bare is not None:
                raise InputError(bare, f"{where}: stated")
        if self.kind in ("relation", "definition") and self.reading is None:
            bound = bare_bound(self.stated, self.source.language)
            bare = None if bound is None else bare_refusal(
                read(bound[1], self.source.language), self.dimension, bound[1], self.stated,
                self.source.language)
            if bare is not None:  # a relation's bound, printed bare against a time
                raise InputError(bare, f"{where}: stated")
        if self.kind not in CLAIM_KINDS:
            raise InputError(f"unknown kind {self.kind!r} (kinds: {', '.join(CLAIM_KINDS)})", where)
        if self.kind == "measurement":
            if not self.evidence:
                raise InputError("a measurement needs its evidence (where it was measured)",
                                 where)
        elif self.derive is None and self.value is None:
            raise InputError("a claim needs a value (or derive=)", where)
        if self.kind == "qualitative" and not isinstance(self.value, Law) and \
                (self.within is None or not self.meaning):
            raise InputError("a qualitative claim needs a law (or within=(lo, hi) and "
                             "meaning=)", where)
        if self.kind == "number" and self.reading is None:
            if not parse_expr(self.stated, where=f"{where}: stated").is_Rational:
                raise InputError(f"cannot read the stated value {self.stated!r} as a "
                                 "number", f"{where}: stated")
        elif self.kind in ("expr", "relation"):
            text = self.stated if self.kind == "expr" else \
                relation_formula(self.stated, self.source.language)
            try:
                (parse_expr if self.kind == "expr" else parse_relation)(
                    text, where=f"{where}: stated")
            except InputError:
                why = stray_comma(self.stated, self.source.language)
                if why is None and self.kind == "relation":  # a formula, words after it
                    why = formula_tail_refusal(self.stated, self.source.language)
                if why is None and self.kind == "relation":  # a bound in no unit read
                    why = next(filter(None, (refusal(side.strip(), self.source.language)
                                             for side in re.split(r"[<>]=?", self.stated,
                                                                  maxsplit=1))), None)
                if why is None:
                    raise
                raise InputError(why, f"{where}: stated") from None


    def _view(self) -> tuple[str, tb.Table]:
        rows = [("statement", self.statement), ("stated", self.stated), ("kind", self.kind),
                ("source", self.source.cite()), ("quote", self.quote)]
        if self.erratum is not None:
            rows.append(("known erratum", self.erratum.why))
        return f"claim {self.id}", tb.key_values(rows)


@dataclass(frozen=True)
class Curve:
    """A figure a derivation asks for: attainable FLOP/s of ``roofline`` against ``symbol``
    over ``span``, one line per assignment of the other sizes in ``fixed``."""

    roofline: Roofline
    symbol: str
    fixed: tuple[Mapping[str, Any], ...]
    span: tuple[float, float]
    title: str


@dataclass(frozen=True, repr=False)
class Derivation(tb.RichView):
    """A chapter or topic, encoded: its claims and the steps that derive them. Its plain
    form is one line; in a notebook it shows a table of its claims."""

    id: str
    title: str
    source: Source
    claims: tuple[Claim, ...] = ()
    steps: tuple[Step, ...] = ()
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    rooflines: tuple[Roofline, ...] = ()
    expansions: tuple[Expansion, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    curves: tuple[Curve, ...] = ()
    origin: str = ""  # the file it was loaded from, when it was
    conflicts: tuple[Conflict, ...] = ()  # consistency findings (symroof.claims.consistency)
    figures: tuple[Conflict, ...] = ()  # every figure the text prints, with its claims
    known: tuple[tuple[str, str], ...] = ()  # (figure, why) of conflicts accepted as known
    defines: tuple[tuple[str, str, str], ...] = ()  # (figure, value, place) the text defines

    def __repr__(self) -> str:
        return (f"<Derivation {self.id!r}: {len(self.claims)} claims, {len(self.steps)} steps, "
                f"{len(self.rooflines)} rooflines>")

    def _view(self) -> tuple[str, tb.Table]:
        rows = tuple((tb.cell(tb.code(c.id)), tb.cell(tb.text(c.statement)),
                      tb.cell(tb.text(c.stated)), tb.cell(tb.text(c.kind)))
                     for c in self.claims)
        table = tb.Table((tb.Column("claim"), tb.Column("statement"), tb.Column("stated"),
                          tb.Column("kind")), rows)
        return (f"{self.title}: {len(self.claims)} claims, {len(self.steps)} steps "
                "(verify it for verdicts)", table)

    @staticmethod
    def begin(id: str, title: str, source: Source) -> DerivationBuilder:
        """Start building a derivation: engine calls through the builder record steps."""
        return DerivationBuilder(id, title, source)


@dataclass
class DerivationBuilder:
    """Collects claims and steps while a derivation module runs."""

    id: str
    title: str
    source: Source
    claims: list[Claim] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rooflines: list[Roofline] = field(default_factory=list)
    expansions: list[Expansion] = field(default_factory=list)
    thresholds: list[Threshold] = field(default_factory=list)
    curves: list[Curve] = field(default_factory=list)
    # the collectives it recorded, and what the engine's helpers made meanwhile (value,
    # dimension): where a claim's value gets its dimension (symroof.claims.chapter)
    collectives: list[Any] = field(default_factory=list)
    made: list[tuple[Any, Any]] = field(default_factory=list)

    def assume(self, text: str) -> None:
        self.assumptions.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def step(self, kind: str, title: str, input: Any, output: Any,
             justification: str = "") -> Any:
        """Record a step of one's own and return its output."""
        self.steps.append(Step(kind, title, input, output, justification))
        return output

    def define(self, title: str, name: str, value: Any, justification: str = "") -> Any:
        """Record a definition ``name = value`` and return the value."""
        from ..core.parse import symbol
        self.steps.append(Step("define", title, symbol(name), value, justification))
        return value

    def roofline(self, op: Op, chip: Chip, **kwargs: Any) -> Roofline:
        rl = roofline(op, chip, **kwargs)
        self.rooflines.append(rl)
        self.steps.extend(replace(s, title=f"{op.name}: {s.title}") for s in rl.steps)
        return rl

    def expansion(self, expr: sp.Expr, regime: Regime | str, title: str = "") -> Expansion:
        x = expansion(expr, regime)
        self.expansions.append(x)
        self.steps.extend(replace(s, title=f"{title}: {s.title}" if title else s.title)
                          for s in x.steps)
        return x

    def threshold(self, rl: Roofline, symbol: str, **kwargs: Any) -> Threshold:
        t = threshold(rl, symbol, **kwargs)
        self.thresholds.append(t)
        self.steps.extend(replace(s, title=f"{rl.op.name}: {s.title}") for s in t.steps)
        return t

    def between(self, rl: Roofline, first: str, second: str, symbol: str,
                **kwargs: Any) -> Threshold:
        """Where the terms ``first`` and ``second`` of ``rl`` meet, solved for ``symbol``
        (:func:`symroof.engine.thresholds.between`), its steps recorded for the write-up."""
        from ..engine.thresholds import between
        t = between(rl, first, second, symbol, **kwargs)
        self.thresholds.append(t)
        self.steps.extend(replace(s, title=f"{rl.op.name}: {s.title}") for s in t.steps)
        return t

    def collective(self, kind: str, nbytes: Any, axes: Any, on: Any, **kwargs: Any) -> Any:
        """A collective (:func:`symroof.parallel.collectives.collective`) with its terms
        recorded as steps for the write-up: bytes per device, bandwidth and latency terms,
        and their sum."""
        from ..parallel.collectives import collective
        c = collective(kind, nbytes, axes, on, **kwargs)
        self.collectives.append(c)
        for title, name, value, why in (
                ("bytes each device sends", "bytes_per_device", c.bytes_per_device,
                 "the stages' bytes summed"),
                ("bandwidth term", "T_bandwidth", c.bandwidth_time,
                 "each stage's bytes / its link's one-way bandwidth per chip"),
                ("latency term", "T_latency", c.latency_time,
                 f"{sp.sstr(c.hops)} hops x the per-hop latency"),
                ("time", "T", c.time, "bandwidth term + latency term")):
            self.define(f"{c.title}: {title}", name, value, why)
        return c

    def curve(self, rl: Roofline, symbol: str, fixed: list[Mapping[str, Any]],
              span: tuple[float, float], title: str) -> Curve:
        """Ask the write-up for a threshold-curve figure."""
        made = Curve(rl, symbol, tuple(dict(f) for f in fixed), span, title)
        self.curves.append(made)
        return made

    def holds(self, condition: Any, meaning: str) -> Law:
        """A yes/no law for a claim stated in words (``sp.degree(x, B) == 1``)."""
        return Law(truth(condition, f"holds({meaning!r})"), meaning)

    def claim(self, id: str, *, stated: str, statement: str, quote: str,
              derive: Callable[[], Any] | None = None, section: str | None = None,
              source: Source | None = None, **options: Any) -> Claim:
        """Add a claim; ``section`` overrides the derivation source's section, and
        ``unit="ms"`` says the unit of a stated number the text prints bare (a table row's
        ``unit``)."""
        src = source or self.source
        if section is not None:
            src = replace(src, section=section)
        if any(c.id == id for c in self.claims):
            raise InputError("claim id used twice", f"derivation {self.id!r}: claim {id!r}")
        unit = options.pop("unit", None)
        if unit is not None:
            stated = declared(stated, unit, src.language, f"claim {id!r}: unit")
        made = Claim(id, src, statement, quote, stated, derive,
                     **_options(options, f"claim {id!r}"))
        self.claims.append(made)
        return made

    def build(self) -> Derivation:
        return Derivation(self.id, self.title, self.source, tuple(self.claims),
                          tuple(self.steps), tuple(self.assumptions), tuple(self.notes),
                          tuple(self.rooflines),
                          tuple(self.expansions), tuple(self.thresholds), tuple(self.curves))


def tolerance_of(value: Any, where: str) -> sp.Rational:
    """A claim's relative tolerance: an exact number in [0, 1), read by the formula
    parser (text never reaches ``sympify``).

    >>> tolerance_of(0.05, "t"), tolerance_of("1/50", "t")
    (1/20, 1/50)
    """
    got = exact_number(value, where)
    if not 0 <= got < 1:
        raise InputError(f"a tolerance is a fraction in [0, 1), got {value!r:.60}", where)
    return got


def declared(stated: Any, unit: Any, language: str, where: str) -> str:
    """A stated number printed bare, read in the unit its claim declares (``unit``): the
    stated text as the judge reads it (:func:`symroof.claims.stated.with_unit`).

    >>> declared("22.0", "ms", "en", "claim 't': unit")
    '22.0 ms'
    """
    if not isinstance(unit, str):
        raise InputError(f"unit must be text (a unit such as \"ms\"), got {unit!r:.60}", where)
    try:
        return with_unit(str(stated), unit, language)
    except InputError as exc:
        raise InputError(exc.message, where) from None


def _options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    out = dict(options)
    if "within" in out and out["within"] is not None:
        if not isinstance(out["within"], tuple | list) or len(out["within"]) != 2:
            raise InputError("within is a pair (lo, hi)", f"{where}: within")
        lo, hi = out["within"]
        out["within"] = (exact_number(lo, f"{where}: within"),
                         exact_number(hi, f"{where}: within"))
    if "tolerance" in out:
        out["tolerance"] = tolerance_of(out["tolerance"], f"{where}: tolerance")
    return out
