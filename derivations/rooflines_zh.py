"""Encodes How To Scale Your Model, ch. 1 "All About Rooflines", Chinese translation (seed 004).

A loose translation that follows an older revision of the chapter and adds a "Tiled GEMM"
section. Claims: T_math, T_comms and their bounds, arithmetic and critical intensity, the
dot product, the matmul and its B << D, F limit, the tiled GEMM (per-tile traffic, total
bytes, limiting intensity), the 2-chip network roofline, and problems 1-5. The main text
uses TPU v5e HBM at 8.2e11 B/s; problems 1 and 2 use 8.1e11 and problem 5 rounds the H100's
dense rate to 1e15 FLOP/s, and each claim uses the numbers of its own passage.
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from _chapter1 import (
    BOOK,
    MS,
    TB,
    basics,
    chips,
    dot_product,
    exact_matmul_flops,
    matmul,
    per_example_weights,
    per_replica,
    sharded_matmul,
    tiled_gemm,
)

from symroof import chip
from symroof.claims.model import Derivation, Erratum, Source
from symroof.core.sizes import dtype_bytes
from symroof.core.units import COMPUTE, parse_quantity

SEED = "004_866ce906d5d3747c"
TIME = "1. Where Does the Time Go?"
MATMUL = "Matrix multiplication"
TILED = "Tiled GEMM"
NETWORK = "Network communication rooflines"
Q1 = "2. A Few Problems to Work: Question 1 [int8 matmul]"
Q2 = "2. A Few Problems to Work: Question 2 [int8 + bf16 matmul]"
Q3 = "2. A Few Problems to Work: Question 3"
Q4 = "2. A Few Problems to Work: Question 4"
Q5 = "2. A Few Problems to Work: Problem 5 [Memory Rooflines for GPUs]"
TILES = "m n k b_m b_n b_k t_m t_n t_k"


def build() -> Derivation:
    src = Source(BOOK, chapter="1", section="", seed=SEED, language="zh")
    d = Derivation.begin("rooflines-zh",
                         "How To Scale Your Model, ch. 1: All About Rooflines (Chinese)", src)
    d.assume("Computation and communication overlap perfectly for T_lower = max(T_math, "
             "T_comms) and not at all for T_upper = T_math + T_comms.")
    d.assume("TPU v5e: 1.97e14 bf16 FLOP/s; HBM 8.2e11 B/s in the main text and in the "
             "problem 3 code (catalogue label B1), 8.1e11 B/s in problems 1 and 2 (the "
             "book's ch. 2 table, the catalogue default).")
    d.assume("bf16 is 2 bytes, int8 1 byte; matmul outputs are cast to bf16 before the "
             "write to HBM.")
    d.assume("Tiled GEMM: tiles divide the matrix exactly (t_m = m/b_m etc.); each output "
             "tile C_ij stays on chip through the K loop, is loaded once and stored once.")
    d.assume("Vendor-figure claims are checked against the vendor's figure in the catalogue "
             "(NV-H100, GC-v6e), never against the book's own number.")
    c = chips()
    base = basics(d)
    dot = dot_product(d, c)
    mm = matmul(d, c.v5e_ch1, name="bf16 matmul on TPU v5e")
    exact = exact_matmul_flops(d)
    replica = per_replica(d)[0].ridge
    h100 = matmul(d, c.h100, name="bf16 matmul on H100 SXM")
    tiles = tiled_gemm(d, TILES, load_c=True)
    tile_limit = d.expansion(tiles.tile_rl.intensity, "t_k->oo",
                             title="one output tile's intensity")
    net = sharded_matmul(d, c.v5e_link, "ici")
    q1 = matmul(d, c.v5e_ch2, "int8", name="int8 matmul on TPU v5e (8.1e11 B/s)")
    q2 = matmul(d, c.v5e_ch2, ["bf16", "int8"], out="bf16",
                name="bf16 activations x int8 weights on TPU v5e (8.1e11 B/s)")
    q2_denominator = d.step("evaluate", "denominator of B > peak / (2 x bandwidth)",
                            q2.threshold.asymptotic,
                            c.v5e_ch2.peak("bf16") / q2.threshold.asymptotic,
                            "peak / threshold")
    q3 = matmul(d, c.v5e_ch1, ["bf16", "int8"], out="bf16",
                name="bf16 activations x int8 weights on TPU v5e (8.2e11 B/s, Q3 code)")
    d.curve(q3.rl, "B", [{"D": 4096, "F": 4096}, {"D": 1024, "F": 1024}], (1, 512),
            "Q3: bf16 activations x int8 weights on TPU v5e")
    q3_big = q3.threshold.at({"D": 4096, "F": 4096})
    q3_small = q3.threshold.at({"D": 1024, "F": 1024})
    q3_ratio = d.step("evaluate", "ratio of the critical batches, D=F=1024 over D=F=4096",
                      None, q3_small.exact / q3_big.exact, "exact bytes 2BD + DF + 2BF")
    q4, q4_limit = per_example_weights(d, c.v5e_ch2)
    sparse = d.define("H100 SXM bf16 spec-sheet rate, with sparsity (the text's reading)",
                      "P_sparse", parse_quantity("1.979e15 FLOP/s", COMPUTE))
    dense = d.step("evaluate", "dense rate: half the sparse one", sparse, sparse / 2,
                   "2:4 structured sparsity doubles the quoted rate")
    q5 = matmul(d, chip("h100-sxm", bf16="1e15 FLOP/s"),
                name="bf16 matmul on H100 SXM at the text's 1e15 FLOP/s")
    tokens = d.step("evaluate", "global token batch", None, 512 * 4096,
                    "512 sequences x 4096 tokens")
    local = d.step("evaluate", "token batch per chip", tokens, sp.Rational(tokens, 128),
                   "128 GPUs")
    peak_h100 = c.h100.peak("bf16")
    peak_v6e = c.v6e_ch1.peak("bf16")
    bf16 = dtype_bytes("bf16")

    def claim(id: str, section: str, **kw: Any) -> None:
        d.claim(f"zh_{id}", section=section, **kw)

    # ---------------------------------------------------------- where the time goes --
    claim("t_math_formula", TIME,
          quote=r"T_{ma t h} = \frac{Computation FLOPs}{Accelerator FLOPs/s} (1)",
          statement="Compute time is the computation's FLOPs over the accelerator's FLOP/s.",
          kind="expr", stated="flops/peak", derive=lambda: base.rl.t_math)
    claim("h100_bf16_peak", TIME,
          quote=r"NVIDIA H100 的 bfloat16 峰值算力约为 $9.89 \times 1 0^{14}$ FLOPs/s",
          statement="An H100 (SXM) does about 9.89e14 dense bf16 FLOP/s; checked against "
                    "NVIDIA's dense figure (catalogue label NV-H100, 989.4 TFLOP/s).",
          stated="9.89e14", derive=lambda: c.h100_vendor.peak("bf16"))
    claim("v6e_bf16_peak", TIME,
          quote=r"而 TPU v6e 约为 $9.1 \times 1 0^{14}$ FLOPs/s",
          statement="A TPU v6e does about 9.1e14 bf16 FLOP/s; checked against Google "
                    "Cloud's figure (catalogue label GC-v6e, 918 TFLOP/s).",
          stated="9.1e14", derive=lambda: c.v6e_vendor.peak("bf16"))
    claim("peak_fraction_practice", TIME,
          quote="在实际工程中，H100 和 B200 通常只能达到理论峰值算力的 80%-85%，而 TPU "
                "在常规负载下可以接近 95% 的利用率。",
          statement="In practice H100 and B200 reach only 80-85% of their theoretical peak "
                    "and TPUs about 95%.",
          kind="measurement", stated="80-85%; 95%",
          evidence="the book authors' experience of achieved utilisation (a footnote of the "
                   "original); no benchmark is cited")
    claim("h100_1e12_flops_time", TIME,
          quote=r"在 H100 上执行 $1 0^{12}$ 次浮点运算大约需要 $1 \times 1 0^{12} /9.89 "
                r"\times 1 0^{1} 4 \approx 1.01$ ms",
          statement="1e12 FLOPs take about 1.01 ms on an H100 at the text's 9.89e14 FLOP/s "
                    "(the exponent is garbled in the file).",
          stated="1.01", unit="ms", derive=lambda: sp.Integer(10**12) / peak_h100 * MS)
    claim("v6e_1e12_flops_time", TIME,
          quote="在 TPU v6e 上则需 1.1 ms",
          statement="1e12 FLOPs take about 1.1 ms on a TPU v6e at the text's 9.1e14 FLOP/s.",
          stated="1.1", unit="ms", derive=lambda: sp.Integer(10**12) / peak_v6e * MS)
    claim("hbm_bw_h100", TIME,
          quote="在 NVIDIA H100 上，该带宽约为 3.35 TB/s",
          statement="H100 HBM bandwidth is about 3.35 TB/s; checked against NVIDIA's figure "
                    "(catalogue label NV-H100).",
          stated="3.35", unit="TB/s", derive=lambda: c.h100_vendor.bandwidth("hbm") / TB)
    claim("hbm_bw_v6e", TIME,
          quote="而在 TPU v6e 上约为 1.6 TB/s",
          statement="TPU v6e HBM bandwidth is about 1.6 TB/s; checked against Google Cloud's "
                    "1638 GB/s (catalogue label GC-v6e).",
          stated="1.6", unit="TB/s", derive=lambda: c.v6e_vendor.bandwidth("hbm") / TB)
    claim("t_comms_formula", TIME,
          quote=r"T_{co mm s} = \frac{Communication Bytes}{Network/Memory Bandwidth Bytes/s} "
                "(2)",
          statement="Communication time is the bytes moved over the bandwidth (of the network "
                    "or of memory).",
          kind="expr", stated="bytes/bandwidth", derive=lambda: base.rl.t_comms["hbm"])
    claim("time_bounds", TIME,
          quote=r"系统执行时间的下界（完全重叠）与上界（完全串行）之间的理论差距最大不会超过 2 "
                r"倍。这种代数关系源于不等式 $T_{ma t h} + T_{co mm s} \leq 2 \cdot max "
                r"(T_{ma t h}, T_{co mm s})$ 的物理约束",
          statement="The upper bound (no overlap) is at most twice the lower bound (perfect "
                    "overlap).",
          kind="relation", stated="T_upper/T_lower <= 2", derive=lambda: base.bound_ratio)
    claim("intensity_definition_and_criterion", TIME,
          quote=r"⟺ \frac{Computation FLOPs}{Communication Bytes} > \frac{Accelerator "
                r"FLOPs/s}{Bandwidth Bytes/s} ⟺ Intensity(Computation) > "
                r"Intensity(Accelerator)",
          statement="With intensity = FLOPs / bytes, T_math > T_comms exactly when the "
                    "computation's intensity exceeds the accelerator's, peak FLOP/s over "
                    "bandwidth (solved from T_math = T_comms for the intensity I).",
          kind="relation", stated="I > peak/bandwidth",
          derive=lambda: base.criterion.inequality)
    claim("critical_intensity_v5e", TIME,
          quote=r"其算术强度阈值约为 240 FLOPs/byte（基于其 $1.97 \times 1 0^{14}$ FLOPs/s "
                r"的峰值算力和 $8.2 \times 1 0^{11}$ Bytes/s 的 HBM 带宽得出）",
          statement="The critical intensity of the TPU v5e MXU against HBM is about 240 "
                    "FLOPs/byte (1.97e14 / 8.2e11).",
          stated="240", derive=lambda: mm.rl.ridge)
    claim("dot_product_intensity", TIME,
          quote=r"\frac{N + ( N - 1 )}{2 N + 2 N + 2} = \frac{2 N - 1}{4 N + 2}",
          statement="A bf16 dot product of length N does N multiplies and N - 1 adds, reads "
                    "2N + 2N bytes and writes 2: intensity (2N - 1)/(4N + 2).",
          kind="expr", stated="(2*N - 1)/(4*N + 2)", derive=lambda: dot.rl.intensity)
    claim("dot_product_limit", TIME,
          quote="随着向量维度 $N$ 趋于无穷大，点积运算的算术强度收敛于 0.5 FLOPs/byte。",
          statement="As N grows the dot product's intensity tends to 0.5 FLOP per byte.",
          stated="0.5", derive=lambda: dot.limit.leading)
    claim("vpu_critical_intensity", TIME,
          quote=r"例如 TPU v5p 的 VPU 峰值算力约为 $7 \times 1 0^{12}$ FLOPs/s，"
                "其对应的硬件临界强度约为 3。",
          statement="The TPU v5p VPU at about 7e12 FLOP/s has a critical intensity of about "
                    "3, so a dot product (0.5) is still memory-bound. The VPU rate (the "
                    "original's per-core figure, catalogued as fp32, label B1) is set against "
                    "the chip's HBM bandwidth, which the text does not give: Google Cloud's "
                    "2765 GB/s is used (the book's 2.8e12 gives 2.5, its 2.5e12 gives 2.8).",
          stated="3", derive=lambda: dot.vpu_ridge)

    # ------------------------------------------------------------------- matmul --
    claim("matmul_bytes_loaded", MATMUL,
          quote="底层算子需从显存加载权重与激活值（共 $2 D F + 2 B D$ 字节）",
          statement="A bf16 [B, D] x [D, F] matmul loads 2DF + 2BD bytes.",
          kind="expr", stated="2*D*F + 2*B*D", derive=lambda: mm.op.reads["hbm"])
    claim("matmul_flops", MATMUL,
          quote="执行约 $2 B D F$ 次浮点运算",
          statement="The matmul does about 2BDF FLOPs.",
          kind="expr", stated="2*B*D*F", derive=lambda: mm.op.flops)
    claim("matmul_exact_flops", MATMUL,
          quote=r"（包括 $B D F$ 次乘法与 $BF \times (D - 1)$ 次加法）",
          statement="Exactly, BDF multiplies and BF(D - 1) adds.",
          kind="expr", stated="B*D*F + B*F*(D - 1)", derive=lambda: exact)
    claim("matmul_bytes_written", MATMUL,
          quote="最后将结果写回 HBM（ $2 BF$ 字节）",
          statement="The matmul writes 2BF bytes (its bf16 output).",
          kind="expr", stated="2*B*F", derive=lambda: mm.op.writes["hbm"])
    claim("matmul_intensity", MATMUL,
          quote=r"Intensity(matmul) = \frac{2 B D F}{2 B D + 2 D F + 2 BF} = \frac{B D F}{B D "
                r"+ D F + BF} (7)",
          statement="The bf16 matmul's intensity is BDF/(BD + DF + BF).",
          kind="expr", stated="B*D*F/(B*D + D*F + B*F)", derive=lambda: mm.rl.intensity)
    claim("matmul_intensity_small_batch", MATMUL,
          quote=r"\frac{B D F}{B D + D F + BF} \approx \frac{B D F}{D F} = B (8)",
          statement="For a batch B small against D and F the matmul's intensity is about B.",
          kind="expr", stated="B", derive=lambda: mm.small_batch.leading)
    claim("matmul_critical_batch_v5e", MATMUL,
          quote="结合 TPU v5e 的硬件特性，若要使 Matmul 进入计算密集区，需满足： … "
                "当单芯片承载的 Token 批大小超过 240 时，矩阵乘法通常能进入计算受限状态。",
          statement="On TPU v5e a bf16 matmul is compute-bound once the token batch exceeds "
                    "240 (the display formula after '需满足：' is missing from the file).",
          kind="relation", stated="B > 240",
          derive=lambda: sp.Gt(mm.threshold.symbol, mm.threshold.asymptotic))
    claim("transformer_typical_sizes", MATMUL,
          quote="在现代大模型中，即使 $D$ 和 $F$ 通常大于 8000，单副本（Per-replica） 的 Batch "
                "Size（此处的单位是 Token 总数而非 Sequence 数量）通常在 1024 以下。",
          statement="In modern large models D and F usually exceed 8000 while the "
                    "per-replica token batch is usually below 1024.",
          kind="measurement", stated="D, F > 8000; B < 1024",
          evidence="the book authors' account of typical model and batch sizes; no source "
                   "cited")
    claim("per_replica_invariance", MATMUL,
          quote="系统的总算力峰值与总显存带宽是按相同比例同步扩展的。"
                "这意味着硬件层面的临界算术强度并不会因为集群规模的扩大而改变。",
          statement="Sharding over k chips multiplies total FLOP/s and total bandwidth by k, "
                    "so the critical intensity stays peak/bandwidth of one chip.",
          kind="expr", stated="peak/bandwidth", derive=lambda: replica)
    claim("takeaway_240", MATMUL,
          quote="为了在主流 TPU 上实现 BF16 矩阵乘法达到计算受限，单副本的 Token BatchSize "
                "需大于 240。",
          statement="A bf16 matmul on mainstream TPUs is compute-bound only for a per-replica "
                    "token batch above 240 (derived for TPU v5e).",
          kind="relation", stated="B > 240",
          derive=lambda: sp.Gt(mm.threshold.symbol, mm.threshold.asymptotic))
    claim("token_batch_example", MATMUL,
          quote="全局 Token BatchSize 为 $2 M$",
          statement="512 sequences of 4096 tokens make a global batch of about 2M tokens "
                    "(one significant digit).",
          stated="2e6", derive=lambda: tokens)
    claim("token_batch_example_local", MATMUL,
          quote="在 128 颗 GPU 上运行 512 条序列、每条序列 4096 个 Token 的任务，全局 Token "
                "BatchSize 为 $2 M$ ，而分配到每颗芯片的局部 BatchSize 为 $16 K$ Token。",
          statement="Over 128 GPUs that is about 16K tokens per chip (two significant "
                    "digits).",
          stated="1.6e4", derive=lambda: local)
    claim("gpu_closer_to_300", MATMUL,
          quote="对于 NVIDIA GPU，这一临界 BatchSize 的数值通常略高（接近 300）",
          statement="For NVIDIA GPUs the critical batch is somewhat higher, about 300 (one "
                    "significant digit); derived for the H100 SXM at the text's 9.89e14 "
                    "FLOP/s and 3.35e12 B/s.",
          stated="3e2", derive=lambda: h100.threshold.asymptotic)

    # ---------------------------------------------------------------- tiled GEMM --
    claim("tiled_gemm_tile_counts", TILED,
          quote=r"整个 GEMM 被拆成了 $t_{m} \times t_{n}$ 个输出 tile，每个输出 tile 的大小是 "
                r"$b_{m} \times b_{n}$ 。",
          statement="With exact division the m x n output splits into t_m t_n tiles of "
                    "b_m x b_n.",
          kind="expr", stated="t_m*t_n", derive=lambda: tiles.tiles)
    claim("tiled_gemm_k_accumulation", TILED,
          quote=r"C_{i, j} = p = 0 \sum t_{k} - 1 A_{i, p} \cdot B_{p, j}",
          statement="Each output tile C_ij accumulates t_k small products A_ip B_pj, "
                    "p = 0..t_k - 1 (the number of b_k-wide blocks of the K dimension).",
          kind="expr", stated="t_k", derive=lambda: tiles.terms)
    claim("tiled_gemm_small_flops", TILED,
          quote=r"对一个 $b_{m} \times b_{k}$ 乘 $b_{k} \times b_{n}$ 的小 GEMM，计算量是： … "
                r"2 \cdot b_{m} \cdot b_{n} \cdot b_{k}",
          statement="One b_m x b_k by b_k x b_n product costs 2 b_m b_n b_k FLOPs.",
          kind="expr", stated="2*b_m*b_n*b_k", derive=lambda: tiles.small_flops)
    claim("tiled_gemm_flops", TILED,
          quote=r"2 \cdot t_{m} \cdot t_{n} \cdot t_{k} \cdot b_{m} \cdot b_{n} \cdot b_{k}",
          statement="t_m t_n t_k such products make 2 t_m t_n t_k b_m b_n b_k FLOPs.",
          kind="expr", stated="2*t_m*t_n*t_k*b_m*b_n*b_k", derive=lambda: tiles.total.flops)
    claim("tiled_gemm_flops_unchanged", TILED,
          quote="tiling 不会减少 FLOPs",
          statement="Tiling does not change the FLOPs: with t = size / tile the total is the "
                    "untiled 2mnk.",
          kind="expr", stated="2*m*n*k", derive=lambda: tiles.flops_untiled)
    claim("tiled_gemm_tile_traffic", TILED,
          quote=r"t_{k} \cdot (b_{m} b_{k} + b_{k} b_{n}) + 2 b_{m} b_{n}",
          statement="One output tile moves t_k (b_m b_k + b_k b_n) elements of A and B plus "
                    "2 b_m b_n for loading and storing C_ij once.",
          kind="expr", stated="t_k*(b_m*b_k + b_k*b_n) + 2*b_m*b_n",
          derive=lambda: tiles.per_tile.bytes() / bf16)
    claim("tiled_gemm_total_bytes", TILED,
          quote=r"2 \cdot t_{m} \cdot t_{n} \cdot (t_{k} \cdot (b_{m} b_{k} + b_{k} b_{n}) - 2 "
                r"b_{m} b_{n})",
          statement="All t_m t_n output tiles in bf16, counting the load and store of C, "
                    "move 2 t_m t_n (t_k (b_m b_k + b_k b_n) - 2 b_m b_n) bytes.",
          kind="expr", stated="2*t_m*t_n*(t_k*(b_m*b_k + b_k*b_n) - 2*b_m*b_n)",
          derive=lambda: tiles.total.bytes(),
          erratum=Erratum(why="the C tile's load and store add bytes: the per-tile count "
                              "just above has +2 b_m b_n, and the text's own dataflow gives "
                              "2 t_m t_n (t_k (b_m b_k + b_k b_n) + 2 b_m b_n); the "
                              "original's footnote (store only) has + b_m b_n. The limiting "
                              "intensity is unaffected",
                          right="+2 b_m b_n, not -2 b_m b_n"))
    claim("tiled_gemm_tile_intensity", TILED,
          quote=r"Arithmetic Intensity \approx \frac{t _{k} \cdot b _{m} b _{n} b _{k}}{t "
                r"_{k} \cdot ( b _{m} b _{k} + b _{k} b _{n} ) + 2 b _{m} b _{n}}",
          statement="One output tile's intensity is t_k b_m b_n b_k / (t_k (b_m b_k + "
                    "b_k b_n) + 2 b_m b_n).",
          kind="expr", stated="t_k*b_m*b_n*b_k/(t_k*(b_m*b_k + b_k*b_n) + 2*b_m*b_n)",
          derive=lambda: tiles.tile_rl.intensity)
    claim("tiled_gemm_intensity_limit", TILED,
          quote=r"Arithmetic Intensity \to \frac{b _{m} b _{n}}{b _{m} + b _{n}}",
          statement="For large t_k the intensity tends to b_m b_n / (b_m + b_n), set by the "
                    "output tile's shape and not by b_k.",
          kind="expr", stated="b_m*b_n/(b_m + b_n)", derive=lambda: tile_limit.leading)

    # ------------------------------------------------------------- network roofline --
    claim("network_t_math", NETWORK,
          quote=r"T_{ma t h} = \frac{2 B D F}{2 \cdot 加速器峰值算力} = \frac{B D F}{1.97 "
                r"\times 1 0 ^{14}}",
          statement="Split along D over 2 chips, each chip's compute time is BDF/1.97e14.",
          kind="expr", stated="B*D*F/1.97e14", derive=lambda: net.rl.t_math)
    claim("network_t_comms", NETWORK,
          quote=r"T_{co mm s} = \frac{通信数据量}{网络带宽} = \frac{2 BF}{4.5 \times 1 0 "
                r"^{10}}",
          statement="Each chip sends its bf16 [B, F] partial sum, 2BF bytes, over the text's "
                    "4.5e10 B/s link (an input of the text, called '双向' (bidirectional) "
                    "there; the formula holds for 4.5e10 per direction, the catalogue's v5e "
                    "ICI figure).",
          kind="expr", stated="2*B*F/4.5e10", derive=lambda: net.rl.t_comms["ici"])
    claim("network_intensity_d_over_2", NETWORK,
          quote=r"\frac{B D F}{2 BF} = \frac{D}{2}",
          statement="The 2-chip matmul's intensity against the network is D/2.",
          kind="expr", stated="D/2", derive=lambda: net.rl.intensity)
    claim("network_ratio_4377", NETWORK,
          quote=r"\frac{1.97 \times 1 0 ^{14}}{4.5 \times 1 0 ^{10}} \approx 4377",
          statement="The chip's critical intensity against the network is 1.97e14/4.5e10, "
                    "about 4377.",
          stated="4377", derive=lambda: net.rl.ridge)
    claim("network_critical_d_8755", NETWORK,
          quote="⟹ D > 8755",
          statement="The split matmul is compute-bound against the network when D > 8755.",
          kind="relation", stated="D > 8755", derive=lambda: net.threshold.inequality)
    claim("network_partial_sum_adds", NETWORK,
          quote="尽管后续还涉及部分和的加法运算（约 $BF$ 次浮点加法），但相对于 $O (N^{3})$ "
                "复杂度的矩阵乘法，这部分 $O (N^{2})$ 的开销在宏观上可忽略不计。",
          statement="Adding the partial sums costs about BF more FLOPs, 1/D of the matmul's "
                    "BDF per chip, which is negligible.",
          kind="expr", stated="B*F", derive=lambda: net.partial_sum_adds)

    # ---------------------------------------------------------------- problems --
    claim("q1_bytes_loaded", Q1,
          quote="从 HBM 加载的数据量为 $B D + D F$ 字节",
          statement="An int8 matmul loads BD + DF bytes from HBM.",
          kind="expr", stated="B*D + D*F", derive=lambda: q1.op.reads["hbm"])
    claim("q1_bytes_written", Q1,
          quote="写回数据量为 $BF$ 字节。",
          statement="An int8 matmul writes BF bytes.",
          kind="expr", stated="B*F", derive=lambda: q1.op.writes["hbm"])
    claim("q1_ops", Q1,
          quote="依然是 $2 B D F$ 次操作",
          statement="An int8 matmul still does 2BDF operations.",
          kind="expr", stated="2*B*D*F", derive=lambda: q1.op.flops)
    claim("q1_intensity", Q1,
          quote=r"公式为 $\frac{2 B D F}{B D + D F + BF}$ 。",
          statement="The int8 matmul's intensity is 2BDF/(BD + DF + BF).",
          kind="expr", stated="2*B*D*F/(B*D + D*F + B*F)", derive=lambda: q1.rl.intensity)
    claim("q1_intensity_small_batch", Q1,
          quote="若延续前文假设（即 $B ≪ D$ 且 $B ≪ F$ ），算术强度可简化为 $2 B$ 。",
          statement="For B << D, F the int8 matmul's intensity is about 2B.",
          kind="expr", stated="2*B", derive=lambda: q1.small_batch.leading)
    claim("q1_int8_critical_intensity", Q1,
          quote=r"硬件临界强度为 $3.94 \times 1 0^{14} /8.1 \times 1 0^{11} \approx 486$",
          statement="With 3.94e14 int8 OP/s and 8.1e11 B/s the int8 critical intensity is "
                    "about 486.",
          stated="486", derive=lambda: q1.rl.ridge)
    claim("q1_int8_critical", Q1,
          quote="则要求 $B > 243$ 。",
          statement="The int8 matmul is compute-bound for B > 243.",
          kind="relation", stated="B > 243",
          derive=lambda: sp.Gt(q1.threshold.symbol, q1.threshold.asymptotic))
    claim("q1_t_math", Q1,
          quote=r"$T_{ma t h} = 2 B D F / (3.94 \times 1 0^{14})$",
          statement="The int8 matmul's compute time is 2BDF/3.94e14.",
          kind="expr", stated="2*B*D*F/3.94e14", derive=lambda: q1.rl.t_math)
    claim("q1_t_comms", Q1,
          quote=r"$T_{co mm s} = (B D + D F + BF) / (8.1 \times 1 0^{11})$",
          statement="The int8 matmul's HBM time is (BD + DF + BF)/8.1e11.",
          kind="expr", stated="(B*D + D*F + B*F)/8.1e11", derive=lambda: q1.rl.t_comms["hbm"])
    claim("q2_condition_denominator", Q2,
          quote=r"B > \frac{1.97 \times 1 0 ^{14}}{1.61 \times 1 0 ^{12}} \approx 122",
          statement="From 2BDF/1.97e14 > (2BD + DF + 2BF)/8.1e11 with B small, the text "
                    "divides the peak by 1.61e12, its 2 x 8.1e11.",
          stated="1.61e12", derive=lambda: q2_denominator,
          erratum=Erratum(why="2 x 8.1e11 B/s is 1.62e12; the final B > 122 is unaffected "
                              "(1.97e14 / 1.62e12 = 121.6)",
                          right="1.62e12"))
    claim("q2_w8a16_critical_batch", Q2,
          quote="根据 Roofline 推导，当 $B > 122$ 时，系统便进入计算受限状态。",
          statement="With int8 weights and bf16 activations and compute (1.97e14 FLOP/s, "
                    "8.1e11 B/s) the matmul is compute-bound for B > 122.",
          kind="relation", stated="B > 122",
          derive=lambda: sp.Gt(q2.threshold.symbol, q2.threshold.asymptotic))
    claim("q2_insight_240_to_120", Q2,
          quote="这一阈值显著降低（从 240 降至 120）",
          statement="The threshold drops from about 240 (bf16) to about 120 (int8 weights), "
                    "round figures of two significant digits; checked for the new threshold "
                    "at this problem's 8.1e11 B/s.",
          stated="1.2e2", derive=lambda: q2.threshold.asymptotic)
    claim("q3_exact_bytes_curves", Q3,
          quote="comms_time = (2*B*D + D*F + 2*B*F) / 8.2e11",
          statement="The exact traffic of bf16[B, D] x int8[D, F] -> bf16[B, F] is "
                    "2BD + DF + 2BF bytes (the code uses 8.2e11 B/s, not problem 2's "
                    "8.1e11).",
          kind="expr", stated="2*B*D + D*F + 2*B*F", derive=lambda: q3.op.bytes())
    claim("q3_both_reach_peak", Q3,
          quote="虽然两个模型最终都能达到硬件的峰值算力",
          statement="Both curves (D = F = 4096 and 1024) reach the peak within the plotted "
                    "batches 1..511.",
          kind="qualitative", stated="都能达到峰值算力", within=(1, 511),
          meaning="critical batch of the later curve (D = F = 1024) inside the plotted "
                  "range B = 1..511",
          derive=lambda: q3_small.exact)
    claim("q3_nearly_double", Q3,
          quote="当维度缩小至 $1024$ 时，临界 Batch Size 几乎翻了一倍。",
          statement="With D = F = 1024 the critical batch nearly doubles against "
                    "D = F = 4096.",
          kind="qualitative", stated="几乎翻了一倍", within=(sp.Rational(9, 5), 2),
          meaning="nearly twice: a ratio of the two critical batches between 1.8 and 2",
          derive=lambda: q3_ratio,
          erratum=Erratum(why="the exact critical batches are 136.1 (D=F=4096) and 226.3 "
                              "(D=F=1024): a factor of 1.66, two-thirds more, not nearly "
                              "double (the English original says the same)",
                          right="about 1.7 times"))
    claim("q4_per_example_weights_intensity", Q4,
          quote="此时的算术强度公式变为 $2 B D F / (B D + B D F + BF)$ 。",
          statement="With a separate int8 matrix per batch element the intensity is "
                    "2BDF/(BD + BDF + BF).",
          kind="expr", stated="2*B*D*F/(B*D + B*D*F + B*F)", derive=lambda: q4.intensity)
    claim("q4_intensity_about_2", Q4,
          quote="导致算术强度趋近于常数 2。",
          statement="With large D and F, BDF dominates the denominator and the intensity "
                    "tends to the constant 2.",
          stated="2", derive=lambda: q4_limit.leading)
    claim("q5_h100_dense_flops", Q5,
          quote=r"其实际算力约为该值的一半，即 $1 \times 1 0^{15}$ FLOPs/s (1 PFLOPS)。",
          statement="Half the spec sheet's sparse 1.979e15 bf16 FLOP/s is about 1e15 dense "
                    "(one significant digit).",
          stated="1e15", derive=lambda: dense)
    claim("q5_critical_batch", Q5,
          quote=r"B_{cr i t} = \frac{稠密峰值算力}{HBM 带宽} = \frac{1 0 ^{15}}{3.35 \times 1 0 "
                r"^{12}} \approx 298",
          statement="At the text's 1e15 FLOP/s and 3.35e12 B/s the H100's critical batch is "
                    "about 298.",
          stated="298", derive=lambda: q5.threshold.asymptotic)
    return d.build()
