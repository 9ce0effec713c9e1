"""Published figures against symroof: the bound at peak, the prediction under a calibration,
the relative error, and whether the figure was used to calibrate.

>>> rows = compare("korthikanti2022", "megatron-a100")
>>> sum(r.calibrated for r in rows), sorted({r.kind for r in rows})
(1, ['memory', 'time'])
>>> all(r.bound is None or r.bound[0] <= r.published for r in rows)
True

A time row's prediction is the ``predicted`` time of ``symroof plan ... --train`` for the run
under the calibration (``PlanRequest.run``, the function the command runs; the row carries
the command), with the conventions the calibration brings; its bound is the same plan at
peak, T_lower and T_upper. A memory row's prediction is the same plan's memory per GPU:
its weights, gradients and optimizer state, or its activations.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from ..models.memory import OUTSIDE_PART
from ..plans.calibration import calibration
from ..plans.published import Figure, Run, published
from ..plans.training import Plan
from .plan import PlanRequest

MODE_NAMES = {"full": "full recomputation", "sequence+selective":
              "sequence parallel + selective recomputation", "none": "no recomputation"}


@dataclass(frozen=True)
class Row:
    """One published figure and symroof's figures for it (seconds or bytes per GPU), and
    the command that gives symroof's."""

    source: str
    what: str
    kind: str
    unit: str
    published: Expr
    predicted: Expr
    bound: tuple[Expr, Expr] | None
    calibrated: bool
    terms: dict[str, Expr]
    choices: dict[str, str]
    command: str = ""
    binding: str = ""  # the term that binds the predicted step (a time row's)

    @property
    def error(self) -> Expr:
        """(predicted - published) / published."""
        return (self.predicted - self.published) / self.published

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "what": self.what, "unit": self.unit,
                "published": float(self.published), "predicted": float(self.predicted),
                "predicted_exact": sp.sstr(self.predicted),
                "bound": None if self.bound is None else
                {"t_lower": float(self.bound[0]), "t_upper": float(self.bound[1])},
                "error": float(self.error), "calibrated": self.calibrated,
                "terms": {k: float(v) for k, v in self.terms.items()},
                "choices": dict(self.choices), "command": self.command,
                "binding": self.binding}


def plan_of(run: Run, efficiency: str | None) -> Plan:
    """``symroof plan ... --train`` of ``run`` under ``efficiency`` (``run.command``)."""
    plan = PlanRequest(**run.options(), efficiency=efficiency).run().train
    assert plan is not None
    return plan


def _choices(run: Run, plan: Plan, **more: str) -> dict[str, str]:
    return {"recompute": run.recompute, "sequence_parallel": str(run.sequence_parallel).lower(),
            "interleave": str(run.interleave), "overlap": plan.overlap, **more}


def _time_row(fig: Figure, run: Run, eff_name: str, calibrated: bool) -> Row:
    plan = plan_of(run, eff_name)
    peak = plan_of(run, None)
    assert plan.predicted is not None
    return Row(fig.source, f"time per iteration, {run.model}, {MODE_NAMES[fig.mode]}",
               "time", "s", fig.value, plan.predicted, (peak.t_lower, peak.t_upper),
               calibrated, {k: x.time for k, x in plan.terms.items()},
               _choices(run, plan, efficiency=eff_name), run.command(eff_name), plan.bound)


def compare(paper: str, eff_name: str) -> list[Row]:
    """Every figure of ``paper`` against symroof under calibration ``eff_name``."""
    pub = published(paper)
    cal = calibration(eff_name)
    fit = cal.fitted
    rows: list[Row] = []
    for fig in pub.figures:
        run = pub.run(fig.run, fig.mode)
        if fig.kind == "time":
            calibrated = fit is not None and fit.paper == paper and \
                (fit.run, fit.mode) == (fig.run, fig.mode)
            rows.append(_time_row(fig, run, eff_name, calibrated))
            continue
        plan = plan_of(run, eff_name)
        value = sp.Add(*(plan.memory[k] for k in ("weights", "gradients", "optimizer"))) \
            if fig.what == "parameters + optimizer" else \
            plan.memory["activations"] + plan.memory[OUTSIDE_PART]  # in the layers and out
        rows.append(Row(f"{fig.source}, {fig.what}", f"memory per GPU, {fig.what}, {run.model}, "
                        f"{MODE_NAMES[fig.mode]}", "memory", "B", fig.value, value, None,
                        False, {}, _choices(run, plan, efficiency=eff_name),
                        run.command(eff_name)))
    return rows


def mean_abs_error(rows: list[Row], kind: str) -> Expr:
    """Mean |error| over the rows of ``kind`` not used to calibrate."""
    chosen = [r for r in rows if r.kind == kind and not r.calibrated]
    return sp.Add(*(abs(r.error) for r in chosen)) / len(chosen)
