"""Meshes, sharded arrays and collectives: laws as properties, NCCL's bus-bandwidth factors,
the book's sharded-matmul threshold, and errors that point at the bad input."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import DerivationError, InputError
from symroof.core.names import COLLECTIVES
from symroof.hardware.catalog import chip
from symroof.parallel import (
    Mesh,
    all_gather,
    all_reduce,
    all_to_all,
    collective,
    mesh,
    permute,
    reduce_scatter,
    sharded,
    sharded_matmul,
)
from tests.conftest import examples

V = sp.Symbol("V", positive=True)
FEW = settings(max_examples=examples(30), deadline=None)


@st.composite
def axes(draw: st.DrawFn) -> Mesh:
    """A one-axis mesh X of 1..16 chips: a TPU ring (wrapped or not, one or two ways), an
    NVSwitch node, or a hierarchical GPU axis across nodes."""
    where = draw(st.sampled_from(["torus", "switch", "nodes"]))
    if where == "torus":
        n = draw(st.integers(1, 16))
        m = mesh(f"X={n}", "tpu-v5e")
        return m.with_axis("X", wraps=draw(st.booleans()),
                           bidirectional=draw(st.booleans()))
    if where == "switch":
        return mesh(f"X={draw(st.integers(1, 8))}", "h100-sxm")
    return mesh(f"X={8 * draw(st.integers(2, 6))}", "h100-sxm")


sizes = st.one_of(st.just(V), st.integers(1, 10**12).map(sp.Integer))


@FEW
@given(axes(), sizes)
def test_allreduce_is_reducescatter_plus_allgather(m: Mesh, v: sp.Expr) -> None:
    ar, rs, ag = (collective(k, v, "X", m) for k in ("allreduce", "reducescatter",
                                                      "allgather"))
    assert sp.simplify(ar.time - rs.time - ag.time) == 0
    assert sp.simplify(ar.bytes_per_device - rs.bytes_per_device - ag.bytes_per_device) == 0


@FEW
@given(st.integers(2, 16), sizes, st.sampled_from(["allgather", "reducescatter",
                                                   "allreduce"]))
def test_a_bidirectional_ring_halves_a_one_way_ring(n: int, v: sp.Expr, kind: str) -> None:
    ring = mesh(f"X={n}", "tpu-v5e").with_axis("X", wraps=True)
    both = collective(kind, v, "X", ring)
    one = collective(kind, v, "X", ring.with_axis("X", bidirectional=False))
    assert sp.simplify(one.bandwidth_time - 2 * both.bandwidth_time) == 0


@FEW
@given(st.integers(1, 16), st.integers(1, 10**9), st.sampled_from(COLLECTIVES),
       st.sampled_from(["tpu-v5e", "tpu-v5p", "tpu-v4", "tpu-v6e"]))
def test_wraparound_never_costs_more(n: int, v: int, kind: str, name: str) -> None:
    line = mesh(f"X={n}", name).with_axis("X", wraps=False)
    ring = line.with_axis("X", wraps=True)
    closed, open_ = collective(kind, v, "X", ring), collective(kind, v, "X", line)
    assert closed.bandwidth_time <= open_.bandwidth_time
    assert closed.latency_time <= open_.latency_time


@FEW
@given(axes(), sizes, st.sampled_from(COLLECTIVES))
def test_a_collective_on_a_one_chip_axis_costs_nothing(m: Mesh, v: sp.Expr, kind: str) -> None:
    one = mesh("X=1", m.chip)
    c = collective(kind, v, "X", one)
    assert (c.time, c.bytes_per_device) == (0, 0)
    assert c.latency_bound_below is None


MESHES = ["X=8,Y=4", "X=16,Y=16", "X=2,Y=8,Z=4", "X=N,Y=M"]


@FEW
@given(st.sampled_from(MESHES), st.data())
def test_device_bytes_times_devices_is_global_bytes_times_replication(
        spec: str, data: st.DataObject) -> None:
    m = mesh(spec, "tpu-v4")
    names = list(m.axes)
    dims = []
    free = list(names)
    for dim in ("B", "T", "D"):
        k = data.draw(st.integers(0, len(free)))
        picked = data.draw(st.permutations(free))[:k] if free else []
        free = [a for a in free if a not in picked]
        dims.append(dim + ("_" + "".join(picked) if picked else ""))
    dtype = data.draw(st.sampled_from(["bf16", "fp32", "int8", "int4"]))
    a = sharded(f"{dtype}[{', '.join(dims)}]", m)
    assert sp.simplify(a.device_bytes * m.devices - a.global_bytes * a.replication) == 0


@pytest.mark.parametrize("n", range(2, 9))
def test_nccl_bus_bandwidth_factors_on_an_nvswitch_node(n: int) -> None:
    """nccl-tests doc/PERFORMANCE.md: busBw = algBw x factor, algBw = size / time; the bus
    bandwidth of a switch node is the per-GPU NVLink bandwidth one way."""
    m = mesh(f"X={n}", "h100-sxm")
    bus = chip("h100-sxm").link("nvlink").one_way
    factors = {"allreduce": sp.Rational(2 * (n - 1), n),
               "allgather": sp.Rational(n - 1, n),
               "reducescatter": sp.Rational(n - 1, n),
               "alltoall": sp.Rational(n - 1, n)}
    for kind, factor in factors.items():
        c = collective(kind, V, "X", m)
        alg = V / c.bandwidth_time
        assert sp.simplify(bus / alg) == factor, kind


def test_book_two_chip_matmul_contracted_over_d() -> None:
    """How To Scale Your Model ch. 1 (seed 000): X[B, D] x Y[D, F] split over D on two
    chips, partial sums exchanged at 4.5e10 B/s each way: T_comms = 2BF / 4.5e10 and the op
    is compute-bound against the link when D > 8755."""
    m = mesh("X=2", "tpu-v5e")
    mm = sharded_matmul("bf16[B, D_X]", "bf16[D_X, F]", m)
    B, D, F = sp.symbols("B D F", positive=True)
    rl = mm.roofline()
    assert rl.t_comms["ici"] == 2 * B * F / 45_000_000_000
    assert rl.t_math == B * D * F / 197_000_000_000_000
    from symroof.engine.thresholds import between
    t = between(rl, "math", "ici", "D")
    assert (t.exact, t.integer, t.direction) == (sp.Rational(78800, 9), 8756, ">")


def test_matmul_cases() -> None:
    m = mesh("X=4,Y=2", "tpu-v5e")
    local = sharded_matmul("bf16[B_X, D]", "bf16[D, F_Y]", m)
    assert local.collectives == () and local.result.text == "bf16[B_X, F_Y]"
    gather = sharded_matmul("bf16[B, D_X]", "bf16[D, F]", m)
    assert [c.kind for c in gather.before] == ["allgather"] and gather.after == ()
    assert gather.result.text == "bf16[B, F]"
    scatter = sharded_matmul("bf16[B, D_X]", "bf16[D_X, F]", m, scatter="F")
    assert scatter.result.text == "bf16[B, F_X]"
    both = sharded_matmul("bf16[B_X, D]", "bf16[D, F_X]", m)
    assert [c.title for c in both.before] == ["AllGather_X bf16[D, F_X]"]
    assert both.result.text == "bf16[B_X, F]"


def test_collectives_on_arrays_move_the_sharding() -> None:
    m = mesh("X=8,Y=4", "tpu-v5e")
    assert all_gather("bf16[B_XY, D]", "Y", m).result.text == "bf16[B_X, D]"
    assert reduce_scatter("bf16[B, F]", "X", m).result.text == "bf16[B, F_X]"
    assert all_to_all("bf16[B_X, D]", "X", m, dim="D").result.text == "bf16[B, D_X]"
    assert all_reduce("fp32[B, F_Y]", "X", m).result.text == "fp32[B, F_Y]"
    assert permute("bf16[B_X, D]", "X", m).bytes_per_device == \
        sharded("bf16[B_X, D]", m).device_bytes


def test_latency_bound_size_of_an_allgather_on_a_tpu_axis() -> None:
    """v5e, X = 16 (wraps around): bandwidth term 15/16 V / (2 x 4.5e10), latency
    floor(16/2) hops of 1 us: equal at V = 8e-6 x 9e10 x 16/15 = 768000 bytes."""
    c = collective("allgather", V, "X", mesh("X=16", "tpu-v5e"))
    assert c.latency_bound_below == 768_000
    t = all_gather("bf16[B_X, D]", "X", mesh("X=16", "tpu-v5e")).threshold("B")
    assert sp.simplify(t.exact - sp.Rational(768_000, 2) / sp.Symbol("D", positive=True)) == 0


def test_latency_bound_size_on_an_nvswitch_node_uses_the_sourced_latency() -> None:
    """NCCL's cost model gives 0.6 us per ring step over NVLink (NCCL-TUNE in the
    catalogue): 7 hops of an AllGather over 8 chips; a value set by the user replaces it,
    and 0 leaves the bandwidth term alone."""
    c = collective("allgather", V, "X", mesh("X=8", "h100-sxm"))
    assert c.latency_time == 7 * sp.Rational(6, 10**7)
    assert c.latency_bound_below == 7 * sp.Rational(6, 10**7) * 450_000_000_000 * 8 / 7
    timed = mesh("X=8", chip("h100-sxm").with_figures({"nvlink.latency": "2 us"}))
    assert collective("allgather", V, "X", timed).latency_bound_below == 7_200_000
    none = mesh("X=8", chip("h100-sxm").with_figures({"nvlink.latency": "0"}))
    assert collective("allgather", V, "X", none).latency_time == 0


@pytest.mark.parametrize(("make", "message"), [
    (lambda: mesh("X=512", "tpu-v5e"), "axis X=512 does not fit what is left of the "
     "tpu-v5e-pod torus (16x16): the mesh is larger than the topology"),
    (lambda: mesh("X=16,Y=32", "tpu-v5e"), "axis Y=32 does not fit what is left"),
    (lambda: mesh("X=8,X=4", "tpu-v5e"), "'X' is given twice"),
    (lambda: mesh("X=16,Y=16,Z=2", "tpu-v5e"), "more ICI axes than the tpu-v5e-pod torus"),
    (lambda: mesh("X=144", "b200", topology="gb200-nvl72"),
     "holds 72 and the catalogue gives no scale-out"),
    (lambda: sharded("bf16[B_Z, D]", mesh("X=8", "tpu-v5e")),
     "token 'B_Z' at column 6: dimension 'B' is sharded over unknown mesh axis 'Z'"),
    (lambda: sharded("bf16[B_X, D_X]", mesh("X=8", "tpu-v5e")),
     "mesh axis 'X' already splits dimension 'B'"),
    (lambda: sharded("bf16[10_X]", mesh("X=4", "tpu-v5e")), "10 does not divide into 4"),
    (lambda: sharded("bf16[0_X]", mesh("X=4", "tpu-v5e")), "needs at least one element"),
    (lambda: sharded("bf16[B, D", mesh("X=4", "tpu-v5e")), "expected DTYPE[DIM, DIM_AXES"),
    (lambda: mesh("X=1e400", "tpu-v5e"), "more chips than any system holds"),
    (lambda: mesh("X=N*M", "tpu-v5e"), "give a whole number or one symbol"),
    (lambda: chip("tpu-v5e").with_figures({"ici": "9e10"}),
     "must state its convention, one-way or bidirectional"),
    (lambda: all_gather("bf16[B, D]", "X", mesh("X=8", "tpu-v5e")), "nothing to gather"),
    (lambda: collective("allscatter", 1, "X", mesh("X=8", "tpu-v5e")), "unknown collective"),
])
def test_bad_input_is_one_clear_line(make: object, message: str) -> None:
    with pytest.raises(InputError) as err:
        make()  # type: ignore[operator]
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_overrides_state_their_convention() -> None:
    bidi = chip("tpu-v5e").with_figures({"ici": "1.8e11 B/s bidi"}).link("ici")
    assert (bidi.one_way, bidi.bidirectional) == (90_000_000_000, 180_000_000_000)
    vendor = chip("h100-sxm", nvlink="NV-H100").link("nvlink")
    assert vendor.direction == "bidirectional" and vendor.one_way == 450_000_000_000


def test_a_gap_with_a_square_root_is_solved_or_said_to_have_no_closed_form() -> None:
    from symroof.engine.ops import op
    from symroof.engine.rooflines import roofline
    from symroof.engine.thresholds import between
    N = sp.Symbol("N", positive=True)
    rl = roofline(op("s", N * sp.sqrt(N) * 197, comms={"ici": N * 45}), chip("tpu-v5e"))
    t = between(rl, "math", "ici", "N")  # N^(3/2)/10^12 = N/10^9 at sqrt(N) = 1000
    assert (t.exact, t.direction) == (10**6, ">")
    odd = roofline(op("t", sp.exp(N) + N, comms={"ici": sp.log(N + 2)}), chip("tpu-v5e"))
    with pytest.raises(DerivationError, match="no closed form"):
        between(odd, "math", "ici", "N")


def test_book_pop_quiz_allgather_without_wraparound() -> None:
    """How To Scale Your Model ch. 3, Pop Quiz 2: AllGather_Y([E_Y, F]) on a v5e mesh
    {X: 8, Y: 4}, E = 2048, F = 8192, bf16: no wraparound on an axis of 4, so "3 * 8.4e6 /
    4.5e10 = 560us"; the book's multi-axis rule T = V / (W_ici N_axes), latency
    T_min sum |X_i| / 2."""
    m = mesh("X=8,Y=4", "tpu-v5e")
    quiz = all_gather("bf16[2048_Y, 8192]", "Y", m)
    assert f"{float(quiz.bandwidth_time):.2g}" == "0.00056"
    assert quiz.hops == 3
    pod = mesh("X=16,Y=16", "tpu-v5e")
    both, one = collective("allgather", V, "XY", pod), collective("allgather", V, "X", pod)
    assert both.hops == 16 and one.hops == 8
    # 255/256 V over 2 axes of 9e10 B/s, against 15/16 V over one
    assert sp.simplify(both.bandwidth_time / one.bandwidth_time -
                       sp.Rational(255, 256) / 2 / sp.Rational(15, 16)) == 0


@st.composite
def two_axes(draw: st.DrawFn) -> Mesh:
    """Two-axis meshes: a TPU torus (either axis may span dimensions) or GPU nodes."""
    if draw(st.booleans()):
        x, y = draw(st.sampled_from([(1, 4), (4, 4), (16, 4), (16, 16), (64, 1), (2, 16)]))
        return mesh(f"X={x},Y={y}", draw(st.sampled_from(["tpu-v5e", "tpu-v6e"])))
    x, y = draw(st.sampled_from([(1, 8), (2, 8), (4, 2), (3, 16), (2, 4)]))
    return mesh(f"X={x},Y={y}", draw(st.sampled_from(["h100-sxm", "b200"])))


@FEW
@given(two_axes(), sizes, st.sampled_from(["XY", "X", "Y"]))
def test_the_laws_hold_over_several_axes(m: Mesh, v: sp.Expr, axes_: str) -> None:
    ar, rs, ag = (collective(k, v, axes_, m) for k in ("allreduce", "reducescatter",
                                                       "allgather"))
    assert sp.simplify(ar.time - rs.time - ag.time) == 0
    # every device receives what it lacks: (n-1)/n of the gathered bytes, whatever the route
    n = sp.Mul(*(m.axis(a).size for a in m.resolve(axes_)))
    assert sp.simplify(ag.bytes_per_device - (n - 1) / n * v) == 0


def test_book_chapter_3_questions_on_a_v4_cube() -> None:
    """How To Scale Your Model ch. 3, Questions 1-3 on TPU v4 with Mesh({X: 4, Y: 4, Z: 4}) (a
    full 4x4x4 cube, so every axis wraps): the book drops the factor (n-1)/n of a ring, so
    the engine's terms times n/(n-1) are the book's formulas exactly."""
    assert sharded("bf16[I_X, J, K]", mesh("X=4,Y=8,Z=2", "tpu-v4")).replication == 16
    m = mesh("X=4,Y=4,Z=4", "tpu-v4")
    B, D = 1024, 4096
    bidi = 9 * 10**10
    one = all_gather(f"bf16[{B}_X, {D}_Y]", "X", m)
    assert one.bandwidth_time * sp.Rational(4, 3) == sp.Rational(2 * B * D, bidi * 4)  # 23 us
    two = all_gather(f"bf16[{B}_X, {D}_Y]", "XY", m)
    assert two.bandwidth_time * sp.Rational(16, 15) == sp.Rational(2 * B * D, 2 * bidi)  # 46 us
    assert two.latency_time == sp.Rational(4, 10**6)  # "the latency bound of 4us"
    tiny = all_gather("bf16[128_X]", "X", m)
    assert tiny.hops == 2 and tiny.latency_time > tiny.bandwidth_time  # "only 2 hops"


@pytest.mark.parametrize("shape", ["X=16", "X=16,Y=4", "X=16,Y=16"])
def test_book_alltoall_is_a_quarter_of_the_longest_ring(shape: str) -> None:
    """Ch. 3: an AllToAll of V bytes in all over N chips costs V max(A, B, ...) /
    (4 N W_bidi); per device, V/N bytes."""
    m = mesh(shape, "tpu-v5e")
    sizes_ = [int(a.size) for a in m.axes.values()]
    n = sp.Mul(*sizes_)
    a2a = collective("alltoall", V / n, "".join(m.axes), m)
    assert sp.simplify(a2a.bandwidth_time - V * max(sizes_) / (4 * n * 9 * 10**10)) == 0


CHIP = """[sources]
S = "a source"
[chips.toy.peak.mxu.bf16]
value = "1e14 FLOP/s"
source = "S"
[chips.toy.links.ici]
bandwidth = { value = "1e10 B/s", source = "S" }
"""


@pytest.mark.parametrize(("extra", "message"), [
    ("", "chips.toy.links.ici: missing 'direction' (one of one-way, bidirectional)"),
    ('direction = "both ways"\n', "direction must be one of one-way, bidirectional"),
    ('direction = "one-way"\nper = "rack"\n', "per must be one of link, chip, host, node"),
    ('direction = "one-way"\n[topologies.t]\nchips = ["toy"]\nkind = "torus"\nshape = [4]\n'
     'link = "nvlink"\nsource = "S"\n', "topologies.t: chip 'toy' has no link 'nvlink'"),
    ('direction = "one-way"\n[topologies.t]\nchips = ["toy"]\nkind = "mesh"\nshape = [4]\n'
     'link = "ici"\nsource = "S"\n', "kind must be one of torus, switch"),
    ('direction = "one-way"\n[topologies.t]\nchips = ["toy"]\nkind = "torus"\nshape = [0]\n'
     'link = "ici"\nsource = "S"\n', "topologies.t.shape: expected a list of positive integers"),
])
def test_a_catalogue_link_states_its_convention(tmp_path: object, extra: str,
                                                message: str) -> None:
    from pathlib import Path

    from symroof.hardware.catalog import load_catalog
    path = Path(str(tmp_path)) / "mine.toml"
    path.write_text(CHIP + extra, "utf-8")
    with pytest.raises(InputError) as err:
        load_catalog(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_user_topology_makes_a_mesh(tmp_path: object) -> None:
    from pathlib import Path

    from symroof.hardware.catalog import load_catalog
    path = Path(str(tmp_path)) / "ring.toml"
    path.write_text(CHIP + 'direction = "bidirectional"\nlatency = { value = "2 us", source = '
                    '"S" }\n[topologies.ring8]\nchips = ["toy"]\nkind = "torus"\nshape = [8]\n'
                    'link = "ici"\nwraparound = "full"\nsource = "S"\n', "utf-8")
    toy = load_catalog(str(path))["toy"]
    ag = collective("allgather", V, "X", mesh("X=8", toy))
    # a wrapped bidirectional ring of 8: 7/8 V over 1e10 B/s (both ways), 4 hops of 2 us
    assert (ag.bandwidth_time, ag.latency_time) == (7 * V / 8 / 10**10, sp.Rational(8, 10**6))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([("tpu-v5e", "X=16"), ("tpu-v5e", "X=2@dcn,Y=16"),
                        ("tpu-v5p", "X=4,Y=4,Z=4"), ("h100-sxm", "X=16"),
                        ("a100-80gb", "X=8")]),
       st.data())
def test_a_mesh_under_an_edition_is_the_mesh_built_on_that_edition_s_chip(
        case: tuple[str, str], data: st.DataObject) -> None:
    # one question, one answer: a mesh remade under edition=LABEL (what a collective's
    # values are tried under) has the axes a mesh built on chip(...).edition(LABEL) has
    from symroof.core.choices import EXACT
    name, spec = case
    base = chip(name)
    labels = sorted({a.label for f in base.figures.values() for a in f.alternatives})
    m = mesh(spec, base)
    assert m.under(EXACT) is m
    if not labels:
        return
    label = data.draw(st.sampled_from(labels))
    assert m.under(EXACT.with_(edition=label)).axes == mesh(spec, base.edition(label)).axes
