"""Laws of the HBM traffic a model's step counts (``Choices.traffic``, issue 36, item 2): the
weights alone (a text's floorline), the weights and the KV cache read (a text's count of a
step), or everything the kernels move; through ``layer_ops``, the serving plan's step,
the critical batch, ``model --decode`` (its book form too) and ``plan --serve``. Every
amount is worked out again from the config in fractions."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip, mesh
from symroof.cli.main import main
from symroof.core.choices import Choices
from symroof.core.errors import InputError
from symroof.models import book_decode_time, decode_time_of, layer_ops, model
from symroof.models.step_roofline import critical_batch
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve, step_on

V5E_PEAK = Fraction(197 * 10**12)   # tpu-v5e bf16 (B2)
V5E_HBM = Fraction(81 * 10**10)     # tpu-v5e HBM, B/s (B2)
# Llama 2 7B (V 32000, D 4096, F 11008, L 32, 32 heads of 128, untied embeddings)
D, F, V, L = 4096, 11008, 32000, 32
LAYER = 4 * D * D + 3 * D * F + 2 * D          # attention, gated MLP, two RMSNorms
LLAMA_P = 2 * V * D + L * LAYER + D             # the card's 6.74B
# Mixtral 8x7B (V 32000, D 4096, L 32, 32 heads and 8 KV heads of 128, 8 experts of 14336)
MIXTRAL_LAYER = D * (32 + 2 * 8) * 128 + 32 * 128 * D + D * 8 + 8 * 3 * D * 14336 + 2 * D
MIXTRAL_P = 2 * V * D + L * MIXTRAL_LAYER + D


def _weights_read(name: str, tokens: int) -> Fraction:
    """The bf16 weights a decode step reads: every parameter but the input embedding's
    table, of which it reads a row per token."""
    total = {"llama-2-7b": LLAMA_P, "mixtral-8x7b": MIXTRAL_P}[name]
    return Fraction(2 * (total - V * D) + 2 * tokens * D)


def _cache_read(name: str, batch: int, context: int) -> Fraction:
    """The bf16 KV cache a decode step reads: B T entries of K and V per layer."""
    kv_heads = {"llama-2-7b": 32, "mixtral-8x7b": 8}[name]
    return Fraction(batch * context * L * 2 * kv_heads * 128 * 2)


def _bytes(name: str, batch: int, context: int, traffic: str) -> Fraction:
    ops = layer_ops(model(name), "decode", batch=batch, context=context, traffic=traffic,
                    experts="all" if name == "mixtral-8x7b" else "touched")
    return Fraction(str(ops.total().bytes()))


@settings(max_examples=8, deadline=None)
@given(name=st.sampled_from(["llama-2-7b", "mixtral-8x7b"]), batch=st.integers(1, 4096),
       context=st.integers(1, 32768))
def test_weights_and_the_cache_a_text_counts(name: str, batch: int, context: int) -> None:
    # traffic=weights: the weights alone (a mixture's every expert under experts=all);
    # weights_kv adds the cache read; the kernels' own traffic is at least that
    floor = _bytes(name, batch, context, "weights")
    assert floor == _weights_read(name, batch)
    counted = _bytes(name, batch, context, "weights_kv")
    assert counted == floor + _cache_read(name, batch, context)
    assert _bytes(name, batch, context, "all") > counted


@settings(max_examples=6, deadline=None)
@given(name=st.sampled_from(["llama-2-7b", "gpt2-medium", "qwen1.5-moe-a2.7b",
                             "deepseek-v2-lite"]),
       traffic=st.sampled_from(["weights_kv", "weights"]), batch=st.integers(1, 256),
       context=st.integers(1, 8192), phase=st.sampled_from(["decode", "prefill"]))
def test_a_count_leaves_out_traffic_and_keeps_the_flops(name: str, traffic: str, batch: int,
                                                        context: int, phase: str) -> None:
    cfg = model(name)
    if traffic == "weights_kv" and cfg.mla is not None:
        return  # refused (test_refusals_name_the_choice)
    full = layer_ops(cfg, phase, batch=batch, context=min(context, 1024)).total()
    part = layer_ops(cfg, phase, batch=batch, context=min(context, 1024),
                     traffic=traffic).total()
    assert part.flops == full.flops
    assert sp.simplify(part.bytes() - full.bytes()).is_nonpositive


def test_the_step_and_its_floorline_on_the_chip() -> None:
    # the serving plan's step: its hbm term is the bytes counted over the bandwidth
    for traffic in ("weights", "weights_kv"):
        step, _ = step_on(model("llama-2-7b"), "decode", chip("tpu-v5e"), batch=8,
                          context=4096, choices=Choices(traffic=traffic))
        expected = _weights_read("llama-2-7b", 8) + (
            _cache_read("llama-2-7b", 8, 4096) if traffic == "weights_kv" else 0)
        assert step.terms["hbm"] == sp.Rational(expected.numerator,
                                                expected.denominator) / 810000000000
        assert any(n.startswith(f"traffic={traffic}: ") for n in step.notes)


def test_the_floorline_critical_batch_by_hand() -> None:
    # at context 1 every op runs on the matrix unit (the v5e lists no vector peak): the
    # FLOPs per token are 2 per weight of each layer (8 D^2 + 6 D F), its norms (2 x 2 D),
    # attention's scores and values at one position (4 D), the head (2 D V) and the final
    # norm (2 D); the weights read are w + 2 D B bytes, so compute reaches them where
    # B f / C = (w + 2 D B) / W
    f = L * (8 * D * D + 6 * D * F + 8 * D) + 2 * D * V + 2 * D
    w = 2 * (LLAMA_P - V * D)
    by_hand = w * V5E_PEAK / (f * V5E_HBM - 2 * D * V5E_PEAK)
    got = critical_batch(model("llama-2-7b"), chip("tpu-v5e"), context=1,
                         choices=Choices(traffic="weights"))
    assert got.value == sp.Rational(by_hand.numerator, by_hand.denominator)
    assert got.integer == 244


@pytest.mark.parametrize("traffic", ["weights", "weights_kv"])
def test_one_critical_batch_in_python_and_on_the_command_line(traffic: str) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["model", "llama-2-7b", "--decode", "--context", "64", "--chip",
                   "tpu-v5e", "--choices", f"traffic={traffic}", "--json"])
    assert rc == 0
    got = json.loads(out.getvalue())
    expected = critical_batch(model("llama-2-7b"), chip("tpu-v5e"), context=64,
                              choices=Choices(traffic=traffic))
    assert got["critical_batch"]["relation"] == expected.relation
    _, on_step = step_on(model("llama-2-7b"), "decode", chip("tpu-v5e"), batch=1,
                         context=64, choices=Choices(traffic=traffic))
    assert on_step is not None and on_step.value == expected.value


def test_the_book_form_takes_the_choice() -> None:
    # a text's 7e9 parameters in bf16 over one H100's 3.35 TB/s, whatever the batch's cache
    h100 = chip("h100-sxm")
    floor = book_decode_time(model("llama-2-7b"), h100, 8, 4096,
                             Choices(sizes="nominal", traffic="weights"))
    assert floor == sp.Rational(7 * 10**9 * 2, 335 * 10**10)
    assert floor == decode_time_of(7 * 10**9, 1, h100, 8, 4096, traffic="weights")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["model", "llama-2-7b", "--decode", "--context", "4096", "--batch", "8",
                   "--chip", "h100-sxm", "--choices", "sizes=nominal,traffic=weights"])
    assert rc == 0
    assert ("book form: weights read once over h100-sxm's HBM, no compute: 4.179 ms"
            in out.getvalue())


def test_plan_serve_takes_the_floorline() -> None:
    # the decode step's hbm term per chip: the tensor-parallel shard's weights, less
    # under the floorline than with the cache, and the assumption said
    m = mesh("X=8", "tpu-v5e")
    cfg = model("llama-2-7b")
    floor = serve(cfg, m, batch=64, context=2048,
                  options=StepOptions(choices=Choices(traffic="weights")))
    counted = serve(cfg, m, batch=64, context=2048,
                    options=StepOptions(choices=Choices(traffic="weights_kv")))
    exact = serve(cfg, m, batch=64, context=2048)
    assert floor.decode.terms["hbm"] < counted.decode.terms["hbm"] < \
        exact.decode.terms["hbm"]
    # the cache per chip: 64 sequences x 2048 positions x 4 of the 32 KV heads' K and V
    cache = Fraction(64 * 2048 * L * 2 * 4 * 128 * 2)
    assert counted.decode.terms["hbm"] - floor.decode.terms["hbm"] == sp.Rational(
        cache.numerator, cache.denominator) / 810000000000
    assert any(a.startswith("traffic=weights: the weights alone") for a in floor.assumptions)
    assert not any("collectives as a text costs them" in a for a in floor.assumptions)


def test_refusals_name_the_choice() -> None:
    with pytest.raises(InputError, match="traffic is one of all, weights_kv, weights"):
        layer_ops(model("llama-2-7b"), "decode", batch=1, context=1, traffic="kv")
    with pytest.raises(InputError, match="latent attention"):
        layer_ops(model("deepseek-v2-lite"), "decode", batch=1, context=1,
                  traffic="weights_kv")
    with pytest.raises(InputError, match="traffic=weights_kv: deepseek-v2-lite"):
        step_on(model("deepseek-v2-lite"), "decode", chip("tpu-v5e"), batch=1, context=1,
                choices=Choices(traffic="weights_kv"))
    with pytest.raises(InputError, match="latency=off does not apply to it"):
        critical_batch(model("llama-2-7b"), chip("tpu-v5e"), context=1,
                       choices=Choices(traffic="weights", latency="off"))
