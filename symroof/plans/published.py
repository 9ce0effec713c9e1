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
from importlib import resources
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.units import BANDWIDTH, parse_quantity
from ..models import model
from .megatron import Run

GIB = 2**30


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
        r = self.runs[name]
        try:
            tp, pp, gpus = int(r["tensor"]), int(r["pipeline"]), int(r["gpus"])
            if gpus % (tp * pp):
                raise InputError(f"{gpus} GPUs are not a multiple of tensor {tp} x pipeline "
                                 f"{pp}", f"{self.name}: runs.{name}")
            return Run(model(r["model"]), tensor=tp, pipeline=pp, data=gpus // (tp * pp),
                       global_batch=int(r["global_batch"]), micro_batch=int(r["micro_batch"]),
                       sequence=self.sequence, mode=mode, interleave=int(r["interleave"]),
                       chip=self.chip, ib_per_gpu=self.ib_per_gpu, name=name)
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
    folder = resources.files("symroof.plans").joinpath("published")
    file = folder.joinpath(f"{name}.toml")
    if not file.is_file():
        known = sorted(e.name.removesuffix(".toml") for e in folder.iterdir()
                       if e.name.endswith(".toml"))
        raise InputError(f"unknown published runs {name!r} (known: {', '.join(known)})")
    return _load(name, file.read_text("utf-8"))
