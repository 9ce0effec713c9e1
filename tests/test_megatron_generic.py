"""One model of a step: Megatron-LM's iteration (``symroof.plans.megatron``) against the
generic training plan (``symroof.plans.training``) for the same model, mesh, strategy,
microbatches and recomputation. They agree on the FLOPs, the activations, the compute
term, the schedule and the tensor-parallel arrays; every other difference is one of the
named terms below, each pinned exactly."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.models.counts import op_weights
from symroof.models.layers import layer_ops
from symroof.parallel.mesh import mesh
from symroof.plans.megatron import (
    BYTES_PER_PARAM,
    MODES,
    Run,
    activations,
    iteration,
    parameters_optimizer,
    tensor_collectives,
)
from symroof.plans.megatron import Iteration as MegatronIteration
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import Plan, train
from tests.conftest import examples

MODELS = ("megatron-gpt-22b", "megatron-gpt-175b", "megatron-gpt-530b", "megatron-gpt-1t")
S = 2048


@st.composite
def runs(draw: st.DrawFn) -> Run:
    cfg = model(draw(st.sampled_from(MODELS)))
    t = draw(st.sampled_from((1, 2, 4, 8)))
    p = draw(st.sampled_from([d for d in range(1, 9) if cfg.layers % d == 0]))
    m, b = draw(st.integers(1, 12)), draw(st.integers(1, 2))
    return Run(cfg, tensor=t, pipeline=p, global_batch=m * b, micro_batch=b, sequence=S,
               mode=draw(st.sampled_from(tuple(MODES))))


def _both(run: Run, latency: bool = True) -> tuple[Plan, MegatronIteration]:
    """The generic plan (with ``latency=False``, its links' per-hop latencies set to 0, as
    Megatron-LM's model costs its sends) and Megatron-LM's iteration of ``run``."""
    spec, strategy, micro = run.as_plan()
    on = chip(run.chip) if latency else chip(run.chip).with_figures(
        {"nvlink.latency": "0", "ib.latency": "0"})
    plan = train(run.cfg, mesh(spec, on), parse_strategy(strategy),
                 batch=run.global_batch, context=run.sequence, microbatches=micro,
                 recompute=run.recompute, optimizer="adam-megatron")
    return plan, iteration(run)


def _per_microbatch(it: MegatronIteration, resource: str) -> sp.Expr:
    return sp.Add(*(x.time for x in it.per_microbatch if x.resource == resource))


@settings(max_examples=examples(15))
@given(runs())
def test_flops_activations_compute_and_schedule_agree(run: Run) -> None:
    plan, it = _both(run)
    m, p = run.microbatches, run.pipeline
    # FLOPs per GPU and iteration: Megatron's are the model's (with recomputation's) over
    # t x p GPUs; the generic step's are its ops': the norms and the row-parallel tails
    # whole on every tensor rank (the norms split under sequence parallelism), the
    # embedding and head blocks whole on the busiest stage
    flops = sp.Add(*(x.quantity for x in it.per_microbatch if x.resource == "compute"))
    expected, seconds = _generic_compute(run)
    assert plan.extra["flops"] == m * expected
    if run.tensor == run.pipeline == 1:
        assert expected == flops
    # the compute term: each op at its unit's peak (the A100's bf16 and fp16 matrix rates
    # are one figure; the norms on the vector unit)
    a100 = chip(run.chip)
    assert a100.peak("bf16") == a100.peak("fp16")
    assert plan.terms["compute"].time == m * seconds
    # activations on the first stage: Megatron's L layers' worth assume the pipeline full
    # (m >= p); the generic 1F1B keeps min(p, m) microbatches in flight
    assert plan.memory["activations"] == activations(run) * sp.Min(p, m) / p
    # one schedule: m + p - 1 microbatch slots (no interleaving), the generic plan's T_upper
    # its terms in series spread over them, then the optimizer step
    assert it.slots == m + p - 1
    serial = sp.Add(*(x.time for k, x in plan.terms.items()
                      if k not in ("pipeline bubble", "optimizer step")))
    assert plan.t_upper == it.slots * serial / m + plan.terms["optimizer step"].time


def _generic_compute(run: Run) -> tuple[sp.Expr, sp.Expr]:
    """A microbatch's FLOPs on the busiest stage's GPU and their time, from the whole
    model's ops split by hand."""
    cfg, t, p = run.cfg, run.tensor, run.pipeline
    ops = layer_ops(cfg, "prefill", batch=run.micro_batch, context=S, attention="materialised")
    w = op_weights(cfg, cfg.sizes(False))
    a100 = chip(run.chip)
    flops, seconds = sp.S.Zero, sp.S.Zero
    for b in ops.blocks:
        share = sp.S.One if b.name == "head" else b.count / p
        for o in b.ops:
            whole = o.compute == "vpu" and not (run.sequence_parallel and t > 1
                                                and o.name.endswith("norm"))
            passes = 3 + (run.recompute == "full") + (
                run.recompute == "selective" and o.compute == "mxu" and w.get(o.name, 0) == 0)
            # a row-parallel matmul's elementwise tail (bias, residual) runs whole on every
            # tensor rank: all but its contraction, 2 x tokens x its input x D
            width = {"output": cfg.heads * cfg.head_dim, "down": cfg.d_ff}.get(o.name)
            tail = o.flops - 2 * run.micro_batch * S * width * cfg.d_model if width else 0
            each = share * passes * ((o.flops - tail) / (1 if whole else t) + tail)
            flops += each
            seconds += each / (a100.peak("bf16") if o.compute == "mxu"
                               else a100.peak("fp32", "vpu"))
    return flops, seconds


@pytest.mark.slow
@settings(max_examples=examples(40))
@given(runs())
def test_parameters_differ_by_where_norms_and_positions_sit(run: Run) -> None:
    # both 18 bytes per parameter; megatron's exact count splits every parameter of a
    # layer over the tensor ranks; the generic plan (the tensor shard's count, as a
    # serving plan's) keeps the layer norms and the row-parallel biases whole on every
    # tensor rank (as Megatron-LM does) and the final norm on every stage
    plan, _ = _both(run)
    cfg, t, p = run.cfg, sp.Integer(run.tensor), run.pipeline
    w, s = op_weights(cfg, cfg.sizes(False)), cfg.sizes(False)
    norms = w["attention norm"] + w["MLP norm"]
    biases = s["D"] * (int(cfg.out_bias) + int(cfg.mlp_bias))  # row-parallel: whole
    named = sp.Rational(cfg.layers, p) * (norms + biases) * (1 - 1 / t) + w["final norm"]
    states = plan.memory["weights"] + plan.memory["gradients"] + plan.memory["optimizer"]
    assert states - parameters_optimizer(run, "exact") == BYTES_PER_PARAM * named


@pytest.mark.slow
@settings(max_examples=examples(40))
@given(runs())
def test_tensor_collectives_differ_by_the_named_regathers(run: Run) -> None:
    plan, it = _both(run)
    if run.tensor == 1:
        assert _per_microbatch(it, "nvlink") == 0 and not [
            u for u, *_ in plan.uses if u.kind == "tp"]
        return
    m, layers = run.microbatches, sp.Rational(run.cfg.layers, run.pipeline)
    array = 2 * run.micro_batch * S * run.cfg.d_model  # one fp16 [s, b, h]
    generic: dict[str, sp.Expr] = {}
    head: dict[str, sp.Expr] = {}
    for u, _, _, nbytes in plan.uses:
        if u.kind != "tp":
            continue
        assert nbytes == array  # every tensor-parallel collective moves one [s, b, h]
        into = head if u.block == "head" else generic
        into[u.collective] = into.get(u.collective, 0) + u.per_step / m
    # the generic plan also gathers the output head's input and reduces its gradient
    # (once per microbatch); Megatron's iteration leaves the head out
    assert head == ({"allgather": 1, "reducescatter": 1} if run.sequence_parallel
                    else {"allreduce": 1})
    megatron = {k: layers * n for k, n in tensor_collectives(run)}
    # Megatron-LM keeps only the sequence shard of each column-parallel input and gathers
    # it again for the weight gradient (2 AllGathers per layer); full recomputation reruns
    # the forward's collectives; the generic plan counts neither
    extra: dict[str, sp.Expr] = {}
    if run.sequence_parallel:
        extra["allgather"] = 2 * layers
    if run.recompute == "full":
        for k in (("allgather", "reducescatter") if run.sequence_parallel else ("allreduce",)):
            extra[k] = extra.get(k, 0) + 2 * layers
    assert {k: megatron[k] - generic.get(k, 0) for k in megatron} == {
        k: extra.get(k, 0) for k in megatron}


@pytest.mark.slow
@settings(max_examples=examples(20))
@given(runs().filter(lambda r: r.tensor == 8 and r.pipeline > 1))
def test_pipeline_sends_differ_by_megatrons_scatter_gather(run: Run) -> None:
    # with t = 8 each stage is a node and both send over its InfiniBand, 25 GB/s per GPU;
    # Megatron-LM splits each send over the tensor ranks (scatter/gather), the generic
    # plan only with sequence parallelism (both at bandwidth only)
    plan, it = _both(run, latency=False)
    generic = sp.Add(*(x.time for k, x in plan.terms.items() if k.startswith("pp over")))
    split = 1 if run.sequence_parallel else run.tensor
    assert generic == run.microbatches * _per_microbatch(it, "ib") * split
