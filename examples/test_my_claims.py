"""Property-test your own roofline claims in your own pytest suite: ``pytest examples/``.

Each ``assert_*`` runs a hypothesis search of its own, deep inside the claim's regime, and
on failure raises AssertionError naming the sizes that broke the claim, shrunk.
"""

from __future__ import annotations

import os
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings

from symroof import chip, einsum, roofline, sizes
from symroof.engine.ops import op
from symroof.hardware.catalog import Chip
from symroof.testing import (
    Point,
    assert_identity,
    assert_leading,
    assert_threshold,
    chips,
    deep_points,
)

# Put these lines in your conftest.py: reproducible in CI, and no example database there.
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

B, D, F = sizes("B D F")
V5E = chip("tpu-v5e", hbm="B1")  # the revision with HBM at 8.2e11 B/s, as the book uses
MATMUL = einsum("B D, D F -> B F", "bf16")


def test_intensity_tends_to_B_when_B_is_much_smaller_than_D_and_F() -> None:
    intensity = roofline(MATMUL, V5E).intensity
    assert_leading(intensity, B, "B<<D,F", correction=-B**2 * (1 / D + 1 / F))


def test_compute_bound_above_B_240() -> None:
    assert_threshold(MATMUL, V5E, "B", 240, regime="B<<D,F")


def test_a_sharded_matmul_is_compute_bound_above_D_8755() -> None:
    shard = op("shard", B * D * F, comms={"ici": 2 * B * F})
    assert_threshold(shard, "tpu-v5e", "D", 8755)


def test_the_time_bounds_differ_by_the_smaller_time() -> None:
    rl = roofline(MATMUL, V5E)
    assert_identity(rl.t_upper - rl.t_lower, sp.Min(rl.t_math, rl.t_comms["hbm"]))


def test_a_wrong_leading_term_is_caught_with_its_sizes() -> None:
    with pytest.raises(AssertionError, match=r"off by 50\.1% at B=1, D=1000, F=1000"):
        assert_leading(roofline(MATMUL, V5E).intensity, 2 * B, "B<<D,F")


def test_a_threshold_off_by_ten_percent_is_caught_with_its_sizes() -> None:
    with pytest.raises(AssertionError, match=r"B > 264 \(B<<D,F\) fails at D=1000000, "
                                             r"F=1000000"):
        assert_threshold(MATMUL, V5E, "B", 264, regime="B<<D,F")


# The strategies serve your own @given tests too.
@settings(max_examples=25)
@given(deep_points("B<<D,F", "B D F", depth=10**4), chips(having=["mxu.bf16", "hbm"]))
def test_deep_in_the_regime_the_intensity_is_within_two_percent_of_B(
        point: Point, c: Chip) -> None:
    intensity = roofline(MATMUL, c).intensity.subs(point)
    assert abs(intensity / point[B] - 1) < Fraction(2, 100)
