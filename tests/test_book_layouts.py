"""Laws of the layouts and transfers of issue 36 (item 4): weight-stationary inference 1-D
against 2-D; the chapter's values are in tests/test_book_arithmetic.py."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip, mesh
from symroof.cli.main import main
from symroof.core.choices import BOOK, EXACT, Choices
from symroof.core.errors import DerivationError, InputError
from symroof.parallel import collective, pipeline_sends, send, weight_stationary
from symroof.parallel.mlp import mlp_step

V5P = chip("tpu-v5p")
W = Fraction(18 * 10**10)  # tpu-v5p ICI per link, both directions (the catalogue's)
B, D, F = sp.symbols("B D F", positive=True)
# ring sizes that close on a v5p torus (16 x 20 x 28, wraparound in multiples of 4)
RING = st.sampled_from([4, 8, 16])
CHOICES = st.sampled_from([EXACT, BOOK, Choices(latency="off"),
                           Choices(collectives="leading")])


@settings(max_examples=20, deadline=None)
@given(x=RING, y=RING, z=RING)
def test_one_d_comms_do_not_shrink_with_the_chips(x: int, y: int, z: int) -> None:
    # 1-D: every chip gathers and scatters the whole B D activations: 4 B D / (3 W) in the
    # text's form, whatever the axis sizes
    m = mesh(f"X={x},Y={y},Z={z}", V5P)
    t = weight_stationary(m, f="XYZ", choices=BOOK).comm_time
    assert sp.simplify(t - 4 * B * D / (3 * sp.Rational(W.numerator))) == 0


@settings(max_examples=20, deadline=None)
@given(x=RING, y=RING, z=RING, choices=CHOICES)
def test_flops_add_up_to_the_layer(x: int, y: int, z: int, choices: Choices) -> None:
    # both layouts split the 4 B D F FLOPs of the forward evenly: nothing is done twice
    m = mesh(f"X={x},Y={y},Z={z}", V5P)
    for ws in (weight_stationary(m, f="XYZ", choices=choices),
               weight_stationary(m, d="X", f="YZ", choices=choices)):
        assert sp.expand(ws.flops * ws.chips) == 4 * B * D * F


@settings(max_examples=20, deadline=None)
@given(x=RING, y=RING, z=RING, d_ff=st.integers(1, 8).map(lambda k: 4096 * k))
def test_the_best_split_is_a_minimum(x: int, y: int, z: int, d_ff: int) -> None:
    # no mesh of X Y Z chips costs a chip less communication than the best split's
    sizes = {"d_model": 8192, "d_ff": d_ff, "choices": BOOK}
    named = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", V5P)
    best = weight_stationary(named, d="X", f="YZ", **sizes).best_split(x * y * z)
    some = weight_stationary(mesh(f"X={x},Y={y},Z={z}", V5P), d="X", f="YZ", **sizes)
    gap = sp.simplify((some.comm_time - best.comm_time) / B)
    assert gap.is_number and gap >= 0
    assert sp.simplify(best.sizes["X"] * best.sizes["YZ"] - x * y * z) == 0


@settings(max_examples=15, deadline=None)
@given(x=RING, y=RING, z=RING, choices=CHOICES)
def test_one_d_is_the_tensor_parallel_forward(x: int, y: int, z: int,
                                              choices: Choices) -> None:
    # one question, one answer: a 1-D weight-stationary forward is mlp_step's
    # tensor-parallel forward (gather the input, reduce-scatter the output)
    m = mesh(f"X={x},Y={y},Z={z}", V5P)
    ws = weight_stationary(m, f="XYZ", choices=choices)
    fwd = mlp_step(m, tp="XYZ", choices=choices).phase("forward")
    assert sp.simplify(ws.comm_time - fwd.comm_time("tp")) == 0
    assert sp.simplify(ws.flops - fwd.flops) == 0


def test_the_crossover_against_one_d() -> None:
    # with F = 4 D the 2-D layout wins past 18 F / D = 72 chips, whatever D
    named = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", V5P)
    for d in (4096, 8192, 16384):
        sizes = {"d_model": d, "d_ff": 4 * d, "choices": BOOK}
        two = weight_stationary(named, d="X", f="YZ", **sizes)
        assert two.chips_to_beat(weight_stationary(named, f="XYZ", **sizes)) == 72
    # sizing a layout needs its axes as names, and a hop count is no product of sizes
    with pytest.raises(InputError, match=r"sizing the axes YZ needs them as names"):
        weight_stationary(mesh("X=X:wraps,Y=4,Z=4", V5P), d="X", f="YZ").best_split()
    with pytest.raises(DerivationError, match=r"beyond their product"):
        weight_stationary(named, d="X", f="YZ", choices=Choices(collectives="leading"),
                          ).best_split()
    with pytest.raises(DerivationError, match=r"a 1-D layout has one group of axes"):
        weight_stationary(named, f="XYZ").best_split()
    with pytest.raises(InputError, match=r"a weight-stationary layout takes the choices "
                                         r"collectives, latency, link_alpha, levels; peak=sparse"):
        weight_stationary(named, f="XYZ", choices=Choices(peak="sparse"))


def test_derive_stationary_sizes_a_lettered_mesh(capsys: pytest.CaptureFixture[str]) -> None:
    # a 2-D layout on a mesh of names: the best split and the crossover (one answer with
    # best_split and chips_to_beat), in the book's form; with the hops kept, none
    base = ["derive", "--mesh", "X=X:wraps,Y=Y:wraps,Z=Z:wraps", "--chip", "tpu-v5p",
            "--stationary", "d=X,f=YZ"]
    assert main([*base, "--choices", "book"]) == 0
    out = capsys.readouterr().out
    assert "beats 1-D           past N = 18*F/D chips" in out
    assert "best split          X = sqrt(2)*sqrt(D)*sqrt(N)/(2*sqrt(F)), YZ = " in out
    assert main(base) == 0
    assert "best split" not in capsys.readouterr().out


def test_derive_stationary_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["derive", "--mesh", "X=4,Y=4,Z=4", "--chip", "tpu-v5p", "--choices", "book",
            "--between", "math,ici", "--solve", "F", "--subs", "D=16384"]
    assert main([*base, "--stationary", "f=XYZ"]) == 0
    out = capsys.readouterr().out
    assert "1-D weight-stationary In[B, D_XYZ] W_in[D, F_XYZ] W_out[F_XYZ, D] on tpu-v5p" \
        in out
    # T_math = 4 B D F / (64 C) against 4 B D / (3 W): F > 64 C / (3 W)
    c = Fraction(459 * 10**12)
    assert f"threshold           F > {64 * c / (3 * W)} (against math,ici)" in out
    assert main([*base, "--stationary", "d=X,f=YZ", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # 4 B D F / (64 C) = 2 B D / (4 W) + 4 B F / (16 W): F (D / (16 C) - 1 / (4 W)) = D / (2 W)
    d = Fraction(16384)
    want = (d / (2 * W)) / (d / (16 * c) - 1 / (4 * W))
    assert sp.Rational(data["threshold"]["exact"].split("> ")[-1]) == \
        sp.Rational(want.numerator, want.denominator)


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(2, 64), gpus=st.sampled_from([2, 4, 8]),
       kind=st.sampled_from(["allgather", "reducescatter", "allreduce"]),
       v=st.integers(1, 10**12))
def test_levels_at_once_take_the_slowest(nodes: int, gpus: int, kind: str, v: int) -> None:
    # levels=slowest: the time is the slowest network's, never above the sum of the levels
    # in sequence, never below any one level's share
    m = mesh(f"node={nodes},gpu={gpus}", chip("h100-sxm"))
    c = collective(kind, v, "node,gpu", m)
    fast = c.under(Choices(levels="slowest"))
    per_link = {k: t for k, t in c.terms().items() if k != "latency"}
    assert fast.bandwidth_time == max(per_link.values())
    assert fast.bandwidth_time <= c.bandwidth_time
    assert c.bandwidth_time == sum(per_link.values())
    assert fast.latency_time == c.latency_time  # the hops are the hops
    # on one network the two readings agree
    alone = collective(kind, v, "gpu", m)
    assert alone.under(Choices(levels="slowest")).time == alone.time


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(2, 64), microbatches=st.integers(1, 64),
       v=st.integers(1, 10**10))
def test_pipeline_sends_are_sends(nodes: int, microbatches: int, v: int) -> None:
    # one question, one answer: N_MB + S - 2 point-to-point sends of V / N_MB bytes, and
    # never less than the batch's V bytes once over the link
    m = mesh(f"node={nodes},gpu=8", chip("h100-sxm"))
    t = pipeline_sends(v, "node", m, microbatches)
    one = send(sp.Rational(v, microbatches), "node", m)
    assert t.hops == microbatches + nodes - 2
    assert t.bandwidth_time == t.hops * one.bandwidth_time
    assert t.latency_time == t.hops * one.latency_time
    if nodes >= 2:
        assert t.bandwidth_time >= sp.Rational(v) / m.axis("node").bandwidth * \
            sp.Rational(microbatches + nodes - 2, microbatches)
    with pytest.raises(InputError, match=r"microbatches is a whole number, at least 1"):
        pipeline_sends(v, "node", m, 0)
    with pytest.raises(InputError, match=r"a pipeline's stages lie along one axis"):
        pipeline_sends(v, "node,gpu", m, 2)


def test_levels_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["collective", "allreduce", "--bytes", "1e9", "--axes", "node,gpu", "--mesh",
            "node=2,gpu=8", "--chip", "h100-sxm", "--choices", "levels=slowest,latency=off"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "bandwidth time                3.889 ms" in out
    assert "choice                        levels = slowest: the networks of a hierarchical " \
        "collective work at once" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["choices"]["levels"] == "slowest"
    assert sp.Rational(data["bandwidth_time"]) == sp.Rational(7, 1800)


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v2-lite"]),
       batch=st.integers(1, 4096))
def test_the_experts_read_lie_between_top_k_and_all(name: str, batch: int) -> None:
    # a batch reads at least one token's top-k experts and at most all of them; one token
    # reads exactly its top-k
    from symroof.models import layer_ops, model
    cfg = model(name)

    def expert_bytes(read: str, m: int) -> sp.Expr:
        step = layer_ops(cfg, "decode", batch=m, context=1, experts=read)
        return sum(o.bytes() for b in step.blocks for o in b.ops
                   if o.name.startswith("experts"))

    low, mid, high = (expert_bytes(r, batch) for r in ("top_k", "touched", "all"))
    assert low <= mid <= high
    assert expert_bytes("touched", 1) == expert_bytes("top_k", 1)
    with pytest.raises(InputError, match=r"experts is one of touched, all, top_k"):
        layer_ops(cfg, "decode", batch=1, context=1, experts="some")


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 16), v1=st.integers(1, 10**10), v2=st.integers(1, 10**10),
       kinds=st.tuples(st.sampled_from(["allgather", "reducescatter", "allreduce"]),
                       st.sampled_from(["allgather", "reducescatter", "allreduce"])))
def test_collectives_together(nodes: int, v1: int, v2: int,
                              kinds: tuple[str, str]) -> None:
    # at once and sharing: never slower than one after the other, never faster than the
    # slowest alone; on one link sharing is no faster than the sum of the bytes
    from symroof.parallel import together
    m = mesh(f"node={nodes},gpu=8", chip("h100-sxm"))
    a = collective(kinds[0], v1, "gpu", m)
    b = collective(kinds[1], v2, "node,gpu" if nodes > 1 else "gpu", m)
    off = Choices(latency="off")
    seq = together(a, b, choices=off).time
    shared = together(a, b, choices=off.with_(concurrent="shared")).time
    whole = together(a, b, choices=off.with_(concurrent="whole_link")).time
    assert whole <= shared <= seq
    assert seq == a.under(off).time + b.under(off).time
    one_link = together(a, collective(kinds[1], v2, "gpu", m),
                        choices=off.with_(concurrent="shared"))
    assert one_link.time == one_link.per_link["nvlink"] == \
        together(a, collective(kinds[1], v2, "gpu", m), choices=off).time
    with pytest.raises(InputError, match=r"collectives issued together takes the choices"):
        together(a, b, choices=Choices(experts="all"))


@settings(max_examples=20, deadline=None)
@given(src=st.tuples(st.integers(0, 3), st.integers(0, 3)),
       dst=st.tuples(st.integers(0, 3), st.integers(0, 3)), v=st.integers(1, 10**12))
def test_send_on_the_command_line_is_send(src: tuple[int, int], dst: tuple[int, int],
                                          v: int) -> None:
    # one question, one answer: collective send --from --to is parallel.send
    from symroof.commands.collective import SendRequest, send_of
    if src == dst:
        return
    m = mesh("X=4,Y=4", chip("tpu-v5e"))
    got = send_of(SendRequest(mesh="X=4,Y=4", axes="XY", nbytes=str(v), chip="tpu-v5e",
                              src=",".join(map(str, src)), dst=",".join(map(str, dst))))
    want = send(v, "XY", m, src=src, dst=dst)
    assert (got.transfer.time, got.transfer.hops) == (want.time, want.hops)


def test_send_and_totals_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collective", "send", "--bytes", "9e8", "--axes", "XY", "--mesh", "X=4,Y=4",
                 "--chip", "tpu-v5e", "--from", "0,0", "--to", "3,1"]) == 0
    out = capsys.readouterr().out
    # 3 + 1 hops of 1 us; 9e8 bytes over one link of each axis: 2 x 45e9
    assert "hops            4" in out and "bandwidth time  10 ms" in out
    assert "(a link of each of 2 axes at once)" in out
    assert main(["collective", "send", "--bytes", "V", "--axes", "XY", "--mesh", "X=4,Y=4",
                 "--chip", "tpu-v5e", "--hops", "X=2,Y=1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["time"] == "V/90000000000 + 3/1000000" and data["hops"] == "3"
    # derive --matmul prints the totals over all chips
    assert main(["derive", "--mesh", "X=8,Y=4", "--chip", "tpu-v5e", "--matmul",
                 "bf16[4096, 8192_X] x bf16[8192_X, 8192]"]) == 0
    out = capsys.readouterr().out
    flops = 4 * 2 * 4096 * 8192 * 8192  # the whole product, once per replica along Y (4)
    assert f"FLOPs, all chips    2.199e12 FLOP ({flops}) on 32 chips" in out
    assert f"lhs, all chips      268.4 MB ({4096 * 8192 * 2 * 4}), each element on 4 chips" \
        in out


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["fp32", "bf16", "fp16", "int8", "fp8", "int4", "fp4"]))
def test_a_dtype_by_its_bytes_is_the_named_one(name: str) -> None:
    # one question, one answer: "k bytes" moves what the dtype of k bytes moves
    from symroof.core.sizes import dtype_bytes
    from symroof.engine.ops import einsum
    k = dtype_bytes(name)
    spelled = einsum("B D, D F -> B F", f"{k} bytes", compute=name)
    named = einsum("B D, D F -> B F", name)
    assert spelled.bytes() == named.bytes() and spelled.flops == named.flops
    with pytest.raises(InputError, match=r"is given by its bytes and names no peak"):
        einsum("B D, D F -> B F", f"{k} bytes")
    with pytest.raises(InputError, match=r"takes a positive number or one letter"):
        dtype_bytes("b*c bytes")


def test_a_switch_carries_the_domain_over_its_switches() -> None:
    # switch aggregates: the domain's one-way NVLink bandwidth over its switches (B12's
    # counts: A100 6, H100 4, B200 2), both ways twice that
    for name, gpus, per_gpu, switches in (("a100-80gb", 8, 300 * 10**9, 6),
                                          ("h100-sxm", 8, 450 * 10**9, 4),
                                          ("b200", 8, 900 * 10**9, 2)):
        c = chip(name)
        assert c.link_per_switch("nvlink") == sp.Rational(gpus * per_gpu, switches)
        assert c.link_per_switch("nvlink", both_ways=True) == \
            2 * c.link_per_switch("nvlink")
        assert c.link_per_switch("nvlink") * switches == c.link_per_node("nvlink")
    with pytest.raises(InputError, match=r"tpu-v5e's ici runs through no switch domain"):
        chip("tpu-v5e").link_per_switch("ici")
    with pytest.raises(InputError, match=r"h100-sxm's ib runs through no switch domain"):
        chip("h100-sxm").link_per_switch("ib")


@settings(max_examples=6, deadline=None)
@given(d=st.sampled_from([1024, 4096, 8192]), ratio=st.sampled_from([2, 4, 8]),
       batch=st.sampled_from([1, 128, 512]))
def test_derive_stationary_subs_reach_the_best_split(d: int, ratio: int, batch: int) -> None:
    # --subs sizes the best split and the crossover as best_split and chips_to_beat do:
    # X^2 = N D / (2 F), past N = 18 F / D, worked out by hand
    import io
    from contextlib import redirect_stdout
    f = ratio * d
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["derive", "--mesh", "X=X:wraps,Y=Y:wraps,Z=Z:wraps", "--chip", "tpu-v5p",
                   "--stationary", "d=X,f=YZ", "--choices", "book", "--subs",
                   f"B={batch},D={d},F={f}"])
    assert rc == 0
    lines = {line[:20].strip(): line[20:].strip() for line in out.getvalue().splitlines()}
    n = sp.Symbol("N", positive=True)
    crossover = Fraction(18 * f, d)
    assert lines["beats 1-D"] == f"past N = {crossover} chips"
    split = sp.sqrt(n * sp.Rational(d, 2 * f))
    assert lines["best split"].startswith(f"X = {sp.sstr(sp.simplify(split))}, ")
    m = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", V5P)
    two = weight_stationary(m, d="X", f="YZ", choices=BOOK)
    best = two.best_split("N")
    at = {B: batch, D: d, F: f}
    assert sp.simplify(best.sizes["X"].subs(at) - split) == 0
