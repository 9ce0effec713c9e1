"""Attention traffic from loop structure, the Theta forms and the M/d^2 reduction, and the
online-softmax recurrence (symbolic, and NumPy on random blocks with overflow-size scores)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import DerivationError, InputError
from symroof.core.parse import parse_expr
from symroof.core.sizes import sizes
from symroof.engine.asymptotics import theta
from symroof.topics.attention import (
    absorb,
    block_sizes,
    count_tiled,
    dominance_condition,
    reduction,
    score_bytes,
    standard_attention,
    tiled_attention,
)
from symroof.topics.online_softmax import (
    block_state,
    merge,
    online_softmax,
    online_softmax_recurrence,
    softmax_shift_residual,
)
from tests.conftest import examples

N, d, M = sizes("N d M")


# ---------------------------------------------------------------- traffic

def test_standard_attention_kernels() -> None:
    std = standard_attention(N, d)
    assert std.kernel(1) == 2 * N * d + N**2      # read Q, K; write S
    assert std.kernel(2) == 2 * N**2              # read S; write A
    assert std.kernel(3) == N**2 + 2 * N * d      # read A, V; write O
    assert std.total == 4 * N**2 + 4 * N * d
    assert theta(std.total) == N**2 + N * d
    assert theta(std.total, "N->oo") == N**2
    assert std.extra_memory == 2 * N**2
    with pytest.raises(InputError, match="kernels 1 to 3, not 4"):
        std.kernel(4)


def test_score_matrix_bytes() -> None:
    assert score_bytes(8192, 2) == 134_217_728  # 128 MiB, 134.2 decimal MB


def test_block_sizes_round_up_in_algorithm_1() -> None:
    assert block_sizes(M, d) == (sp.ceiling(M / (4 * d)), sp.Min(sp.ceiling(M / (4 * d)), d))
    assert block_sizes(1000, 100) == (3, 3)
    assert block_sizes(1000, 100, "floor") == (2, 2)
    # A100 shared memory as FP16 words, d = 64: both roundings give 384 (B_r = d = 64)
    assert block_sizes(98304, 64) == block_sizes(98304, 64, "floor") == (384, 64)
    with pytest.raises(InputError, match="rounding must be one of ceil, floor, got 'round'"):
        block_sizes(M, d, "round")


def test_tiled_attention_exact_and_theta() -> None:
    t = tiled_attention(N, d, M)
    tc = sp.ceiling(N / sp.ceiling(M / (4 * d)))
    assert t.T_c == tc
    # K, V once; per K/V tile: read Q, O, l, m and write O, l, m for every row
    assert sp.expand(t.total - (2 * N * d + tc * N * (3 * d + 4))) == 0
    assert t.loop_total("outer") == 2 * N * d
    assert t.relaxed == sp.expand(2 * N * d + 4 * N * d / M * N * (3 * d + 4))
    assert t.theta == N * d + N**2 * d**2 / M
    assert theta(t.theta, "N->oo") == N**2 * d**2 / M
    assert t.extra_memory == 2 * N
    with pytest.raises(DerivationError, match="no K/V block fits: M = 100 < 4 d = 256"):
        tiled_attention(1000, 64, 100, "floor")


@pytest.mark.slow
@settings(max_examples=examples(80))
@given(st.integers(1, 120), st.integers(1, 12), st.integers(0, 600),
       st.sampled_from(["ceil", "floor"]))
def test_symbolic_count_matches_running_the_loops(n: int, dh: int, extra: int,
                                                   rounding: str) -> None:
    m = 4 * dh + extra
    symbolic = tiled_attention(N, d, M, rounding).total.subs({N: n, d: dh, M: m})
    assert symbolic == count_tiled(n, dh, m, rounding)


def test_reduction_is_m_over_d_squared() -> None:
    std, t = standard_attention(N, d), tiled_attention(N, d, M)
    exact_limit = sp.limit(std.total / t.relaxed, N, sp.oo)
    assert sp.simplify(exact_limit - M / (d * (3 * d + 4))) == 0
    assert reduction(std, t) == M / d**2
    theta_limit = sp.limit((N**2 + N * d) / (N * d + N**2 * d**2 / M), N, sp.oo)
    assert theta_limit == M / d**2


def test_absorb_and_dominance() -> None:
    assert absorb(2 * N * d + 12 * N**2 * d**2 / M + 16 * N**2 * d / M, [d]) == \
        N * d + N**2 * d**2 / M
    # without d >= 1 nothing is absorbed
    assert absorb(N**2 * d / M + N**2 * d**2 / M) == N**2 * d / M + N**2 * d**2 / M
    assert absorb(M / (d * (3 * d + 4)), [d]) == M / d**2
    assert dominance_condition(N**2 * d**2 / M, N * d, M) == sp.Le(M, N * d)
    assert dominance_condition(N**2 * d**2 / M, N * d, N) == sp.Ge(N, M / d)


# ---------------------------------------------------------------- online softmax, symbolic

def test_recurrence_derived_for_any_block_lengths() -> None:
    r = online_softmax_recurrence()
    assert r.holds
    assert set(r.residuals) == {"m_new", "d_new", "O_new"}
    expected_d = parse_expr("d1*exp(m1 - m_new) + d2*exp(m2 - m_new)")
    expected_o = parse_expr("d1*exp(m1 - m_new)/d_new*O1 + exp(m2 - m_new)/d_new*U2")
    assert sp.simplify(r.d_new - expected_d) == 0
    assert sp.simplify(r.o_new - expected_o) == 0
    assert r.m_new == parse_expr("max(m1, m2)")
    # a wrong rescaling is not the same expression
    wrong = parse_expr("d1*exp(m_new - m1) + d2*exp(m_new - m2)")
    assert sp.simplify(r.d_new - wrong) != 0


def test_softmax_shift_invariance() -> None:
    assert softmax_shift_residual() == 0


# ---------------------------------------------------------------- online softmax, NumPy

def reference(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """softmax(scores) @ values in 60-digit arithmetic (no overflow at any size)."""
    with mpmath.workdps(60):
        w = [mpmath.exp(mpmath.mpf(float(s))) for s in scores]
        total = mpmath.fsum(w)
        return np.array([float(mpmath.fsum(wi * float(v) for wi, v in zip(w, col,
                                                                          strict=True)) / total)
                         for col in values.T])


def test_two_blocks_by_hand() -> None:
    a = block_state(np.array([0.0, np.log(3.0)]), np.array([[1.0], [0.0]]))
    b = block_state(np.array([np.log(4.0)]), np.array([[2.0]]))
    assert (a.m, a.d) == (np.log(3.0), pytest.approx(4 / 3))
    merged = merge(a, b)
    assert merged.m == np.log(4.0)
    # weights 1, 3, 4 over values 1, 0, 2: (1 + 8) / 8
    assert merged.d == pytest.approx(2.0)
    assert merged.o[0] == pytest.approx(9 / 8)


@settings(max_examples=examples(60))
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from([0.0, 800.0, -800.0, 5000.0]),
       st.integers(0, 2**32 - 1))
def test_online_softmax_matches_reference(n: int, block: int, shift: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n) * 20 + shift
    values = rng.normal(size=(n, 3))
    got = online_softmax(scores, values, block)
    assert np.isfinite(got.o).all()
    np.testing.assert_allclose(got.o, reference(scores, values), rtol=1e-10, atol=1e-12)
    assert got.m == scores.max()


def test_overflowing_scores() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=64) * 10 + 1000.0  # exp(1000) overflows float64
    values = rng.normal(size=(64, 4))
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(scores) / np.exp(scores).sum() @ values
    assert not np.isfinite(naive).any()
    got = online_softmax(scores, values, 16)
    np.testing.assert_allclose(got.o, reference(scores, values), rtol=1e-10, atol=1e-12)
    # block size does not matter
    np.testing.assert_allclose(online_softmax(scores, values, 1).o, got.o, rtol=1e-12)


def test_online_softmax_input_errors() -> None:
    with pytest.raises(InputError, match="block size must be at least 1, got 0"):
        online_softmax(np.zeros(3), np.zeros((3, 1)), 0)
    with pytest.raises(InputError, match=r"got \(3,\) and \(2, 1\)"):
        block_state(np.zeros(3), np.zeros((2, 1)))
