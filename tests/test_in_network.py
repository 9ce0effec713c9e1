"""In-switch AllReduce (NVLS on an NVSwitch, SHARP on InfiniBand): exact terms, the laws
against the ring on the same link, and the command line's errors."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.errors import InputError
from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.parallel.collectives import all_reduce, collective
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.serving import Serving, serve
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import Plan, train

V = sp.Symbol("V", positive=True)
ALPHA = mesh("X=8", "h100-sxm").axis("X").latency  # NCCL's 0.6 us per NVLink step


def test_nvls_on_an_h100_node_is_v_over_w_in_two_steps() -> None:
    c = collective("allreduce", V, "X", mesh("X=8", "h100-sxm"), algorithm="nvls")
    assert c.bytes_per_device == V
    assert c.bytes_per_link == {"nvlink": V}
    assert c.bandwidth_time == V / 450_000_000_000
    assert c.hops == 2
    assert c.latency_time == 2 * ALPHA
    assert c.latency_bound_below == 900_000_000_000 * ALPHA
    assert c.title == "AllReduce_X V bytes (nvls)"


def test_sharp_runs_on_the_scale_out_axis() -> None:
    m = mesh("X=32,Y=8", "h100-sxm")
    c = collective("allreduce", V, "X", m, algorithm="sharp")
    assert c.bandwidth_time == V / 50_000_000_000
    assert c.bytes_per_link == {"ib": V}


def test_an_array_reduced_in_the_switch() -> None:
    c = all_reduce("bf16[B, D]", "X", mesh("X=4", "h100-sxm"), algorithm="NVLS")
    B, D = sp.symbols("B D", positive=True)
    assert c.algorithm == "nvls"
    assert c.bandwidth_time == 2 * B * D / 450_000_000_000


@given(st.integers(min_value=2, max_value=8))
def test_nvls_is_never_slower_than_the_ring_on_the_same_switch(n: int) -> None:
    m = mesh(f"X={n}", "h100-sxm")
    ring = collective("allreduce", V, "X", m)
    nvls = collective("allreduce", V, "X", m, algorithm="nvls")
    # bandwidth: V / W against 2 (n - 1)/n V / W; latency: 2 steps against 2 (n - 1)
    assert sp.simplify(ring.bandwidth_time - nvls.bandwidth_time) == \
        sp.Rational(n - 2, n) * V / 450_000_000_000
    assert sp.simplify(ring.hops - nvls.hops) == 2 * (n - 2)
    assert sp.expand(ring.time - nvls.time).is_nonnegative
    assert nvls.bytes_per_device == V  # each way, whatever n


def test_equal_to_the_ring_at_two_devices() -> None:
    m = mesh("X=2", "h100-sxm")
    assert collective("allreduce", V, "X", m).time == \
        collective("allreduce", V, "X", m, algorithm="nvls").time


@pytest.mark.parametrize(("kind", "spec", "chip", "algorithm", "message"), [
    ("allreduce", "X=8", "tpu-v5e", "nvls", "nvls needs a switch axis; axis X is a torus "
     "over ici"),
    ("allreduce", "X=8", "h100-sxm", "sharp", "sharp needs a scale-out axis; axis X is a "
     "switch over nvlink"),
    ("allreduce", "X=64", "h100-sxm", "nvls", "nvls runs on one switched network; axes X "
     "cross 2 networks (ib, nvlink)"),
    ("allgather", "X=8", "h100-sxm", "nvls", "nvls reduces in the switch: it runs an "
     "AllReduce only, not allgather"),
    ("allreduce", "X=8", "h100-sxm", "butterfly", "unknown collective algorithm 'butterfly' "
     "(known: ring, tree, nvls, sharp)"),
])
def test_bad_algorithm_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], kind: str,
                                              spec: str, chip: str, algorithm: str,
                                              message: str) -> None:
    code = main(["collective", kind, "--bytes", "V", "--axes", "X", "--mesh", spec, "--chip",
                 chip, "--algorithm", algorithm])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == f"symroof: error: --algorithm: {message}\n"


def test_the_python_api_refuses_an_unknown_algorithm() -> None:
    with pytest.raises(InputError, match="unknown collective algorithm 'ring2'"):
        collective("allreduce", V, "X", mesh("X=8", "h100-sxm"), algorithm="ring2")


def test_collective_verb_prints_and_writes_the_algorithm(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["collective", "allreduce", "--array", "bf16[B, D]", "--axes", "Y", "--mesh",
            "X=32,Y=8", "--chip", "h100-sxm", "--algorithm", "nvls", "--subs", "B=8,D=4096"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("AllReduce_Y bf16[B, D] (nvls) on h100-sxm")
    assert "(2 hops)" in text
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "nvls"
    assert out["bandwidth_time"] == str(Fraction(2 * 8 * 4096, 450 * 10**9))  # V / W
    assert out["bytes_per_device"] == str(2 * 8 * 4096)


# the bandwidth terms' ratios, with the links' per-hop latencies (NCCL's) set to 0
BANDWIDTH_ONLY = chip("h100-sxm").with_figures({"nvlink.latency": "0", "ib.latency": "0"})


def _plan(spec: str, strategy: str, in_network: bool) -> Plan:
    return train(model("llama-2-7b"), mesh(spec, BANDWIDTH_ONLY), parse_strategy(strategy),
                 batch=256, context=4096, options=StepOptions(in_network=in_network))


def test_a_training_plan_reduces_its_allreduces_in_the_switches() -> None:
    ring, nvls = (_plan("X=32,Y=8", "dp=X,tp=Y", x) for x in (False, True))
    tp, dp = "tp over Y (nvlink)", "dp over X (ib)"
    # the ring sends 2 (n-1)/n V, the switch V: 7/4 -> 1 over 8 GPUs, 31/16 -> 1 over 32 nodes
    assert nvls.terms[tp].time == ring.terms[tp].time * sp.Rational(4, 7)
    assert nvls.terms[dp].time == ring.terms[dp].time * sp.Rational(16, 31)
    assert nvls.terms["compute"] == ring.terms["compute"]
    assert nvls.t_lower <= ring.t_lower and nvls.t_upper < ring.t_upper
    assert f"{tp}: AllReduce reduced in the switch (nvls)" in nvls.assumptions
    assert f"{dp}: AllReduce reduced in the switch (sharp)" in nvls.assumptions


def test_an_axis_over_two_networks_keeps_its_ring() -> None:
    ring, nvls = (_plan("X=64", "dp=X", x) for x in (False, True))
    assert nvls.terms == ring.terms
    assert "dp over X (ib, nvlink): AllReduce as a ring (not one switched network)" in \
        nvls.assumptions


def _served(spec: str, strategy: str, in_network: bool, **kw: object) -> Serving:
    return serve(model("llama-2-7b"), mesh(spec, BANDWIDTH_ONLY), parse_strategy(strategy),
                 batch=64, context=2048, **kw, options=StepOptions(in_network=in_network))  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk", [None, 512])
def test_serving_reduces_its_tensor_parallel_allreduces_in_the_switch(
        chunk: int | None) -> None:
    ring, nvls = (_served("X=4,Y=8", "dp=X,tp=Y", x, chunk=chunk) for x in (False, True))
    for r, n in ((ring.prefill, nvls.prefill), (ring.decode, nvls.decode)):
        assert [c.algorithm for c in n.comms] == ["nvls", "nvls", "nvls", "ring"]
        for a, b in zip(r.comms, n.comms, strict=True):
            # the ring sends 2 (n-1)/n V = 7/4 V over 8 GPUs, the switch V; the AllGather stays
            assert b.time == a.time * (sp.Rational(4, 7) if b.algorithm == "nvls" else 1)
        assert (n.terms["compute"], n.terms["hbm"]) == (r.terms["compute"], r.terms["hbm"])
        assert n.t_lower < r.t_lower
    assert "tp over Y: AllReduce reduced in the switch (nvls)" in nvls.assumptions
    if chunk is not None:
        assert nvls.chunked is not None and ring.chunked is not None
        assert nvls.chunked.time < ring.chunked.time
        assert all(c.algorithm != "ring" for s in nvls.chunked.steps for c in s.comms
                   if c.collective == "allreduce")


def test_serving_tensor_axes_over_two_networks_keep_the_ring() -> None:
    ring, nvls = (_served("X=4,Y=8", "tp=X+Y", x) for x in (False, True))
    assert nvls.decode.terms == ring.decode.terms
    assert "tp over X+Y: AllReduce as a ring (the tensor axes are not one switched network)" \
        in nvls.assumptions


def test_plan_serve_lists_the_switch_reductions(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm",
                 "--in-network", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    algorithms = [(c["collective"], c["algorithm"]) for c in out["decode"]["collectives"]]
    assert algorithms == [("allreduce", "nvls")] * 3 + [("allgather", "ring")]
