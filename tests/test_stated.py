"""Stated values read as a reader reads them: units, separators, decimal marks, and
approximation marks, stated as laws over generated numbers and formats."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.claims.rules import Verdict, judge_number
from symroof.claims.stated import (
    APPROXIMATE,
    BARE_DIMENSIONS,
    bare_refusal,
    read,
    stated,
    with_unit,
)
from symroof.core.errors import InputError
from symroof.core.parse import APPROX_AFTER, MULTIPLIERS
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
    approx = stated(f"{text} {mark}" if mark in APPROX_AFTER else f"{mark} {text}", lang)
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


# issue 35: one reading of a printed number (the table of docs/numbers.md)
@pytest.mark.parametrize(("text", "lang", "value", "half"), [
    ("52B params", "en", 52 * 10**9, 5 * 10**8),
    ("1.4T tokens", "en", 14 * 10**11, 5 * 10**10),
    ("7K", "en", 7000, 500),
    ("2 billion", "en", 2 * 10**9, 5 * 10**8),
    ("7 тыс.", "ru", 7000, 500),
    ("1,5 млн", "ru", 1500000, 50000),
    ("3万", "zh", 30000, 5000),
    ("1.2亿", "zh", 120000000, 5000000),
    (".2432e3", "en", sp.Rational(1216, 5), sp.Rational(1, 20)),
    ("0.2432e3", "en", sp.Rational(1216, 5), sp.Rational(1, 20)),
    ("2432.e-1", "en", sp.Rational(1216, 5), sp.Rational(1, 20)),
    ("243.", "en", 243, sp.Rational(1, 2)),
    ("\u2212243.2", "en", sp.Rational(-1216, 5), sp.Rational(1, 20)),
    ("２４３", "zh", 243, sp.Rational(1, 2)),
    ("61\u2007000", "ru", 61000, sp.Rational(1, 2)),
    ("243\u2030", "en", sp.Rational(243, 1000), sp.Rational(1, 2000)),
    ("24.3 percent", "en", sp.Rational(243, 1000), sp.Rational(1, 2000)),
    ("24,3 процента", "ru", sp.Rational(243, 1000), sp.Rational(1, 2000)),
    ("5 毫秒", "zh", sp.Rational(1, 200), sp.Rational(1, 2000)),
    ("3 微秒", "zh", sp.Rational(3, 10**6), sp.Rational(1, 2 * 10**6)),
    ("2.43×10⁸", "en", 243 * 10**6, 5 * 10**5),
    ("243 ± 1", "en", 243, 1),
    ("1.01 ± 0.02 ms", "en", sp.Rational(101, 100000), sp.Rational(2, 100000)),
])
def test_notations_the_table_reads(text: str, lang: str, value: object, half: object) -> None:
    s = stated(text, lang)
    assert (s.value, s.half_unit) == (value, half)


@pytest.mark.parametrize("text", ["around 243", "circa 243", "ca. 243", "nearly 243",
                                  "almost 243", "approx. 243", "≃243", "∼243", "〜243",
                                  "～243", "≅243", "приблизительно 243", "порядка 243",
                                  "почти 243", "ок. 243", "прибл. 243", "约为243", "近243",
                                  "将近243", "大概243", "差不多243", "243左右", "243上下",
                                  "243 or so"])
def test_approximation_words_before_and_after(text: str) -> None:
    s = stated(text, "zh" if any("\u4e00" <= c <= "\u9fff" for c in text) else "en")
    assert s.approximate and s.value == 243


def test_a_bare_b_is_bytes_with_a_count_reading_beside_it() -> None:
    s = stated("52B")
    assert (s.value, s.unit, s.dims) == (52, "B", (1, 0, 0))
    assert s.as_count is not None and s.as_count.value == 52 * 10**9 and s.as_count.count
    assert stated("52B parameters").count and stated("52B parameters").value == 52 * 10**9


@pytest.mark.parametrize(("text", "says"), [
    ("2৪3", "the digit '৪' (U+09EA BENGALI DIGIT FOUR) is of another script"),
    ("٢٤٣", "U+0662 ARABIC-INDIC DIGIT TWO"),
    ("𝟐𝟒𝟑", "MATHEMATICAL BOLD DIGIT TWO"),
])
def test_digits_of_other_scripts_are_refused_by_name(text: str, says: str) -> None:
    with pytest.raises(InputError, match="only ASCII and full-width digits") as got:
        stated(text)
    assert says in str(got.value) and "docs/numbers.md" in str(got.value)


def test_one_precision_rule_for_every_written_form() -> None:
    # 1.5e12 for 1.555e12 is a truncation exactly as 8755 is for 8755.56
    assert judge_number("1.5e12", sp.Rational(1555, 1000) * 10**12).verdict == \
        Verdict.ROUNDING
    assert judge_number("8755", sp.Rational(78800, 9)).verdict == Verdict.ROUNDING
    for text in (".2432e3", "0.2432e3", "24.32e1", "2432e-1", "2432.e-1"):
        assert judge_number(text, sp.Rational(19700, 81)).verdict == Verdict.OK, text
    # one significant digit stays within the tolerance: 2 for 2.9 is no truncation
    assert judge_number("2", sp.Rational(29, 10)).verdict == Verdict.MISMATCH
    # rounding the other way stays within the tolerance
    assert judge_number("1.1 ms", sp.Rational(1, 989)).verdict == Verdict.MISMATCH


def test_full_width_digits_are_shown_as_read() -> None:
    j = judge_number("２４３", sp.Rational(19700, 81))
    assert j.verdict == Verdict.OK and j.detail == "243.21 at the printed precision"
    j = judge_number("２５０", sp.Rational(19700, 81))
    assert j.detail == "derived 243.21, stated ２５０ (read as 250)"


@settings(max_examples=examples(40))
@given(st.integers(1, 999), st.sampled_from(sorted(MULTIPLIERS)))
def test_a_multiplier_scales_value_and_precision_alike(n: int, word: str) -> None:
    lang = "zh" if not word.isascii() and word[0] > "\u3000" else \
        "ru" if not word.isascii() else "en"
    s = stated(f"{n}{'' if lang == 'zh' else ' '}{word}", lang)
    assert s.count and s.value == n * 10 ** MULTIPLIERS[word]
    assert s.half_unit == sp.Rational(10 ** MULTIPLIERS[word], 2)


@settings(max_examples=examples(40))
@given(st.integers(0, 10**6), st.integers(0, 99))
def test_full_width_digits_read_as_their_ascii_form(whole: int, frac: int) -> None:
    ascii_form = f"{whole}.{frac:02d}"
    wide = "".join(chr(0xFF10 + int(c)) if c.isdigit() else "．" for c in ascii_form)
    a, b = stated(ascii_form, "zh"), stated(wide, "zh")
    assert (a.value, a.half_unit) == (b.value, b.half_unit) and b.shown == ascii_form


# a number printed bare and the unit its claim declares (issue 35)
DECLARED = ["ms", "us", "s", "GB", "GiB", "TB/s", "TFLOP/s", "1/s", "%", "мс", "毫秒"]


@settings(max_examples=examples(40))
@given(st.integers(1, 10**5), st.integers(0, 3), st.sampled_from(DECLARED),
       st.sampled_from(["", "~", "about "]), st.sampled_from(["en", "ru", "zh"]))
def test_a_declared_unit_reads_as_the_unit_printed(mantissa: int, places: int, unit: str,
                                                   mark: str, lang: str) -> None:
    """One reading: a bare number with its unit declared is the number printed with it."""
    shown = f"{mantissa / 10**places:.{places}f}"
    if lang == "ru":
        shown = shown.replace(".", ",")
    bare = stated(f"{mark}{shown}", lang)
    said = stated(with_unit(f"{mark}{shown}", unit, lang), lang)
    printed = stated(f"{mark}{shown} {unit}", lang)
    assert (said.value, said.half_unit, said.unit) == \
        (printed.value, printed.half_unit, printed.unit)
    assert said.value == bare.value * said.scale
    assert said.half_unit == bare.half_unit * said.scale


@pytest.mark.parametrize(("dims", "refused"), [
    ((0, 0, 0), False), ((0, 1, 0), False), ((-1, 1, 0), False), (None, False),
    ((0, 0, 1), True), ((1, 0, 0), True), ((1, 0, -1), True), ((0, 1, -1), True),
    ((0, 0, -1), True)])
def test_a_bare_number_suits_counts_flops_and_intensities_only(
        dims: tuple[int, int, int] | None, refused: bool) -> None:
    why = bare_refusal(read("26.4"), dims, "26.4")
    assert (why is not None) == refused
    if dims is not None and dims not in BARE_DIMENSIONS:
        assert why is not None and why.startswith(
            "the stated value '26.4' is printed without a unit, and the claim's value is ")
    # a printed unit, a count's suffix or a declared unit: nothing to refuse
    for said in ("26.4 ms", "26.4M", with_unit("26.4", "us")):
        assert bare_refusal(read(said), dims, said) is None


def test_a_claim_of_a_module_declares_its_unit_too() -> None:
    from symroof.claims.model import Derivation, Source
    from symroof.claims.rules import judge
    d = Derivation.begin("demo", "demo", Source("a book"))
    c = d.claim("t", stated="26.4", unit="us", statement="", quote="it takes 26.4 us",
                derive=lambda: sp.Rational(238, 9) / 10**6, dimension=(0, 0, 1))
    assert c.stated == "26.4 us"
    j = judge(c)
    assert j.verdict == Verdict.OK and j.detail == "26.4444 us at the printed precision"
    with pytest.raises(InputError) as got:
        d.claim("u", stated="26.4", statement="", quote="it takes 26.4 us",
                derive=lambda: sp.Rational(238, 9) / 10**6, dimension=(0, 0, 1))
    assert str(got.value).startswith("claim 'u': stated: the stated value '26.4' is printed "
                                     "without a unit, and the claim's value is a time")
    with pytest.raises(InputError, match="claim 'v': unit: unit 'parsecs' is not a unit"):
        d.claim("v", stated="26.4", unit="parsecs", statement="", quote="26.4",
                derive=lambda: 1)


@settings(max_examples=60, deadline=None)
@given(digits=st.integers(1, 99999), unit=st.sampled_from(["ms", "us", "s", "GB", "MiB",
                                                          "GB/s", "TFLOP/s", "FLOP"]),
       derived=st.fractions(min_value=sp.Rational(1, 10**6), max_value=10**6),
       dimension=st.sampled_from([(0, 0, 1), (1, 0, 0), (1, 0, -1), (0, 1, -1), (-1, 1, 0),
                                  (0, 0, 0), None]),
       op=st.sampled_from([">", "<", ">=", "<="]))
def test_a_relation_s_bound_with_a_unit_reads_as_the_number_stated_alone(
        digits: int, unit: str, derived: Fraction, dimension: tuple[int, int, int] | None,
        op: str) -> None:
    # one question, one answer: the bound of "T > 26.4 us" is judged as "26.4 us" is, in
    # its unit and against the dimension of the value it is compared with
    from symroof.claims.rules import TOLERANCE, judge_relation
    bound = f"{digits / 100:g} {unit}"
    value = sp.Rational(derived.numerator, derived.denominator)
    rel = sp.Rel(sp.Symbol("T", positive=True), value, op)
    alone = judge_number(bound, value, TOLERANCE, dimension=dimension)
    judged = judge_relation(f"T {op} {bound}", rel, TOLERANCE, dimension=dimension)
    assert (judged.verdict, judged.detail) == (alone.verdict, alone.detail)


@settings(max_examples=60, deadline=None)
@given(digits=st.integers(1, 99999), unit=st.sampled_from(["ms", "us", "s", "GB", "MiB",
                                                          "GB/s", "TFLOP/s", "FLOP", "1/s"]),
       dimension=st.sampled_from([(0, 0, 1), (1, 0, 0), (1, 0, -1), (0, 1, -1), (-1, 1, 0),
                                  (0, 1, 0), (0, 0, -1), (0, 0, 0), None]),
       op=st.sampled_from([">", "<", ">=", "<="]), left=st.booleans())
def test_a_relation_s_bare_bound_is_refused_or_read_as_a_bare_number_is(
        digits: int, unit: str, dimension: tuple[int, int, int] | None, op: str,
        left: bool) -> None:
    # one question, one answer: the bound of "T > 26.4" printed bare is refused exactly
    # when "26.4" stated alone is, and with the row's unit it reads as "26.4 us" does
    from symroof.claims.model import Claim, Source
    from symroof.claims.rules import judge
    bound = f"{digits / 100:g}"
    relation = f"{bound} {op} T" if left else f"T {op} {bound}"
    src = Source("b", language="en")
    value = sp.Symbol("T", positive=True) > 1
    alone = bare_refusal(read(bound), dimension, bound)
    try:
        Claim("r", src, "", relation, relation, None, "relation", value=value,
              dimension=dimension)
        refused = None
    except InputError as exc:
        refused = exc.message
    assert (refused is None) == (alone is None)
    if refused is not None:
        assert refused.startswith(f"the bound '{bound}' of the stated relation "
                                  f"'{relation}' is printed without a unit")
        assert alone is not None
        first = alone.split('unit = "')[1].split('"')[0]  # the unit the refusal suggests
        assert refused.split("does not say")[1] == alone.split("does not say")[1].replace(
            f'("{bound} {first}")', f'("{with_unit(relation, first)}")')
    declared = with_unit(relation, unit)
    assert declared == (f"{bound} {unit} {op} T" if left else f"T {op} {bound} {unit}")
    derived = sp.Rational(digits, 7)
    rel = sp.Rel(derived, sp.Symbol("T", positive=True), op) if left else \
        sp.Rel(sp.Symbol("T", positive=True), derived, op)
    got = judge(Claim("r", src, "", declared, declared, None, "relation", value=rel,
                      dimension=dimension))
    alone_j = judge_number(f"{bound} {unit}", derived, dimension=dimension)
    assert (got.verdict, got.detail) == (alone_j.verdict, alone_j.detail)


FORMULA_UNITS = {"ms": ("en", sp.Rational(1, 10**3), (0, 0, 1)),
                 "us": ("en", sp.Rational(1, 10**6), (0, 0, 1)),
                 "мкс": ("ru", sp.Rational(1, 10**6), (0, 0, 1)),
                 "毫秒": ("zh", sp.Rational(1, 10**3), (0, 0, 1)),
                 "GB": ("en", sp.Integer(10**9), (1, 0, 0)),
                 "GiB": ("en", sp.Integer(2**30), (1, 0, 0)),
                 "TB/s": ("en", sp.Integer(10**12), (1, 0, -1)),
                 "tokens": ("en", sp.Integer(1), (0, 0, 0)),
                 "thousand": ("en", sp.Integer(10**3), (0, 0, 0))}


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 999), c=st.integers(0, 99), unit=st.sampled_from(sorted(FORMULA_UNITS)),
       dimension=st.sampled_from([(0, 0, 1), (1, 0, 0), (1, 0, -1), (0, 0, 0), None]),
       op=st.sampled_from([">", "<", ">=", "<="]), spaced=st.booleans(), left=st.booleans())
def test_a_relation_s_formula_bound_with_a_unit_reads_in_that_unit(
        k: int, c: int, unit: str, dimension: tuple[int, int, int] | None, op: str,
        spaced: bool, left: bool) -> None:
    # "T > k*D/W + c us" (or "k*D/W + c us < T") is the formula times one us: equal to the
    # derived bound in seconds exactly when the formula is; a unit of another dimension
    # than the bounded value's is a MISMATCH that names both, as for a number
    from symroof.claims.model import Claim, Source
    from symroof.claims.rules import judge
    lang, scale, dims = FORMULA_UNITS[unit]
    one = read(f"1 {unit}", lang)
    assert one is not None and one.scale == scale
    shown = one.display_unit  # ms for 毫秒, us for мкс
    D, W, T = sp.symbols("D W T", positive=True)
    formula = f"{k} * D / W + {c}" if spaced else f"{k}*D/W+{c}"
    flipped = {">": "<", "<": ">", ">=": "<=", "<=": ">="}[op]
    stated_ = f"{formula} {unit} {flipped} T" if left else f"T {op} {formula} {unit}"
    src = Source("b", language=lang)

    def judged(coefficient: int) -> tuple[str, str]:
        rel = sp.Rel(T, (coefficient * D / W + c) * scale, op)
        got = judge(Claim("r", src, "", stated_, stated_, None, "relation", value=rel,
                          dimension=dimension))
        return str(got.verdict), got.detail

    right, wrong = judged(k), judged(k + 1)
    if dimension is not None and dimension != dims:
        assert right[0] == wrong[0] == "MISMATCH"
        said = "as a count" if dims == (0, 0, 0) else f"in {shown}"
        assert right[1].startswith(f"stated {said}, derived in ")
    else:
        assert right[0] == "OK" and wrong[0] == "MISMATCH"
        assert right[1].endswith("" if scale == 1 else f" (the bound read in {shown})")


@pytest.mark.parametrize(("relation", "tail"), [
    ("T > 2*D furlongs", "furlongs"), ("T > 2*D/W + 7 fortnights", "fortnights"),
    ("T > 2*D us us", "us us"), ("2*D parsecs < T", "parsecs")])
def test_a_formula_bound_followed_by_words_no_table_reads_is_refused(relation: str,
                                                                     tail: str) -> None:
    from symroof.claims.model import Claim, Source
    bound = relation.split(" > ")[1] if " > " in relation else relation.split(" < ")[0]
    with pytest.raises(InputError) as got:
        Claim("r", Source("b"), "", relation, relation, None, "relation",
              value=sp.Symbol("T", positive=True) > 1)
    assert got.value.message == (
        f"the bound {bound!r} of the stated relation {relation!r} is a formula followed by "
        f"{tail!r}, which is not a unit, a multiplier or a count noun of the table of "
        "printed numbers (docs/numbers.md)")
