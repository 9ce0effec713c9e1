"""FP8 W8A8 serving (``--dtype fp8-w8a8``): the projections read fp8 weights and fp8 inputs
and run at the chip's fp8 peak; every other op is as under 16-bit weights. Laws against the
bf16 step, exactly."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip
from symroof.core.parse import symbol
from symroof.models import model
from symroof.models.layers import layer_ops
from symroof.models.step_roofline import step_roofline
from tests.conftest import run_cli

# the ops that are not projections: their FLOPs, bytes and peak do not move under W8A8
NOT_PROJECTIONS = {"attention norm", "attention", "MLP norm", "embedding", "final norm",
                   "output head", "q norm", "kv norm", "scores", "values"}
MODELS = ("llama-2-7b", "llama-3-70b", "mixtral-8x7b", "deepseek-v2-lite")


def _rows(name: str, phase: str, dtype: str, batch: int | None, context: int | None,
          kv: str = "bf16") -> list:
    return list(step_roofline(layer_ops(model(name), phase, batch=batch, context=context,
                                        dtype=dtype, kv_dtype=kv),
                              chip("h100-sxm")).rows)


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(MODELS), phase=st.sampled_from(("prefill", "decode")),
       batch=st.integers(1, 64), context=st.integers(1, 8192))
def test_a_projection_s_compute_time_scales_by_the_peaks_and_nothing_else_moves(
        name: str, phase: str, batch: int, context: int) -> None:
    h100 = chip("h100-sxm")
    ratio = h100.peak("bf16") / h100.peak("fp8")
    bf16 = _rows(name, phase, "bf16", batch, context)
    w8a8 = _rows(name, phase, "fp8-w8a8", batch, context)
    assert [r.op.name for r in bf16] == [r.op.name for r in w8a8]
    projections = 0
    for a, b in zip(bf16, w8a8, strict=True):
        assert b.op.flops == a.op.flops
        if a.op.name in NOT_PROJECTIONS:
            assert b.roofline.t_math == a.roofline.t_math, a.op.name
            assert b.op.bytes() == a.op.bytes(), a.op.name
        else:
            projections += 1
            assert b.op.dtype == "fp8", a.op.name
            assert b.roofline.t_math == a.roofline.t_math * ratio, a.op.name
    assert projections >= 4
    # the step's compute term: the bf16 one less (1 - ratio) of its projections' share
    share = sum(r.count * r.roofline.t_math for r in bf16 if r.op.name not in NOT_PROJECTIONS)
    total = (sum(r.count * r.roofline.t_math for r in w8a8),
             sum(r.count * r.roofline.t_math for r in bf16))
    assert sp.simplify(total[0] - (total[1] - (1 - ratio) * share)) == 0


def test_a_compute_bound_prefill_s_projections_take_the_bf16_time_times_the_peaks() -> None:
    # llama-2-7b, one prompt of 4096 tokens: every projection compute-bound, exactly
    h100 = chip("h100-sxm")
    ratio = h100.peak("bf16") / h100.peak("fp8")
    for a, b in zip(_rows("llama-2-7b", "prefill", "bf16", 1, 4096),
                    _rows("llama-2-7b", "prefill", "fp8-w8a8", 1, 4096), strict=True):
        if a.op.name not in NOT_PROJECTIONS:
            assert a.roofline.bound() == b.roofline.bound() == "compute"
            assert b.roofline.t_lower == a.roofline.t_lower * ratio


@settings(max_examples=8, deadline=None)
@given(name=st.sampled_from(MODELS), phase=st.sampled_from(("prefill", "decode")))
def test_a_projection_s_weight_bytes_halve_and_its_input_takes_one_byte(
        name: str, phase: str) -> None:
    # in the symbols B and T: the bytes at B = 0 are the weights (and biases); the rest,
    # per token, drops by one byte per input element (the output stays in 16 bits)
    B = symbol("B")
    for a, b in zip(_rows(name, phase, "bf16", None, None),
                    _rows(name, phase, "fp8-w8a8", None, None), strict=True):
        if a.op.name in NOT_PROJECTIONS:
            continue
        weights = (a.op.bytes().subs(B, 0), b.op.bytes().subs(B, 0))
        assert sp.expand(weights[0] - 2 * weights[1]) == 0, a.op.name
        inputs = a.op.reads["hbm"] - b.op.reads["hbm"] - (weights[0] - weights[1])
        writes = a.op.writes["hbm"] - b.op.writes["hbm"]
        assert writes == 0 and sp.expand(inputs).has(B), a.op.name


def test_the_kv_cache_is_as_the_user_says() -> None:
    fp16 = _rows("llama-2-7b", "decode", "fp8-w8a8", 8, 1024, kv="fp16")
    fp8 = _rows("llama-2-7b", "decode", "fp8-w8a8", 8, 1024, kv="fp8")
    attention = next((a.op, b.op) for a, b in zip(fp16, fp8, strict=True)
                     if a.op.name == "attention")
    cache = 8 * 1024 * 2 * 32 * 128  # B T (K and V) heads x head dim, elements, one layer
    assert attention[0].bytes() - attention[1].bytes() == cache


def test_a_chip_without_an_fp8_peak_refuses_in_one_line() -> None:
    r = run_cli("plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "a100-80gb",
                "--batch", "16", "--context", "4096", "--dtype", "fp8-w8a8")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("symroof: error: --dtype: fp8-w8a8 runs the projections at "
                                "the chip's fp8 peak, and a100-80gb lists none")


def test_the_plan_says_the_scheme() -> None:
    r = run_cli("plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                "--batch", "16", "--context", "4096", "--dtype", "fp8-w8a8", "--kv-dtype",
                "fp8")
    assert r.returncode == 0, r.stderr
    assert "- weights fp8-w8a8; KV cache fp8," in r.stdout
    assert "each projection reads its input in fp8 and runs at the chip's fp8 peak" in r.stdout
