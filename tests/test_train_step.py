"""The training step is the device step's ops timed by the engine: its forward is a serving
prefill to the last digit, its prediction never beats T_lower, and the overlap rule is one
named choice."""

from __future__ import annotations

import math
from typing import Any

import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.models import model, params
from symroof.models.config import ModelConfig
from symroof.models.layers import Kernel
from symroof.parallel.mesh import mesh
from symroof.plans.device_step import device_step
from symroof.plans.options import StepOptions
from symroof.plans.strategy import parse_strategy
from symroof.plans.train_step import op_overlapped, phase_terms, training_ops
from symroof.plans.training import train
from tests.conftest import examples, run_cli
from tests.test_one_step import configs

LLAMA = model("llama-2-7b")


@settings(max_examples=examples(6), deadline=None)
@given(cfg=configs(), context=st.sampled_from([16, 128]), tp=st.sampled_from([1, 2]))
def test_a_training_forward_is_a_serving_prefill_under_one_overlap(
        cfg: ModelConfig, context: int, tp: int) -> None:
    # the same ops, the same engine rooflines: per op overlap gives the prefill's T_lower
    # without its collectives, per phase overlap its compute and HBM terms
    m = mesh("X=2,Y=2", "h100-sxm")
    axes = {"dp": ("X",), "tp": ("Y",)} if tp == 2 else {"dp": ("X", "Y")}
    replicas = 4 // tp
    step = device_step(cfg, "prefill", m, axes, batch=4 * replicas, context=context,
                       options=StepOptions(kernel=Kernel(attention="materialised")))
    ops = training_ops(cfg, batch=4, context=context, tp=tp)
    serial = sp.Add(*(v for k, v in step.terms.items() if k not in ("compute", "hbm")))
    assert op_overlapped(ops, m.chip)["forward"] == step.t_lower - serial
    terms = phase_terms(ops, m.chip)["forward"]
    assert all(terms[k] == step.terms[k] for k in ("compute", "hbm"))


@settings(max_examples=examples(6), deadline=None)
@given(cfg=configs(), context=st.sampled_from([16, 128]),
       overlap=st.sampled_from(["op", "phase", "none"]))
def test_a_training_forward_is_a_serving_prefill_under_each_overlap_rule(
        cfg: ModelConfig, context: int, overlap: str) -> None:
    # no collective in either (data parallel only): one rule names one time, exactly
    from dataclasses import replace

    from symroof.plans.efficiency import PEAK
    m = mesh("X=4", "h100-sxm")
    step = device_step(cfg, "prefill", m, {"dp": ("X",)}, batch=16, context=context,
                       options=StepOptions(kernel=Kernel(attention="materialised"),
                                           efficiency=replace(PEAK, overlap=overlap)))
    ops = training_ops(cfg, batch=4, context=context, tp=1)
    terms = phase_terms(ops, m.chip)["forward"]
    forward = {"op": op_overlapped(ops, m.chip)["forward"], "phase": sp.Max(*terms.values()),
               "none": sp.Add(*terms.values())}[overlap]
    assert step.overlap == overlap
    assert step.t_lower == forward
    assert step.t_upper == sp.Add(*terms.values())


def test_serving_and_training_name_the_same_overlap_rules() -> None:
    from symroof.plans.efficiency import SERVING_OVERLAPS
    from symroof.plans.train_step import OVERLAPS
    assert set(SERVING_OVERLAPS) == set(OVERLAPS) == {"op", "phase", "none"}


def test_model_and_plan_serve_time_a_prefill_under_one_overlap_rule() -> None:
    import json
    for overlap in ("op", "phase", "none"):
        step = json.loads(run_cli("model", "llama-2-7b", "--prefill", "--batch", "8",
                                  "--context", "2048", "--mesh", "X=8", "--chip", "h100-sxm",
                                  "--overlap", overlap, "--json").stdout)["step"]
        served = json.loads(run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8",
                                    "--chip", "h100-sxm", "--batch", "8", "--context",
                                    "2048", "--overlap", overlap, "--json").stdout)["prefill"]
        assert served["overlap"] == step["overlap"] == overlap
        assert served["t_lower"] == step["t_lower"] and served["t_upper"] == step["t_upper"]
        assert served["latency"] == step["latency"]
    prefills = {o: json.loads(run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8",
                                      "--chip", "h100-sxm", "--batch", "8", "--context",
                                      "2048", "--overlap", o, "--json").stdout)["prefill"]
                for o in ("phase", "op", "none")}
    rules = [prefills[o]["latency_value"] for o in ("phase", "op", "none")]
    assert rules == sorted(rules)  # each rule overlaps less than the one before
    # t_lower stays a lower bound: under none it is the op rule's time, latency T_upper
    assert prefills["none"]["t_lower"] == prefills["op"]["t_lower"] == prefills["op"]["latency"]
    assert prefills["none"]["latency"] == prefills["none"]["t_upper"]
    assert prefills["phase"]["t_lower"] == prefills["phase"]["latency"]


def test_a_training_forward_on_8_h100_is_the_serving_prefill_of_its_batch() -> None:
    # the example: llama-2-7b, tp=8, 8 x 2048 tokens, attention materialised
    m = mesh("X=8", "h100-sxm")
    step = device_step(LLAMA, "prefill", m, {"tp": ("X",)}, batch=8, context=2048,
                       options=StepOptions(kernel=Kernel(attention="materialised")))
    plan = train(LLAMA, m, parse_strategy("tp=X"), batch=8, context=2048)
    for k in ("compute", "hbm"):
        assert plan.terms[k].phases["forward"] == step.terms[k]
    ops = training_ops(LLAMA, batch=8, context=2048, tp=8)
    serial = sp.Add(*(v for k, v in step.terms.items() if k not in ("compute", "hbm")))
    assert op_overlapped(ops, m.chip)["forward"] == step.t_lower - serial


@settings(max_examples=examples(8), deadline=None)
@given(cfg=configs(), spec=st.sampled_from(["dp=X+Y", "zero2=X,tp=Y", "fsdp=X,dp=Y",
                                            "dp=X,pp=Y"]),
       overlap=st.sampled_from(["phase", "op", "none"]),
       efficiency=st.sampled_from([None, "compute=0.5,hbm=0.8,nvlink=0.7"]))
def test_the_prediction_is_never_below_t_lower(cfg: ModelConfig, spec: str, overlap: str,
                                               efficiency: str | None) -> None:
    from symroof.plans.efficiency import PEAK, parse_fractions
    eff = PEAK if efficiency is None else parse_fractions(efficiency)
    m = mesh("X=2,Y=2", "h100-sxm")
    try:
        plan = train(cfg, m, parse_strategy(spec), batch=16, context=64,
                     options=StepOptions(overlap=overlap, efficiency=eff))
    except InputError:  # a model whose sizes do not split over the mesh
        assume(False)
        return
    assert plan.predicted is not None
    assert plan.predicted >= plan.t_lower
    assert plan.predicted <= plan.t_upper
    if overlap == "phase":  # full overlap: the prediction is T_lower itself
        assert plan.predicted == plan.t_lower
    if overlap == "none":
        assert plan.predicted == plan.t_upper


def test_per_op_overlap_adds_the_collectives_to_the_ops_overlapped_times() -> None:
    # zero-free data parallelism on 4 H100: one microbatch, the AllReduce in the backward
    m = mesh("X=4", "h100-sxm")
    plan = train(LLAMA, m, parse_strategy("dp=X"), batch=4, context=512,
                 options=StepOptions(overlap="op"))
    ops = training_ops(LLAMA, batch=1, context=512)
    timed = op_overlapped(ops, m.chip)
    reduce = plan.terms["dp over X (nvlink)"].time
    step = plan.terms["optimizer step"].time
    # the optimizer step: 2 + 12 bytes a parameter read (gradients, Adam's fp32 state) and
    # 2 + 12 written (bf16 weights, the state), at the H100's 3.35 TB/s
    assert step == 28 * params(LLAMA).total / (335 * 10**10)
    assert plan.predicted == timed["forward"] + timed["backward"] + reduce + step


def test_the_overlap_is_in_the_json_and_the_text() -> None:
    args = ["plan", "llama-2-7b", "--train", "--mesh", "X=8", "--chip", "h100-sxm",
            "--strategy", "tp=X", "--batch", "8", "--context", "2048"]
    import json
    data = json.loads(run_cli(*args, "--overlap", "op", "--json").stdout)
    assert data["overlap"] == "op"
    assert data["predicted_value"] >= data["t_lower_value"]
    text = run_cli(*args).stdout
    assert "predicted  100.7 ms  (overlap phase, at the efficiency stated)" in text
    bad = run_cli(*args, "--overlap", "kernel")
    assert bad.returncode == 2 and "--overlap" in bad.stderr
    serve = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                    "--strategy", "tp=X", "--overlap", "phase")
    assert serve.returncode == 0, serve.stderr
    assert "- latency under overlap phase: every term overlaps the others over the whole " \
           "step (the step takes its longest term); T_upper: nothing overlaps" in serve.stdout
    alone = run_cli("model", "llama-2-7b", "--overlap", "phase")
    assert (alone.returncode, alone.stdout) == (2, "")
    assert alone.stderr == ("symroof: error: --overlap: the overlap rule times a step: give "
                            "--decode or --prefill\n")


@pytest.mark.parametrize(("name", "tp", "pp"), [("llama-3-8b", 16, 1), ("llama-3-8b", 8, 2),
                                                ("llama-2-7b", 8, 1), ("llama-3-8b", 32, 1)])
def test_a_training_plan_holds_the_weights_a_serving_plan_holds(name: str, tp: int,
                                                                 pp: int) -> None:
    # one count: bf16 weights (adam-mixed, 2 bytes a parameter) are what `plan --serve`
    # charges on the same mesh, also where the tensor ranks outnumber the KV heads; with a
    # pipeline both hold each stage's part of the head block. The training plan's memory is
    # on the first stage (its microbatches in flight), the serving plan's on the last (the
    # final norm beside the untied head's V D/t, where the first holds the embedding's)
    from symroof.plans.serving import device_memory

    def served(stage: str | None) -> sp.Expr:
        return device_memory(cfg, tp, pp, 1, batch=sp.Integer(1), context=sp.Integer(256),
                             dtype="bf16", kv_dtype="bf16", stage=stage)["weights"]
    cfg = model(name)
    spec = f"X={tp}" + (f",Y={pp}" if pp > 1 else "")
    m = mesh(spec, "h100-sxm")
    strategy = "tp=X" + (",pp=Y" if pp > 1 else "")
    plan = train(cfg, m, parse_strategy(strategy), batch=4 * pp, context=256)
    assert plan.extra["memory_stage"] == "first"
    weights = served("first" if pp > 1 else None)
    if pp > 1:
        stages = plan.extra["memory_stages"]
        assert {w: stages[w]["weights"] for w in ("first", "last")} == {  # type: ignore[index]
            w: served(w) for w in ("first", "last")}
        assert served(None) == served("last") == weights + 2 * cfg.d_model
    else:
        assert weights == served("both")
    assert plan.memory["weights"] == weights
    assert plan.memory["gradients"] == weights
    assert plan.memory["optimizer"] == 6 * weights


# the searches the law samples: LLaMA-2-7B on 16 H100s at peak and the 22B of Megatron-LM
# on 16 A100s under the megatron-a100 calibration and its conventions, each under the three
# overlap rules (the calibration brings op; phase and none set by the user), every
# recomputation policy; batches of 48 and 24 sequences, so that the replica's batch splits
# into counts of microbatches other than a pipeline's p, 2p, 4p, ... (3p, fewer than p)
SEARCHES = [(name, rule) for name in ("llama-2-7b", "megatron-gpt-22b")
            for rule in ("phase", "op", "none")]
BATCH = {"llama-2-7b": 48, "megatron-gpt-22b": 24}
SEARCHED: dict[tuple[str, str], object] = {}


def _searched(name: str, rule: str) -> object:
    from symroof.hardware.catalog import chip
    from symroof.plans.calibration import parse_efficiency
    from symroof.plans.search import search
    if (name, rule) not in SEARCHED:
        calibrated = name != "llama-2-7b"
        eff = parse_efficiency("megatron-a100" if calibrated else None)
        SEARCHED[name, rule] = search(
            model(name), chip("a100-80gb" if calibrated else "h100-sxm"), 16,
            batch=BATCH[name], context=2048 if calibrated else 1024,
            recompute="any", efficiency=eff, overlap=rule, conventions=eff.conventions,
            optimizer="adam-megatron" if calibrated else "adam-mixed")
    return SEARCHED[name, rule]


def _stages(c: Any) -> int:
    """The pipeline stages of a searched candidate: the product of its pp axes' sizes."""
    sizes = {a: int(size) for a, size in (x.split("=") for x in c.spec.split(","))}
    axes = next((k[3:] for k in c.strategy.split(",") if k.startswith("pp=")), "")
    return math.prod(sizes[a] for a in axes.split("+") if a)


def _other_count(micro: int, stages: int) -> bool:
    """Whether ``micro`` microbatches are not p, 2p, 4p, ... for ``stages`` stages (with
    2 stages: 1, 3, 5, 6, 7, 9, ...)."""
    whole, rest = divmod(micro, stages)
    return bool(rest or whole & (whole - 1))


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(data=st.data())
def test_the_search_times_each_plan_as_the_plan_predicts(data: st.DataObject) -> None:
    # any candidate the search ranks (any mesh, strategy, microbatches, interleaving and
    # recomputation), rebuilt as a plan under the search's overlap rule, efficiency and
    # conventions: its predicted time (what the search ranks by), T_lower and memory are
    # the search's; a third of the draws among the interleaved pipelines, a third among
    # the pipelines whose microbatches are not p times a power of two
    from symroof.plans.calibration import parse_efficiency
    name, rule = data.draw(st.sampled_from(SEARCHES))
    found = _searched(name, rule)
    every = found.every  # type: ignore[attr-defined]
    pool = data.draw(st.sampled_from(["any", "interleaved", "other counts"]))
    if pool == "interleaved":
        every = [c for c in every if c.chunks > 1]
    elif pool == "other counts":
        every = [c for c in every if _stages(c) > 1 and _other_count(c.microbatches,
                                                                      _stages(c))]
    c = every[data.draw(st.integers(0, len(every) - 1))]
    calibrated = name != "llama-2-7b"
    eff = parse_efficiency("megatron-a100" if calibrated else None)
    chip_name = "a100-80gb" if calibrated else "h100-sxm"
    plan = train(model(name), mesh(c.spec, chip_name), parse_strategy(c.strategy),
                 batch=BATCH[name], context=2048 if calibrated else 1024,
                 optimizer="adam-megatron" if calibrated else "adam-mixed",
                 conventions=eff.conventions,
                 options=StepOptions(recompute=c.recompute, microbatches=c.microbatches,
                                     interleave=c.chunks, overlap=rule, efficiency=eff))
    assert plan.predicted is not None and plan.overlap == rule
    assert float(plan.predicted) == pytest.approx(c.predicted, rel=1e-9)
    assert float(plan.t_lower) == pytest.approx(c.t_lower, rel=1e-9)
    assert float(plan.memory["total"]) == pytest.approx(c.memory, rel=1e-9)


def test_the_search_ranks_by_the_predicted_time_and_under_phase_it_is_t_lower() -> None:
    for rule in ("phase", "op", "none"):
        found = _searched("llama-2-7b", rule)
        every = found.every  # type: ignore[attr-defined]
        times = [c.predicted for c in every]
        assert times == sorted(times)
        assert all(c.predicted >= c.t_lower * (1 - 1e-12) for c in every)
        if rule == "phase":
            assert all(c.predicted == c.t_lower for c in every)
        # the plan it returns is the best candidate rebuilt under its rule
        plan = found.plan  # type: ignore[attr-defined]
        assert plan.overlap == rule
        assert float(plan.predicted) == pytest.approx(every[0].predicted, rel=1e-9)


def test_the_search_runs_each_of_the_calibrations_conventions_as_the_plan() -> None:
    # the candidates where each convention moves the time: a pipeline split over tensor
    # ranks without sequence parallelism (its sends scattered, v of them a microbatch
    # interleaved), full recomputation (its tensor-parallel collectives rerun), with and
    # without sequence parallelism
    from symroof.plans.calibration import parse_efficiency
    eff = parse_efficiency("megatron-a100")
    every = _searched("megatron-gpt-22b", "op").every  # type: ignore[attr-defined]
    picks = [next(c for c in every if "pp" in c.strategy and "tp" in c.strategy
                  and not c.strategy.endswith(",sp") and c.recompute == "none"
                  and c.chunks == 1),
             next(c for c in every if "pp" in c.strategy and "tp" in c.strategy
                  and not c.strategy.endswith(",sp") and c.recompute == "none"
                  and c.chunks > 1),
             next(c for c in every if c.strategy.endswith(",sp") and c.recompute == "full"),
             next(c for c in every if "tp" in c.strategy and not c.strategy.endswith(",sp")
                  and c.recompute == "full")]
    for c in picks:
        plan = train(model("megatron-gpt-22b"), mesh(c.spec, "a100-80gb"),
                     parse_strategy(c.strategy), batch=BATCH["megatron-gpt-22b"],
                     context=2048, optimizer="adam-megatron", conventions=eff.conventions,
                     options=StepOptions(recompute=c.recompute, microbatches=c.microbatches,
                                         interleave=c.chunks, overlap="op", efficiency=eff))
        assert plan.predicted is not None
        assert float(plan.predicted) == pytest.approx(c.predicted, rel=1e-9), c


@pytest.mark.parametrize("d", [2, 4])
def test_a_data_parallel_megatron_run_pays_its_gradient_allreduce(d: int) -> None:
    # by hand: a ring AllReduce sends 2 (d - 1)/d of the fp32 gradients (adam-megatron: 4
    # bytes a parameter) through each GPU's scale-out port, one 200 Gb/s HDR adapter per
    # GPU (25 GB/s one way), at the calibration's fraction of it; one AllReduce per layer,
    # one for the head and one for the embedding, each 2 (d - 1) ring steps of NCCL's 2.7 us
    from symroof.plans.calibration import parse_efficiency
    cfg = model("megatron-gpt-22b")
    eff = parse_efficiency("megatron-a100")
    plan = train(cfg, mesh(f"X={d}@ib", "a100-80gb"), parse_strategy("dp=X"), batch=d, context=2048,
                 optimizer="adam-megatron", options=StepOptions(efficiency=eff))
    gradients = 4 * params(cfg).total
    latency = (cfg.layers + 2) * 2 * (d - 1) * sp.Rational(27, 10**7)
    expected = (sp.Rational(2 * (d - 1), d) * gradients / (25 * 10**9 * eff.of("ib"))
                + latency)
    reduce = plan.terms["dp over X (ib)"]
    assert reduce.time == expected
    assert set(reduce.phases) == {"backward"}  # it overlaps the backward's compute
    assert plan.predicted is not None and plan.predicted >= plan.terms["compute"].time


def test_model_prefill_and_plan_train_print_one_forward() -> None:
    # the command lines: `model --prefill` on the mesh and the forward phase of
    # `plan --train` (tp=8 over 8 H100, 8 x 2048 tokens, attention materialised)
    import json
    prefill = json.loads(run_cli("model", "llama-2-7b", "--prefill", "--batch", "8",
                                 "--context", "2048", "--mesh", "X=8", "--chip", "h100-sxm",
                                 "--attention", "materialised", "--json").stdout)["step"]
    train_ = json.loads(run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=8", "--chip",
                                "h100-sxm", "--strategy", "tp=X", "--batch", "8",
                                "--context", "2048", "--json").stdout)
    for term in ("compute", "hbm"):
        assert train_["phases"][term]["forward"] == prefill["terms"][term]


@pytest.mark.slow
def test_the_search_counts_the_weights_of_wide_tensor_parallelism_as_the_plan() -> None:
    # llama-3-8b has 8 KV heads: at tp = 16 or 32 each rank holds a replica of its KV head
    from symroof.hardware.catalog import chip
    from symroof.plans.search import search
    cfg = model("llama-3-8b")
    found = search(cfg, chip("h100-sxm"), 32, batch=64, context=1024)
    wide = [c for c in found.every if c.spec == "X=32" and c.strategy.startswith("tp=X")]
    assert wide
    for c in wide[:3]:
        plan = train(cfg, mesh(c.spec, "h100-sxm"), parse_strategy(c.strategy), batch=64,
                     context=1024,
                     options=StepOptions(recompute=c.recompute, microbatches=c.microbatches))
        assert float(plan.memory["total"]) == pytest.approx(c.memory, rel=1e-9)
        assert float(plan.t_lower) == pytest.approx(c.t_lower, rel=1e-9)


def test_a_step_under_overlap_none_prints_its_lower_bound_and_its_latency_apart() -> None:
    from symroof import chip
    from symroof.core.printer import si
    from symroof.plans.efficiency import Efficiency
    step = device_step(LLAMA, "prefill", None, {}, batch=1, context=128, chip=chip("h100-sxm"),
                       options=StepOptions(efficiency=Efficiency(overlap="none")))
    op = device_step(LLAMA, "prefill", None, {}, batch=1, context=128, chip=chip("h100-sxm"))
    assert step.latency == step.t_upper and step.lower == op.latency < step.latency
    out = run_cli("model", "llama-2-7b", "--prefill", "--batch", "1", "--context", "128",
                  "--chip", "h100-sxm", "--overlap", "none").stdout.splitlines()
    row = next(line for line in out if line.startswith("step "))
    assert row.endswith(si(op.latency, "s"))  # the T_lower column: the op rule's time
    assert f"latency {si(step.t_upper, 's')} (overlap none: T_upper)" in out


def test_the_search_runs_counts_other_than_p_times_a_power_of_two_where_they_win() -> None:
    # GPT-3 175B on 64 A100s, a batch of 48 under the calibration: the chosen plan's 2 ZeRO
    # replicas hold 24 sequences each over 8 stages; of p, 2p, 4p, ... only 8 divides 24,
    # microbatches of 3 sequences, 8 of them in flight on the first stage: selective
    # recomputation does not fit. 24 microbatches of one sequence (3p) do, and win
    from symroof.hardware.catalog import chip
    from symroof.plans.calibration import parse_efficiency
    from symroof.plans.search import search
    eff = parse_efficiency("megatron-a100")
    cfg = model("megatron-gpt-175b")
    found = search(cfg, chip("a100-80gb"), 64, batch=48, context=2048, recompute="any",
                   efficiency=eff, overlap="op", conventions=eff.conventions,
                   optimizer="adam-megatron")
    best = found.best
    assert (_stages(best), best.microbatches, best.recompute) == (8, 24, "selective")
    powers = [c for c in found.every if not _other_count(c.microbatches, _stages(c))]
    assert powers and min(c.predicted for c in powers) > best.predicted
    options = StepOptions(microbatches=8, interleave=best.chunks, recompute="selective",
                          overlap="op", efficiency=eff)
    eight = train(cfg, mesh(best.spec, "a100-80gb"), parse_strategy(best.strategy), batch=48,
                  context=2048, optimizer="adam-megatron", conventions=eff.conventions,
                  options=options)
    assert not eight.fits
