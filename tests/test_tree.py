"""Tree AllReduce (NCCL's double binary tree): 2V through the busiest port, 2 floor(log2 n)
steps; laws against the ring; refused where a tree cannot run."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip
from symroof.core.errors import InputError
from symroof.parallel.collectives import collective
from symroof.parallel.mesh import mesh
from tests.conftest import examples

V = sp.Symbol("V", positive=True)


def depth(n: int) -> int:
    """floor(log2 n), by halving."""
    d = 0
    while n > 1:
        n //= 2
        d += 1
    return d


@settings(max_examples=examples(12), deadline=None)
@given(n=st.integers(2, 1024), latency_us=st.integers(1, 10))
def test_tree_against_the_ring(n: int, latency_us: int) -> None:
    # each of two trees carries V/2: an interior device receives 2 x V/2 and sends V/2 up,
    # receives V/2 and sends 2 x V/2 down, and as a leaf of the other tree sends V/2 up and
    # receives V/2: 2V; up and down the depth floor(log2 n) of a binary tree of n devices
    c = chip("h100-sxm").with_figures({"ib.latency": f"{latency_us} us"})
    m = mesh(f"X={n}@ib", c)
    tree = collective("allreduce", V, "X", m, algorithm="tree")
    ring = collective("allreduce", V, "X", m)
    W, alpha = m.axis("X").bandwidth, sp.Rational(latency_us, 10**6)
    assert tree.bytes_per_device == 2 * V
    assert tree.bandwidth_time == 2 * V / W
    assert tree.hops == 2 * depth(n)
    assert tree.latency_time == 2 * depth(n) * alpha
    # the ring moves 2 (n-1)/n V: the tree's bandwidth term exceeds it by exactly 2V/(n W)
    assert sp.expand(tree.bandwidth_time - ring.bandwidth_time) == 2 * V / (n * W)
    # in 2 (n-1) steps: as many at n = 2, more from n = 3
    assert ring.hops - tree.hops == 2 * (n - 1) - 2 * depth(n)
    assert (tree.hops < ring.hops) == (n > 2)


def test_the_tree_wins_below_a_size_on_many_devices() -> None:
    # 2 (n - 1 - log2 n) alpha of latency saved against 2V/(nW) of bandwidth lost:
    # the tree is faster below V = n W (n - 1 - log2 n) alpha
    c = chip("h100-sxm").with_figures({"ib.latency": "5 us"})
    m = mesh("X=256@ib", c)
    tree = collective("allreduce", V, "X", m, algorithm="tree")
    ring = collective("allreduce", V, "X", m)
    W, alpha = m.axis("X").bandwidth, sp.Rational(5, 10**6)
    crossing = sp.solve(sp.Eq(tree.time, ring.time), V)
    assert crossing == [256 * W * (255 - 8) * alpha]


@pytest.mark.parametrize(("kind", "spec", "name", "message"), [
    ("allreduce", "X=8", "tpu-v5e", "a tree's edges join any two devices: it needs a switch "
     "or a scale-out axis; axis X is a torus over ici"),
    ("allreduce", "X=64", "h100-sxm", "tree runs on one switched network; axes X cross 2 "
     "networks \\(ib, nvlink\\)"),
    ("allgather", "X=8", "h100-sxm", "tree reduces up a tree: it runs an AllReduce only, not "
     "allgather"),
])
def test_where_a_tree_cannot_run(kind: str, spec: str, name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        collective(kind, V, "X", mesh(spec, name), algorithm="tree")
