"""A framework's conventions as named choices of the one training model, read from data
(``plans/frameworks/*.toml``), each with its source.

>>> c = conventions("megatron-lm")
>>> c.choices["optimizer"], c.choices["overlap"], c.flag("rerun_collectives")
('adam-megatron', 'op', True)
>>> c.override({"overlap": "phase"}).choices["overlap"], c.override({"overlap": "phase"}).overridden
('phase', ('overlap',))

``optimizer`` and ``overlap`` are ``plan --train``'s options of those names;
``rerun_collectives`` (``yes``: full recomputation reruns the forward's tensor-parallel
collectives, and sequence parallelism all-gathers each column-parallel input again for
the backward) and ``pipeline_sends`` (``scatter``: a pipeline send split over the tensor
ranks) and ``elementwise_kernels`` (``megatron``: Megatron-LM's fused softmax, dropout,
bias-GeLU and bias-dropout-add kernels as ops of each layer,
``plans.train_step.megatron_kernels``) are choices of ``plans.training.train``.
``followed`` names what the one model already does as the framework does, with its source.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache

from ..core.errors import InputError

KNOWN: dict[str, tuple[str, ...]] = {
    "optimizer": ("adam-mixed", "adam-megatron", "adam-fp32", "sgd-mixed"),
    "overlap": ("phase", "op", "none"),
    "rerun_collectives": ("yes", "no"),
    "pipeline_sends": ("scatter", "whole"),
    "elementwise_kernels": ("megatron", "none"),
}
DEFAULTS = {"rerun_collectives": "no", "pipeline_sends": "whole", "elementwise_kernels": "none"}


@dataclass(frozen=True)
class Conventions:
    """Named choices (``KNOWN``) with their sources; ``overridden``: the choices the user
    set otherwise."""

    name: str
    title: str
    choices: Mapping[str, str]
    sources: Mapping[str, str]
    followed: Mapping[str, str] = field(default_factory=dict)
    overridden: tuple[str, ...] = ()

    def flag(self, key: str) -> bool:
        """A yes/no or scatter/whole choice as a flag (the default where not named)."""
        return self.choices.get(key, DEFAULTS[key]) in ("yes", "scatter", "megatron")

    def override(self, given: Mapping[str, str | None]) -> Conventions:
        """These conventions with the choices ``given`` (not None) in their place."""
        changed = {k: v for k, v in given.items()
                   if v is not None and k in self.choices and self.choices[k] != v}
        return replace(self, choices={**self.choices, **changed},
                       overridden=tuple(sorted({*self.overridden, *changed})))

    def describe(self) -> str:
        """One line for the assumptions: each choice, its source, what was overridden."""
        parts = [f"{k} {v}" + (" (set by the user)" if k in self.overridden
                               else f": {self.sources[k]}")
                 for k, v in self.choices.items()]
        parts += [f"{k}: {v}" for k, v in self.followed.items()]
        return f"conventions {self.name} ({self.title}): " + "; ".join(parts)


def _load(name: str, text: str, where: str) -> Conventions:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None
    try:
        choices, sources = {}, {}
        for k, v in data["choices"].items():
            if k not in KNOWN:
                raise InputError(f"unknown choice {k!r} (known: {', '.join(KNOWN)})",
                                 f"{where}: choices")
            if str(v["value"]) not in KNOWN[k]:
                raise InputError(f"{k} must be one of {', '.join(KNOWN[k])}, got "
                                 f"{v['value']!r}", f"{where}: choices.{k}")
            choices[k], sources[k] = str(v["value"]), str(v["source"])
        return Conventions(str(data.get("name", name)), str(data["title"]), choices, sources,
                           {k: str(v) for k, v in data.get("followed", {}).items()})
    except KeyError as exc:
        raise InputError(f"missing key {exc.args[0]!r}", where) from None


@cache
def conventions(name: str) -> Conventions:
    """A bundled framework's conventions by name."""
    from ..core.resources import data_text
    return _load(name, *data_text("symroof.plans", "frameworks", name, "conventions"))
