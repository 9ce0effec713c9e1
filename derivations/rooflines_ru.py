"""Encodes How To Scale Your Model, ch. 1 "All About Rooflines", Russian translation (seed 000).

Every formula and number of the chapter, its problems, footnotes and translator's notes,
as claims: T_math, T_comms and their bounds, arithmetic intensity and the critical
intensity, the dot product, the matmul and its B << D, F limit, the 2-chip network
roofline, the tiling footnote, the RTX 4080 and PCIe notes, and problems 1-5. The chapter
uses the TPU v5e HBM figure 8.2e11 B/s throughout (catalogue label B1).
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from _chapter1 import (
    BOOK,
    GB,
    MS,
    TB,
    US,
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

from symroof import einsum
from symroof.claims.model import Derivation, Erratum, Source
from symroof.core.parse import symbol
from symroof.core.units import COMPUTE, parse_quantity

SEED = "000_7ecbd45bc382eb10"
TIME = "Куда уходит время?"
EXAMPLE = "Пример с числами (примечание переводчика)"
PICTURE = "Как выглядит roofline"
MATMUL = "Умножение матриц"
TAKEAWAY = "Вывод"
MACHINE = "🖥 На вашей машине (примечание переводчика)"
NETWORK = "Roofline для сетевой связи"
WHY_D = "Почему от D (примечание переводчика)"
Q1 = "Несколько задач: Вопрос 1 [матмул в int8]"
Q2 = "Несколько задач: Вопрос 2 [матмул int8 + bf16]"
Q3 = "Несколько задач: Вопрос 3"
Q4 = "Несколько задач: Вопрос 4"
Q5 = "Несколько задач: Вопрос 5 [roofline памяти для GPU]"
NOTES = "Footnotes"


def build() -> Derivation:
    src = Source(BOOK, chapter="1", section="", seed=SEED, language="ru")
    d = Derivation.begin("rooflines-ru",
                         "How To Scale Your Model, ch. 1: All About Rooflines (Russian)", src)
    d.assume("Computation and communication overlap perfectly for T_lower = max(T_math, "
             "T_comms) and not at all for T_upper = T_math + T_comms.")
    d.assume("TPU v5e: 1.97e14 bf16 FLOP/s on the MXU and HBM at the chapter's 8.2e11 B/s "
             "(catalogue label B1; the book's ch. 2 table has 8.1e11).")
    d.assume("bf16 is 2 bytes, int8 1 byte; matmul outputs are cast to bf16 before the "
             "write to HBM (footnote 10).")
    d.assume("Vendor-figure claims are checked against the vendor's figure in the catalogue "
             "(NV-H100, GC-v6e, SPEC), never against the book's own number.")
    c = chips()
    base = basics(d)
    dot = dot_product(d, c, 10**6)
    mm = matmul(d, c.v5e_ch1, name="bf16 matmul on TPU v5e")
    exact = exact_matmul_flops(d)
    _, replica = per_replica(d)
    h100 = matmul(d, c.h100, name="bf16 matmul on H100 SXM")
    rtx = d.roofline(einsum("B D, D F -> B F", "bf16", name="bf16 matmul on RTX 4080"),
                     c.rtx4080)
    rtx_b1 = rtx.at({"B": 1, "D": 8192, "F": 8192})
    net = sharded_matmul(d, c.v5e_link, "ici")
    pcie = sharded_matmul(d, c.rtx4080_no_p2p, "pcie")
    ratio_pcie = d.step("simplify", "T_math / T_pcie of the split matmul",
                        pcie.rl.t_math / pcie.rl.t_comms["pcie"],
                        sp.cancel(pcie.rl.t_math / pcie.rl.t_comms["pcie"]),
                        "depends on D only, so B and F do not change the bound")
    # T_math / T_pcie depends on D alone, so any B, F give the bound at D = 8192
    split_70b = (pcie.rl.at({"B": 1, "D": 8192, "F": 8192}).bound()
                 if ratio_pcie.free_symbols == {symbol("D")} else "undetermined")
    tiles = tiled_gemm(d, "m n k bm bn bk tm tn tk", load_c=False)
    tile_intensity = drop_c_traffic(d, tiles)
    q1 = matmul(d, c.v5e_ch1, "int8", name="int8 matmul on TPU v5e")
    q2 = matmul(d, c.v5e_ch1, ["bf16", "int8"], out="bf16",
                name="bf16 activations x int8 weights on TPU v5e")
    d.curve(q2.rl, "B", [{"D": 4096, "F": 4096}, {"D": 1024, "F": 1024}], (1, 512),
            "Q3: bf16 activations x int8 weights on TPU v5e")
    q3_big = q2.threshold.at({"D": 4096, "F": 4096})
    q3_small = q2.threshold.at({"D": 1024, "F": 1024})
    q3_ratio = d.step("evaluate", "ratio of the critical batches, D=F=1024 over D=F=4096",
                      None, q3_small.exact / q3_big.exact, "exact bytes 2BD + DF + 2BF")
    q4, q4_limit = per_example_weights(d, c.v5e_ch1)
    sparse = d.define("H100 SXM bf16 spec-sheet rate, with sparsity (the text's reading)",
                      "P_sparse", parse_quantity("1.979e15 FLOP/s", COMPUTE))
    dense = d.step("evaluate", "dense rate: half the sparse one", sparse, sparse / 2,
                   "2:4 structured sparsity doubles the quoted rate")
    tokens = d.step("evaluate", "global token batch", None, 512 * 4096,
                    "512 sequences x 4096 tokens")
    local = d.step("evaluate", "token batch per GPU", tokens, sp.Rational(tokens, 2048),
                   "2048 GPUs")
    peak_h100 = c.h100.peak("bf16")
    peak_v6e = c.v6e_ch1.peak("bf16")

    def claim(id: str, section: str, **kw: Any) -> None:
        d.claim(f"ru_{id}", section=section, **kw)

    # ---------------------------------------------------------- where the time goes --
    claim("t_math_formula", TIME,
          quote=r"$$T_\text{math} = \frac{\text{FLOPs вычисления}}{\text{FLOPs/s ускорителя}}$$",
          statement="Compute time is the computation's FLOPs over the accelerator's FLOP/s.",
          kind="expr", stated="flops/peak", derive=lambda: base.rl.t_math)
    claim("h100_bf16_peak", TIME,
          quote=r"NVIDIA H100 выполняет около $9{,}89 \cdot 10^{14}$ FLOPs/s в bfloat16",
          statement="An H100 (SXM) does about 9.89e14 dense bf16 FLOP/s; checked against "
                    "NVIDIA's dense figure (catalogue label NV-H100, 989.4 TFLOP/s).",
          stated="9.89e14", derive=lambda: c.h100_vendor.peak("bf16"))
    claim("v6e_bf16_peak", TIME,
          quote=r"а TPU v6e — $9{,}1 \cdot 10^{14}$ FLOPs/s",
          statement="A TPU v6e does about 9.1e14 bf16 FLOP/s; checked against Google "
                    "Cloud's figure (catalogue label GC-v6e, 918 TFLOP/s).",
          stated="9.1e14", derive=lambda: c.v6e_vendor.peak("bf16"))
    claim("h100_1e12_flops_time", TIME,
          quote="Значит, $10^{12}$ FLOPs на H100 займут (примерно) 1e12 / 9.89e14 = 1.01ms",
          statement="1e12 FLOPs take about 1.01 ms on an H100 at the text's 9.89e14 FLOP/s.",
          stated="1.01", unit="ms", derive=lambda: sp.Integer(10**12) / peak_h100 * MS)
    claim("v6e_1e12_flops_time", TIME,
          quote="а на TPU v6e — 1e12 / 9.1e14 = 1.1ms",
          statement="1e12 FLOPs take about 1.1 ms on a TPU v6e at the text's 9.1e14 FLOP/s.",
          stated="1.1", unit="ms", derive=lambda: sp.Integer(10**12) / peak_v6e * MS)
    claim("hbm_bw_h100", TIME,
          quote="У H100 это около 3,35 ТБ/с",
          statement="H100 HBM bandwidth is about 3.35 TB/s; checked against NVIDIA's figure "
                    "(catalogue label NV-H100).",
          stated="3.35", unit="TB/s", derive=lambda: c.h100_vendor.bandwidth("hbm") / TB)
    claim("hbm_bw_v6e", TIME,
          quote="у TPU v6e — около 1,6 ТБ/с",
          statement="TPU v6e HBM bandwidth is about 1.6 TB/s; checked against Google Cloud's "
                    "1638 GB/s (catalogue label GC-v6e).",
          stated="1.6", unit="TB/s", derive=lambda: c.v6e_vendor.bandwidth("hbm") / TB)
    claim("t_comms_formula", TIME,
          quote=r"$$T_\text{comms} = \frac{\text{байт передачи}}{\text{пропускная способность "
                r"сети или памяти, байт/с}}$$",
          statement="Communication time is the bytes moved over the bandwidth (of the network "
                    "or of memory).",
          kind="expr", stated="bytes/bandwidth", derive=lambda: base.rl.t_comms["hbm"])
    claim("time_bounds", TIME,
          quote=r"нижняя и верхняя оценки различаются не более чем вдвое, поскольку "
                r"$T_\text{math} + T_\text{comms} \leq 2 \cdot \max(T_\text{math}, "
                r"T_\text{comms})$",
          statement="The upper bound T_math + T_comms is at most twice the lower bound "
                    "max(T_math, T_comms).",
          kind="relation", stated="T_upper/T_lower <= 2", derive=lambda: base.bound_ratio)
    claim("intensity_definition_and_criterion", TIME,
          quote=r"&\Leftrightarrow \text{интенсивность}(\text{вычисления}) > "
                r"\text{интенсивность}(\text{ускоритель})",
          statement="With intensity = FLOPs / bytes, T_math > T_comms exactly when the "
                    "computation's intensity exceeds the accelerator's, peak FLOP/s over "
                    "bandwidth (solved from T_math = T_comms for the intensity I).",
          kind="relation", stated="I > peak/bandwidth",
          derive=lambda: base.criterion.inequality)
    claim("critical_intensity_v5e", TIME,
          quote="Для MXU в TPU v5e это около 240 FLOPs/байт: TPU выполняет 1.97e14 FLOPs/s "
                "и загружает из HBM 8.2e11 байт/с",
          statement="The critical intensity of the TPU v5e MXU against HBM is about 240 "
                    "FLOPs/byte (1.97e14 / 8.2e11).",
          stated="240", derive=lambda: mm.rl.ridge)
    claim("peak_fraction_practice", NOTES,
          quote="H100 и B200 обычно достигают лишь 80–85% заявленного пика FLOPs, а TPU при "
                "обычном использовании — ближе к 95%.",
          statement="Footnote 2: in practice H100 and B200 reach only 80-85% of their "
                    "advertised peak FLOPs and TPUs about 95%.",
          kind="measurement", stated="80-85%; 95%",
          evidence="the authors' experience of achieved utilisation (footnote 2); no "
                   "benchmark is cited")
    claim("dot_product_intensity", TIME,
          quote=r"\frac{N + N - 1}{2N + 2N + 2} = \frac{2N - 1}{4N + 2}",
          statement="A bf16 dot product of length N does N multiplies and N - 1 adds, reads "
                    "2N + 2N bytes and writes 2: intensity (2N - 1)/(4N + 2).",
          kind="expr", stated="(2*N - 1)/(4*N + 2)", derive=lambda: dot.rl.intensity)
    claim("dot_product_limit", TIME,
          quote=r"\frac{2N - 1}{4N + 2} \rightarrow \frac{1}{2}$$ … при $N\rightarrow\infty$. "
                r"То есть арифметическая интенсивность скалярного произведения — $\frac{1}{2}$",
          statement="As N grows the dot product's intensity tends to 1/2 FLOP per byte.",
          stated="1/2", derive=lambda: dot.limit.leading)
    claim("tn_dot_product_n1e6", EXAMPLE,
          quote=r"На TPU v5e загрузка займёт $4 \cdot 10^6 / 8{,}2 \cdot 10^{11} \approx "
                r"4{,}9$ мкс",
          statement="For N = 10^6 on TPU v5e (8.2e11 B/s) moving the dot product's bytes "
                    "takes about 4.9 microseconds.",
          stated="4.9", unit="us", derive=lambda: dot.at_n.t_comms["hbm"] * US)
    claim("tn_dot_product_n1e6_compute", EXAMPLE,
          quote=r"а сами вычисления на MXU — $2 \cdot 10^6 / 1{,}97 \cdot 10^{14} \approx "
                r"0{,}01$ мкс",
          statement="For N = 10^6 the dot product's FLOPs take about 0.01 microseconds at "
                    "1.97e14 FLOP/s, so almost all the time is spent waiting for memory.",
          stated="0.01", unit="us", derive=lambda: dot.at_n.t_math * US)
    claim("vpu_critical_intensity", NOTES,
          quote=r"VPU в TPU v5p выполняет примерно $7 \cdot 10^{12}$ FLOPs в секунду на ядро, "
                "так что его критическая интенсивность около 3",
          statement="Footnote 8: the TPU v5p VPU at about 7e12 FLOP/s has a critical "
                    "intensity of about 3, so a dot product (1/2) is still memory-bound. "
                    "As the footnote does, a per-core rate (catalogued as the VPU's fp32 "
                    "rate, label B1) is set against the chip's HBM bandwidth, which the text "
                    "does not give: Google Cloud's 2765 GB/s is used (the book's 2.8e12 gives "
                    "2.5, its 2.5e12 gives 2.8).",
          stated="3", derive=lambda: dot.vpu_ridge)
    claim("roofline_min_rule", PICTURE,
          quote="Roofline одним правилом: достижимые FLOPs/s = min(пик, I × пропускная "
                "способность)",
          statement="Attainable FLOP/s = min(peak, I x bandwidth); derived as FLOPs / "
                    "max(T_math, T_comms) for an op of intensity I.",
          kind="expr", stated="min(peak, I*bandwidth)", derive=lambda: base.attainable)

    # ------------------------------------------------------------------- matmul --
    claim("matmul_bytes_loaded", MATMUL,
          quote="Чтобы выполнить умножение, нужно загрузить $2DF + 2BD$ байт",
          statement="A bf16 [B, D] x [D, F] matmul loads 2DF + 2BD bytes.",
          kind="expr", stated="2*D*F + 2*B*D", derive=lambda: mm.op.reads["hbm"])
    claim("matmul_flops", MATMUL,
          quote="выполнить $2BDF$ FLOPs",
          statement="The matmul does 2BDF FLOPs.",
          kind="expr", stated="2*B*D*F", derive=lambda: mm.op.flops)
    claim("matmul_bytes_written", MATMUL,
          quote="и записать обратно $2BF$ байт",
          statement="The matmul writes 2BF bytes (its bf16 output).",
          kind="expr", stated="2*B*F", derive=lambda: mm.op.writes["hbm"])
    claim("matmul_exact_flops", NOTES,
          quote=r"Строго говоря, выполняется $BF \times (2D - 1)$ FLOPs, но это достаточно "
                r"близко: $BDF$ умножений и $BF \cdot (D-1)$ сложений.",
          statement="Footnote 9: exactly, the matmul does BF(2D - 1) FLOPs: BDF multiplies "
                    "and BF(D - 1) adds.",
          kind="expr", stated="B*F*(2*D - 1)", derive=lambda: exact)
    claim("matmul_intensity", MATMUL,
          quote=r"\frac{2BDF}{2BD + 2DF + 2BF} = \frac{BDF}{BD + DF + BF}",
          statement="The bf16 matmul's intensity is BDF/(BD + DF + BF).",
          kind="expr", stated="B*D*F/(B*D + D*F + B*F)", derive=lambda: mm.rl.intensity)
    claim("matmul_intensity_small_batch", MATMUL,
          quote=r"$$\frac{BDF}{BD + DF + BF} \approx \frac{BDF}{DF} = B$$",
          statement="For a batch B small against D and F the matmul's intensity is about B.",
          kind="expr", stated="B", derive=lambda: mm.small_batch.leading)
    claim("matmul_critical_batch_v5e", MATMUL,
          quote=r"\implies B > \frac{1{,}97 \cdot 10^{14}}{8{,}20 \cdot 10^{11}} = 240",
          statement="On TPU v5e a bf16 matmul is compute-bound once B > 240.",
          kind="relation", stated="B > 240",
          derive=lambda: sp.Gt(mm.threshold.symbol, mm.threshold.asymptotic))
    claim("transformer_typical_sizes", MATMUL,
          quote="локальный (на одну реплику) батч в токенах обычно $B$ меньше 1024 (заметьте, "
                "это токены, а не последовательности), а $D$ и $F$ больше 8000",
          statement="In Transformers the per-replica token batch is usually below 1024 while "
                    "D and F exceed 8000.",
          kind="measurement", stated="B < 1024; D, F > 8000",
          evidence="the authors' account of typical model and batch sizes; no source cited")
    claim("takeaway_240_most_tpus", TAKEAWAY,
          quote="Чтобы умножение матриц в bfloat16 на большинстве TPU упиралось в вычисления, "
                "размер батча должен быть больше 240 (токенов)",
          statement="A bf16 matmul on most TPUs is compute-bound only for a per-replica "
                    "batch above 240 tokens (derived for TPU v5e).",
          kind="relation", stated="B > 240",
          derive=lambda: sp.Gt(mm.threshold.symbol, mm.threshold.asymptotic))
    claim("gpu_closer_to_300", TAKEAWAY,
          quote="Для GPU это число немного выше (ближе к 300)",
          statement="For GPUs the critical batch is somewhat higher, about 300 (one "
                    "significant digit); derived for the H100 SXM at the text's 9.89e14 "
                    "FLOP/s and 3.35e12 B/s.",
          stated="3e2", derive=lambda: h100.threshold.asymptotic)
    claim("per_replica_invariance", NOTES,
          quote="мы одинаково масштабируем и доступные вычисления, и пропускную способность "
                "памяти. Поэтому критический размер батча верен для каждой независимой копии "
                "весов модели.",
          statement="Footnote 11: sharding a replica over k chips multiplies its FLOP/s and "
                    "its bandwidth by k, so the critical batch stays peak/bandwidth of one "
                    "chip.",
          kind="expr", stated="peak/bandwidth", derive=lambda: replica.asymptotic)
    claim("token_batch_example", NOTES,
          quote="то общий батч — 512 * 4096 = 2M токенов",
          statement="Footnote 12: 512 sequences of 4096 tokens make a global batch of about "
                    "2M tokens (one significant digit).",
          stated="2e6", derive=lambda: tokens)
    claim("token_batch_example_local", NOTES,
          quote="на 2048 GPU, то общий батч — 512 * 4096 = 2M токенов, а локальный батч — "
                "1 тысяча токенов",
          statement="Footnote 12: over 2048 GPUs that is about a thousand tokens per GPU "
                    "(one significant digit).",
          stated="1e3", derive=lambda: local)
    claim("tiling_footnote_flops", NOTES,
          quote=r"Тогда всего FLOPs $2 \cdot tm \cdot tn \cdot tk \cdot bm \cdot bn \cdot bk$",
          statement="Footnote 13: a matmul tiled into bm x bk and bk x bn tiles, with tm = "
                    "m/bm etc., does 2 tm tn tk bm bn bk FLOPs.",
          kind="expr", stated="2*tm*tn*tk*bm*bn*bk", derive=lambda: tiles.total.flops)
    claim("tiling_footnote_bytes", NOTES,
          quote=r"а всего байт $2 \cdot tm \cdot tn \cdot (tk \cdot (bm \cdot bk + bk \cdot "
                r"bn) + bm \cdot bn)$",
          statement="Footnote 13: each output tile reads its tk A and B tiles and stores C "
                    "once, in bf16: 2 tm tn (tk (bm bk + bk bn) + bm bn) bytes.",
          kind="expr", stated="2*tm*tn*(tk*(bm*bk + bk*bn) + bm*bn)",
          derive=lambda: tiles.total.bytes())
    claim("tiling_footnote_intensity", NOTES,
          quote=r"Отбросив последнее слагаемое, получаем интенсивность $bm \cdot bn / (bm + "
                r"bn)$",
          statement="Footnote 13: dropping the C term, the tiled matmul's intensity is "
                    "bm bn / (bm + bn).",
          kind="expr", stated="bm*bn/(bm + bn)", derive=lambda: tile_intensity)

    # -------------------------------------------------------------- RTX 4080 note --
    claim("tn_rtx4080_critical_intensity", MACHINE,
          quote=r"Критическая интенсивность: $97{,}5 \cdot 10^{12} / 716{,}8 \cdot 10^{9} "
                r"\approx 136$ FLOPs/байт",
          statement="An RTX 4080 (97.5 TFLOP/s bf16 with fp32 accumulate, 716.8 GB/s; "
                    "catalogue NV-Ada and SPEC) has a critical intensity of about 136, so a "
                    "bf16 matmul is compute-bound above a batch of about 136.",
          stated="136", derive=lambda: rtx.ridge)
    claim("tn_rtx4080_batch1", MACHINE,
          quote="При генерации текста по одному токену с батчем 1 интенсивность ≈ 1",
          statement="At batch 1 the matmul's intensity is about 1 (D = F = 8192, the sizes of "
                    "the note's script).",
          stated="1", derive=lambda: rtx_b1.intensity)
    claim("tn_rtx4080_batch1_share", MACHINE,
          quote="карта использует меньше 1% своих FLOPs",
          statement="At batch 1 the RTX 4080 can use under 1% of its peak FLOP/s.",
          kind="qualitative", stated="меньше 1%", within=(0, sp.Rational(1, 100)),
          meaning="attainable FLOP/s over peak at B = 1, D = F = 8192: below 1%",
          derive=lambda: rtx_b1.attainable / rtx_b1.peak)
    claim("tn_rtx4080_benchmark", MACHINE,
          quote='print(f"B={B:5d}  {2 * B * D * F / dt / 1e12:6.1f} TFLOPS")   '
                "# растёт ~линейно, потом плато",
          statement="Measured matmul TFLOP/s on the reader's card grows roughly linearly "
                    "with B, then plateaus.",
          kind="measurement", stated="~linear, then plateau",
          evidence="a timing the reader runs on an RTX 4080 (translator's script); the "
                   "roofline predicts the knee near B = 136-141 for D = F = 8192")

    # ------------------------------------------------------------- network roofline --
    claim("network_t_math", NETWORK,
          quote=r"$$T_\text{math} = \frac{2BDF}{2 \cdot \text{FLOPs/s ускорителя}} = "
                r"\frac{BDF}{1{,}97 \cdot 10^{14}}$$",
          statement="Split along D over 2 chips, each chip's compute time is BDF/1.97e14.",
          kind="expr", stated="B*D*F/1.97e14", derive=lambda: net.rl.t_math)
    claim("network_t_comms", NETWORK,
          quote=r"$$T_\text{comms} = \frac{2BF}{\text{пропускная способность сети}} = "
                r"\frac{2BF}{4{,}5 \cdot 10^{10}}$$",
          statement="Each chip sends its bf16 [B, F] partial sum, 2BF bytes, at the text's "
                    "4.5e10 B/s per direction (an input of the text; it equals the "
                    "catalogue's v5e ICI figure).",
          kind="expr", stated="2*B*F/4.5e10", derive=lambda: net.rl.t_comms["ici"])
    claim("network_intensity_d_over_2", NETWORK,
          quote=r"$\frac{BDF}{2BF} = \frac{D}{2}",
          statement="The 2-chip matmul's intensity against the network is D/2.",
          kind="expr", stated="D/2", derive=lambda: net.rl.intensity)
    claim("network_ratio_4377", NETWORK,
          quote=r"\frac{1{,}97 \cdot 10^{14}}{4{,}5 \cdot 10^{10}} = 4377",
          statement="The chip's critical intensity against the network is 1.97e14/4.5e10 = "
                    "4377.",
          stated="4377", derive=lambda: net.rl.ridge)
    claim("network_critical_d_8755", NETWORK,
          quote="то есть $D > 8755$",
          statement="The split matmul is compute-bound against the network when D > 8755.",
          kind="relation", stated="D > 8755", derive=lambda: net.threshold.inequality)
    claim("network_partial_sum_adds", NOTES,
          quote="Мы пренебрегаем FLOPs на сложение двух частичных сумм (ещё $BF$ сложений) — "
                "это практически ничто.",
          statement="Footnote 14: adding the two partial sums costs another BF additions, "
                    "1/D of the matmul's BDF per chip, which is negligible.",
          kind="expr", stated="B*F", derive=lambda: net.partial_sum_adds)
    claim("tn_why_d_per_chip", WHY_D,
          quote=r"Каждый чип считает $2B \cdot (D/2) \cdot F$ операций, а передаёт только "
                r"результат — матрицу $B \times F$.",
          statement="Each chip does 2B(D/2)F operations and sends only its B x F result, so "
                    "work grows with D while traffic does not.",
          kind="expr", stated="2*B*(D/2)*F", derive=lambda: net.half.flops)
    claim("tn_pcie4_theoretical", WHY_D,
          quote="На вашей машине карты связаны только PCIe 4.0: теоретически до 32 ГБ/с",
          statement="PCIe 4.0 x16 carries up to about 32 GB/s per direction; checked "
                    "against the RTX 4080 spec listing (catalogue source SPEC).",
          stated="32", unit="GB/s", derive=lambda: c.rtx4080.bandwidth("pcie") / GB)
    claim("tn_pcie_no_p2p_practice", WHY_D,
          quote="а без прямого обмена P2P (у GeForce он обычно запрещён) на практике порядка "
                "10 ГБ/с",
          statement="Without P2P (usually disabled on GeForce) cards exchange about 10 GB/s "
                    "in practice.",
          kind="measurement", stated="~10 GB/s",
          evidence="a practical estimate the note takes from the course lesson «Четыре "
                   "видеокарты: DDP и FSDP на практике»; no measurement is shown")
    claim("tn_rtx4080_network_threshold", WHY_D,
          quote=r"Порог для RTX 4080: $D/2 > 97{,}5 \cdot 10^{12} / 10^{10} \approx 9750$",
          statement="Over the note's ~1e10 B/s PCIe (its input), the RTX 4080's critical "
                    "intensity against the link is 9750.",
          stated="9750", derive=lambda: pcie.rl.ridge)
    claim("tn_rtx4080_network_threshold_d", WHY_D,
          quote="то есть $D$ больше ~19 500",
          statement="Splitting a matmul over two RTX 4080s over PCIe is compute-bound only "
                    "for D > 19,500.",
          kind="relation", stated="D > 19500", derive=lambda: pcie.threshold.inequality)
    claim("tn_70b_dmodel", WHY_D,
          quote="У моделей до 70B $D$ не больше 8192, так что такое разбиение одного матмула "
                "на две карты через PCIe всегда упрётся в связь.",
          statement="With D = 8192 (models up to 70B) the split matmul over PCIe is bound by "
                    "the link; T_math/T_pcie depends on D only, so B = 1, F = 8192 stand "
                    "for any B, F.",
          kind="label", stated="pcie",
          derive=lambda: split_70b)

    # ---------------------------------------------------------------- problems --
    claim("q1_bytes_loaded", Q1,
          quote="поэтому из HBM загружается $BD + DF$ байт",
          statement="An int8 matmul loads BD + DF bytes from HBM.",
          kind="expr", stated="B*D + D*F", derive=lambda: q1.op.reads["hbm"])
    claim("q1_bytes_written", Q1,
          quote="а записывается $BF$",
          statement="An int8 matmul writes BF bytes.",
          kind="expr", stated="B*F", derive=lambda: q1.op.writes["hbm"])
    claim("q1_ops", Q1,
          quote="Так что это по-прежнему $2BDF$ OPs.",
          statement="An int8 matmul still does 2BDF operations.",
          kind="expr", stated="2*B*D*F", derive=lambda: q1.op.flops)
    claim("q1_intensity", Q1,
          quote="Арифметическая интенсивность — $2BDF / (BD + DF + BF)$.",
          statement="The int8 matmul's intensity is 2BDF/(BD + DF + BF).",
          kind="expr", stated="2*B*D*F/(B*D + D*F + B*F)", derive=lambda: q1.rl.intensity)
    claim("q1_intensity_small_batch", Q1,
          quote=r"Если, как выше, считать $B \ll D$ и $B \ll F$, получаем арифметическую "
                r"интенсивность $2B$",
          statement="For B << D, F the int8 matmul's intensity is about 2B.",
          kind="expr", stated="2*B", derive=lambda: q1.small_batch.leading)
    claim("q1_int8_critical_intensity", Q1,
          quote="По данным числам интенсивность для int8 — 3.94e14 / 8.2e11 = 480",
          statement="With 3.94e14 int8 OP/s and 8.2e11 B/s the int8 critical intensity is "
                    "480.",
          stated="480", derive=lambda: q1.rl.ridge)
    claim("q1_int8_critical", Q1,
          quote="так что правило: $B > 480 / 2 = 240$",
          statement="The int8 matmul is compute-bound for B > 240, about as in bf16.",
          kind="relation", stated="B > 240",
          derive=lambda: sp.Gt(q1.threshold.symbol, q1.threshold.asymptotic))
    claim("q1_t_math", Q1,
          quote=r"$T_\text{math} = 2BDF / 3{,}94 \cdot 10^{14}$",
          statement="The int8 matmul's compute time is 2BDF/3.94e14.",
          kind="expr", stated="2*B*D*F/3.94e14", derive=lambda: q1.rl.t_math)
    claim("q1_t_comms", Q1,
          quote=r"$T_\text{comms} = (BD + DF + BF) / 8{,}2 \cdot 10^{11}$",
          statement="The int8 matmul's HBM time is (BD + DF + BF)/8.2e11.",
          kind="expr", stated="(B*D + D*F + B*F)/8.2e11", derive=lambda: q1.rl.t_comms["hbm"])
    claim("q2_w8a16_critical_batch", Q2,
          quote="Значит, мы упираемся в вычисления при $2B > 240$, то есть $B > 120$.",
          statement="With int8 weights and bf16 activations and compute, the matmul is "
                    "compute-bound for B > 120 (1.97e14 FLOP/s, 8.2e11 B/s).",
          kind="relation", stated="B > 120",
          derive=lambda: sp.Gt(q2.threshold.symbol, q2.threshold.asymptotic))
    claim("q3_exact_bytes_curves", Q3,
          quote="comms_time = (2*B*D + D*F + 2*B*F) / 8.2e11",
          statement="The exact traffic of bf16[B, D] x int8[D, F] -> bf16[B, F] is "
                    "2BD + DF + 2BF bytes.",
          kind="expr", stated="2*B*D + D*F + 2*B*F", derive=lambda: q2.op.bytes())
    claim("q3_both_reach_peak", Q3,
          quote="Обе модели в итоге выходят на пиковые FLOPs/s железа",
          statement="Both curves (D = F = 4096 and 1024) reach the peak within the plotted "
                    "batches 1..511.",
          kind="qualitative", stated="обе выходят на пик", within=(1, 511),
          meaning="critical batch of the later curve (D = F = 1024) inside the plotted "
                  "range B = 1..511",
          derive=lambda: q3_small.exact)
    claim("q3_nearly_double", Q3,
          quote="При D=F=1024 критический размер батча почти вдвое больше.",
          statement="With D = F = 1024 the critical batch is nearly twice that of "
                    "D = F = 4096.",
          kind="qualitative", stated="почти вдвое", within=(sp.Rational(9, 5), 2),
          meaning="nearly twice: a ratio of the two critical batches between 1.8 and 2",
          derive=lambda: q3_ratio,
          erratum=Erratum(why="the exact critical batches are 136.1 (D=F=4096) and 226.3 "
                              "(D=F=1024): a factor of 1.66, two-thirds more, not nearly "
                              "twice (the English original says the same)",
                          right="about 1.7 times"))
    claim("q4_per_example_weights_intensity", Q4,
          quote="Поэтому арифметическая интенсивность теперь $2BDF / (BD + BDF + BF)$.",
          statement="With a separate int8 matrix per batch element the intensity is "
                    "2BDF/(BD + BDF + BF).",
          kind="expr", stated="2*B*D*F/(B*D + B*D*F + B*F)", derive=lambda: q4.intensity)
    claim("q4_intensity_about_2", Q4,
          quote="Поскольку в знаменателе доминирует $BDF$, это примерно $2$.",
          statement="Since BDF dominates the denominator (large D, F) the intensity is about "
                    "2, whatever the batch.",
          stated="2", derive=lambda: q4_limit.leading)
    claim("q5_h100_dense_flops", Q5,
          quote="Без разреженности истинное значение вдвое меньше: 9.89e14 FLOPs/s.",
          statement="Half the spec sheet's sparse 1.979e15 bf16 FLOP/s is 9.89e14 dense.",
          stated="9.89e14", derive=lambda: dense)
    claim("q5_critical_batch", Q5,
          quote=r"Значит, $B_\text{crit}$ = 9.89e14 / 3.35e12 = 295",
          statement="At 9.89e14 FLOP/s and 3.35e12 B/s the H100's critical batch is 295.",
          stated="295", derive=lambda: h100.threshold.asymptotic)
    return d.build()
