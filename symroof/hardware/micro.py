"""GPU microarchitecture figures, from which a tensor-core peak is derived.

>>> micro_value("micro.clock", "1.41 GHz", "here")
1410000000
>>> micro_value("micro.sms", "108", "here")
108

A chip's ``[micro]`` table gives ``sms`` (a GPU's streaming multiprocessors), ``tensorcores``
(a TPU's TensorCores per chip), ``tensor_cores_per_sm``,
``clock`` (the boost clock, ``1.41 GHz``) and, per dtype, ``flops_per_clock_per_tensor_core``
(dense, a multiply-add counted as two FLOPs), each with its source. The peak they give is
SMs x tensor cores per SM x FLOPs per clock per tensor core x clock (``Chip.micro_peak``),
to set beside the datasheet's figure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr
from ..core.sizes import DTYPES

FIELDS = ("sms", "tensorcores", "tensor_cores_per_sm", "clock",
          "flops_per_clock_per_tensor_core")
_HERTZ = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}
_CLOCK = re.compile(r"\s*([0-9.]+)\s*(Hz|kHz|MHz|GHz)\s*\Z")


def micro_value(key: str, text: str, where: str) -> sp.Expr:
    """A microarchitecture figure: a clock in Hz (``1.41 GHz``), or a positive count."""
    if key == "micro.clock":
        m = _CLOCK.match(text)
        if m is None:
            raise InputError(f"a clock is a number and a unit (Hz, kHz, MHz, GHz), got {text!r}",
                             where)
        return sp.Rational(m.group(1)) * _HERTZ[m.group(2)]
    value = parse_expr(text, where=where)
    if not (value.is_Rational and value > 0):
        raise InputError(f"a count must be a positive number, got {text!r}", where)
    return value


def micro_peak(figures: dict[str, sp.Expr], dtype: str, chip: str) -> sp.Expr:
    """SMs x tensor cores per SM x FLOPs per clock per tensor core x clock."""
    keys = ("micro.sms", "micro.tensor_cores_per_sm",
            f"micro.flops_per_clock_per_tensor_core.{dtype}", "micro.clock")
    missing = [k for k in keys if k not in figures]
    if missing:
        raise InputError(f"chip {chip!r} has no microarchitecture figure "
                         f"{missing[0].removeprefix('micro.')!r} to derive a {dtype} peak from")
    return sp.Mul(*(figures[k] for k in keys))


def micro_specs(table: Mapping[str, Any], where: str) -> Iterator[tuple[str, Any, str]]:
    """(figure key, its table, where) of a chip's ``[micro]`` table, one per dtype for the
    FLOPs per clock; an unknown figure or dtype is an input error naming it."""
    for key, spec in table.items():
        at = f"{where}.{key}"
        if key not in FIELDS:
            raise InputError(f"unknown microarchitecture figure {key!r} (figures: "
                             f"{', '.join(FIELDS)})", at)
        if key != FIELDS[-1]:
            yield f"micro.{key}", spec, at
            continue
        if not isinstance(spec, dict):
            raise InputError("FLOPs per clock are given per dtype: { bf16 = {...} }", at)
        for dtype, one in spec.items():
            if dtype not in DTYPES:
                raise InputError(f"unknown dtype {dtype!r}", at)
            yield f"micro.{key}.{dtype}", one, f"{at}.{dtype}"
