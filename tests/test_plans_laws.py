"""Laws of the plan layer that need no model: strategy specs, the 1F1B pipeline, ZeRO's
memory per stage, MFU, and the factorisations a plan search walks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.plans.factor import divisors, factorisations
from symroof.plans.mfu import mfu_from, palm_flops_per_token
from symroof.plans.pipeline import bubble_fraction, pipeline_cost, schedule
from symroof.plans.strategy import parse_strategy
from symroof.plans.zero import zero_states
from tests.conftest import examples

P, N = sp.symbols("P N", positive=True)
# mixed-precision Adam as ZeRO's paper counts it: fp16 weights and gradients (2 + 2 bytes),
# fp32 master weights, momentum and variance (K = 12 bytes) per parameter
ADAM = {"weights": 2, "gradients": 2, "optimizer": 12}


# --- ZeRO (Rajbhandari et al., 2020, section 5 and figure 1) ---------------------------

@pytest.mark.parametrize(("stage", "paper"), [
    (0, 16 * P), (1, 4 * P + 12 * P / N), (2, 2 * P + 14 * P / N), (3, 16 * P / N)])
def test_zero_memory_per_device_is_the_papers(stage: int, paper: sp.Expr) -> None:
    total = sum(zero_states(P, N, stage, ADAM).values())
    assert sp.expand(total - paper) == 0


@settings(max_examples=examples(30))
@given(st.integers(1, 10**12), st.integers(1, 4096), st.integers(0, 2))
def test_each_stage_never_needs_more_than_the_one_before(p: int, n: int, stage: int) -> None:
    lower = sum(zero_states(p, n, stage, ADAM).values())
    higher = sum(zero_states(p, n, stage + 1, ADAM).values())
    assert higher <= lower
    assert (higher == lower) == (n == 1)


def test_the_papers_7_5b_model_on_64_devices() -> None:
    # the paper's figure 1: Psi = 7.5B, N_d = 64 -> 120 GB, 31.4 GB, 16.6 GB, 1.9 GB
    got = [sum(zero_states(7_500_000_000, 64, k, ADAM).values()) / 10**9 for k in range(4)]
    assert [round(float(g), 1) for g in got] == [120.0, 31.4, 16.6, 1.9]


def test_zero_stage_out_of_range_is_an_input_error() -> None:
    with pytest.raises(InputError, match="ZeRO stage must be 0, 1, 2 or 3, got 4"):
        zero_states(P, N, 4, ADAM)


# --- the 1F1B pipeline (Narayanan et al., 2021, section 2.2) ---------------------------

def test_bubble_is_p_minus_1_over_m_plus_p_minus_1() -> None:
    p, m = sp.symbols("p m", positive=True, integer=True)
    assert sp.cancel(bubble_fraction(p, m) - (p - 1) / (m + p - 1)) == 0


@settings(max_examples=examples(40))
@given(st.integers(1, 8), st.integers(1, 16), st.fractions(Fraction(1, 4), 4),
       st.fractions(Fraction(0), 8))
def test_the_played_schedule_has_the_derived_makespan(p: int, m: int, tf: Fraction,
                                                      tb: Fraction) -> None:
    played = schedule(p, m, tf, tb)
    f, b = sp.symbols("t_f t_b", positive=True)
    makespan = pipeline_cost(p, m, f, b).makespan.subs({f: sp.Rational(tf.numerator,
                                                                      tf.denominator),
                                                        b: sp.Rational(tb.numerator,
                                                                       tb.denominator)})
    assert sp.Rational(played.makespan.numerator, played.makespan.denominator) == makespan
    assert played.bubble_fraction() == Fraction(p - 1, m + p - 1)


@settings(max_examples=examples(30))
@given(st.integers(1, 8), st.integers(1, 16))
def test_1f1b_keeps_at_most_p_minus_s_microbatches_in_flight(p: int, m: int) -> None:
    played = schedule(p, m)
    assert played.in_flight == tuple(min(p - s, m) for s in range(p))
    # every stage runs each microbatch forward once and backward once, forward first
    for s in range(p):
        mine = [x for x in played.slots if x.stage == s]
        assert sorted((x.kind, x.micro) for x in mine) == sorted(
            [("F", i) for i in range(m)] + [("B", i) for i in range(m)])
        for i in range(m):
            fwd = next(x for x in mine if x.kind == "F" and x.micro == i)
            bwd = next(x for x in mine if x.kind == "B" and x.micro == i)
            assert fwd.end <= bwd.start


def test_a_pipeline_of_no_microbatches_is_an_input_error() -> None:
    with pytest.raises(InputError, match="at least 1 stage and 1 microbatch, got 4 stages "
                                         "and 0 microbatches"):
        schedule(4, 0)


# --- MFU (Chowdhery et al., 2022, appendix B) ------------------------------------------

def test_palm_540b_mfu_is_46_2_percent() -> None:
    # PaLM 540B: N = 540.35e9, L = 118, H = 48, Q = 256, T = 2048; 238.3K tokens/s on
    # 6144 TPU v4 chips at 275 TFLOP/s (table 3: 46.2% MFU)
    u = mfu_from(540_350_000_000, 118, 48, 256, 2048, 238_300, 6144, 275 * 10**12)
    assert round(float(u.value) * 100, 1) == 46.2
    assert u.flops_per_token == 6 * 540_350_000_000 + 12 * 118 * 48 * 256 * 2048


@settings(max_examples=examples(30))
@given(st.integers(1, 10**12), st.integers(1, 200), st.integers(1, 128),
       st.integers(1, 512), st.integers(1, 10**5))
def test_palm_count_is_linear_in_params_and_in_context(n: int, layer: int, h: int, q: int,
                                                       t: int) -> None:
    f = palm_flops_per_token
    assert f(n, layer, h, q, 2 * t) - f(n, layer, h, q, t) == 12 * layer * h * q * t
    assert f(2 * n, layer, h, q, t) - f(n, layer, h, q, t) == 6 * n


def test_mfu_needs_a_positive_throughput() -> None:
    with pytest.raises(InputError, match="throughput must be positive, got 0"):
        mfu_from(10, 1, 1, 1, 1, 0, 1, 10)


# --- strategies ------------------------------------------------------------------------

def test_a_mix_keeps_its_kinds_in_a_canonical_order() -> None:
    s = parse_strategy("tp=Y, fsdp=X")
    assert s.kinds == ("zero3", "tp") and str(s) == "fsdp=X,tp=Y"
    assert parse_strategy("dp=pods,zero2=X").data_axes == ("pods", "X")


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty strategy"),
    ("fsdp=X,,tp=Y", "empty entry in 'fsdp=X,,tp=Y'"),
    ("mp=X", "unknown strategy 'mp' in 'mp=X'"),
    ("fsdp=X,tp=X", "axis 'X' serves both fsdp and tp"),
    ("tp=X,tp=Y", "'tp' is given twice"),
    ("zero1=X,fsdp=Y", "one ZeRO stage at a time, got zero1 and zero3"),
    ("dp=X,sp", "'sp' (sequence parallel) needs tp=AXES"),
    ("sp=Y,tp=Y", "'sp' is a flag on the tp axes"),
    ("tp=2Y", "bad axis name '2Y' in 'tp=2Y'"),
    ("fsdp", "expected KIND=AXES, got 'fsdp'"),
])
def test_bad_strategies_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_strategy(spec)
    assert str(err.value).startswith("strategy: ") and message in str(err.value)


def test_a_strategy_must_cover_the_mesh_exactly() -> None:
    s = parse_strategy("fsdp=X")
    with pytest.raises(InputError, match="mesh axis 'Y' has no strategy"):
        s.check_mesh(["X", "Y"])
    with pytest.raises(InputError, match="axis 'X' is not on the mesh"):
        parse_strategy("fsdp=X,tp=Y").check_mesh(["Y"])


# --- factorisations --------------------------------------------------------------------

@settings(max_examples=examples(30))
@given(st.integers(1, 2000), st.integers(1, 4))
def test_factorisations_are_every_ordered_split_once(n: int, k: int) -> None:
    rows = factorisations(n, k)
    assert (rows.prod(axis=1) == n).all()
    assert len({tuple(r) for r in rows.tolist()}) == len(rows)
    # the count is multiplicative over prime powers: prod C(e + k - 1, k - 1)
    count = 1
    for e in sp.factorint(n).values():
        count *= int(sp.binomial(e + k - 1, k - 1))
    assert len(rows) == count


def test_divisors_and_bad_counts() -> None:
    assert divisors(1) == [1] and divisors(97) == [1, 97]
    with pytest.raises(InputError, match="a chip count must be an integer from 1"):
        factorisations(0, 3)
    assert np.array_equal(factorisations(1, 3), np.array([[1, 1, 1]]))
