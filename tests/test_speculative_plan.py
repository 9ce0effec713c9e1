"""Speculative decoding on a serving plan: the draft's and the target's steps on one mesh;
laws at acceptance 0 and 1, and the Leviathan ratio where the verification costs a decode
step."""

from __future__ import annotations

import json

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.device_step import device_step
from symroof.plans.speculative_plan import speculative_step
from tests.conftest import examples, run_cli

TARGET, DRAFT = model("llama-2-70b"), model("llama-2-7b")
M, AXES = mesh("X=8", "h100-sxm"), {"tp": ("X",)}


@settings(max_examples=examples(6), deadline=None)
@given(batch=st.integers(1, 64), gamma=st.integers(1, 8), context=st.integers(16, 8192))
def test_acceptance_zero_and_one(batch: int, gamma: int, context: int) -> None:
    # at 0 every draft token is rejected: one token per iteration; at 1 all gamma and the
    # target's own: gamma + 1
    none, every = (speculative_step(TARGET, DRAFT, M, AXES, batch=batch, context=context,
                                    gamma=gamma, acceptance=a) for a in (0, 1))
    draft = device_step(DRAFT, "decode", M, AXES, batch=batch, context=context).latency
    verify = device_step(TARGET, "prefill", M, AXES, batch=batch, context=gamma + 1,
                         prior=context).latency
    assert none.iteration == every.iteration == gamma * draft + verify
    assert none.time_per_output_token == gamma * draft + verify
    assert every.time_per_output_token == (gamma * draft + verify) / (gamma + 1)
    assert every.tokens_per_s == batch * (gamma + 1) / (gamma * draft + verify)


def test_the_leviathan_ratio_is_the_plan_with_a_decode_step_for_the_verification() -> None:
    s = speculative_step(TARGET, DRAFT, M, AXES, batch=16, context=2048, gamma=4,
                         acceptance=sp.Rational(4, 5))
    d = s.decode.latency
    assert s.leviathan.cost_ratio == s.draft.latency / d
    assert s.leviathan.speedup == d * s.tokens / (s.gamma * s.draft.latency + d)
    assert s.tokens == sp.Rational(2101, 625)  # (1 - 0.8^5) / 0.2


def test_the_plan_prints_and_serialises_the_speculative_figures() -> None:
    args = ["plan", "llama-2-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
            "--batch", "16", "--context", "2048", "--draft", "llama-2-7b", "--gamma", "4",
            "--acceptance", "4/5"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "speculative decoding: draft llama-2-7b, gamma 4, acceptance 0.8" in r.stdout
    assert "tokens per iteration   3.36 a sequence" in r.stdout
    out = json.loads(run_cli(*args, "--json").stdout)["speculative"]
    assert (out["gamma"], out["tokens"], out["acceptance"]) == (4, "2101/625", "4/5")


def test_a_pipelined_iteration_runs_at_its_busiest_stages_rate() -> None:
    from symroof.parallel.collectives import collective
    # 2 stages of 4 H100s: each stage's share of an iteration is gamma draft periods and the
    # verification's period there (the last runs both models' heads); pp = 2 iterations in
    # flight at the busiest stage's rate, below alike stages' 2 per iteration
    m, axes = mesh("X=2,Y=4", "h100-sxm"), {"pp": ("X",), "tp": ("Y",)}
    s = speculative_step(TARGET, DRAFT, m, axes, batch=16, context=2048, gamma=4,
                         acceptance=sp.Rational(4, 5))
    draft = device_step(DRAFT, "decode", m, axes, batch=16, context=2048)
    verify = device_step(TARGET, "prefill", m, axes, batch=16, context=5, prior=2048,
                         sampled=16 * 5)
    # the verification's tokens, at most gamma + 1 a sequence (4-byte ids), go back to the
    # first stage for the next iteration's drafts; a plain chunk sends none back
    back = collective("permute", 16 * 5 * 4, "X", m)
    assert verify.stages[-1].send == back.bandwidth_time + back.latency_time
    assert device_step(TARGET, "prefill", m, axes, batch=16, context=5,
                       prior=2048).stages[-1].send == 0
    assert s.iteration == 4 * draft.latency + verify.latency
    busy = {d.name: 4 * d.period + v.period
            for d, v in zip(draft.stages, verify.stages, strict=True)}
    assert sum(busy.values()) == s.iteration  # two stages, a send after the first
    assert s.tokens_per_s == 16 * s.tokens / max(busy.values())
    assert s.tokens_per_s < 16 * s.tokens * 2 / s.iteration
