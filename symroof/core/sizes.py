"""Sizes (positive symbols) and dtypes (bytes per element, exact).

>>> B, D, F = sizes("B D F")
>>> B.is_positive
True
>>> dtype_bytes("int4"), dtype_bytes("int4-awq")
(1/2, 133/256)

A dtype may be written by its bytes per element, as a text states them: ``"b bytes"`` (a
letter) or ``"3/2 bytes"``; such a dtype names no peak, so an op of it says whose peak it
runs at (``einsum(..., compute="bf16")``).

>>> dtype_bytes("b bytes"), dtype_bytes("3/2 bytes"), canonical_dtype(" b  bytes ")
(b, 3/2, 'b bytes')

A quantisation scheme (``core.quant.SCHEMES``: int4-gptq, int4-awq, fp8-tensor, int8-token,
...) is a dtype name too, its bytes per element its storage plus its scales and zero points.
"""

from __future__ import annotations

import re

import sympy as sp

from .errors import InputError
from .parse import parse_expr, size_name

DTYPES: dict[str, sp.Rational] = {
    "fp64": sp.Integer(8),
    "fp32": sp.Integer(4),
    "tf32": sp.Integer(4),
    "bf16": sp.Integer(2),
    "fp16": sp.Integer(2),
    "int8": sp.Integer(1),
    "fp8": sp.Integer(1),
    "int4": sp.Rational(1, 2),
    "fp4": sp.Rational(1, 2),
}
BY_BYTES = re.compile(r"\s*(\S+)\s+bytes?\s*\Z")
ALIASES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
           "half": "fp16", "float": "fp32"}


def sizes(names: str, *, integer: bool = False) -> tuple[sp.Symbol, ...]:
    """Positive size symbols from a space- or comma-separated list of names.

    >>> sizes("N")
    (N,)

    Pass ``integer=True`` for counts that are whole numbers. Plain positive symbols are the
    ones the formula parser makes, so they compare equal to parsed names.
    """
    if not isinstance(names, str):
        raise InputError(f"expected names such as 'B D F', got {type(names).__name__}", "sizes")
    split = [size_name(n, "sizes") for n in names.replace(",", " ").split()]
    if not split:
        raise InputError("no size names given")
    return tuple(sp.Symbol(n, positive=True, integer=integer or None) for n in split)


def dtype_bytes(name: str, *, where: str | None = None) -> sp.Rational:
    """Bytes per element of a dtype, as an exact rational (a symbol for ``"b bytes"``).

    >>> dtype_bytes("bf16")
    2
    """
    from .quant import SCHEMES
    by = BY_BYTES.match(name)
    if by is not None:
        return _stated_bytes(by.group(1), name, where)
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key in SCHEMES:
        return SCHEMES[key].bytes_per_element
    if key not in DTYPES:
        raise InputError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)}; schemes: "
                         f"{', '.join(SCHEMES)})", where)
    return DTYPES[key]


def by_bytes(name: str) -> bool:
    """Whether a dtype is written by its bytes (``"b bytes"``): it names no peak.

    >>> by_bytes("b bytes"), by_bytes("bf16")
    (True, False)
    """
    return BY_BYTES.match(name) is not None


def _stated_bytes(raw: str, name: str, where: str | None) -> sp.Rational:
    value = parse_expr(raw, where=where or f"dtype {name!r}")
    if not (value.is_Symbol or value.is_Rational) or value.is_positive is not True:
        raise InputError(f"a dtype given by its bytes takes a positive number or one letter "
                         f"('b bytes', '3/2 bytes'), got {name.strip()!r}", where)
    return value  # a letter stands for the rational


def canonical_dtype(name: str, *, where: str | None = None) -> str:
    """The catalogue's name for a dtype (``bfloat16`` -> ``bf16``; ``" b  bytes"`` ->
    ``b bytes``)."""
    dtype_bytes(name, where=where)
    by = BY_BYTES.match(name)
    if by is not None:
        return f"{by.group(1)} bytes"
    return ALIASES.get(name.strip().lower(), name.strip().lower())


def size_value(name: str, raw: str, where: str = "subs") -> sp.Integer:
    """The value ``raw`` gives size ``name``: a positive whole number (a count of elements,
    bytes or chips; 1/2 or pi is no size); errors are located at ``where``.

    >>> size_value("D", "8192"), size_value("B", "1.6e4")
    (8192, 16000)
    """
    value = parse_expr(raw, where=f"{where} {name}")
    if not value.is_number:
        raise InputError(f"{name} must be a number, got {raw!r}", where)
    if not value.is_positive:
        raise InputError(f"size {name} must be positive, got {raw}", where)
    if not value.is_Integer:
        raise InputError(f"size {name} must be a whole number, got {raw}", where)
    return value
