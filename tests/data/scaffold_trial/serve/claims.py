"""Serving a 7B model on one H100: what the chapter derives, scaffolded from the text (each stub:
not derived yet)."""

from __future__ import annotations

import sympy as sp

from symroof import chip, einsum, mesh
from symroof.claims import Chapter, definition
from symroof.models import inference_memory, kv_bytes_per_token, model, params


def claims(ch: Chapter) -> None:
    h100_sxm = chip("h100-sxm")
    tpu_v5e = chip("tpu-v5e")
    llama_2_7b = model("llama-2-7b")
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), h100_sxm)
    th = ch.threshold(rl, "B", regime="B<<D,F")
    allreduce = ch.collective(
        "allreduce", inference_memory(llama_2_7b).parts["weights"], "X", mesh("X=8", h100_sxm))
    allgather = ch.collective("allgather", 64000000, "X", mesh("X=16", tpu_v5e))
    # replace each stub with the engine's value; the comment guesses the concept
    # and, where the text names a chip, a model or a collective, the engine call
    ch.add(
        # 9.89e14 FLOP/s: a peak
        #   “The H100 SXM does 9.89e14 FLOP/s in bf16 on its tensor cores.”
        peak_01=h100_sxm.peak("bf16"),
        # 3.35e12 B/s: a bandwidth
        #   “Its HBM moves 3.35e12 B/s.”
        bandwidth_02=h100_sxm.bandwidth("hbm"),
        # about 295 FLOPs/byte: a roofline's ridge
        #   “The ridge of the chip is therefore about 295 FLOPs/byte.”
        ridge_03=rl.ridge,
        # 80 GB: bytes
        #   “It holds 80 GB of HBM.”
        bytes_04=h100_sxm.capacity("hbm"),
        # 2*B*D*F: a formula the engine derives (an op's .flops, .bytes(), an intensity)
        #   “A bf16 matmul of a B x D activation by a D x F weight does `2*B*D*F...”
        formula_05=rl.op.flops,
        # 2*B*D + 2*D*F + 2*B*F: a formula the engine derives (an op's .flops, .bytes(), an
        #     intensity)
        #   “It moves `2*B*D + 2*D*F + 2*B*F` bytes.”
        formula_06=rl.op.bytes(),
        # 8192: an input the text gives: kept as a definition (it checks nothing)
        #   “With D = F = 8192 and a batch of 128 it does 1.72e10 FLOPs and move...”
        input_07=definition(8192),
        # 128: an input the text gives: kept as a definition (it checks nothing)
        #   “With D = F = 8192 and a batch of 128 it does 1.72e10 FLOPs and move...”
        input_08=definition(128),
        # 1.72e10 FLOPs: FLOPs
        #   “With D = F = 8192 and a batch of 128 it does 1.72e10 FLOPs and move...”
        flops_09=rl.at({"D": 8192, "F": 8192, "B": 128}).op.flops,
        # 138.4 MB: bytes
        #   “With D = F = 8192 and a batch of 128 it does 1.72e10 FLOPs and move...”
        bytes_10=rl.at({"D": 8192, "F": 8192, "B": 128}).op.bytes(),
        # about 124 FLOPs/byte: an op's arithmetic intensity
        #   “Its arithmetic intensity is then about 124 FLOPs/byte, well below t...”
        intensity_11=rl.at({"D": 8192, "F": 8192, "B": 128}).intensity,
        # 17.4 us: a time
        #   “The math alone takes 17.4 us, reading and writing memory takes 41.3...”
        time_12=rl.at({"D": 8192, "F": 8192, "B": 128}).t_math,
        # 41.3 us: a time
        #   “The math alone takes 17.4 us, reading and writing memory takes 41.3...”
        time_13=rl.at({"D": 8192, "F": 8192, "B": 128}).t_comms["hbm"],
        # B > 295: a threshold
        #   “For a batch much smaller than D and F the matmul is memory-bound un...”
        threshold_14=sp.Gt(th.symbol, th.asymptotic),
        # 8192: an input the text gives: kept as a definition (it checks nothing)
        #   “At D = F = 8192 the exact critical batch is 318.3 tokens.”
        input_15=definition(8192),
        # 318.3 tokens: a threshold
        #   “At D = F = 8192 the exact critical batch is 318.3 tokens.”
        threshold_16=ch.threshold(rl.at({"D": 8192, "F": 8192}), "B").exact,
        # 6.74B parameters: a count
        #   “Llama 2 7B has 6.74B parameters.”
        count_17=params(llama_2_7b).total,
        # 13.5 GB: bytes
        #   “In bf16 its weights take 13.5 GB.”
        bytes_18=inference_memory(llama_2_7b).parts["weights"],
        # 524288 bytes: bytes
        #   “Each token keeps 524288 bytes of keys and values in the cache.”
        bytes_19=kv_bytes_per_token(llama_2_7b),
        # 4096 tokens: an input the text gives: kept as a definition (it checks nothing)
        #   “At a context of 4096 tokens and a batch of 16 the cache holds 68.7 GB.”
        input_20=definition(4096),
        # 16: an input the text gives: kept as a definition (it checks nothing)
        #   “At a context of 4096 tokens and a batch of 16 the cache holds 68.7 GB.”
        input_21=definition(16),
        # 68.7 GB: bytes
        #   “At a context of 4096 tokens and a batch of 16 the cache holds 68.7 GB.”
        bytes_22=inference_memory(llama_2_7b, batch=16, context=4096).parts["kv cache"],
        # about 82 GB: bytes
        #   “Weights and cache together then take about 82 GB, more than the chi...”
        bytes_23=inference_memory(llama_2_7b, batch=16, context=4096).total,
        # about 4.0 ms: a time
        #   “One decode step reads every weight once, which takes about 4.0 ms.”
        time_24=inference_memory(llama_2_7b).parts["weights"] / h100_sxm.bandwidth("hbm"),
        # 450 GB/s: a bandwidth
        #   “Eight H100s in one HGX box talk over NVLink at 450 GB/s one way.”
        bandwidth_25=h100_sxm.bandwidth("nvlink"),
        # 13.5 GB: an input the text gives: kept as a definition (it checks nothing)
        #   “An AllReduce of the 13.5 GB of bf16 weights across the eight takes ...”
        input_26=definition(13500000000),
        # 52.4 ms: a time
        #   “An AllReduce of the 13.5 GB of bf16 weights across the eight takes ...”
        time_27=allreduce.time,
        # 30 ms: a time
        #   “Counting only the bytes over the bandwidth, it would take 30 ms.”
        time_28=allreduce.bandwidth_time,
        # 8.4 us: a time
        #   “Its latency is 8.4 us over 14 hops, negligible at this size.”
        time_29=allreduce.latency_time,
        # 14: a count
        #   “Its latency is 8.4 us over 14 hops, negligible at this size.”
        count_30=allreduce.hops,
        # 16 chips: an input the text gives: kept as a definition (it checks nothing)
        #   “A TPU v5e pod row of 16 chips gathers 64 MB in about 0.67 ms over ICI.”
        input_31=definition(16),
        # 64 MB: an input the text gives: kept as a definition (it checks nothing)
        #   “A TPU v5e pod row of 16 chips gathers 64 MB in about 0.67 ms over ICI.”
        input_32=definition(64000000),
        # about 0.67 ms: a time
        #   “A TPU v5e pod row of 16 chips gathers 64 MB in about 0.67 ms over ICI.”
        time_33=allgather.time,
        # about 295: a roofline's ridge
        #   “The ridge is about 295, the cache per token 0.5 MiB.”
        ridge_34=rl.ridge,
        # 0.5 MiB: bytes
        #   “The ridge is about 295, the cache per token 0.5 MiB.”
        bytes_35=kv_bytes_per_token(llama_2_7b),
        # 295: a threshold
        #   “A decode step is bound by memory below a batch of 295.”
        threshold_36=th.asymptotic,
    )
