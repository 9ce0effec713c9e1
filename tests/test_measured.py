"""Arithmetic on measured numbers (issue 36, item 6): ``measured("22.0 ms")`` is a number
other claims compute from; what they compute is checked as arithmetic on data, counted
apart (MEASURED), neither a DEFINITION nor a value the engine derived."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symroof.claims.chapter import build_chapter, measured, on_data
from tests.conftest import ROOT, run_cli

CHAPTER = ROOT / "tests" / "data" / "measured"
STEP, MOVED = Fraction(22, 1000), Fraction(12 * 10**8)  # 22.0 ms, 1.2 GB
HBM = Fraction(335 * 10**10)  # H100 SXM HBM3, 3.35 TB/s (NVIDIA H100 datasheet)
VALUES = {"step_time": STEP, "tokens_per_second": 32 / STEP,
          "achieved_bandwidth": MOVED / STEP, "hbm_share": MOVED / STEP / HBM,
          "two_steps": 2 * STEP, "bandwidth_in_seconds": MOVED / STEP}
ON_STEP, ON_BOTH = "arithmetic on the measured 22.0 ms", \
    "arithmetic on the measured 1.2 GB, 22.0 ms"
ROWS = {
    "step_time": ("MEASURED", f"exact; {ON_STEP}"),
    "tokens_per_second": ("MEASURED", f"1454.55 at the printed precision; {ON_STEP}"),
    "achieved_bandwidth": ("MEASURED", f"5.45455e10 B/s at the printed precision; {ON_BOTH}"),
    "hbm_share": ("MEASURED", f"1.62822 % at the printed precision; {ON_BOTH}"),
    "two_steps": ("MISMATCH", f"derived 44 ms, stated 48 ms; {ON_STEP}"),
    "bandwidth_in_seconds": ("MISMATCH", "stated in ms, derived in B/s (5.45455e10 B/s); "
                             f"{ON_BOTH}"),
    "profile": ("UNVERIFIABLE", "a measurement: a profile of 12 runs"),
}


def test_a_measured_number_is_its_value_in_base_units_once_the_claims_are_built() -> None:
    step = measured("22.0 ms")
    assert on_data(32 / step) == (sp.Rational(16000, 11), ("22.0 ms",))
    assert on_data(sp.Integer(3)) == (3, ())


def test_the_values_are_the_arithmetic_on_the_data() -> None:
    (d,) = build_chapter(CHAPTER)
    got = {c.id: c.value for c in d.claims if c.id in VALUES}
    assert got == {k: sp.Rational(v.numerator, v.denominator) for k, v in VALUES.items()}
    kinds = {c.id: (c.kind, c.measured) for c in d.claims}
    assert kinds["achieved_bandwidth"] == ("number", ("1.2 GB", "22.0 ms"))
    assert kinds["profile"] == ("measurement", ())


def test_each_row_prints_its_verdict_and_detail_on_the_command_line_and_in_python() -> None:
    done = run_cli("verify", "--json", "--no-cache", "--no-timing", str(CHAPTER))
    assert done.returncode == 1, done.stderr  # the two slips fail the run
    rows = json.loads(done.stdout)["claims"]
    assert {r["id"]: (r["verdict"], r["detail"]) for r in rows} == ROWS
    assert {r["id"]: r["measured"] for r in rows}["achieved_bandwidth"] == ["1.2 GB", "22.0 ms"]
    from symroof.claims.runner import verify
    assert {v.claim.id: (str(v.verdict), v.detail)
            for v in verify(build_chapter(CHAPTER)).verdicts} == ROWS
    text = run_cli("verify", "--no-cache", "--no-timing", str(CHAPTER)).stdout
    assert text.rstrip().endswith(
        "7 claims in 1 derivation: 4 MEASURED, 1 UNVERIFIABLE, 2 MISMATCH")


def test_measured_holds_and_does_not_fail_a_run() -> None:
    from symroof.claims.rows import FAILING, VERDICTS
    from symroof.claims.rules import Verdict
    assert "MEASURED" in VERDICTS and "MEASURED" not in FAILING
    assert not Verdict.MEASURED.fails


@given(st.decimals(min_value="0.001", max_value="99999", places=3),
       st.decimals(min_value="0.001", max_value="99999", places=3), st.integers(1, 1024))
def test_arithmetic_on_measured_numbers_is_the_arithmetic_on_their_values(
        t: Decimal, b: Decimal, k: int) -> None:
    """Law: what a claim computes from measured numbers is the same arithmetic on the
    numbers as printed, in base units (ms are thousandths of a second, GB 10^9 bytes)."""
    step, moved = measured(f"{t} ms"), measured(f"{b} GB")
    value, used = on_data(k * moved / step + step)
    seconds, nbytes = Fraction(t) / 1000, Fraction(b) * 10**9
    want = k * nbytes / seconds + seconds
    assert value == sp.Rational(want.numerator, want.denominator)
    assert used == tuple(sorted((f"{t} ms", f"{b} GB")))


def test_a_value_judged_with_its_choices_takes_the_measured_numbers_in_each() -> None:
    from symroof.core.choices import tried
    step = measured("22.0 ms")
    got, used = on_data(tried(lambda c: 3 * step if c.latency == "off" else 4 * step))
    assert got.value == sp.Rational(88, 1000) and used == ("22.0 ms",)
    assert [v for _, v in got.alternatives] == [sp.Rational(66, 1000)]
