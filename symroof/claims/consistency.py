"""Consistency across a text: every figure it prints, and where it contradicts itself.

>>> from symroof.claims.model import Claim, Derivation, Source
>>> src = Source("book", language="en")
>>> def c(id, figure):
...     return Claim(id, src, "", "", "1", None, value=1, figures=(("HBM", figure),))
>>> d = Derivation("t", "t", src, claims=(c("a", "8.2e11 B/s"), c("b", "8.1e11 B/s")))
>>> [k.describe() for k in find_conflicts([d])[0].conflicts]
['HBM printed as 8.1e11 B/s in b; 8.2e11 B/s in a']

Three kinds of finding, each naming both places: one text printing two values for one
figure (a chip's HBM bandwidth, a constant), a summary whose value contradicts the passage
it sums up (``sums_up``), and two translations printing different values for one claim.
Values agree when they agree at their printed precision (``1e15`` and ``9.89e14`` do,
``8.1e11`` and ``8.2e11`` do not). A finding the text's table marks as known (``[chapter]
known``, by figure) is listed with its reason and leaves the claims' verdicts alone; an
unknown one makes them INCONSISTENT. Where the table names the place that defines a figure
(``[chapter.defines]``: its value and place, such as the text's chip table), the claims that
use the defining value hold with the conflict noted, and only the others are INCONSISTENT.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr, parse_relation
from .model import Claim, Conflict, Derivation
from .stated import Stated, read, relation_formula


def find_conflicts(derivations: Iterable[Derivation]) -> list[Derivation]:
    """The derivations with their figure registry and conflicts attached (to each
    derivation and to each claim involved)."""
    ds = list(derivations)
    found: dict[str, list[Conflict]] = {d.id: [] for d in ds}
    registries = {}
    for d in ds:
        registry = registry_of(d)
        check_defines(d, registry)
        registries[d.id] = registry
        found[d.id] += [k for k in registry if len(k.values) > 1]
        found[d.id] += _summaries(d)
    for conflict in _translations(ds):
        for d in ds:
            ids = {i for _, group in conflict.values for i in group}
            if any(c.id in ids for c in d.claims):
                found[d.id].append(conflict)
    out = []
    for d in ds:
        known = dict(d.known)
        conflicts = tuple(_defined(replace(k, known=known.get(k.figure, k.known)), d)
                          for k in found[d.id])
        claims = tuple(_attach(c, conflicts) for c in d.claims)
        out.append(replace(d, claims=claims, conflicts=conflicts,
                           figures=registries[d.id]))
    return out


def conflicts_of(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every conflict of verdict rows (``Verdict.to_json``), once, in the order found.

    >>> k = {"figure": "HBM", "text": "t", "known": None, "values": []}
    >>> conflicts_of([{"conflicts": [k]}, {"conflicts": [k]}]) == [k]
    True
    """
    out: list[dict[str, Any]] = []
    for row in rows:
        for k in row.get("conflicts") or []:
            if k not in out:
                out.append(k)
    return out


def registry_of(d: Derivation) -> tuple[Conflict, ...]:
    """Every figure the text prints, with its values and the claims that print each (one
    value when the text is consistent)."""
    uses: dict[str, list[tuple[str, str]]] = {}
    for c in d.claims:
        for figure, value in c.figures:
            uses.setdefault(figure, []).append((value, c.id))
    registry = []
    for figure in sorted(uses):
        groups: list[tuple[str, list[str]]] = []
        for value, cid in uses[figure]:
            for shown, ids in groups:
                if agree(shown, value, d.source.language):
                    ids.append(cid)
                    break
            else:
                groups.append((value, [cid]))
        values = tuple(sorted((v, tuple(ids)) for v, ids in groups))
        registry.append(Conflict(figure, values, d.id))
    return tuple(registry)


def _summaries(d: Derivation) -> list[Conflict]:
    by_id = {c.id: c for c in d.claims}
    out = []
    for c in d.claims:
        for key in c.sums_up:
            passage = by_id.get(key)
            if passage is None:
                raise InputError("sums up a claim the text does not state",
                                 f"{d.origin or d.id}: {c.id}: sums_up {key}")
            if not agree(c.stated, passage.stated, d.source.language):
                out.append(Conflict(f"summary {c.id} of {passage.id}",
                                    ((c.stated, (c.id,)), (passage.stated, (passage.id,))),
                                    d.id))
    return out


def _translations(ds: list[Derivation]) -> list[Conflict]:
    """One claim id printed with different values by two translations."""
    if len(ds) < 2:
        return []
    keyed: dict[str, list[tuple[Derivation, Claim]]] = {}
    for d in ds:
        for c in d.claims:
            keyed.setdefault(_key(d, c), []).append((d, c))
    out = []
    for key in keyed:
        pairs = keyed[key]
        if len(pairs) < 2 or pairs[0][1].kind in ("qualitative", "label", "measurement"):
            continue
        (d0, c0), rest = pairs[0], pairs[1:]
        if all(agree(c0.stated, c.stated, d0.source.language, d.source.language)
               for d, c in rest):
            continue
        values = tuple((f"{c.stated} ({d.source.language})", (c.id,)) for d, c in pairs)
        out.append(Conflict(f"{key} across translations", values,
                            ", ".join(d.id for d, _ in pairs)))
    return out


def _key(d: Derivation, c: Claim) -> str:
    """A claim's id without its translation's prefix (``ru_`` in ``ru_ridge``)."""
    lang = d.source.language
    return c.id[len(lang) + 1:] if c.id.startswith(f"{lang}_") else c.id


def check_defines(d: Derivation, registry: tuple[Conflict, ...]) -> None:
    """Every ``[chapter.defines]`` entry names a figure the text prints, with a value the
    text prints for it; else an InputError naming the table and the figure."""
    where = f"{d.origin or d.id}: [chapter.defines]"
    printed = {k.figure: k for k in registry}
    for figure, value, _ in d.defines:
        k = printed.get(figure)
        if k is None:
            names = ", ".join(sorted(printed)) or "none"
            raise InputError(f"defines the figure {figure!r}, which no row of this table "
                             f"prints (its figures: {names})", where)
        if not any(agree(v, value, d.source.language) for v, _ in k.values):
            shown = "; ".join(v for v, _ in k.values)
            raise InputError(f"defines {figure!r} as {value!r}, which no row prints (printed: "
                             f"{shown})", where)


def _defined(k: Conflict, d: Derivation) -> Conflict:
    """The conflict with the place that defines its figure, and the claims that use the
    value defined there (they hold, with the conflict noted; the others are INCONSISTENT)."""
    for figure, value, place in d.defines:
        if figure == k.figure:
            ids = tuple(i for v, group in k.values if agree(v, value, d.source.language)
                        for i in group)
            return replace(k, defined_by=place, defining=value, agreeing=ids)
    return k


def _attach(c: Claim, conflicts: tuple[Conflict, ...]) -> Claim:
    mine = tuple(k for k in conflicts if any(c.id in ids for _, ids in k.values))
    return replace(c, conflicts=mine) if mine else c


def agree(a: str, b: str, lang_a: str = "en", lang_b: str | None = None) -> bool:
    """Whether two printed values can be the same value at their printed precision.

    >>> agree("1e15", "9.89e14"), agree("8.1e11", "8.2e11"), agree("B > 240", "B > 243")
    (True, False, False)
    >>> agree("120", "B > 120"), agree("120", "B > 122")
    (True, False)
    """
    lang_b = lang_b or lang_a
    x, y = _number(a, lang_a), _number(b, lang_b)
    if x is not None and y is not None:
        return bool(abs(x.value - y.value) < x.half_unit + y.half_unit) or x.value == y.value
    ra, rb = _relation(a, lang_a), _relation(b, lang_b)
    if ra is not None and rb is not None:
        if ra[0] != rb[0]:
            return False
        return agree(ra[1], rb[1], lang_a, lang_b)
    # a number and a relation state the same bound (a summary's 120, its passage's B > 120)
    if ra is not None and y is not None:
        return agree(ra[1], b, lang_a, lang_b)
    if rb is not None and x is not None:
        return agree(a, rb[1], lang_a, lang_b)
    try:
        ea, eb = parse_expr(a), parse_expr(b)
    except InputError:
        return a.strip() == b.strip()
    return bool(sp.expand(sp.numer(sp.together(ea - eb))) == 0)


def _number(text: str, lang: str) -> Stated | None:
    got = read(text, lang)
    if got is not None:
        return got
    try:
        value = parse_expr(text)
    except InputError:
        return None
    return Stated(value, sp.Integer(0)) if value.is_Rational else None


def _relation(text: str, lang: str = "en") -> tuple[str, str] | None:
    """(symbol side and direction, bound as printed) of ``B > 240``."""
    for op in (">=", "<=", ">", "<"):
        if op in text:
            lhs, rhs = text.split(op, 1)
            try:
                parse_relation(relation_formula(text, lang))
            except InputError:
                return None
            return f"{lhs.strip()} {op[0]}", rhs.strip()
    return None
