"""The MLP training step on a mesh: FSDP over M torus axes and FSDP x tensor parallel, its
comm terms and critical batch checked against results derived by hand (below)."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip
from symroof.core.choices import BOOK, EXACT
from symroof.core.errors import DerivationError, InputError
from symroof.parallel import mesh
from symroof.parallel.mlp import mlp_step
from tests.conftest import examples

V5P = chip("tpu-v5p")
C = V5P.peak("bf16")
W1 = mesh("X=16", V5P).axis("X").bandwidth  # one-way bytes/s per ICI link
ALPHA_HOP = mesh("X=16", V5P).axis("X").latency
NAMES = "XYZ"


def torus(sizes: list[int]) -> object:
    """A v5p mesh whose axes all wrap (each a whole ring of the torus)."""
    m = mesh(",".join(f"{n}={s}" for n, s in zip(NAMES, sizes, strict=False)), V5P)
    for n in NAMES[:len(sizes)]:
        m = m.with_axis(n, wraps=True)
    return m


# By hand, FSDP over M wrapped rings of N = n_1...n_M chips, per layer: each pass gathers
# both weights (2DF bytes each) and the backward pass also reduce-scatters both gradients.
# One gather of V bytes over M concurrent bidirectional rings costs (N-1)/N V / (2 M W1)
# plus H = sum floor(n_i/2) hops of latency. Forward: 4 B D F / (N C) of compute against
# 2 (N-1) D F / (N M W1) + 2 H alpha; backward: twice both. So both phases turn
# compute-bound at the same batch per chip b = B/N:
#     b = C (N-1) / (2 N M W1) + C H alpha / (2 D F)
# and, as the book writes it (leading term, no latency, W = 2 W1): b = C / (M W).
@settings(max_examples=examples(15), deadline=None)
@given(sizes=st.lists(st.integers(2, 16), min_size=1, max_size=3),
       k=st.integers(1, 2**10), f=st.integers(1, 2**16), latency=st.booleans())
def test_fsdp_over_m_axes_matches_the_hand_derivation(sizes: list[int], k: int, f: int,
                                                      latency: bool) -> None:
    m = torus(sizes)
    d = k * sp.prod(sizes)  # D splits over the N chips
    axes = NAMES[:len(sizes)]
    choices = EXACT if latency else EXACT.with_(latency="off")
    step = mlp_step(m, fsdp=axes, d_model=d, d_ff=f, choices=choices)
    n, big_m = sp.prod(sizes), len(sizes)
    hops = sum(s // 2 for s in sizes)
    want = C * (n - 1) / (2 * n * big_m * W1) + \
        (C * hops * ALPHA_HOP / (2 * d * f) if latency else 0)
    crit = step.critical_batch()
    assert crit.per_chip == want
    assert {p for p, _, _ in crit.binding} == {"forward", "backward"}
    book = mlp_step(m, fsdp=axes, d_model=d, d_ff=f, choices=BOOK).critical_batch()
    assert book.per_chip == C / (big_m * 2 * W1)


def test_fsdp_on_a_2d_torus_is_compute_bound_above_c_over_twice_w() -> None:
    # the book's B/N > C/(W_ici M) with W_ici the bidirectional 2 x 9e10 and M = 2: 1275
    step = mlp_step(mesh("X=16,Y=16", V5P), fsdp="XY", choices=BOOK)
    assert step.critical_batch().per_chip == sp.Rational(459 * 10**12, 2 * 2 * 9 * 10**10)
    # one axis of 256 spanning both rings of a v5e pod is the same two axes: M = 2, exact too
    one, two = mesh("X=256", "tpu-v5e"), mesh("X=16,Y=16", "tpu-v5e")
    assert mlp_step(one, fsdp="X", choices=BOOK).critical_batch().per_chip == \
        chip("tpu-v5e").peak("bf16") / (2 * 2 * one.axis("X").parts[0].bandwidth)
    assert mlp_step(one, fsdp="X").critical_batch().per_chip == \
        mlp_step(two, fsdp="XY").critical_batch().per_chip
    fwd = step.phase("forward")
    # two gathers of the 2DF-byte weights at V / (2 W_ici) each
    assert fwd.terms["fsdp"] == 2 * (2 * sp.Symbol("D", positive=True)) * \
        sp.Symbol("F", positive=True) / (2 * 2 * W1)


# By hand, FSDP over X = prod of M_X rings x TP over Y = prod of M_Y rings, N = XY, in the
# book's form (V / (M W) per gather or scatter, W = 2 W1, alpha = C / W). Forward: gather
# In (2BD/X bytes) and scatter Out over Y; gather W_in and W_out (2DF/Y bytes each) over X:
#     4 B D F / (N C) = 4 D F / (Y M_X W) + 4 B D / (X M_Y W)
# so b = B/N = alpha F M_Y / (M_X Y (F M_Y - alpha Y)), existing while Y < F M_Y / alpha.
# The backward pass (8BDF/(NC) against 8DF/(Y M_X W) + 6BD/(X M_Y W)) gives a smaller b,
# so the forward pass decides. Minimised over Y: Y* = F M_Y / (2 alpha) and the book's
# b* = 4 alpha^2 / (F M_X M_Y).
def forward_by_hand(f: sp.Expr, y: sp.Expr, mx: int, my: int) -> sp.Expr:
    alpha = C / (2 * W1)
    return alpha * f * my / (mx * y * (f * my - alpha * y))


@settings(max_examples=examples(15), deadline=None)
@given(fs=st.lists(st.sampled_from([2, 4, 8, 16]), min_size=1, max_size=2),
       ts=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=1),
       k=st.integers(2**7, 2**15))
def test_fsdp_times_tp_matches_the_hand_derivation(fs: list[int], ts: list[int],
                                                   k: int) -> None:
    f = 8 * k  # F splits over the TP ring
    m = torus([*fs, *ts])
    fsdp, tp = NAMES[:len(fs)], NAMES[len(fs):len(fs) + len(ts)]
    step = mlp_step(m, fsdp=fsdp, tp=tp, d_ff=f, choices=BOOK)
    y = sp.prod(ts)
    alpha = C / (2 * W1)
    if f * len(ts) <= alpha * y:  # tensor parallelism too wide: comm-bound at any batch
        with pytest.raises(DerivationError, match="forward pass"):
            step.critical_batch()
        return
    crit = step.critical_batch()
    want = forward_by_hand(sp.Integer(f), y, len(fs), len(ts))
    assert crit.per_chip == want
    assert want >= 4 * alpha**2 / (f * len(fs) * len(ts))  # never below the optimum


def test_the_mixed_optimum_is_the_book_s() -> None:
    # F and the TP ring size Y as symbols; FSDP over two axes (M_X = 2), TP over one
    m = mesh("X=16,Y=16,Z=Y:wraps", V5P).with_axis("X", wraps=True).with_axis("Y",
                                                                              wraps=True)
    step = mlp_step(m, fsdp="XY", tp="Z", choices=BOOK)
    y = m.axis("Z").size
    forward = next(v for p, _, v in step.critical_batch().binding if p == "forward")
    f = next(s for s in forward.free_symbols if s.name == "F")
    per_chip = sp.cancel(forward / step.chips)
    assert sp.cancel(per_chip - forward_by_hand(f, y, 2, 1)) == 0
    alpha = C / (2 * W1)
    (best,) = [r for r in sp.solve(sp.diff(per_chip, y), y) if r != 0]
    assert sp.simplify(best - f / (2 * alpha)) == 0
    assert sp.simplify(per_chip.subs(y, best) - 2 * alpha**2 / f) == 0
    assert alpha == 2550  # the book's C / W_ici for v5p, so b* = 2 x 2550^2 / F


def test_the_collectives_are_the_book_s_algorithm() -> None:
    step = mlp_step(mesh("X=4,Y=4,Z=4", V5P), fsdp="XY", tp="Z")
    assert step.layout == "In[B_XY, D_Z] W_in[D_XY, F_Z] W_out[F_Z, D_XY]"
    assert [u.title.split(" bf16")[0] for u in step.phase("forward").uses] == [
        "tp: AllGather_Z In", "fsdp: AllGather_XY W_in", "fsdp: AllGather_XY W_out",
        "tp: ReduceScatter_Z Out"]
    assert [u.title.split(" bf16")[0] for u in step.phase("backward").uses] == [
        "tp: AllGather_Z dOut", "fsdp: ReduceScatter_XY dW_out", "fsdp: AllGather_XY W_out^T",
        "tp: AllGather_Z In", "fsdp: ReduceScatter_XY dW_in^T", "fsdp: AllGather_XY W_in^T",
        "tp: ReduceScatter_Z dIn"]
    b, d, f = (step.sizes[k] for k in "BDF")
    assert step.phase("forward").flops == 4 * b * d * f / 64
    assert step.phase("backward").flops == 8 * b * d * f / 64


def test_pure_tp_has_no_critical_batch_and_bad_layouts_are_refused() -> None:
    with pytest.raises(DerivationError, match="not proven"):
        mlp_step(mesh("Y=8", V5P), tp="Y", choices=BOOK).critical_batch()
    with pytest.raises(InputError, match="axis X is given to both fsdp and tp"):
        mlp_step(mesh("X=4", V5P), fsdp="X", tp="X")
    with pytest.raises(InputError, match="give the FSDP axes"):
        mlp_step(mesh("X=4", V5P))
    with pytest.raises(InputError, match="does not divide into 4 shards"):
        mlp_step(mesh("X=4", V5P), fsdp="X", d_model=6)


def test_derive_mlp_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from symroof.cli.main import main
    args = ["derive", "--mesh", "X=16,Y=16,Z=16", "--chip", "tpu-v5p", "--mlp",
            "fsdp=XY,tp=Z", "--choices", "book", "--between", "math,ici", "--solve", "B",
            "--subs", "D=8192,F=65536", "--json"]
    assert main(args) == 0
    import json
    got = json.loads(capsys.readouterr().out)["threshold"]
    want = 16**3 * forward_by_hand(sp.Integer(65536), 16, 2, 1)
    assert sp.Rational(got["exact"]) == want
    assert main([*args[:-1], "--phase", "sideways"]) == 2
    assert "--phase: unknown phase 'sideways'" in capsys.readouterr().err
    assert main(["derive", "--mesh", "X=4", "--mlp", "fsdp=X,dp=Y"]) == 2
    assert "--mlp: expected fsdp=AXES and/or tp=AXES" in capsys.readouterr().err
    assert main(["derive", "--flops", "B", "--bytes", "B", "--choices", "book"]) == 2
    assert "--choices needs --mesh" in capsys.readouterr().err
