"""One model of a step: the model and plan verbs give one answer, and the step is right
under sharding (replicated parts counted per rank, degrees that do not divide refused)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.core.sizes import dtype_bytes
from symroof.models import model, params
from symroof.models.config import ModelConfig
from symroof.models.counts import kv_bytes_per_token
from symroof.models.layers import Kernel, layer_ops
from symroof.parallel.mesh import mesh
from symroof.plans.device_step import device_step
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve, step_on
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import train
from tests.conftest import examples, run_cli

FIELDS = ("flops", "bytes", "terms", "t_lower", "t_upper", "bound")


def cli_json(*args: str) -> Any:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("extra", [[], ["--set", "nvlink.latency=2us"], ["--choices", "book"],
                                   ["--attention", "materialised", "--activations", "on-chip"]])
def test_model_on_a_mesh_and_the_serving_plan_agree_to_the_last_digit(extra: list[str]) -> None:
    common = ["--chip", "h100-sxm", "--batch", "64", "--context", "2048", *extra]
    stepped = cli_json("model", "llama-2-7b", "--decode", "--mesh", "X=8", *common)["step"]
    planned = cli_json("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--strategy", "tp=X",
                       *common)["decode"]
    for key in FIELDS:
        assert stepped[key] == planned[key], key
    assert set(stepped["terms"]) == {"compute", "hbm", "tp over X (nvlink)"}
    # LLaMA-2-7B per chip of 8 at batch 64: 32 layers x 4 ops' partial sums reduced, plus
    # the lookup; the step waits for each AllReduce
    assert sp.Rational(stepped["t_lower"]) > sp.Rational(stepped["terms"]["hbm"])


def test_a_known_hop_latency_lengthens_the_step_in_both_verbs() -> None:
    common = ["--chip", "h100-sxm", "--batch", "64", "--context", "2048"]
    base = cli_json("plan", "llama-2-7b", "--serve", "--mesh", "X=8", *common, "--set",
                    "nvlink.latency=0")["decode"]
    slow = cli_json("plan", "llama-2-7b", "--serve", "--mesh", "X=8", *common, "--set",
                    "nvlink.latency=2us")["decode"]
    default = cli_json("plan", "llama-2-7b", "--serve", "--mesh", "X=8", *common)["decode"]
    # 65 AllReduces of 14 steps each (8 ports of a switch: reduce-scatter and all-gather)
    # and the logits' AllGather of 7, at 2 us
    gained = sp.Rational(slow["t_lower"]) - sp.Rational(base["t_lower"])
    assert gained == (65 * 14 + 7) * sp.Rational(2, 10**6)
    # by default NCCL's 0.6 us per step (NCCL-TUNE in the catalogue)
    counted = sp.Rational(default["t_lower"]) - sp.Rational(base["t_lower"])
    assert counted == (65 * 14 + 7) * sp.Rational(6, 10**7)


@st.composite
def configs(draw: st.DrawFn) -> ModelConfig:
    heads = draw(st.sampled_from([8, 16]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8, 16) if heads % k == 0]))
    head_dim = draw(st.sampled_from([16, 32]))
    return ModelConfig("generated", layers=draw(st.sampled_from([2, 4])),
                       d_model=heads * head_dim, d_ff=64 * draw(st.integers(1, 8)),
                       heads=heads, kv_heads=kv, head_dim=head_dim,
                       vocab=64 * draw(st.integers(4, 40)))


@settings(max_examples=8, deadline=None)
@given(cfg=configs(), n=st.sampled_from([1, 2, 4, 8]), batch=st.sampled_from([1, 8, 64]),
       context=st.sampled_from([16, 256]))
def test_model_and_plan_give_one_step_for_any_config_and_mesh(cfg: ModelConfig, n: int,
                                                               batch: int,
                                                               context: int) -> None:
    m = mesh(f"X={n}", "h100-sxm")
    step, critical = step_on(cfg, "decode", m.chip, m, batch=batch, context=context)
    plan = serve(cfg, m, parse_strategy("tp=X"), batch=batch, context=context)
    d = plan.decode
    assert (step.flops, step.bytes, dict(step.terms), step.t_lower, step.t_upper,
            step.bound) == (d.flops, d.bytes, dict(d.terms), d.t_lower, d.t_upper, d.bound)
    assert critical == plan.critical


def read_once(cfg: ModelConfig, s: Any, spec: str) -> sp.Expr:
    """What a decode step must read on a device: the weights it holds but the input
    embedding table (a lookup reads B rows of it), and its KV cache."""
    tp = 4 if spec == "tp=X+Y" else 2 if "tp" in spec else 1
    table = 0 if cfg.tied_embeddings else cfg.vocab // tp * cfg.d_model * 2
    return s.memory["weights"] - table + s.memory["kv_cache"]


@settings(max_examples=8, deadline=None)
@given(cfg=configs(), spec=st.sampled_from(["dp=X+Y", "tp=X+Y", "dp=X,tp=Y", "pp=X,tp=Y",
                                            "dp=Y,pp=X"]),
       batch=st.sampled_from([4, 16]), context=st.sampled_from([16, 128]))
def test_a_step_reads_what_each_device_holds_and_the_devices_hold_the_model(
        cfg: ModelConfig, spec: str, batch: int, context: int) -> None:
    m = mesh("X=2,Y=2", "h100-sxm")
    s = serve(cfg, m, parse_strategy(spec), batch=batch, context=context)
    assert s.decode.terms["hbm"] * m.chip.bandwidth("hbm") >= read_once(cfg, s, spec)
    assert s.memory["weights"] * 4 >= params(cfg).total * 2
    assert s.memory["kv_cache"] * 4 >= batch * context * kv_bytes_per_token(cfg)


def test_kv_heads_past_their_count_are_replicated_and_read_by_every_rank() -> None:
    cfg = model("llama-3-8b")  # 8 KV heads over 16 tensor-parallel chips
    s = serve(cfg, mesh("X=16", "h100-sxm"), batch=8, context=4096)
    per_head = 2 * 32 * 128 * 2  # a key and a value of one head, 32 layers, bf16
    assert s.memory["kv_cache"] == 8 * 4096 * per_head
    table = 128256 // 16 * 4096 * 2  # the input embedding's share: a lookup reads 8 rows
    assert s.decode.terms["hbm"] * s.decode.roofline.chip.bandwidth("hbm") >= \
        s.memory["weights"] - table + s.memory["kv_cache"]


def test_norms_are_counted_on_every_rank() -> None:
    cfg = model("llama-2-7b")
    one = serve(cfg, mesh("X=1", "h100-sxm"), batch=1, context=128)
    eight = serve(cfg, mesh("X=8", "h100-sxm"), batch=1, context=128)
    norms = (2 * 32 + 1) * 4096 * 2
    assert 8 * eight.memory["weights"] - one.memory["weights"] == 7 * norms


@pytest.mark.parametrize(("name", "spec", "message"), [
    ("llama-2-7b", "tp=X", "llama-2-7b: tp=3 does not divide its 32 heads"),
    ("llama-2-7b", "pp=X", "llama-2-7b: pp=3 does not divide its 32 layers"),
    ("gpt2", "tp=X", "gpt2: tp=3 does not divide its 50257 vocabulary"),
    ("mixtral-8x7b", "ep=X", "mixtral-8x7b: ep=3 does not divide its 8 experts"),
])
def test_degrees_that_do_not_divide_are_refused_with_the_sizes(name: str, spec: str,
                                                               message: str) -> None:
    with pytest.raises(InputError, match=message):
        serve(model(name), mesh("X=3", "h100-sxm"), parse_strategy(spec), batch=3,
              context=64)
    done = run_cli("plan", name, "--serve", "--mesh", "X=3", "--strategy", spec, "--chip",
                   "h100-sxm", "--batch", "3")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"symroof: error: --strategy: {message}"


def test_int8_weights_halve_and_the_default_strategy_is_tp_over_the_mesh() -> None:
    cfg, m = model("llama-2-7b"), mesh("X=8", "h100-sxm")
    bf16 = serve(cfg, m, batch=8, context=512)
    int8 = serve(cfg, m, batch=8, context=512, options=StepOptions(dtype="int8"))
    assert 2 * int8.memory["weights"] == bf16.memory["weights"]
    assert int8.memory["kv_cache"] == bf16.memory["kv_cache"] // 2
    assert bf16.strategy == "tp=X"
    assert bf16.decode.t_lower == serve(cfg, m, parse_strategy("tp=X"), batch=8,
                                        context=512).decode.t_lower
    assert dtype_bytes("int8") == 1
    out = cli_json("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--dtype", "int8",
                   "--chip", "h100-sxm", "--batch", "8", "--context", "512")
    assert sp.Integer(out["memory"]["weights"]) == int8.memory["weights"]


def test_expert_parallelism_reduces_the_dense_gradients_over_its_axes() -> None:
    p = train(model("mixtral-8x7b"), mesh("X=8", "h100-sxm"), parse_strategy("ep=X"),
              batch=64, context=2048)
    reduced = {(u.kind, u.collective, u.what, u.block) for u, _, _, _ in p.uses}
    assert {("ep", "allreduce", "dense weight gradients", b)
            for b in ("layer", "head", "embedding")} <= reduced
    per_layer = next(size for u, _, _, size in p.uses if u.what == "dense weight gradients"
                     and u.block == "layer")
    d, kv = 4096, 1024
    attention = 2 * d * d + 2 * d * kv
    assert per_layer == 2 * (attention + 2 * d + 8 * d)  # bf16: attention, 2 norms, router


@pytest.mark.parametrize("name", ["mixtral-8x7b", "qwen1.5-moe-a2.7b"])
@pytest.mark.parametrize("mode", ["--serve", "--train"])
def test_moe_plans_give_a_number_or_a_reason_in_valid_json(name: str, mode: str) -> None:
    out = cli_json("plan", name, mode, "--mesh", "X=4", "--strategy", "ep=X", "--chip",
                   "h100-sxm", "--batch", "64", "--context", "2048")
    critical = out["critical_batch"]
    assert set(critical) == {"relation", "value", "value_value", "integer", "unit",
                             "reason"}
    assert (critical["integer"] is None) == (critical["relation"] is None)
    assert critical["integer"] is not None or critical["reason"]
    assert len(json.dumps(out)) < 200_000


@pytest.mark.parametrize("name", ["llama-2-7b", "gpt2", "mixtral-8x7b", "qwen1.5-moe-a2.7b",
                                  "qwen2.5-7b"])
def test_the_ops_hold_the_one_parameter_count(name: str) -> None:
    from symroof.models.counts import op_weights
    from symroof.models.layers import layer_ops
    cfg = model(name)
    weights = op_weights(cfg, cfg.sizes(False))
    step = layer_ops(cfg, "decode", batch=1, context=8)
    held = sum(b.count * weights.get(o.name, 0) for b, o in step.rows())
    p = params(cfg)
    # the ops hold every weight but the input embedding table and learned positions, which
    # a lookup reads row by row (tied embeddings: the head is that table)
    looked_up = p.embedding - (0 if cfg.tied_embeddings else cfg.vocab * cfg.d_model)
    assert held + looked_up == p.total + (cfg.vocab * cfg.d_model if cfg.tied_embeddings
                                          else 0)


def test_text_views_print_decimals_and_exact_forms_on_request() -> None:
    args = ["collective", "allreduce", "--bytes", "1e9", "--axes", "X", "--mesh", "X=8",
            "--chip", "h100-sxm"]
    plain = run_cli(*args)
    exact = run_cli(*args, "--exact")
    assert plain.returncode == exact.returncode == 0
    # 7/4 of 1e9 bytes over 450 GB/s, for a ring of 8: 7/1800 s
    assert "  bandwidth time                3.889 ms" in plain.stdout.splitlines()
    assert "  bandwidth time                7/1800 s ≈ 3.889 ms" in exact.stdout.splitlines()
    served = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                     "--batch", "64")
    assert served.returncode == 0
    assert not re.search(r"\d{6,}/\d|\d/\d{6,}", served.stdout), served.stdout


def test_training_refuses_the_same_degrees_and_the_search_skips_them() -> None:
    from symroof.plans.search import candidates
    with pytest.raises(InputError, match="gpt2: tp=2 does not divide its 50257 vocabulary"):
        train(model("gpt2"), mesh("X=2", "h100-sxm"), parse_strategy("tp=X"), batch=8,
              context=128)
    found = list(candidates(model("gpt2"), [("X", 2, "")], 8))
    assert found and all(c.degrees[2] == 1 for c in found)  # no tensor parallelism
    assert any(c.degrees[2] == 2 for c in candidates(model("llama-2-7b"), [("X", 2, "")], 8))


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_the_search_tries_every_schedule_a_plan_accepts_and_none_it_refuses(
        data: st.DataObject) -> None:
    # one space: for a strategy the search tries, every (microbatches, chunks per stage)
    # that train accepts is among its candidates (any divisor of the replica's batch, fewer
    # microbatches than stages too; interleaved where the count is a multiple of the
    # stages and the layers split), and train refuses every pair the search leaves out
    from symroof.plans.search import candidates
    layers = data.draw(st.sampled_from([4, 6, 8, 12]), "layers")
    cfg = ModelConfig("generated", layers=layers, d_model=64, d_ff=128, heads=4, kv_heads=4,
                      head_dim=16, vocab=256)
    spec = data.draw(st.sampled_from(["X=4", "X=6", "X=2,Y=3", "X=2,Y=4", "X=2,Y=2,Z=2"]))
    batch = data.draw(st.integers(1, 72), "batch")
    axes = [(a, int(size), "") for a, size in (x.split("=") for x in spec.split(","))]
    found = list(candidates(cfg, axes, batch))
    pipelined = [c for c in found if c.degrees[3] > 1]
    pool = pipelined if data.draw(st.booleans(), "a pipeline") and pipelined else found
    if not pool:
        return
    c = data.draw(st.sampled_from(pool), "strategy")
    searched = {(x.degrees[5], x.chunks) for x in found if x.strategy == c.strategy}
    micro, chunks = data.draw(st.one_of(
        st.sampled_from(sorted(searched)),
        st.tuples(st.integers(1, 2 * batch), st.integers(1, layers + 1))), "schedule")
    m, strategy = mesh(spec, "h100-sxm"), parse_strategy(c.strategy)
    try:
        train(cfg, m, strategy, batch=batch, context=16,
              options=StepOptions(microbatches=micro, interleave=chunks))
    except InputError as e:
        assert e.where in ("batch", "microbatches", "interleave"), e
        assert (micro, chunks) not in searched, e
    else:
        assert (micro, chunks) in searched
        # the same count given as the microbatch's size (`--microbatch`)
        replicas = c.degrees[0] * c.degrees[1] * c.degrees[4]
        sized = train(cfg, m, strategy, batch=batch, context=16, options=StepOptions(
            microbatch=batch // (replicas * micro), interleave=chunks))
        assert sized.extra["microbatches"] == micro


def test_the_largest_batch_on_a_mesh_is_the_largest_serving_plan_that_fits() -> None:
    out = cli_json("model", "llama-3-70b", "--fit", "--chip", "h100-sxm", "--context", "4096",
                   "--mesh", "X=8")
    b = out["max_batch"]["integer"]
    cfg, m = model("llama-3-70b"), mesh("X=8", "h100-sxm")
    # the referee's 371 for 80e9 B per GPU with every weight resident (peers review, section 2)
    assert b == 371
    from symroof.plans.serving import device_memory
    for batch, fits in ((b, True), (b + 1, False)):
        held = device_memory(cfg, 8, 1, 1, batch=sp.Integer(batch), context=sp.Integer(4096),
                             dtype="bf16", kv_dtype="bf16")
        assert bool(held["total"] <= m.chip.capacity("hbm")) is fits


@settings(max_examples=examples(8), deadline=None)
@given(cfg=configs(), spec=st.sampled_from(["dp=X+Y", "tp=X+Y", "dp=X,tp=Y", "zero2=X,tp=Y",
                                            "fsdp=X+Y"]),
       micro=st.sampled_from([1, 2]), context=st.sampled_from([16, 128]),
       kernel=st.sampled_from(["materialised", "flash"]))
def test_a_training_forward_moves_what_a_prefill_of_its_microbatch_moves(
        cfg: ModelConfig, spec: str, micro: int, context: int, kernel: str) -> None:
    # one model of a step: a training plan's forward HBM term per device is the serving
    # prefill step of the same shard at a replica's microbatch, once per microbatch
    m = mesh("X=2,Y=2", "h100-sxm")
    strategy = parse_strategy(spec)
    plan = train(cfg, m, strategy, batch=16, context=context,
                 options=StepOptions(kernel=Kernel(kernel), microbatches=micro))
    data = tuple(a for k in strategy.kinds if k != "tp" for a in strategy.axes(k))
    prefill = device_step(cfg, "prefill", m, {"tp": strategy.axes("tp"), "dp": data},
                          batch=16 // micro, context=context,
                          options=StepOptions(kernel=Kernel(kernel)))
    moved = plan.terms["hbm"].phases["forward"] * m.chip.bandwidth("hbm")
    assert moved == micro * prefill.bytes
    assert plan.terms["hbm"].phases["backward"] == 2 * plan.terms["hbm"].phases["forward"]


@pytest.mark.parametrize(("verb", "axis"), [("serve", 8), ("train", 16)])
def test_a_texts_collectives_drop_the_rings_n_minus_one_over_n(verb: str, axis: int) -> None:
    # with the latency off on both sides, the leading term in n takes (n-1)/n as 1: every
    # collective term over an axis of n chips is n/(n-1) times the exact one
    from symroof.core.choices import BOOK, Choices
    cfg, no_latency = model("llama-2-7b"), Choices(latency="off")
    if verb == "serve":
        m = mesh(f"X={axis}", "h100-sxm")
        exact_, book = (serve(cfg, m, batch=64, context=2048,
                              options=StepOptions(choices=c)).decode.terms
                        for c in (no_latency, BOOK))
    else:
        m = mesh(f"X={axis},Y={axis}", "tpu-v5e")
        exact_, book = ({k: t.time for k, t in train(cfg, m, parse_strategy("fsdp=X,tp=Y"),
                                                     batch=256, context=2048,
                                                     options=StepOptions(choices=c)).terms.items()}
                        for c in (no_latency, BOOK))
    comms = [k for k in exact_ if " over " in k]
    assert comms
    for k in comms:
        assert book[k] == exact_[k] * sp.Rational(axis, axis - 1), k
    assert all(book[k] == exact_[k] for k in exact_ if k not in comms)


def test_a_plan_refuses_a_choice_it_does_not_take() -> None:
    done = run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "tp=X",
                   "--chip", "h100-sxm", "--choices", "flops=per_token_6P")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "symroof: error: --choices: a training plan takes the choices collectives, latency, "
        "link_alpha; flops=per_token_6P does not apply to it")


@settings(max_examples=examples(8), deadline=None)
@given(cfg=configs(), spec=st.sampled_from(["dp=X+Y", "zero2=X+Y", "fsdp=X,dp=Y"]),
       context=st.sampled_from([16, 128]))
def test_a_training_forward_computes_what_the_prefill_of_the_batch_computes(
        cfg: ModelConfig, spec: str, context: int) -> None:
    # the forward phase's compute and HBM terms are the device's prefill step's (the same
    # ops, the same engine rooflines); its FLOPs, on every chip, the whole batch's prefill
    m = mesh("X=2,Y=2", "h100-sxm")
    plan = train(cfg, m, parse_strategy(spec), batch=16, context=context)
    step = device_step(cfg, "prefill", m, {"dp": ("X", "Y")}, batch=16, context=context,
                       options=StepOptions(kernel=Kernel(attention="materialised")))
    for term in ("compute", "hbm"):
        assert plan.terms[term].phases["forward"] == step.terms[term], term
    assert 4 * step.flops == layer_ops(cfg, "prefill", batch=16, context=context).total().flops
    assert plan.extra["flops"] == 3 * step.flops  # the backward: twice the forward's


def test_a_fit_on_a_mesh_is_what_the_serving_plan_holds() -> None:
    # model --fit --mesh X=4: the longest context at batch 8 is the last one whose serving
    # memory per device (tensor parallel, norms on every chip) fits in an H100's 80 GB
    from symroof.models import max_context
    from symroof.plans.serving import device_memory
    cfg, h100 = model("llama-3-70b"), mesh("X=4", "h100-sxm").chip
    longest = max_context(cfg, h100, batch=8, tp=4).integer

    def held(t: int) -> sp.Expr:
        return device_memory(cfg, 4, 1, 1, batch=sp.Integer(8), context=sp.Integer(t),
                             dtype="bf16", kv_dtype="bf16")["total"]
    assert held(longest) <= h100.capacity("hbm") < held(longest + 1)
    done = run_cli("model", "llama-3-70b", "--fit", "--chip", "h100-sxm", "--context", "8192",
                   "--batch", "8", "--mesh", "X=4")
    assert "longest context at batch 8 on mesh X=4 (tp)" in done.stdout
    assert f"so {longest}" in done.stdout
