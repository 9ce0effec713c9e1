"""The numbers a quote prints, read as its text writes them, for checking a claim's figures.

>>> got = printed_numbers(r"около $9{,}89 \\cdot 10^{14}$ FLOPs/s, 3,35 ТБ/с")
>>> figure_number("9.89e14 FLOP/s") in got, figure_number("3.35 TB/s") in got
(True, True)
>>> figure_number("9.89e14 FLOP/s") in printed_numbers(r"$9.89 \\times 1 0^{1} 4$")
True

A table's ``figures`` say which values a passage prints (the consistency check compares
them across passages and translations); each must be printed in the claim's quote, so the
registry cannot drift from the text. Decimal commas, ``{,}``, thin spaces between digits,
``a \\cdot 10^{n}`` and ``1e14`` are read; the OCR split ``10^{1} 4`` is joined.
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..core.parse import COUNT_SUFFIXES, MULTIPLIERS, NUMBER_WORDS

_POWER = re.compile(r"(?:(\d+(?:[.,]\d+)?)\s*(?:\\cdot|\\times|×|·|\*)\s*)?10\s*\^\s*"
                    r"\{?\s*(-?\d+)\s*\}?")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)(?:[eE]([+-]?\d+))?")
MAX_EXPONENT = 1000  # as a formula literal's: a power of ten beyond it is never a figure


def _power(exponent: str) -> Fraction | None:
    """10 to ``exponent``, None beyond MAX_EXPONENT (never computed: 1e9999999 would take
    seconds)."""
    digits = exponent.lstrip("+-").lstrip("0")
    if len(digits) > 4 or int(exponent) > MAX_EXPONENT or int(exponent) < -MAX_EXPONENT:
        return None
    return Fraction(10) ** int(exponent)


def printed_numbers(quote: str) -> set[Fraction]:
    """Every number ``quote`` prints (a comma read both as a decimal and a group mark)."""
    q = quote.replace("{,}", ",").replace("{.}", ".").replace("\u2009", "")
    q = re.sub(r"(?<=\d) (?=\d)", "", q)
    q = re.sub(r"\^\s*\{(\d+)\}\s*(\d+)", r"^{\1\2}", q)  # OCR: 10^{1} 4 is 10^{14}
    out: set[Fraction] = set()
    for m in _POWER.finditer(q):
        mantissa = _read(m.group(1)) if m.group(1) else [Fraction(1)]
        power = _power(m.group(2))
        out.update(x * power for x in mantissa if power is not None)
    for m in _NUMBER.finditer(_POWER.sub(" ", q)):
        scale = _power(m.group(2)) if m.group(2) else Fraction(1)
        out.update(x * scale for x in _read(m.group(1)) if scale is not None)
    return out


_SCALED = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)\s*\$?\s*(" + "|".join(
    re.escape(w) for w in sorted([*MULTIPLIERS, *COUNT_SUFFIXES], key=len, reverse=True))
    + r")(?![A-Za-zА-Яа-я])")
_WORD = re.compile(r"(?<![\w])(" + "|".join(
    re.escape(w) for w in sorted(NUMBER_WORDS, key=len, reverse=True)) + r")(?![\w])")


def printed_values(quote: str) -> set[Fraction]:
    """:func:`printed_numbers`, and the values a multiplier after a number makes (``2M``,
    ``1 млрд``, ``16 K``, ``3万``) and small numbers written as words ("один проход")."""
    out = printed_numbers(quote)
    q = quote.replace("{,}", ",").replace("\u2009", "")
    for m in _SCALED.finditer(q):
        power = MULTIPLIERS.get(m.group(2), COUNT_SUFFIXES.get(m.group(2), 0))
        out.update(x * 10**power for x in _read(m.group(1)))
    for m in re.finditer(r"(?<![\w])(" + "|".join(re.escape(w) for w in MULTIPLIERS
                                                  if w.isalpha()) + r")(?![\w])", q):
        out.add(Fraction(10) ** MULTIPLIERS[m.group(1)])  # "1 тысяча" and "тысяча" alike
    for m in _WORD.finditer(q.lower()):
        out.add(Fraction(NUMBER_WORDS[m.group(1)]))
    return out


def check_stated(rows: dict[str, tuple[str, dict[str, object]]], where: str,
                 language: str) -> None:
    """Every stated number (or a relation's bound) printed in its quote, in the unit it is
    stated in, when the quote prints any number; an InputError naming the claim, the stated
    value and the quote.

    >>> check_stated({"a": ("s", {"stated": "2e6", "quote": "a batch of 2M tokens"})}, "t",
    ...              "en")
    >>> check_stated({"a": ("s", {"stated": "250", "quote": "about 240 FLOPs"})}, "t", "en")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: t: a: the stated value '250' is not printed in its quote ...
    """
    from ..core.errors import InputError
    from .stated import read
    for key, (_, row) in rows.items():
        stated = str(row.get("stated", ""))
        parts = re.split(r"[<>]=?|≥|≤", stated, maxsplit=1)
        bound = parts[1] if len(parts) == 2 else stated
        try:
            got = read(bound.strip(), language)
        except InputError:
            continue  # the reading's own error comes with the claim
        if got is None:
            continue
        number = got.in_unit(abs(got.value))
        quote = str(row.get("quote", ""))
        values = printed_values(quote)
        if not values:  # a quote that prints no number (words, a placeholder): nothing to hold
            continue
        if Fraction(int(number.p), int(number.q)) not in values and \
                Fraction(int(abs(got.value).p), int(abs(got.value).q)) not in values:
            raise InputError(f"the stated value {stated!r:.60} is not printed in its quote "
                             f"{quote!r:.80}", f"{where}: {key}")


def figure_number(value: str) -> Fraction | None:
    """The number a figure's value starts with (``9.89e14 FLOP/s``), None without one or
    beyond the limits of a formula literal (an exponent past 1000, 400 digits)."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)(?:[eE]([+-]?\d+))?", str(value))
    if m is None or len(m.group(1)) > 400:
        return None
    scale = _power(m.group(2)) if m.group(2) else Fraction(1)
    return None if scale is None else Fraction(m.group(1)) * scale


def _read(text: str) -> list[Fraction]:
    if "," in text:
        return [Fraction(text.replace(",", ".")), Fraction(text.replace(",", ""))]
    return [Fraction(text)]


def check_figures(rows: dict[str, tuple[str, dict[str, object]]], where: str) -> None:
    """Every figure of every row printed in its quote, or in the quote of a claim its
    ``figures_in`` names; an InputError naming the table, the claim and the figure."""
    from ..core.errors import InputError
    for key, (_, row) in rows.items():
        figures = row.get("figures", {})
        elsewhere = row.get("figures_in", [])
        if not isinstance(elsewhere, list) or not all(isinstance(k, str) for k in elsewhere):
            raise InputError("figures_in is a list of claim ids", f"{where}: {key}")
        quotes = [str(row.get("quote", ""))]
        for other in elsewhere:
            if other not in rows:
                raise InputError(f"figures_in names {other!r}, which this table does not "
                                 "state", f"{where}: {key}")
            quotes.append(str(rows[other][1].get("quote", "")))
        printed = set().union(*(printed_numbers(q) for q in quotes))
        for figure, value in (figures.items() if isinstance(figures, dict) else ()):
            number = figure_number(str(value))
            if number is None:
                raise InputError(f"figure {figure!r} = {value!r:.60} does not start with a "
                                 "number a formula can hold (digits, an exponent up to 1000)",
                                 f"{where}: {key}")
            if number not in printed:
                place = "its quote" + (" or those of " + ", ".join(elsewhere)
                                       if elsewhere else "")
                raise InputError(f"figure {figure!r} = {value!r} is not printed in {place}",
                                 f"{where}: {key}")
