"""Every asymptotic and threshold claim of the bundled derivations, property-tested, and the
laws of rooflines over random ops and chips.

A derivation records the expansions and thresholds it derives (``Derivation.expansions``,
``Derivation.thresholds``); each one becomes a test case here, so a new derivation gets its
property tests for free. Ids read ``rooflines-ru:expansion-3``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.claims.loader import load_derivations
from symroof.core.errors import DerivationError
from symroof.core.sizes import sizes
from symroof.engine.asymptotics import Expansion
from symroof.engine.ops import Op, einsum, op
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import Threshold, threshold
from symroof.hardware.catalog import Chip, chip
from symroof.testing import (
    Point,
    assert_flips,
    assert_leading,
    chip_dtypes,
    einsum_ops,
    points,
)
from tests.conftest import examples

DERIVATIONS = load_derivations()
EXPANSIONS = {f"{d.id}:expansion-{i}": x for d in DERIVATIONS for i, x in enumerate(d.expansions)}
THRESHOLDS = {f"{d.id}:threshold-{i}": t for d in DERIVATIONS for i, t in enumerate(d.thresholds)}
ASYMPTOTIC = {k: t for k, t in THRESHOLDS.items() if t.asymptotic is not None}


def cases(claims: dict[str, Expansion] | dict[str, Threshold], which: slice = slice(None),
          ) -> list[object]:
    return [pytest.param(c, id=k) for k, c in list(claims.items())[which]]


def test_the_bundled_claims_are_all_collected() -> None:
    ids = [*EXPANSIONS, *THRESHOLDS]
    assert len(ids) == sum(len(d.expansions) + len(d.thresholds) for d in DERIVATIONS)
    for d in ("rooflines-ru", "rooflines-zh"):
        assert any(i.startswith(f"{d}:expansion-") for i in ids)
        assert any(i.startswith(f"{d}:threshold-") for i in ids)
    assert len(ASYMPTOTIC) >= 10


@pytest.mark.parametrize("x", cases(EXPANSIONS))
def test_expansion(x: Expansion) -> None:
    """The leading term holds deep in its regime, within its first correction, and the
    correction is the first one."""
    report = assert_leading(x.expr, x.leading, x.regime, correction=x.correction)
    assert report.examples > 0


@pytest.mark.parametrize("t", cases(THRESHOLDS))
def test_threshold_exact(t: Threshold) -> None:
    """The bound flips within a millionth of the exact threshold wherever it exists."""
    assert assert_flips(t).examples > 0


@pytest.mark.parametrize("t", cases(ASYMPTOTIC))
def test_threshold_asymptotic(t: Threshold) -> None:
    """The asymptotic threshold is where the bound flips deep in the regime (within 1%), and
    it is the leading term of the exact one."""
    assert t.asymptotic is not None and t.regime is not None
    assert assert_flips(t, t.asymptotic, regime=t.regime).examples > 0
    assert assert_leading(t.exact, t.asymptotic, t.regime, correction=t.correction).examples > 0


@pytest.mark.parametrize("x", cases(EXPANSIONS, slice(None, None, 7)))
def test_a_wrong_leading_term_of_a_bundled_expansion_is_caught(x: Expansion) -> None:
    with pytest.raises(AssertionError, match=r"is off by .* at .*\(depth \d+ from "):
        assert_leading(x.expr, 2 * x.leading, x.regime)


@pytest.mark.parametrize("t", cases(ASYMPTOTIC, slice(None, None, 7)))
def test_a_bundled_threshold_off_by_ten_percent_is_caught(t: Threshold) -> None:
    assert t.asymptotic is not None
    with pytest.raises(AssertionError, match=r"fails at .*\(depth \d+ from .*the bound does "
                                             r"not flip"):
        assert_flips(t, t.asymptotic * sp.Rational(11, 10), regime=t.regime)
    with pytest.raises(AssertionError, match="fails at "):
        assert_flips(replace(t, exact=t.exact * sp.Rational(11, 10)))


# -- the engine's exact thresholds of a zoo of ops -------------------------------------

ZOO = {
    "matmul": einsum("B D, D F -> B F", "bf16"),
    "w8a16": einsum("B D, D F -> B F", ["bf16", "int8"], out="bf16"),
    "per-example": einsum("B D, B D F -> B F", "int8"),
    "attention-like": einsum("B T D, B S D -> B T S", "bf16"),
    "three-way": einsum("G B D, G B F, D G F -> ", "int8"),
    "sharded": op("sharded", 2 * sp.Mul(*sizes("B D F")), comms={"ici": 2 * sp.Mul(*sizes("B F"))}),
}


def zoo() -> list[object]:
    out: list[object] = []
    for name, o in ZOO.items():
        for c in ("tpu-v5e", "h100-sxm"):
            if c == "h100-sxm" and o.comms:
                continue
            rl = roofline(o, chip(c))
            for s in sorted(o.flops.free_symbols, key=str):
                try:
                    t = threshold(rl, s)
                except DerivationError:
                    continue
                if t.existence is not sp.false:
                    out.append(pytest.param(t, id=f"{name}:{c}:{s}"))
    return out


@pytest.mark.parametrize("t", zoo())
def test_exact_thresholds_of_a_zoo_of_ops_flip_wherever_they_exist(t: Threshold) -> None:
    assert assert_flips(t, max_examples=20).examples == 20


# -- laws over random ops and chips ------------------------------------------------------

@settings(max_examples=examples(40))
@given(chip_dtypes(having=["hbm"]), einsum_ops(max_operands=3), st.data())
def test_lower_le_upper_le_twice_lower_for_random_ops_and_chips(
        pair: tuple[Chip, str], o: Op, data: st.DataObject) -> None:
    c, dtype = pair
    rl = roofline(o, c, dtype=dtype)
    at: Point = data.draw(points(o.flops + o.bytes()), label="sizes")
    lower, upper = rl.t_lower.subs(at), rl.t_upper.subs(at)
    assert 0 < lower <= upper <= 2 * lower


@settings(max_examples=examples(40))
@given(chip_dtypes(having=["hbm", "links"]), einsum_ops(), st.data())
def test_upper_le_n_plus_one_times_lower_with_network_links(
        pair: tuple[Chip, str], o: Op, data: st.DataObject) -> None:
    c, dtype = pair
    links = data.draw(st.lists(st.sampled_from(sorted(c.links)), min_size=1, unique=True))
    sent = {link: o.bytes() * data.draw(st.integers(1, 8)) for link in links}
    rl = roofline(replace(o, comms=sent), c, dtype=dtype)
    at: Point = data.draw(points(o.flops + o.bytes()), label="sizes")
    lower, upper = rl.t_lower.subs(at), rl.t_upper.subs(at)
    assert len(rl.t_comms) == 1 + len(links)
    assert lower <= upper <= (1 + len(rl.t_comms)) * lower
    assert upper > lower  # every time is positive, so none alone is the sum
