"""A pipeline's stages are not alike: the first runs the embedding, the last the final norm and
the output head, each with its collectives and its parameters. Laws: the closed form of a
step with such stages is the played 1F1B schedule, a training plan's T_lower and T_upper
are that schedule of its own stages' times (each phase its longest term, or its terms one
after another), and its memory is the larger of its end stages' accounts. A pipelined
serving step's latency is its stages' own times (each the step of a one-stage shard) plus
the sends, its throughput the slowest stage's, and its stages are a training forward's."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import cast

import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.models.config import ModelConfig
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.pipeline import interleaved_cost, played_makespan
from symroof.plans.strategy import parse_strategy
from symroof.plans.train_step import phase_terms, stage_extras, training_ops
from symroof.plans.training import train
from tests.conftest import run_cli
from tests.test_one_step import configs

TIMES = st.integers(1, 40).map(Fraction)
EXTRA = st.integers(0, 40).map(Fraction)


@settings(max_examples=300, deadline=None)
@given(p=st.integers(2, 8), m=st.integers(1, 12), f=TIMES, b=TIMES, ef=EXTRA, eb=EXTRA,
       hf=EXTRA, hb=EXTRA)
def test_a_heavier_last_stage_adds_its_extra_per_microbatch_and_the_first_once(
        p: int, m: int, f: Fraction, b: Fraction, ef: Fraction, eb: Fraction, hf: Fraction,
        hb: Fraction) -> None:
    if ef + eb > hf + hb:  # the form holds where the last stage adds at least the first's
        ef, eb, hf, hb = hf, hb, ef, eb
    forward = [f + ef, *[f] * (p - 2), f + hf]
    backward = [b + eb, *[b] * (p - 2), b + hb]
    closed = interleaved_cost(p, m, 1, sp.Rational(f), sp.Rational(b)).makespan \
        + m * (hf + hb) + ef + eb
    assert played_makespan(forward, backward, m) == Fraction(str(closed))


def _fraction(x: sp.Expr) -> Fraction:
    q = sp.Rational(x)
    return Fraction(int(q.p), int(q.q))


@settings(max_examples=8, deadline=None)
@given(pp=st.sampled_from([2, 4]), micro=st.integers(1, 6),
       name=st.sampled_from(["llama-2-7b", "megatron-gpt-22b"]))
def test_a_training_plans_step_is_its_stages_played(pp: int, micro: int, name: str) -> None:
    # each stage's phase takes its longest term: the layers' compute and HBM time, the first
    # stage's with the embedding's, the last's with the final norm's and the head's, and
    # every collective of the plan but the head block's, which only the stage running the
    # block's ops runs; played as 1F1B, the makespan is the plan's T_lower
    cfg, h100 = model(name), chip("h100-sxm")
    plan = train(cfg, mesh(f"X={pp},Y=2,Z=2", h100), parse_strategy("pp=X,tp=Y,dp=Z"),
                 batch=2 * micro, context=2048, options=StepOptions(microbatches=micro))
    ops = training_ops(cfg, batch=1, context=2048, tp=2, pp=pp)
    busiest = phase_terms(ops, h100)
    extra = {w: phase_terms(part, h100) for w, part in stage_extras(ops).items()}
    comms = {k: x for k, x in plan.terms.items()
             if k not in ("compute", "hbm", "optimizer step", "pipeline bubble")}
    assert comms, "a pipelined tensor-parallel plan sends and reduces"
    # the head block's collectives run on the stage that runs its ops: the output head's
    # on the last, the embedding's on the first (the plan's collectives by block)
    blocks = {"last": "head", "first": "embedding"}
    alone = {(w, name, u.phase): sum((t for x, n, t, _ in plan.uses
                                      if n == name and x.block == b and x.phase == u.phase),
                                     sp.S.Zero)
             for w, b in blocks.items() for u, name, _, _ in plan.uses}
    assert all(any(v != 0 for (w, _, _), v in alone.items() if w == x) for x in blocks)

    def stage(ph: str, drop: tuple[str, ...], rule: str) -> Fraction:
        own = [busiest[ph][k] - sum((extra[d][ph].get(k, 0) for d in drop), sp.S.Zero)
               for k in ("compute", "hbm")]
        each = [*own, *((x.phases.get(ph, 0) - sum((alone.get((d, k, ph), 0) for d in drop),
                                                   sp.S.Zero)) / micro
                        for k, x in comms.items())]
        return _fraction(sp.Max(*each) if rule == "phase" else sp.Add(*each))

    order = [("last",), *[("first", "last")] * (pp - 2), ("first",)]
    opt = plan.terms["optimizer step"].time
    for rule, bound in (("phase", plan.t_lower), ("none", plan.t_upper)):
        played = played_makespan([stage("forward", d, rule) for d in order],
                                 [stage("backward", d, rule) for d in order], micro)
        assert played == _fraction(bound - opt), rule
        # every stage taken as the busiest one is the slower bound it replaced
        whole = played_makespan([stage("forward", (), rule)] * pp,
                                [stage("backward", (), rule)] * pp, micro)
        assert played < whole, rule


# the memory account per stage: the first stage holds its layers, the word embedding (and
# learned positions) and min(p, m) microbatches in flight; the last its layers, the final norm
# and the output head (tied: Megatron-LM's copy of the word embeddings) and one microbatch


@settings(max_examples=60, deadline=None)
@given(p=st.integers(2, 8), m=st.integers(1, 16))
def test_each_end_stage_holds_what_the_played_schedule_keeps_in_flight(p: int, m: int) -> None:
    from symroof.plans.pipeline import in_flight, schedule
    played = schedule(p, m).in_flight
    assert in_flight(p, m, 1, "first") == played[0]
    assert in_flight(p, m, 1, "last") == played[-1] == 1


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 8), groups=st.integers(2, 6), v=st.integers(2, 4))
def test_interleaved_the_first_stage_holds_megatrons_warm_up_as_korthikanti_counts_it(
        p: int, groups: int, v: int) -> None:
    # Megatron-LM warms up (p - s - 1) 2 + (v - 1) p chunks on stage s and runs one more
    # before its first backward, each chunk 1/v of the stage: on the first stage that is
    # Korthikanti et al.'s p (1 + (p - 1)/(p v)) (m > p), on the last ((v - 1) p + 1)/v
    from symroof.plans.pipeline import in_flight
    m = groups * p
    for stage, s in (("first", 0), ("last", p - 1)):
        chunks = min((p - s - 1) * 2 + (v - 1) * p + 1, m * v)
        assert in_flight(p, m, v, stage) == sp.Rational(chunks, v)


def _chunk_peak(p: int, m: int, v: int, stage: int, chunk: int) -> int:
    """The most microbatches whose forward through ``chunk`` ran and whose backward did not,
    on pipeline stage ``stage``, playing Megatron-LM's interleaved order of one stage's work
    (``forward_backward_pipelining_with_interleaving``): (p - s - 1) 2 + (v - 1) p warm-up
    forwards (all of them if that is as many), then a forward and a backward in turn, then
    the rest of the backwards; the k-th forward runs chunk (k // p) mod v, the k-th backward
    chunk v - 1 - (k // p) mod v (microbatches in groups of p)."""
    total = m * v
    warm = min((p - stage - 1) * 2 + (v - 1) * p, total)
    order = [("F", k) for k in range(warm)]
    for j in range(total - warm):
        order += [("F", warm + j), ("B", j)]
    order += [("B", j) for j in range(total - warm, total)]
    held = peak = 0
    for kind, k in order:
        runs = (k // p) % v if kind == "F" else v - 1 - (k // p) % v
        if runs == chunk:
            held += 1 if kind == "F" else -1
            peak = max(peak, held)
    return peak


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 8), groups=st.integers(1, 6), v=st.integers(2, 4))
def test_interleaved_the_ends_hold_what_megatrons_played_order_keeps(p: int, groups: int,
                                                                     v: int) -> None:
    # the embedding runs in the first stage's first chunk, the head in the last stage's last
    from symroof.plans.pipeline import ends_in_flight
    m = groups * p
    assert ends_in_flight(p, m, v, "first") == (_chunk_peak(p, m, v, 0, 0), 0)
    assert ends_in_flight(p, m, v, "last") == (0, _chunk_peak(p, m, v, p - 1, v - 1))


def _tiny(tied: bool) -> ModelConfig:
    # one layer a stage over two stages; tied: GPT's learned positions and shared head
    return ModelConfig("tiny", layers=2, d_model=64, d_ff=256, heads=4, kv_heads=2,
                       head_dim=16, vocab=1000, tied_embeddings=tied,
                       positions="learned" if tied else "rope",
                       max_positions=128 if tied else 0)


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("micro", [1, 2, 4])
def test_one_layer_a_stage_by_hand(tied: bool, micro: int) -> None:
    cfg = _tiny(tied)
    D, F, N, K, H, V = 64, 256, 4, 2, 16, 1000
    layer = D * N * H + 2 * D * K * H + N * H * D + 3 * D * F + 2 * D  # rmsnorm, gated
    first = layer + V * D + (128 * D if tied else 0)  # word embedding (and positions)
    last = layer + V * D + D  # the head (tied: its own copy of the embedding), final norm
    h100 = chip("h100-sxm")
    plan = train(cfg, mesh("X=2", h100), parse_strategy("pp=X"), batch=micro, context=128,
                 options=StepOptions(microbatches=micro))
    alone = train(cfg, mesh("X=1", h100), parse_strategy("dp=X"), batch=1, context=128)
    per_layer = alone.memory["activations"] / 2  # one sequence's, the whole model's / L
    # outside the layers (no dropout: nothing on the first stage), on the last for one
    # microbatch of one sequence: the final norm's and the head's bf16 inputs, fp32 logits
    outside = (2 * D + 2 * D + 4 * V) * 128
    account = {"first": 16 * first + per_layer * min(2, micro),
               "last": 16 * last + per_layer + outside}  # adam-mixed: 2 + 2 + 12 a parameter
    stages = plan.extra["memory_stages"]
    assert {k: v["total"] for k, v in stages.items()} == account  # type: ignore[attr-defined]
    largest = max(account, key=lambda k: (account[k], k == "first"))
    assert plan.extra["memory_stage"] == largest
    assert plan.memory["total"] == max(account.values())
    assert plan.memory["weights"] == 2 * (first if largest == "first" else last)
    # each stage updates its own parameters; the step waits for the one holding the most
    from symroof.plans.train_step import optimizer_time
    most = max(first, last)
    states = {"weights": 2 * most, "gradients": 2 * most, "optimizer": 12 * most}
    assert plan.terms["optimizer step"].time == optimizer_time(states, h100)
    note = next(x for x in plan.assumptions if x.startswith("memory per device"))
    assert note.startswith(f"memory per device: the {largest} stage's, the larger account")
    assert ("its own copy of the word embeddings" in note) is tied


MODELS = ["llama-2-7b", "megatron-gpt-22b", "llama-3-8b"]


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(MODELS), pp=st.sampled_from([1, 2, 4]), tp=st.sampled_from([1, 2]),
       micro=st.integers(1, 8))
def test_the_plans_memory_is_its_largest_stages_account(name: str, pp: int, tp: int,
                                                        micro: int) -> None:
    # each stage's account summed by hand from its parameters (the layers' 1/p, the head
    # block's part that stage holds) and the activations in flight on it; the plan's memory
    # is the larger; without a pipeline the one stage holds every head-block part
    from symroof.plans.pipeline import in_flight
    from symroof.plans.train_step import device_params, head_params
    cfg = model(name)
    spec = f"X={tp}" + (f",Y={pp}" if pp > 1 else "")
    strategy = "tp=X" + (",pp=Y" if pp > 1 else "")
    plan = train(cfg, mesh(spec, "h100-sxm"), parse_strategy(strategy), batch=micro,
                 context=512, options=StepOptions(microbatches=micro))
    whole = train(cfg, mesh(f"X={tp}", "h100-sxm"), parse_strategy("tp=X"), batch=1,
                  context=512)
    head = head_params(cfg, tp, pp)
    layers = (device_params(cfg, tp, 1) - head_params(cfg, tp, 1)["both"]) / pp
    if pp == 1:
        assert plan.memory == whole.memory  # microbatches of one sequence either way
        assert plan.memory["weights"] == 2 * (layers + head["both"])
        assert "memory_stages" not in _json(plan)
        return
    acts = whole.memory["activations"] / pp  # one microbatch of one sequence on a stage
    # outside the layers (Korthikanti et al. 2022, section 4.3; no sequence parallelism): the
    # embedding's dropout mask for min(p, m) microbatches on the first stage, the final
    # norm's and the head's bf16 inputs and the fp32 logits (split with the vocabulary) on
    # the last for one
    D, V = cfg.d_model, cfg.vocab
    outside = {"first": (D if cfg.dropout else 0) * 512 * min(pp, micro),
               "last": (2 * D + 2 * D + sp.Rational(4 * V, tp)) * 512}
    account = {w: 16 * (layers + head[w]) + acts * in_flight(pp, micro, 1, w) + outside[w]
               for w in ("first", "last")}
    assert plan.memory["total"] == max(account.values())
    assert plan.extra["memory_stage"] == ("last" if account["last"] > account["first"]
                                          else "first")
    data = _json(plan)
    assert data["memory_stage"] == plan.extra["memory_stage"]
    assert data["memory_stages"]["last"]["total"] == str(account["last"])


def _tiny_dropout(layers: int = 2) -> ModelConfig:
    return ModelConfig("tiny-dropout", layers=layers, d_model=64, d_ff=256, heads=4,
                       kv_heads=2, head_dim=16, vocab=1000, dropout=True)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_the_activations_outside_the_layers_by_hand(recompute: str) -> None:
    # Korthikanti et al. 2022, section 4.3, per sequence of s tokens (b = 1, h = D = 64,
    # v = 1000, t = 2): the embedding's dropout mask s h p / t bytes on the first stage (p
    # microbatches), the final norm's input 2 s h / t, the output head's input 2 s h / t and
    # the fp32 logits 4 s v / t on the last (for one microbatch); without sequence
    # parallelism the D-wide ones are whole on every tensor rank; no recomputation policy
    # reruns them
    s, h, v, t = 128, 64, 1000, 2
    key = "activations_outside_layers"

    def stages(spec: str, strategy: str, micro: int, interleave: int = 1,
               layers: int = 2) -> dict[str, sp.Expr]:
        plan = train(_tiny_dropout(layers), mesh(spec, "h100-sxm"), parse_strategy(strategy),
                     batch=micro, context=s,
                     options=StepOptions(microbatches=micro, recompute=recompute,
                                         interleave=interleave))
        got = cast(dict, plan.extra["memory_stages"]) or {"one": plan.memory}
        for part in got.values():  # the part is in the total
            assert part["total"] == sum(x for k, x in part.items() if k != "total")
        return {k: x[key] for k, x in got.items()}

    # a pipeline of 2 stages over 2 tensor ranks, 4 microbatches of one sequence
    assert stages("X=2,Y=2", "pp=X,tp=Y,sp", 4) == {
        "first": Fraction(s * h * 2, t), "last": Fraction(2 * s * h + 2 * s * h + 4 * s * v, t)}
    assert stages("X=2,Y=2", "pp=X,tp=Y", 4) == {
        "first": s * h * 2, "last": 2 * s * h + 2 * s * h + Fraction(4 * s * v, t)}
    # fewer microbatches than stages: the first holds m of them
    assert stages("X=2,Y=2", "pp=X,tp=Y,sp", 1)["first"] == Fraction(s * h * 1, t)
    # interleaved over 2 chunks of one layer: the first chunk holds 2 p microbatches
    # (Megatron-LM's schedule: (p - 1) 2 + (v - 1) p warm-up forwards, then one per backward)
    assert stages("X=2,Y=2", "pp=X,tp=Y,sp", 8, 2, 4)["first"] == Fraction(s * h * 4, t)
    # without a pipeline the one stage holds both, for one microbatch
    assert stages("Y=2", "tp=Y,sp", 4) == {
        "one": Fraction(s * h + 2 * s * h + 2 * s * h + 4 * s * v, t)}


def test_the_outside_activations_are_in_the_json_and_the_assumptions() -> None:
    plan = train(_tiny_dropout(), mesh("X=2", "h100-sxm"), parse_strategy("pp=X"), batch=4,
                 context=128, options=StepOptions(microbatches=4))
    stages = cast(dict, _json(plan)["memory_stages"])
    assert stages["first"]["activations_outside_layers"] == str(64 * 128 * 2)
    assert stages["last"]["activations_outside_layers"] == str((4 * 64 + 4 * 1000) * 128)
    note = next(x for x in plan.assumptions if x.startswith("activations outside the layers"))
    assert note == (
        "activations outside the layers (Korthikanti et al. 2022, section 4.3), under every "
        "recomputation policy: the embedding's dropout mask (1 byte an element) on the first "
        "stage for min(p, m) microbatches, the final norm's and the output head's inputs "
        "(bf16) and the logits (fp32) on the last for 1; the logits split over the tensor "
        "ranks with the vocabulary, the rest whole on every rank (no sequence parallelism)")


def _json(plan: object) -> dict[str, object]:
    from symroof.plans.result import Result
    return Result(mode="train", train=plan).to_json()  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["megatron-gpt-22b", "llama-2-7b"])
def test_tied_embeddings_all_reduce_the_two_copies_gradients_on_the_last_stage(
        name: str) -> None:
    # Megatron-LM's last stage keeps a copy of the word embeddings for its head and all-reduces
    # its gradients with the first stage's once per step: two ranks, an exchange of V D/t
    # gradient bytes each way over the pipeline's link, charged where the head runs (the
    # last stage; the played-schedule law above holds with it); an untied head has no copy
    cfg = model(name)
    a100 = chip("a100-80gb")
    plan = train(cfg, mesh("X=4,Y=2", a100), parse_strategy("pp=X,tp=Y"), batch=8,
                 context=2048, options=StepOptions(microbatches=8))
    copies = [(u, t, b) for u, n, t, b in plan.uses if u.what.startswith("word embedding")]
    if not cfg.tied_embeddings:
        assert not copies
        return
    (u, time, size), = copies
    assert (u.block, u.phase, u.per_step) == ("head", "backward", 1)
    assert size == cfg.vocab * cfg.d_model // 2 * 2  # bf16 gradients of a tensor rank's rows
    axis = mesh("X=4,Y=2", a100).axis("X")
    assert time == size / axis.bandwidth + axis.latency  # one hop each way at once
    alone = train(cfg, mesh("Y=2", a100), parse_strategy("tp=Y"), batch=8, context=2048,
                  options=StepOptions(microbatches=8))
    assert not any(u.what.startswith("word embedding") for u, *_ in alone.uses)


# serving holds the same weights per stage: the first stage the word embedding (and learned
# positions), the last the final norm and the output head (tied: its own copy)
@pytest.mark.parametrize("tied", [False, True])
def test_a_serving_plans_stages_by_hand(tied: bool) -> None:
    from symroof.plans.result import Result
    from symroof.plans.serving import serve
    cfg = _tiny(tied)
    D, F, N, K, H, V = 64, 256, 4, 2, 16, 1000
    layer = D * N * H + 2 * D * K * H + N * H * D + 3 * D * F + 2 * D  # rmsnorm, gated
    first = layer + V * D + (128 * D if tied else 0)  # word embedding (and positions)
    last = layer + V * D + D  # the head (tied: its own copy of the embedding), final norm
    kv = 2 * 128 * (2 * K * H * 2)  # 2 sequences of 128 tokens, one layer's K and V, bf16
    s = serve(cfg, mesh("X=2", "h100-sxm"), parse_strategy("pp=X"), batch=2, context=128)
    account = {"first": {"weights": 2 * first, "kv_cache": kv, "total": 2 * first + kv},
               "last": {"weights": 2 * last, "kv_cache": kv, "total": 2 * last + kv}}
    assert {k: dict(v) for k, v in s.memory_stages.items()} == account
    largest = "first" if tied else "last"  # the positions (128 D) outweigh the norm (D)
    assert s.memory_stage == largest
    assert s.memory == account[largest]
    note = next(x for x in s.assumptions if x.startswith("memory per device"))
    assert note.startswith(f"memory per device: the {largest} stage's, the larger account")
    assert ("its own copy of the word embeddings" in note) is tied
    data = Result(mode="serve", serve=s).to_json()
    assert data["memory_stage"] == largest
    assert data["memory_stages"]["first"]["weights"] == str(2 * first)
    assert data["memory_stages"]["last_value"]["weights"] == 2 * last


@settings(max_examples=6, deadline=None)
@given(name=st.sampled_from(MODELS), pp=st.sampled_from([1, 2, 4]), tp=st.sampled_from([1, 2]))
def test_a_serving_plan_holds_the_weights_a_training_plan_holds_on_each_stage(
        name: str, pp: int, tp: int) -> None:
    # one question, one answer: the weight bytes `plan --serve` charges a stage are the
    # parameters a training plan holds on it (train_step.device_params) times the bf16 bytes,
    # each end stage's and the larger one's; without a pipeline the one stage holds it all
    from symroof.plans.result import Result
    from symroof.plans.serving import serve
    from symroof.plans.train_step import device_params
    cfg = model(name)
    spec = f"X={tp}" + (f",Y={pp}" if pp > 1 else "")
    strategy = parse_strategy("tp=X" + (",pp=Y" if pp > 1 else ""))
    m = mesh(spec, "h100-sxm")
    served = serve(cfg, m, strategy, batch=4 * pp, context=256)
    trained = train(cfg, m, strategy, batch=4 * pp, context=256)
    if pp == 1:
        assert served.memory["weights"] == 2 * device_params(cfg, tp, 1)
        assert served.memory_stages == {}
        assert "memory_stages" not in Result(mode="serve", serve=served).to_json()
        return
    stages = trained.extra["memory_stages"]
    for w in ("first", "last"):
        assert served.memory_stages[w]["weights"] == 2 * device_params(cfg, tp, pp, w)
        assert served.memory_stages[w]["weights"] == stages[w]["weights"]  # type: ignore[index]
    held = {w: served.memory_stages[w]["weights"] for w in ("first", "last")}
    assert served.memory_stage == ("last" if held["last"] > held["first"] else "first")
    assert served.memory["weights"] == max(held.values())


# a pipelined serving step (``device_step``): the token's path is each stage's own step, one
# after another, with a send between two; pp batches in flight run at the slowest stage's rate

OWN = {"first": ("embedding",), "middle": (), "last": ("final norm", "output head")}


def _one_stage(cfg: ModelConfig, pp: int, tp: int, stage: str, phase: str, batch: int,
               context: int, overlap: str) -> sp.Expr:
    """A stage's time as the step of a one-stage shard: the device step of the model cut to
    a stage's layers on the tensor axes alone (no pipeline), less the head block's ops the
    stage does not run (the first runs the embedding, the last the final norm and the head),
    each op with the collectives after it, under ``overlap``."""
    from dataclasses import replace

    from symroof.plans.device_step import device_step
    part = replace(cfg, layers=cfg.layers // pp)
    h100 = chip("h100-sxm")
    options = StepOptions(overlap=overlap)
    if tp > 1:
        step = device_step(part, phase, mesh(f"Y={tp}", h100), {"tp": ("Y",)}, batch=batch,
                           context=context, options=options)
    else:
        step = device_step(part, phase, None, {}, batch=batch, context=context, chip=h100,
                           options=options)
    rows = [r for r in step.roofline.rows if r.block.name != "head" or r.op.name in OWN[stage]]
    terms: dict[str, sp.Expr] = {}
    for r in rows:
        for k, v in r.roofline.terms.items():
            terms[k] = terms.get(k, sp.S.Zero) + r.count * v
    return {"op": sp.Add(*(r.count * r.roofline.t_lower for r in rows)),
            "none": sp.Add(*(r.count * r.roofline.t_upper for r in rows)),
            "phase": sp.Max(*terms.values())}[overlap]


@settings(max_examples=12, deadline=None)
@given(cfg=configs(), pp=st.sampled_from([2, 4]), tp=st.sampled_from([1, 2]),
       phase=st.sampled_from(["prefill", "decode"]), batch=st.sampled_from([1, 8]),
       context=st.sampled_from([64, 512]), overlap=st.sampled_from(["op", "phase", "none"]))
def test_a_pipelined_steps_latency_is_its_stages_steps_and_the_sends(
        cfg: ModelConfig, pp: int, tp: int, phase: str, batch: int, context: int,
        overlap: str) -> None:
    from symroof.parallel.collectives import collective
    from symroof.plans.device_step import device_step
    assume(cfg.layers % pp == 0)
    m = mesh(f"X={pp},Y={tp}" if tp > 1 else f"X={pp}", "h100-sxm")
    axes = {"pp": ("X",), **({"tp": ("Y",)} if tp > 1 else {})}
    step = device_step(cfg, phase, m, axes, batch=batch, context=context,
                       options=StepOptions(overlap=overlap))
    names = ["first", *(["middle"] if pp > 2 else []), "last"]
    own = {w: _one_stage(cfg, pp, tp, w, phase, batch, context, overlap) for w in names}
    tokens = batch * (context if phase == "prefill" else 1)
    hop = collective("permute", tokens * cfg.d_model * 2, "X", m)
    send = hop.bandwidth_time + hop.latency_time
    # a decode step's sampled tokens (int32 ids, one a sequence) go back to the first stage
    ids = collective("permute", batch * 4, "X", m)
    back = ids.bandwidth_time + ids.latency_time if phase == "decode" else 0
    count = {w: pp - 2 if w == "middle" else 1 for w in names}
    sends = (pp - 1) * send + back
    assert step.latency == sp.Add(*(count[w] * own[w] for w in names)) + sends
    upper = {w: _one_stage(cfg, pp, tp, w, phase, batch, context, "none") for w in names}
    assert step.t_upper == sp.Add(*(count[w] * upper[w] for w in names)) + sends
    # pp batches in flight: the slowest stage (its time and its send) sets the rate
    period = {w: own[w] + (send if w != "last" else back) for w in names}
    slowest = max(names, key=lambda w: (period[w], -names.index(w)))
    assert step.slowest == slowest
    assert step.throughput == tokens / period[slowest]
    assert step.throughput <= tokens * pp / step.latency  # never above alike stages' rate
    assert {s.name: s.count for s in step.stages} == count


@settings(max_examples=8, deadline=None)
@given(name=st.sampled_from(MODELS), pp=st.sampled_from([2, 4]), tp=st.sampled_from([1, 2]),
       overlap=st.sampled_from(["op", "phase", "none"]))
def test_a_pipelined_prefills_stages_are_a_training_forwards_stages(
        name: str, pp: int, tp: int, overlap: str) -> None:
    # one question, one answer: each stage of a serving prefill runs what the same stage of
    # a training forward runs (its compute and HBM terms to the last digit, the busiest
    # stage's less the head block's ops it does not run); without a tensor collective each
    # stage's time under one overlap rule is the training forward's stage under it
    from symroof.models.layers import Kernel
    from symroof.plans.device_step import device_step
    from symroof.plans.train_step import op_overlapped
    cfg, h100 = model(name), chip("h100-sxm")
    m = mesh(f"X={pp},Y={tp}" if tp > 1 else f"X={pp}", h100)
    axes = {"pp": ("X",), **({"tp": ("Y",)} if tp > 1 else {})}
    step = device_step(cfg, "prefill", m, axes, batch=2, context=1024,
                       options=StepOptions(kernel=Kernel(attention="materialised"),
                                           overlap=overlap))
    ops = training_ops(cfg, batch=2, context=1024, tp=tp, pp=pp)
    busiest = phase_terms(ops, h100)["forward"]
    extras = stage_extras(ops)
    extra = {w: phase_terms(part, h100)["forward"] for w, part in extras.items()}
    drops = {"first": ("last",), "middle": ("first", "last"), "last": ("first",)}
    for s in step.stages:
        trained = {k: busiest[k] - sum((extra[d].get(k, 0) for d in drops[s.name]), sp.S.Zero)
                   for k in ("compute", "hbm")}
        assert {k: s.terms[k] for k in trained} == trained, s.name
        if tp == 1:
            rule = {"phase": sp.Max(*trained.values()), "none": sp.Add(*trained.values()),
                    "op": op_overlapped(ops, h100)["forward"] - sum(
                        (op_overlapped(extras[d], h100)["forward"] for d in drops[s.name]),
                        sp.S.Zero)}[overlap]
            assert s.time == rule, s.name


def test_a_pipelined_serving_plan_names_its_slowest_stage_and_rates_requests_by_it() -> None:
    # llama-2-7b over 4 stages of 2 H100s: the last stage runs the output head (32000 x 4096
    # / 2 per device) and is the slowest; requests per second are the busiest stage's: its
    # prefill period and 256 decode periods for a batch of 16
    from symroof.plans.serving import serve
    m = mesh("X=4,Y=2", "h100-sxm")
    s = serve(model("llama-2-7b"), m, parse_strategy("pp=X,tp=Y"), batch=16, context=2048)
    for step in (s.prefill, s.decode):
        assert [x.name for x in step.stages] == ["first", "middle", "last"]
        assert step.slowest == "last"
        last = step.stages[-1]
        assert step.throughput == step.tokens / last.period
        sends = sp.Add(*(c.calls * c.time for c in step.comms if c.kind == "pp"))
        assert step.latency == sp.Add(*(x.count * x.time for x in step.stages)) + sends
    assert s.requests is not None
    busy = {x.name: x.period + 256 * y.period
            for x, y in zip(s.prefill.stages, s.decode.stages, strict=True)}
    assert s.requests["requests_per_s"] == 16 / max(busy.values())
    note = next(a for a in s.assumptions if a.startswith("a pipeline's stages"))
    assert note.endswith("(its time and its send: prefill the last stage's, decode the last "
                         "stage's)")
    data = json.loads(run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2",
                              "--strategy", "pp=X,tp=Y", "--chip", "h100-sxm", "--batch", "16",
                              "--context", "2048", "--json").stdout)
    assert data["decode"]["slowest_stage"] == "last"
    assert data["decode"]["stages"]["last"]["period"] == str(s.decode.stages[-1].period)
    assert data["decode"]["stages"]["middle"]["count"] == 2
    alone = json.loads(run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=8",
                               "--chip", "h100-sxm", "--batch", "16", "--context", "2048",
                               "--json").stdout)
    assert "stages" not in alone["decode"] and "slowest_stage" not in alone["decode"]
    text = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2", "--strategy",
                   "pp=X,tp=Y", "--chip", "h100-sxm", "--batch", "16", "--context",
                   "2048").stdout
    assert "decode pipeline stages:" in text and "last (slowest)" in text
    phase = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2", "--strategy",
                    "pp=X,tp=Y", "--chip", "h100-sxm", "--batch", "16", "--context", "2048",
                    "--overlap", "phase").stdout
    assert "(overlap phase, each stage's longest term; T_upper " in phase


# one question, one answer: the textbook account a text's claims are checked against
# (``models.training_memory``) and a training plan on one chip count the same parts alike;
# the plan adds only the activations outside the layers (Korthikanti et al. 2022, 4.3)

_TEXTBOOK_MODELS = ("gpt2", "llama-2-7b", "mistral-7b", "megatron-gpt-22b", "mixtral-8x7b",
                    "qwen1.5-moe-a2.7b")


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(_TEXTBOOK_MODELS),
       optimizer=st.sampled_from(["adam-mixed", "adam-megatron", "adam-8bit", "sgd-mixed"]),
       recompute=st.sampled_from(["none", "selective", "full"]),
       batch=st.integers(1, 4), context=st.sampled_from([128, 512, 2048]))
def test_a_one_chip_plan_is_the_textbook_account_and_the_activations_outside_the_layers(
        name: str, optimizer: str, recompute: str, batch: int, context: int) -> None:
    from symroof.models.memory import training_memory
    cfg = model(name)
    plan = train(cfg, mesh("X=1", "h100-sxm"), parse_strategy("dp=X"), batch=batch,
                 context=context, optimizer=optimizer,
                 options=StepOptions(recompute=recompute))
    book = training_memory(cfg, batch=batch, context=context, recompute=recompute,
                           optimizer=optimizer)
    pairs = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer state",
             "activations": "activations"}
    assert {k: plan.memory[k] for k in pairs} == {k: book.parts[v] for k, v in pairs.items()}
    assert plan.memory["total"] == book.total + plan.memory["activations_outside_layers"]
    assert plan.memory["activations_outside_layers"] > 0
