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
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ..core.errors import InputError
from ..core.parse import MAX_DIGITS, MAX_EXPONENT
from ..core.units import unit_scale

APPROXIMATE = ("~", "≈", "about", "roughly", "approximately", "примерно", "около", "大约",
               "约")
TOLERANCE = sp.Rational(2, 100)  # the largest relative error a ROUNDING verdict allows
SPACES = " \u00a0\u202f\u2009"
# units as the texts spell them -> the units module's spelling
UNIT_WORDS = {"ТБ/с": "TB/s", "ГБ/с": "GB/s", "МБ/с": "MB/s", "ГБ": "GB", "МБ": "MB",
              "КБ": "kB", "ТБ": "TB", "мс": "ms", "мкс": "us", "нс": "ns", "с": "s",
              "байт": "B", "μs": "us"}
_MARK = re.compile(r"\s*(" + "|".join(re.escape(m) for m in APPROXIMATE) + r")\s*", re.I)
_SCI = re.compile(r"\s*(?:[eE]|\s*[x×·]\s*10\^?)\s*([-+]?\d+)")


@dataclass(frozen=True)
class Stated:
    """A stated number: exact value and half a unit of its last significant digit, both
    in base units, with the unit as printed and whether it was marked approximate."""

    value: sp.Rational
    half_unit: sp.Rational
    unit: str = ""
    approximate: bool = False
    scale: sp.Rational = sp.S.One  # one printed unit in base units

    @property
    def unit_size(self) -> sp.Rational:
        return 2 * self.half_unit

    def in_unit(self, value: sp.Expr) -> sp.Expr:
        """``value`` (base units) expressed in the printed unit."""
        return value / self.scale


def stated(text: str, language: str = "en", where: str | None = None) -> Stated:
    """Read ``text`` as a stated number in ``language`` (``en``, ``ru``, ``zh``).

    >>> stated("~400").half_unit, stated("400").half_unit
    (50, 1/2)
    >>> stated("13.9%").value
    139/1000
    >>> stated("160 KiB").value
    163840
    """
    parsed = read(text, language)
    if parsed is None:
        raise InputError(f"cannot read the stated value {text!r} as a number", where)
    return parsed


@lru_cache(maxsize=4096)
def read(text: str, language: str = "en") -> Stated | None:
    """Like :func:`stated`, but None when ``text`` is not a number (an expression, a
    relation or words)."""
    rest = text.strip()
    mark = _MARK.match(rest)
    approximate = mark is not None and not rest[mark.end():mark.end() + 1].isalpha()
    if mark is not None and approximate:
        rest = rest[mark.end():]
    number = _number(rest, language)
    if number is None:
        return None
    sign, digits, frac, end = number
    exponent = 0
    sci = _SCI.match(rest, end)
    if sci:  # an exponent of thousands of digits is past int()'s limit, and past any number
        digits_of = sci.group(1).lstrip("+-").lstrip("0")
        exponent = MAX_EXPONENT + 1 if len(digits_of) > 6 else int(sci.group(1))
        end = sci.end()
    if abs(exponent) > MAX_EXPONENT or len(digits + frac) > MAX_DIGITS:
        raise InputError(f"the stated value {text.strip()!r:.60} is beyond the limits of a "
                         f"formula literal ({MAX_DIGITS} digits, exponent {MAX_EXPONENT})")
    unit = rest[end:].strip()
    if unit == "%":
        scale = sp.Rational(1, 100)
    elif unit:
        try:
            scale = unit_scale(UNIT_WORDS.get(unit, unit))
        except InputError:
            return None
    else:
        scale = sp.Integer(1)
    last = exponent - len(frac)
    mantissa = int(digits + frac)
    if approximate and not frac and mantissa:
        zeros = len(digits) - len(digits.rstrip("0"))
        last += zeros
    value = sp.Integer(mantissa) * sp.Rational(10) ** (exponent - len(frac)) * scale
    half = sp.Rational(10) ** last / 2 * scale
    return Stated(-value if sign == "-" else value, half, unit, approximate, scale)


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
    """(sign, integer digits, fraction digits, end index) of the number at the start."""
    decimal = ",." if language == "ru" else "."
    thousands = SPACES if language == "ru" else ","
    m = re.match(r"([-+]?)(\d+)", text)
    if not m:
        return None
    sign, digits, i = m.group(1), m.group(2), m.end()
    while i < len(text) and text[i] in thousands and _group(text, i):
        digits += text[i + 1:i + 4]
        i += 4
    frac = ""
    if i < len(text) and text[i] in decimal and re.match(r"\d", text[i + 1:i + 2]):
        f = re.match(r"\d+", text[i + 1:])
        assert f is not None
        frac, i = f.group(0), i + 1 + f.end()
    return sign, digits, frac, i


def _group(text: str, i: int) -> bool:
    """A thousands separator at ``i``: exactly three digits follow."""
    return re.match(r"\d{3}(?!\d)", text[i + 1:]) is not None
