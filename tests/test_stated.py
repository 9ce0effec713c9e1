"""Stated values read as a reader reads them: units, separators, decimal marks, and
approximation marks, stated as laws over generated numbers and formats."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.claims.rules import Verdict, judge_number
from symroof.claims.stated import APPROXIMATE, read, stated
from symroof.core.errors import InputError
from symroof.core.units import unit_scale
from tests.conftest import examples

SEPARATORS = {"en": [","], "zh": [","], "ru": [" ", "\u00a0", "\u202f"]}
DECIMAL = {"en": ".", "zh": ".", "ru": ","}


def grouped(n: int, sep: str) -> str:
    return f"{n:,}".replace(",", sep)


@settings(max_examples=examples(40))
@given(st.integers(1000, 10**9), st.sampled_from(sorted(SEPARATORS)), st.data())
def test_thousands_separators_read_as_the_integer(n: int, lang: str, data: st.DataObject
                                                  ) -> None:
    sep = data.draw(st.sampled_from(SEPARATORS[lang]))
    s = stated(grouped(n, sep), lang)
    assert s.value == n and s.half_unit == sp.Rational(1, 2)


@settings(max_examples=examples(40))
@given(st.integers(0, 10**6), st.integers(1, 999), st.sampled_from(sorted(DECIMAL)))
def test_decimal_mark_per_language(whole: int, frac: int, lang: str) -> None:
    digits = f"{frac:03d}"
    s = stated(f"{whole}{DECIMAL[lang]}{digits}", lang)
    assert s.value == whole + sp.Rational(frac, 1000)
    assert s.half_unit == sp.Rational(1, 2000)


@settings(max_examples=examples(40))
@given(st.integers(1, 99), st.integers(1, 6), st.sampled_from(APPROXIMATE),
       st.sampled_from(["en", "ru", "zh"]))
def test_an_approximate_number_states_only_its_significant_digits(
        lead: int, zeros: int, mark: str, lang: str) -> None:
    if lead % 10 == 0:
        lead += 1
    n = lead * 10**zeros
    text = f"{n:,}".replace(",", SEPARATORS[lang][0])
    approx = stated(f"{mark} {text}", lang)
    exact = stated(text, lang)
    assert approx.value == exact.value == n
    assert approx.approximate and not exact.approximate
    assert approx.half_unit == sp.Integer(10) ** zeros / 2  # only the leading digits count
    assert exact.half_unit == sp.Rational(1, 2)  # a bare number keeps its exact reading


@settings(max_examples=examples(40))
@given(st.integers(1, 10**5), st.integers(0, 3),
       st.sampled_from(["ms", "us", "ns", "s", "MB", "GB", "KiB", "GiB", "TB/s", "GB/s",
                        "TFLOP/s"]))
def test_a_unit_scales_value_and_precision_alike(mantissa: int, places: int, unit: str
                                                 ) -> None:
    number = sp.Rational(mantissa, 10**places)
    shown = f"{mantissa / 10**places:.{places}f}"
    s = stated(f"{shown} {unit}")
    assert s.value == number * unit_scale(unit)
    assert s.half_unit == sp.Rational(1, 2 * 10**places) * unit_scale(unit)
    assert s.in_unit(s.value) == number


def test_examples_from_the_texts() -> None:
    assert stated("1.01 ms").value == sp.Rational(101, 100000)
    assert stated("80.4 MB").value == 80400000
    assert stated("160 KiB").value == 160 * 1024
    assert stated("1.6 TB/s").value == 16 * 10**11
    assert stated("13.9%").value == sp.Rational(139, 1000)
    assert stated("80,4 МБ", "ru").value == 80400000
    assert stated("约 1.6 TB/s", "zh").approximate
    assert stated("~400").half_unit == 50 and stated("400").half_unit == sp.Rational(1, 2)
    assert stated("9.89e14").half_unit == 5 * 10**11
    assert stated("3.94 × 10^14").value == 394 * 10**12


def test_words_expressions_and_relations_are_not_numbers() -> None:
    for text in ("B > 240", "2*B*D*F", "почти вдвое", "~linear, then plateau", "1,5"):
        assert read(text, "en") is None
    with pytest.raises(InputError, match="cannot read the stated value 'nearly'"):
        stated("nearly")


@settings(max_examples=examples(30))
@given(st.integers(60500, 61499))
def test_approximate_61000_holds_from_60500_to_61500(derived: int) -> None:
    assert judge_number("≈61,000", derived).verdict == Verdict.OK
    assert judge_number("61,000", derived).verdict != Verdict.OK or derived == 61000


def test_approximate_400_at_one_digit() -> None:
    assert judge_number("~400", 449).verdict == Verdict.OK
    assert judge_number("~400", 351).verdict == Verdict.OK
    assert judge_number("~400", 451).verdict == Verdict.MISMATCH
    assert judge_number("400", 449).verdict == Verdict.MISMATCH


def test_a_stated_unit_reads_the_derived_seconds() -> None:
    j = judge_number("1.01 ms", sp.Rational(1, 989))  # 1e12 FLOPs at 9.89e14 FLOP/s
    assert j.verdict == Verdict.OK and j.derived == "1000/989 ms"
    assert j.detail == "1.01112 ms at the printed precision"
    assert judge_number("1.1 ms", sp.Rational(1, 989)).verdict == Verdict.MISMATCH


def test_rounding_detail_shows_the_real_value() -> None:
    j = judge_number("1.3", sp.Rational(1299, 1000))
    assert j.verdict == Verdict.OK
    j = judge_number("1.39", sp.Rational(1399, 1000))
    assert j.verdict == Verdict.ROUNDING and j.detail == "truncated: 1.399 printed as 1.39"
