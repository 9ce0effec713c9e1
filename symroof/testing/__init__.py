"""Hypothesis strategies and assertions for asymptotic, threshold and identity claims.

>>> from symroof import chip, einsum, roofline, sizes
>>> B, D, F = sizes("B D F")
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> assert_leading(rl.intensity, B, "B<<D,F").examples > 0
True

The public face of ``symroof.testing``; it needs the ``test`` extra (hypothesis).
"""

from __future__ import annotations

from .assertions import (
    Point,
    Report,
    active_settings,
    assert_flips,
    assert_identity,
    assert_leading,
    assert_threshold,
    chip_dtypes,
    chips,
    deep_points,
    dtypes,
    einsum_ops,
    points,
    size_values,
)

__all__ = [
    "Point", "Report", "active_settings", "assert_flips", "assert_identity", "assert_leading",
    "assert_threshold", "chip_dtypes", "chips", "deep_points", "dtypes", "einsum_ops",
    "points", "size_values",
]
