"""Hypothesis strategies and assertions for asymptotic, threshold and identity claims.

>>> from symroof import chip, einsum, roofline, sizes
>>> B, D, F = sizes("B D F")
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> assert_leading(rl.intensity, B, "B<<D,F").examples > 0
True

The public face of ``symroof.testing``; it needs the ``test`` extra (hypothesis).
``assertions`` holds the checks, ``strategies`` the generators for one's own ``@given``
tests, ``points`` exact sizes and regimes, ``compiled`` the formulas evaluated exactly.
"""

from __future__ import annotations

from .assertions import (
    Report,
    active_settings,
    assert_flips,
    assert_identity,
    assert_leading,
    assert_threshold,
)
from .points import Point
from .strategies import chip_dtypes, chips, deep_points, dtypes, einsum_ops, points, size_values

__all__ = [
    "Point", "Report", "active_settings", "assert_flips", "assert_identity", "assert_leading",
    "assert_threshold", "chip_dtypes", "chips", "deep_points", "dtypes", "einsum_ops",
    "points", "size_values",
]
