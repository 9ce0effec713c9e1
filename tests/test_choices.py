"""Modelling choices as data, taken by the collectives: the exact ring, its leading term,
latency on or off, the link convention."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.choices import BOOK, CANDIDATES, EXACT, OPTIONS, Choices, tried
from symroof.core.errors import InputError
from symroof.parallel.collectives import all_gather, all_reduce, all_to_all, collective
from symroof.parallel.mesh import mesh

B, D = sp.symbols("B D", positive=True)


def test_every_field_has_values_with_meanings_and_the_exact_model_is_the_first() -> None:
    for name, options in OPTIONS.items():
        assert getattr(EXACT, name) == next(iter(options))
        assert all(meaning and "\n" not in meaning for meaning in options.values())
    assert [line.split(" = ")[0] for line in EXACT.lines()] == list(OPTIONS)
    assert BOOK.describe() == "collectives=leading, latency=off"
    assert Choices(optimizer="bytes_per_param", optimizer_bytes=12).describe() == \
        "optimizer=bytes_per_param=12"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"latency": "maybe"},
     r"choice latency: unknown value 'maybe' \(choices: on, off, per_message\)"),
    ({"optimizer": "bytes_per_param"}, r"choice optimizer: bytes_per_param goes with its k"),
    ({"checkpoints": "k_tensors_of_D", "checkpoint_tensors": 0},
     r"choice checkpoints: k must be a positive whole number, got 0"),
])
def test_a_bad_choice_is_an_input_error_naming_the_field(kwargs: dict[str, object],
                                                          message: str) -> None:
    with pytest.raises(InputError, match=message):
        Choices(**kwargs)  # type: ignore[arg-type]


def test_an_unknown_field_is_named() -> None:
    with pytest.raises(InputError, match=r"unknown choice 'latncy'"):
        EXACT.with_(latncy="off")


def test_the_book_s_allgather_is_v_over_the_bidirectional_figure() -> None:
    m = mesh("X=16", "tpu-v5e")
    ag = all_gather("bf16[B_X, D]", "X", m)
    w = 45 * 10**9  # one-way ICI bytes/s of a v5e link (the catalogue's figure)
    assert ag.bandwidth_time == sp.Rational(15, 16) * 2 * B * D / (2 * w)
    assert ag.latency_time == 8 * sp.Rational(1, 10**6)  # floor(16/2) hops of 1 us
    book = ag.under(BOOK)
    assert book.time == 2 * B * D / (2 * w) and book.latency_time == 0
    assert book.choices == BOOK and ag.choices == EXACT
    one_way = ag.under(BOOK.with_(link_alpha="one_way"))
    assert one_way.time == 2 * B * D / w


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=2, max_value=16), wraps=st.booleans())
def test_the_leading_term_drops_exactly_the_ring_factor(n: int, wraps: bool) -> None:
    m = mesh(f"X={n}", "tpu-v5e")
    if m.axis("X").wraps != wraps:
        m = m.with_axis("X", wraps=wraps)
    exact = collective("allgather", "V", "X", m)
    lead = exact.under(Choices(collectives="leading"))
    assert sp.simplify(lead.bandwidth_time * (n - 1) / n - exact.bandwidth_time) == 0
    assert exact.under(Choices(latency="off")).latency_time == 0
    assert lead.latency_time >= exact.latency_time


def test_other_collectives_take_the_choices() -> None:
    m = mesh("X=8", "tpu-v5e")
    ar = all_reduce("bf16[B, D]", "X", m)
    # a line of 8 (no wraparound): ReduceScatter + AllGather, each V/W as a leading term
    assert ar.under(BOOK).bandwidth_time == 2 * (2 * B * D) / (45 * 10**9)
    assert ar.under(BOOK).bandwidth_time * sp.Rational(7, 8) == ar.bandwidth_time
    a2a = all_to_all("bf16[B_X, D]", "X", m)
    assert a2a.under(Choices(latency="off")).latency_time == 0
    assert a2a.under(Choices(collectives="leading")).bandwidth_time.has(sp.floor) is False


def test_tried_keeps_only_candidates_whose_every_change_matters() -> None:
    calls = []

    def make(c: Choices) -> int:
        calls.append(c)
        return 10 + (0 if c.latency == "off" else 1)  # only the latency matters

    t = tried(make)
    assert t.value == 11
    assert [c.describe() for c, _ in t.alternatives] == ["latency=off"]
    assert len(calls) == 1 + len(CANDIDATES)


def test_the_collective_command_takes_choices_and_prints_them() -> None:
    import json

    from tests.conftest import run_cli
    base = ("collective", "allgather", "--array", "bf16[B_X, D]", "--mesh", "X=16", "--axes",
            "X", "--subs", "B=4096,D=8192")
    got = run_cli(*base, "--choices", "book")
    assert got.returncode == 0, got.stderr
    assert "  choice                         latency = off: no latency term: bandwidth alone" \
        in got.stdout.splitlines()
    data = json.loads(run_cli(*base, "--choices", "book", "--json").stdout)
    # V / (2 W): 2 * 4096 * 8192 bytes over 2 * 4.5e10 B/s
    assert data["time"] == str(sp.Rational(2 * 4096 * 8192, 2 * 45 * 10**9))
    assert data["latency_bound_below"] is None
    assert data["choices"]["collectives"] == "leading"
    bad = run_cli(*base, "--choices", "latency=maybe")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "symroof: error: --choices: choice latency: unknown value 'maybe' (choices: on, off, "
        "per_message)")


def test_parse_choices_reads_presets_and_pairs() -> None:
    from symroof.core.choices import parse_choices
    assert parse_choices("collectives=leading, latency=off") == BOOK
    assert parse_choices("checkpoints=k_tensors_of_D=4").checkpoint_tensors == 4
    with pytest.raises(InputError, match=r"^choices: only optimizer and checkpoints take a k"):
        parse_choices("latency=off=3")
    with pytest.raises(InputError, match=r"^choices: expected a preset \(exact, book\)"):
        parse_choices("fast")


def test_model_counts_under_a_book_s_choices() -> None:
    from symroof.models import attention_flops, flops_per_token, model, params
    from symroof.models.chosen import flops_under, nominal_params, optimizer_bytes
    cfg = model("llama-2-7b")
    t = 4096
    assert flops_under(cfg, t) == flops_per_token(cfg, t)
    assert flops_under(cfg, t, Choices(flops="causal")) == \
        flops_per_token(cfg, t) - attention_flops(cfg, t) / 2
    assert flops_under(cfg, t, Choices(flops="per_token_2P")) == 2 * params(cfg).active
    assert flops_under(cfg, t, Choices(flops="per_token_6P", sizes="nominal")) == 6 * 7 * 10**9
    moe = model("deepseek-v2-lite")  # published "15.7B total, 2.4B activated"
    assert nominal_params(moe) == 15_700_000_000
    assert flops_under(moe, t, Choices(flops="per_token_2P", sizes="nominal")) == 4_800_000_000
    assert [optimizer_bytes(Choices(optimizer=o)) for o in ("zero16", "megatron18")] == [16, 18]
    assert optimizer_bytes(Choices(optimizer="bytes_per_param", optimizer_bytes=12)) == 12
    with pytest.raises(InputError, match="nominal sizes go with a per-token count"):
        flops_under(cfg, t, Choices(sizes="nominal"))


def test_training_memory_presets_and_checkpoint_policies_decide_the_fewest_chips() -> None:
    from symroof import chip
    from symroof.models import activation_bytes, model, params
    from symroof.models.chosen import activation_bytes_under, training_min_chips
    cfg, h100 = model("llama-2-7b"), chip("h100-sxm")
    p = params(cfg).total
    bound, n = training_min_chips(cfg, h100)
    assert bound == 16 * p / h100.capacity("hbm") and n == 2  # ZeRO's 16 bytes per parameter
    megatron = training_min_chips(cfg, h100, Choices(optimizer="megatron18"))[0]
    assert megatron == 18 * p / h100.capacity("hbm")
    # a text's "2 tensors of D per layer" (bf16) for 1M tokens in flight
    k2 = Choices(checkpoints="k_tensors_of_D", checkpoint_tensors=2)
    assert activation_bytes_under(cfg, 4096, k2) == 2 * 4096 * 32 * 2
    bound2, n2 = training_min_chips(cfg, h100, k2, tokens=2**20, context=4096)
    assert bound2 == (16 * p + 2**20 * 2 * 4096 * 32 * 2) / h100.capacity("hbm")
    assert n2 == sp.ceiling(bound2)
    full = Choices(checkpoints="full")
    assert activation_bytes_under(cfg, 4096, full) == \
        activation_bytes(cfg, "full", context=4096).total


def test_a_decode_step_in_the_book_s_form() -> None:
    from symroof import chip
    from symroof.models import kv_bytes_per_token, model, params
    from symroof.models.chosen import book_decode_time
    cfg, h100 = model("llama-2-7b"), chip("h100-sxm")
    got = book_decode_time(cfg, h100, 8, 4096)
    assert got == (2 * params(cfg).total + 8 * 4096 * kv_bytes_per_token(cfg)) / \
        h100.bandwidth("hbm")
    # "a 7B model in bf16 reads 14 GB per step: 14e9 / 3.35e12 = 4.18 ms"
    assert book_decode_time(cfg, h100, 1, 0, Choices(sizes="nominal")) == \
        sp.Rational(14 * 10**9, 335 * 10**10)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["allgather", "reducescatter", "allreduce"]),
       n=st.integers(min_value=2, max_value=16), wraps=st.booleans(),
       name=st.sampled_from(["tpu-v5e", "h100-sxm"]))
def test_v_over_w_drops_exactly_the_ring_s_factor(kind: str, n: int, wraps: bool,
                                                   name: str) -> None:
    # a text's V/W: an AllReduce's bandwidth term without 2(n-1)/n, an AllGather's and a
    # ReduceScatter's without (n-1)/n (their leading term); one pass of the ring (on one
    # network: an H100 axis within its 8-GPU box)
    n = n if name == "tpu-v5e" else min(n, 8)
    m = mesh(f"X={n}", name)
    if name == "tpu-v5e" and m.axis("X").wraps != wraps:
        m = m.with_axis("X", wraps=wraps)
    exact = collective(kind, "V", "X", m)
    slipped = exact.under(Choices(collectives="v_over_w"))
    factor = sp.Rational(2 * (n - 1), n) if kind == "allreduce" else sp.Rational(n - 1, n)
    assert sp.simplify(slipped.bandwidth_time * factor - exact.bandwidth_time) == 0
    gather = collective("allgather", "V", "X", m).under(Choices(collectives="leading"))
    assert slipped.bandwidth_time == gather.bandwidth_time
    assert slipped.hops == gather.hops
    if kind != "allreduce":  # the leading term itself
        assert slipped.time == exact.under(Choices(collectives="leading")).time


def test_a_slip_that_gives_what_a_choice_gives_is_left_to_the_choice() -> None:
    m = mesh("X=16", "tpu-v5e")
    gather, reduce = (collective(k, 10**6, "X", m) for k in ("allgather", "allreduce"))
    described = [c.describe() for c, _ in tried(lambda c: gather.under(c).time).alternatives]
    assert "collectives=leading" in described  # an AllGather's V/W: its leading term
    assert "collectives=v_over_w" not in " ".join(described)
    described = [c.describe() for c, _ in tried(lambda c: reduce.under(c).time).alternatives]
    assert "collectives=v_over_w" in described and \
        "collectives=v_over_w, latency=off" in described
