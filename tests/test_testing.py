"""symroof.testing: strategies, the three assertions, their shrunk messages, and CI profiles."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import HealthCheck, find, given, settings
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import NoSuchExample

from symroof.core.errors import DerivationError, InputError
from symroof.core.sizes import DTYPES, sizes
from symroof.engine.ops import Op, einsum, op
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import threshold
from symroof.hardware.catalog import Chip, chip
from symroof.testing import (
    Point,
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
from tests.conftest import ROOT, examples

B, D, F, N = sizes("B D F N")
V5E = chip("tpu-v5e", hbm="B1")
MATMUL = einsum("B D, D F -> B F", "bf16")
INTENSITY = B * D * F / (B * D + B * F + D * F)
SHARD = op("shard", B * D * F, comms={"ici": 2 * B * F})


@pytest.fixture
def profile() -> Iterator[None]:
    """Let a test load its own hypothesis profile; the suite's comes back afterwards."""
    before = settings.get_current_profile_name()
    yield
    settings.load_profile(before)


def sizes_in(message: str) -> dict[str, Fraction]:
    """The sizes a failure message names after 'fails at'."""
    m = re.search(r"fails at ((?:\w+=[\d/]+(?:, )?)+)", message)
    assert m, message
    return {k: Fraction(v) for k, v in (kv.split("=") for kv in m.group(1).split(", "))}


# -- strategies ---------------------------------------------------------------------------

@given(size_values(3, 7), size_values(1, 2, integer=False))
def test_size_values_stay_in_bounds(whole: int, real: Fraction) -> None:
    assert isinstance(whole, int) and 3 <= whole <= 7
    assert isinstance(real, Fraction) and 1 <= real <= 2


def test_real_sizes_include_fractions() -> None:
    assert find(size_values(1, 2, integer=False), lambda v: v.denominator > 1) == Fraction(3, 2)


K = sizes("k", integer=True)[0]


@given(points([K, N], integer=False))
def test_integer_symbols_stay_whole_and_points_are_sorted_by_name(p: Point) -> None:
    assert isinstance(p[K], int) and isinstance(p[N], Fraction) and list(p) == [N, K]


@given(deep_points("B<<D,F; x->0", "B D F x", depth=1000))
def test_deep_points_scale_the_large_up_and_the_small_down(p: Point) -> None:
    (x,) = sizes("x")
    assert 1 <= p[B] <= 64 and p[D] % 1000 == 0 and p[F] % 1000 == 0
    assert p[D] / p[B] >= Fraction(1000, 64)
    assert Fraction(1, 1000) * Fraction(1, 1000) <= p[x] <= Fraction(64, 1000)


@given(chips(having=["mxu.int8", "ici"]), chip_dtypes())
def test_chips_have_what_is_asked_and_chip_dtypes_have_a_peak(c: Chip,
                                                              pair: tuple[Chip, str]) -> None:
    assert c.name.startswith("tpu-")
    assert c.peak("int8") > 0 and c.bandwidth("ici") > 0
    the_chip, dtype = pair
    assert the_chip.peak(dtype) > 0


def test_chip_dtypes_having_leaves_out_chips_without_the_figure() -> None:
    from symroof.testing.strategies import chip_dtypes
    wanted = chip_dtypes(having=["hbm", "links"])
    for name in ("h800-pcie", "tpu-v3"):  # the one has no HBM figure, the other no link
        with pytest.raises(NoSuchExample):
            find(wanted, lambda p, n=name: p[0].name == n)
    assert find(wanted, lambda p: p[0].name == "h100-sxm")[0].name == "h100-sxm"


def test_dtypes_of_a_chip_and_impossible_requests() -> None:
    h100 = chip("h100-sxm")
    assert find(dtypes(chip=h100), lambda d: d == "fp8") == "fp8"
    with pytest.raises(NoSuchExample):
        find(dtypes(chip=h100), lambda d: d in ("int4", "fp4", "fp64"))
    with pytest.raises(InputError, match="no chip in symroof/hardware/chips.toml has mxu.fp64"):
        chips(having=["mxu.fp64"])


@settings(max_examples=examples(40))
@given(einsum_ops(max_operands=3))
def test_einsum_ops_cost_by_the_einsum_rules(o: Op) -> None:
    spec = o.name
    operands = [part.split() for part in spec.split("->")[0].split(",")]
    output = spec.split("->")[1].split()
    dims = {d for ds in operands for d in ds}
    every = sp.Mul(*sizes(" ".join(sorted(dims))))
    contracted = dims - set(output)
    assert o.flops == (2 * every if contracted else sp.Mul(*(sp.Symbol(d, positive=True)
                                                             for d in output)))
    assert o.dtype in DTYPES and o.bytes() != 0


# -- assert_leading -----------------------------------------------------------------------

def test_a_true_leading_term_holds_at_every_example() -> None:
    report = assert_leading(INTENSITY, B, "B<<D,F", correction=-B**2 * (D + F) / (D * F),
                            max_examples=25)
    assert report.claim == "B*D*F/(B*D + B*F + D*F) ~ B when B<<D,F"
    assert report.examples == 25
    # every point is deep: the first correction is at most 0.1% of B there (exactly: sizes
    # are integers, and 15 (60000 + 20000) / (60000 x 20000) is 1/1000, not the float 0.001)
    assert all(Fraction(p[B]) * (p[D] + p[F]) / (p[D] * p[F]) <= Fraction(1, 1000)
               for p in report.points)


def test_the_wrong_leading_term_2B_is_caught_with_the_shrunk_sizes() -> None:
    with pytest.raises(AssertionError) as err:
        assert_leading(roofline(MATMUL, V5E).intensity, 2 * B, "B<<D,F")
    assert str(err.value) == (
        "leading term 2*B of B*D*F/(B*D + B*F + D*F) (B<<D,F) is off by 50.1% at B=1, "
        "D=1000, F=1000 (depth 1000 from B=1, D=1, F=1); the first correction "
        "-B**2*(D + F)/(D*F) allows 2 x 0.1%")


def test_a_leading_term_off_by_a_constant_and_one_of_the_wrong_order_are_caught() -> None:
    with pytest.raises(AssertionError, match=r"leading term B \+ 1 .* off by 50\.1% at B=1, "
                                             r"D=1000, F=1000 \(depth 1000 "):
        assert_leading(INTENSITY, B + 1, "B<<D,F")
    with pytest.raises(AssertionError, match=r"leading term 1/N of N \+ 1 \(N->oo\) is off"):
        assert_leading(N + 1, 1 / N, "N->oo")


def test_an_error_that_stays_within_the_bound_but_grows_is_caught() -> None:
    with pytest.raises(AssertionError) as err:
        assert_leading(2 - 1 / N, 1, "N->oo", correction=1)
    assert str(err.value) == (
        "the relative error of the leading term 1 of 2 - 1/N (N->oo) does not shrink: 100% at "
        "N=1000000000000000000 (depth 1000000000000000000 from N=1), 100% at "
        "N=10000000000000000000")


def test_a_wrong_first_correction_is_caught() -> None:
    with pytest.raises(AssertionError) as err:
        assert_leading(INTENSITY, B, "B<<D,F", correction=-B**2 / D)
    assert str(err.value) == (
        "-B**2/D is not the first correction of B*D*F/(B*D + B*F + D*F) (B<<D,F): what it "
        "leaves out is 99.6% of it at B=1, D=1000, F=1000 (depth 1000 from B=1, D=1, F=1) "
        "and 100% at B=1, D=10000, F=10000, ten times deeper")


def test_regimes_bind_to_integer_sizes_by_name() -> None:
    bi, di = sizes("B D", integer=True)
    report = assert_leading(bi * di / (bi + di), bi, "B<<D")
    assert all(isinstance(v, int) for p in report.points for v in p.values())
    assert all(p[di] >= 1000 * p[bi] / 64 for p in report.points)
    with pytest.raises(AssertionError, match=r"off by 50% at B=1, D=1000 \(depth 1000 from "):
        assert_leading(bi * di / (bi + di), 2 * bi, "B<<D")


def test_leading_terms_with_roots_strings_exact_terms_and_higher_corrections() -> None:
    assert assert_leading(N + sp.sqrt(N), N, "N->oo", correction=sp.sqrt(N)).examples > 0
    with pytest.raises(AssertionError, match="2\\*sqrt\\(N\\) is not the first correction"):
        assert_leading(N + sp.sqrt(N), N, "N->oo", correction=2 * sp.sqrt(N))
    assert assert_leading("B*D*F/(B*D + B*F + D*F)", "B", "B<<D,F").examples > 0
    assert assert_leading(N, N, "N->oo").examples > 0
    # the engine's first correction is 0 here; the bound uses the next one, 1/N
    assert assert_leading(N + 1 / N, N, "N->oo").examples > 0
    with pytest.raises(AssertionError, match=r"\(depth 100 from B=1, D=1, F=1\)"):
        assert_leading(INTENSITY, 2 * B, "B<<D,F", depth=100)


# -- assert_threshold / assert_flips ------------------------------------------------------

def test_the_book_threshold_240_holds_deep_in_its_regime() -> None:
    report = assert_threshold(MATMUL, V5E, "B", 240, regime="B<<D,F")
    assert report.claim == "compute-bound against hbm when B > 240 (B<<D,F)"
    assert report.examples == 30
    assert all(p[D] >= 10**5 and p[F] >= 10**5 for p in report.points)


def test_a_threshold_off_by_ten_percent_is_caught_with_the_shrunk_sizes() -> None:
    with pytest.raises(AssertionError) as err:
        assert_threshold(MATMUL, V5E, "B", 264, regime="B<<D,F")
    assert str(err.value) == (
        "B > 264 (B<<D,F) fails at D=1000000, F=1000000 (depth 1000000 from D=1, F=1): the "
        "bound does not flip around B = 264: at B = 261.36 (1 - delta) T_math = 2.6534 s > "
        "T_hbm = 2.4403 s; at B = 266.64 (1 + delta) T_math = 2.70701 s > T_hbm = 2.44033 s; the "
        "engine's exact threshold there is B = 240.359")


def test_a_claim_is_held_to_its_chip_revision_and_its_direction() -> None:
    # the catalogue's default v5e HBM is 8.1e11 B/s: its threshold is 243.3, 1.4% above 240
    with pytest.raises(AssertionError, match="exact threshold there is B = 243.328"):
        assert_threshold(MATMUL, "tpu-v5e", "B", 240, regime="B<<D,F")
    with pytest.raises(AssertionError, match=r"B < 240 \(B<<D,F\) fails at D=1000000"):
        assert_threshold(MATMUL, V5E, "B", 240, regime="B<<D,F", direction="<")


def test_the_network_threshold_D_8755_holds_and_9000_fails_at_the_smallest_sizes() -> None:
    assert assert_threshold(SHARD, "tpu-v5e", "D", 8755).examples == 30
    with pytest.raises(AssertionError, match=r"D > 9000 fails at B=1, F=1: .* the engine's "
                                             r"exact threshold there is D = 8755.56"):
        assert_threshold(SHARD, "tpu-v5e", "D", 9000)


def test_an_exact_threshold_off_by_ten_percent_is_caught_where_it_exists() -> None:
    t = threshold(roofline(MATMUL, V5E), "B")
    assert assert_flips(t).examples == 30
    wrong = replace(t, exact=t.exact * sp.Rational(11, 10))
    with pytest.raises(AssertionError) as err:
        assert_flips(wrong)
    # where it is shrunk to depends on the example database; with none (CI) it is D=F=512
    assert re.match(r"B > 10835\*D\*F/\(41\*D\*F - 9850\*D - 9850\*F\) fails at D=\d+, "
                    r"F=\d+( \(scaled by \d+ from D=\d+, F=\d+\))?: the bound does not flip "
                    r"around B = [\d.e+]+: at B = [\d.e+]+ \(1 - delta\) T_math = [\d.e+-]+ "
                    r"[mµn]?s > T_hbm = [\d.e+-]+ [mµn]?s; at B = [\d.e+]+ \(1 \+ delta\) "
                    r"T_math = [\d.e+-]+ [mµn]?s > T_hbm = [\d.e+-]+ [mµn]?s$", str(err.value)), \
        str(err.value)
    at = sizes_in(str(err.value))
    # a real counterexample: the threshold exists there, and B = 1.1 x it is compute-bound
    # on both sides of the claimed value
    true = t.at(at).exact
    assert true.is_positive
    for side in (1 - sp.Rational(1, 10**6), 1 + sp.Rational(1, 10**6)):
        rl = roofline(MATMUL, V5E).at({**at, "B": true * sp.Rational(11, 10) * side})
        assert rl.bound() == "compute"


def test_thresholds_that_never_exist_are_bad_input() -> None:
    # 2 B D F FLOPs on B D F + 1 int8 bytes: the intensity stays below 2, always memory-bound;
    # the op would cross at B D F = P / (2 W - P) = 393e12 / (1.62e12 - 393e12) = -6550/6523
    with pytest.raises(DerivationError, match=r"T_math and T_hbm cross at B = "
                                              r"-6550/\(6523\*D\*F\), which is not positive"):
        assert_threshold(einsum("B D F -> ", "int8"), "tpu-v5e", "B")


def test_every_delta_and_direction_is_checked() -> None:
    t = threshold(roofline(MATMUL, V5E), "B")
    # 1% off passes with a stated delta of 2%, fails with the default for exact values
    assert assert_flips(t, t.exact * sp.Rational(101, 100), delta=0.02).examples > 0
    with pytest.raises(AssertionError, match="fails at D="):
        assert_flips(replace(t, exact=t.exact * sp.Rational(1001, 1000)))
    with pytest.raises(InputError, match="a value free of B"):
        assert_flips(t, B)
    with pytest.raises(InputError, match="0 < delta < 1"):
        assert_flips(t, 240, delta=2)


# -- assert_identity ----------------------------------------------------------------------

@pytest.mark.slow
def test_identities_hold_exactly_and_at_random_points() -> None:
    rl = roofline(MATMUL, V5E)
    report = assert_identity(rl.t_upper - rl.t_lower, sp.Min(rl.t_math, rl.t_comms["hbm"]))
    assert report.examples == 30
    assert assert_identity("(B**2 - D**2)/(B - D)", "B + D").examples > 0


def test_a_false_identity_names_the_shrunk_sizes() -> None:
    with pytest.raises(AssertionError) as err:
        assert_identity((B**2 - D**2) / (B + D), B + D)
    assert str(err.value) == ("(B**2 - D**2)/(B + D) != B + D at B=1, D=1: 0 against 2 "
                              "(they differ by -2)")
    with pytest.raises(AssertionError, match="differ by -1e-12"):
        assert_identity(sp.sqrt(B * D), sp.sqrt(B) * sp.sqrt(D) + sp.Rational(1, 10**12))


def test_equal_at_whole_sizes_is_not_enough() -> None:
    with pytest.raises(AssertionError, match="holds at 30 random points but is not proven"):
        assert_identity(sp.sin(sp.pi * N), 0)
    with pytest.raises(AssertionError, match=r"sin\(pi\*N\) != 0 at N=3/2: -1 against 0"):
        assert_identity(sp.sin(sp.pi * N), 0, integer=False)


# -- profiles: CI is derandomised and writes no example database -------------------------

@pytest.mark.usefixtures("profile")
def test_the_active_profile_is_honoured() -> None:
    settings.register_profile("t-ci", derandomize=True, database=None)
    settings.load_profile("t-ci")
    s = active_settings()
    assert s.derandomize is True and s.database is None and s.max_examples == 30
    assert active_settings(5).max_examples == 5
    settings.register_profile("t-few", max_examples=7)
    settings.load_profile("t-few")
    assert active_settings().max_examples == 7


@pytest.mark.usefixtures("profile")
def test_derandomised_runs_repeat_and_random_ones_do_not() -> None:
    settings.register_profile("t-ci", derandomize=True, database=None)
    settings.load_profile("t-ci")
    first = assert_leading(INTENSITY, B, "B<<D,F").points
    assert assert_leading(INTENSITY, B, "B<<D,F").points == first
    # each claim has a seed of its own
    assert assert_leading(2 * INTENSITY, 2 * B, "B<<D,F").points != first
    settings.register_profile("t-random", derandomize=False, database=None)
    settings.load_profile("t-random")
    assert assert_leading(INTENSITY, B, "B<<D,F").points != \
        assert_leading(INTENSITY, B, "B<<D,F").points


@pytest.mark.usefixtures("profile")
def test_the_profile_database_keeps_the_failing_example_and_none_is_written_without() -> None:
    db = InMemoryExampleDatabase()
    settings.register_profile("t-db", database=db,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("t-db")
    with pytest.raises(AssertionError):
        assert_leading(INTENSITY, 2 * B, "B<<D,F")
    assert db.data  # the shrunk example, kept under this claim's key


def test_importing_symroof_and_its_testing_module_does_not_import_hypothesis() -> None:
    code = ("import sys, symroof, symroof.testing; "
            "print('hypothesis' in sys.modules, 'sympy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr


@pytest.mark.slow
def test_the_example_suite_passes_under_ci_without_writing_a_database(tmp_path: Path) -> None:
    env = {**os.environ, "CI": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p",
                           "no:cacheprovider",
                           str(ROOT / "examples" / "test_my_claims.py")], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b7 passed\b", done.stdout), done.stdout
    # hypothesis may cache literals in .hypothesis/constants; examples are never saved
    assert not (tmp_path / ".hypothesis" / "examples").exists()
