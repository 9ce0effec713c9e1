"""The Russian appendix «Основы алгоритмов» (seed 002): GEMM cost and intensity, CSR storage,
einsum, broadcasting, shapes and strides, and the cheat sheet's attention cost terms."""

from __future__ import annotations

import random

import numpy as np
import sympy as sp

from symroof import (
    chip,
    dtype_bytes,
    einsum,
    elementwise,
    op,
    polynomial_through,
    sequence,
    sizes,
    theta,
)
from symroof.claims import Chapter, assumed, law, measured, within


def einsum_spec(operands: tuple[sp.Indexed, ...], summed: tuple[sp.Symbol, ...]) -> str:
    """The einsum string of ``sum over summed of the product of operands``: each operand's
    indices, then the free indices in order of first appearance."""
    free: list[sp.Basic] = []
    for f in operands:
        free += [i for i in f.indices if i not in summed and i not in free]
    spec = ",".join("".join(str(i) for i in f.indices) for f in operands)
    return f"{spec}->{''.join(str(i) for i in free)}"

def csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values, column indices and row pointers of a dense matrix, built row by row."""
    values, columns, pointers = [], [], [0]
    for row in dense:
        nz = np.flatnonzero(row)
        values += list(row[nz])
        columns += list(nz)
        pointers.append(len(values))
    return np.array(values), np.array(columns), np.array(pointers)

def text_broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The text's rule: compare dimensions from the last; equal or one of them 1 (a missing
    leading dimension takes the other's). None when incompatible."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else None
        y = b[-i] if i <= len(b) else None
        if x is None or y is None:
            out.append(x if y is None else y)
        elif x == y or 1 in (x, y):
            out.append(max(x, y))
        else:
            return None
    return tuple(reversed(out))

def numpy_broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None

def claims(ch: Chapter) -> None:
    a100 = chip("a100-80gb", hbm="NV-A100", fp16="NV-A100")
    n = sizes("n")[0]
    N, K = sizes("N K")
    gemm_mnk = einsum("M K, K N -> M N", "fp16", name="GEMM M x K by K x N")
    square = einsum("i k, k j -> i j", "fp16", dims={"i": n, "k": n, "j": n},
                    name="square GEMM, beta = 0")
    rl0 = ch.roofline(square, a100)
    read_c = op("read the old C", 0, bytes=n**2 * dtype_bytes("fp16"), dtype="fp16")
    rl1 = ch.roofline(sequence(square, read_c, name="square GEMM, beta != 0"), a100)
    at64 = rl0.at({"n": 64})
    b = sizes("b")[0]
    queued = ch.roofline(square.repeat(b, name="b queued square GEMMs"), a100)
    block = {f"{w} projection": "B S D, D E -> B S E" for w in "QKVO"}
    block.update({"scores Q K^T": "B S D, B T D -> B S T", "softmax": "B S T -> B S T",
                  "values A V": "B S T, B T D -> B S D"})
    def contracts(spec: str) -> bool:
        operands, output = spec.split("->")
        return bool(set(operands.replace(",", " ").split()) - set(output.split()))
    def has_weight(spec: str) -> bool:  # an operand without the batch dimension
        return any("B" not in part.split() for part in spec.split("->")[0].split(","))
    gemms = [spec for spec in block.values() if contracts(spec)]
    with_weights = [spec for spec in gemms if has_weight(spec)]
    R = sizes("R")[0]
    rows, cols, density = 100_000, 10_000, sp.Rational(1, 100)
    fp32 = dtype_bytes("fp32")
    int32 = sp.Integer(4)  # the text's 4-byte column index (and the assumed row-pointer width)
    def csr_bytes(r: sp.Expr, k: sp.Expr, value: sp.Expr, index: sp.Expr,
                  pointer: sp.Expr) -> sp.Expr:
        # the text's layout: K values, K column indices, R + 1 row pointers
        return k * (value + index) + row_pointer_length().subs(R, r) * pointer
    def row_pointer_length() -> sp.Expr:
        rng = np.random.default_rng(0)
        points = [(r, len(csr((rng.random((r, 5)) < 0.4).astype(float))[2]))
                  for r in range(1, 5)]
        return polynomial_through(points, R)
    params = rows * cols
    nnz = density * params
    dense_bytes = params * fp32
    sparse_bytes = csr_bytes(sp.Integer(rows), nnz, fp32, int32, int32)
    ch.step("define", "CSR bytes of R rows and K non-zeros", None,
           csr_bytes(R, K, sizes("w_v")[0], sizes("w_i")[0], sizes("w_p")[0]),
           "K values and K column indices, R + 1 row pointers")
    i, j, k, bb, h, dd = sp.symbols("i j k b h d", integer=True)
    A, B_, Q, Kt = (sp.IndexedBase(s) for s in ("A", "B", "Q", "K"))
    r1, r2, t1, t2 = sp.symbols("r1 r2 t1 t2", positive=True)
    S, dm, L = sizes("S d L")
    proj = einsum("B S D, D E -> B S E", dims={"D": dm, "E": dm}).repeat(4)
    scores = einsum("B S D, B T D -> B S T", dims={"T": S, "D": dm})
    mix = einsum("B S T, B T D -> B S D", dims={"T": S, "D": dm})
    attention_flops = sp.expand(proj.flops + scores.flops + mix.flops)
    ch.step("define", "attention layer FLOPs (forward)", None, attention_flops,
           "Q, K, V, O projections + scores + value mixing (einsum)")
    decode = sequence(einsum("D, L D -> L", dims={"D": dm}), einsum("L, L D -> D", dims={"D": dm}))
    a = np.zeros((3, 4), dtype=np.float32)
    E = sizes("N")[0]
    rng = random.Random(2)
    pairs = [(tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4))),
              tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4))))
             for _ in range(400)]
    column = np.arange(3.0).reshape(3, 1)
    batch = 7
    ch.add(
        gemm_flops=gemm_mnk.flops,
        gemm_intensity_grows_linearly=law(sp.degree(rl0.intensity, n) == 1),
        gemm_intensity_beta0=rl0.intensity,
        gemm_intensity_beta_nonzero=rl1.intensity,
        gemm_n64_intensity_exact=at64.intensity,
        gemm_n64_intensity=at64.intensity,
        gemm_ridge_a100=assumed(rl0.ridge, "the A100 80GB SXM's vendor figures, the one "
                                "catalogue chip whose ridge is 153.0 (its book figures give 155)"),
        gemm_n64_below_ridge=rl0.at({"n": 64}).bound(),
        gemm_n64_share_of_peak=at64.attainable / at64.peak,
        gemm_queue_small_no_gain=within(sp.cancel(queued.intensity / rl0.intensity), 0, 1),
        gemm_attention_block=len(with_weights) + (len(gemms) - len(with_weights)),
        csr_row_ptr_length=row_pointer_length(),
        csr_order_k_plus_r=theta(csr_bytes(R, K, fp32, int32, int32), "K,R->oo"),
        csr_order_dense=theta(N * fp32),
        csr_order_k=theta(csr_bytes(R, K, fp32, int32, int32), "R<<K"),
        csr_example_params=params,
        csr_dense_gb=dense_bytes,
        csr_nnz_millions=nnz / 10**6,
        csr_example_mb=sparse_bytes,
        csr_reduction=dense_bytes / sparse_bytes,
        einsum_matmul=einsum_spec((A[i, k], B_[k, j]), summed=(k,)),
        einsum_attention_scores=einsum_spec((Q[bb, h, i, dd], Kt[bb, h, j, dd]), summed=(dd,)),
        dot_product_cosine=law(sp.expand(sp.expand_trig(
                (r1 * sp.cos(t1) * r2 * sp.cos(t2) + r1 * sp.sin(t1) * r2 * sp.sin(t2))
                - r1 * r2 * sp.cos(t1 - t2))) == 0),
        cheat_attention_s2_term=theta(attention_flops, "S->oo"),
        cheat_attention_d2_term=theta(attention_flops, "d->oo"),
        cheat_kv_cache_linear=law(sp.degree(decode.flops, L) == 1),
        stride_transpose_no_copy=law(sum(0 if np.shares_memory(big, view) else view.nbytes
                               for big in [np.zeros((1000, 1000), np.float32)]
                               for view in (big.T, big.reshape(-1))) == 0),
        stride_transpose_noncontiguous="contiguous" if a.T.flags["C_CONTIGUOUS"]
                                       else "non-contiguous",
        stride_contiguous_copy=theta(elementwise("contiguous copy", E, "fp32",
                                                         flops_per_element=0).bytes()),
        bcast_rule=law(sp.Rational(sum(text_broadcast(p, q) == numpy_broadcast(p, q)
                                           for p, q in pairs), len(pairs)) == 1),
        bcast_stride_zero=np.broadcast_to(column, (3, 4)).strides[1],
        bcast_no_copy=law(np.shares_memory(np.broadcast_to(column, (3, 4)), column)),
        bcast_figure=str(np.broadcast_shapes((3, 1), (1, 4))),
        bcast_example=str(np.broadcast_shapes((32, 1, 64), (1, 128, 64))),
        bcast_batch_pitfall="(" + ", ".join("Batch" if s == batch else str(s) for s in
                                           np.broadcast_shapes((batch, 1), (batch,))) + ")",
        tensor_noncontiguous_5pct=measured(),
        gemm_blas_definition=measured(),
        gemm_blas_years=measured(),
    )
