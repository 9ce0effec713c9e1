"""Shared constructions of How To Scale Your Model, ch. 1: the chips with the figures the
chapter uses, the ops (dot product, matmuls, per-example weights, the 2-chip sharded matmul,
the tiled GEMM), their rooflines, thresholds and expansions, each recorded as steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import sympy as sp

from symroof import (
    Chip,
    Expansion,
    Figure,
    Op,
    Roofline,
    Threshold,
    chip,
    dtype_bytes,
    einsum,
    elementwise,
    op,
    sizes,
    supremum,
    symbol,
)
from symroof.claims import DerivationBuilder


def chips() -> SimpleNamespace:
    """The chips of chapter 1, each with the figures its claims use."""
    return SimpleNamespace(
        v5e_ch1=chip("tpu-v5e", hbm="B1"),  # HBM 8.2e11 B/s, the chapter's own figure
        h100=chip("h100-sxm", bf16="B1"),  # 9.89e14 FLOP/s (B1) and 3.35e12 B/s: Q5's inputs
        h100_vendor=chip("h100-sxm", bf16="NV-H100", hbm="NV-H100"),  # 989.4 TFLOP/s dense
        v6e_ch1=chip("tpu-v6e", bf16="B1"),  # the chapter's 9.1e14 FLOP/s
        v6e_vendor=chip("tpu-v6e", bf16="GC-v6e", hbm="GC-v6e"),  # 918 TFLOP/s, 1638 GB/s
        v5p_vpu=chip("tpu-v5p", **{"vpu.fp32": "B1", "hbm": "GC-v5p"}),  # VPU 7e12 FLOP/s
        rtx4080=chip("rtx-4080"),  # 97.5 TFLOP/s bf16 (fp32 acc.), 716.8 GB/s, PCIe 32 GB/s
        rtx4080_no_p2p=chip("rtx-4080", pcie="1e10 B/s one-way"),  # the note's practical PCIe
        v5e_link=chip("tpu-v5e", ici="4.5e10 B/s one-way"),  # the text's supposed link
    )


def generic_accelerator(scale: sp.Expr | int = 1) -> Chip:
    """An accelerator whose figures are symbols: ``peak`` FLOP/s and ``bandwidth`` B/s
    (times ``scale``, e.g. k chips). The catalogue holds numbers only; the chapter's
    definitions are about any accelerator, so its figures stay symbolic here."""
    peak, bandwidth = symbol("peak"), symbol("bandwidth")
    return Chip("accelerator", "any accelerator (symbolic figures)", "",
                {"mxu.bf16": Figure(scale * peak, "peak", "symbolic"),
                 "hbm": Figure(scale * bandwidth, "bandwidth", "symbolic")})



@dataclass(frozen=True)
class Basics:
    """T_math, T_comms, the bounds, the criterion and the attainable rate, symbolically."""

    rl: Roofline  # an op of ``flops`` FLOPs and ``bytes`` bytes on the generic accelerator
    criterion: Threshold  # intensity I > peak / bandwidth
    attainable: sp.Expr  # FLOPs / T_lower for an op of intensity I
    bound_ratio: sp.Rel  # T_upper / T_lower <= its supremum


def basics(d: DerivationBuilder) -> Basics:
    acc = generic_accelerator()
    flops, nbytes, inten = symbol("flops"), symbol("bytes"), symbol("I")
    rl = d.roofline(op("computation", flops, nbytes), acc)
    # an op of intensity I: FLOPs = I x bytes; solve T_math = T_comms for I
    rl_i = d.roofline(op("computation of intensity I", inten * nbytes, nbytes), acc)
    criterion = d.threshold(rl_i, "I")
    # attainable FLOP/s = FLOPs / max(T_math, T_comms) = min(FLOPs/T_math, FLOPs/T_comms)
    per_time = [sp.cancel(rl_i.op.flops / t) for t in sp.Max.make_args(rl_i.t_lower)]
    attainable = d.step("simplify", "attainable FLOP/s = FLOPs / T_lower",
                        rl_i.op.flops / rl_i.t_lower, sp.Min(*per_time),
                        "perfect overlap; x / max(a, b) = min(x/a, x/b) for positive x")
    # T_upper / T_lower with T_comms as the unit of time and r = T_math / T_comms
    r = symbol("r")
    ratio = (rl.t_upper / rl.t_lower).subs({flops: r * acc.peak(), nbytes: acc.bandwidth()})
    sup = supremum(ratio, r)
    d.step("evaluate", "largest T_upper / T_lower over r = T_math / T_comms > 0", ratio, sup,
           "each branch of the max is monotone in r; the branches meet at r = 1")
    bound_ratio = sp.Le(symbol("T_upper") / symbol("T_lower"), sup)
    return Basics(rl, criterion, attainable, bound_ratio)


@dataclass(frozen=True)
class Dot:
    op: Op
    rl: Roofline  # on the MXU of TPU v5e (8.2e11 B/s), as the main text compares
    limit: Expansion  # N -> oo
    at_n: Roofline  # at the translator's N = 10^6
    vpu_ridge: sp.Expr  # critical intensity of the v5p VPU (footnote 8)


def dot_product(d: DerivationBuilder, c: SimpleNamespace, n_value: int | None = None) -> Dot:
    (n,) = sizes("N")
    two = dtype_bytes("bf16")
    # N multiplies and N - 1 adds; x and y read (2N bytes each), one bf16 written
    dot = op("dot product x . y", n + (n - 1), two * n + two * n, writes=two)
    rl = d.roofline(dot, c.v5e_ch1)
    limit = d.expansion(rl.intensity, "N->oo", title="dot-product intensity")
    at_n = rl.at({"N": n_value}) if n_value is not None else rl
    vpu = d.roofline(dot, c.v5p_vpu, dtype="fp32", compute="vpu")
    return Dot(dot, rl, limit, at_n, vpu.ridge)



@dataclass(frozen=True)
class Matmul:
    op: Op
    rl: Roofline
    small_batch: Expansion  # intensity for B << D, F
    threshold: Threshold  # in B, regime B << D, F


def matmul(d: DerivationBuilder, on: Chip, dtypes: str | list[str] = "bf16",
           out: str | None = None, name: str | None = None) -> Matmul:
    mm = einsum("B D, D F -> B F", dtypes, out=out, name=name)
    rl = d.roofline(mm, on)
    x = d.expansion(rl.intensity, "B<<D,F", title=f"{mm.name} intensity")
    t = d.threshold(rl, "B", regime="B<<D,F")
    return Matmul(mm, rl, x, t)


def exact_matmul_flops(d: DerivationBuilder) -> sp.Expr:
    """BF outputs, each a length-D dot product (D multiplies, D - 1 adds)."""
    b, dd, f, n = sizes("B D F N")
    row = op("one output element: a length-D dot product", n + (n - 1), 0).subs({n: dd})
    total = row.repeat(b * f, name="B*F dot products of length D")
    return d.step("evaluate", "exact matmul FLOPs", None, total.flops,
                  "B*F outputs x (D multiplies + D - 1 adds)")


def per_replica(d: DerivationBuilder) -> tuple[Roofline, Threshold]:
    """A bf16 matmul on a replica sharded over k chips: k x peak FLOP/s, k x bandwidth."""
    (k,) = sizes("k")
    rl = d.roofline(einsum("B D, D F -> B F", "bf16", name="matmul on k chips"),
                    generic_accelerator(k))
    return rl, d.threshold(rl, "B", regime="B<<D,F")


def per_example_weights(d: DerivationBuilder, on: Chip) -> tuple[Roofline, Expansion]:
    """Q4: int8[B, D] x int8[B, D, F] -> int8[B, F], a separate matrix per batch element."""
    rl = d.roofline(einsum("B D, B D F -> B F", "int8", name="per-example int8 weights"), on)
    return rl, d.expansion(rl.intensity, "D,F->oo", title="per-example intensity")



@dataclass(frozen=True)
class Sharded:
    half: Op  # one chip's half of the contraction
    rl: Roofline  # against the link
    threshold: Threshold  # in D
    partial_sum_adds: sp.Expr


def sharded_matmul(d: DerivationBuilder, on: Chip, link: str) -> Sharded:
    """X[B, D] @ Y[D, F] split along D over 2 chips; each sends its bf16 [B, F] partial sum."""
    b, dd, f = sizes("B D F")
    half = einsum("B D, D F -> B F", "bf16", dims={"D": dd / 2},
                  name="half matmul on one chip (D/2 of the contraction)")
    sent = half.writes["hbm"]  # the [B, F] partial sum in bf16
    shard = op("2-chip sharded matmul, per chip", half.flops, comms={link: sent})
    rl = d.roofline(shard, on)
    t = d.threshold(rl, "D")
    adds = elementwise("add the two partial sums", b * f).flops
    return Sharded(half, rl, t, adds)



@dataclass(frozen=True)
class Tiled:
    small_flops: sp.Expr  # one b_m x b_k by b_k x b_n product
    per_tile: Op  # all the traffic of one output tile
    total: Op  # every output tile
    tiles: sp.Expr  # number of output tiles
    terms: sp.Expr  # products accumulated into one output tile
    flops_untiled: sp.Expr  # total FLOPs with t = size / tile
    tile_rl: Roofline
    total_rl: Roofline


def tiled_gemm(d: DerivationBuilder, names: str, load_c: bool) -> Tiled:
    """A tiled (m, k) x (k, n) bf16 GEMM. ``names`` lists the symbols m n k, the tiles
    b_m b_n b_k and the counts t_m t_n t_k in that order. For each output tile C_ij the
    K loop reads A_ip and B_pj t_k times while C_ij stays on chip; C_ij is stored once at
    the end (and, with ``load_c``, also loaded once at the start)."""
    m_, n_, k_, bm_, bn_, bk_, tm_, tn_, tk_ = names.split()
    m, n, k, bm, bn, bk, tm, tn, tk = sizes(names)
    acc = generic_accelerator()
    small = einsum(f"{bm_} {bk_}, {bk_} {bn_} -> {bm_} {bn_}", "bf16",
                   name="small GEMM A_ip . B_pj")
    step = op("K step: read A_ip and B_pj", small.flops, small.reads["hbm"])
    c_tile = small.writes["hbm"]  # bf16 C_ij
    tile = step.repeat(tk, name=f"{tk_} K steps")
    if load_c:
        tile = tile.then(op("load C_ij once", 0, c_tile))
    tile = tile.then(op("store C_ij once", 0, writes=c_tile), name="one output tile")
    total = tile.repeat(tm * tn, name="tiled GEMM, all output tiles")
    full = einsum(f"{m_} {k_}, {k_} {n_} -> {m_} {n_}", "bf16", name="untiled GEMM")
    untile = {m: tm * bm, n: tn * bn, k: tk * bk}
    out_elements = full.writes["hbm"] / dtype_bytes("bf16")
    tiles = d.step("evaluate", "output tiles", out_elements / (bm * bn),
                   sp.cancel((out_elements / (bm * bn)).subs(untile)),
                   f"{m_} = {tm_}*{bm_}, {n_} = {tn_}*{bn_} (exact division)")
    one_tile = einsum(f"{bm_} {k_}, {k_} {bn_} -> {bm_} {bn_}", "bf16").flops
    terms = d.step("evaluate", "small GEMMs accumulated into one output tile",
                   one_tile / small.flops, sp.cancel((one_tile / small.flops).subs(untile)),
                   f"{k_} = {tk_}*{bk_}")
    to_sizes = {tm: m / bm, tn: n / bn, tk: k / bk}
    flops_untiled = d.step("substitute", "total tiled FLOPs with t = size / tile",
                           total.flops, sp.cancel(total.flops.subs(to_sizes)),
                           f"{tm_} = {m_}/{bm_}, {tn_} = {n_}/{bn_}, {tk_} = {k_}/{bk_}")
    tile_rl = d.roofline(tile, acc)
    total_rl = d.roofline(total, acc)
    return Tiled(small.flops, tile, total, tiles, terms, flops_untiled, tile_rl, total_rl)


def drop_c_traffic(d: DerivationBuilder, t: Tiled) -> sp.Expr:
    """The intensity with the C term dropped: only the K-loop reads of A and B remain
    (for the store-only dataflow, where C moves only as writes)."""
    reads_only = t.total.flops / t.total.reads["hbm"]
    return d.step("simplify", "intensity without the C_ij term", reads_only,
                  sp.cancel(reads_only), "drop the last term of the byte count")
