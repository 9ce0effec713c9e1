"""The serving search: its compiled step is the device step plan --serve times (laws), the
frontier is the Pareto edge of what meets the limits, and a limit no plan meets is named."""

from __future__ import annotations

import itertools
import json
from functools import cache

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.parse import symbol
from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.device_step import device_step
from symroof.plans.serving import serve
from symroof.plans.serving_search import Shape, compile_shape, search_serving
from tests.conftest import examples, run_cli

CFG, H100 = model("llama-2-7b"), chip("h100-sxm")


@cache
def _shape(tp: int) -> Shape:
    return compile_shape(CFG, H100, tp, 1, context=1024, end=1152, dtype="bf16",
                         kv_dtype="bf16")


@settings(max_examples=examples(10), deadline=None)
@given(tp=st.sampled_from([1, 2]), batch=st.integers(1, 512))
def test_the_compiled_step_is_plan_serve_s_decode_and_prefill(tp: int, batch: int) -> None:
    s, P, D = _shape(tp), symbol("P"), symbol("D")
    m = mesh(f"X={tp}", H100)
    axes = {"tp": ("X",)} if tp > 1 else {}
    decode = device_step(CFG, "decode", m, axes, batch=batch, context=1024)
    prefill = device_step(CFG, "prefill", m, axes, batch=batch, context=1024)
    assert s.step.subs({P: 0, D: batch}) == decode.t_lower
    assert s.step.subs({P: batch, D: 0}) == prefill.t_lower


def test_a_serving_calibration_searches_as_plan_serve_forecasts() -> None:
    # the search takes a serving calibration by name, under its dtype and its overlap rule
    # (none), and its compiled decode step is plan --serve's forecast under it
    from symroof.plans.options import StepOptions
    from symroof.plans.serving_reality import serving_efficiency
    from symroof.plans.serving_search import ServingSearchRequest
    eff = serving_efficiency("trtllm-h100", "h100-sxm", "fp8-w8a8")
    assert eff is not None and eff.overlap == "none"
    s = compile_shape(CFG, H100, 2, 1, context=1024, end=1152, dtype="fp8-w8a8",
                      kv_dtype="fp8", efficiency=eff)
    served = serve(CFG, mesh("X=2", H100), batch=64, context=1024,
                   options=StepOptions(dtype="fp8-w8a8", kv_dtype="fp8", efficiency=eff))
    assert s.step.subs({symbol("P"): 0, symbol("D"): 64}) == served.decode.latency
    found = ServingSearchRequest("llama-2-7b", "h100-sxm", 2, "1s", "20ms", context=1024,
                                 generate=128, dtype="fp8-w8a8", kv_dtype="fp8",
                                 efficiency="trtllm-h100").run()
    assert any(a.startswith("efficiency: calibration trtllm-h100") for a in found.assumptions)


def test_the_decode_step_agrees_with_plan_serve() -> None:
    served = serve(CFG, mesh("X=2", H100), batch=64, context=1024)
    assert _shape(2).step.subs({symbol("P"): 0, symbol("D"): 64}) == served.decode.latency


def test_the_best_plan_meets_the_limits_and_tops_the_frontier() -> None:
    s = search_serving(CFG, H100, 2, ttft=1.0, tpot=0.02, context=1024, generate=128,
                       shapes=[_shape(1), _shape(2)])
    # aggregated: 2 shapes x 512 batches; disaggregated: one prefill and one decode chip,
    # 4 prompt batches x 512 batches
    assert s.best is not None and s.searched == 2 * 512 + 4 * 512
    assert s.best.ttft <= 1.0 and s.best.tpot <= 0.02
    users = [p.tokens_per_s_per_user for p in s.frontier]
    chips = [p.tokens_per_s_per_chip for p in s.frontier]
    assert users == sorted(users, reverse=True)
    assert all(a < b for a, b in itertools.pairwise(chips))
    assert chips[-1] == s.best.tokens_per_s_per_chip
    # an aggregated plan's TPOT is the hybrid step at B / generate prompts beside B tokens
    agg = s.best_aggregated
    assert agg is not None
    shape = _shape(int(agg.decode[0].removeprefix("tp=")))
    b = agg.decode[2]
    exact = shape.step.subs({symbol("P"): sp.Rational(b, 128), symbol("D"): b})
    assert abs(agg.tpot - float(exact)) <= 1e-12 * float(exact)


def test_a_limit_no_plan_meets_is_named() -> None:
    s = search_serving(CFG, H100, 2, ttft=0.001, tpot=0.02, context=1024, generate=128,
                       shapes=[_shape(1), _shape(2)])
    assert s.best is None and s.frontier == ()
    assert s.why.startswith("no plan meets TTFT <= 1 ms: the fastest first token is ")
    s = search_serving(CFG, H100, 2, ttft=1.0, tpot=1e-6, context=1024, generate=128,
                       shapes=[_shape(1), _shape(2)])
    assert s.why.startswith("no plan meets TPOT <= 1 µs: the fastest output token is ")


def test_the_command_names_its_plan_and_frontier() -> None:
    r = run_cli("plan", "llama-2-7b", "--serve", "--search", "2", "--chip", "h100-sxm",
                "--context", "1024", "--generate", "128", "--ttft", "1s", "--tpot", "20ms",
                "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["best"]["tpot_value"] <= 0.02 and out["best"]["ttft_value"] <= 1.0
    assert out["frontier"][-1]["tokens_per_s_per_chip_value"] == \
        out["best"]["tokens_per_s_per_chip_value"]
    text = run_cli("plan", "llama-2-7b", "--serve", "--search", "2", "--chip", "h100-sxm",
                   "--context", "1024", "--generate", "128", "--ttft", "1ms", "--tpot",
                   "20ms")
    assert text.returncode == 0
    assert "no plan: no plan meets TTFT <= 1 ms: the fastest first token is" in text.stdout


def test_an_expert_parallel_worker_is_the_device_step_and_compiles_its_experts() -> None:
    # mixtral on 2 chips, its 8 experts over 2 expert ranks: the compiled step is the device
    # step at any batch (the experts a batch touches included), and its NumPy form agrees
    from symroof.plans.serving_search import worker_mesh
    cfg = model("mixtral-8x7b")
    s = compile_shape(cfg, H100, 1, 1, context=1024, end=1152, dtype="bf16",
                      kv_dtype="bf16", ep=2)
    m, axes = worker_mesh(H100, 1, 1, 2)
    assert axes == {"ep": ("E",)} and s.name == "tp=1,ep=2" and s.chips == 2
    for batch in (2, 6, 64):
        decode = device_step(cfg, "decode", m, axes, batch=batch, context=1024).t_lower
        assert s.step.subs({symbol("P"): 0, symbol("D"): batch}) == decode
        assert abs(float(s.d(float(batch))) - float(decode)) <= 1e-12 * float(decode)


def test_a_pipelined_worker_runs_at_its_slowest_stages_rate_as_plan_serve() -> None:
    # a worker of 2 stages: its compiled period (the slowest stage's time and send) is
    # plan --serve's decode and prefill period, and its aggregated plans' tokens/s per chip
    # are B over that period at B / generate prompts beside B tokens, not B pp / TPOT
    from symroof.plans.serving_search import worker_mesh
    s = compile_shape(CFG, H100, 1, 2, context=1024, end=1152, dtype="bf16", kv_dtype="bf16")
    m, axes = worker_mesh(H100, 1, 2)
    for batch in (1, 64):
        decode = device_step(CFG, "decode", m, axes, batch=batch, context=1024)
        prefill = device_step(CFG, "prefill", m, axes, batch=batch, context=1024)
        assert decode.slowest == prefill.slowest == "last"
        for step, at in ((decode, (0.0, batch)), (prefill, (batch, 0.0))):
            assert abs(float(s.period(*at)) - float(step.period)) <= 1e-12 * float(step.period)
            assert step.period < step.latency
    found = search_serving(CFG, H100, 2, ttft=1.0, tpot=0.02, context=1024, generate=128,
                           shapes=[s])
    agg = found.best_aggregated
    assert agg is not None and agg.decode[0] == "tp=1,pp=2"
    b = agg.decode[2]
    sizes = {symbol("P"): sp.Rational(b, 128), symbol("D"): b}
    built = device_step(CFG, "prefill", m, axes, batch=symbol("P"), context=1024,
                        decoding=(symbol("D"), 1024))
    period = built.period.subs(sizes)
    assert abs(agg.tokens_per_s_per_chip - float(b / period / 2)) <= 1e-9 * float(b / period)
    assert agg.tokens_per_s_per_chip < float(b * 2 / built.latency.subs(sizes) / 2)
