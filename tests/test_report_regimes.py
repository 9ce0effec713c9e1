"""Figures and notebook views of the multi-chip vocabulary: a collective's latency and
bandwidth regimes, meshes, sharded arrays and collectives as tables."""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.parallel.collectives import collective
from symroof.parallel.mesh import mesh
from symroof.parallel.sharding import sharded
from symroof.render.plots import have_matplotlib, pgfplots, svg
from symroof.render.regimes import collective_figure

MESH = mesh("X=16", "tpu-v5e")
AG = collective("allgather", "V", "X", MESH)


def test_the_regimes_meet_where_the_collective_turns_bandwidth_bound() -> None:
    fig = collective_figure(AG)
    cross = AG.latency_bound_below
    assert cross is not None and fig.marks == ((float(cross), "latency = bandwidth"),)
    band, lat, total = fig.series
    assert (band.label, lat.label, total.label) == ("bandwidth term", "latency term", "time")
    for b, t, s in zip(band.ys, lat.ys, total.ys, strict=True):
        assert s == pytest.approx(b + t)
    below = [b < t for x, b, t in zip(band.xs, band.ys, lat.ys, strict=True) if x < cross]
    above = [b > t for x, b, t in zip(band.xs, band.ys, lat.ys, strict=True) if x > cross]
    assert below and above and all(below) and all(above)
    assert fig.xlabel == "V (bytes)" and fig.ylabel == "time (s)"


def test_the_figure_renders_in_both_outputs() -> None:
    fig = collective_figure(AG)
    tex = pgfplots(fig, fig.xlabel, fig.ylabel, "caption")
    assert r"\addlegendentry{latency term}" in tex and "dashdotted" in tex
    if have_matplotlib():
        assert "latency term" in svg(fig, fig.xlabel, fig.ylabel)


def test_a_figure_needs_one_size_symbol() -> None:
    from symroof.core.errors import InputError
    with pytest.raises(InputError, match="needs its size in one symbol"):
        collective_figure(collective("allgather", 1000, "X", MESH))


def test_collective_mesh_and_array_show_themselves() -> None:
    md = AG._repr_markdown_()
    assert md.startswith("**AllGather_X V bytes on tpu-v5e**") or "AllGather" in md
    assert f"| latency-bound below, bytes | ${sp.latex(AG.latency_bound_below)}$ |" in md
    assert "| `X` | $16$ |" in MESH._repr_markdown_()
    arr = sharded("bf16[B_X, D]", MESH)
    assert "| replication | $1$ |" in arr._repr_markdown_()
    assert repr(AG).startswith("<Collective: ") and len(repr(MESH)) < 200


def _step() -> object:
    from symroof import chip
    from symroof.models import model
    from symroof.models.step_roofline import layer_ops, step_roofline
    return step_roofline(layer_ops(model("llama-2-7b"), "decode", batch=8, context=1024),
                         chip("a100-80gb"))


def test_a_steps_figure_puts_every_op_under_the_roof() -> None:
    from symroof.render.regimes import step_figure
    srl = _step()
    fig = step_figure(srl)  # type: ignore[arg-type]
    roof, ops, whole = fig.series[0], fig.series[1:-1], fig.series[-1]
    peak = roof.ys[-1]
    assert all(s.points and 0 < s.ys[0] <= peak for s in (*ops, whole))
    rows = [r for r in srl.rows if r.roofline.intensity > 0]  # type: ignore[attr-defined]
    assert [s.label for s in ops] == [r.op.name for r in rows]
    assert [s.xs[0] for s in ops] == pytest.approx([float(r.roofline.intensity) for r in rows])
    assert whole.xs[0] == pytest.approx(float(srl.intensity))  # type: ignore[attr-defined]
    assert fig.marks[0][0] == pytest.approx(roof.xs[1])  # the ridge is the roof's corner


def test_model_and_step_show_themselves() -> None:
    from symroof.models import model
    assert "| layers | $32$ |" in model("llama-2-7b")._repr_markdown_()
    srl = _step()
    md = srl._repr_markdown_()  # type: ignore[attr-defined]
    assert md.count("\n| ") == 1 + len(srl.rows) + 1  # type: ignore[attr-defined]
    assert "| step | all, times their counts |" in md


def test_a_batch_figure_draws_each_strategys_derived_times() -> None:
    from symroof.models import model
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    from symroof.render.regimes import batch_figure
    m = mesh("X=16", "tpu-v5e")
    plans = [train(model("llama-2-7b"), m, parse_strategy(s), batch=b, context=1024)
             for s in ("fsdp=X", "tp=X") for b in (64, 16, 256)]
    fig = batch_figure(plans)
    lower = {s.label: s for s in fig.series if not s.label.endswith("(upper)")}
    assert set(lower) == {"fsdp=X", "tp=X"}
    for p in plans:  # every point is the plan's own T_lower, batches in order
        s = lower[p.strategy]
        assert s.xs == (16.0, 64.0, 256.0)
        assert s.ys[s.xs.index(float(p.batch))] == pytest.approx(float(p.t_lower))
    upper = [s for s in fig.series if s.label.endswith("(upper)")]
    assert all(u >= lo for s, t in zip(lower.values(), upper, strict=True)
               for lo, u in zip(s.ys, t.ys, strict=True))
    view = plans[0]._repr_markdown_()
    assert "| T\\_lower, s |" in view and "| bound |" in view
