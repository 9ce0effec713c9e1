"""GPU microarchitecture figures, from which a tensor-core peak is derived.

>>> micro_value("micro.clock", "1.41 GHz", "here")
1410000000
>>> micro_value("micro.sms", "108", "here")
108

A chip's ``[micro]`` table gives ``sms`` (a GPU's streaming multiprocessors), ``tensorcores``
(a TPU's TensorCores per chip), ``tensor_cores_per_sm``, ``fp32_lanes_per_sm``,
``clock`` (the boost clock, ``1.41 GHz``), ``base_clock``, a TPU vector unit's
``vpu_sublanes``, ``vpu_lanes`` and ``vpu_alus``, and, per dtype,
``flops_per_clock_per_tensor_core`` (dense, a multiply-add counted as two FLOPs), each with
its source. The peak they give is SMs x tensor cores per SM x FLOPs per clock per tensor
core x clock (``Chip.micro_peak``), to set beside the datasheet's figure; the vector peak
is ``micro_vector_peak``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr
from ..core.sizes import DTYPES

FIELDS = ("sms", "tensorcores", "tensor_cores_per_sm", "fp32_lanes_per_sm", "clock",
          "base_clock", "vpu_sublanes", "vpu_lanes", "vpu_alus",
          "flops_per_clock_per_tensor_core")
# every key a chip may carry (or a run may set with micro.KEY): the plain fields and the
# FLOPs per clock per tensor core of each dtype
MICRO_KEYS = (*FIELDS[:-1], *(f"{FIELDS[-1]}.{d}" for d in DTYPES))
CLOCKS = ("micro.clock", "micro.base_clock")
_HERTZ = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}
_CLOCK = re.compile(r"\s*([0-9.]+)\s*(Hz|kHz|MHz|GHz)\s*\Z")


def micro_value(key: str, text: str, where: str) -> sp.Expr:
    """A microarchitecture figure: a clock in Hz (``1.41 GHz``), or a positive count."""
    if key in CLOCKS:
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


def micro_vector_peak(figures: dict[str, sp.Expr], chip: str) -> sp.Expr:
    """The fp32 vector peak the figures give, a fused multiply-add counted as two FLOPs: a
    GPU's SMs x fp32 lanes per SM x 2 x clock, or a TPU's VPU sublanes x lanes x ALUs x 2
    x clock (the book's count for the chip).

    >>> micro_vector_peak({"micro.sms": 132, "micro.fp32_lanes_per_sm": 128,
    ...                    "micro.clock": 1980000000}, "h100-sxm")
    66908160000000
    """
    gpu = ("micro.sms", "micro.fp32_lanes_per_sm", "micro.clock")
    tpu = ("micro.vpu_sublanes", "micro.vpu_lanes", "micro.vpu_alus", "micro.clock")
    for keys in (gpu, tpu):
        if all(k in figures for k in keys):
            return 2 * sp.Mul(*(figures[k] for k in keys))
    keys = gpu if "micro.sms" in figures else tpu
    missing = next(k for k in keys if k not in figures)
    raise InputError(f"chip {chip!r} has no microarchitecture figure "
                     f"{missing.removeprefix('micro.')!r} to derive a vector peak from")


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
