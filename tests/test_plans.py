"""Training and serving plans on meshes: what each strategy sends, memory, bounds, critical
batches, the plan search and its agreement with the exact plans."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.models.layers import Kernel
from symroof.parallel.mesh import mesh
from symroof.plans.calibration import parse_efficiency
from symroof.plans.device_step import device_step, step_critical
from symroof.plans.laws import C, W, critical_law
from symroof.plans.options import StepOptions
from symroof.plans.relaxed import relaxed_mix
from symroof.plans.search import candidates, meshes, search
from symroof.plans.serving import fewest_chips, serve, serving_axes
from symroof.plans.strategy import parse_strategy
from symroof.plans.template import BATCH, MICRO, training_template
from symroof.plans.training import train
from tests.conftest import examples

LLAMA = model("llama-2-7b")
# published with the model: 6,738,415,616 parameters; every weight matrix a token multiplies
# (output head included, input embedding excluded): 6,607,343,616
P_LLAMA, P_MULT = 6_738_415_616, 6_607_343_616
L, D, N, H = 32, 4096, 32, 128


def per_layer(uses, block="layer"):  # type: ignore[no-untyped-def]
    return sorted((u.collective, u.phase) for u in uses if u.block == block
                  and u.scope == "layer")


# --- Megatron-LM (Narayanan et al., 2021, section 2.3; Shoeybi et al., 2019) -----------

def test_megatron_sends_two_allreduces_forward_and_two_backward_per_layer() -> None:
    t = training_template(LLAMA, context=2048, kinds=("tp",))
    tp = [u for u in t.uses if u.kind == "tp" and u.block == "layer"]
    assert per_layer(tp) == [("allreduce", "backward")] * 2 + [("allreduce", "forward")] * 2
    # each of the activations [b T, D] in bf16
    assert {u.nbytes for u in tp} == {BATCH * 2048 * D * 2}
    assert {u.per_step for u in tp} == {L * MICRO}  # once per layer and microbatch


def test_sequence_parallel_swaps_each_allreduce_for_a_reducescatter_and_an_allgather() -> None:
    t = training_template(LLAMA, context=2048, kinds=("tp",), sequence_parallel=True)
    tp = [u for u in t.uses if u.kind == "tp" and u.block == "layer"]
    assert per_layer(tp) == [("allgather", "backward")] * 2 + [("allgather", "forward")] * 2 \
        + [("reducescatter", "backward")] * 2 + [("reducescatter", "forward")] * 2


def test_tp_time_with_sp_equals_without_in_bandwidth() -> None:
    m = mesh("X=8", "h100-sxm")  # NVLink: no sourced latency, so only bandwidth counts
    plain = train(LLAMA, m, parse_strategy("tp=X"), batch=8, context=2048,
                  options=StepOptions(recompute="full"))
    seq = train(LLAMA, m, parse_strategy("tp=X,sp"), batch=8, context=2048,
                options=StepOptions(recompute="full"))
    name = "tp over X (nvlink)"
    assert plain.terms[name].time == seq.terms[name].time
    # sequence parallelism splits the activations Megatron alone keeps whole
    assert seq.memory["activations"] * 8 == plain.memory["activations"]


# --- ZeRO, from the plan (Rajbhandari et al., 2020) ------------------------------------

@pytest.mark.parametrize(("spec", "law"), [
    ("dp=X", lambda p, n: 16 * p), ("zero1=X", lambda p, n: 4 * p + 12 * p / n),
    ("zero2=X", lambda p, n: 2 * p + 14 * p / n), ("fsdp=X", lambda p, n: 16 * p / n)])
def test_model_states_per_device_follow_zero(spec: str, law) -> None:  # type: ignore[no-untyped-def]
    p = train(LLAMA, mesh("X=16", "tpu-v5e"), parse_strategy(spec), batch=16, context=1024)
    states = p.memory["weights"] + p.memory["gradients"] + p.memory["optimizer"]
    assert states == law(sp.Integer(P_LLAMA), 16)


def test_fsdp_sends_half_again_what_data_parallel_sends() -> None:
    m = mesh("X=8", "h100-sxm")
    dp = train(LLAMA, m, parse_strategy("dp=X"), batch=8, context=1024)
    fsdp = train(LLAMA, m, parse_strategy("fsdp=X"), batch=8, context=1024)
    assert fsdp.terms["fsdp over X (nvlink)"].time / dp.terms["dp over X (nvlink)"].time == \
        sp.Rational(3, 2)


def test_replicas_across_pods_all_reduce_the_fsdp_shards_over_dcn() -> None:
    m = mesh("pods=2@dcn,X=16", "tpu-v5e")
    p = train(LLAMA, m, parse_strategy("dp=pods,fsdp=X"), batch=32, context=1024,
              options=StepOptions(recompute="full"))
    dcn = [(u, size) for u, name, _, size in p.uses if name == "dp over pods (dcn)"]
    fsdp = {u.block: size for u, name, _, size in p.uses
            if name == "fsdp over X (ici)" and u.collective == "reducescatter"}
    # each pod reduce-scatters a layer's gradients over X, then the pods all-reduce the shard
    assert dcn and all(size * 16 == fsdp[u.block] for u, size in dcn)
    assert {u.collective for u, _ in dcn} == {"allreduce"}


def test_experts_all_to_all_their_routed_tokens_twice_each_way_per_layer() -> None:
    cfg = model("mixtral-8x7b")
    t = training_template(cfg, context=1024, kinds=("ep",))
    ep = [u for u in t.uses if u.kind == "ep" and u.collective == "alltoall"]
    assert per_layer(ep) == [("alltoall", "backward")] * 2 + [("alltoall", "forward")] * 2
    # each of b T tokens goes to k = 2 of the experts: a [2 b T, D] array in bf16
    assert {u.nbytes for u in ep} == {BATCH * 1024 * 2 * 4096 * 2}
    p = train(cfg, mesh("X=8", "h100-sxm"), parse_strategy("ep=X"), batch=8, context=1024,
              options=StepOptions(recompute="full"))
    q = train(cfg, mesh("X=8", "h100-sxm"), parse_strategy("dp=X"), batch=8, context=1024,
              options=StepOptions(recompute="full"))
    experts = 32 * 8 * 3 * 4096 * 14336  # routed experts' weights: L E 3 D F_e
    assert q.memory["weights"] - p.memory["weights"] == 2 * experts * 7 // 8


# --- the pipeline's bubble in a plan ---------------------------------------------------

@pytest.mark.parametrize(("stages", "micro"), [(2, 4), (4, 8), (8, 8)])
def test_the_plans_bubble_is_within_the_1f1b_fraction(stages: int, micro: int) -> None:
    # the bubble is the busiest (last) stage's idle time; that stage also runs the output
    # head, so it idles a smaller share than alike stages would, (p - 1)/(m + p - 1) (the
    # step itself is the played schedule: tests/test_pipeline_stages.py)
    p = train(LLAMA, mesh(f"X={stages}", "h100-sxm"), parse_strategy("pp=X"), batch=micro,
              context=1024, options=StepOptions(recompute="full", microbatches=micro))
    bubble = p.terms["pipeline bubble"].time
    pipelined = p.t_lower - p.terms["optimizer step"].time  # the step after the schedule
    assert 0 < bubble / pipelined < sp.Rational(stages - 1, micro + stages - 1)


# --- critical batches ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["dp", "fsdp"])
def test_critical_batch_on_a_wrapped_torus_axis(kind: str) -> None:
    law = critical_law(LLAMA, "tpu-v5e", kind, context=4096)
    # AllReduce of 2P bytes of gradients on a wrapped bidirectional ring of 16:
    # (15/16) 2P / W; hidden under the backward, 2 (2 P_mult + 4 L N H T) FLOPs per token
    backward = 2 * (2 * P_MULT + 4 * L * N * H * 4096)
    assert sp.simplify(law.expression - sp.Rational(15, 16) * 2 * P_LLAMA * C /
                       (W * backward)) == 0
    v5e = chip("tpu-v5e")
    assert law.value == law.expression.subs({C: v5e.peak("bf16"), W: 45 * 10**9})


def test_critical_batch_on_a_gpu_scale_out_network_is_exact_in_n() -> None:
    law = critical_law(LLAMA, "h100-sxm", "dp", context=4096)
    n = sp.Symbol("N", positive=True)
    backward = 2 * (2 * P_MULT + 4 * L * N * H * 4096)
    # on a switched network an AllReduce sends 2 (n - 1)/n of the 2P bytes at W per GPU
    expected = 2 * (n - 1) / n * 2 * P_LLAMA * C / (W * backward)
    assert sp.cancel(law.expression - expected) == 0
    # a GPU's share of its node's 400 GB/s of InfiniBand: 50 GB/s
    assert law.bandwidth == 50 * 10**9


def test_the_gradient_allreduce_hides_exactly_above_its_critical_batch() -> None:
    m = mesh("X=16", "tpu-v5e")
    s = parse_strategy("dp=X")
    p = train(LLAMA, m, s, batch=16, context=1024, options=StepOptions(recompute="full"))
    assert p.critical_note == "" and p.critical_batch is not None
    crit = p.critical_terms["dp over X (ici)"]
    assert p.critical_batch >= crit
    sequences = crit * 16 / 1024  # tokens per chip -> sequences in the global batch
    below, above = sp.floor(sequences / 16) * 16, sp.ceiling(sequences / 16) * 16
    assert below < sequences < above
    for b, hidden in ((below, False), (above, True)):
        at = train(LLAMA, m, s, batch=int(b), context=1024, options=StepOptions(recompute="full"))
        t_data = at.terms["dp over X (ici)"].phases["backward"]
        assert bool(at.terms["compute"].phases["backward"] >= t_data) is hidden


def test_tensor_parallel_at_sixteen_ways_is_never_compute_bound_on_v5e() -> None:
    p = train(LLAMA, mesh("X=16", "tpu-v5e"), parse_strategy("tp=X"), batch=1, context=4096,
              options=StepOptions(recompute="full"))
    assert p.critical_batch is None
    assert p.critical_note.startswith("never compute-bound: tp over X (ici) grows")


def test_efficiency_is_a_named_fraction_of_peak() -> None:
    m = mesh("X=8", "h100-sxm")
    s = parse_strategy("fsdp=X")
    full = train(LLAMA, m, s, batch=8, context=1024)
    half = train(LLAMA, m, s, batch=8, context=1024,
                 options=StepOptions(efficiency=parse_efficiency("compute=1/2")))
    assert half.terms["compute"].time == 2 * full.terms["compute"].time
    assert "efficiency: compute at 1/2 of peak" in half.assumptions


# --- the search ------------------------------------------------------------------------

def test_the_search_agrees_with_every_exact_plan() -> None:
    cfg, c = model("gpt2"), chip("h100-sxm")
    found = search(cfg, c, 8, batch=64, context=1024)
    assert found.searched == len(list(candidates(cfg, [("X", 8, "")], 64))) + \
        sum(len(list(candidates(cfg, axes, 64))) for axes in
            ([("X", 2, ""), ("Y", 4, "")], [("X", 4, ""), ("Y", 2, "")],
             [("X", 2, ""), ("Y", 2, ""), ("Z", 2, "")]))
    for choice in found.ranking:
        exact = train(cfg, mesh(choice.spec, c), parse_strategy(choice.strategy), batch=64,
                      context=1024, options=StepOptions(microbatches=choice.microbatches))
        assert np.isclose(float(exact.t_lower), choice.t_lower, rtol=1e-9)
        assert np.isclose(float(exact.memory["total"]), choice.memory, rtol=1e-9)
    times = [x.t_lower for x in found.ranking]
    assert times == sorted(times)
    # the plan it returns is the best candidate rebuilt exactly
    best = found.best
    assert (found.plan.mesh, found.plan.strategy) == (best.spec, best.strategy)
    assert np.isclose(float(found.plan.t_lower), best.t_lower, rtol=1e-9)


def test_a_search_that_cannot_fit_says_what_it_needs() -> None:
    with pytest.raises(InputError, match="no plan of 8 chips fits in tpu-v5e's memory"):
        search(model("llama-2-70b"), chip("tpu-v5e"), 8, batch=8, context=4096)


# --- serving ---------------------------------------------------------------------------

def test_kv_cache_and_weights_split_over_the_tensor_axis() -> None:
    s = serve(LLAMA, mesh("X=8", "h100-sxm"), parse_strategy("tp=X"), batch=64, context=2048)
    # 2 L K H bytes = 524,288 per token in bf16, over 8 chips
    assert s.memory["kv_cache"] == 64 * 2048 * 524_288 // 8
    assert s.decode.throughput == 64 / s.decode.latency
    assert s.prefill.throughput == 64 * 2048 / s.prefill.latency


def test_decode_latency_grows_with_batch_and_context_and_throughput_follows() -> None:
    s = serve(LLAMA, mesh("X=8", "h100-sxm"), parse_strategy("tp=X"), batch=64, context=2048)
    rows = {(b, t): (lat, rate) for b, t, lat, rate, _ in s.grid}
    for (b, t), (lat, rate) in rows.items():
        assert rate == sp.Rational(b) / (lat * 8)
        for bigger in ((4 * b, t), (b, 4 * t)):
            if bigger in rows:
                assert rows[bigger][0] > lat
    assert rows[64, 2048][0] == s.decode.latency


@pytest.mark.parametrize(("name", "spec", "strategy", "kernel"), [
    ("llama-2-7b", "X=8", "tp=X", Kernel()),
    ("llama-3-70b", "X=8", "tp=X", Kernel(attention="materialised", causal=True)),
    ("mixtral-8x7b", "X=2,Y=4", "ep=X,tp=Y", Kernel()),
    ("llama-3-8b", "X=2,Y=2", "pp=X,tp=Y", Kernel()),
    ("deepseek-v2-lite", "X=2", "tp=X", Kernel()),
])
def test_the_grid_and_the_critical_batch_from_the_swept_step_equal_the_steps_built_there(
        name: str, spec: str, strategy: str, kernel: Kernel) -> None:
    # the grid substitutes (B, T) into one decode step built in the symbols B and T: each
    # row equals, exactly, the decode step built at its numbers, and so does the critical
    # batch built at the plan's context
    cfg, m, st_ = model(name), mesh(spec, "h100-sxm"), parse_strategy(strategy)
    s = serve(cfg, m, st_, batch=16, context=1024, options=StepOptions(kernel=kernel))
    axes = serving_axes(cfg, m, st_)
    for b, t, lat, rate, _ in s.grid:
        built = device_step(cfg, "decode", m, axes, batch=b, context=t,
                            options=StepOptions(kernel=kernel))
        assert (lat, rate) == (built.latency, built.throughput / m.devices)
    assert s.critical == step_critical(
        device_step(cfg, "decode", m, axes, batch=None, context=1024,
                    options=StepOptions(kernel=kernel)))


def test_a_swept_step_with_a_float_in_it_is_substituted_as_sympy_does() -> None:
    # the fast exact walk takes rationals only; a Float fraction falls back to xreplace
    from symroof.core.parse import symbol
    from symroof.plans.efficiency import Efficiency
    from symroof.plans.serving import swept_at
    cfg, m = model("llama-2-7b"), mesh("X=2", "h100-sxm")
    eff = Efficiency({"compute": sp.Float("0.7")})
    swept = device_step(cfg, "decode", m, {"tp": ("X",)}, batch=None, context=symbol("T"),
                        options=StepOptions(efficiency=eff))
    built = device_step(cfg, "decode", m, {"tp": ("X",)}, batch=8, context=512,
                        options=StepOptions(efficiency=eff))
    assert swept_at(swept, 8, 512) == {"latency": built.latency,
                                       "throughput": built.throughput}


def test_decode_turns_compute_bound_at_its_critical_batch() -> None:
    cfg = model("llama-3-8b")  # grouped-query attention: the KV read grows slowly enough
    m, s = mesh("X=1", "h100-sxm"), parse_strategy("tp=X")
    plan = serve(cfg, m, s, batch=8, context=128)
    assert plan.critical.integer is not None and plan.critical.value is not None
    b = plan.critical.integer
    assert serve(cfg, m, s, batch=b, context=128).decode.bound == "compute"
    assert serve(cfg, m, s, batch=b - 1, context=128).decode.bound != "compute"


def test_fewest_chips_meet_the_target_and_half_as_many_do_not() -> None:
    target = sp.Rational(4, 1000)
    n, why = fewest_chips(LLAMA, chip("h100-sxm"), batch=16, context=2048, target=target)
    assert n is not None and n > 1, why
    for k, ok in ((n, True), (n // 2, False)):
        s = serve(LLAMA, mesh(f"X={k}", "h100-sxm"), parse_strategy("tp=X"), batch=16,
                  context=2048)
        assert (s.fits and bool(s.decode.latency <= target)) is ok


@pytest.mark.parametrize("overlap", ["op", "phase", "none"])
@pytest.mark.parametrize("dtype, kv_dtype, eff", [("bf16", None, "hbm=0.8"),
                                                  ("int8", "int8-token", "nvlink=0.5")])
def test_the_fewest_chips_time_the_plans_own_step(overlap: str, dtype: str,
                                                  kv_dtype: str | None, eff: str) -> None:
    # one question, one answer: the row for 8 chips is the plan on X=8 with tp=X, under the
    # plan's dtypes, efficiency and overlap rule; a target at its latency is met by 8 chips
    # (or fewer) and missed by every smaller power of two that fits but is slower
    opts = {"options": StepOptions(dtype=dtype, kv_dtype=kv_dtype, overlap=overlap,
                                   efficiency=parse_efficiency(eff))}
    s = serve(LLAMA, mesh("X=8", "h100-sxm"), parse_strategy("tp=X"), batch=64,
              context=2048, **opts)
    n, why = fewest_chips(LLAMA, chip("h100-sxm"), batch=64, context=2048,
                          target=s.decode.latency, **opts)
    assert n is not None and n <= 8, why
    for k in (1, 2, 4, 8):
        t = serve(LLAMA, mesh(f"X={k}", "h100-sxm"), parse_strategy("tp=X"), batch=64,
                  context=2048, **opts)
        assert (k >= n) is bool(t.fits and t.decode.latency <= s.decode.latency), k
    if n == 8:
        assert why.endswith(si_text(s.decode.latency))


def si_text(seconds: Any) -> str:
    from symroof.core.printer import si
    return str(si(seconds, "s"))


def test_tensor_parallel_decode_on_nvlink_is_never_compute_bound() -> None:
    # two AllReduces of [B, D] per layer outgrow 2 FLOPs per weight per token over 8 GPUs
    s = serve(model("llama-3-8b"), mesh("X=8", "h100-sxm"), parse_strategy("tp=X"), batch=8,
              context=128)
    assert s.critical.integer is None and s.critical.value is None
    assert s.critical.reason == ("never compute-bound: tp over X (nvlink) grows with B at "
                                 "least as fast as compute")


def test_serving_rejects_training_strategies() -> None:
    with pytest.raises(InputError, match="zero3 shards training state"):
        serve(LLAMA, mesh("X=8", "h100-sxm"), parse_strategy("fsdp=X"), batch=8, context=128)


# --- the continuous relaxation and laws over every plan --------------------------------

def test_the_relaxed_mix_balances_its_two_terms() -> None:
    r = relaxed_mix(LLAMA, "tpu-v5p", 256, batch=256, context=4096)
    x, y = sp.symbols("d_zero d_tp", positive=True)
    a, b = (r.objective.coeff(y**-1), r.objective.coeff(x**-1))
    assert sp.expand(r.objective - a / y - b / x) == 0
    assert sp.simplify(r.tp - sp.sqrt(a * 256 / b)) == 0  # A/d_tp = B/d_zero, d_zero d_tp = n
    assert sp.simplify(r.tp * r.zero - 256) == 0
    assert [t for _, t in r.nearest()] == [2, 4]


GPT2_PLANS = [c for axes in meshes(chip("h100-sxm"), 8) for c in candidates(model("gpt2"),
                                                                            axes, 64)]


@settings(max_examples=examples(20), deadline=None)
@given(st.sampled_from(GPT2_PLANS))
def test_every_plan_has_lower_below_upper_and_its_states_follow_zero(c) -> None:  # type: ignore[no-untyped-def]
    p = train(model("gpt2"), mesh(c.spec, "h100-sxm"), parse_strategy(c.strategy), batch=64,
              context=1024, options=StepOptions(microbatches=c.degrees[5]))
    assert p.t_lower <= p.t_upper <= len(p.terms) * p.t_lower
    states = [p.memory[k] for k in ("weights", "gradients", "optimizer")]
    # ZeRO shards the optimizer state from stage 1, gradients from 2, weights from 3
    assert (states[2] / states[0] == 6) is (c.stage == 0 or c.degrees[1] == 1 or c.stage == 3)


def test_an_interleaved_pipeline_shrinks_its_bubble_v_times() -> None:
    # Narayanan et al. 2021 (section 2.2.2): v chunks per stage cut the fill and drain to
    # (p - 1)/v chunk times; Korthikanti et al. 2022 (section 4.2.3): the first stage then
    # holds 1 + (p - 1)/(p v) times the activations; each microbatch leaves a stage v times
    cfg, m = model("megatron-gpt-175b"), mesh("X=8,Y=8", "a100-80gb")
    strategy = parse_strategy("pp=X,tp=Y,sp")

    def plan(v: int) -> Any:
        return train(cfg, m, strategy, batch=64, context=2048, optimizer="adam-megatron",
                     options=StepOptions(recompute="selective", microbatches=64, interleave=v))
    one, three = plan(1), plan(3)
    assert one.bound == three.bound == "compute"
    assert three.terms["pipeline bubble"].time * 3 == one.terms["pipeline bubble"].time
    assert three.memory["activations"] == \
        one.memory["activations"] * (1 + sp.Rational(7, 8 * 3))
    def sent(p: Any, what: str) -> sp.Expr:
        return sum((t for u, name, t, _ in p.uses
                    if name.startswith("pp over") and u.what.startswith(what)), sp.S.Zero)
    assert sent(three, "layer output") == 3 * sent(one, "layer output") != 0
    # the tied embeddings' gradient all-reduce between the end stages runs once a step
    assert sent(three, "word embedding") == sent(one, "word embedding") != 0


@pytest.mark.parametrize(("spec", "v", "micro", "message"), [
    ("tp=X", 2, 8, "interleaving splits a pipeline's stages: give a pp axis"),
    ("pp=X", 5, 8, "llama-2-7b: 32 layers do not split into 8 stages x 5 chunks"),
    ("pp=X", 2, 12, "an interleaved schedule runs microbatches in groups of the 8 stages, "
                    "got 12"),
])
def test_an_interleaving_that_cannot_run_is_refused(spec: str, v: int, micro: int,
                                                    message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        train(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy(spec), batch=96,
              context=2048, options=StepOptions(microbatches=micro, interleave=v))


def test_a_verb_refuses_the_step_options_it_does_not_take() -> None:
    m = mesh("X=8", "h100-sxm")
    with pytest.raises(InputError, match=r"recompute='full' is a training choice, not one "
                                         "of a serving plan") as exc:
        serve(LLAMA, m, batch=8, context=128, options=StepOptions(recompute="full"))
    assert exc.value.where == "recompute"
    with pytest.raises(InputError, match=r"dtype='int8' is a serving choice, not one of a "
                                         "training plan"):
        train(LLAMA, m, parse_strategy("tp=X"), batch=8, context=128,
              options=StepOptions(dtype="int8"))
    with pytest.raises(InputError, match="a training step's kernels take an attention "
                                         "choice only"):
        train(LLAMA, m, parse_strategy("tp=X"), batch=8, context=128,
              options=StepOptions(kernel=Kernel(causal=True)))
    with pytest.raises(InputError, match="microbatches=4 is a training choice, not one of "
                                         "a model step"):
        device_step(LLAMA, "decode", m, {"tp": ("X",)}, batch=8, context=128,
                    options=StepOptions(microbatches=4))


def test_a_training_step_without_a_kernel_materialises_its_attention() -> None:
    # the verbs' defaults differ and are said: a training step's attention is materialised
    m, s = mesh("X=8", "h100-sxm"), parse_strategy("tp=X")
    plain = train(LLAMA, m, s, batch=8, context=2048)
    given = train(LLAMA, m, s, batch=8, context=2048,
                  options=StepOptions(kernel=Kernel("materialised")))
    flash = train(LLAMA, m, s, batch=8, context=2048,
                  options=StepOptions(kernel=Kernel("flash")))
    assert plain.t_lower == given.t_lower and plain.memory == given.memory
    assert flash.memory["activations"] < plain.memory["activations"]
