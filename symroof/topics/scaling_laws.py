"""Scaling-law constant sets, shipped as data with their sources.

>>> s = constant_set("hoffmann2022")
>>> s.values["alpha"], s.form
(17/50, A/N**alpha + B/D**beta + E)

A derivation or ``symroof optimize --constants NAME`` picks a set by name.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr, parse_number, parse_relation, symbol


@dataclass(frozen=True)
class ConstantSet:
    """A published fit: its loss form, budget constraint, constants and source."""

    name: str
    title: str
    source: str
    where: str
    form: sp.Expr
    budget: sp.Eq
    values: Mapping[str, sp.Rational]

    def subs(self) -> dict[sp.Symbol, sp.Rational]:
        return {symbol(k): v for k, v in self.values.items()}


@lru_cache(maxsize=1)
def constant_sets() -> dict[str, ConstantSet]:
    text = resources.files("symroof.topics").joinpath("scaling_laws.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = data["sources"]
    out = {}
    for name, body in data["sets"].items():
        where = f"symroof/topics/scaling_laws.toml: sets.{name}"
        values = {k: parse_number(v, where=f"{where}.values.{k}") for k, v in
                  body["values"].items()}
        out[name] = ConstantSet(name, body["title"], sources[body["source"]], body["where"],
                                parse_expr(body["form"], where=where),
                                parse_relation(body["budget"], where=where), values)
    return out


def constant_set(name: str) -> ConstantSet:
    sets = constant_sets()
    if name not in sets:
        raise InputError(f"unknown constant set {name!r} (known: {', '.join(sorted(sets))})",
                         "constants")
    return sets[name]
