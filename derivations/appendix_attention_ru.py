"""Encodes the FlashAttention section of the Russian appendix «Основы алгоритмов» (seed 002):
standard attention's HBM traffic, the online-softmax recurrence for two blocks, the tiled
algorithm's traffic from its loop structure, the Theta(M/d^2) reduction, and the A100
measurements the section quotes.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from _appendix_ru import source

from symroof.claims.model import Derivation, Erratum
from symroof.core.errors import DerivationError
from symroof.core.parse import symbol
from symroof.core.sizes import dtype_bytes, sizes
from symroof.engine.asymptotics import theta
from symroof.models.attention import (
    ALGORITHM_1,
    absorb,
    block_sizes,
    dominance_condition,
    reduction,
    score_bytes,
    standard_attention,
    tiled_attention,
)
from symroof.models.online_softmax import (
    Recurrence,
    online_softmax,
    online_softmax_recurrence,
    softmax_shift_residual,
)

IO = "Узкое место ввода-вывода HBM у стандартного softmax"
THEOREM = "Теорема о рекуррентности online softmax"
PROOF = "Формальное доказательство сложности обращений к HBM"
ACCOUNT = "Учет полного обращения к памяти"
RATIO = "Коэффициент сокращения ввода-вывода"
A100 = "Сокращение ввода-вывода на A100"


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


def build() -> Derivation:
    d = Derivation.begin("appendix-ru-attention", "Appendix «Основы алгоритмов» (Russian): "
                         "FlashAttention tiling and the online softmax", source())
    d.assume("Traffic is counted in elements between HBM and SRAM; M is the SRAM capacity in "
             "words; the tiled count follows FlashAttention's Algorithm 1 (outer loop over K/V "
             "tiles, inner loop over Q/O tiles) without the initial write of O, l and m")
    N, dh, M = sizes("N d M")
    std = standard_attention(N, dh)
    tiled = tiled_attention(N, dh, M)
    text_tiled = tiled_attention(N, dh, M, rounding="floor")
    d.steps.extend(tiled.steps)
    d.step("define", "standard attention traffic", None, std.total,
           "kernels: Q,K -> S; S -> A; A,V -> O")
    d.step("define", "tiled attention traffic (exact)", None, tiled.total,
           "per K/V tile: K_j, V_j; per Q tile: Q_i, O_i, l_i, m_i read, O_i, l_i, m_i written")
    d.step("simplify", "tiled traffic with T_c relaxed to 4 N d / M", tiled.total, tiled.relaxed,
           "floor and ceiling within a factor 2 of their arguments >= 1")

    # ---------------------------------------------------------------- standard attention
    d.claim("attn_score_shape", kind="expr", section=IO,
            quote="$$\\mathbf{S}=\\mathbf{Q}{\\mathbf{K}}^T\\in {\\mathbb{R}}^{N\\times N}",
            statement="The score matrix S = Q K^T has N x N elements.",
            stated="N*N", derive=lambda: std.elements("S", "write"))
    d.claim("attn_output_shape", kind="expr", section=IO,
            quote="\\mathbf{O}=\\mathbf{AV}\\in {\\mathbb{R}}^{N\\times d}$$",
            statement="The output O = A V has N x d elements.",
            stated="N*d", derive=lambda: std.elements("O", "write"))
    d.claim("attn_safe_softmax", kind="qualitative", section=IO,
            quote="$$A_{ij}=\\frac{\\exp (S_{ij}-m_i)}{{\\sum }_{k=1}^N\\exp (S_{ik}-m_i)}$$",
            statement="Subtracting the row max leaves the softmax unchanged.",
            stated="вычитает максимум строки", within=(0, 0),
            meaning="exp(s_i - c)/sum_k exp(s_k - c) - exp(s_i)/sum_k exp(s_k) for any shift c "
                    "and any length N, simplified",
            derive=softmax_shift_residual)
    d.claim("attn_kernel1_writes", kind="expr", section=IO,
            quote="записать $\\mathbf{S}\\in {\\mathbb{R}}^{N\\times N}$ в HBM ($\\Theta (N^2)$ "
                  "записей)",
            statement="Kernel 1 writes Theta(N^2) elements (S).",
            stated="N**2", derive=lambda: theta(std.elements("S", "write")))
    d.claim("attn_kernel2_traffic", kind="expr", section=IO,
            quote="записать $\\mathbf{A}\\in {\\mathbb{R}}^{N\\times N}$ в HBM ($\\Theta (N^2)$ "
                  "чтений и записей)",
            statement="Kernel 2 reads S and writes A: Theta(N^2).",
            stated="N**2", derive=lambda: theta(std.kernel(2)))
    d.claim("attn_kernel3_traffic", kind="expr", section=IO,
            quote="записать $\\mathbf{O}\\in {\\mathbb{R}}^{N\\times d}$ в HBM ($\\Theta (N^2+Nd)$ "
                  "чтений и записей)",
            statement="Kernel 3 reads A and V and writes O: Theta(N^2 + N d).",
            stated="N**2 + N*d", derive=lambda: theta(std.kernel(3)))
    d.claim("attn_standard_total", kind="expr", section=IO,
            quote="Полный трафик памяти HBM составляет $\\Theta (N^2+Nd)$ элементов.",
            statement="Standard attention moves Theta(N^2 + N d) elements.",
            stated="N**2 + N*d", derive=lambda: theta(std.total))
    d.claim("attn_score_matrix_mb", section=IO, unit="MB",
            quote="Для $N=8192$, $d=128$ в FP16 матрица $\\mathbf{S}$ требует "
                  "$8192^2\\times 2\\text{ Б}=134\\text{ МБ}$ на голову на слой.",
            statement="At N = 8192 the FP16 score matrix takes 134 MB (decimal) per head and "
                      "layer (d = 128 does not enter).",
            stated="134", derive=lambda: score_bytes(8192, dtype_bytes("fp16")) / 10**6)

    # ---------------------------------------------------------------- online softmax
    def recurrence() -> Recurrence:
        r = online_softmax_recurrence()
        if not r.holds:
            raise DerivationError(f"the online-softmax recurrence does not hold: {r.residuals}")
        return r

    rec = recurrence()
    d.steps.extend(rec.steps)
    d.claim("softmax_merged_max", kind="expr", section=THEOREM,
            quote="$$m^{\\text{new}}=\\max \\left(m^{(1)},m^{(2)}\\right)$$",
            statement="The merged max is the max of the two block maxima.",
            stated="max(m1, m2)", derive=lambda: rec.m_new)
    d.claim("softmax_merged_normaliser", kind="expr", section=THEOREM,
            quote="$$d^{\\text{new}}=d^{(1)}{e}^{m^{(1)}-m^{\\text{new}}}+d^{(2)}{e}^{m^{(2)}-"
                  "m^{\\text{new}}}$$",
            statement="d_new = d1 exp(m1 - m_new) + d2 exp(m2 - m_new), derived for blocks of "
                      "any lengths.",
            stated="d1*exp(m1 - m_new) + d2*exp(m2 - m_new)",
            derive=lambda: rec.d_new)
    d.claim("softmax_merged_output", kind="expr", section=THEOREM,
            quote="$${\\mathbf{O}}^{\\text{new}}=\\frac{d^{(1)}{e}^{m^{(1)}-m^{\\text{new}}}}"
                  "{d^{\\text{new}}}{\\mathbf{O}}^{(1)}+\\frac{e^{m^{(2)}-m^{\\text{new}}}}"
                  "{d^{\\text{new}}}\\sum _{j=1}^{N_2}{e}^{x_j^{(2)}-m^{(2)}}"
                  "{\\mathbf{V}}_j^{(2)}$$",
            statement="O_new = d1 exp(m1 - m_new)/d_new O1 + exp(m2 - m_new)/d_new U2, with U2 "
                      "the block-2 sum of exp(x_j - m2) V_j (per coordinate).",
            stated="d1*exp(m1 - m_new)/d_new*O1 + exp(m2 - m_new)/d_new*U2",
            derive=lambda: rec.o_new)
    d.claim("softmax_recurrence_exact", kind="qualitative", section=THEOREM,
            quote="удовлетворяют точным соотношениям рекуррентности",
            statement="Merging blocks with the recurrence reproduces softmax(x) V exactly, "
                      "also for scores near +-1000 where exp overflows.",
            stated="точным", within=(0, sp.Rational(1, 10**12)),
            meaning="largest |online softmax - reference| (float64, NumPy) over random blocks "
                    "of 1 to 37 scores of scale 1 to 30 and offset 0 or +-1000",
            derive=online_error)

    # ---------------------------------------------------------------- tiled algorithm
    B_c, T_c = symbol("B_c"), symbol("T_c")
    B_r = symbol("B_r")
    d.claim("flash_block_size", kind="expr", section=PROOF,
            quote="Следуя алгоритму 1 из работы Dao et al. (2022), FlashAttention задает "
                  "$B_c=\\lfloor M/(4d)\\rfloor$ и $B_r=\\min (\\lfloor M/(4d)\\rfloor ,d)$.",
            statement="Algorithm 1 of Dao et al. (2022) sets B_c = floor(M / 4d) "
                      "(and B_r = min(floor(M / 4d), d)).",
            stated="floor(M/(4*d))", derive=lambda: block_sizes(M, dh)[0],
            erratum=Erratum(why=f"{ALGORITHM_1} rounds up: B_c = ceil(M/4d), "
                                "B_r = min(ceil(M/4d), d); rounding down is a safe variant for "
                                "fitting SRAM, with no effect on the Theta bounds",
                            right="B_c = ceil(M/(4d)), B_r = min(ceil(M/(4d)), d)"))
    d.claim("flash_block_c_order", kind="expr", section=PROOF,
            quote="используя $B_c=\\Theta (M/d)$",
            statement="B_c = Theta(M/d).",
            stated="M/d", derive=lambda: absorb(text_tiled.relaxed_B_c))

    def working_set_ratio() -> sp.Expr:
        # B_r B_c / M with B_c = M/(4d): B_r = d above the crossover M = 4 d^2, B_c below it
        bc = M / (4 * dh)
        crossover = sp.solve(sp.Eq(bc, dh), M)[0]
        above = sp.simplify(dh * bc / M)
        below = sp.simplify(bc * bc / M)
        if not sp.diff(below, M).is_positive:
            raise DerivationError("B_c^2 / M should grow with M below the crossover")
        return sp.Max(above, below.subs(M, crossover))

    d.claim("flash_working_set", kind="qualitative", section=PROOF,
            quote="$B_r{B}_c=O(M)$ для рабочего набора на кристалле",
            statement="The on-chip working set B_r B_c is O(M).",
            stated="O(M)", within=(0, 1),
            meaning="the largest B_r B_c / M over all M (B_c = M/4d, B_r = min(B_c, d)): "
                    "bounded by a constant, below 1 so the tile fits",
            derive=working_set_ratio)
    d.claim("flash_tile_count_q", kind="expr", section=PROOF,
            quote="Разбить $\\mathbf{Q}$ на $T_r=\\lceil N/B_r\\rceil$ блоков размера $B_r\\times "
                  "d$.",
            statement="Q splits into T_r = ceil(N / B_r) tiles.",
            stated="ceil(N/B_r)", derive=lambda: tiled.T_r.subs(tiled.B_r, B_r))
    d.claim("flash_tile_count_kv", kind="expr", section=PROOF,
            quote="Разбить $\\mathbf{K},\\mathbf{V}$ на $T_c=\\lceil N/B_c\\rceil$ блоков размера "
                  "$B_c\\times d$.",
            statement="K and V split into T_c = ceil(N / B_c) tiles.",
            stated="ceil(N/B_c)", derive=lambda: tiled.T_c.subs(tiled.B_c, B_c))
    d.claim("flash_kv_once", kind="expr", section=ACCOUNT,
            quote="каждый элемент $\\mathbf{K}$ и $\\mathbf{V}$ загружается один раз, давая $2Nd$ "
                  "обращений.",
            statement="K and V are each loaded once: 2 N d accesses.",
            stated="2*N*d", derive=lambda: tiled.loop_total("outer"))
    d.claim("flash_pass_order", kind="expr", section=ACCOUNT,
            quote="каждый проход дает $\\Theta (Nd)$ обращений",
            statement="Each pass over Q, O and the statistics moves Theta(N d) (d >= 1).",
            stated="N*d", derive=lambda: absorb(tiled.loop_total("inner", 1), [dh]))
    d.claim("flash_passes_order", kind="expr", section=ACCOUNT,
            quote="а все проходы — $\\Theta (Nd{T}_c)$",
            statement="All T_c passes move Theta(N d T_c).",
            stated="N*d*T_c", derive=lambda: absorb(tiled.loop_total("inner", T_c), [dh]))
    d.claim("flash_tc_order", kind="expr", section=ACCOUNT,
            quote="Поскольку $T_c=\\lceil N/B_c\\rceil =\\Theta (Nd/M)$",
            statement="T_c = Theta(N d / M).",
            stated="N*d/M", derive=lambda: absorb(tiled.relaxed_T_c))
    d.claim("flash_traffic_two_terms", kind="expr", section=ACCOUNT,
            quote="\\Theta \\left(Nd+Nd{T}_c\\right)=\\Theta \\left(Nd+\\frac{N^2{d}^2}{M}\\right)",
            statement="FlashAttention moves Theta(N d + N^2 d^2 / M) elements.",
            stated="N*d + N**2*d**2/M", derive=lambda: tiled.theta)
    d.claim("flash_traffic_leading", kind="expr", section=ACCOUNT,
            quote="=\\Theta \\left(\\frac{N^2{d}^2}{M}\\right),$$ где последнее равенство "
                  "выполняется при $d\\le M\\le Nd$.",
            statement="For long sequences the traffic is Theta(N^2 d^2 / M).",
            stated="N**2*d**2/M", derive=lambda: theta(tiled.theta, "N->oo"))
    d.claim("flash_traffic_condition", kind="relation", section=ACCOUNT,
            quote="где последнее равенство выполняется при $d\\le M\\le Nd$",
            statement="N^2 d^2 / M dominates N d exactly when M <= N d.",
            stated="M <= N*d", derive=lambda: dominance_condition(N**2 * dh**2 / M, N * dh, M))
    d.claim("flash_io_reduction", kind="expr", section=RATIO,
            quote="=\\Theta \\left(\\frac{M}{d^2}\\right)\\text{для }N\\gg \\max \\left(d,"
                  "\\frac{M}{d}\\right)$$",
            statement="HBM_standard / HBM_flash -> Theta(M / d^2) as N grows (limit of the "
                      "exact counts: M / (d (3d + 4))).",
            stated="M/d**2", derive=lambda: reduction(std, tiled))
    d.claim("flash_ratio_needs_n_over_d", kind="relation", section=RATIO,
            quote="для }N\\gg \\max \\left(d,\\frac{M}{d}\\right)",
            statement="The N^2 term of the standard traffic dominates N d when N > d.",
            stated="N > d", derive=lambda: dominance_condition(N**2, N * dh, N))
    d.claim("flash_ratio_needs_n_over_m_d", kind="relation", section=RATIO,
            quote="для }N\\gg \\max \\left(d,\\frac{M}{d}\\right)",
            statement="The N^2 d^2 / M term of the tiled traffic dominates N d when N > M / d.",
            stated="N > M/d", derive=lambda: dominance_condition(N**2 * dh**2 / M, N * dh, N))

    # ---------------------------------------------------------------- measurements
    evidence = ("Dao et al. (2022), FlashAttention, Fig. 2 left, revised arXiv version "
                "(A100, sequence 1024, head dimension 64, 16 heads, batch 64, key-padding mask, "
                "no dropout; arXiv v1 prints 40.3 GB / 41.7 ms and 4.4 GB / 7.3 ms)")
    d.claim("a100_standard_attention", kind="measurement", section=A100,
            quote="Стандартное внимание: 35,3 ГБ чтений и записей HBM; время выполнения 35,1 мс.",
            statement="Standard attention: 35.3 GB of HBM reads and writes, 35.1 ms.",
            stated="35.3 GB; 35.1 ms", evidence=evidence)
    d.claim("a100_flash_attention", kind="measurement", section=A100,
            quote="FlashAttention: 4,4 ГБ чтений и записей HBM; время выполнения 11,7 мс.",
            statement="FlashAttention: 4.4 GB of HBM reads and writes, 11.7 ms.",
            stated="4.4 GB; 11.7 ms", evidence=evidence)
    return d.build()
