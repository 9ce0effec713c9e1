"""A pipeline's stages are not alike: the first runs the embedding, the last the final norm and
the output head. Laws: the closed form of a step with such stages is the played 1F1B
schedule, and a training plan's T_lower and T_upper are that schedule of its own stages'
times (each phase its longest term, or its terms one after another)."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.pipeline import interleaved_cost, played_makespan
from symroof.plans.strategy import parse_strategy
from symroof.plans.train_step import phase_terms, stage_extras, training_ops
from symroof.plans.training import train

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
    # every collective of the plan; played as 1F1B, the makespan is the plan's T_lower
    cfg, h100 = model(name), chip("h100-sxm")
    plan = train(cfg, mesh(f"X={pp},Y=2", h100), parse_strategy("pp=X,tp=Y"), batch=micro,
                 context=2048, options=StepOptions(microbatches=micro))
    ops = training_ops(cfg, batch=1, context=2048, tp=2, pp=pp)
    busiest = phase_terms(ops, h100)
    extra = {w: phase_terms(part, h100) for w, part in stage_extras(ops).items()}
    comms = {k: x for k, x in plan.terms.items()
             if k not in ("compute", "hbm", "optimizer step", "pipeline bubble")}
    assert comms, "a pipelined tensor-parallel plan sends and reduces"

    def stage(ph: str, drop: tuple[str, ...], rule: str) -> Fraction:
        own = [busiest[ph][k] - sum((extra[d][ph].get(k, 0) for d in drop), sp.S.Zero)
               for k in ("compute", "hbm")]
        each = [*own, *(x.phases.get(ph, 0) / micro for x in comms.values())]
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
