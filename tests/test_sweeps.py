"""Sweeps: compiled once per formula, equal to the exact formula at every point."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.core.sizes import sizes
from symroof.engine.ops import einsum
from symroof.engine.rooflines import roofline
from symroof.engine.sweeps import at_fixed, compiled, sweep
from symroof.hardware.catalog import chip
from tests.conftest import examples

B, D, F = sizes("B D F")
RL = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))


@pytest.mark.slow
@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=20), st.integers(1, 10**5),
       st.integers(1, 10**5))
def test_a_sweep_is_the_exact_attainable_rate_at_every_point(bs: list[int], d: int,
                                                             f: int) -> None:
    got = RL.sweep("B", np.array(bs, dtype=float), {"D": d, "F": f})
    # the sizes put in at once (xreplace): subs puts in one at a time, and SymPy compares
    # the Min's arguments again at every partial step
    exact = [RL.attainable.xreplace({B: sp.Integer(b), D: sp.Integer(d), F: sp.Integer(f)})
             for b in bs]
    assert all(e.is_Rational for e in exact)
    assert np.allclose(got, [float(e) for e in exact], rtol=1e-12, atol=0)


def test_the_compiled_formula_is_reused() -> None:
    assert at_fixed(RL.intensity, "B", {"D": 8192, "F": 32768}) is \
        at_fixed(RL.intensity, B, {"F": 32768, "D": 8192})
    assert compiled(B * D + F, (B, D, F)) is compiled(B * D + F, (B, D, F))


def test_a_constant_formula_sweeps_to_the_shape_of_its_values() -> None:
    assert sweep(D * F / (D + F), "B", np.ones(3), {"D": 2, "F": 2}).tolist() == [1.0] * 3
    assert sweep(sp.Integer(5), "B", np.ones((2, 2))).shape == (2, 2)


def test_a_size_left_free_is_named() -> None:
    with pytest.raises(InputError, match="give a value for F in fixed"):
        RL.sweep("B", np.ones(2), {"D": 8})
