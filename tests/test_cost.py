"""Cost per step and per token from a stated price per chip-hour: exact, its laws, errors."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.errors import InputError
from symroof.models import model, params
from symroof.models.layers import layer_ops
from symroof.plans.cost import cost_of, parse_price

H100_BF16 = 9894 * 10**11  # FLOP/s, the catalogue's H100 SXM dense bf16 peak (NVIDIA's 989.4)
H100_HBM = 335 * 10**10  # B/s, the catalogue's H100 SXM HBM bandwidth
H100_VPU_FP32 = 335 * 10**11  # FLOP/s, the catalogue's vpu.fp32 (FMA counted as one)
TRAIN = ["plan", "llama-2-7b", "--train", "--chip", "h100-sxm", "--context", "4096"]


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("2.5 USD/h", sp.Rational(5, 2), "USD"), ("2.5USD/chip-hour", sp.Rational(5, 2), "USD"),
    ("0.05 EUR/min", 3, "EUR"), ("1e-3 $/s", sp.Rational(18, 5), "$"),
])
def test_prices_in_any_time_unit_are_per_chip_hour(text: str, amount: sp.Expr,
                                                   currency: str) -> None:
    p = parse_price(text)
    assert (p.amount, p.currency, p.stated) == (amount, currency, text)


@given(st.decimals(min_value=Decimal("0.001"), max_value=Decimal("1000"), places=3))
def test_a_price_per_minute_is_sixty_per_hour(x: Decimal) -> None:
    assert parse_price(f"{x} USD/min").amount == 60 * parse_price(f"{x} USD/h").amount
    assert parse_price(f"{x} USD/s").amount == 3600 * parse_price(f"{x} USD/h").amount


@given(st.integers(1, 4096), st.fractions(min_value=sp.Rational(1, 1000), max_value=10),
       st.integers(1, 10**7))
def test_cost_is_price_times_chip_seconds(chips: int, seconds: object, tokens: int) -> None:
    c = cost_of(parse_price("2.5 USD/h"), chips=chips, seconds=sp.Rational(seconds),
                tokens=tokens, what="step")
    assert c.per_step == sp.Rational(5, 2) * chips * sp.Rational(seconds) / 3600
    assert c.per_token * tokens == c.per_step
    assert c.per_million_tokens == 10**6 * c.per_token


def test_compute_bound_training_costs_its_ops_and_its_optimizer_step(
        capsys: pytest.CaptureFixture[str]) -> None:
    # at the compute bound a token costs price x (its ops' FLOPs / their unit's peak: the
    # matrix ops at the bf16 peak, the norms and the lookup at the vector unit's fp32 one,
    # three times the forward's for the backward's input- and weight-gradient ops) plus its
    # share of the optimizer step (ZeRO-2 over 8: bf16 weights whole, 2 + 12 bytes a
    # parameter of gradients and Adam state split; reads gradients and state, writes weights
    # and state, at the H100's 3.35 TB/s)
    ops = layer_ops(model("llama-2-7b"), "prefill", batch=1, context=4096,
                    attention="materialised")
    seconds = sum((b.count * o.flops / (H100_BF16 if o.compute == "mxu" else H100_VPU_FP32)
                   for b, o in ops.rows()), sp.S.Zero)
    n = params(model("llama-2-7b")).total
    optimizer = (2 * n + sp.Rational(2 + 2 * 12, 8) * n) / H100_HBM
    expected = sp.Rational(5, 2) / 3600 * (3 * seconds / 4096 + 8 * optimizer / (8 * 4096))
    small = as_json(capsys, *TRAIN, "--mesh", "X=8", "--strategy", "zero2=X", "--batch", "8",
                    "--price", "2.5 USD/h")
    large = as_json(capsys, *TRAIN, "--search", "32", "--batch", "128", "--price",
                    "2.5 USD/h")
    assert small["bound"] == large["bound"] == "compute"
    (cost,) = small["cost"]  # type: ignore[misc]
    assert sp.Rational(cost["per_token"]) == expected
    assert cost["price"] == "2.5 USD/h" and cost["currency"] == "USD"
    (cost,) = large["cost"]  # type: ignore[misc]
    assert sp.Rational(cost["per_step"]) == sp.Rational(5, 2) / 3600 * 32 * sp.Rational(
        large["t_lower"])  # type: ignore[arg-type]


def test_serving_prices_a_decode_token_at_the_step_latency(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = as_json(capsys, "plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--strategy",
                  "tp=X", "--chip", "h100-sxm", "--batch", "64", "--context", "2048",
                  "--price", "2.5 USD/h")
    prefill, decode = out["cost"]  # type: ignore[misc]
    assert (prefill["what"], decode["what"]) == ("prefill step", "decode step")
    assert decode["tokens"] == "64"
    latency = sp.Rational(out["decode"]["t_lower"])  # type: ignore[index]
    assert sp.Rational(decode["per_token"]) == sp.Rational(5, 2) / 3600 * 8 * latency / 64


def test_the_text_view_states_the_price_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*TRAIN, "--mesh", "X=8", "--strategy", "zero2=X", "--batch", "8", "--price",
                 "2.5 USD/h"]) == 0
    lines = capsys.readouterr().out.splitlines()  # T_upper with NCCL's per-hop latency
    i = lines.index("cost at 2.5 USD per chip-hour (the price given, '2.5 USD/h'):")
    assert lines[i + 1].startswith("training step: 0.0011197 USD per step of 201.5 ms on 8 "
                                   "chips (0.0019507 USD at T_upper); 0.03417 USD per million "
                                   "tokens")


@pytest.mark.parametrize(("price", "message"), [
    ("2.5", "--price: expected a price per chip and time such as '2.5 USD/h', got '2.5'"),
    ("USD 2.5/h", "--price: expected a price per chip and time such as '2.5 USD/h'"),
    ("0 USD/h", "--price: a price must be positive, got '0 USD/h'"),
    ("2.5 USD/week", "--price: expected a price per chip and time"),
])
def test_bad_price_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], price: str,
                                          message: str) -> None:
    code = main([*TRAIN, "--mesh", "X=8", "--strategy", "dp=X", "--batch", "8", "--price",
                 price])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"symroof: error: {message}") and err.count("\n") == 1


def test_a_price_needs_a_plan() -> None:
    with pytest.raises(InputError, match="a price is for a plan"):
        from symroof.commands.plan import PlanRequest
        PlanRequest(model="llama-2-7b", mode="train", chip="h100-sxm", laws=True,
                    price="2.5 USD/h").checked()
