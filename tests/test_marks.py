"""How a claim's marks turn a comparison into its verdict (the MARKS table)."""

from __future__ import annotations

import sympy as sp

from symroof.claims.model import Claim, Conflict, Erratum, Law, Source
from symroof.claims.rules import FAILING, MARKS, Verdict
from symroof.claims.runner import run_claim

SRC = Source("book", language="en")


def verdict(**kw: object) -> tuple[str, str]:
    v = run_claim(Claim(kw.pop("id", "c"), SRC, "s", "q", **kw), "d")  # type: ignore[arg-type]
    return v.verdict, v.detail


def test_a_measurement_with_an_erratum_mark_reads_erratum() -> None:
    got, detail = verdict(stated="1983", kind="measurement", evidence="a bibliography",
                          erratum=Erratum("the paper is from 1983, not 1982"))
    assert got == Verdict.ERRATUM and detail == "known erratum: the paper is from 1983, not 1982"
    assert verdict(stated="1983", kind="measurement", evidence="x")[0] == Verdict.UNVERIFIABLE


def test_a_definition_is_counted_apart_but_can_still_fail() -> None:
    b = sp.Symbol("B", positive=True)
    assert verdict(stated="2*B", kind="definition", value=2 * b)[0] == Verdict.DEFINITION
    assert verdict(stated="3*B", kind="definition", value=2 * b)[0] == Verdict.MISMATCH


def test_a_definition_printed_rounded_is_a_definition_that_says_how_it_is_printed() -> None:
    # a restatement cannot fail whether the text prints it whole or truncated
    got, detail = verdict(stated="9.89e14", kind="definition", value=sp.Integer(989500000000000),
                          restates="no engine computation: restates sparse / 2")
    assert got == Verdict.DEFINITION
    assert detail == ("no engine computation: restates sparse / 2; truncated: 9.895e14 printed "
                      "as 9.89e14")
    assert verdict(stated="9.7e14", kind="definition", value=989500000000000)[0] == \
        Verdict.MISMATCH


def test_an_input_chosen_to_fit_makes_the_claim_unverifiable_with_what_it_gives() -> None:
    got, detail = verdict(stated="3", value=sp.Rational(253, 100),
                          assumed="HBM 2765 GB/s (the text gives none)")
    assert got == Verdict.UNVERIFIABLE
    assert detail.startswith("assumes HBM 2765 GB/s (the text gives none), which gives 253/100")


def test_boolean_laws_decide_claims_in_words() -> None:
    assert verdict(stated="linearly", kind="qualitative",
                   value=Law(True, "degree 1 in B"))[0] == Verdict.OK
    got, detail = verdict(stated="linearly", kind="qualitative",
                          value=Law(False, "degree 1 in B"))
    assert got == Verdict.MISMATCH and detail == "degree 1 in B: does not hold"


def test_an_unknown_conflict_makes_its_claims_inconsistent_a_known_one_does_not() -> None:
    c = Conflict("TPU v5e HBM", (("8.2e11 B/s", ("a",)), ("8.1e11 B/s", ("b",))), "t")
    got, detail = verdict(id="b", stated="2", value=2, conflicts=(c,))
    assert got == Verdict.INCONSISTENT and not got.fails
    assert detail == "TPU v5e HBM printed as 8.2e11 B/s in a; 8.1e11 B/s in b"
    known = Conflict(c.figure, c.values, "t", known="the problems use the ch. 2 table")
    assert verdict(id="b", stated="2", value=2, conflicts=(known,))[0] == Verdict.OK


def test_marks_table_never_turns_a_failure_into_a_pass_silently() -> None:
    for (name, before), after in MARKS.items():
        if before in (Verdict.ERROR, Verdict.TIMEOUT):
            raise AssertionError(f"{name} turns {before}")
        if before in FAILING and after not in FAILING:
            assert (name, before) in {("erratum", Verdict.MISMATCH),
                                      ("assumed", Verdict.MISMATCH)}, (name, before, after)
