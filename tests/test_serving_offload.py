"""Offloading a serving plan's weights or KV cache to host memory: the host link's bytes per
step, the step's bounds with them, HBM keeping one layer's share."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.models import model
from symroof.models.counts import kv_bytes_per_token
from symroof.parallel.mesh import mesh
from symroof.plans.offload import HOST, IN, OUT
from symroof.plans.serving import serve
from symroof.plans.serving_offload import offload_serving
from tests.conftest import examples, run_cli

CFG = model("llama-2-7b")
PCIE = 64 * 10**9  # h100-sxm's PCIe Gen5, one way (NV-H100)


@settings(max_examples=examples(5), deadline=None)
@given(batch=st.integers(1, 64), context=st.integers(16, 8192))
def test_the_host_link_carries_the_offloaded_bytes(batch: int, context: int) -> None:
    m = mesh("X=1", "h100-sxm")
    s = serve(CFG, m, batch=batch, context=context)
    o = offload_serving(s, ("weights", "kv"), m.chip, layers=CFG.layers)
    w, kv = s.memory["weights"], s.memory["kv_cache"]
    assert kv == batch * context * kv_bytes_per_token(CFG)
    assert o.decode.terms[IN] == (w + kv) / PCIE
    assert o.decode.terms[OUT] == batch * kv_bytes_per_token(CFG) / PCIE  # the new positions
    assert o.prefill.terms[IN] == w / PCIE and o.prefill.terms[OUT] == kv / PCIE
    for old, new in ((s.decode, o.decode), (s.prefill, o.prefill)):
        assert new.t_lower == sp.Max(old.t_lower, new.terms[IN], new.terms[OUT])
        assert new.t_upper == old.t_upper + new.terms[IN] + new.terms[OUT]
    assert o.memory["weights"] == w / 32 and o.memory["kv_cache"] == kv / 32
    assert o.memory[HOST] == w + kv
    assert o.requests is not None
    assert o.requests["time_per_output_token"] == o.decode.latency


def test_a_pipeline_stage_keeps_one_of_its_own_layers() -> None:
    m = mesh("X=2", "h100-sxm")
    s = serve(CFG, m, None, batch=8, context=1024)
    from symroof.plans.strategy import parse_strategy
    staged = serve(CFG, m, parse_strategy("pp=X"), batch=8, context=1024)
    o = offload_serving(staged, ("weights",), m.chip, layers=CFG.layers)
    assert o.memory["weights"] == staged.memory["weights"] / 16  # 32 layers over 2 stages
    assert offload_serving(s, (), m.chip, layers=CFG.layers) is s


def test_the_plan_offloads_for_serving() -> None:
    r = run_cli("plan", "llama-2-7b", "--serve", "--mesh", "X=1", "--chip", "h100-sxm",
                "--batch", "8", "--context", "2048", "--offload", "weights,kv")
    assert r.returncode == 0, r.stderr
    assert "bound host link in (pcie)" in r.stdout
    assert "KV cache offloaded: a decode step reads the whole cache in" in r.stdout


def test_an_offloaded_pipeline_stays_a_whole_path_and_says_so() -> None:
    # the host link's time is the path's: the offloaded steps keep no stages, pass pp
    # batches per latency, and the requests per second follow them; the plan says so
    from symroof.plans.strategy import parse_strategy
    m = mesh("X=2,Y=4", "h100-sxm")
    s = serve(CFG, m, parse_strategy("pp=X,tp=Y"), batch=16, context=2048)
    assert s.decode.pipeline == 2 and s.decode.slowest == "last"
    o = offload_serving(s, ("weights",), m.chip, layers=CFG.layers)
    assert o.decode.stages == () and o.decode.pipeline == 1
    assert o.decode.throughput == 2 * o.decode.tokens / o.decode.latency
    assert o.requests is not None
    assert o.requests["requests_per_s"] == 2 * 16 / o.requests["request_latency"]
    assert any(a.startswith("with offloading, a pipeline's steps are timed as a whole path")
               for a in o.assumptions)
