"""How To Scale Your Model, ch. 1 "All About Rooflines", derived once for its Russian (seed
000) and Chinese (seed 004) tables; inputs a translation changes are read with ``ch.given``."""

from __future__ import annotations

import sympy as sp
from _chapter1 import (
    basics,
    chips,
    dot_product,
    drop_c_traffic,
    exact_matmul_flops,
    matmul,
    per_example_weights,
    per_replica,
    sharded_matmul,
    tiled_gemm,
)

from symroof import COMPUTE, chip, dtype_bytes, einsum, parse_quantity, symbol
from symroof.claims import Chapter, definition, measured, within

TILES = "m n k b_m b_n b_k t_m t_n t_k"


def claims(ch: Chapter) -> None:
    c = chips()
    # the problems' int8 rate is the book's 3.94e14 (the catalogue's default is the vendor's 393)
    problems = chip("tpu-v5e", hbm=ch.given("problems_hbm", "8.2e11 B/s"), int8="B2")
    base = basics(ch)
    dot = dot_product(ch, c, 10**6)
    mm = matmul(ch, c.v5e_ch1, name="bf16 matmul on TPU v5e")
    exact = exact_matmul_flops(ch)
    _, replica = per_replica(ch)
    h100 = matmul(ch, c.h100, name="bf16 matmul on H100 SXM")
    rtx = ch.roofline(einsum("B D, D F -> B F", "bf16", name="bf16 matmul on RTX 4080"),
                      c.rtx4080)
    rtx_b1 = rtx.at({"B": 1, "D": 8192, "F": 8192})
    net = sharded_matmul(ch, c.v5e_link, "ici")
    pcie = sharded_matmul(ch, c.rtx4080_no_p2p, "pcie")
    ratio_pcie = ch.step("simplify", "T_math / T_pcie of the split matmul",
                         pcie.rl.t_math / pcie.rl.t_comms["pcie"],
                         sp.cancel(pcie.rl.t_math / pcie.rl.t_comms["pcie"]),
                         "depends on D only, so B and F do not change the bound")
    split_70b = (pcie.rl.at({"B": 1, "D": 8192, "F": 8192}).bound()
                 if ratio_pcie.free_symbols == {symbol("D")} else "undetermined")
    footnote = tiled_gemm(ch, "m n k bm bn bk tm tn tk", load_c=False)
    tiles = tiled_gemm(ch, TILES, load_c=True)
    tile_limit = ch.expansion(tiles.tile_rl.intensity, "t_k->oo",
                              title="one output tile's intensity")
    q1 = matmul(ch, problems, "int8", name="int8 matmul on TPU v5e (problems 1, 2)")
    q2 = matmul(ch, problems, ["bf16", "int8"], out="bf16",
                name="bf16 activations x int8 weights on TPU v5e (problem 2)")
    q3 = matmul(ch, c.v5e_ch1, ["bf16", "int8"], out="bf16",
                name="bf16 activations x int8 weights on TPU v5e (8.2e11 B/s, problem 3)")
    ch.curve(q3.rl, "B", [{"D": 4096, "F": 4096}, {"D": 1024, "F": 1024}], (1, 512),
             "Q3: bf16 activations x int8 weights on TPU v5e")
    q3_big, q3_small = (q3.threshold.at({"D": n, "F": n}) for n in (4096, 1024))
    q3_ratio = ch.step("evaluate", "ratio of the critical batches, D=F=1024 over D=F=4096",
                       None, q3_small.exact / q3_big.exact, "exact bytes 2BD + DF + 2BF")
    q4, q4_limit = per_example_weights(ch, problems)
    q5 = matmul(ch, chip("h100-sxm", bf16=ch.given("q5_dense_rate", "9.89e14 FLOP/s")),
                name="bf16 matmul on H100 SXM at problem 5's dense rate")
    sparse = ch.define("H100 SXM bf16 spec-sheet rate, with sparsity (the text's reading)",
                       "P_sparse", parse_quantity("1.979e15 FLOP/s", COMPUTE))
    dense = ch.step("evaluate", "dense rate: half the sparse one", sparse, sparse / 2,
                    "2:4 structured sparsity doubles the quoted rate")
    tokens = ch.step("evaluate", "global token batch", None, 512 * 4096,
                     "512 sequences x 4096 tokens")
    gpus = ch.given("gpus", 2048)
    local = ch.step("evaluate", "token batch per GPU", tokens, sp.Rational(tokens, gpus),
                    f"{gpus} GPUs")
    critical = sp.Gt(mm.threshold.symbol, mm.threshold.asymptotic)
    ch.add(
        t_math_formula=definition(base.rl.t_math),
        h100_bf16_peak=c.h100_vendor.peak("bf16"),
        v6e_bf16_peak=c.v6e_vendor.peak("bf16"),
        h100_1e12_flops_time=sp.Integer(10**12) / c.h100.peak("bf16"),
        v6e_1e12_flops_time=sp.Integer(10**12) / c.v6e_ch1.peak("bf16"),
        hbm_bw_h100=c.h100_vendor.bandwidth("hbm"),
        hbm_bw_v6e=c.v6e_vendor.bandwidth("hbm"),
        t_comms_formula=definition(base.rl.t_comms["hbm"]),
        time_bounds=base.bound_ratio,
        intensity_definition_and_criterion=base.criterion.inequality,
        critical_intensity_v5e=mm.rl.ridge,
        peak_fraction_practice=measured(),
        dot_product_intensity=dot.rl.intensity,
        dot_product_limit=dot.limit.leading,
        tn_dot_product_n1e6=dot.at_n.t_comms["hbm"],
        tn_dot_product_n1e6_compute=dot.at_n.t_math,
        vpu_critical_intensity=dot.vpu_ridge,
        roofline_min_rule=base.attainable,
        matmul_bytes_loaded=mm.op.reads["hbm"],
        matmul_flops=mm.op.flops,
        matmul_bytes_written=mm.op.writes["hbm"],
        matmul_exact_flops=exact,
        matmul_intensity=mm.rl.intensity,
        matmul_intensity_small_batch=mm.small_batch.leading,
        matmul_critical_batch_v5e=critical,
        transformer_typical_sizes=measured(),
        takeaway_240=critical,
        gpu_closer_to_300=h100.threshold.asymptotic,
        per_replica_invariance=replica.asymptotic,
        token_batch_example=tokens,
        token_batch_example_local=local,
        tiling_footnote_flops=footnote.total.flops,
        tiling_footnote_bytes=footnote.total.bytes(),
        tiling_footnote_intensity=drop_c_traffic(ch, footnote),
        tiled_gemm_tile_counts=tiles.tiles,
        tiled_gemm_k_accumulation=tiles.terms,
        tiled_gemm_small_flops=tiles.small_flops,
        tiled_gemm_flops=tiles.total.flops,
        tiled_gemm_flops_unchanged=tiles.flops_untiled,
        tiled_gemm_tile_traffic=tiles.per_tile.bytes() / dtype_bytes("bf16"),
        tiled_gemm_total_bytes=tiles.total.bytes(),
        tiled_gemm_tile_intensity=tiles.tile_rl.intensity,
        tiled_gemm_intensity_limit=tile_limit.leading,
        tn_rtx4080_critical_intensity=rtx.ridge,
        tn_rtx4080_batch1=rtx_b1.intensity,
        tn_rtx4080_batch1_share=within(rtx_b1.attainable / rtx_b1.peak, 0,
                                        sp.Rational(1, 100)),
        tn_rtx4080_benchmark=measured(),
        network_t_math=net.rl.t_math,
        network_t_comms=net.rl.t_comms["ici"],
        network_intensity_d_over_2=net.rl.intensity,
        network_ratio_4377=net.rl.ridge,
        network_critical_d_8755=net.threshold.inequality,
        network_partial_sum_adds=net.partial_sum_adds,
        tn_why_d_per_chip=net.half.flops,
        tn_pcie4_theoretical=c.rtx4080.bandwidth("pcie"),
        tn_pcie_no_p2p_practice=measured(),
        tn_rtx4080_network_threshold=pcie.rl.ridge,
        tn_rtx4080_network_threshold_d=pcie.threshold.inequality,
        tn_70b_dmodel=split_70b,
        q1_bytes_loaded=q1.op.reads["hbm"],
        q1_bytes_written=q1.op.writes["hbm"],
        q1_ops=q1.op.flops,
        q1_intensity=q1.rl.intensity,
        q1_intensity_small_batch=q1.small_batch.leading,
        q1_int8_critical_intensity=q1.rl.ridge,
        q1_int8_critical=sp.Gt(q1.threshold.symbol, q1.threshold.asymptotic),
        q1_t_math=q1.rl.t_math,
        q1_t_comms=q1.rl.t_comms["hbm"],
        q2_condition_denominator=problems.peak("bf16") / q2.threshold.asymptotic,
        q2_w8a16_critical_batch=sp.Gt(q2.threshold.symbol, q2.threshold.asymptotic),
        q2_insight_240_to_120=q3.threshold.asymptotic,
        q3_exact_bytes_curves=q3.op.bytes(),
        q3_both_reach_peak=within(q3_small.exact, 1, 511),
        q3_nearly_double=within(q3_ratio, sp.Rational(9, 5), 2),
        q4_per_example_weights_intensity=q4.intensity,
        q4_intensity_about_2=q4_limit.leading,
        q5_h100_dense_flops=dense,
        q5_critical_batch=q5.threshold.asymptotic,
    )
