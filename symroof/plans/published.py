"""Published training runs and what they measured, bundled as data with their sources.

>>> runs = published("korthikanti2022")
>>> r = runs.run("megatron-gpt-175b", "full")
>>> r.tensor, r.pipeline, r.interleave, r.microbatches
(8, 8, 3, 64)
>>> [f.what for f in runs.figures][:2]
['time', 'time']

A figure is one published number: an iteration time in seconds, or memory per GPU in bytes
(parameters and optimizer state, or activations), with the table or figure it comes from.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.units import BANDWIDTH, parse_quantity

GIB = 2**30
# a paper's recomputation mode -> (plan --train's --recompute, sequence parallelism)
MODES: dict[str, tuple[str, bool]] = {
    "none": ("none", False), "sequence": ("none", True), "selective": ("selective", False),
    "sequence+selective": ("selective", True), "full": ("full", False),
    "sequence+full": ("full", True),
}


@dataclass(frozen=True)
class Figure:
    """One published number: ``what`` is ``time`` (seconds), ``parameters + optimizer`` or
    ``activations`` (bytes per GPU) of run ``run`` under ``mode``."""

    run: str
    mode: str
    what: str
    value: Expr
    source: str

    @property
    def kind(self) -> str:
        return "time" if self.what == "time" else "memory"


@dataclass(frozen=True)
class Run:
    """One published training configuration: ``tensor`` x ``pipeline`` x ``data`` GPUs,
    ``global_batch`` sequences of ``sequence`` tokens in microbatches of ``micro_batch``,
    ``interleave`` model chunks per GPU, recomputation ``mode`` (a key of ``MODES``)."""

    name: str
    model: str
    tensor: int
    pipeline: int
    data: int
    global_batch: int
    micro_batch: int
    sequence: int
    interleave: int
    chip: str
    mode: str

    @property
    def recompute(self) -> str:
        return MODES[self.mode][0]

    @property
    def sequence_parallel(self) -> bool:
        return MODES[self.mode][1]

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.data)

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data

    def as_plan(self) -> tuple[str, str, int]:
        """The run as ``symroof plan`` states it: mesh, strategy and microbatches per
        replica, the data, pipeline and tensor axes in that order (the last in the NVLink
        domain).

        >>> published("korthikanti2022").run("megatron-gpt-175b", "sequence+selective").as_plan()
        ('X=8,Y=8', 'pp=X,tp=Y,sp', 64)
        """
        sizes = [(k, n) for k, n in (("dp", self.data), ("pp", self.pipeline),
                                     ("tp", self.tensor)) if n > 1] or [("dp", 1)]
        names = "XYZ"
        spec = ",".join(f"{names[i]}={n}" for i, (_, n) in enumerate(sizes))
        strategy = ",".join(f"{k}={names[i]}" for i, (k, _) in enumerate(sizes))
        if self.sequence_parallel and self.tensor > 1:
            strategy += ",sp"
        return spec, strategy, self.microbatches

    def options(self) -> dict[str, Any]:
        """``symroof plan --train``'s options for this run (``commands.plan.PlanRequest``'s
        fields), the efficiency left to the caller."""
        spec, strategy, _ = self.as_plan()
        return {"model": self.model, "mode": "train", "chip": self.chip, "mesh": spec,
                "strategy": strategy, "batch": self.global_batch, "context": self.sequence,
                "microbatch": self.micro_batch, "recompute": self.recompute,
                "interleave": self.interleave}

    def command(self, efficiency: str) -> str:
        """The command line that plans this run under ``efficiency``: each of ``options``
        as its flag (a parameter's name with dashes), the interleaving when there is one.

        >>> run = published("korthikanti2022").run("megatron-gpt-22b", "full")
        >>> print(run.command("megatron-a100").replace(" --batch", "\\n  --batch"))
        symroof plan megatron-gpt-22b --train --chip a100-80gb --mesh X=8 --strategy tp=X
          --batch 4 --context 2048 --microbatch 4 --recompute full --efficiency megatron-a100
        """
        o = {**self.options(), "efficiency": efficiency}
        dashes = "-" * 2
        words = ["symroof", "plan", o.pop("model"), dashes + o.pop("mode")]
        for key, value in o.items():
            if key != "interleave" or value != 1:
                words += [dashes + key.replace("_", "-"), str(value)]
        return " ".join(words)


@dataclass(frozen=True)
class Published:
    """A paper's runs (by name) and figures."""

    name: str
    title: str
    runs: dict[str, dict[str, Any]]
    figures: tuple[Figure, ...]
    sequence: int
    ib_per_gpu: Expr
    chip: str

    def run(self, name: str, mode: str) -> Run:
        """The run ``name`` under recomputation ``mode``."""
        if name not in self.runs:
            raise InputError(f"unknown run {name!r} (known: {', '.join(self.runs)})",
                             self.name)
        if mode not in MODES:
            raise InputError(f"unknown mode {mode!r} (known: {', '.join(MODES)})",
                             f"{self.name}: runs.{name}")
        r = self.runs[name]
        try:
            tp, pp, gpus = int(r["tensor"]), int(r["pipeline"]), int(r["gpus"])
            if gpus % (tp * pp):
                raise InputError(f"{gpus} GPUs are not a multiple of tensor {tp} x pipeline "
                                 f"{pp}", f"{self.name}: runs.{name}")
            return Run(name, str(r["model"]), tp, pp, gpus // (tp * pp),
                       int(r["global_batch"]), int(r["micro_batch"]), self.sequence,
                       int(r["interleave"]), self.chip, mode)
        except KeyError as exc:
            raise InputError(f"missing key {exc.args[0]!r}", f"{self.name}: runs.{name}") \
                from None


def _exact(value: object) -> Expr:
    return sp.nsimplify(str(value), rational=True)


def _load(name: str, text: str) -> Published:
    where = f"symroof/plans/published/{name}.toml"
    try:
        data = tomllib.loads(text)
        figures: list[Figure] = []
        for t in data["times"]:
            figures.append(Figure(t["run"], t["mode"], "time", _exact(t["seconds"]),
                                  t["source"]))
        for m in data["memory"]:
            for key, what in (("parameters_optimizer", "parameters + optimizer"),
                              ("activations", "activations")):
                figures.append(Figure(m["run"], m["mode"], what, _exact(m[key]) * GIB,
                                      m["source"]))
        ib = parse_quantity(data["cluster"]["ib_per_gpu"]["value"], BANDWIDTH, where=where)
        return Published(name, data["title"], dict(data["runs"]), tuple(figures),
                         int(data["sequence"]["value"]), ib, data["chip"])
    except KeyError as exc:
        raise InputError(f"missing key {exc.args[0]!r}", where) from None


@cache
def published(name: str) -> Published:
    """A bundled paper's runs and figures by name."""
    from ..core.resources import data_text
    return _load(name, data_text("symroof.plans", "published", name, "published runs")[0])
