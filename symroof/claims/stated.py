"""Stated values as a reader reads them: the number, its unit and its printed precision.

>>> s = stated("1.01 ms")
>>> s.value, s.half_unit, s.unit
(101/100000, 1/200000, 'ms')
>>> stated("≈61,000").half_unit, stated("61,000").half_unit
(500, 1/2)
>>> stated("1,5", "ru").value, stated("61 000", "ru").value
(3/2, 61000)

A printed number states its precision: ``240`` is 240 +/- 0.5 and ``9.89e14`` is
(9.89 +/- 0.005) x 10^14. An approximation mark (``~``, ``≈``, "about", "roughly",
"примерно", "около", "约", "大约") means only the significant digits count: ``≈61,000`` is
6.1e4 at two digits (60,500 to 61,500), ``~400`` is 350 to 450. A bare ``400`` keeps its
exact reading. Thousands separators and the decimal mark follow the text's language:
``61,000`` in English and Chinese, ``61 000`` (a space or a no-break space) and the decimal
comma ``1,5`` in Russian. A unit after the number (``160 KiB``, ``1.6 TB/s``, ``13.9%``)
is parsed by :mod:`symroof.core.units`; value and precision are kept in base units
(bytes, FLOP, seconds), so a claim derives seconds and states milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

import sympy as sp

from ..core.errors import InputError
from ..core.parse import (
    APPROX_AFTER,
    APPROX_BEFORE,
    COUNT_NOUNS,
    COUNT_SUFFIXES,
    FRACTIONS,
    MAX_DIGITS,
    MAX_EXPONENT,
    MULTIPLIERS,
    NUMBERS_DOC,
    PLUS_MINUS,
    SEPARATOR_SPACES,
    UNIT_WORDS,
    parse_expr,
    parse_relation,
    printed_digits,
)
from ..core.units import (
    BANDWIDTH,
    CAPACITY,
    COMPUTE,
    COUNT,
    FLOPS,
    INTENSITY,
    PER_SECOND,
    TIME,
    dimension_text,
    unit_dimension,
    unit_scale,
)

APPROXIMATE = APPROX_BEFORE + APPROX_AFTER
TOLERANCE = sp.Rational(2, 100)  # the largest relative error a one-digit ROUNDING allows
SPACES = SEPARATOR_SPACES
_SCI = re.compile(r"\s*(?:[eE]|\s*[x×·*]\s*10\s*(?:\^|\*\*)?)\s*([-+]?\d+)")


@dataclass(frozen=True)
class Stated:
    """A stated number: exact value and half a unit of its last significant digit, both
    in base units, with the unit as printed and whether it was marked approximate;
    ``digits`` counts the significant digits printed (0 when not printed as digits),
    ``count`` says the text made it a count (a K/M/B/T suffix, a multiplier word, a noun
    such as "parameters"), ``shown`` is the text as read (full-width digits, minus signs
    and superscripts in ASCII), and ``as_count`` is the other reading of a B after the
    digits (52B: 52 bytes here, 52 billion there), which the judge takes for a count."""

    value: sp.Rational
    half_unit: sp.Rational
    unit: str = ""
    approximate: bool = False
    scale: sp.Rational = sp.S.One  # one printed unit in base units
    digits: int = 0
    count: bool = False
    shown: str = ""
    as_count: Stated | None = None

    @property
    def unit_size(self) -> sp.Rational:
        return 2 * self.half_unit

    def in_unit(self, value: sp.Expr) -> sp.Expr:
        """``value`` (base units) expressed in the printed unit."""
        return value / self.scale

    @property
    def display_unit(self) -> str:
        """The unit as a verdict prints the derived value in it (``ms`` for ``мс``,
        ``billion`` for the B of a count)."""
        if self.count and self.unit in COUNT_SUFFIXES:
            return {"K": "thousand", "M": "million", "B": "billion", "T": "trillion"}[self.unit]
        return UNIT_WORDS.get(self.unit, self.unit)

    @property
    def dims(self) -> tuple[int, int, int] | None:
        """The dimension of the printed unit as (byte, FLOP, second) exponents; None when
        no unit is printed (a percentage and a count are dimensionless: (0, 0, 0))."""
        if self.count or self.unit in FRACTIONS:
            return (0, 0, 0)
        if not self.unit:
            return None
        return unit_dims(UNIT_WORDS.get(self.unit, self.unit))


def stated(text: str, language: str = "en", where: str | None = None) -> Stated:
    """Read ``text`` as a stated number in ``language`` (``en``, ``ru``, ``zh``).

    >>> stated("~400").half_unit, stated("400").half_unit
    (50, 1/2)
    >>> stated("13.9%").value
    139/1000
    >>> stated("160 KiB").value
    163840
    >>> stated("52B params").value, stated("7 тыс.", "ru").value, stated("3万", "zh").value
    (52000000000, 7000, 30000)
    """
    try:
        parsed = read(text, language)
    except InputError as exc:
        raise InputError(exc.message, where) from None
    if parsed is None:
        raise InputError(f"cannot read the stated value {text!r} as a number", where)
    return parsed


@lru_cache(maxsize=4096)
def read(text: str, language: str = "en") -> Stated | None:
    """Like :func:`stated`, but None when ``text`` is not a number (an expression, a
    relation or words). A digit of another script, or a number beyond a formula's
    limits, is an InputError."""
    rest = printed_digits(str(text)).strip()
    shown = rest
    approximate = False
    lowered = rest.lower()
    for mark in sorted(APPROX_BEFORE, key=len, reverse=True):
        if lowered.startswith(mark.lower()):
            after = rest[len(mark):]
            if mark[-1].isalpha() and mark.isascii() and after[:1].isalpha():
                continue  # a word that starts with the mark's letters
            rest, approximate = after.strip(), True
            break
    for mark in APPROX_AFTER:
        if rest.endswith(mark) and rest[: -len(mark)].strip():
            rest, approximate = rest[: -len(mark)].strip(), True
            break
    for pm in PLUS_MINUS:
        if pm in rest:
            return _plus_minus(rest, pm, language, shown)
    count = False
    for noun in sorted(COUNT_NOUNS, key=len, reverse=True):
        if rest.endswith(noun) and rest[: -len(noun)].strip()[-1:].isalnum():
            rest, count = rest[: -len(noun)].strip(), True
            break
    number = _number(rest, language)
    if number is None:
        return None
    sign, digits, frac, end = number
    exponent = 0
    sci = _SCI.match(rest, end)
    if sci is None and digits == "10" and not frac and rest[end:end + 1] == "^":
        sci = re.compile(r"\^\s*([-+]?\d+)").match(rest, end)  # 10^8: one times 10^8
        digits = "1"
    if sci:  # an exponent of thousands of digits is past int()'s limit, and past any number
        digits_of = sci.group(1).lstrip("+-").lstrip("0")
        exponent = MAX_EXPONENT + 1 if len(digits_of) > 6 else int(sci.group(1))
        end = sci.end()
    if abs(exponent) > MAX_EXPONENT or len(digits + frac) > MAX_DIGITS:
        raise InputError(f"the stated value {text.strip()!r:.60} is beyond the limits of a "
                         f"formula literal ({MAX_DIGITS} digits, exponent {MAX_EXPONENT})")
    unit = rest[end:].strip()
    scale: sp.Expr = sp.Integer(1)
    as_count = None
    multiplier = next((w for w in sorted(MULTIPLIERS, key=len, reverse=True)
                       if unit == w or (unit.startswith(w) and not w.isascii())), None)
    if multiplier is not None and unit != multiplier:
        return None  # a multiplier word followed by more than a noun
    if multiplier is not None:
        scale, count, unit = sp.Integer(10) ** MULTIPLIERS[multiplier], True, multiplier
    elif unit in COUNT_SUFFIXES and (unit != "B" or count):
        scale, count = sp.Integer(10) ** COUNT_SUFFIXES[unit], True
    elif unit in FRACTIONS:
        scale = FRACTIONS[unit]
    elif unit:
        try:
            scale = unit_scale(UNIT_WORDS.get(unit, unit))
        except InputError:
            return None
    mantissa = int(digits + frac or "0")
    last = exponent - len(frac)
    significant = (digits + frac).lstrip("0")
    if approximate and not frac and mantissa:
        zeros = len(digits) - len(digits.rstrip("0"))
        last += zeros
        significant = significant[: len(significant) - zeros] if zeros else significant
    value = sp.Integer(mantissa) * sp.Rational(10) ** (exponent - len(frac)) * scale
    half = sp.Rational(10) ** last / 2 * scale
    value = -value if sign == "-" else value
    if unit == "B" and not count:
        billion = sp.Integer(10) ** 9
        as_count = Stated(value * billion, half * billion, "B", approximate, billion,
                          len(significant), True, shown)
    return Stated(value, half, unit, approximate, scale, len(significant), count, shown,
                  as_count)


def refusal(text: str, language: str = "en") -> str | None:
    """Why ``text``, which starts as a number does, is not read as one (a notation outside
    the table of :mod:`symroof.core.parse`); None for words, formulas and relations.

    >>> refusal("243 furlongs")  # doctest: +ELLIPSIS
    "the stated value '243 furlongs' is a number followed by 'furlongs', which is not a ..."
    """
    try:
        rest = printed_digits(str(text)).strip()
    except InputError as exc:
        return exc.message
    for mark in sorted(APPROX_BEFORE, key=len, reverse=True):
        if rest.lower().startswith(mark.lower()):
            rest = rest[len(mark):].strip()
            break
    number = _number(rest, language)
    if number is None or re.search(r"[<>=*/()^]", rest):
        return None
    tail = rest[number[3]:].strip()
    return (f"the stated value {str(text).strip()!r:.60} is a number followed by {tail!r:.30}, "
            "which is not a unit, a multiplier or a count noun of the table of printed "
            f"numbers ({NUMBERS_DOC})")


def _plus_minus(rest: str, pm: str, language: str, shown: str) -> Stated | None:
    """``243 ± 1`` (or ``243 ± 1 ms``): the value, and the half-width its text prints."""
    left, _, right = rest.partition(pm)
    width = read(right.strip(), language)
    if width is None or width.approximate or width.value <= 0:
        return None
    centre = read(left.strip(), language)
    if centre is not None and not centre.unit and width.unit:
        centre = read(f"{left.strip()} {width.unit}", language)
    if centre is None or centre.approximate or pm in right:
        return None
    return replace(centre, half_unit=width.value, shown=shown, digits=0, as_count=None)


#: the dimensions a bare printed number reads in its base unit without being told: a count
#: or ratio, a FLOP count and an arithmetic intensity in FLOP/B (texts print these with one
#: scale, or spelled out in full: 1.78e21 FLOPs, 240); every other (a time, bytes, a
#: bandwidth, a FLOP rate, a rate per second) is printed in ms or us, GB or GiB, GB/s or
#: TB/s, TFLOP/s, so a bare number does not say its scale: its claim declares the unit
BARE_DIMENSIONS = frozenset((d.byte, d.flop, d.second) for d in (COUNT, FLOPS, INTENSITY))
_NAMED = {(d.byte, d.flop, d.second): d.name
          for d in (TIME, CAPACITY, BANDWIDTH, COMPUTE, PER_SECOND)}


def bare_refusal(reading: Stated | None, dimension: tuple[int, int, int] | None,
                 shown: str, relation: str = "", language: str = "en") -> str | None:
    """Why a stated number printed without a unit cannot be read against a value of
    ``dimension`` (one that needs its unit, see ``BARE_DIMENSIONS``); None when it can
    (a unit printed or declared, a count, a dimension a bare number suits, or one the
    engine did not say). ``relation``: the stated relation ``shown`` is the bound of.

    >>> print(bare_refusal(read("22.0"), (0, 0, 1), "22.0"))  # doctest: +NORMALIZE_WHITESPACE
    the stated value '22.0' is printed without a unit, and the claim's value is a time
    (seconds), whose scale a bare number does not say: declare the unit the text means
    (unit = "ms", or "us", "s") or state it ("22.0 ms"); see docs/numbers.md
    >>> bare_refusal(read("240"), (-1, 1, 0), "240") is None
    True
    """
    if reading is None or dimension is None or reading.unit or reading.count or \
            dimension in BARE_DIMENSIONS:
        return None
    base = dimension_text(dimension)
    what = _NAMED.get(dimension, f"in {base}")
    first, *others = _USUAL.get(base, (base,))
    choices = f'"{first}", or ' + ", ".join(f'"{u}"' for u in others) if others \
        else f'"{first}"'
    said = f"{shown.strip():.40} {first}"
    if relation:
        said = with_unit(relation, first, language)
        return (f"the bound {shown.strip()!r:.40} of the stated relation {relation.strip()!r:.60}"
                f" is printed without a unit, and the value it bounds is {what}, whose scale "
                f"a bare number does not say: declare the unit the text means (unit = "
                f"{choices}) or state it (\"{said:.60}\"); see {NUMBERS_DOC}")
    return (f"the stated value {shown.strip()!r:.60} is printed without a unit, and the "
            f"claim's value is {what}, whose scale a bare number does not say: declare the "
            f"unit the text means (unit = {choices}) or state it (\"{said}\"); see "
            f"{NUMBERS_DOC}")


def bare_bound(text: str, language: str = "en") -> tuple[int, str] | None:
    """Where a stated relation's bound is a number printed bare (its side: 0 left, 2
    right) and that bound as printed; None otherwise (a unit, a count, a formula).

    >>> bare_bound("T > ≈26.4"), bare_bound("T > 26.4 us"), bare_bound("B > 2*D")
    ((2, '≈26.4'), None, None)
    """
    parts = re.split(r"([<>]=?)", text, maxsplit=1)
    if len(parts) != 3:
        return None
    for i in (2, 0):
        try:
            got = read(parts[i].strip(), language)
        except InputError:
            got = None
        if got is not None and not got.unit and not got.count:
            return i, parts[i].strip()
    return None


#: the units a text prints each dimension in, the most usual first
_USUAL = {"s": ("ms", "us", "s"), "B": ("GB", "GiB", "B"), "B/s": ("GB/s", "TB/s", "B/s"),
          "FLOP/s": ("TFLOP/s", "FLOP/s")}


def with_unit(text: str, unit: str, language: str = "en") -> str:
    """The stated value ``text``, a number printed bare, with the unit its claim declares
    (a row's ``unit = "ms"``): the text as it reads in that unit. The unit goes before a
    mark that follows the number (``22 or so``).

    >>> with_unit("22.0", "ms"), with_unit("~400", "GB"), with_unit("400 or so", "us")
    ('22.0 ms', '~400 GB', '400 us or so')
    >>> with_unit("1,01", "мс", "ru"), with_unit("22", "毫秒", "zh")
    ('1,01 мс', '22 毫秒')
    """
    try:
        bare = read(text, language)
    except InputError:
        bare = None
    bound = bare_bound(text, language) if bare is None else None
    if bound is not None:  # a relation's bound printed bare: the unit goes with it
        left, op, right = re.split(r"([<>]=?)", text.strip(), maxsplit=1)
        side = with_unit(bound[1], unit, language)
        return f"{left.strip()} {op} {side}" if bound[0] == 2 else \
            f"{side} {op} {right.strip()}"
    own = unit_bound(text, language) if bare is None else None
    if own is not None:
        raise InputError(f"unit is for a number printed bare; the stated value "
                         f"{text.strip()!r:.60} prints its own ({own[1].unit})")
    if bare is None and re.search(r"[<>]", text) and _reads_as_relation(text, language):
        raise InputError(f"unit is for a number printed bare; the bound of the stated "
                         f"relation {text.strip()!r:.60} is a formula: write its unit after "
                         f"it (\"{text.strip():.60} {unit.strip():.20}\")")
    if bare is None:
        raise InputError(f"unit is the unit of a stated number; {text.strip()!r:.60} is "
                         "not a number")
    if bare.unit or bare.count:
        raise InputError(f"unit is for a number printed bare; the stated value "
                         f"{text.strip()!r:.60} prints its own ({bare.unit})")
    core, mark = text.strip(), ""
    for after in APPROX_AFTER:
        if core.endswith(after) and core[: -len(after)].strip():
            core, mark = core[: -len(after)].rstrip(), core[-len(after):]
            break
    joined = f"{core} {unit.strip()}" + (f" {mark}" if mark and mark.isascii() else mark)
    try:
        got = read(joined, language)
    except InputError:
        got = None
    if got is None or not got.unit or got.value != bare.value * got.scale or \
            got.approximate != bare.approximate:
        raise InputError(f"unit {unit!r:.30} is not a unit, a multiplier or a fraction of the "
                         f"table of printed numbers ({NUMBERS_DOC})")
    return joined


def _reads_as_relation(text: str, language: str) -> bool:
    """Whether a formula reads ``text`` as a relation (its bounds formulas or numbers)."""
    try:
        parse_relation(relation_formula(text, language))
    except InputError:
        return False
    return True


def unit_dims(unit: str) -> tuple[int, int, int] | None:
    """(byte, FLOP, second) exponents of a unit the units module reads, else None.

    >>> unit_dims("TB/s"), unit_dims("ms"), unit_dims("furlong")
    ((1, 0, -1), (0, 0, 1), None)
    """
    try:
        return unit_dimension(unit)
    except InputError:
        return None


_GROUPED = {"ru": re.compile(r"(?<![\d.,])\d{1,3}(?:[" + SPACES + r"]\d{3})+(?![\d])"),
            "en": re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")}
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def plain_numbers(text: str, language: str = "en") -> str:
    """``text`` (a relation, an expression) with its numbers written as formulas write
    them: thousands separators dropped, a decimal comma made a point (in Russian).

    >>> plain_numbers("B > 12,500"), plain_numbers("B > 19 500", "ru")
    ('B > 12500', 'B > 19500')
    >>> plain_numbers("D > 120,1", "ru"), plain_numbers("max(a, b) > 1,000")
    ('D > 120.1', 'max(a, b) > 1000')
    """
    grouped = _GROUPED["ru" if language == "ru" else "en"]
    out = grouped.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    return _DECIMAL_COMMA.sub(".", out) if language == "ru" else out


_AFTER_OPERATOR = re.compile(r"([<>=]=?|≥|≤)\s*(" + "|".join(
    re.escape(m) for m in sorted(APPROX_BEFORE, key=len, reverse=True)) + r")\s*", re.I)


def relation_formula(text: str, language: str = "en") -> str:
    """A relation as a formula reads it: numbers as :func:`plain_numbers` writes them, and
    the approximation marks of its bound dropped (the bound's precision keeps them).

    A bound printed with a unit, which a formula does not read, is written as its number
    in base units (the judge reads it in its unit: :func:`unit_bound`).

    >>> relation_formula("B > ≈61,000"), relation_formula("D > ~19 500", "ru")
    ('B > 61000', 'D > 19500')
    >>> relation_formula("T > 240 ms"), relation_formula("2 GB > M")
    ('T > 6/25', '2000000000 > M')

    A bound that is a formula followed by a unit is the formula times the unit's scale:

    >>> relation_formula("T > 2*D us"), relation_formula("B > 2*D tokens")
    ('T > (2*D)*1/1000000', 'B > (2*D)')
    """
    out = relation_text(text, language)
    bound = unit_bound(out, language)
    if bound is None:
        formula = formula_bound(out, language)
        if formula is None:
            return out
        side, printed, unit = formula  # a formula in a unit: the formula times its scale
        parts = re.split(r"([<>]=?)", out, maxsplit=1)
        scaled = f"({without_marks(printed)})" + \
            ("" if unit.scale == 1 else f"*{sp.sstr(unit.scale)}")
        parts[side] = f" {scaled}" if side == 2 else f"{scaled} "
        return "".join(parts)
    i, got = bound
    parts = re.split(r"([<>]=?)", out, maxsplit=1)
    parts[i] = f" {sp.sstr(got.value)}" if i == 2 else f"{sp.sstr(got.value)} "
    return "".join(parts)


def unit_bound(text: str, language: str = "en") -> tuple[int, Stated] | None:
    """Where an inequality a formula does not read has a bound printed with a unit (its
    side: 0 left, 2 right) and that bound as read; None otherwise (a formula reads it).

    >>> unit_bound("B > ≈240 ms")[1].unit, unit_bound("B > 240")
    ('ms', None)
    """
    parts = re.split(r"([<>]=?)", printed_digits(text), maxsplit=1)
    if len(parts) != 3:
        return None
    try:
        parse_relation(relation_text(text, language))
        return None
    except InputError:
        pass
    for i in (2, 0):
        got = read(parts[i].strip(), language)
        if got is not None and got.unit and not got.count:
            return i, got
    return None


def formula_bound(text: str, language: str = "en") -> tuple[int, str, Stated] | None:
    """Where an inequality a formula does not read has a bound that is a formula followed
    by a unit (its side: 0 left, 2 right), the formula as printed and the unit as the table
    of printed numbers reads it (one of it: ``read("1 us")``); None otherwise.

    >>> side, formula, unit = formula_bound("T > 2*D us")
    >>> side, formula, unit.unit, unit.scale
    (2, '2*D', 'us', 1/1000000)
    >>> formula_bound("T > 2*D"), formula_bound("T > 26.4 us"), formula_bound("T > 2*D furlongs")
    (None, None, None)
    """
    parts = _unread_relation(text, language)
    if parts is None:
        return None
    for i in (2, 0):
        split = _formula_and_tail(parts[i], language)
        if split is not None and split[2] is not None:
            return i, split[0], split[2]
    return None


def formula_tail_refusal(text: str, language: str = "en") -> str | None:
    """Why a relation whose bound is a formula followed by words is not read: the words
    are not a unit, a multiplier or a count noun of the table of printed numbers; None
    when no side is a formula followed by words.

    >>> print(formula_tail_refusal("T > 2*D furlongs"))  # doctest: +NORMALIZE_WHITESPACE
    the bound '2*D furlongs' of the stated relation 'T > 2*D furlongs' is a formula
    followed by 'furlongs', which is not a unit, a multiplier or a count noun of the table
    of printed numbers (docs/numbers.md)
    """
    parts = _unread_relation(text, language)
    if parts is None:
        return None
    for i in (2, 0):
        split = _formula_and_tail(parts[i], language)
        if split is not None and split[2] is None:
            return (f"the bound {parts[i].strip()!r:.40} of the stated relation "
                    f"{text.strip()!r:.60} is a formula followed by {split[1]!r:.30}, which "
                    "is not a unit, a multiplier or a count noun of the table of printed "
                    f"numbers ({NUMBERS_DOC})")
    return None


def _unread_relation(text: str, language: str) -> list[str] | None:
    """The three parts (side, operator, side) of an inequality a formula does not read."""
    try:
        plain = relation_text(printed_digits(text), language)
    except InputError:
        return None
    parts = re.split(r"([<>]=?)", plain, maxsplit=1)
    if len(parts) != 3:
        return None
    try:
        parse_relation(plain)
        return None
    except InputError:
        return parts


_LONGEST_TAIL = 40  # the words after a formula read as its unit: "tokens per second"
_TAIL = re.compile(r"\s+|(?<=[\w)])(?=[^\x00-\x7f])")  # a space, or where a script begins


def _formula_and_tail(side: str, language: str) -> tuple[str, str, Stated | None] | None:
    """A side that is a formula (not a number) followed by words: the formula, the words
    and their reading as a unit (None when they are none); None when no split of the side
    at a space gives a formula (the longest words first)."""
    side = side.strip()
    for m in _TAIL.finditer(side, max(0, len(side) - _LONGEST_TAIL)):  # a unit is short
        formula, tail = side[:m.start()].strip(), side[m.end():].strip()
        if not formula or not tail or read(formula, language) is not None:
            continue
        try:
            parse_expr(without_marks(formula))
        except InputError:
            continue
        try:
            unit = read(f"1 {tail}", language)
        except InputError:
            unit = None
        if unit is not None and (unit.unit or unit.count) and not unit.approximate:
            return formula, tail, unit
        if re.fullmatch(r"[^\W\d_][\w/%‰·.\s-]*", tail):  # words, not more formula
            return formula, tail, None
    return None


def relation_text(text: str, language: str = "en") -> str:
    """A relation's text with its numbers plain and its approximation marks dropped."""
    out = _AFTER_OPERATOR.sub(lambda m: f"{m.group(1)} ", plain_numbers(text, language))
    for mark in APPROX_AFTER:
        out = out.removesuffix(mark).rstrip()
    return re.sub(r"\s+", " ", out).strip()


def without_marks(text: str) -> str:
    """A bound with its approximation marks dropped (``≈240`` -> ``240``)."""
    out = text.strip()
    for mark in sorted(APPROX_BEFORE, key=len, reverse=True):
        if out.lower().startswith(mark.lower()):
            out = out[len(mark):].strip()
            break
    for mark in APPROX_AFTER:
        out = out.removesuffix(mark).rstrip()
    return out


def stray_comma(text: str, language: str = "en") -> str | None:
    """Why a formula that did not parse may have failed: a comma between digits that is
    neither a thousands separator nor, outside Russian, a decimal mark (the parser reads
    ``2,4`` as a tuple); None when there is none.

    >>> stray_comma("B > 2,4e2")
    "the comma in '2,4' is not a decimal mark in en (write 2.4)"
    """
    comma = re.search(r"\d+,\d+", plain_numbers(text, language))
    if comma is None:
        return None
    return (f"the comma in {comma.group()!r} is not a decimal mark in {language} (write "
            f"{comma.group().replace(',', '.')})")


def _number(text: str, language: str) -> tuple[str, str, str, int] | None:
    """(sign, integer digits, fraction digits, end index) of the number at the start;
    ``.2432`` and ``243.`` are read as ``0.2432`` and ``243``."""
    decimal = ",." if language == "ru" else "."
    thousands = SPACES if language == "ru" else "," + SPACES
    m = re.match(r"([-+]?)(\d+|(?=\.\d))", text)
    if not m:
        return None
    sign, digits, i = m.group(1), m.group(2), m.end()
    while digits and i < len(text) and text[i] in thousands and _group(text, i):
        digits += text[i + 1:i + 4]
        i += 4
    frac = ""
    if i < len(text) and text[i] in decimal and re.match(r"\d", text[i + 1:i + 2]):
        f = re.match(r"\d+", text[i + 1:])
        assert f is not None
        frac, i = f.group(0), i + 1 + f.end()
    elif digits and text[i:i + 1] == "." and re.match(r"(?:[eE\s]|\Z)", text[i + 1:i + 2]):
        i += 1  # 243. and 2432.e-1: a point with no digits after it
    return sign, digits, frac, i


def _group(text: str, i: int) -> bool:
    """A thousands separator at ``i``: exactly three digits follow."""
    return re.match(r"\d{3}(?!\d)", text[i + 1:]) is not None
