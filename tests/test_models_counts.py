"""Transformer counts: published parameter counts, the decode FLOPs sum, activation memory as
Korthikanti et al. 2022 print it, and the laws of the counts over generated configs."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.sizes import dtype_bytes
from symroof.models import (
    MLA,
    ModelConfig,
    MoE,
    activation_bytes,
    bundled,
    flops_per_token,
    inference_memory,
    kv_bytes_per_token,
    layer_ops,
    model,
    params,
    training_flops_per_token,
    training_memory,
)
from tests.conftest import examples

T = sp.Symbol("T", positive=True)


def rounded(value: sp.Expr, unit: float, digits: int) -> float:
    return round(float(value) / unit, digits)


# ---------------------------------------------------------------- published counts


def test_llama_2_7b_has_the_checkpoints_parameter_count() -> None:
    # 6,738,415,616: the parameter count of meta-llama/Llama-2-7b-hf (its safetensors index
    # totals 13,476,831,232 bytes in fp16, 2 bytes each)
    assert params(model("llama-2-7b")).total == 6_738_415_616


def test_mixtral_total_and_active_at_the_published_precision() -> None:
    # Jiang et al. 2024, "Mixtral of Experts": 46.7B total, 12.9B active parameters
    p = params(model("mixtral-8x7b"))
    assert rounded(p.total, 1e9, 1) == 46.7
    assert rounded(p.active, 1e9, 1) == 12.9


def test_gpt2_xl_released_checkpoint() -> None:
    # the released GPT-2 XL checkpoint: tied embeddings, biases, learned positions
    cfg = model("gpt2-xl")
    assert (cfg.tied_embeddings, cfg.qkv_bias, cfg.positions) == (True, True, "learned")
    assert params(cfg).total == 1_557_611_200


def test_qwen_model_cards() -> None:
    # Qwen2.5-7B card: 7.61B parameters (7.6156B truncated), 6.53B non-embedding;
    # Qwen1.5-MoE-A2.7B card: 14.3B total, 2.7B activated
    qwen = params(model("qwen2.5-7b"))
    assert math.floor(float(qwen.total) / 1e7) == 761
    assert rounded(qwen.non_embedding, 1e9, 2) == 6.53
    moe = params(model("qwen1.5-moe-a2.7b"))
    assert (rounded(moe.total, 1e9, 1), rounded(moe.active, 1e9, 1)) == (14.3, 2.7)


def test_deepseek_v2_lite_latent_attention() -> None:
    # DeepSeek-V2 paper (Liu et al. 2024), appendix B: DeepSeek-V2-Lite has 15.7B parameters,
    # 2.4B activated per token; section 2.1.2: MLA caches (d_c + d_h^R) l elements per token
    cfg = model("deepseek-v2-lite")
    p = params(cfg)
    assert rounded(p.total, 1e9, 1) == 15.7
    # the paper's 2.4B matches the activated count without the input embedding (a lookup),
    # truncated: 2.45B; with it, 2.66B
    assert math.floor((float(p.active) - 102400 * 2048) / 1e8) == 24
    assert kv_bytes_per_token(cfg) == (512 + 64) * 27 * 2
    assert training_flops_per_token(cfg, 4096) == 3 * flops_per_token(cfg, 4096)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 64), st.integers(1, 64),
       st.integers(0, 64), st.integers(1, 8), st.integers(1, 4096))
def test_latent_attention_counts_grow_with_every_rank(c: int, r: int, nope: int, v: int,
                                                      q: int, heads: int, t: int) -> None:
    def cfg(**change: int) -> ModelConfig:
        dims = {"c": c, "r": r, "nope": nope, "v": v, "q": q} | change
        return ModelConfig("mla", layers=2, d_model=64, d_ff=128, heads=heads,
                           kv_heads=heads, head_dim=dims["nope"] + dims["r"], vocab=100,
                           mla=MLA(dims["c"], dims["r"], dims["nope"], dims["v"], dims["q"]))
    base = cfg()
    assert kv_bytes_per_token(base) == 2 * (c + r) * 2
    for change in ({"c": c + 1}, {"r": r + 1}, {"nope": nope + 1}, {"v": v + 1}):
        grown_cfg = cfg(**change)
        assert params(grown_cfg).total > params(base).total
        assert flops_per_token(grown_cfg, t) > flops_per_token(base, t)
        assert kv_bytes_per_token(grown_cfg) >= kv_bytes_per_token(base)


def test_llama_3_8b() -> None:
    # Meta's Llama 3 model card: 8.03B parameters (8B)
    assert rounded(params(model("llama-3-8b")).total, 1e9, 2) == 8.03


def test_every_bundled_config_names_its_source_and_resolves_by_hf_id() -> None:
    for name, cfg in bundled().items():
        assert cfg.source["repo"] and cfg.source["checked_against"], name
        assert model(cfg.source["repo"]) is cfg
        assert name == name.lower() and " " not in name and "_" not in name


# ---------------------------------------------------------------- decode FLOPs


def test_llama_2_7b_decode_flops_at_batch_1_over_1024_positions() -> None:
    # the sum: 2 x 6,607,343,616 (every weight, output head included, input
    # embedding excluded) + 32 layers x 4 x 4096 x 1024 (scores and values); GenZ: 13.751e9
    cfg = model("llama-2-7b")
    expected = 2 * 6_607_343_616 + 32 * 4 * 4096 * 1024
    assert expected == 13_751_558_144
    assert flops_per_token(cfg, context=1024) == expected
    step = layer_ops(cfg, "decode", batch=1, context=1024)
    assert step.total().flops == expected
    matmuls = sum(b.count * o.flops for b, o in step.rows() if o.compute == "mxu")
    norms = 2 * (2 * 32 + 1) * 4096
    assert matmuls == expected - norms


# ---------------------------------------------------------------- activation memory


def test_gpt_layer_activations_match_korthikanti() -> None:
    # Korthikanti et al. 2022, eq. (1): s b h (34 + 5 a s / h) bytes per layer without
    # recomputation; 34 s b h with selective recomputation (section 5); 2 s b h full.
    # Here per token (s b = 1), h = D, a = N, s = T, for a GPT layer: F = 4 D, H = D / N.
    cfg = model("gpt2")
    D, N, F, H, K = (sp.Symbol(n, positive=True) for n in "DNFHK")
    gpt = {F: 4 * D, H: D / N, K: N}
    got = {p: activation_bytes(cfg, p, symbolic=True).per_layer.subs(gpt)
           for p in ("none", "selective", "full")}
    assert sp.expand(got["none"] - D * (34 + 5 * N * T / D)) == 0
    assert sp.expand(got["selective"] - 34 * D) == 0
    assert got["full"] == 2 * D


def test_activations_without_dropout_drop_the_masks() -> None:
    cfg = model("gpt2")
    with_masks = activation_bytes(cfg, context=1024, symbolic=True).per_layer
    without = activation_bytes(cfg, context=1024, dropout=False, symbolic=True).per_layer
    D, N = sp.Symbol("D", positive=True), sp.Symbol("N", positive=True)
    # two D-wide masks (attention and MLP outputs), one N T-wide mask and its dropout output
    assert sp.expand(with_masks - without - (2 * D + 3 * N * 1024)) == 0


# ---------------------------------------------------------------- laws over configs


@st.composite
def configs(draw: st.DrawFn) -> ModelConfig:
    kv = draw(st.integers(1, 8))
    layers = draw(st.integers(1, 12))
    moe = None
    if draw(st.booleans()):
        experts = draw(st.integers(1, 16))
        shared = draw(st.integers(0, 2))
        moe = MoE(experts, draw(st.integers(1, experts)), draw(st.integers(1, 512)),
                  shared, draw(st.integers(1, 512)) if shared else 0,
                  bool(shared) and draw(st.booleans()),
                  draw(st.integers(0, layers)))
    learned = draw(st.booleans())
    return ModelConfig(
        "generated", layers=layers, d_model=draw(st.integers(1, 512)),
        d_ff=draw(st.integers(1, 2048)), heads=kv * draw(st.integers(1, 8)), kv_heads=kv,
        head_dim=draw(st.integers(1, 128)), vocab=draw(st.integers(1, 5000)),
        mlp=draw(st.sampled_from(["gated", "plain"])), tied_embeddings=draw(st.booleans()),
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])), qkv_bias=draw(st.booleans()),
        out_bias=draw(st.booleans()), mlp_bias=draw(st.booleans()),
        positions="learned" if learned else "rope",
        max_positions=draw(st.integers(1, 2048)) if learned else 0, moe=moe,
        dropout=draw(st.booleans()))


LAWS = settings(max_examples=examples(30), deadline=None)


@LAWS
@given(configs(), st.integers(1, 4096))
def test_training_is_three_forwards_without_recomputation(cfg: ModelConfig, t: int) -> None:
    assert training_flops_per_token(cfg, t) == 3 * flops_per_token(cfg, t)
    assert training_flops_per_token(cfg, t, recompute="full") == 4 * flops_per_token(cfg, t)
    symbolic = training_flops_per_token(cfg, symbolic=True) - 3 * flops_per_token(
        cfg, symbolic=True)
    assert sp.expand(symbolic) == 0


@LAWS
@given(configs(), st.sampled_from(["bf16", "fp32", "int8", "int4"]))
def test_kv_bytes_per_token(cfg: ModelConfig, dtype: str) -> None:
    assert kv_bytes_per_token(cfg, dtype) == \
        2 * cfg.layers * cfg.kv_heads * cfg.head_dim * dtype_bytes(dtype)


@LAWS
@given(configs())
def test_active_parameters_at_most_total(cfg: ModelConfig) -> None:
    p = params(cfg)
    assert 0 < p.active <= p.total
    assert (p.active == p.total) == (cfg.moe is None or cfg.moe.top_k == cfg.moe.experts
                                     or cfg.moe.dense_layers == cfg.layers)


@LAWS
@given(configs())
def test_mixed_precision_adam_is_16_bytes_per_parameter(cfg: ModelConfig) -> None:
    mem = training_memory(cfg)
    assert mem.bytes_per_param == 16
    assert mem.total == 16 * params(cfg).total
    assert (mem.parts["weights"], mem.parts["gradients"]) == (2 * params(cfg).total,) * 2


GROWABLE = ("layers", "d_model", "d_ff", "head_dim", "vocab")


def grown(cfg: ModelConfig, name: str) -> ModelConfig:
    if name == "kv_heads":  # more KV heads, the same group size
        return replace(cfg, kv_heads=cfg.kv_heads + 1,
                       heads=cfg.heads // cfg.kv_heads * (cfg.kv_heads + 1))
    if name in ("experts", "top_k", "moe_d_ff"):
        assert cfg.moe is not None
        field = {"moe_d_ff": "d_ff"}.get(name, name)
        moe = cfg.moe
        if name == "top_k" and moe.top_k == moe.experts:
            moe = replace(moe, experts=moe.experts + 1)
        return replace(cfg, moe=replace(moe, **{field: getattr(moe, field) + 1}))
    if name == "layers" and cfg.moe is not None:
        return replace(cfg, layers=cfg.layers + 1)
    return replace(cfg, **{name: getattr(cfg, name) + 1})


def measures(cfg: ModelConfig) -> list[sp.Expr]:
    p = params(cfg)
    return [p.total, p.active, flops_per_token(cfg, 512), training_flops_per_token(cfg, 512),
            kv_bytes_per_token(cfg), training_memory(cfg, batch=2, context=64).total,
            inference_memory(cfg, batch=2, context=64).total,
            activation_bytes(cfg, context=64).total]


@LAWS
@given(configs(), st.sampled_from([*GROWABLE, "kv_heads", "experts", "top_k", "moe_d_ff"]))
def test_costs_are_monotone_in_every_size(cfg: ModelConfig, name: str) -> None:
    if name in ("experts", "top_k", "moe_d_ff") and cfg.moe is None:
        name = "d_ff"
    before, after = measures(cfg), measures(grown(cfg, name))
    assert all(a >= b for a, b in zip(after, before, strict=True)), (name, before, after)


@LAWS
@given(configs(), st.integers(1, 64), st.integers(1, 2048), st.sampled_from(["decode",
                                                                              "prefill"]))
def test_a_steps_flops_are_its_tokens_times_flops_per_token(cfg: ModelConfig, b: int, t: int,
                                                             phase: str) -> None:
    step = layer_ops(cfg, phase, batch=b, context=t)
    tokens = b if phase == "decode" else b * t
    assert step.total().flops == tokens * flops_per_token(cfg, t)


@pytest.mark.parametrize("name", sorted(bundled()))
def test_symbolic_counts_evaluate_to_the_numeric_ones(name: str) -> None:
    cfg = model(name)
    values = cfg.values()
    assert params(cfg, symbolic=True).total.subs(values) == params(cfg).total
    assert params(cfg, symbolic=True).active.subs(values) == params(cfg).active
    assert flops_per_token(cfg, symbolic=True).subs(values).subs(T, 777) == \
        flops_per_token(cfg, 777)


def test_gpt2_sizes_at_the_model_cards_precision() -> None:
    # Hugging Face model cards of openai-community/gpt2, -medium, -large: 124M, 355M, 774M
    got = [round(float(params(model(n)).total) / 1e6) for n in ("gpt2", "gpt2-medium",
                                                                 "gpt2-large")]
    assert got == [124, 355, 774]
