"""Serving's kernels and collectives: flash attention by default, the materialised scores and
a causal count as choices, activations kept on chip as a choice, the vocabulary-parallel
embedding and logits collectives, and what a request sees."""

from __future__ import annotations

import json

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.models import model, params
from symroof.models.layers import Kernel, layer_ops
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve
from tests.conftest import examples, run_cli

# dense models without latent attention (the layer ops of MLA are not modelled)
DENSE = ["gpt2", "gpt2-xl", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2.5-7b",
         "llama-3-70b"]


@settings(max_examples=examples(12), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 512), context=st.integers(1, 1 << 16))
def test_decode_with_activations_on_chip_moves_the_weights_and_the_kv_cache(
        name: str, batch: int, context: int) -> None:
    # HBM traffic = every weight matrix read once (the input embedding and learned positions:
    # only the B rows looked up), the KV cache read, and the new token's K and V written
    cfg = model(name)
    p = params(cfg)
    D, V, L = cfg.d_model, cfg.vocab, cfg.layers
    tied = cfg.tied_embeddings  # then the head reads the one V x D matrix in full
    positions = p.embedding - (1 if tied else 2) * V * D  # a learned position table, P D
    not_read = positions + (0 if tied else V * D)  # tables only looked up
    rows = 2 if cfg.positions == "learned" else 1
    read_once = (p.total - not_read) * 2 + batch * D * 2 * rows
    kv_entry = L * 2 * cfg.kv_heads * cfg.head_dim * 2  # one token, every layer, bf16
    got = layer_ops(cfg, "decode", batch=batch, context=context,
                    activations="on_chip").total().bytes()
    assert got == read_once + batch * context * kv_entry + batch * kv_entry


@settings(max_examples=examples(12), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 64), context=st.integers(1, 4096),
       phase=st.sampled_from(["decode", "prefill"]))
def test_materialised_scores_cost_their_write_and_read_back(name: str, batch: int,
                                                           context: int, phase: str) -> None:
    # the scores are B N T (decode) or B N T^2 (prefill) elements of bf16 per layer, written
    # by one kernel and read by the next; the FLOPs do not change
    cfg = model(name)
    flash, unfused = (layer_ops(cfg, phase, batch=batch, context=context, attention=k).total()
                      for k in ("flash", "materialised"))
    positions = context if phase == "decode" else context * context
    assert unfused.bytes() - flash.bytes() == cfg.layers * 2 * batch * cfg.heads * positions * 2
    assert unfused.flops == flash.flops


@settings(max_examples=examples(12), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 64), context=st.integers(1, 8192))
def test_a_causal_prefill_skips_the_masked_pairs(name: str, batch: int, context: int) -> None:
    # each layer's scores and values: 2 x 2 B N H FLOPs per (query, key) pair; causal keeps
    # T (T + 1) / 2 of the T^2 pairs
    cfg = model(name)
    dense, causal = (layer_ops(cfg, "prefill", batch=batch, context=context, causal=c).total()
                     for c in (False, True))
    masked = context * context - context * (context + 1) // 2
    assert dense.flops - causal.flops == cfg.layers * 4 * batch * cfg.heads * cfg.head_dim * \
        masked
    assert dense.bytes() == causal.bytes()


def test_llama_3_70b_decode_per_h100_is_the_weights_and_one_kv_read() -> None:
    # TP=8, batch 64, context 4096: weights less the input embedding, 2 (70553706496 -
    # 128256 x 8192) bytes, plus one read of the cache, 64 x 4096 x 80 x 2 x 8 x 128 x 2
    # bytes, over 8 chips (LLaMA-3-70B's config: 80 layers, 8 KV heads of 128)
    expected = sp.Rational(2 * (70553706496 - 128256 * 8192) + 64 * 4096 * 80 * 2 * 8 * 128 * 2,
                           8)
    assert abs(float(expected) - 224.91e9 / 8) < 1e-4 * float(expected)
    m = mesh("X=8", "h100-sxm")
    on_chip = serve(model("llama-3-70b"), m, batch=64, context=4096,
                    options=StepOptions(kernel=Kernel(activations="on_chip"))).decode.bytes
    through_hbm = serve(model("llama-3-70b"), m, batch=64, context=4096).decode.bytes
    assert abs(on_chip / expected - 1) < sp.Rational(2, 100)
    # the choice says what an on-chip memory would have to hold: the widest output, the
    # output head's logits, 64 x 128256/8 bf16 values per device (2052096 B)
    kept = serve(model("llama-3-70b"), m, batch=64, context=4096,
                 options=StepOptions(kernel=Kernel(activations="on_chip"))).assumptions
    assert "decode: activations kept on chip, the largest an op writes 2.052 MB per device " \
        "(an on-chip memory must hold it)" in kept
    # kernel by kernel, the activations between ops add what a per-op account must
    assert sp.Rational(1) < through_hbm / expected < sp.Rational(103, 100)


def test_the_serving_plan_lists_the_embedding_and_logits_collectives() -> None:
    done = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                   "--batch", "64", "--context", "2048")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    decode = lines[lines.index("decode collectives:") + 1:]
    rows = [line.split()[:3] for line in decode[1:5]]
    assert rows == [["embedding", "allreduce", "(tp)"], ["output", "allreduce", "(tp)"],
                    ["down", "allreduce", "(tp)"], ["output", "head", "allgather"]]
    data = json.loads(run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip",
                              "h100-sxm", "--batch", "64", "--context", "2048",
                              "--json").stdout)
    gather = [c for c in data["decode"]["collectives"] if c["collective"] == "allgather"]
    # the logits of 64 sampled positions over LLaMA-2's 32000 words, bf16, once per step
    assert [(c["after"], c["bytes"], c["per_step"]) for c in gather] == \
        [("output head", str(64 * 32000 * 2), "1")]


def test_what_a_request_sees_follows_from_the_two_steps() -> None:
    s = serve(model("llama-2-7b"), mesh("X=4,Y=2", "h100-sxm"), None, batch=32,
              context=1024, generate=200)
    r = s.requests
    assert r is not None
    assert r["time_to_first_token"] == s.prefill.latency
    assert r["request_latency"] == s.prefill.latency + 200 * s.decode.latency
    assert r["tokens_per_s_per_request"] * s.decode.latency == 1
    assert r["requests_per_s"] * r["request_latency"] == 32
    assert r["requests_per_s_per_chip"] * 8 == r["requests_per_s"]


def test_kernel_choices_are_serving_options_and_named_when_wrong() -> None:
    done = run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "tp=X",
                   "--chip", "h100-sxm", "--causal")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("symroof: error: --causal: ")
    with pytest.raises(InputError, match="^activations: unknown choice"):
        Kernel(activations="sram")
    done = run_cli("model", "llama-2-7b", "--decode", "--context", "1024", "--attention",
                   "materialised", "--json")
    assert done.returncode == 0, done.stderr
    names = [row["name"] for row in json.loads(done.stdout)["layers"]]
    assert names[2:4] == ["scores", "values"]


@pytest.mark.parametrize("name", ["llama-2-7b", "gpt2-xl", "qwen2.5-7b"])
def test_the_books_serving_step_is_the_device_step_with_activations_on_chip(name: str) -> None:
    # the book's form, (P bytes + B T KV) / HBM bandwidth, is the full step's HBM term with
    # the activations on chip, less what it names apart: the B embedding rows looked up
    # instead of whole tables, and the new token's K and V written
    from symroof import chip
    from symroof.models.chosen import book_decode_time
    from symroof.plans.device_step import device_step
    cfg, h100, batch, context = model(name), chip("h100-sxm"), 16, 1024
    step = device_step(cfg, "decode", None, {}, batch=batch, context=context, chip=h100,
                       options=StepOptions(kernel=Kernel(activations="on_chip")))
    book = book_decode_time(cfg, h100, batch, context) * h100.bandwidth("hbm")
    p, D = params(cfg), cfg.d_model
    tables = p.embedding - cfg.vocab * D  # looked up only: the output head reads its matrix
    rows = 2 if cfg.positions == "learned" else 1
    new_kv = batch * cfg.layers * 2 * cfg.kv_heads * cfg.head_dim * 2
    assert step.terms["hbm"] * h100.bandwidth("hbm") == \
        book - tables * 2 + batch * D * 2 * rows + new_kv


@settings(max_examples=examples(12), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 512), context=st.integers(1, 1 << 15),
       kv=st.sampled_from(["bf16", "fp8"]))
def test_the_per_head_kernel_reads_a_group_s_cache_once_per_query_head(
        name: str, batch: int, context: int, kv: str) -> None:
    # TensorRT-LLM's masked MHA (one block per query head): decode attention reads the KV
    # cache N/K times, flash once; FLOPs, every other op and the prefill are flash's
    cfg = model(name)
    per_head = layer_ops(cfg, "decode", batch=batch, context=context, kv_dtype=kv,
                         attention="per-head")
    flash = layer_ops(cfg, "decode", batch=batch, context=context, kv_dtype=kv)
    cache = 2 * batch * context * cfg.kv_heads * cfg.head_dim * (2 if kv == "bf16" else 1)
    group = sp.Rational(cfg.heads, cfg.kv_heads)
    for (_, a), (_, b) in zip(per_head.rows(), flash.rows(), strict=True):
        assert a.flops == b.flops and a.writes == b.writes
        extra = (group - 1) * cache if a.name == "attention" else 0
        assert a.bytes() - b.bytes() == extra, a.name
    assert [o for _, o in layer_ops(cfg, "prefill", batch=2, context=context,
                                    attention="per-head").rows()] == \
        [o for _, o in layer_ops(cfg, "prefill", batch=2, context=context).rows()]


def test_the_per_head_kernel_is_for_kv_heads_through_hbm() -> None:
    with pytest.raises(InputError, match="per-head kernel is modelled for KV heads"):
        layer_ops(model("deepseek-v2-lite"), "decode", batch=1, context=8,
                  attention="per-head")
    with pytest.raises(InputError, match="per-head kernel is modelled for KV heads"):
        layer_ops(model("llama-2-7b"), "decode", batch=1, context=8, attention="per-head",
                  activations="on_chip")
