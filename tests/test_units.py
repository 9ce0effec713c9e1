"""Unit parsing: exact prefixes and dimension checks, stated as laws."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.core.units import (
    BANDWIDTH,
    BINARY_PREFIXES,
    CAPACITY,
    COMPUTE,
    DECIMAL_PREFIXES,
    parse_quantity,
)

DECIMAL = sorted({p for p in DECIMAL_PREFIXES if p != "K"}, key=DECIMAL_PREFIXES.get)
BINARY = sorted(BINARY_PREFIXES, key=BINARY_PREFIXES.get)


@given(st.sampled_from(DECIMAL), st.integers(1, 10**6))
def test_decimal_prefix_is_a_power_of_1000(prefix: str, n: int) -> None:
    assert parse_quantity(f"{n} {prefix}B/s", BANDWIDTH) == n * sp.Integer(1000) ** \
        DECIMAL_PREFIXES[prefix]


@given(st.sampled_from(BINARY), st.integers(1, 10**6))
def test_binary_prefix_is_a_power_of_1024(prefix: str, n: int) -> None:
    assert parse_quantity(f"{n} {prefix}B", CAPACITY) == n * sp.Integer(1024) ** \
        BINARY_PREFIXES[prefix]


@given(st.sampled_from(BINARY))
def test_binary_over_decimal_ratio_is_exact(prefix: str) -> None:
    decimal = prefix[0]
    ratio = parse_quantity(f"1 {prefix}B", CAPACITY) / parse_quantity(f"1 {decimal}B", CAPACITY)
    k = BINARY_PREFIXES[prefix]
    assert ratio == sp.Rational(2 ** (10 * k), 10 ** (3 * k))


@given(st.sampled_from(DECIMAL[1:]))
def test_adjacent_decimal_prefixes_differ_by_1000(prefix: str) -> None:
    lower = DECIMAL[DECIMAL.index(prefix) - 1]
    assert parse_quantity(f"1 {prefix}FLOP/s", COMPUTE) == 1000 * parse_quantity(
        f"1 {lower}FLOP/s", COMPUTE)


@pytest.mark.parametrize(("text", "dimension", "value"), [
    ("819 GB/s", BANDWIDTH, 819 * 10**9),
    ("16 GiB", CAPACITY, 16 * 2**30),
    ("197 TFLOP/s", COMPUTE, 197 * 10**12),
    ("1.97e14 FLOP/s", COMPUTE, 197 * 10**12),
    ("1.97e14", COMPUTE, 197 * 10**12),
    ("394 TOPS", COMPUTE, 394 * 10**12),
    ("100 Gbps", BANDWIDTH, sp.Rational(100 * 10**9, 8)),
    ("716.8 GB/s", BANDWIDTH, sp.Rational(7168, 10) * 10**9),
    ("800 GiB/s", BANDWIDTH, 800 * 2**30),
])
def test_parses_exactly(text: str, dimension: object, value: object) -> None:
    assert parse_quantity(text, dimension) == value  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "dimension", "message"), [
    ("197 TFLOP/s", BANDWIDTH, "'197 TFLOP/s' is not a bandwidth (bytes per second)"),
    ("819 GB/s", COMPUTE, "'819 GB/s' is not a compute rate (FLOP per second)"),
    ("16 GB", BANDWIDTH, "'16 GB' is not a bandwidth"),
    ("-3 GB", CAPACITY, "'-3 GB' must be positive"),
    ("0 B/s", BANDWIDTH, "'0 B/s' must be positive"),
    ("5 furlongs", CAPACITY, "unknown unit 'furlongs'"),
    ("fast", BANDWIDTH, "cannot read 'fast'"),
    ("3 GiFLOP/s", COMPUTE, "binary prefix 'Gi' applies to bytes only"),
])
def test_bad_quantities_name_the_culprit(text: str, dimension: object, message: str) -> None:
    with pytest.raises(InputError, match="^hbm: " + _escape(message)):
        parse_quantity(text, dimension, where="hbm")  # type: ignore[arg-type]


def _escape(text: str) -> str:
    import re
    return re.escape(text)
