"""Offloading to host memory: the host tier's bytes and terms, exact, and its laws."""

from __future__ import annotations

import itertools
from functools import cache

import pytest
import sympy as sp

from symroof.cli.main import main
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.offload import HOST, IN, OFFLOAD_PARTS, OUT, parse_offload
from symroof.plans.options import StepOptions
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import Plan, train

PCIE = 64 * 10**9  # H100 SXM, PCIe Gen5 x16, one way (NVIDIA's datasheet: 128 GB/s both ways)
PSI = 6_738_415_616  # LLaMA-2-7B's parameters (transformers' count)
SUBSETS = [c for r in (1, 2, 3) for c in itertools.combinations(OFFLOAD_PARTS, r)]


@cache
def plan(offload: tuple[str, ...] = ()) -> Plan:
    return train(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy("zero2=X"), batch=16,
                 context=4096, options=StepOptions(microbatch=1, offload=offload))


def test_optimizer_offload_moves_the_shard_and_its_traffic() -> None:
    p, base = plan(("optimizer",)), plan()
    shard = PSI // 8  # ZeRO-2 over 8: each device updates one eighth
    assert p.memory["optimizer"] == 0
    assert p.memory[HOST] == 12 * shard
    assert p.memory["total"] == base.memory["total"] - 12 * shard
    assert p.terms[OUT].phases == {"backward": sp.Rational(2 * shard, PCIE)}  # bf16 gradients
    assert p.terms[IN].phases == {"forward": sp.Rational(2 * shard, PCIE)}  # bf16 weights
    assert p.t_lower == base.t_lower  # 26.3 ms each way hides under the compute


def test_activation_offload_moves_every_microbatch_both_ways() -> None:
    p, base = plan(("activations",)), plan()
    acts = base.memory["activations"]  # one microbatch of one sequence
    assert p.memory["activations"] == acts / 32  # one layer's share of 32
    assert p.terms[OUT].phases == {"forward": 2 * acts / PCIE}  # 2 microbatches per step
    assert p.terms[IN].phases == {"backward": 2 * acts / PCIE}
    assert p.critical_note.startswith("never compute-bound: host link")


@pytest.mark.parametrize("what", SUBSETS, ids=",".join)
def test_laws_of_the_host_tier(what: tuple[str, ...]) -> None:
    p, base = plan(what), plan()
    kept = {k: p.memory[k] for k in what}
    # HBM holds less, the host holds what left it, nothing is lost
    assert p.memory["total"] < base.memory["total"]
    assert p.memory["total"] + p.memory[HOST] == base.memory["total"] + sum(kept.values())
    # the host link adds terms; compute is the same work; no bound gets faster
    assert p.terms["compute"] == base.terms["compute"]
    assert set(p.terms) - set(base.terms) <= {IN, OUT}
    assert p.t_lower >= base.t_lower and p.t_upper > base.t_upper


@pytest.mark.parametrize(("args", "message"), [
    (["--offload", "gradients"], "--offload: cannot offload 'gradients' (known: optimizer, "
     "weights, activations)"),
    (["--offload", "optimizer,optimizer"], "--offload: 'optimizer,optimizer' names a part "
     "twice"),
])
def test_bad_offload_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                            args: list[str], message: str) -> None:
    code = main(["plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "dp=X",
                 "--chip", "h100-sxm", "--batch", "16", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == f"symroof: error: {message}\n"


def test_serving_offloads_weights_or_kv(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--strategy", "tp=X",
                 "--chip", "h100-sxm", "--offload", "optimizer"])
    assert code == 2
    assert capsys.readouterr().err == ("symroof: error: --offload: a serving plan offloads "
                                       "weights or kv, not 'optimizer'\n")


def test_plan_prints_the_host_tier(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "zero2=X",
                 "--chip", "h100-sxm", "--batch", "8", "--context", "4096", "--offload",
                 "optimizer"]) == 0
    lines = [" ".join(x.split()) for x in capsys.readouterr().out.splitlines()]
    assert "optimizer 0 0 B" in lines
    assert "host (offloaded) 10107623424 10.11 GB" in lines  # 12 B x Psi / 8
    assert "host link in (pcie) 26.32 ms 0 ns 26.32 ms" in lines


def test_parse_offload_orders_the_parts() -> None:
    assert parse_offload("ACTIVATIONS,weights") == ("weights", "activations")
    assert parse_offload(None) == ()
