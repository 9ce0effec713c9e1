"""Serving calibrations against published measurements: one fitted row, every other a
prediction; a bound on its side of every measurement; fractions of peak only slow a step."""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.plans.options import StepOptions
from symroof.plans.serving_reality import (
    FIRST,
    RATE,
    compare,
    figure,
    published_rows,
    serving_calibration,
)


def test_the_published_rows_are_tensorrt_llm_s_a100_table() -> None:
    head, rows = published_rows("trtllm-perf-a100")
    assert head["chip"] == "a100-80gb" and head["dtype"] == "fp16"
    assert [(r.model, r.tp, r.batch, r.input, r.output, r.published) for r in rows] == [
        ("llama-2-7b", 1, 1, 128, 1, sp.Rational(16, 1000)),
        ("llama-2-7b", 1, 1, 2048, 1, sp.Rational(133, 1000)),
        ("llama-2-70b", 4, 1, 128, 1, sp.Rational(47, 1000)),
        ("llama-2-70b", 4, 1, 2048, 1, sp.Rational(377, 1000)),
        ("llama-2-7b", 1, 384, 128, 128, 5586),
        ("llama-2-7b", 1, 60, 128, 2048, 1928),
        ("llama-2-7b", 1, 52, 2048, 128, 591)]
    assert {r.what for r in rows} == {FIRST, RATE}


def test_one_fraction_is_fitted_on_one_row_and_the_others_are_sourced() -> None:
    cal = serving_calibration("trtllm-a100")
    assert (cal.fitted, cal.row) == ("compute", 1)
    assert cal.fractions["hbm"] == sp.Rational(1610, 2039)  # the measured 1.61 TB/s of 2039 GB/s
    assert cal.fractions["nvlink"] == sp.Rational(2, 3)
    assert 0 < cal.fractions["compute"] <= 1
    assert cal.sources["compute"].startswith("fitted on TensorRT-LLM performance tables")
    rows = compare("trtllm-a100")
    assert [r.calibrated for r in rows] == [i == 1 for i in range(len(rows))]
    assert abs(float(rows[1].error)) < 1e-5  # the fit, kept to six decimals


def test_a_calibration_s_hbm_rate_is_the_measured_copy_of_its_card() -> None:
    # the fraction is the measured copy over the catalogue's bandwidth for the card the rows
    # ran on, so the forecast's rate is the measurement: Azure's AI benchmarking guide,
    # BabelStream's Copy, 1.61 TB/s on an A100-SXM4-80GB (ND A100 v4) and 2.90 TB/s on an
    # H100 80GB HBM3 (ND H100 v5)
    from symroof.hardware.catalog import chip
    for name, measured in (("trtllm-a100", sp.Rational(161, 100) * 10**12),
                           ("trtllm-h100", sp.Rational(290, 100) * 10**12)):
        cal = serving_calibration(name)
        assert cal.fractions["hbm"] * chip(cal.chip).bandwidth() == measured, name


def test_bounds_sit_on_their_side_and_fractions_only_slow_a_step() -> None:
    for r in compare("trtllm-a100"):
        assert r.bound_holds, r.source
        if r.what == FIRST:
            assert r.bound <= r.predicted
        else:
            assert r.bound >= r.predicted


def test_a_static_batch_s_rate_is_its_tokens_over_prefill_and_decode() -> None:
    # one GPU: B * output tokens over the prefill and output decode steps, the steps as the
    # mean of the first and the last context's
    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.device_step import device_step
    _, rows = published_rows("trtllm-perf-a100")
    row = rows[6]
    m, cfg = mesh("X=1", "a100-80gb"), model(row.model)

    def t(phase: str, ctx: int) -> sp.Expr:
        return device_step(cfg, phase, m, {}, batch=52, context=ctx,
                           options=StepOptions(dtype="fp16")).latency
    whole = t("prefill", 2048) + 128 * (t("decode", 2048) + t("decode", 2176)) / 2
    assert figure(row, "a100-80gb", "fp16") == 52 * 128 / whole


def test_a_plan_under_the_serving_calibration_prints_bound_and_forecast() -> None:
    import json

    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.serving import serve
    from tests.conftest import run_cli
    args = ["plan", "llama-2-70b", "--serve", "--mesh", "X=4", "--chip", "a100-80gb",
            "--batch", "16", "--context", "2048", "--dtype", "fp16", "--efficiency",
            "trtllm-a100"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "bound (every term at its peak) and forecast (under the efficiency):" in r.stdout
    assert "(T_upper: no overlap), bound hbm" in r.stdout
    out = json.loads(run_cli(*args, "--json").stdout)
    rows = {x["what"]: x for x in out["bound_and_forecast"]}
    m = mesh("X=4", "a100-80gb")
    cal = serving_calibration("trtllm-a100").efficiency()
    peak = serve(model("llama-2-70b"), m, batch=16, context=2048,
                 options=StepOptions(dtype="fp16"))
    forecast = serve(model("llama-2-70b"), m, batch=16, context=2048,
                     options=StepOptions(dtype="fp16", efficiency=cal))
    decode = rows["decode step"]
    assert sp.Rational(decode["bound"]) == peak.decode.latency
    assert sp.Rational(decode["forecast"]) == forecast.decode.latency
    assert all(sp.Rational(x["bound"]) <= sp.Rational(x["forecast"]) for w, x in rows.items()
               if w != "requests per s")
    # the forecast's steps: latency under overlap none is T_upper; t_lower stays a lower
    # bound (each op's compute under its memory traffic, under the same fractions)
    from symroof.plans.efficiency import Efficiency
    overlapped = serve(model("llama-2-70b"), m, batch=16, context=2048,
                       options=StepOptions(dtype="fp16", efficiency=Efficiency(
                           dict(cal.fractions), calls=dict(cal.calls))))
    for phase in ("prefill", "decode"):
        got, step = out[phase], getattr(forecast, phase)
        assert got["overlap"] == "none"
        assert sp.Rational(got["latency"]) == sp.Rational(got["t_upper"]) == step.latency
        assert sp.Rational(got["t_lower"]) == getattr(overlapped, phase).latency < step.latency


def test_the_forecast_takes_no_overlap_and_the_bound_keeps_it() -> None:
    # under trtllm-a100 a step's forecast is its T_upper (each op's compute, then its memory
    # traffic, then its collectives) under the fractions; the bound is T_lower at peak
    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.device_step import device_step
    from symroof.plans.efficiency import Efficiency
    cal = serving_calibration("trtllm-a100")
    assert cal.overlap == "none" and "ridge" in cal.overlap_why
    eff = cal.efficiency()
    m, cfg = mesh("X=4", "a100-80gb"), model("llama-2-70b")
    for phase, batch, ctx in (("prefill", 1, 128), ("decode", 16, 2048)):
        forecast = device_step(cfg, phase, m, {"tp": ("X",)}, batch=batch, context=ctx,
                               options=StepOptions(dtype="fp16", efficiency=eff))
        fractions = device_step(cfg, phase, m, {"tp": ("X",)}, batch=batch, context=ctx,
                                options=StepOptions(dtype="fp16", efficiency=Efficiency(
                                    dict(cal.fractions), calls=dict(cal.calls))))
        assert forecast.latency == fractions.t_upper == forecast.t_upper
        assert fractions.t_lower < forecast.latency
    assert eff.describe().endswith("; overlap none: nothing overlaps (every op's compute, "
                                   "memory traffic and collective one after another)")


def test_a_collective_call_costs_nccls_modelled_time_of_its_faster_protocol() -> None:
    # NCCL's tuning.cc: a ring call costs baseLat + nsteps x hwLat and its bus bytes at the
    # protocol's bandwidth; Simple at the calibrated NVLink fraction, LL at llMaxBw 87.7 GB/s
    from fractions import Fraction as F

    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.device_step import device_step
    us = F(1, 10**6)

    def simple(n: int, nbytes: int, link: F) -> F:  # a ring AllReduce: 2(n-1) steps
        return F(84, 10) * us + 2 * (n - 1) * F(34, 10) * us + F(2 * (n - 1), n) * nbytes / link

    def ll(n: int, nbytes: int) -> F:
        return F(66, 10) * us + 2 * (n - 1) * F(6, 10) * us + \
            F(2 * (n - 1), n) * nbytes / F(877 * 10**8)

    cases = (("trtllm-a100", "a100-80gb", "llama-2-70b", 4, "prefill", 1, 128, "fp16",
              None, F(300 * 10**9) * F(2, 3)),
             ("trtllm-h100", "h100-sxm", "llama-3-70b", 8, "decode", 16, 4096, "fp8-w8a8",
              "fp8", F(450 * 10**9) * F(37, 45)))
    for name, chip, cfg, n, phase, batch, ctx, dtype, kv, link in cases:
        eff = serving_calibration(name).efficiency()
        step = device_step(model(cfg), phase, mesh(f"X={n}", chip), {"tp": ("X",)}, batch=batch,
                           context=ctx,
                           options=StepOptions(dtype=dtype, kv_dtype=kv, efficiency=eff))
        tokens = batch * (ctx if phase == "prefill" else 1)
        nbytes = tokens * model(cfg).d_model * 2
        reduce = next(c for c in step.comms if c.after == "down")
        assert reduce.nbytes == nbytes
        expected = min(simple(n, nbytes, link), ll(n, nbytes))
        assert F(str(reduce.time)) == expected
        chosen = "Simple" if expected == simple(n, nbytes, link) else "LL"
        assert chosen == ("Simple" if phase == "prefill" else "LL")  # 2 MiB, then 256 KiB
        assert any(note.startswith("nvlink AllReduce of ") and f": {chosen}, " in note
                   for note in step.notes)
    # the bound keeps the catalogue's per-hop latency (LL's, 0.6 us) and no per-call cost
    at_peak = device_step(model("llama-2-70b"), "prefill", mesh("X=4", "a100-80gb"), {"tp": ("X",)},
                          batch=1, context=128, options=StepOptions(dtype="fp16"))
    reduce = next(c for c in at_peak.comms if c.after == "down")
    assert F(str(reduce.time)) == 6 * F(6, 10) * us + F(6, 4) * 128 * 8192 * 2 / F(300 * 10**9)


def test_the_rows_not_fitted_are_within_ten_percent_on_average() -> None:
    from symroof.plans.serving_reality import mean_abs_error
    rows = compare("trtllm-a100")
    assert mean_abs_error(rows) <= 0.10
    assert all(r.bound_holds for r in rows)


def test_a_serving_calibration_is_for_its_own_chip() -> None:
    from tests.conftest import run_cli
    r = run_cli("plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                "--efficiency", "trtllm-a100")
    assert r.returncode == 2
    assert r.stderr.strip() == ("symroof: error: --efficiency: the serving calibration "
                                "trtllm-a100 was measured on a100-80gb, not h100-sxm")


def test_the_h100_rows_are_tensorrt_llm_s_h100_fp8_tables() -> None:
    head, rows = published_rows("trtllm-perf-h100")
    assert (head["chip"], head["dtype"], head["kv_dtype"], head["attention"]) == (
        "h100-sxm", "fp8-w8a8", "fp8", "per-head")
    assert [(r.model, r.tp, r.batch, r.input, r.output, r.published) for r in rows] == [
        ("llama-2-7b", 1, 1, 128, 1, sp.Rational(7, 1000)),
        ("llama-2-7b", 1, 1, 2048, 1, sp.Rational(36, 1000)),
        ("llama-2-70b", 4, 1, 128, 1, sp.Rational(26, 1000)),
        ("llama-2-70b", 4, 1, 2048, 1, sp.Rational(109, 1000)),
        ("llama-2-7b", 1, 768, 128, 128, 19694),
        ("llama-2-7b", 1, 112, 128, 2048, 6818),
        ("llama-2-7b", 1, 80, 2048, 128, 2244),
        ("llama-2-7b", 1, 48, 2048, 2048, 2740),
        ("llama-2-70b", 2, 1024, 128, 128, 2657),
        ("llama-2-70b", 4, 480, 128, 2048, 1486),
        ("llama-2-70b", 2, 96, 2048, 128, 306),
        ("llama-2-70b", 2, 64, 2048, 2048, 547)]


def test_trtllm_h100_fits_compute_on_one_row_and_every_bound_holds() -> None:
    cal = serving_calibration("trtllm-h100")
    assert (cal.fitted, cal.row, cal.overlap) == ("compute", 1, "none")
    assert cal.fractions["nvlink"] == sp.Rational(370, 450)
    # a measured BabelStream copy of 2.90 TB/s against the vendor's 3.35 (Azure's ND H100 v5)
    assert cal.fractions["hbm"] == sp.Rational(290, 335)
    rows = compare("trtllm-h100")
    assert [r.calibrated for r in rows] == [i == 1 for i in range(len(rows))]
    assert abs(float(rows[1].error)) < 1e-5
    for r in rows:
        assert r.bound_holds, r.source
        assert (r.bound <= r.predicted) if r.what == FIRST else (r.bound >= r.predicted)


def test_a_calibration_measured_in_fp8_refuses_a_bf16_plan() -> None:
    from tests.conftest import run_cli
    r = run_cli("plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                "--batch", "16", "--context", "4096", "--efficiency", "trtllm-h100")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (
        "symroof: error: --dtype: the serving calibration trtllm-h100 was measured with the "
        "projections in fp8 (weights fp8-w8a8, KV cache fp8), not bf16: set it to fp8-w8a8")


def test_the_llama_3_70b_request_prints_its_bound_and_its_h100_forecast() -> None:
    import json

    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.serving import serve
    from tests.conftest import run_cli
    args = ["plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
            "--batch", "16", "--context", "4096", "--generate", "256", "--dtype", "fp8-w8a8",
            "--kv-dtype", "fp8", "--efficiency", "trtllm-h100"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "bound (every term at its peak) and forecast (under the efficiency):" in r.stdout
    rows = {x["what"]: x for x in json.loads(run_cli(*args, "--json").stdout)[
        "bound_and_forecast"]}
    m, cfg = mesh("X=8", "h100-sxm"), model("llama-3-70b")
    eff = serving_calibration("trtllm-h100").efficiency()
    peak = serve(cfg, m, batch=16, context=4096,
                 options=StepOptions(dtype="fp8-w8a8", kv_dtype="fp8"))
    forecast = serve(cfg, m, batch=16, context=4096,
                     options=StepOptions(dtype="fp8-w8a8", kv_dtype="fp8", efficiency=eff))
    for what, step in (("prefill step", "prefill"), ("decode step", "decode")):
        assert sp.Rational(rows[what]["bound"]) == getattr(peak, step).latency
        assert sp.Rational(rows[what]["forecast"]) == getattr(forecast, step).latency


def _printed(s: object) -> tuple:
    """What a serving plan prints and writes as JSON, field by field."""
    from symroof.plans.serving import Serving
    assert isinstance(s, Serving)
    return (s.prefill.latency, s.prefill.t_upper, s.prefill.terms, s.prefill.bound,
            s.decode.latency, s.decode.t_upper, s.decode.terms, s.decode.comms, s.critical,
            s.balance, s.grid, s.requests, s.memory, s.assumptions,
            None if s.chunked is None else s.chunked.time)


def test_a_forecast_and_its_bound_from_one_build_equal_the_two_built_apart() -> None:
    # serve(..., bound=True) builds each step's ops, collectives and rooflines once for the
    # forecast and the bound; each equals the plan built alone under its efficiency, exactly
    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.efficiency import Efficiency
    from symroof.plans.serving import serve
    from symroof.plans.strategy import parse_strategy
    typed = Efficiency({"compute": sp.Rational(7, 10), "hbm": sp.Rational(17, 20),
                        "nvlink": sp.Rational(4, 5)})
    cases = [
        ("llama-3-70b", "X=8", None, "h100-sxm", {"dtype": "fp8-w8a8", "kv_dtype": "fp8"},
         serving_calibration("trtllm-h100").efficiency()),
        ("llama-2-70b", "X=4", None, "a100-80gb", {"dtype": "fp16"},
         serving_calibration("trtllm-a100").efficiency()),
        ("mixtral-8x7b", "X=2,Y=4", "ep=X,tp=Y", "h100-sxm", {}, typed),
        ("llama-3-8b", "X=2,Y=4", "pp=X,tp=Y", "h100-sxm", {"chunk": 512}, typed),
        ("llama-2-7b", "X=8", None, "h100-sxm", {"chunk": 1024, "piggyback": True},
         serving_calibration("trtllm-h100").efficiency())]
    for name, spec, strategy, chip_name, options, eff in cases:
        m, cfg = mesh(spec, chip_name), model(name)
        chosen = {k: v for k, v in options.items() if k in ("dtype", "kv_dtype")}
        how = dict(batch=16, context=2048, strategy=parse_strategy(strategy) if strategy
                   else None, **{k: v for k, v in options.items() if k not in chosen})
        forecast = StepOptions(**chosen, efficiency=eff)
        both = serve(cfg, m, bound=True, **how, options=forecast)
        assert both.at_peak is not None
        assert _printed(both) == _printed(serve(cfg, m, **how, options=forecast)), name
        assert _printed(both.at_peak) == _printed(serve(cfg, m, **how,
                                                        options=StepOptions(**chosen))), name
        assert serve(cfg, m, **how, options=forecast).at_peak is None


def test_only_ring_collectives_take_the_calibrations_call_costs() -> None:
    # a pipeline's send is not a ring collective: NCCL's ring model does not cost it, so it
    # keeps its bandwidth at the calibrated fraction and the catalogue's per-hop latency
    from symroof.models import model
    from symroof.parallel.collectives import collective
    from symroof.parallel.mesh import mesh
    from symroof.plans.device_step import device_step
    cal = serving_calibration("trtllm-h100")
    m = mesh("X=4,Y=2", "h100-sxm")
    step = device_step(model("llama-3-70b"), "decode", m, {"tp": ("X",), "pp": ("Y",)}, batch=16,
                       context=4096,
                       options=StepOptions(dtype="fp8-w8a8", kv_dtype="fp8",
                                           efficiency=cal.efficiency()))
    send = next(c for c in step.comms if c.kind == "pp")
    plain = collective("permute", send.nbytes, "Y", m)
    assert send.time == plain.bandwidth_time / cal.fractions["nvlink"] + plain.latency_time
    reduce = next(c for c in step.comms if c.after == "down")
    ring = collective("allreduce", reduce.nbytes, ("X",), m)
    assert reduce.time > ring.bandwidth_time / cal.fractions["nvlink"] + ring.latency_time


def test_a_calibrations_call_costs_are_read_with_their_units_or_refused_by_name() -> None:
    from symroof.core.errors import InputError
    from symroof.plans.serving_reality import _calls
    got = _calls("x", {"nvlink": [{"protocol": "LL", "per_call": "6.6 us",
                                   "per_hop": "0.6 us", "bandwidth": "87.7 GB/s",
                                   "source": "s"}]})["nvlink"][0]
    assert (got.per_call, got.per_hop, got.bandwidth) == (
        sp.Rational(66, 10**7), sp.Rational(6, 10**7), 877 * 10**8)
    with pytest.raises(InputError, match="x: calls.nvlink takes protocol, per_call, per_hop, "
                                         "source and an optional bandwidth"):
        _calls("x", {"nvlink": [{"protocol": "LL", "per_call": "6.6 us", "source": "s"}]})
    with pytest.raises(InputError, match="x: calls.nvlink"):
        _calls("x", {"nvlink": [{"protocol": "LL", "per_call": "6.6 GB", "per_hop": "1 us",
                                 "source": "s"}]})


@pytest.mark.parametrize("name", ["trtllm-a100", "trtllm-h100"])
def test_the_stored_fit_is_the_fit_solved_again(name: str) -> None:
    # the fitted fraction each serving calibration stores (fit.value) is derived, never
    # typed: the fit solved again from its published row finds exactly it
    from symroof.plans.serving_reality import serving_refit
    cal = serving_calibration(name)
    assert cal.fitted is not None
    stored, solved = cal.fractions[cal.fitted], serving_refit(name)
    assert solved == stored, (f'store value = "{solved}" under [fit] in symroof/plans/'
                              f"calibrations/serving/{name}.toml (it holds {stored})")
