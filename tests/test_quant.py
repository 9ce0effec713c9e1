"""Quantisation schemes: exact bytes per element (derived by hand from each scheme's
layout), the weights and KV cache they leave in memory and in a decode step's HBM traffic."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.core.quant import SCHEMES
from symroof.core.sizes import dtype_bytes
from symroof.models import model, params
from symroof.models.counts import kv_bytes_per_token
from symroof.models.layers import layer_ops
from symroof.models.memory import inference_memory
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve
from tests.conftest import examples, run_cli

# by hand: bits of a group of elements plus its scale and zero point, over 8 bits per byte
BY_HAND = {
    "int4-gptq": sp.Rational(4 * 128 + 16 + 4, 8 * 128),  # 532/1024 = 133/256
    "int4-awq": sp.Rational(532, 1024),
    "int4-sym": sp.Rational(4 * 128 + 16, 8 * 128),  # 33/64
    "int8-token": sp.Rational(8 * 128 + 32, 8 * 128),  # 33/32
    "kivi-2": sp.Rational(2 * 32 + 16 + 16, 8 * 32),  # 3/8
    "fp8-tensor": sp.Integer(1),  # scales per tensor: a few bytes per layer, not per element
    "fp8-head": sp.Integer(1),
    "fp8-w8a8": sp.Integer(1),  # one fp32 scale per tensor: bytes per layer, not per element
}
# weight schemes whose projections read their inputs in 16 bits (fp8-w8a8 reads them in fp8
# too: its laws are in tests/test_serving_w8a8.py)
WEIGHTS = [n for n, s in SCHEMES.items() if s.applies == "weights" and not s.activations]
KV = [n for n, s in SCHEMES.items() if s.applies == "kv" and not s.per_head]
DENSE = ["gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2.5-7b", "llama-3-70b"]


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_bytes_per_element_are_exact(name: str) -> None:
    assert dtype_bytes(name) == BY_HAND[name]
    assert dtype_bytes(name.upper()) == BY_HAND[name]


def test_every_scheme_is_derived_by_hand() -> None:
    assert set(SCHEMES) == set(BY_HAND)


@settings(max_examples=examples(10), deadline=None)
@given(name=st.sampled_from(DENSE), scheme=st.sampled_from(WEIGHTS),
       batch=st.integers(1, 64), context=st.integers(1, 8192))
def test_a_weight_scheme_quantises_the_projections_only(name: str, scheme: str, batch: int,
                                                         context: int) -> None:
    # memory: projections at the scheme's bytes, embedding/head and norms at 2 bytes; the
    # decode step reads each projection once, so its HBM bytes fall by exactly
    # projections x (2 - scheme bytes) against bf16
    cfg = model(name)
    p = params(cfg)
    rest = p.embedding + p.norms
    b = BY_HAND[scheme]
    mem = inference_memory(cfg, batch=batch, context=context, dtype=scheme, kv_dtype="bf16")
    assert mem.parts["weights"] == (p.total - rest) * b + rest * 2
    plain = layer_ops(cfg, "decode", batch=batch, context=context, kv_dtype="bf16")
    quant = layer_ops(cfg, "decode", batch=batch, context=context, dtype=scheme,
                      kv_dtype="bf16")
    assert plain.total().bytes() - quant.total().bytes() == (p.total - rest) * (2 - b)


@settings(max_examples=examples(10), deadline=None)
@given(name=st.sampled_from(DENSE), scheme=st.sampled_from(KV), batch=st.integers(1, 64),
       context=st.integers(1, 8192))
def test_a_kv_scheme_sizes_the_cache(name: str, scheme: str, batch: int, context: int) -> None:
    cfg = model(name)
    elements = 2 * cfg.layers * cfg.kv_heads * cfg.head_dim  # one token, every layer
    assert kv_bytes_per_token(cfg, scheme) == elements * BY_HAND[scheme]
    mem = inference_memory(cfg, batch=batch, context=context, kv_dtype=scheme)
    assert mem.parts["kv cache"] == batch * context * elements * BY_HAND[scheme]


def test_per_token_int8_kv_on_a_head_dimension_of_128() -> None:
    cfg = model("llama-2-7b")
    assert kv_bytes_per_token(cfg, "int8-token") == 2 * 32 * 32 * 128 * sp.Rational(33, 32)
    with pytest.raises(InputError, match="head dimension is 64"):
        kv_bytes_per_token(model("gpt2"), "int8-token")


def test_serving_memory_and_assumptions_follow_the_scheme() -> None:
    cfg, m = model("llama-2-7b"), mesh("X=8", "h100-sxm")
    s = serve(cfg, m, batch=64, context=2048,
              options=StepOptions(dtype="int4-awq", kv_dtype="int8-token"))
    plain = serve(cfg, m, batch=64, context=2048)
    assert s.memory["kv_cache"] == plain.memory["kv_cache"] * sp.Rational(33, 32) / 2
    assert any("133/256 B per element" in a for a in s.assumptions)
    assert any("33/32 B per element" in a for a in s.assumptions)
    assert s.decode.bytes < plain.decode.bytes


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--kv-dtype", "int4-awq", "--kv-dtype: int4-awq is a weights scheme, not a kv one"),
    ("--dtype", "fp8-tensor", "--dtype: fp8-tensor is a kv scheme, not a weights one"),
])
def test_a_scheme_out_of_place_is_refused(flag: str, value: str, message: str) -> None:
    r = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm", flag,
                value)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"symroof: error: {message}"]


def test_a_weight_scheme_keeps_the_cache_in_16_bits_by_default() -> None:
    cfg = model("llama-2-7b")
    mem = inference_memory(cfg, batch=2, context=100, dtype="int4-gptq")
    assert mem.parts["kv cache"] == 2 * 100 * 2 * 32 * 32 * 128 * 2
    s = serve(cfg, mesh("X=8", "h100-sxm"), batch=8, context=512,
              options=StepOptions(dtype="int4-awq"))
    assert s.kv_dtype == "fp16"
