"""The FlashAttention section of the Russian appendix (seed 002): standard attention's HBM
traffic, the online softmax, the tiled algorithm's traffic, and the A100 measurements."""

from __future__ import annotations

import numpy as np
import sympy as sp

from symroof import (
    DerivationError,
    Recurrence,
    absorb,
    block_sizes,
    dominance_condition,
    dtype_bytes,
    online_softmax,
    online_softmax_recurrence,
    positive_root,
    reduction,
    score_bytes,
    sizes,
    softmax_shift_residual,
    standard_attention,
    symbol,
    theta,
    tiled_attention,
)
from symroof.claims import Chapter, law, measured, within


def online_error(seed: int = 0) -> float:
    """Largest |online softmax - reference| over random blocks, scores up to ~1000 (where
    exp overflows float64) included; the reference subtracts the global max."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for scale, shift in ((1.0, 0.0), (30.0, 0.0), (5.0, 1000.0), (5.0, -1000.0)):
        for n, block in ((13, 4), (64, 16), (7, 1), (100, 37)):
            x = rng.normal(size=n) * scale + shift
            v = rng.normal(size=(n, 3))
            w = np.exp(x - x.max())
            reference = (w / w.sum()) @ v
            worst = max(worst, float(np.abs(online_softmax(x, v, block).o - reference).max()))
    return worst

def claims(ch: Chapter) -> None:
    N, dh, M = sizes("N d M")
    std = standard_attention(N, dh)
    tiled = tiled_attention(N, dh, M)
    text_tiled = tiled_attention(N, dh, M, rounding="floor")
    ch.steps.extend(tiled.steps)
    ch.step("define", "standard attention traffic", None, std.total,
           "kernels: Q,K -> S; S -> A; A,V -> O")
    ch.step("define", "tiled attention traffic (exact)", None, tiled.total,
           "per K/V tile: K_j, V_j; per Q tile: Q_i, O_i, l_i, m_i read, O_i, l_i, m_i written")
    ch.step("simplify", "tiled traffic with T_c relaxed to 4 N d / M", tiled.total, tiled.relaxed,
           "floor and ceiling within a factor 2 of their arguments >= 1")
    def recurrence() -> Recurrence:
        r = online_softmax_recurrence()
        if not r.holds:
            raise DerivationError(f"the online-softmax recurrence does not hold: {r.residuals}")
        return r
    rec = recurrence()
    ch.steps.extend(rec.steps)
    B_c, T_c = symbol("B_c"), symbol("T_c")
    B_r = symbol("B_r")
    def working_set_ratio() -> sp.Expr:
        # B_r B_c / M with B_c = M/(4d): B_r = d above the crossover M = 4 d^2, B_c below it
        bc = M / (4 * dh)
        crossover = positive_root(sp.Eq(bc, dh), M)
        above = sp.cancel(dh * bc / M)
        below = sp.cancel(bc * bc / M)
        if not sp.diff(below, M).is_positive:
            raise DerivationError("B_c^2 / M should grow with M below the crossover")
        return sp.Max(above, below.subs(M, crossover))
    ch.add(
        attn_score_shape=std.elements("S", "write"),
        attn_output_shape=std.elements("O", "write"),
        attn_safe_softmax=law(softmax_shift_residual() == 0),
        attn_kernel1_writes=theta(std.elements("S", "write")),
        attn_kernel2_traffic=theta(std.kernel(2)),
        attn_kernel3_traffic=theta(std.kernel(3)),
        attn_standard_total=theta(std.total),
        attn_score_matrix_mb=score_bytes(8192, dtype_bytes("fp16")),
        softmax_merged_max=rec.m_new,
        softmax_merged_normaliser=rec.d_new,
        softmax_merged_output=rec.o_new,
        softmax_recurrence_exact=within(online_error(), 0, sp.Rational(1, 10**12)),
        flash_block_size=block_sizes(M, dh)[0],
        flash_block_c_order=absorb(text_tiled.relaxed_B_c),
        flash_working_set=within(working_set_ratio(), 0, 1),
        flash_tile_count_q=tiled.T_r.subs(tiled.B_r, B_r),
        flash_tile_count_kv=tiled.T_c.subs(tiled.B_c, B_c),
        flash_kv_once=tiled.loop_total("outer"),
        flash_pass_order=absorb(tiled.loop_total("inner", 1), [dh]),
        flash_passes_order=absorb(tiled.loop_total("inner", T_c), [dh]),
        flash_tc_order=absorb(tiled.relaxed_T_c),
        flash_traffic_two_terms=tiled.theta,
        flash_traffic_leading=theta(tiled.theta, "N->oo"),
        flash_traffic_condition=dominance_condition(N**2 * dh**2 / M, N * dh, M),
        flash_io_reduction=reduction(std, tiled),
        flash_ratio_needs_n_over_d=dominance_condition(N**2, N * dh, N),
        flash_ratio_needs_n_over_m_d=dominance_condition(N**2 * dh**2 / M, N * dh, N),
        a100_standard_attention=measured(),
        a100_flash_attention=measured(),
    )
