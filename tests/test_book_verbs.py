"""The command line says what Python says for item 4 of issue 36: a pipeline's sends
(``collective pipeline``), collectives issued together (``collective KIND --with ...``),
and ``collective --choices`` refusing the choices a collective does not take."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.choices import EXACT, LINK_CHOICES, OPTIONS, Choices
from symroof.core.parse import parse_expr
from symroof.parallel import collective, mesh, pipeline_sends, together
from tests.test_json_vocabulary import walk

ICI = Fraction(45 * 10**9)  # tpu-v5e ICI one way per link (B2)
H100_IB_PER_GPU = Fraction(400 * 10**9, 8)  # an H100 node's InfiniBand shared by 8 GPUs


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    found: list[str] = []
    walk(got, "$", found)
    assert not found, found
    return got


def test_pipeline_sends_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    # 16 stages, 8 microbatches of 2 x 4096 x 8192 bytes: 8 + 16 - 2 sends of an eighth,
    # at a GPU's 50 GB/s of the node's InfiniBand
    got = _json(capsys, "collective", "pipeline", "--bytes", "2*4096*8192", "--axes", "node",
                "--mesh", "node=16,gpu=8", "--chip", "h100-sxm", "--microbatches", "8")
    by_hand = Fraction(2 * 4096 * 8192, 8) * 22 / H100_IB_PER_GPU
    assert got["hops"] == "22"
    assert got["bandwidth_time"] == f"{by_hand.numerator}/{by_hand.denominator}"
    t = pipeline_sends(2 * 4096 * 8192, "node", mesh("node=16,gpu=8", "h100-sxm"), 8)
    assert got["time"] == str(t.time)
    assert main(["collective", "pipeline", "--bytes", "V", "--axes", "node", "--mesh",
                 "node=16,gpu=8", "--chip", "h100-sxm", "--microbatches", "4", "--stages",
                 "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pipeline sends over node on h100-sxm (mesh node=16,gpu=8, 4 "
                          "microbatches, 4 stages)\n")
    assert "  sends           6\n" in out


@settings(max_examples=10, deadline=None)
@given(microbatches=st.integers(1, 64), stages=st.integers(2, 64))
def test_the_pipeline_verb_is_pipeline_sends(microbatches: int, stages: int) -> None:
    import io
    from contextlib import redirect_stdout
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["collective", "pipeline", "--bytes", "V", "--axes", "X", "--mesh", "X=64",
                   "--chip", "tpu-v5e", "--microbatches", str(microbatches), "--stages",
                   str(stages), "--json"])
    assert rc == 0
    got = json.loads(out.getvalue())
    t = pipeline_sends("V", "X", mesh("X=64", "tpu-v5e"), microbatches, stages)
    assert got["hops"] == str(microbatches + stages - 2)
    assert parse_expr(got["time"]) == t.time


def test_collectives_together_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    # a gather and a scatter of V on a wrapped ring of 16, at once: 15/16 V over both
    # directions (2 x 45e9) each, their bytes adding on the ring's links
    v = 2 * 8192 * 32768
    got = _json(capsys, "collective", "allgather", "--bytes", str(v), "--axes", "X", "--mesh",
                "X=16", "--chip", "tpu-v5e", "--with", "reducescatter", "--choices",
                "concurrent=shared,latency=off")
    by_hand = 2 * Fraction(15, 16) * v / (2 * ICI)
    assert got["time"] == f"{by_hand.numerator}/{by_hand.denominator}"
    assert [c["collective"] for c in got["together"]] == [
        f"AllGather_X {v} bytes", f"ReduceScatter_X {v} bytes"]
    assert main(["collective", "allgather", "--bytes", str(v), "--axes", "X", "--mesh",
                 "X=16", "--chip", "tpu-v5e", "--with", "reducescatter", "--choices",
                 "concurrent=shared,latency=off"]) == 0
    out = capsys.readouterr().out
    assert "  time                             11.18 ms\n" in out
    assert "  concurrent                       shared: collectives issued together run at " \
        "once" in out


@pytest.mark.parametrize("concurrent", list(OPTIONS["concurrent"]))
def test_the_together_verb_is_together(concurrent: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    m = mesh("X=8,Y=4", "tpu-v5e")
    got = _json(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X", "--mesh",
                "X=8,Y=4", "--chip", "tpu-v5e", "--with", "reducescatter:2*V:XY", "--with",
                "permute:V:Y", "--choices", f"concurrent={concurrent}")
    made = together(collective("allgather", "V", "X", m),
                    collective("reducescatter", "2*V", "XY", m),
                    collective("permute", "V", "Y", m),
                    choices=Choices(concurrent=concurrent))
    assert parse_expr(got["time"]) == made.time
    assert {k: parse_expr(v) for k, v in got["per_link"].items()} == made.per_link


# every value of every choice a collective does not take, and the ones it takes
NOT_A_COLLECTIVES = [(name, value) for name, options in OPTIONS.items()
                     if name not in LINK_CHOICES for value in options
                     if value != getattr(EXACT, name)
                     and name not in ("optimizer", "checkpoints")]


@pytest.mark.parametrize(("name", "value"), NOT_A_COLLECTIVES)
def test_collective_choices_refuse_what_a_collective_does_not_take(
        name: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collective", "allgather", "--bytes", "1e6", "--axes", "X", "--mesh", "X=8",
                 "--chip", "tpu-v5e", "--choices", f"latency=off,{name}={value}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"symroof: error: --choices: a collective takes the choices collectives, "
                   f"latency, link_alpha, levels; {name}={value} does not apply to it"]


@pytest.mark.parametrize("name", LINK_CHOICES)
def test_collective_choices_take_what_a_collective_takes(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    value = next(v for v in OPTIONS[name] if v != getattr(EXACT, name))
    m = mesh("node=2,gpu=8", "h100-sxm")
    got = _json(capsys, "collective", "allreduce", "--bytes", "1e9", "--axes", "node,gpu",
                "--mesh", "node=2,gpu=8", "--chip", "h100-sxm", "--choices",
                f"{name}={value}")
    c = collective("allreduce", 10**9, "node,gpu", m).under(EXACT.with_(**{name: value}))
    assert parse_expr(got["time"]) == c.time
