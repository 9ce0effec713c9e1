"""Layer ops, step rooflines, the critical batch, decode intensity and capacity thresholds."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip
from symroof.core.errors import DerivationError, InputError
from symroof.models import (
    bundled,
    critical_batch,
    decode_intensity,
    inference_memory,
    layer_ops,
    max_batch,
    max_context,
    min_chips,
    model,
    step_roofline,
)
from symroof.models.layers import Kernel
from tests.conftest import examples

A100S = ("a100-40gb", "a100-80gb")


@pytest.mark.parametrize("chip_name", A100S)
@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("attention", ["flash", "materialised"])
def test_llama_2_7b_decode_is_memory_bound_op_by_op_on_an_a100(chip_name: str, batch: int,
                                                              attention: str) -> None:
    srl = step_roofline(layer_ops(model("llama-2-7b"), "decode", batch=batch, context=1024,
                                  attention=attention), chip(chip_name))
    # 7 ops per layer with one fused attention kernel, 8 with scores and values apart; 3 once
    assert len(srl.rows) == {"flash": 10, "materialised": 11}[attention]
    assert {r.op.name: r.roofline.bound() for r in srl.rows} == \
        {r.op.name: "hbm" for r in srl.rows}
    assert srl.bound() == "hbm"


def test_prefill_of_a_long_prompt_is_compute_bound_in_its_matmuls() -> None:
    srl = step_roofline(layer_ops(model("llama-2-7b"), "prefill", batch=1, context=4096),
                        chip("a100-80gb"))
    bounds = {r.op.name: r.roofline.bound() for r in srl.rows}
    assert bounds["qkv"] == bounds["gate/up"] == bounds["output head"] == "compute"
    assert bounds["attention norm"] == "hbm"
    assert srl.bound() == "compute"


@settings(max_examples=examples(20), deadline=None)
@given(st.sampled_from(sorted(n for n, c in bundled().items() if c.mla is None)),
       st.integers(1, 512), st.integers(1, 8192),
       st.sampled_from(["decode", "prefill"]))
def test_step_bounds_are_ordered(name: str, b: int, t: int, phase: str) -> None:
    srl = step_roofline(layer_ops(model(name), phase, batch=b, context=t), chip("h100-sxm"))
    assert srl.t_lower <= srl.t_upper <= 2 * srl.t_lower
    assert max(srl.t_math, srl.t_memory) <= srl.t_lower


def test_one_layers_ops_are_built_once_and_counted() -> None:
    step = layer_ops(model("llama-2-70b"), "decode", batch=8, context=2048)
    assert [(b.name, b.count) for b in step.blocks] == [("layer", 80), ("head", 1)]
    moe = layer_ops(model("mixtral-8x7b"), "decode", batch=8, context=2048)
    names = [o.name for o in moe.blocks[0].ops]
    assert names[-3:] == ["router", "experts gate/up", "experts down"]


def test_decode_touches_the_experts_uniform_routing_reaches() -> None:
    # Mixtral: 8 experts, top-2; one token touches 2 experts, B tokens 8 (1 - (3/4)^B)
    cfg = model("mixtral-8x7b")
    per_expert = 2 * 4096 * 14336 * 2  # gate and up weights of one expert, bf16
    for b, touched in ((1, 2), (2, sp.Rational(7, 2))):
        up = next(o for o in layer_ops(cfg, "decode", batch=b, context=1).blocks[0].ops
                  if o.name == "experts gate/up")
        assert up.reads["hbm"] - b * 2 * 4096 * 2 == touched * per_expert


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-70b"])
def test_the_critical_batch_is_where_decode_turns_compute_bound(name: str) -> None:
    cfg, a100 = model(name), chip("a100-80gb")
    cb = critical_batch(cfg, a100, context=128)
    assert cb.integer is not None and cb.value is not None
    assert cb.integer - 1 < cb.value < cb.integer

    def bound(b: int) -> str:
        return step_roofline(layer_ops(cfg, "decode", batch=b, context=128), a100).bound()
    assert (bound(cb.integer - 1), bound(cb.integer)) == ("hbm", "compute")


def test_moe_critical_batch_is_an_exact_integer_without_closed_form() -> None:
    cfg, a100 = model("mixtral-8x7b"), chip("a100-80gb")
    cb = critical_batch(cfg, a100, context=128)
    assert cb.value is None and cb.integer is not None and "no closed form" in cb.reason

    def bound(b: int) -> str:
        return step_roofline(layer_ops(cfg, "decode", batch=b, context=128), a100).bound()
    assert (bound(cb.integer - 1), bound(cb.integer)) == ("hbm", "compute")


def test_no_critical_batch_when_the_kv_cache_dominates() -> None:
    # LLaMA-2-7B (32 KV heads) at 8192 positions: FLOPs and KV bytes both grow like B, their
    # ratio stays far below the A100's ridge
    cb = critical_batch(model("llama-2-7b"), chip("a100-80gb"), context=8192)
    assert cb.integer is None and cb.reason.startswith("never compute-bound: hbm grows")


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-8b", "mixtral-8x7b", "gpt2-xl"])
def test_decode_intensity_tends_to_the_attention_ratio(name: str) -> None:
    # as T grows, each layer does 4 N H T FLOPs per token against 2 K H T x 2 bytes of
    # cache: N / K; with the scores materialised, also 2 N T x 2 bytes of scores written and
    # read: N H / (K H + N)
    cfg = model(name)
    intensity, limit = decode_intensity(cfg)
    assert {s.name for s in intensity.free_symbols} == {"B", "T"}
    N, K, H = cfg.heads, cfg.kv_heads, cfg.head_dim
    assert limit == sp.Rational(N, K)
    assert decode_intensity(cfg, kernel=Kernel("materialised"))[1] == sp.Rational(N * H, K * H + N)


def test_max_batch_and_context_are_the_last_integers_that_fit() -> None:
    cfg, a100 = model("llama-2-7b"), chip("a100-80gb")
    cap = a100.capacity("hbm")
    fit = max_batch(cfg, a100, context=4096)

    def total(b: int, t: int) -> sp.Expr:
        return inference_memory(cfg, batch=b, context=t).total
    assert total(fit.integer, 4096) <= cap < total(fit.integer + 1, 4096)
    longest = max_context(cfg, a100, batch=8)
    assert total(8, longest.integer) <= cap < total(8, longest.integer + 1)
    assert str(fit.relation).startswith("B <= ")


def test_min_chips_is_the_first_count_that_holds_weights_and_kv() -> None:
    cfg, a100 = model("llama-3-70b"), chip("a100-80gb")
    fit = min_chips(cfg, a100, batch=16, context=8192)
    need = inference_memory(cfg, batch=16, context=8192).total
    cap = a100.capacity("hbm")
    assert (fit.integer - 1) * cap < need <= fit.integer * cap


def test_weights_that_do_not_fit_are_a_derivation_error() -> None:
    with pytest.raises(DerivationError, match="weights alone"):
        max_batch(model("llama-2-70b"), chip("a100-80gb"), context=4096)


def test_latent_attention_keeps_its_activations_through_hbm() -> None:
    with pytest.raises(InputError, match="activations kept on chip are not modelled for "
                                         "latent attention"):
        layer_ops(model("deepseek-v2-lite"), "decode", batch=1, context=8,
                  activations="on_chip")


def test_bad_step_inputs_are_input_errors() -> None:
    with pytest.raises(InputError, match="phase must be one of decode, prefill"):
        layer_ops(model("gpt2"), "train")
    with pytest.raises(InputError, match="batch: must be a positive whole number"):
        layer_ops(model("gpt2"), batch=0)
    with pytest.raises(InputError, match="unknown dtype 'fp12'"):
        layer_ops(model("gpt2"), dtype="fp12")


# ---------------------------------------------------------------- tensor parallel on a mesh


@pytest.mark.parametrize("n", [2, 8])
def test_tensor_parallel_divides_all_but_the_replicated_ops(n: int) -> None:
    from symroof.models.tensor_parallel import shard
    cfg = model("llama-2-70b")
    whole = layer_ops(cfg, "decode", batch=4, context=512)
    part = layer_ops(shard(cfg, n), "decode", batch=4, context=512)
    norms = sum(b.count * o.flops for b, o in whole.rows() if "norm" in o.name)
    assert n * part.total().flops - whole.total().flops == (n - 1) * norms


def test_kv_heads_are_kept_on_several_chips_past_their_count() -> None:
    from symroof.models.tensor_parallel import shard
    cfg = model("llama-3-8b")  # 8 KV heads
    assert (shard(cfg, 4).kv_heads, shard(cfg, 16).kv_heads) == (2, 1)
    with pytest.raises(InputError, match="gpt2-xl: tp=2 does not divide its 25 heads"):
        shard(model("gpt2-xl"), 2)
