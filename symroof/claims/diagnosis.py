"""Diagnosis: when a claim does not hold as derived, which named choice or usual slip does.

>>> judged_number("≈0.72 ms", sp.Rational(707, 10**6)).verdict
<Verdict.APPROX: 'APPROX'>
>>> j = judged_number("8 GB", 8 * 2**30)
>>> j.verdict, j.detail
(<Verdict.MISMATCH: 'MISMATCH'>, 'derived 8.58993 GB, stated 8 GB; the stated 8 GB is 8 GiB')

The comparison of a claim (``RULES`` of :mod:`symroof.claims.rules`) is followed by two
steps, each a table:

- a number marked approximate (``≈``, ``~``, "about", "около", "примерно", "约") that is
  outside its printed precision but within ``APPROX_LIMIT`` (5%) reads APPROX, with the
  distance; beyond it, a MISMATCH as before;
- a MISMATCH (or an APPROX) is tried against the value's alternatives: a claim whose value
  was made with :func:`symroof.core.choices.tried` (``ch.with_choices`` in a chapter)
  carries its value under each candidate choice. The first that reproduces the stated
  value within its printed precision names it: a modelling choice makes the claim
  SIMPLIFIED ("holds as the leading term in n: the text drops (n-1)/n and the hop
  latency"); a slip (a one-way figure for a ring that sends both ways) stays a MISMATCH,
  named in its detail. The unit slips of ``UNIT_SLIPS`` (GB for GiB, kB for KiB) are tried
  on every stated number with a unit.

Each diagnosis is recorded as ``{choice, kind, meaning, said, value, value_value}``
(``said``: the sentence a verdict's detail gives; ``also``, when other choices reproduce
the value too).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import sympy as sp

from ..core.choices import SLIPS, Choices, Tried, dropped
from ..core.errors import SymroofError
from ..core.parse import parse_number
from ..core.printer import text
from .model import Claim
from .rules import (
    RULES,
    Judgement,
    Verdict,
    _exact_number,
    as_quantity,
    dimension_clash,
    judge_number,
    printed,
    shown_number,
)
from .stated import UNIT_WORDS, read

APPROX_LIMIT = sp.Rational(5, 100)
MISMATCH, APPROX, SIMPLIFIED = Verdict.MISMATCH, Verdict.APPROX, Verdict.SIMPLIFIED
# a decimal byte prefix and its binary namesake, both ways: what a slip of the unit reads
_PREFIXES = (("k", "Ki"), ("K", "Ki"), ("M", "Mi"), ("G", "Gi"), ("T", "Ti"), ("P", "Pi"))
UNIT_SLIPS: dict[str, str] = {**{f"{d}B": f"{b}B" for d, b in _PREFIXES},
                              **{f"{b}B": f"{d}B" for d, b in _PREFIXES if d != "K"}}
_UNIT = re.compile(r"^([A-Za-z]+B)(/s)?$")
# the phrase a SIMPLIFIED verdict uses for a choice ("holds as the leading term in n")
HOLDS_AS: dict[tuple[str, str], str] = {
    ("collectives", "leading"): "as the leading term in n",
    ("flops", "per_token_2P"): "as 2 FLOPs per parameter per token",
    ("flops", "per_token_6P"): "as 6 FLOPs per parameter per token",
    ("flops", "causal"): "with causal attention",
    ("memory", "weights"): "counting the weights alone",
    ("memory", "states"): "counting the weights, gradients and optimizer state",
    ("kv_dtype", "fp8"): "with the KV cache in fp8",
    ("kv_dtype", "int8"): "with the KV cache in int8"}
# the words a MISMATCH uses for a slip that drops a factor the exact model keeps (what it
# drops, and the text's form), which it then gives back ("right: ...")
DROPS_AS: dict[tuple[str, str], tuple[str, str]] = {
    ("collectives", "v_over_w"): ("the text drops the ring's 2(n-1)/n", "V/W")}


def judged(claim: Claim, derived: Any, where: str) -> Judgement:
    """The comparison of ``claim`` with ``derived`` (a :class:`Tried` value is compared
    by its own value), then the approximate mark, then the diagnosis."""
    tried = derived if isinstance(derived, Tried) else None
    value = tried.value if tried is not None else derived
    try:
        j = RULES[claim.kind](claim, value, where)
    except SymroofError:
        if tried is None or not getattr(value, "free_symbols", None):
            raise
        # the exact model keeps a symbol the text has no figure for (a link's hop latency):
        # the choices the text applies (latency off) may still reproduce its value
        shown = text(value)
        missed = Judgement(MISMATCH, shown, None, None,
                           f"the exact value {shown} is not a number")
        found = _by_choices(claim, missed, tried, where)
        if found is missed:
            raise
        return found
    numeric = claim.kind in ("number", "definition") and claim.reading is not None and \
        not isinstance(value, sp.Rel)
    if numeric and dimension_clash(claim):  # another quantity: no choice or slip makes it
        return j
    if numeric and j.derived:
        j = replace(j, derived=derived_text(claim.stated, value, claim.source.language,
                                            claim.dimension))
    if not numeric:
        return _by_choices(claim, j, tried, where) if j.verdict == MISMATCH else j
    j = approximate(claim.stated, j, value, where, claim.source.language)
    if j.verdict not in (MISMATCH, APPROX):
        return j
    # a marked approximation that holds within 5% may still be a named choice, not a slip
    found = _by_choices(claim, j, tried, where, slips=j.verdict == MISMATCH)
    if found is not j or j.verdict == APPROX:
        return found
    slipped = unit_slip(claim.stated, j, value, where, claim.source.language)
    if slipped is not j:
        return slipped
    slipped = carried(claim, j, value, where)
    if slipped is not j:
        return slipped
    return hand_slip(claim.stated, j, value, where, claim.source.language, claim.dimension)


def carried(claim: Claim, j: Judgement, derived: Any, where: str) -> Judgement:
    """A MISMATCH that follows from a figure the same text printed: rounded, and printed
    again in the claim's quote (``rounded``: the claim's value scaled by that figure's
    stated over derived, or by its inverse), or stated by an earlier claim other than
    derived, from which the chapter shows this value made (``follows``: the value made
    again with that stated figure). It stays a MISMATCH, and its detail names the figure,
    the claim that states it and the right value; a claim whose derived value holds is
    never told so (this runs on a MISMATCH only)."""
    if j.verdict != MISMATCH or not (claim.rounded or claim.follows):
        return j
    try:
        d = _exact_number(derived, where)
    except SymroofError:
        return j
    p = printed(claim.stated, where, claim.source.language)
    right = _shown(p.in_unit(d), p.unit)
    for cid, shown, ratio_text in claim.rounded:
        try:
            ratio = parse_number(ratio_text)
        except SymroofError:
            continue
        for factor in (ratio, 1 / ratio):
            if _holds(claim, d * factor, where, (Verdict.OK,)):
                said = (f"the stated value follows from the rounded {shown} of {cid} carried "
                        f"forward; right: {right}")
                return replace(j, detail=f"{j.detail}; {said}",
                               diagnosis={"choice": f"the rounded {shown} of {cid}",
                                          "kind": "slip", "meaning": said, "said": said,
                                          "value": j.derived, "value_value": float(d)})
    for cid, shown, own_text, again_text in claim.follows:
        try:
            own, again = parse_number(own_text), parse_number(again_text)
            figure = printed(shown, where, claim.source.language)
        except SymroofError:
            continue
        if _holds(claim, again, where, (Verdict.OK, Verdict.ROUNDING)):
            said = (f"the stated value follows from the text's own {cid} (stated {shown}, "
                    f"derived {_shown(figure.in_unit(own), figure.unit)}) carried forward; "
                    f"right: {right}")
            return replace(j, detail=f"{j.detail}; {said}",
                           diagnosis={"choice": f"the stated {shown} of {cid}", "kind": "slip",
                                      "meaning": said, "said": said, "value": j.derived,
                                      "value_value": float(d)})
    return j


def _holds(claim: Claim, value: Any, where: str, verdicts: tuple[Verdict, ...]) -> bool:
    """The claim's stated value holds against ``value`` with one of ``verdicts``."""
    try:
        alt = judge_number(claim.stated, value, where=where, language=claim.source.language)
    except SymroofError:
        return False
    return alt.verdict in verdicts


def judged_number(stated: str, derived: Any, language: str = "en") -> Judgement:
    """A stated number against a derived one, with the approximate mark and the unit
    slips (a claim-free form of :func:`judged`)."""
    j = judge_number(stated, derived, language=language)
    j = approximate(stated, j, derived, None, language)
    return unit_slip(stated, j, derived, None, language) if j.verdict == MISMATCH else j


def derived_text(stated: str, derived: Any, language: str = "en",
                 dimension: tuple[int, int, int] | None = None) -> str:
    """The derived number in the stated unit, as the verdict table shows it: exact when
    short, else a decimal with one digit more than the stated prints (and at least three
    significant digits).

    >>> derived_text("2.4 ms", sp.Rational(499062469, 200000000000))
    '2.50 ms'
    >>> derived_text("240", sp.Rational(9850, 41))
    '9850/41'
    """
    p = as_quantity(printed(stated, None, language), dimension)
    inu = p.in_unit(_exact_number(derived, None))
    unit = p.display_unit
    places = -sp.log(p.unit_size / p.scale, 10) if p.half_unit else None
    if inu.is_Rational and inu.q < 10**6:
        shown = str(inu)
    elif places is not None and places.is_Integer and places >= 0 and \
            1e-4 <= abs(float(inu)) < 1e7:
        x = float(inu)
        shown = f"{x:.{max(int(places) + 1, 2 - math.floor(math.log10(abs(x))))}f}"
    else:
        shown = shown_number(inu)
    return f"{shown} {unit}" if unit else shown


def approximate(stated: str, j: Judgement, derived: Any, where: str | None,
                language: str) -> Judgement:
    """APPROX for a MISMATCH whose stated number is marked approximate and lies within
    ``APPROX_LIMIT`` of the derived value, with the distance."""
    if j.verdict != MISMATCH:
        return j
    p = printed(stated, where, language)
    d = _exact_number(derived, where)
    if not p.approximate or p.value == 0 or abs(d - p.value) > APPROX_LIMIT * abs(p.value):
        return j
    off = float(abs(d - p.value) / abs(p.value))
    return replace(j, verdict=APPROX, detail=f"marked approximate: {off:.1%} from the "
                   f"derived {_shown(p.in_unit(d), p.unit)}")


def unit_slip(stated: str, j: Judgement, derived: Any, where: str | None,
              language: str) -> Judgement:
    """A MISMATCH whose stated number holds in the binary (or decimal) namesake of its
    unit: the detail names the slip ("the stated 8 GB is 8 GiB")."""
    p = printed(stated, where, language)
    unit = UNIT_WORDS.get(p.unit, p.unit)
    m = _UNIT.match(unit)
    if m is None or m.group(1) not in UNIT_SLIPS:
        return j
    other = UNIT_SLIPS[m.group(1)] + (m.group(2) or "")
    number = stated.strip()[: len(stated.strip()) - len(p.unit)].strip()
    swapped = f"{number} {other}"
    try:
        alt = judge_number(swapped, derived, where=where, language=language)
    except SymroofError:  # the namesake does not read in this language: no diagnosis
        return j
    if alt.verdict != Verdict.OK:
        return j
    said = f"{number} {p.unit}"
    return replace(j, detail=f"{j.detail}; the stated {said} is {number} {other}",
                   diagnosis={"choice": f"{other} printed as {unit}", "kind": "slip",
                              "meaning": f"the stated {said} is {number} {other}",
                              "said": f"the stated {said} is {number} {other}",
                              "value": alt.derived, "value_value": alt.derived_value})


# the usual slips of a hand calculation: what the text's value is of the derived one, and
# what the slip is called (tried in this order; the first that reproduces the stated value
# within its printed precision is named)
HAND_SLIPS: tuple[tuple[str, Any, str], ...] = (
    ("twice", 2, "a factor 2 (elements for bytes, multiply-adds for FLOPs, one way for "
                 "both ways)"),
    ("half", sp.Rational(1, 2), "a factor 2 (elements for bytes, multiply-adds for FLOPs, "
                                "one way for both ways)"),
    ("1000 times", 10**3, "a power of 10^3 (a prefix off by one step: ms for us, GB for MB)"),
    ("a thousandth of", sp.Rational(1, 10**3), "a power of 10^3 (a prefix off by one step: "
                                               "ms for us, GB for MB)"),
    ("10^6 times", 10**6, "a power of 10^3, twice"),
    ("a millionth of", sp.Rational(1, 10**6), "a power of 10^3, twice"),
    ("the inverse of", None, "an inverted ratio"),
)


def hand_slip(stated: str, j: Judgement, derived: Any, where: str | None, language: str,
              dimension: tuple[int, int, int] | None = None) -> Judgement:
    """A MISMATCH whose stated number is a usual slip of the derived value (``HAND_SLIPS``):
    it stays a MISMATCH, and its detail names the slip and the right value.

    >>> hand_slip("486", judge_number("486", sp.Rational(19700, 81)),
    ...           sp.Rational(19700, 81), None, "en").detail  # doctest: +ELLIPSIS
    'derived 243.21, stated 486; the stated value is twice the derived: a factor 2 ...'
    """
    if j.verdict != MISMATCH:
        return j
    try:
        d = _exact_number(derived, where)
    except SymroofError:
        return j
    if d == 0:
        return j
    for name, factor, slip in HAND_SLIPS:
        wrong = 1 / d if factor is None else d * factor
        try:
            alt = judge_number(stated, wrong, where=where, language=language,
                               dimension=None if factor is None else dimension)
        except SymroofError:
            continue
        if alt.verdict not in (Verdict.OK, Verdict.ROUNDING):
            continue
        p = printed(stated, where, language)
        right = _shown(p.in_unit(d), p.unit)
        said = f"the stated value is {name} the derived: {slip}; right: {right}"
        return replace(j, detail=f"{j.detail}; {said}",
                       diagnosis={"choice": slip, "kind": "slip", "meaning": said,
                                  "said": said, "value": j.derived,
                                  "value_value": float(d)})
    return j


def _by_choices(claim: Claim, j: Judgement, tried: Tried | None, where: str,
                slips: bool = True) -> Judgement:
    """The first alternative of ``tried`` that holds at the printed precision, named; the
    others that hold too are named after it (at two printed digits, several may). One that
    holds only as the stated value's rounding or truncation (``8745.5415`` printed for
    8745.54156) is named when none holds outright, as a slip is (``hand_slip``)."""
    if tried is None:
        return j
    holding: dict[Verdict, list[tuple[Choices, Judgement]]] = {Verdict.OK: [],
                                                               Verdict.ROUNDING: []}
    for choices, value in tried.alternatives:
        if not slips and choices.slips(tried.choices):
            continue
        try:
            alt = RULES[claim.kind](claim, value, where)
        except (SymroofError, TypeError):  # an alternative the comparison cannot take
            continue
        if alt.verdict in holding:
            holding[alt.verdict].append((choices, alt))
    found = holding[Verdict.OK] or holding[Verdict.ROUNDING]
    if not found:
        return j
    named = _named(claim, j, found[0][1], found[0][0], tried)
    also = [c.describe(tried.choices) for c, _ in found[1:]]
    if not also:
        return named
    assert named.diagnosis is not None
    return replace(named, detail=f"{named.detail}; also reproduced by {'; '.join(also)}",
                   diagnosis={**named.diagnosis, "also": also})


def _named(claim: Claim, j: Judgement, alt: Judgement, choices: Choices,
           tried: Tried) -> Judgement:
    base = tried.choices
    changed = choices.changed(base)
    slips = choices.slips(base)
    diagnosis = {"choice": choices.describe(base), "kind": "slip" if slips else "choice",
                 "meaning": "; ".join(line.replace(" = ", "=", 1) for line in choices.lines()
                                      if line.split(" = ")[0] in changed),
                 "value": alt.derived, "value_value": alt.derived_value}
    drops = [_amount(claim, d, n, tried, getattr(choices, n)) for n in changed
             if (d := dropped(n, getattr(choices, n), getattr(base, n)))
             and (n, getattr(choices, n)) not in SLIPS]
    if slips:
        also = f", dropping {_and(drops)}" if drops else ""
        said = (f"the stated value is what {_and(slips)} gives{also}: "
                f"{_decimal(claim, alt)} ({choices.describe(base)})")
        factor = [DROPS_AS[(n, getattr(choices, n))] for n in changed
                  if (n, getattr(choices, n)) in DROPS_AS]
        if factor and len(slips) == 1:  # V/W for an AllReduce: the factor and the right value
            (words, form), = factor
            said = (f"{words}{f' and {_and(drops)}' if drops else ''}: {form} gives "
                    f"{_decimal(claim, alt)} ({choices.describe(base)}); right: {_exact(j)}")
        return replace(j, verdict=MISMATCH, detail=f"{j.detail}; {said}",
                       diagnosis={**diagnosis, "said": said})
    phrase = next((HOLDS_AS[(n, getattr(choices, n))] for n in changed
                   if (n, getattr(choices, n)) in HOLDS_AS),
                  f"with the chip table's {choices.edition} edition ({choices.describe(base)})"
                  if changed == ("edition",) else f"under {choices.describe(base)}")
    detail = f"holds {phrase}: the text drops {_and(drops)}" if drops else f"holds {phrase}"
    return replace(j, verdict=SIMPLIFIED, detail=f"{detail}; exact {_exact(j)}",
                   diagnosis={**diagnosis, "said": detail})


def _amount(claim: Claim, dropped: str, field: str, tried: Tried, to: str = "off") -> str:
    """``dropped`` with what it amounts to, where setting only ``field`` (to ``to``)
    changes a number ("the hop latency (8 us)")."""
    alone = tried.choices.with_(**{field: to}) if field == "latency" else None
    value = next((v for c, v in tried.alternatives if c == alone), None)
    if value is None or read(claim.stated, claim.source.language) is None:
        return dropped
    try:
        diff = _exact_number(tried.value - value, None)
    except (SymroofError, TypeError):  # not a number (a symbolic claim): the words alone
        return dropped
    p = printed(claim.stated, None, claim.source.language)
    return f"{dropped} ({_shown(p.in_unit(diff), p.unit)})"


def _decimal(claim: Claim, alt: Judgement) -> str:
    """The alternative's value as a text view prints it (``1.49131 ms``)."""
    p = read(claim.stated, claim.source.language)
    if p is None or alt.derived_value is None:
        return alt.derived
    return _shown(sp.Float(alt.derived_value), p.unit)


def _exact(j: Judgement) -> str:
    """The exact derived value as a MISMATCH detail gave it (``derived X, stated Y``)."""
    m = re.match(r"derived (.*?), stated ", j.detail)
    return m.group(1) if m else j.derived


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _shown(value: sp.Expr, unit: str) -> str:
    shown = shown_number(value)
    return f"{shown} {UNIT_WORDS.get(unit, unit)}" if unit else shown


__all__ = ["APPROX_LIMIT", "HAND_SLIPS", "UNIT_SLIPS", "approximate", "hand_slip", "judged",
           "judged_number", "unit_slip"]
