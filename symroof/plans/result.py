"""The result of a plan, as the command line asks for it, and its JSON: the plan (training
or serving), the search, an MFU, costs and the fewest chips for a latency target. JSON gives
every exact value as a string and its float under the same name with ``_value``.

>>> Result(mode="train").to_json()  # nothing planned yet
{}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cost import Cost
    from .device_step import DeviceStep
    from .mfu import Mfu
    from .search import Search
    from .serving import Serving
    from .training import Plan


@dataclass(frozen=True)
class Result:
    """What a request produced."""

    mode: str
    train: Plan | None = None
    serve: Serving | None = None
    search: Search | None = None
    mfu: Mfu | None = None
    fewest: tuple[int | None, str] | None = None
    laws: tuple[Any, ...] = ()
    relaxed: Any = None
    cost: tuple[Cost, ...] = ()
    given: Plan | None = None
    speculative: Any = None  # plans.speculative_plan.SpeculativeStep
    bound: Serving | None = None  # the serving plan at peak, beside a forecast
    queue: Any = None  # plans.queueing.Queue: requests arriving at a rate

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.laws:
            out["laws"] = [_law_json(x) for x in self.laws]
        if self.train is not None:
            out = _plan_json(self.train)
        if self.serve is not None:
            out = _serving_json(self.serve)
        if self.search is not None:
            s = self.search
            out["search"] = {
                "chips": s.chips, "searched": s.searched, "feasible": s.feasible,
                "explanation": s.explain(), "assumptions": list(s.assumptions),
                "overlap": s.overlap,
                "ranking": [{"mesh": c.spec, "strategy": c.strategy,
                             "microbatches": c.microbatches, "chunks": c.chunks,
                             "choices": {"recompute": c.recompute},
                             "t_lower": c.t_lower,
                             "predicted": c.predicted, "memory": c.memory, "bound": c.bound}
                            for c in s.ranking]}
            if self.given is not None:
                out["search"]["given"] = _given_json(self.given, s.plan)
        if self.relaxed is not None:
            x = self.relaxed
            out["relaxed"] = {**_exact("objective", x.objective), **_exact("tp", x.tp),
                              **_exact("zero", x.zero),
                              "nearest": [{"zero": z, "tp": t} for z, t in x.nearest()]}
        if self.mfu is not None:
            u = self.mfu
            out["mfu"] = {**_exact("value", u.value), **_exact("flops_per_token",
                                                               u.flops_per_token),
                          "definition": u.definition}
            if u.rerun_flops_per_token != 0:  # HFU beside it, the rerun counted
                out["mfu"] |= {**_exact("hfu", u.hfu), "recompute": u.recompute,
                               **_exact("rerun_flops_per_token", u.rerun_flops_per_token)}
        if self.cost:
            out["cost"] = [_cost_json(c) for c in self.cost]
        if self.fewest is not None:
            out["fewest_chips"] = {"chips": self.fewest[0], "note": self.fewest[1]}
        if self.speculative is not None:
            out["speculative"] = self.speculative.to_json()
        if self.queue is not None:
            out["queue"] = self.queue.to_json()
        if self.bound is not None and self.serve is not None:
            out["bound_and_forecast"] = [
                {"what": what, **_exact("bound", b), **_exact("forecast", f)}
                for what, b, f in bound_and_forecast(self.bound, self.serve)]
        return out


def bound_and_forecast(bound: Serving, forecast: Serving) -> list[tuple[str, Any, Any]]:
    """(what, at peak, under the efficiency) for a request's figures."""
    out = [("prefill step", bound.prefill_time, forecast.prefill_time),
           ("decode step", bound.decode.latency, forecast.decode.latency)]
    if bound.requests is not None and forecast.requests is not None:
        out += [(k.replace("_", " "), bound.requests[k], forecast.requests[k])
                for k in ("time_to_first_token", "time_per_output_token",
                          "request_latency", "requests_per_s")]
    return out


def _given_json(given: Plan, chosen: Plan) -> dict[str, Any]:
    """The plan set beside a search and how the search's choice compares with it."""
    return {"mesh": given.mesh, "strategy": given.strategy,
            "microbatches": int(given.extra["microbatches"]),  # type: ignore[call-overload]
            "chunks": int(given.extra.get("chunks", 1)),  # type: ignore[call-overload]
            "choices": {"recompute": given.extra["recompute"]}, "fits": given.fits,
            **_exact("t_lower", given.t_lower), **_exact("t_upper", given.t_upper),
            **_exact("predicted", _ranked(given)),
            **_exact("memory", given.memory["total"]),
            **_exact("chosen_over_given", _ranked(chosen) / _ranked(given))}


def _ranked(p: Plan) -> Any:
    """The time a search ranks plans by: the predicted time (T_lower under ``phase``)."""
    return p.predicted if p.predicted is not None else p.t_lower


def _cost_json(c: Cost) -> dict[str, Any]:
    return {"what": c.what, "price": c.price.stated, **_exact("price_per_chip_hour",
                                                               c.price.amount),
            "currency": c.price.currency, "chips": int(c.chips), **_exact("seconds", c.seconds),
            **_exact("tokens", c.tokens), **_exact("per_step", c.per_step),
            **_exact("per_token", c.per_token),
            **_exact("per_million_tokens", c.per_million_tokens),
            **_exact("per_step_at_t_upper", c.per_step_upper)}


def _law_json(law: Any) -> dict[str, Any]:
    if isinstance(law, tuple):
        return {"chip": law[0], "note": law[1]}
    return {"chip": law.chip, "kind": law.kind, "axis": law.axis, "term": law.term,
            **_exact("expression", law.expression), **_exact("value", law.value),
            **_exact("limit", law.limit), **_exact("peak", law.peak),
            **_exact("bandwidth", law.bandwidth), **_exact("book", law.book),
            **_exact("book_on_chip", law.book_value), "unit": "tokens per chip"}


def _exact(name: str, value: Any) -> dict[str, Any]:
    from ..core.vocabulary import exact
    return exact(name, value)


def _common(p: Plan | Serving) -> dict[str, Any]:
    from ..core.vocabulary import exact_map
    return {"model": p.model, "chip": p.chip, "mesh": p.mesh, "strategy": p.strategy,
            "devices": int(p.devices), "batch": int(p.batch), "context": int(p.context),
            **exact_map("memory", p.memory),
            **_exact("capacity", p.capacity), "fits": p.fits,
            "assumptions": list(p.assumptions)}


def _plan_json(p: Plan) -> dict[str, Any]:
    import sympy as sp

    from ..core.vocabulary import critical_json, exact, exact_map, step_json
    from .training import bound_by_phase
    uses = [{"kind": name.split(" over ")[0], "collective": u.collective, "array": u.what,
             "block": u.block, "phase": u.phase, "scope": u.scope,
             "per_layer": str(u.per_layer), "per_step": str(u.per_step),
             **exact("bytes", size), **exact("time", time)}
            for u, name, time, size in p.uses]
    crit = p.critical_batch
    whole = int(sp.floor(crit)) + 1 if crit is not None and crit.is_number else None
    step = step_json(p.extra.get("flops"), p.extra.get("bytes"),
                     {k: t.time for k, t in p.terms.items()}, p.t_lower, p.t_upper, p.bound)
    return {"mode": "train", **_common(p), **step, "train": step,
            "phases": {k: exact_map("v", t.phases)["v"] for k, t in p.terms.items()},
            "bound_by_phase": bound_by_phase(p.terms),
            "critical_batch": critical_json(
                None if crit is None else f"tokens per chip > {crit}", crit, whole,
                "tokens per chip", p.critical_note),
            "microbatches": exact("microbatches", p.extra.get("microbatches"))["microbatches"],
            **exact("mfu_predicted", p.extra.get("mfu")), "collectives": uses,
            **exact("predicted", p.predicted), "overlap": p.overlap,
            **_stages_json(p.extra.get("memory_stage"), p.extra.get("memory_stages"))}


def _stages_json(stage: Any, stages: Any) -> dict[str, Any]:
    """With a pipeline, the stage a plan's memory is on and each end stage's account
    (``memory_stage``, ``memory_stages``: the same keys for training and serving)."""
    from ..core.vocabulary import exact_map
    return {"memory_stage": stage, "memory_stages": {
        k: v for s, x in stages.items() for k, v in exact_map(s, x).items()}} if stages else {}


def _phase_json(ph: DeviceStep) -> dict[str, Any]:
    from ..core.vocabulary import step_json
    return {**step_json(ph.flops, ph.bytes, ph.terms, ph.lower, ph.t_upper, ph.bound),
            **_exact("latency", ph.latency), **_exact("throughput", ph.throughput),
            "overlap": ph.overlap, **_pipeline_json(ph),
            "collectives": [{"after": c.after, "kind": c.kind, "collective": c.collective,
                             "algorithm": c.algorithm,
                             **_exact("bytes", c.nbytes), **_exact("per_step", c.calls),
                             **_exact("time", c.time)} for c in ph.comms]}


def _pipeline_json(ph: DeviceStep) -> dict[str, Any]:
    """With a pipeline, each stage of a step (its count, time under the step's rule, send
    and period) and the slowest one, whose period bounds the throughput."""
    if not ph.stages:
        return {}
    return {"slowest_stage": ph.slowest or None, "stages": {
        st.name: {"count": st.count, **_exact("time", st.time), **_exact("send", st.send),
                  **_exact("period", st.period)} for st in ph.stages}}


def _serving_json(s: Serving) -> dict[str, Any]:
    from ..core.vocabulary import critical_json, exact_map
    c = s.critical
    return {"mode": "serve", **_common(s), "dtype": s.dtype, "kv_dtype": s.kv_dtype,
            "critical_batch": critical_json(c.relation, c.value, c.integer,
                                            "sequences in the decode batch", c.reason),
            **_exact("throughput_per_chip", s.decode.throughput / s.devices),
            **_exact("prefill_decode_balance", s.balance), "generate": s.generate,
            "prefill": _phase_json(s.prefill), "decode": _phase_json(s.decode),
            **exact_map("requests", s.requests or {}),
            **({} if s.chunked is None else {"chunked_prefill": _chunked_json(s)}),
            **_stages_json(s.memory_stage, s.memory_stages),
            "grid": [{"batch": b, "context": t, **_exact("latency", lat),
                      **_exact("throughput_per_chip", rate), "fits": ok}
                     for b, t, lat, rate, ok in s.grid]}


def _chunked_json(s: Serving) -> dict[str, Any]:
    c = s.chunked
    assert c is not None
    staged = bool(c.steps[0].stages)  # on a pipeline: how the chunks flow, and when each
    return {"chunk": c.chunk, "decode_tokens_per_step": c.riders,  # leaves the last stage
            **_exact("time_apart", c.apart), **_exact("time", c.time),
            **_exact("time_upper", c.time_upper),
            **({"flow": "pipelined" if c.flows else "serial",
                **_exact("time_serial", c.serial)} if staged else {}),
            **_exact("flops", c.flops), **_exact("bytes", c.bytes),
            "chunks": [{"tokens": n, "cached": p, **_exact("flops", st.flops),
                        **_exact("bytes", st.bytes), **_exact("latency", st.latency),
                        **(_exact("left", c.left[i]) if staged else {}),
                        "bound": st.bound} for i, n, p, st in c.rows()]}
