"""Quantisation schemes: a storage dtype plus the scales (and zero points) its groups carry,
as exact bytes per element.

>>> SCHEMES["int4-gptq"].bytes_per_element
133/256
>>> SCHEMES["int8-token"].bytes_per_element
33/32

A scheme stores each element in ``bits`` and, for every group of ``group`` consecutive
elements, a scale of ``scale_bits`` and a zero point of ``zero_bits``: (bits x group +
scale_bits + zero_bits) / (8 x group) bytes per element, exactly. A scale per tensor or per
head is a few bytes per layer, not per element: such a scheme has no group and its bytes
per element are its storage dtype's (the scales are said, not counted).

A weight scheme quantises the layers' projection matrices (their biases with them); the
embedding, the output head and the norms stay in 16 bits (``REST``), as AutoGPTQ and AutoAWQ
checkpoints keep them. A scheme with ``activations`` (``fp8-w8a8``) quantises the
projections' inputs too: each projection reads its input in that dtype and runs at the
chip's peak for it; its output, the attention core, the norms and the head stay in 16 bits.
A KV scheme quantises the cache; a group of ``head`` elements is one
token's vector of one KV head, so a model's head dimension must equal it.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .errors import InputError

#: the dtype a weight scheme leaves the embedding, output head and norms in
REST = "fp16"


@dataclass(frozen=True)
class Scheme:
    """A named quantisation scheme (see the module's docstring)."""

    name: str
    applies: str  # "weights" or "kv"
    bits: int
    group: int | None  # elements sharing a scale; None: a scale per tensor or per head
    scale_bits: int
    zero_bits: int
    meaning: str
    source: str
    per_head: bool = False  # a group is one token's vector of one KV head
    activations: str | None = None  # a weight scheme's projections read their inputs in it

    @property
    def bytes_per_element(self) -> sp.Rational:
        if self.group is None:
            return sp.Rational(self.bits, 8)
        return sp.Rational(self.bits * self.group + self.scale_bits + self.zero_bits,
                           8 * self.group)

    def describe(self) -> str:
        """One line: the scheme, its exact bytes per element and its source."""
        rest = f"; embedding, output head and norms in {REST}" if self.applies == "weights" \
            else ""
        return (f"{self.name}: {self.meaning}: {self.bytes_per_element} B per element"
                f"{rest} ({self.source})")


SCHEMES: dict[str, Scheme] = {s.name: s for s in (
    Scheme("int4-gptq", "weights", 4, 128, 16, 4,
           "4-bit integers, a 16-bit scale and a 4-bit zero point per group of 128 along "
           "the input dimension",
           "Frantar et al. 2023, GPTQ; its checkpoints: qweight packs 8 int4 per int32, "
           "qzeros [in/128, out/8] int32, scales [in/128, out] fp16"),
    Scheme("int4-awq", "weights", 4, 128, 16, 4,
           "4-bit integers, a 16-bit scale and a 4-bit zero point per group of 128 along "
           "the input dimension",
           "Lin et al. 2024, AWQ; its GEMM checkpoints: qweight and qzeros pack 8 int4 per "
           "int32, scales fp16, group_size 128"),
    Scheme("int4-sym", "weights", 4, 128, 16, 0,
           "4-bit integers, a 16-bit scale per group of 128, symmetric (no zero point)",
           "GPTQ/AWQ with sym and zero_point off, as the Marlin kernels load them"),
    Scheme("fp8-w8a8", "weights", 8, None, 32, 0,
           "fp8 (e4m3) weights and activations (W8A8), one fp32 scale per tensor: each "
           "projection reads its input in fp8 and runs at the chip's fp8 peak, its output "
           "in 16 bits",
           "TensorRT-LLM's enable_fp8 build option (fp8 GEMMs for the attention QKV and dense "
           "projections and the MLP, per-tensor scales); NVIDIA ModelOpt's FP8 checkpoints",
           activations="fp8"),
    Scheme("fp8-tensor", "kv", 8, None, 32, 0,
           "fp8 (e4m3) with one fp32 scale per layer for K and one for V",
           "vLLM, quantized KV cache: per-tensor k/v_scale = [1]"),
    Scheme("fp8-head", "kv", 8, None, 32, 0,
           "fp8 (e4m3) with an fp32 scale per KV head per layer for K and for V",
           "vLLM, quantized KV cache: per-attention-head k/v_scale = [num_kv_heads]"),
    Scheme("int8-token", "kv", 8, 128, 32, 0,
           "8-bit integers with an fp32 scale per token and KV head (a head dimension of "
           "128)", "vLLM's dynamic per-token scale (kDynamicTokenScale: float32); KIVI "
           "(Liu et al. 2024) quantises values per token", per_head=True),
    Scheme("kivi-2", "kv", 2, 32, 16, 16,
           "2-bit integers, a 16-bit scale and a 16-bit zero point per group of 32 (keys "
           "per channel, values per token); its full-precision residual of recent tokens "
           "not counted", "Liu et al. 2024, KIVI: group size 32, fp16 scale and zero point"),
)}


def scheme_of(name: str) -> Scheme | None:
    """The scheme a dtype name names, or None for a plain dtype."""
    return SCHEMES.get(name.strip().lower())


def check_scheme(name: str, use: str, *, head_dim: sp.Expr | int | None = None,
                 where: str | None = None) -> None:
    """A scheme used where it applies (``weights`` or ``kv``), its per-head groups the
    model's head dimension.

    >>> check_scheme("int4-awq", "kv", where="--kv-dtype")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: --kv-dtype: int4-awq is a weights scheme, not a kv one
    """
    s = scheme_of(name)
    if s is None:
        return
    if s.applies != use:
        raise InputError(f"{s.name} is a {s.applies} scheme, not a {use} one", where)
    if s.per_head and head_dim is not None and sp.sympify(head_dim).is_number \
            and sp.sympify(head_dim) != s.group:
        raise InputError(f"{s.name} scales a head's {s.group} elements per token; this "
                         f"model's head dimension is {head_dim}", where)


def matmul_input(activations: str, weights: str) -> str:
    """The dtype a projection whose weights are in ``weights`` reads its input in: the
    scheme's activations (``fp8-w8a8``: fp8), else ``activations``.

    >>> matmul_input("bf16", "fp8-w8a8"), matmul_input("bf16", "int4-awq")
    ('fp8', 'bf16')
    """
    s = scheme_of(weights)
    return s.activations if s is not None and s.activations else activations


def rest_dtype(name: str) -> str:
    """The dtype of the weights a weight scheme leaves unquantised (``REST``); a plain
    dtype's own name."""
    s = scheme_of(name)
    return REST if s is not None and s.applies == "weights" else name
