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
           {"offload": ("weights",)}]


def _search(n: int, **options: Any) -> Search:
    return search(CFG, chip("h100-sxm"), n, batch=128, context=2048, **options)


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS)
def test_the_search_costs_each_plan_as_the_plan_does(options: dict[str, Any]) -> None:
    s = _search(64, **options)
    for c in s.ranking[:4]:
        plan = train(CFG, mesh(c.spec, "h100-sxm"), parse_strategy(c.strategy), batch=128,
                     context=2048, options=StepOptions(recompute=c.recompute,
                                                       microbatches=c.microbatches, **options))
        assert float(plan.t_lower) == pytest.approx(c.t_lower, rel=1e-12)
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


def test_a_search_under_a_calibration_says_which_of_its_conventions_it_leaves_out() -> None:
    from symroof.plans.calibration import parse_efficiency
    s = search(model("megatron-gpt-22b"), chip("a100-80gb"), 8, batch=4, context=2048,
               efficiency=parse_efficiency("megatron-a100"), optimizer="adam-megatron")
    said = [a for a in s.assumptions if a.startswith("the calibration's fractions")]
    assert said == ["the calibration's fractions were fitted under megatron-lm's conventions; "
                    "the search applies its optimizer only, not elementwise_kernels, overlap, "
                    "pipeline_sends, rerun_collectives: candidates rank by T_lower (overlap "
                    "phase); a training plan on the chosen mesh and strategy under the same "
                    "calibration gives its prediction"]
    assert not any(a.startswith("the calibration's") for a in _search(8).assumptions)
