"""Chunked prefill: the chunks' steps are the one device step at a prefix already cached;
laws: one chunk is the plain prefill, the chunks' FLOPs sum to the prefill's (the default
dense count and the causal count alike),
each chunk reads the KV cache of the chunks before it; on a pipeline the chunks flow through
the stages (the makespan of their stage periods, bounded by the slowest stage's work and by
their steps summed)."""

from __future__ import annotations

import itertools

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.models import model, params
from symroof.models.layers import Kernel
from symroof.parallel.mesh import mesh
from symroof.plans.chunked import chunk_sizes, chunked_prefill, flow
from symroof.plans.device_step import device_step
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve
from tests.conftest import examples, run_cli

DENSE = ["gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2.5-7b"]
KERNELS = [Kernel(a, c, h) for a in ("flash", "materialised") for c in (False, True)
           for h in ("hbm", "on_chip")]
ONE = mesh("X=1", "h100-sxm")


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 16), context=st.integers(1, 8192),
       kernel=st.sampled_from(KERNELS), tp=st.sampled_from([1, 4]))
def test_one_chunk_is_the_plain_prefill(name: str, batch: int, context: int, kernel: Kernel,
                                        tp: int) -> None:
    if name == "gpt2":
        tp = 1  # its 50257 words do not split
    cfg, m = model(name), mesh(f"X={tp}", "h100-sxm")
    axes = {"tp": ("X",)} if tp > 1 else {}
    plain = device_step(cfg, "prefill", m, axes, batch=batch, context=context,
                        options=StepOptions(kernel=kernel))
    for chunk in (context, context + 1):
        c = chunked_prefill(cfg, m, axes, batch=batch, context=context, chunk=chunk,
                            options=StepOptions(kernel=kernel))
        assert c.sizes == (context,)
        assert (c.time, c.time_upper, c.flops, c.bytes) == (
            plain.latency, plain.t_upper, plain.flops, plain.bytes)


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 16), context=st.integers(1, 4096),
       chunk=st.integers(1, 4096), attention=st.sampled_from(["flash", "materialised"]))
def test_causal_chunks_sum_to_the_causal_prefill(name: str, batch: int, context: int,
                                                 chunk: int, attention: str) -> None:
    # query position q attends to q + 1 positions whichever chunk it falls in
    if -(-context // chunk) > 64:
        chunk = -(-context // 64)
    cfg, kernel = model(name), Kernel(attention, True)
    plain = device_step(cfg, "prefill", ONE, {}, batch=batch, context=context,
                        options=StepOptions(kernel=kernel))
    c = chunked_prefill(cfg, ONE, {}, batch=batch, context=context, chunk=chunk,
                        options=StepOptions(kernel=kernel))
    assert sum(c.sizes) == context
    assert c.flops == plain.flops


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 16), context=st.integers(1, 4096),
       chunk=st.integers(1, 4096), tp=st.sampled_from([1, 4]))
def test_chunks_sum_to_the_prefill_under_the_defaults(name: str, batch: int, context: int,
                                                      chunk: int, tp: int) -> None:
    # the default (dense) count scores each chunk's queries against the prompt's every
    # position, as the unchunked prefill does: the chunks' FLOPs are the prefill's
    if -(-context // chunk) > 64:
        chunk = -(-context // 64)
    if name == "gpt2":
        tp = 1  # its 50257 words do not split
    cfg, m = model(name), mesh(f"X={tp}", "h100-sxm")
    axes = {"tp": ("X",)} if tp > 1 else {}
    plain = device_step(cfg, "prefill", m, axes, batch=batch, context=context)
    c = chunked_prefill(cfg, m, axes, batch=batch, context=context, chunk=chunk)
    assert c.flops == plain.flops


def test_dense_chunks_score_the_whole_prompt() -> None:
    # T = 4 C: chunk i scores its C queries against T positions, not its (i + 1) C keys;
    # 4 N H FLOPs per pair per layer (scores and values, 2 each per multiply-add)
    cfg, C = model("llama-2-7b"), 512
    first = device_step(cfg, "prefill", ONE, {}, batch=1, context=C)
    c = chunked_prefill(cfg, ONE, {}, batch=1, context=4 * C, chunk=C)
    per_pair = 4 * cfg.heads * cfg.head_dim * cfg.layers
    assert c.steps[0].flops - first.flops == per_pair * C * (4 * C - C)


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 16), tokens=st.integers(1, 2048),
       cached=st.integers(1, 1 << 15))
def test_a_chunk_reads_the_cache_of_the_chunks_before_it(name: str, batch: int, tokens: int,
                                                         cached: int) -> None:
    # activations on chip: HBM moves the weights, the new K and V, and the cached K and V
    cfg, kernel = model(name), Kernel("flash", False, "on_chip")
    first = device_step(cfg, "prefill", ONE, {}, batch=batch, context=tokens,
                        options=StepOptions(kernel=kernel))
    later = device_step(cfg, "prefill", ONE, {}, batch=batch, context=tokens, prior=cached,
                        options=StepOptions(kernel=kernel))
    entry = 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * 2  # one position, bf16
    assert later.bytes - first.bytes == batch * cached * entry


def test_the_chunks_of_a_prompt() -> None:
    assert chunk_sizes(4096, 1000) == ((1000, 1000, 1000, 1000, 96), (0, 1000, 2000, 3000,
                                                                       4000))
    with pytest.raises(InputError, match="make 4097 chunks; at most 1024"):
        chunk_sizes(4097, 1)


def test_serving_with_chunks_times_the_first_token_by_their_sum() -> None:
    cfg, m = model("llama-2-7b"), mesh("X=8", "h100-sxm")
    s = serve(cfg, m, batch=8, context=4096, chunk=512,
              options=StepOptions(kernel=Kernel(causal=True)))
    assert s.chunked is not None and len(s.chunked.steps) == 8
    assert s.requests is not None
    assert s.requests["time_to_first_token"] == sum(x.latency for x in s.chunked.steps)
    assert s.requests["request_latency"] == s.prefill_time + 256 * s.decode.latency
    # later chunks read more of the cache and score more pairs: each step no shorter
    times = [x.latency for x in s.chunked.steps]
    assert all(a <= b for a, b in itertools.pairwise(times))


def test_chunks_are_for_serving() -> None:
    r = run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "zero2=X",
                "--chip", "h100-sxm", "--chunk", "512")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("symroof: error: --chunk: chunked prefill is a serving "
                                "choice: use it with --serve")


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(DENSE), batch=st.integers(1, 16), tokens=st.integers(1, 2048),
       cached=st.integers(0, 8192), riders=st.integers(1, 256), at=st.integers(1, 1 << 15),
       kernel=st.sampled_from(KERNELS))
def test_a_hybrid_step_does_both_steps_work_reading_the_weights_once(
        name: str, batch: int, tokens: int, cached: int, riders: int, at: int,
        kernel: Kernel) -> None:
    # FLOPs add up (projections are linear in the tokens, each attention its own); with
    # activations on chip the HBM bytes add up less one read of every weight matrix (the
    # input embedding and learned positions: only the rows looked up, as in each step)
    cfg = model(name)
    chunk = device_step(cfg, "prefill", ONE, {}, batch=batch, context=tokens, prior=cached,
                        options=StepOptions(kernel=kernel))
    decode = device_step(cfg, "decode", ONE, {}, batch=riders, context=at,
                         options=StepOptions(kernel=kernel))
    hybrid = device_step(cfg, "prefill", ONE, {}, batch=batch, context=tokens, prior=cached,
                         decoding=(riders, at), options=StepOptions(kernel=kernel))
    assert hybrid.flops == chunk.flops + decode.flops
    if kernel.activations == "on_chip":
        p, D, V = params(cfg), cfg.d_model, cfg.vocab
        positions = p.embedding - (1 if cfg.tied_embeddings else 2) * V * D
        read_once = (p.total - positions - (0 if cfg.tied_embeddings else V * D)) * 2
        assert chunk.bytes + decode.bytes - hybrid.bytes == read_once


def test_piggybacking_needs_chunks() -> None:
    r = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                "--piggyback")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("symroof: error: --piggyback: decode tokens ride along with "
                                "prefill chunks: give --chunk")


def test_serving_piggybacks_the_decode_batch_on_each_chunk() -> None:
    cfg, m = model("llama-2-7b"), mesh("X=8", "h100-sxm")
    plain = serve(cfg, m, batch=8, context=4096, chunk=512)
    riding = serve(cfg, m, batch=8, context=4096, chunk=512, piggyback=True)
    c = riding.chunked
    assert c is not None and plain.chunked is not None and c.riders == 8
    assert c.apart == plain.chunked.time + 8 * plain.decode.latency
    assert plain.chunked.time < c.time < c.apart
    assert riding.requests is not None
    assert riding.requests["time_to_first_token"] == c.time


def test_the_json_lists_every_chunk(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from symroof.cli.main import main
    assert main(["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                 "--batch", "8", "--context", "1000", "--chunk", "300", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["chunked_prefill"]
    assert [(c["tokens"], c["cached"]) for c in out["chunks"]] == [
        (300, 0), (300, 300), (300, 600), (100, 900)]
    assert sp.Rational(out["time"]) == sum(sp.Rational(c["latency"]) for c in out["chunks"])
    assert out["decode_tokens_per_step"] == 0 and out["time_apart"] is None


def _longest_path(periods: list[list[sp.Expr]]) -> sp.Expr:
    """A flow shop's makespan as its longest path: the most any monotone staircase from
    (first job, first stage) to (last job, last stage), stepping to the next job or the
    next stage, sums (each path a chain of waits), by enumerating the staircases."""
    jobs, stages = len(periods), len(periods[0])
    best = sp.S.Zero
    for downs in itertools.combinations(range(jobs + stages - 2), jobs - 1):
        k = s = 0
        total = periods[0][0]
        for step in range(jobs + stages - 2):
            if step in downs:
                k += 1
            else:
                s += 1
            total += periods[k][s]
        best = max(best, total)
    return best


@settings(max_examples=examples(30), deadline=None)
@given(periods=st.lists(st.lists(st.fractions(0, 10), min_size=3, max_size=3), min_size=1,
                        max_size=5))
def test_a_flow_is_its_longest_staircase(periods: list) -> None:
    # the recurrence against the longest path through the (job, stage) grid: two readings
    # of the permutation flow shop's makespan
    rows = [[sp.Rational(x.numerator, x.denominator) for x in row] for row in periods]
    assert flow(rows)[-1] == _longest_path(rows)
    assert list(flow(rows)) == [_longest_path(rows[:k + 1]) for k in range(len(rows))]

    # the same in SymPy's numbers where a period is not a fraction (a Float, a symbol)
    floats = [[sp.Float(x.numerator) / 4 for x in row] for row in periods]
    assert flow(floats)[-1] == _longest_path(floats)
    x = sp.Symbol("x", positive=True)
    assert flow([[x, 1], [1, x]]) == (x + 1, 2 * x + 1)  # the second waits for x, then x


PIPELINED = ["gpt2", "llama-2-7b", "llama-3-8b", "qwen2.5-7b"]


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(PIPELINED), batch=st.integers(1, 8), context=st.integers(1, 4096),
       pieces=st.integers(1, 5), pp=st.sampled_from([2, 4]), tp=st.sampled_from([1, 2]),
       overlap=st.sampled_from(["op", "phase", "none"]))
def test_a_pipelined_chunked_prefill_flows_through_the_stages(
        name: str, batch: int, context: int, pieces: int, pp: int, tp: int,
        overlap: str) -> None:
    if name == "gpt2":
        tp = 1  # its 50257 words do not split
    cfg, m = model(name), mesh(f"X={pp},Y={tp}", "h100-sxm")
    axes = {"pp": ("X",), **({"tp": ("Y",)} if tp > 1 else {})}
    how = StepOptions(overlap=overlap)
    chunk = -(-context // pieces)
    c = chunked_prefill(cfg, m, axes, batch=batch, context=context, chunk=chunk, options=how)
    assert c.flows
    # each chunk's stage periods are its own step's (the chunk's device step at its cached
    # prefix), in the stages' order
    periods = []
    for n, p, step in zip(c.sizes, c.priors, c.steps, strict=True):
        own = device_step(cfg, "prefill", m, axes, batch=batch, context=n, prior=p,
                          options=how, prompt=context)
        assert step == own
        periods.append([st.period for st in own.stages for _ in range(st.count)])
        assert len(periods[-1]) == pp and sum(periods[-1]) == own.latency
    assert c.time == _longest_path(periods) == c.left[-1]
    # no faster than the busiest stage's work or any chunk's path; no slower than the
    # chunks one after another (the old figure); T_upper those one after another
    assert c.time >= max(sum(col) for col in zip(*periods, strict=True))
    assert c.time >= max(x.latency for x in c.steps)
    assert c.time <= c.serial == sum(x.latency for x in c.steps)
    assert c.time_upper == sum(x.t_upper for x in c.steps)
    # one chunk: the unchunked pipelined prefill
    whole = chunked_prefill(cfg, m, axes, batch=batch, context=context, chunk=context,
                            options=how)
    assert whole.time == device_step(cfg, "prefill", m, axes, batch=batch, context=context,
                                     options=how).latency


@settings(max_examples=examples(8), deadline=None)
@given(name=st.sampled_from(PIPELINED), batch=st.integers(1, 8), context=st.integers(1, 4096),
       pieces=st.integers(1, 5), tp=st.sampled_from([1, 4]))
def test_without_a_pipeline_the_chunks_run_one_after_another(
        name: str, batch: int, context: int, pieces: int, tp: int) -> None:
    if name == "gpt2":
        tp = 1
    cfg, m = model(name), mesh(f"X={tp}", "h100-sxm")
    axes = {"tp": ("X",)} if tp > 1 else {}
    c = chunked_prefill(cfg, m, axes, batch=batch, context=context,
                        chunk=-(-context // pieces))
    assert not c.flows
    assert c.time == c.serial == sum(x.latency for x in c.steps)
    assert list(c.left) == [sum(x.latency for x in c.steps[:k + 1])
                            for k in range(len(c.steps))]


def test_a_pipelined_serving_plan_times_its_first_token_by_the_flow() -> None:
    # llama-2-7b on 4 stages of tp=2, 16 x 2048 tokens in 4 chunks of 512: the first token
    # when the last chunk leaves the last stage; the request rate and the balance, which
    # count the chips' work, as the chunks one after another
    import json

    from symroof.plans.strategy import parse_strategy
    cfg, m = model("llama-2-7b"), mesh("X=4,Y=2", "h100-sxm")
    pp = parse_strategy("pp=X,tp=Y")
    s = serve(cfg, m, pp, batch=16, context=2048, chunk=512)
    c = s.chunked
    assert c is not None and c.flows and s.requests is not None
    assert s.requests["time_to_first_token"] == s.prefill_time == c.time < c.serial
    assert s.requests["request_latency"] == c.time + 256 * s.decode.latency
    assert s.balance == c.serial / (256 * s.decode.latency)
    stages = [st.name for st in s.decode.stages]
    busy = [sum(next(x.period for x in step.stages if x.name == name) for step in c.steps)
            + 256 * next(x.period for x in s.decode.stages if x.name == name)
            for name in stages]
    assert s.requests["requests_per_s"] == 16 / max(busy)
    assert any("the chunks flow through the 4 stages as microbatches do" in a
               for a in s.assumptions)
    args = ["plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2", "--strategy", "pp=X,tp=Y",
            "--chip", "h100-sxm", "--batch", "16", "--context", "2048", "--chunk", "512"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "chunk  tokens  cached  step      leaves    bound" in r.stdout
    assert "(the chunks flowing through the 4 stages; their steps summed" in r.stdout
    out = json.loads(run_cli(*args, "--json").stdout)["chunked_prefill"]
    assert out["flow"] == "pipelined"
    assert sp.Rational(out["time"]) == c.time == sp.Rational(out["chunks"][-1]["left"])
    assert sp.Rational(out["time_serial"]) == c.serial
    assert [sp.Rational(x["left"]) for x in out["chunks"]] == list(c.left)


def test_piggybacked_chunks_on_a_pipeline_run_one_after_another() -> None:
    # each hybrid step carries the next decode token of the same sequences: it waits for
    # the token the step before sampled on the last stage
    from symroof.plans.strategy import parse_strategy
    cfg, m = model("llama-2-7b"), mesh("X=4,Y=2", "h100-sxm")
    pp = parse_strategy("pp=X,tp=Y")
    alone = serve(cfg, m, pp, batch=16, context=2048, chunk=512)
    riding = serve(cfg, m, pp, batch=16, context=2048, chunk=512, piggyback=True)
    c = riding.chunked
    assert c is not None and alone.chunked is not None and not c.flows
    assert c.time == c.serial == sum(x.latency for x in c.steps)
    assert c.apart == alone.chunked.time + 4 * alone.decode.latency
    assert any("so the chunks do not overlap across the stages" in a
               for a in riding.assumptions)


def test_the_json_of_chunks_without_a_pipeline_says_nothing_of_a_flow(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from symroof.cli.main import main
    assert main(["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                 "--batch", "8", "--context", "1000", "--chunk", "300", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["chunked_prefill"]
    assert not {"flow", "time_serial", "time_serial_value"} & set(out)
    assert all("left" not in x for x in out["chunks"])
