"""Sizes as exact numbers: points of symbols, moved deep into a regime (``B<<D`` scales D
up by the depth), shown in messages.

>>> import sympy as sp
>>> from symroof.engine.asymptotics import parse_regime
>>> B, D = sp.symbols("B D", positive=True)
>>> deepen(parse_regime("B<<D"), {B: 2, D: 3}, 100)
{B: 2, D: 300}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..engine.asymptotics import Regime, parse_regime
from ..hardware.catalog import Chip

Size = int | Fraction
Point = dict[sp.Symbol, Size]

SIZES = (1, 2**16)                 # random sizes
BASE = (1, 64)                     # sizes before they are moved deep into a regime


def deepen(reg: Regime, base: Point, k: int) -> Point:
    out = dict(base)
    for s in reg.large:
        if s in out:
            out[s] = size(out[s] * k)
    for s in reg.small:
        if s in out:
            out[s] = size(Fraction(out[s], k))
    return out


def scaled(base: Point, k: int) -> Point:
    return {s: size(v * k) for s, v in base.items()}


def bind(reg: Regime, symbols: Iterable[sp.Symbol]) -> Regime:
    """The regime over the formulas' own symbols (``B`` in ``B<<D`` matches an integer B)."""
    named = {s.name: s for s in symbols}
    return replace(reg, large=tuple(named.get(s.name, s) for s in reg.large),
                   small=tuple(named.get(s.name, s) for s in reg.small))


def symbols_of(*items: Iterable[sp.Symbol] | str | sp.Basic) -> list[sp.Symbol]:
    found: set[sp.Symbol] = set()
    for item in items:
        if isinstance(item, str):
            found |= {sp.Symbol(n, positive=True) for n in item.replace(",", " ").split()}
        elif isinstance(item, sp.Basic):
            found |= {s for s in item.free_symbols if isinstance(s, sp.Symbol)}
        else:
            found |= set(item)
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"symbol {twice[0]} appears with two different sets of assumptions")
    return sorted(found, key=lambda s: s.name)


def regime_of(regime: Regime | str) -> Regime:
    return parse_regime(regime, where=None) if isinstance(regime, str) else regime


def fraction(x: Any) -> Fraction:
    """A Fraction, exactly (an mpmath value is a binary fraction)."""
    if isinstance(x, Fraction | int):
        return Fraction(x)
    sign, man, exp, _ = x._mpf_
    man = -man if sign else man
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def size(x: Any) -> Size:
    """An int when whole, else a Fraction."""
    f = fraction(x)
    return f.numerator if f.denominator == 1 else f


def ordered(p: Point) -> Point:
    return dict(sorted(p.items(), key=lambda kv: kv[0].name))


def show(p: Mapping[sp.Symbol, Size]) -> str:
    """Sizes for a message, exactly, so that they can be pasted back."""
    return ", ".join(f"{s}={Fraction(p[s])}" for s in sorted(p, key=lambda s: s.name))


def has(c: Chip, key: str) -> bool:
    try:
        c.resolve(key)
    except InputError:
        return False
    return True
