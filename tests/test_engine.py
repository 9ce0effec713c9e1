"""Ops, regimes, rooflines and thresholds: exact results derived by hand, and laws."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symroof.core.errors import DerivationError, InputError
from symroof.core.sizes import dtype_bytes, sizes
from symroof.engine.asymptotics import expansion, parse_regime, theta
from symroof.engine.ops import einsum, elementwise, fuse, op, sequence
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import solve_condition, threshold
from symroof.hardware.catalog import chip, load_catalog

B, D, F, N = sizes("B D F N")
V5E_CH1 = chip("tpu-v5e", hbm="B1")  # 1.97e14 FLOP/s, 8.2e11 B/s
RIDGE = sp.Rational(197 * 10**12, 820 * 10**9)  # = 9850/41


def equal(a: sp.Expr, b: sp.Expr) -> bool:
    return sp.simplify(a - b) == 0


def test_dtype_bytes_are_exact() -> None:
    assert [dtype_bytes(d) for d in ("bf16", "fp16", "fp32", "int8", "fp8", "int4")] == \
        [2, 2, 4, 1, 1, sp.Rational(1, 2)]
    with pytest.raises(InputError, match="unknown dtype 'fp12'"):
        dtype_bytes("fp12")


def test_einsum_costs() -> None:
    mm = einsum("B D, D F -> B F", "bf16")
    assert mm.flops == 2 * B * D * F
    assert mm.bytes() == 2 * (B * D + D * F + B * F)
    per_example = einsum("B D, B D F -> B F", "int8")
    assert per_example.bytes() == B * D + B * D * F + B * F
    w8a16 = einsum("B D, D F -> B F", ["bf16", "int8"], out="bf16")
    assert w8a16.bytes() == 2 * B * D + D * F + 2 * B * F and w8a16.dtype == "bf16"
    with pytest.raises(InputError, match="output dimension 'G' is in no operand"):
        einsum("B D -> G")


@given(st.integers(1, 12))
def test_fusion_of_k_elementwise_ops_moves_2N_instead_of_2kN(k: int) -> None:
    chain = [elementwise(f"op{i}", N, "int8") for i in range(k)]
    assert sequence(*chain).bytes() == 2 * k * N
    assert fuse(*chain).bytes() == 2 * N
    assert fuse(*chain).flops == sequence(*chain).flops == k * N


def test_repeat_scales_every_cost() -> None:
    shard = op("shard", B * D * F, comms={"ici": 2 * B * F})
    twice = shard.repeat(3)
    assert twice.flops == 3 * B * D * F and twice.comms == {"ici": 6 * B * F}


def test_matmul_intensity_leading_term_and_first_correction() -> None:
    rl = roofline(einsum("B D, D F -> B F", "bf16"), V5E_CH1)
    assert equal(rl.intensity, B * D * F / (B * D + D * F + B * F))
    x = expansion(rl.intensity, "B<<D,F")
    assert x.leading == B
    assert equal(x.correction, -B**2 * (1 / D + 1 / F))


def test_dot_product_and_per_example_limits() -> None:
    dot = op("dot", 2 * N - 1, 4 * N + 2)
    rl = roofline(dot, V5E_CH1)
    assert equal(rl.intensity, (2 * N - 1) / (4 * N + 2))
    assert expansion(rl.intensity, "N->oo").leading == sp.Rational(1, 2)
    batched = roofline(einsum("B D, B D F -> B F", "int8"), chip("tpu-v5e"))
    assert equal(batched.intensity, 2 * D * F / (D * F + D + F))
    assert expansion(batched.intensity, "D,F->oo").leading == 2


def test_regime_parsing() -> None:
    reg = parse_regime("B<<D,F; N->oo")
    assert reg.large == (D, F, N) and reg.small == ()
    assert parse_regime("x->0").small == sizes("x")
    with pytest.raises(InputError, match="cannot read the regime clause 'B<D'"):
        parse_regime("B<D")


def test_theta_keeps_undominated_terms() -> None:
    M, d = sizes("M d")
    assert theta(4 * N * d + 2 * N**2 * d**2 / M) == N * d + N**2 * d**2 / M
    assert theta(3 * N**2 + 5 * N * d, "d<<N") == N**2


monomial_exponents = st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2),
                                         st.sampled_from([0, sp.Rational(1, 2), 1])),
                               min_size=1, max_size=4)


@given(monomial_exponents, st.sampled_from(["N->oo", "B<<D", "B,N->oo", "D->0; N->oo"]))
def test_theta_keeps_the_terms_no_other_outgrows(exponents: list, regime: str) -> None:
    # the oracle: a term is dropped when some other term's ratio to it tends to infinity
    # along the regime's scaling (eps -> 0), by SymPy's limit
    terms = list(dict.fromkeys(B**a * D**b * N**c for a, b, c in exponents))
    reg = parse_regime(regime)
    eps = sp.Symbol("e", positive=True)
    deep = {s: s / eps for s in reg.large} | {s: s * eps for s in reg.small}

    def outgrown(t: sp.Expr) -> bool:
        return any(sp.limit((t / u).subs(deep), eps, 0, "+") == 0 for u in terms if u != t)
    assert theta(sp.Add(*terms), regime) == sp.Add(*(t for t in terms if not outgrown(t)))


def test_bf16_matmul_threshold_on_v5e() -> None:
    rl = roofline(einsum("B D, D F -> B F", "bf16"), V5E_CH1)
    t = threshold(rl, "B", regime="B<<D,F")
    assert t.asymptotic == RIDGE == sp.Rational(9850, 41)
    assert t.direction == ">"
    at = t.at({"D": 8192, "F": 32768})
    # B = r D F / (D F - r (D + F)) with r = 9850/41
    r = RIDGE
    assert at.exact == r * 8192 * 32768 / (8192 * 32768 - r * (8192 + 32768))
    assert at.integer == 250 and abs(float(at.exact) - 249.39) < 0.01
    assert threshold(rl, "B").at({"D": 10**9, "F": 10**9}).integer == 241


def test_sharded_matmul_needs_D_above_twice_the_ici_ridge() -> None:
    shard = op("shard", B * D * F, comms={"ici": 2 * B * F})
    t = threshold(roofline(shard, chip("tpu-v5e")), "D")
    assert t.exact == 2 * sp.Rational(197 * 10**12, 45 * 10**9) == sp.Rational(78800, 9)
    assert t.integer == 8756 and t.existence == sp.true


def test_w8a16_threshold_and_its_existence_condition() -> None:
    w8a16 = einsum("B D, D F -> B F", ["bf16", "int8"], out="bf16")
    t = threshold(roofline(w8a16, V5E_CH1), "B")
    assert t.at({"D": 4096, "F": 4096}).exact == sp.Rational(5043200, 37059)
    assert solve_condition(t.existence.subs(F, D)) == (D > 2 * RIDGE)
    with pytest.raises(DerivationError, match="no threshold in B"):
        t.at({"D": 400, "F": 400})


def test_threshold_errors_name_the_symbol() -> None:
    rl = roofline(einsum("B D, D F -> B F", "bf16"), V5E_CH1)
    with pytest.raises(InputError, match="symbol Q is not in the formulas"):
        threshold(rl, "Q")
    with pytest.raises(DerivationError, match="do not cross"):
        threshold(roofline(op("flat", B, 2 * B), V5E_CH1), "B")


# the chips with a bf16 peak and an HBM bandwidth (the H800 PCIe has only an fp8 figure)
CHIPS = sorted(n for n, c in load_catalog().chips.items()
               if "mxu.bf16" in c.figures and "hbm" in c.figures)
SIZE = st.integers(1, 2**20)


@given(st.sampled_from(CHIPS), SIZE, SIZE, SIZE)
def test_lower_bound_le_upper_bound_le_twice_lower(name: str, b: int, d: int, f: int) -> None:
    rl = roofline(einsum("B D, D F -> B F", "bf16"), chip(name)).at({"B": b, "D": d, "F": f})
    lower, upper = rl.t_lower, rl.t_upper
    assert lower <= upper <= 2 * lower


@given(st.sampled_from(CHIPS), st.fractions(1, 10**4), st.fractions(1, 10**4))
def test_attainable_is_min_of_peak_and_intensity_times_bandwidth_and_monotone(
        name: str, i1: object, i2: object) -> None:
    c = chip(name)
    lo, hi = sorted([sp.Rational(str(i1)), sp.Rational(str(i2))])
    peak, bw = c.peak(), c.bandwidth()
    def attainable(i: sp.Expr) -> sp.Expr:
        return roofline(op("x", i * N, N), c).attainable
    assert attainable(lo) == min(peak, lo * bw)
    assert attainable(lo) <= attainable(hi) <= peak
