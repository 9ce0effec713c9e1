"""The training search with in-switch reduction and offloading: every candidate costed by
the plan's own formulas (the chosen ones rebuilt exactly agree), the in-switch search never
slower, the notes said."""

from __future__ import annotations

from typing import Any

import pytest

from symroof.cli.main import main
from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.options import StepOptions
from symroof.plans.search import Search, search
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import train

CFG = model("llama-2-7b")
OPTIONS = [{"in_network": True}, {"offload": ("optimizer",)},
           {"offload": ("optimizer", "activations"), "in_network": True},
           {"offload": ("weights",)},
           {"offload": ("optimizer", "activations"), "in_network": True, "overlap": "op"}]


def _search(n: int, **options: Any) -> Search:
    return search(CFG, chip("h100-sxm"), n, batch=128, context=2048, **options)


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS)
def test_the_search_costs_each_plan_as_the_plan_does(options: dict[str, Any]) -> None:
    s = _search(64, **options)  # the four fastest, and the fastest interleaved pipeline
    for c in (*s.ranking[:4], next(c for c in s.every if c.chunks > 1)):
        plan = train(CFG, mesh(c.spec, "h100-sxm"), parse_strategy(c.strategy), batch=128,
                     context=2048, options=StepOptions(recompute=c.recompute,
                                                       microbatches=c.microbatches,
                                                       interleave=c.chunks, **options))
        assert float(plan.t_lower) == pytest.approx(c.t_lower, rel=1e-12)
        assert plan.predicted is not None
        assert float(plan.predicted) == pytest.approx(c.predicted, rel=1e-12)
        assert float(plan.memory["total"]) == pytest.approx(c.memory, rel=1e-12)
        assert plan.fits


@pytest.mark.parametrize("n", [16, 64])
def test_reducing_in_the_switch_is_never_slower(n: int) -> None:
    ring, nvls = _search(n), _search(n, in_network=True)
    assert nvls.best.t_lower <= ring.best.t_lower
    assert nvls.searched == ring.searched
    assert any(a.startswith("every AllReduce over one switched network reduced in the "
                            "switch (nvls") for a in nvls.assumptions)


def test_offloading_the_optimizer_lets_more_plans_fit() -> None:
    plain, off = _search(64), _search(64, offload=("optimizer",))
    assert off.feasible >= plain.feasible
    assert off.plan.memory["optimizer"] == 0
    assert any(a.startswith("in every candidate: optimizer offloaded")
               for a in off.assumptions)


def test_the_command_line_searches_with_both(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "llama-2-7b", "--train", "--search", "16", "--chip", "h100-sxm",
                 "--batch", "64", "--context", "2048", "--in-network", "--offload",
                 "optimizer", "--price", "2 USD/h"])
    out = capsys.readouterr().out
    assert code == 0
    assert "search over 16 chips:" in out
    assert "host link" in out and "reduced in the switch" in out
    assert "cost at 2 USD per chip-hour" in out


def test_a_search_not_given_its_calibrations_conventions_says_which_it_leaves_out() -> None:
    from symroof.plans.calibration import parse_efficiency
    s = search(model("megatron-gpt-22b"), chip("a100-80gb"), 8, batch=4, context=2048,
               efficiency=parse_efficiency("megatron-a100"), optimizer="adam-megatron")
    said = [a for a in s.assumptions if a.startswith("the calibration's fractions")]
    assert said == ["the calibration's fractions were fitted under megatron-lm's conventions, "
                    "which this search was not given: its candidates run none of "
                    "elementwise_kernels, pipeline_sends, rerun_collectives"]
    assert not any(a.startswith("the calibration's") for a in _search(8).assumptions)


def test_a_search_under_a_calibration_runs_its_conventions_as_the_plan_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the command line: the calibration brings Megatron-LM's conventions to every candidate
    # (overlap op among them), so the chosen plan's predicted time is the search's and the
    # one `plan --train` prints for that mesh and strategy
    import json
    argv = ["plan", "megatron-gpt-22b", "--train", "--chip", "a100-80gb", "--batch", "16",
            "--context", "2048", "--recompute", "full", "--efficiency", "megatron-a100",
            "--json"]
    assert main([*argv, "--search", "16"]) == 0
    found = json.loads(capsys.readouterr().out)
    best = found["search"]["ranking"][0]
    assert found["search"]["overlap"] == "op"
    assert any(a.startswith("in every candidate: megatron-lm's conventions, optimizer "
                            "adam-megatron, overlap op, rerun_collectives yes")
               for a in found["search"]["assumptions"])
    assert not any(a.startswith("the calibration's fractions")
                   for a in found["search"]["assumptions"])
    assert main([*argv, "--mesh", best["mesh"], "--strategy", best["strategy"],
                 "--microbatches", str(found["microbatches"]),
                 "--interleave", str(best["chunks"])]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["overlap"] == "op"
    assert plan["predicted_value"] == pytest.approx(best["predicted"], rel=1e-9)
    assert found["predicted_value"] == plan["predicted_value"]


@pytest.mark.parametrize("rule", ["none", "op"])
def test_the_command_line_searches_under_the_overlap_rule_it_is_given(
        rule: str, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    argv = ["plan", "gpt2", "--train", "--search", "8", "--chip", "h100-sxm", "--batch", "64",
            "--context", "1024", "--overlap", rule]
    assert main([*argv, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    ranking = found["search"]["ranking"]
    assert found["search"]["overlap"] == found["overlap"] == rule
    assert [r["predicted"] for r in ranking] == sorted(r["predicted"] for r in ranking)
    assert ranking[0]["predicted"] == pytest.approx(found["predicted_value"], rel=1e-9)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"predicted ({rule})" in text.splitlines()[1]
    assert f"- candidates rank by their predicted step time under overlap {rule}: " in text


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["phase", "op"])
def test_a_mixture_of_experts_is_searched_as_its_plans_predict(rule: str) -> None:
    # the expert weights a microbatch reads grow with the experts its tokens reach, not as a
    # polynomial in the microbatch: the search evaluates them at each microbatch it tries
    cfg = model("mixtral-8x7b")
    s = search(cfg, chip("h100-sxm"), 16, batch=64, context=2048, recompute="any",
               overlap=rule)
    assert any("ep=" in c.strategy for c in s.every)
    for c in s.every[:: len(s.every) // 5]:
        plan = train(cfg, mesh(c.spec, "h100-sxm"), parse_strategy(c.strategy), batch=64,
                     context=2048, options=StepOptions(recompute=c.recompute,
                                                       microbatches=c.microbatches,
                                                       interleave=c.chunks, overlap=rule))
        assert plan.predicted is not None
        assert float(plan.predicted) == pytest.approx(c.predicted, rel=1e-9)
        assert float(plan.memory["total"]) == pytest.approx(c.memory, rel=1e-9)
