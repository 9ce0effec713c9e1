"""Published figures against symroof: the bound at peak, the prediction under a calibration,
the relative error, and whether the figure was used to calibrate.

>>> rows = compare("korthikanti2022", "megatron-a100")
>>> sum(r.calibrated for r in rows), sorted({r.kind for r in rows})
(1, ['memory', 'time'])
>>> all(r.bound is None or r.bound[0] <= r.published for r in rows)
True

A time row's prediction is ``symroof.plans.megatron.iteration`` at the calibration's
fractions (every term of a microbatch slot in series, as Megatron-LM runs them); its bound
is the same iteration at peak, T_lower (the slowest term of each slot) and T_upper (all in
series). A memory row's prediction is the paper's convention for it (18 bytes per
parameter over the layers' weight matrices; activations per sections 4 and 5), exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from .calibration import calibration
from .megatron import Iteration, Run, activations, iteration, parameters_optimizer
from .published import Figure, published

MODE_NAMES = {"full": "full recomputation", "sequence+selective":
              "sequence parallel + selective recomputation", "none": "no recomputation"}


@dataclass(frozen=True)
class Row:
    """One published figure and symroof's figures for it (seconds or bytes per GPU)."""

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

    @property
    def error(self) -> Expr:
        """(predicted - published) / published."""
        return (self.predicted - self.published) / self.published

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "what": self.what, "unit": self.unit,
                "published": float(self.published), "predicted": float(self.predicted),
                "bound": None if self.bound is None else
                {"t_lower": float(self.bound[0]), "t_upper": float(self.bound[1])},
                "error": float(self.error), "calibrated": self.calibrated,
                "terms": {k: float(v) for k, v in self.terms.items()},
                "choices": dict(self.choices)}


def _choices(run: Run, **more: str) -> dict[str, str]:
    return {"recompute": run.recompute, "sequence_parallel": str(run.sequence_parallel).lower(),
            "interleave": str(run.interleave), "optimizer": "adam-megatron", **more}


def _time_row(fig: Figure, it: Iteration, eff_name: str, calibrated: bool) -> Row:
    eff = calibration(eff_name).efficiency()
    predicted = it.time(eff)
    label = it.run.cfg.name
    slot = sp.Add(*(x.time / eff.of(x.resource) for x in it.per_microbatch))
    terms = {**it.by_resource(eff), "bubble (of the above)": (it.slots - it.run.microbatches)
             * slot}
    return Row(f"{fig.source}", f"time per iteration, {label}, {MODE_NAMES[fig.mode]}",
               "time", "s", fig.value, predicted, (it.t_lower, it.t_upper), calibrated,
               terms, _choices(it.run, efficiency=eff_name, schedule="interleaved 1F1B, the "
                               "terms of a slot in series"))


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
            rows.append(_time_row(fig, iteration(run), eff_name, calibrated))
            continue
        value = parameters_optimizer(run) if fig.what == "parameters + optimizer" \
            else activations(run)
        rows.append(Row(f"{fig.source}, {fig.what}", f"memory per GPU, {fig.what}, {run.cfg.name}, "
                        f"{MODE_NAMES[fig.mode]}", "memory", "B", fig.value, value, None,
                        False, {}, _choices(run, sizes="megatron: 12 h^2 per layer, 18 bytes "
                                            "per parameter")))
    return rows


def mean_abs_error(rows: list[Row], kind: str) -> Expr:
    """Mean |error| over the rows of ``kind`` not used to calibrate."""
    chosen = [r for r in rows if r.kind == kind and not r.calibrated]
    return sp.Add(*(abs(r.error) for r in chosen)) / len(chosen)
