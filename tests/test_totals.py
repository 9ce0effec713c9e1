"""Mesh totals and the plain counts of the later chapters: F FLOPs at an MFU, a global
batch from a per-chip one, point-to-point and gather-to-one transfers."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip
from symroof.core.errors import InputError
from symroof.parallel import all_gather, gather_to_one, global_batch, mesh, send
from symroof.parallel.aggregates import flops_time, totals


def test_a_pod_s_totals_add_up_its_chips() -> None:
    t = totals(mesh("X=16,Y=16", "tpu-v5e"))
    v5e = chip("tpu-v5e")
    assert (t.chips, t.hosts) == (256, 32)  # 8 chips per host (B2)
    assert t.flops == 256 * v5e.peak("bf16")
    assert t.hbm == 256 * v5e.capacity("hbm") and t.hbm_bandwidth == 256 * v5e.bandwidth()
    node = totals(mesh("node=2,gpu=8", "h100-sxm"), "fp8")
    assert node.chips == 16 and node.flops == 16 * chip("h100-sxm").peak("fp8")
    # cores: 1 TensorCore per v5e chip, 2 per v5p chip (megacore; B2), 132 SMs per H100
    # (B12); none catalogued for the H100 PCIe
    assert (t.cores, t.core_kind) == (256, "TensorCores")
    assert totals(mesh("X=4,Y=4,Z=4", "tpu-v5p")).cores == 128
    assert (node.cores, node.core_kind) == (16 * 132, "SMs")
    assert chip("h100-pcie").cores() is None


def test_a_symbolic_mesh_has_symbolic_totals() -> None:
    t = totals(mesh("X=N", "tpu-v5e"))
    n = mesh("X=N", "tpu-v5e").axis("X").size
    assert t.chips == n and t.hosts == n / 8


@settings(max_examples=20, deadline=None)
@given(chips=st.integers(1, 4096), mfu_pct=st.integers(1, 100))
def test_flops_time_is_inverse_in_chips_and_mfu(chips: int, mfu_pct: int) -> None:
    mfu = sp.Rational(mfu_pct, 100)
    t = flops_time("F", chips, "tpu-v5p", mfu)
    assert sp.simplify(t * chips * mfu - flops_time("F", 1, "tpu-v5p")) == 0


def test_flops_time_refuses_an_impossible_mfu_and_floats() -> None:
    with pytest.raises(InputError, match=r"mfu: an MFU is a fraction of the peak in \(0, 1\]"):
        flops_time(10**21, 8, "tpu-v5e", mfu=2)
    with pytest.raises(InputError, match=r"mfu: give mfu exactly"):
        flops_time(10**21, 8, "tpu-v5e", mfu=0.4)


def test_global_batch_from_a_per_chip_critical_batch() -> None:
    assert global_batch(240, 256) == 61440
    assert global_batch(240, 256, experts=8, active=2) == 4 * 61440
    with pytest.raises(InputError, match="needs both its experts E and the active k"):
        global_batch(240, 256, experts=8)


def test_send_and_gather_to_one() -> None:
    m = mesh("X=16", "tpu-v5e")
    s = send("V", "X", m, hops=2)
    v = sp.Symbol("V", positive=True)
    assert s.bandwidth_time == s.nbytes / 45_000_000_000
    assert s.latency_time == 2 * sp.Rational(1, 10**6)
    assert s.nbytes.free_symbols and str(s.nbytes) == str(v)
    with pytest.raises(InputError, match=r"hops is a whole number of links, at least 1"):
        send("V", "X", m, hops=0)
    g = gather_to_one("2*B*D", "X", m)
    assert g.time == all_gather("bf16[B_X, D]", "X", m).time


def test_a_pure_flop_op_is_compute_bound_at_any_size() -> None:
    from symroof import roofline
    from symroof.core.errors import DerivationError
    from symroof.engine.ops import Op
    from symroof.engine.thresholds import threshold
    f = sp.Symbol("F", positive=True)
    rl = roofline(Op("exp of the scores", 5 * f, dtype="fp32", compute="vpu"), chip("tpu-v5p"))
    assert rl.t_comms == {"hbm": 0} and rl.intensity == sp.oo
    assert rl.t_math == 5 * f / chip("tpu-v5p").peak("fp32", "vpu")
    assert rl.at({"F": 10**9}).bound() == "compute"
    with pytest.raises(DerivationError, match="do not cross"):
        threshold(rl, "F")
    with pytest.raises(InputError, match="does no work"):
        roofline(Op("nothing", 0), chip("tpu-v5p"))
