"""Latent attention's layer ops (DeepSeek-V2 and V3): exact against the config's counts.
Laws: the decode step reads the latent cache, B T kv_bytes_per_token; prefill's FLOPs are
the counts' FLOPs per token; decode's differ only by the absorbed attention core."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.models import model
from symroof.models.counts import (
    attention_params,
    flops_per_token,
    kv_bytes_per_token,
    op_weights,
    params,
)
from symroof.models.layers import layer_ops
from tests.conftest import examples, run_cli

MLA = ["deepseek-v2-lite", "deepseek-v3"]


def test_deepseek_v3_matches_its_card() -> None:
    # model card: 671B total parameters, 37B activated per token (the 14B multi-token
    # prediction module of the 685B checkpoint left out)
    p = params(model("deepseek-v3"))
    assert round(p.total / 10**9) == 671 and round(p.active / 10**9) == 38
    assert 37 * 10**9 < p.active < 38 * 10**9
    assert kv_bytes_per_token(model("deepseek-v3")) == 61 * (512 + 64) * 2


@settings(max_examples=examples(10), deadline=None)
@given(name=st.sampled_from(MLA), batch=st.integers(1, 256), context=st.integers(1, 1 << 17),
       kv=st.sampled_from(["bf16", "fp8", "fp32"]))
def test_a_decode_step_reads_the_latent_cache(name: str, batch: int, context: int,
                                              kv: str) -> None:
    # per layer the attention kernel reads the queries (N heads of C + R, in bf16) and the
    # cache: B T (C + R) elements; over the layers B T kv_bytes_per_token
    cfg = model(name)
    m = cfg.mla
    assert m is not None
    ops = layer_ops(cfg, "decode", batch=batch, context=context, kv_dtype=kv)
    cache = sp.S.Zero
    for block in ops.blocks:
        for o in block.ops:
            if o.name == "attention":
                query = batch * cfg.heads * (m.kv_rank + m.rope_dim) * 2
                cache += block.count * (o.reads["hbm"] - query)
    assert cache == batch * context * kv_bytes_per_token(cfg, kv)


def test_the_ops_weights_are_the_attention_parameters_both_ways() -> None:
    for name in MLA:
        cfg = model(name)
        s = cfg.sizes(False)
        w = op_weights(cfg, s)
        query = w["q down"] + w["q norm"] + w["q up"] if cfg.mla and cfg.mla.q_rank \
            else w["q"]
        rest = w["kv down"] + w["kv norm"] + w["output"]
        assert query + rest + w["kv up"] == attention_params(cfg, s)  # prefill
        assert query + rest + w["q absorb"] + w["v absorb"] == attention_params(cfg, s)


@settings(max_examples=examples(6), deadline=None)
@given(name=st.sampled_from(MLA), batch=st.integers(1, 64), context=st.integers(1, 8192))
def test_prefill_and_decode_flops_against_the_counts(name: str, batch: int,
                                                     context: int) -> None:
    cfg = model(name)
    m = cfg.mla
    assert m is not None
    prefill = layer_ops(cfg, "prefill", batch=batch, context=context).total().flops
    assert prefill == batch * context * flops_per_token(cfg, context)
    # decode absorbs kv up into the query and the output: the same weights' FLOPs, and the
    # attention core over the latents, 2 N T (C + R) for the scores and 2 N T C for the
    # values, in place of the decompressed 2 N (H + H_v) T
    L, N, T = cfg.layers, cfg.heads, context
    core = 2 * L * N * T * (2 * m.kv_rank + m.rope_dim)
    decompressed = 2 * L * N * (cfg.head_dim + m.v_dim) * T
    decode = layer_ops(cfg, "decode", batch=batch, context=context).total().flops
    assert decode == batch * (flops_per_token(cfg, context) - decompressed + core)


def test_model_and_plan_serve_latent_attention() -> None:
    r = run_cli("plan", "deepseek-v3", "--serve", "--mesh", "X=8", "--chip", "h200",
                "--batch", "16", "--context", "4096", "--dtype", "fp8")
    assert r.returncode == 0, r.stderr
    assert "capacity 141 GB per chip: fits" in r.stdout
    d = run_cli("model", "deepseek-v3", "--decode", "--context", "4096", "--chip", "h200")
    assert d.returncode == 0, d.stderr
