"""Megatron-LM's runs as the one training model plans them (``symroof.plans.training``):
the FLOPs and compute term of each op derived by hand from the whole model's ops, the
1F1B schedule's slots, and the tensor-parallel arrays, for any of the paper's models,
tensor and pipeline sizes, microbatches and recomputation modes."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.models.counts import op_weights
from symroof.models.layers import layer_ops
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.published import MODES, Run
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import Plan, train
from tests.conftest import examples

MODELS = ("megatron-gpt-22b", "megatron-gpt-175b", "megatron-gpt-530b", "megatron-gpt-1t")
S = 2048


@st.composite
def runs(draw: st.DrawFn) -> Run:
    name = draw(st.sampled_from(MODELS))
    cfg = model(name)
    t = draw(st.sampled_from((1, 2, 4, 8)))
    p = draw(st.sampled_from([d for d in range(1, 9) if cfg.layers % d == 0]))
    m, b = draw(st.integers(1, 12)), draw(st.integers(1, 2))
    return Run("drawn", name, t, p, 1, m * b, b, S, 1, "a100-80gb",
               draw(st.sampled_from(tuple(MODES))))


def _plan(run: Run) -> Plan:
    spec, strategy, micro = run.as_plan()
    return train(model(run.model), mesh(spec, chip(run.chip)), parse_strategy(strategy),
                 batch=run.global_batch, context=run.sequence, optimizer="adam-megatron",
                 options=StepOptions(recompute=run.recompute, microbatches=micro))


@settings(max_examples=examples(15))
@given(runs())
def test_flops_compute_and_schedule_by_hand(run: Run) -> None:
    plan = _plan(run)
    m, p = run.microbatches, run.pipeline
    # FLOPs per GPU and iteration: the ops' own, the norms and the row-parallel tails whole
    # on every tensor rank (the norms split under sequence parallelism), the embedding and
    # head blocks whole on the busiest stage; each op at its unit's peak
    expected, seconds = _generic_compute(run)
    assert plan.extra["flops"] == m * expected
    assert plan.terms["compute"].time == m * seconds
    # one schedule: m + p - 1 microbatch slots (no interleaving), T_upper its terms in
    # series spread over them, then the optimizer step; with a pipeline only the last stage
    # runs the head and only the first the embedding, so the step is shorter than m + p - 1
    # slots of the busiest stage (the played schedule: tests/test_pipeline_stages.py)
    serial = sp.Add(*(x.time for k, x in plan.terms.items()
                      if k not in ("pipeline bubble", "optimizer step")))
    alike = (m + p - 1) * serial / m + plan.terms["optimizer step"].time
    assert plan.t_upper == alike if p == 1 else plan.t_upper < alike


def _generic_compute(run: Run) -> tuple[sp.Expr, sp.Expr]:
    """A microbatch's FLOPs on the busiest stage's GPU and their time, from the whole
    model's ops split by hand."""
    cfg, t, p = model(run.model), run.tensor, run.pipeline
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


@settings(max_examples=examples(15))
@given(runs().filter(lambda r: r.tensor > 1))
def test_every_tensor_collective_moves_one_s_b_h_array(run: Run) -> None:
    # Megatron's split, per layer: an AllReduce after each row-parallel matmul forward and
    # each column-parallel input's gradient backward (4); under sequence parallelism an
    # AllGather and a ReduceScatter in place of each (4 of each); every one moves one fp16
    # [s, b, h] array, the output head's too
    plan = _plan(run)
    cfg = model(run.model)
    array = 2 * run.micro_batch * S * cfg.d_model
    layers = sp.Rational(cfg.layers, run.pipeline)
    counts: dict[str, sp.Expr] = {}
    for u, _, _, nbytes in plan.uses:
        if u.kind == "tp":
            assert nbytes == array
            if u.block != "head":
                counts[u.collective] = counts.get(u.collective, 0) + u.per_step
    m = run.microbatches
    assert counts == ({"allgather": 4 * layers * m, "reducescatter": 4 * layers * m}
                      if run.sequence_parallel else {"allreduce": 4 * layers * m})
