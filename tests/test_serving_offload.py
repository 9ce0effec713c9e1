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


def test_an_offloaded_pipeline_streams_each_stages_share_over_its_own_link() -> None:
    # each stage's device streams its own weights (the first with the embedding, a middle
    # one its layers alone, the last with the norm and the head) over its own PCIe link while
    # it runs its layers: a stage's time is the larger of the two, the latency their periods
    # summed, the rate the slowest stage's; the requests follow the stages; the plan says so
    from symroof.plans.serving import device_memory
    from symroof.plans.strategy import parse_strategy
    m = mesh("X=4,Y=2", "h100-sxm")
    s = serve(CFG, m, parse_strategy("pp=X,tp=Y"), batch=16, context=2048)
    o = offload_serving(s, ("weights",), m.chip, layers=CFG.layers)
    pcie = m.chip.bandwidth("pcie")
    for old, new in ((s.decode, o.decode), (s.prefill, o.prefill)):
        assert [(x.name, x.count) for x in new.stages] == [("first", 1), ("middle", 2),
                                                           ("last", 1)]
        held = {x.name: device_memory(CFG, 2, 4, 1, batch=sp.Integer(16),
                                      context=sp.Integer(2048), dtype="bf16",
                                      kv_dtype="bf16", stage=x.name)["weights"]
                for x in old.stages}
        for before, after in zip(old.stages, new.stages, strict=True):
            assert after.time == sp.Max(before.time, held[before.name] / pcie)
            assert after.send == before.send
        assert new.latency == sum(x.count * x.period for x in new.stages)
        assert new.throughput == new.tokens / max(x.period for x in new.stages)
        assert new.terms[IN] == sum(x.count * held[x.name] / pcie for x in new.stages)
        assert OUT not in new.terms
    # weights stream at 64 GB/s: every stage waits for its link, so the decode step is the
    # model's weights over one link, plus the sends (the whole path's model had one stage's)
    sends = sum(x.count * x.send for x in o.decode.stages)
    assert o.decode.latency == o.decode.terms[IN] + sends
    assert o.decode.latency > s.decode.latency
    assert o.requests is not None and o.requests["time_per_output_token"] == o.decode.latency
    assert any(a.startswith("with a pipeline, each stage's device moves its own stage's share")
               for a in o.assumptions)
    # the slowest decode stage is now a head stage's link, and the plan names it
    assert (s.decode.slowest, o.decode.slowest) == ("last", "first")
    assert any(a.endswith("prefill the last stage's, decode the first stage's)")
               for a in o.assumptions)
    # the KV cache: every stage holds its layers' share; a decode step reads it in and writes
    # the new positions out, a prefill writes it out
    kv = offload_serving(s, ("kv",), m.chip, layers=CFG.layers)
    cache = s.memory["kv_cache"]
    for old, new, into, out in ((s.decode, kv.decode, cache, cache / 2048),
                                (s.prefill, kv.prefill, 0, cache)):
        for before, after in zip(old.stages, new.stages, strict=True):
            assert after.time == sp.Max(before.time, *(b / pcie for b in (into, out) if b))
