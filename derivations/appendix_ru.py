"""Encodes the linear-algebra and tensor-programming sections of the Russian appendix
«Основы алгоритмов» (seed 002): GEMM cost and intensity, CSR storage, einsum,
broadcasting, shapes and strides, and the attention cost terms of the cheat sheet.

The training, reverse-mode AD and FlashAttention sections are in ``appendix_training_ru``,
``appendix_adcost_ru`` and ``appendix_attention_ru``; the scaling-law section is encoded
elsewhere.
"""

from __future__ import annotations

import random

import numpy as np
import sympy as sp
from _appendix_ru import a100_vendor, source

from symroof.claims.model import Derivation
from symroof.core.sizes import dtype_bytes, sizes
from symroof.engine.asymptotics import theta
from symroof.engine.ops import einsum, elementwise, op, sequence

GEMM = "Обобщенное матричное умножение (GEMM)"
SPARSE = "Форматы разреженных матриц"
SHAPES = "Формы и страйды"
BROADCAST = "Broadcasting"
CHEAT = "Шпаргалка по вычислительной сложности"
TENSOR_OPS = "Тензорные операции и обозначения"


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


def build() -> Derivation:
    d = Derivation.begin("appendix-ru", "Appendix «Основы алгоритмов» (Russian): linear algebra "
                         "and tensor programming", source())
    a100 = a100_vendor()
    d.assume("Critical intensity: NVIDIA A100 80GB SXM with the vendor figures (alternative "
             "NV-A100: 312 TFLOP/s fp16 dense, 2039 GB/s), the one catalogue chip whose ridge "
             "is the text's 153.0 FLOP/byte (the book's own A100 figures give 155)")
    d.assume("CSR example: FP32 values and int32 column indices as the text says; the row "
             "pointers' width is not stated, int32 (4 bytes) is assumed")

    # ---------------------------------------------------------------- GEMM
    n = sizes("n")[0]
    N, K = sizes("N K")
    gemm_mnk = einsum("M K, K N -> M N", "fp16", name="GEMM M x K by K x N")
    square = einsum("i k, k j -> i j", "fp16", dims={"i": n, "k": n, "j": n},
                    name="square GEMM, beta = 0")
    rl0 = d.roofline(square, a100)
    read_c = op("read the old C", 0, bytes=n**2 * dtype_bytes("fp16"), dtype="fp16")
    rl1 = d.roofline(sequence(square, read_c, name="square GEMM, beta != 0"), a100)
    at64 = rl0.at({"n": 64})

    d.claim("gemm_flops", kind="expr", section=GEMM,
            quote="Для матриц размера $M\\times K$ и $K\\times N$ GEMM выполняет $2MNK$ "
                  "операций с плавающей запятой (операция «умножить и накопить» считается как "
                  "две операции).",
            statement="An M x K by K x N GEMM does 2MNK FLOPs (a multiply-accumulate is 2).",
            stated="2*M*N*K", derive=lambda: gemm_mnk.flops)
    d.claim("gemm_intensity_grows_linearly", kind="qualitative", section=GEMM,
            quote="Арифметическая интенсивность GEMM линейно растет с размером матрицы.",
            statement="GEMM intensity grows linearly with the matrix size.",
            stated="линейно растет", within=(1, 1),
            meaning="polynomial degree in n of the square FP16 GEMM's intensity",
            derive=lambda: sp.degree(rl0.intensity, n))
    d.claim("gemm_intensity_beta0", kind="expr", section=GEMM,
            quote="$$\\text{Интенсивность}=\\frac{O}{D_{\\text{vol}}}=\\frac{2n^3}{3n^2\\times 2}"
                  "=\\frac{n}{3}\\text{ FLOP/байт}$$",
            statement="A square n x n FP16 GEMM with beta = 0 (read A and B, write C once) "
                      "has intensity n/3 FLOP/byte.",
            stated="n/3", derive=lambda: rl0.intensity)
    d.claim("gemm_intensity_beta_nonzero", kind="expr", section=GEMM,
            quote="Чтение старой $\\mathbf{C}$ при $\\beta \\ne 0$ меняет интенсивность на $n/4$ "
                  "FLOP/байт.",
            statement="Reading the old C as well (beta != 0) makes the intensity n/4.",
            stated="n/4", derive=lambda: rl1.intensity)
    d.claim("gemm_n64_intensity_exact", section=GEMM,
            quote="квадратный GEMM с $n=$ 64 имеет интенсивность 64/3 ≈ 21,3 FLOP/байт",
            statement="At n = 64 the intensity is 64/3 FLOP/byte.",
            stated="64/3", derive=lambda: at64.intensity)
    d.claim("gemm_n64_intensity", section=GEMM,
            quote="квадратный GEMM с $n=$ 64 имеет интенсивность 64/3 ≈ 21,3 FLOP/байт",
            statement="At n = 64 the intensity is about 21.3 FLOP/byte.",
            stated="21.3", derive=lambda: at64.intensity)
    d.claim("gemm_ridge_a100", section=GEMM,
            quote="что заметно ниже точки перехода (153,0 FLOP/байт)",
            statement="The critical intensity the text uses, 153.0 FLOP/byte, is the A100 80GB "
                      "SXM's with the vendor figures (312 TFLOP/s / 2039 GB/s, catalogue "
                      "a100-80gb, alternative NV-A100); the chip is not named in the text.",
            stated="153.0", derive=lambda: rl0.ridge)
    d.claim("gemm_n64_below_ridge", kind="label", section=GEMM,
            quote="что заметно ниже точки перехода (153,0 FLOP/байт)",
            statement="At n = 64 the GEMM is memory-bound on that chip.",
            stated="hbm", derive=lambda: rl0.at({"n": 64}).bound())
    d.claim("gemm_n64_share_of_peak", section=GEMM,
            quote="Его потолок Roofline составляет около 13,9 процента пика",
            statement="Its roofline ceiling is about 13.9% of peak.",
            stated="13.9%", derive=lambda: at64.attainable / at64.peak)
    b = sizes("b")[0]
    queued = d.roofline(square.repeat(b, name="b queued square GEMMs"), a100)
    d.claim("gemm_queue_small_no_gain", kind="qualitative", section=GEMM,
            quote="простая постановка в очередь независимых мелких GEMM интенсивность не повышает",
            statement="Queueing b independent small GEMMs does not raise the intensity.",
            stated="не повышает", within=(0, 1),
            meaning="intensity of b queued square GEMMs divided by the intensity of one "
                    "(not raised: at most 1)",
            derive=lambda: sp.simplify(queued.intensity / rl0.intensity))

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
    d.claim("gemm_attention_block", section="Почему это важно",
            quote="Блок самовнимания выполняет GEMM для проекций Q, K, V и выхода плюс два "
                  "матричных умножения внимания: одно для оценок внимания и одно для значений, "
                  "взвешенных вниманием.",
            statement="A self-attention block runs 4 projection GEMMs (Q, K, V, output) and 2 "
                      "attention matmuls (scores, weighted values): the einsum specs of the "
                      "block that contract an index, with and without a weight operand.",
            stated="4 + 2", derive=lambda: len(with_weights) + (len(gemms) - len(with_weights)))

    # ---------------------------------------------------------------- sparse storage
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
        return sp.expand(sp.interpolate(points, R))

    params = rows * cols
    nnz = density * params
    dense_bytes = params * fp32
    sparse_bytes = csr_bytes(sp.Integer(rows), nnz, fp32, int32, int32)
    d.step("define", "CSR bytes of R rows and K non-zeros", None,
           csr_bytes(R, K, sizes("w_v")[0], sizes("w_i")[0], sizes("w_p")[0]),
           "K values and K column indices, R + 1 row pointers")

    d.claim("csr_row_ptr_length", kind="expr", section=SPARSE,
            quote="Row_Ptr: начальная позиция в Values для каждой строки (длина = число строк + 1)",
            statement="The row-pointer array has R + 1 entries (fitted to CSR arrays built "
                      "from random matrices of 1 to 4 rows).",
            stated="R + 1", derive=row_pointer_length)
    d.claim("csr_order_k_plus_r", kind="expr", section=SPARSE,
            quote="CSR использует $\\mathcal{O}(K+R)$ памяти вместо $\\mathcal{O}(N)$",
            statement="CSR needs O(K + R) memory (K non-zeros, R rows).",
            stated="K + R", derive=lambda: theta(csr_bytes(R, K, fp32, int32, int32), "K,R->oo"))
    d.claim("csr_order_dense", kind="expr", section=SPARSE,
            quote="CSR использует $\\mathcal{O}(K+R)$ памяти вместо $\\mathcal{O}(N)$",
            statement="Dense storage of N elements needs O(N) memory.",
            stated="N", derive=lambda: theta(N * fp32))
    d.claim("csr_order_k", kind="expr", section=SPARSE,
            quote="когда $K$ велико относительно $R$, это часто суммируют как $\\mathcal{O}(K)$",
            statement="With K much larger than R, CSR is O(K).",
            stated="K", derive=lambda: theta(csr_bytes(R, K, fp32, int32, int32), "R<<K"))
    d.claim("csr_example_params", section=SPARSE,
            quote="рассмотрим матрицу эмбеддингов словаря со 100 000 строк и 10 000 столбцов "
                  "(1 млрд параметров)",
            statement="100,000 x 10,000 is 1 billion parameters (printed '1 млрд').",
            stated="1e9", derive=lambda: params)
    d.claim("csr_dense_gb", section=SPARSE, unit="GB",
            quote="Плотная (FP32): 1 млрд параметров $\\times$ 4 байта каждый = 4 ГБ.",
            statement="Dense FP32 storage is 4 GB (decimal).",
            stated="4", derive=lambda: dense_bytes / 10**9)
    d.claim("csr_nnz_millions", section=SPARSE, unit="million",
            quote="Разреженная (плотность 1 процент): CSR хранит примерно 10 млн записей",
            statement="At 1% density CSR stores about 10 million entries.",
            stated="10", derive=lambda: nnz / 10**6)
    d.claim("csr_example_mb", section=SPARSE, unit="MB",
            quote="плюс один указатель строки на строку и финальный указатель, итого ≈ 80,4 МБ",
            statement="CSR with 4-byte values, 4-byte column indices and (assumed) 4-byte row "
                      "pointers takes about 80.4 MB (decimal).",
            stated="80.4", derive=lambda: sparse_bytes / 10**6)
    d.claim("csr_reduction", section=SPARSE,
            quote="Результат: снижение объема памяти в 50 раз",
            statement="Dense / CSR is about 50x.",
            stated="50", derive=lambda: dense_bytes / sparse_bytes)

    # ---------------------------------------------------------------- einsum, dot product
    i, j, k, bb, h, dd = sp.symbols("i j k b h d", integer=True)
    A, B_, Q, Kt = (sp.IndexedBase(s) for s in ("A", "B", "Q", "K"))
    d.claim("einsum_matmul", kind="label", section=TENSOR_OPS,
            quote="В нотации einsum это записывается как ik,kj->ij.",
            statement="C_ij = sum_k A_ik B_kj is the einsum ik,kj->ij.",
            stated="ik,kj->ij",
            derive=lambda: einsum_spec((A[i, k], B_[k, j]), summed=(k,)))
    d.claim("einsum_attention_scores", kind="label", section=TENSOR_OPS,
            quote="батчевое многоголовое внимание записывается как bhid,bhjd->bhij",
            statement="Batched multi-head attention scores S_bhij = sum_d Q_bhid K_bhjd are "
                      "the einsum bhid,bhjd->bhij.",
            stated="bhid,bhjd->bhij",
            derive=lambda: einsum_spec((Q[bb, h, i, dd], Kt[bb, h, j, dd]), summed=(dd,)))
    r1, r2, t1, t2 = sp.symbols("r1 r2 t1 t2", positive=True)
    d.claim("dot_product_cosine", kind="qualitative",
            section="Скалярное произведение как мера сходства",
            quote="Скалярное произведение $\\mathbf{a}\\cdot \\mathbf{b}=\\sum a_i{b}_i$ "
                  "геометрически эквивалентно $\\Vert \\mathbf{a}\\Vert \\Vert \\mathbf{b}\\Vert "
                  "\\cos \\varphi$",
            statement="a.b = sum a_i b_i equals |a||b| cos(phi).",
            stated="геометрически эквивалентно", within=(0, 0),
            meaning="a.b - |a||b|cos(phi) for plane vectors of lengths r1, r2 at angles t1, t2 "
                    "(phi = t1 - t2), simplified",
            derive=lambda: sp.simplify(
                (r1 * sp.cos(t1) * r2 * sp.cos(t2) + r1 * sp.sin(t1) * r2 * sp.sin(t2))
                - r1 * r2 * sp.cos(t1 - t2)))

    # ---------------------------------------------------------------- cheat sheet
    S, dm, L = sizes("S d L")
    proj = einsum("B S D, D E -> B S E", dims={"D": dm, "E": dm}).repeat(4)
    scores = einsum("B S D, B T D -> B S T", dims={"T": S, "D": dm})
    mix = einsum("B S T, B T D -> B S D", dims={"T": S, "D": dm})
    attention_flops = sp.expand(proj.flops + scores.flops + mix.flops)
    d.step("define", "attention layer FLOPs (forward)", None, attention_flops,
           "Q, K, V, O projections + scores + value mixing (einsum)")
    d.claim("cheat_attention_s2_term", kind="expr", section=CHEAT,
            quote="длина последовательности добавляет член $S^2$",
            statement="Attention FLOPs have a term in S^2 (scores and value mixing, "
                      "4 B S^2 d), which dominates for long sequences.",
            stated="B*S**2*d", derive=lambda: theta(attention_flops, "S->oo"))
    d.claim("cheat_attention_d2_term", kind="expr", section=CHEAT,
            quote="при больших скрытых размерностях доминирует работа проекций $d^2$",
            statement="For a large hidden size the projection work 8 B S d^2 dominates.",
            stated="B*S*d**2", derive=lambda: theta(attention_flops, "d->oo"))
    decode = sequence(einsum("D, L D -> L", dims={"D": dm}), einsum("L, L D -> D", dims={"D": dm}))
    d.claim("cheat_kv_cache_linear", kind="qualitative", section=CHEAT,
            quote="тогда как генерация с KV-кэшем линейна по кэшированному контексту на каждый "
                  "токен",
            statement="Decoding one token with a KV cache costs attention FLOPs linear in the "
                      "cached length L.",
            stated="линейна", within=(1, 1),
            meaning="polynomial degree in L of one token's attention FLOPs against L cached "
                    "keys and values",
            derive=lambda: sp.degree(decode.flops, L))

    # ---------------------------------------------------------------- shapes and strides
    a = np.zeros((3, 4), dtype=np.float32)
    d.claim("stride_transpose_no_copy", kind="qualitative", section=SHAPES,
            quote="Операции вроде transpose() или view() часто меняют только страйды, а не "
                  "данные в памяти. Это быстро ($\\mathcal{O}(1)$)",
            statement="transpose() and view() change only metadata: no tensor data is copied.",
            stated="O(1)", within=(0, 0),
            meaning="bytes of a 10^6-element tensor copied by NumPy's transpose and reshape "
                    "views (0 when the result shares the input's memory)",
            derive=lambda: sum(0 if np.shares_memory(big, view) else view.nbytes
                               for big in [np.zeros((1000, 1000), np.float32)]
                               for view in (big.T, big.reshape(-1))))
    d.claim("stride_transpose_noncontiguous", kind="label", section=SHAPES,
            quote="но приводит к прерывистым тензорам",
            statement="A transposed view is not contiguous.",
            stated="non-contiguous",
            derive=lambda: "contiguous" if a.T.flags["C_CONTIGUOUS"] else "non-contiguous")
    E = sizes("N")[0]
    d.claim("stride_contiguous_copy", kind="expr", section=SHAPES,
            quote="вызов contiguous() принудительно копирует память за $\\mathcal{O}(N)$",
            statement="contiguous() copies the tensor: O(N) for N elements.",
            stated="N", derive=lambda: theta(elementwise("contiguous copy", E, "fp32",
                                                         flops_per_element=0).bytes()))

    # ---------------------------------------------------------------- broadcasting
    rng = random.Random(2)
    pairs = [(tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4))),
              tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 4))))
             for _ in range(400)]
    d.claim("bcast_rule", kind="qualitative", section=BROADCAST,
            quote="Сравнивайте размерности от последней к первой. Две размерности совместимы, "
                  "когда:",
            statement="Compare dimensions from the last; two are compatible when equal or when "
                      "one is 1.",
            stated="правила", within=(1, 1),
            meaning="share of 400 random shape pairs on which the text's rule (missing leading "
                    "dimensions pass through) gives NumPy's broadcast shape or incompatibility",
            derive=lambda: sp.Rational(sum(text_broadcast(p, q) == numpy_broadcast(p, q)
                                           for p, q in pairs), len(pairs)))
    column = np.arange(3.0).reshape(3, 1)
    d.claim("bcast_stride_zero", section=BROADCAST,
            quote="страйд для такой размерности задается равным 0",
            statement="A stretched dimension has stride 0.",
            stated="0", derive=lambda: np.broadcast_to(column, (3, 4)).strides[1])
    d.claim("bcast_no_copy", kind="qualitative", section=BROADCAST,
            quote="так что аппаратура многократно читает одно и то же значение с накладными "
                  "расходами памяти $\\mathcal{O}(1)$",
            statement="Broadcasting allocates no new data: O(1) memory overhead.",
            stated="O(1)", within=(0, 0),
            meaning="bytes allocated by NumPy's broadcast_to of a (3, 1) column to (3, 4) "
                    "(0 when the view shares the column's memory)",
            derive=lambda: 0 if np.shares_memory(np.broadcast_to(column, (3, 4)), column)
            else np.broadcast_to(column, (3, 4)).nbytes)
    d.claim("bcast_figure", kind="label", section=BROADCAST,
            quote="столбец (3,1) и строка (1,4) растягиваются по взаимодополняющим размерностям "
                  "и дают попарные суммы в результате формы (3,4).",
            statement="(3,1) + (1,4) broadcasts to (3,4).",
            stated="(3, 4)", derive=lambda: str(np.broadcast_shapes((3, 1), (1, 4))))
    d.claim("bcast_example", kind="label", section=BROADCAST,
            quote="тензор A имеет форму (32, 1, 64), а тензор B — форму (1, 128, 64). Сравнивая "
                  "размерности справа налево, видим: 64 совпадает с 64, затем 1 растягивается до "
                  "128, затем 1 растягивается до 32, и получается форма результата (32, 128, 64).",
            statement="(32, 1, 64) with (1, 128, 64) broadcasts to (32, 128, 64).",
            stated="(32, 128, 64)",
            derive=lambda: str(np.broadcast_shapes((32, 1, 64), (1, 128, 64))))
    batch = 7
    d.claim("bcast_batch_pitfall", kind="label", section=BROADCAST,
            quote="случайно выделяют большой тензор (например, матрицу (Batch, Batch) вместо "
                  "поэлементного вектора (Batch))",
            statement="A (Batch, 1) column against a (Batch,) vector broadcasts to "
                      "(Batch, Batch) (checked with Batch = 7).",
            stated="(Batch, Batch)",
            derive=lambda: "(" + ", ".join("Batch" if s == batch else str(s) for s in
                                           np.broadcast_shapes((batch, 1), (batch,))) + ")")

    # the anecdote of the section's introduction
    d.claim("tensor_noncontiguous_5pct", kind="measurement",
            section="Примитивы тензорного программирования",
            quote="ядро, работающее на 5 процентах пика из-за прерывистого (non-contiguous) "
                  "тензора",
            statement="A kernel running at 5% of peak because of a non-contiguous tensor.",
            stated="5%", evidence="an illustrative example of the text; no measurement is cited")
    d.claim("gemm_blas_definition", kind="measurement", section="сноска 2 (GEMM)",
            quote="GEMM вычисляет $\\mathbf{C}=\\alpha \\mathbf{AB}+\\beta \\mathbf{C}$",
            statement="BLAS GEMM computes C = alpha A B + beta C.",
            stated="C = alpha*A*B + beta*C",
            evidence="the interface of the Level-3 BLAS routine xGEMM (Dongarra et al.), a "
                     "definition of an external library rather than a derivable value")
    d.claim("gemm_blas_years", kind="measurement", section="сноска 2 (GEMM)",
            quote="началось с векторных подпрограмм, стандартизованных в 1979 году (Lawson et al., "
                  "1979); GEMM позднее была стандартизована как подпрограмма уровня 3 (Dongarra "
                  "et al., 1988)",
            statement="Level-1 BLAS dates from 1979, the Level-3 BLAS (GEMM) from 1988.",
            stated="1979; 1988",
            evidence="bibliography: Lawson et al., ACM TOMS 5(3), 1979; the Level-3 BLAS were "
                     "proposed in 1988 (Argonne report) and published in ACM TOMS 16(1), 1990")
    return d.build()
