"""Plans as text, Markdown and JSON: everything shown was derived before it gets here.

>>> rows = [("a", "1"), ("bb", "22")]
>>> table(["k", "v"], rows, "text")
['k   v', 'a   1', 'bb  22']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sympy as sp

from ..core import tables as tb
from ..core.printer import approx, si, text
from ..plans.strategy import parse_strategy
from ..plans.training import PHASES, Plan, bound_by_phase

if TYPE_CHECKING:  # a view imports no plan's module it only names (serving's for a search)
    from ..plans.cost import Cost
    from ..plans.device_step import DeviceStep
    from ..plans.mfu import Mfu
    from ..plans.result import Result
    from ..plans.search import Search
    from ..plans.serving import Serving
    from ..plans.serving_search import ServingPlan, ServingSearch
    from ..plans.train_step import Term


def table(head: Sequence[str], rows: Sequence[Sequence[str]], fmt: str) -> list[str]:
    """A table from the one table writer: aligned columns for text, a GitHub table for
    Markdown."""
    t = tb.Table(tuple(tb.Column(h) for h in head),
                 tuple(tuple(tb.cell(tb.text(str(c))) for c in r) for r in rows))
    return t.render("md" if fmt == "md" else "text", max_width=10_000).splitlines()


def seconds(value: sp.Expr) -> str:
    return si(value, "s")


def gigabytes(value: sp.Expr) -> str:
    return si(value, "B")


def exact(value: Any) -> str:
    """``1044774725/9001272 ≈ 116.07``: exact, and its value when it is not an integer."""
    expr = sp.sympify(value)
    if expr.is_number and not expr.is_Integer:
        return f"{text(expr)} ≈ {approx(expr)}"
    return text(expr)


def lines(result: Result, fmt: str = "text", chip_note: str = "") -> list[str]:
    """The whole result in ``fmt`` (``text`` or ``md``); ``chip_note`` follows the chip's
    name in the title (the command line says there that no --chip chose it)."""
    out: list[str] = []
    if result.laws:
        out += _laws(result.laws, fmt)
    if result.search is not None:
        out += [*_search(result.search, fmt), ""]
        if result.given is not None:
            out += [*_given(result.given, result.search.plan, fmt), ""]
    if result.relaxed is not None:
        x = result.relaxed
        near = ", ".join(f"fsdp {z} x tp {t}" for z, t in x.nearest())
        out += [_heading("continuous relaxation of fsdp x tp (communication only)", fmt),
                f"minimise {text(x.objective)} subject to d_zero d_tp = {x.chips}: "
                f"d_tp* = {exact(x.tp)}, d_zero* = {exact(x.zero)} (nearest splits: {near})",
                "it weighs only the time of the FSDP gathers against the tensor-parallel "
                "reductions; the search times whole steps (compute, memory, every "
                "collective, the mesh's links), so the plan it chooses may split otherwise",
                ""]
    if result.train is not None:
        out += _plan(result.train, fmt, chip_note)
    if result.serve is not None:
        out += _serving(result.serve, fmt, chip_note)
    if result.bound is not None and result.serve is not None:
        from ..plans.result import bound_and_forecast
        rows = [(what, seconds(b) if what != "requests per s" else approx(b),
                 seconds(f) if what != "requests per s" else approx(f))
                for what, b, f in bound_and_forecast(result.bound, result.serve)]
        out += ["", _heading("bound (every term at its peak) and forecast (under the "
                             "efficiency)", fmt),
                *table(["what", "bound", "forecast"], rows, fmt)]
    if result.queue is not None:
        out += ["", *_queue(result.queue, fmt)]
    if result.speculative is not None:
        out += ["", *_speculative(result.speculative, fmt)]
    if result.mfu is not None:
        out += ["", *_mfu(result.mfu, fmt)]
    if result.cost:
        out += ["", *_cost(result.cost, fmt)]
    if result.fewest is not None:
        n, why = result.fewest
        out += ["", _heading("fewest chips for the latency target", fmt),
                f"{tb.counted(n, 'chip')} ({why})" if n else why]
    return out


def _queue(q: Any, fmt: str) -> list[str]:
    """Requests arriving at a rate: utilisation, and the M/D/1 wait while below 1."""
    head = _heading(f"requests arriving at {approx(q.rate)} per second", fmt)
    rows = [("arrival rate", f"{approx(q.rate)} requests/s"),
            ("the mesh serves", f"{approx(q.capacity)} requests/s"),
            ("utilisation", approx(q.utilisation))]
    if not q.stable:
        return [head, *table(["what", "value"], rows, fmt),
                f"utilisation {approx(q.utilisation)} >= 1: the queue grows without bound; "
                f"the mesh serves at most {approx(q.capacity)} requests/s",
                *(f"- {a}" for a in q.assumptions())]
    rows += [("mean wait in the queue", seconds(q.wait)),
             ("time to first token, queued", seconds(q.time_to_first_token)),
             ("request latency, queued", seconds(q.request_latency))]
    return [head, *table(["what", "value"], rows, fmt), *(f"- {a}" for a in q.assumptions())]


def _speculative(s: Any, fmt: str) -> list[str]:
    rows = [("draft decode step", seconds(s.draft.latency)),
            ("verification step", f"{seconds(s.verify.latency)} ({s.gamma + 1} positions "
                                  "a sequence)"),
            ("iteration", f"{seconds(s.iteration)} ({s.gamma} draft steps, 1 verification)"),
            ("tokens per iteration", f"{approx(s.tokens)} a sequence"),
            ("time per output token", f"{seconds(s.time_per_output_token)} (decoding alone "
                                      f"{seconds(s.decode.latency)})"),
            ("tokens/s", f"{approx(s.tokens_per_s)} ({approx(s.tokens_per_s / s.devices)} "
                         "per chip)"),
            ("speedup", f"{approx(s.speedup)} on this mesh; Leviathan's ratio "
                        f"{approx(s.leviathan.speedup)} (c = {approx(s.leviathan.cost_ratio)}"
                        ", the verification taken as one decode step)")]
    return [_heading(f"speculative decoding: draft {s.draft_model}, gamma {s.gamma}, "
                     f"acceptance {approx(s.acceptance)}", fmt),
            *table(["what", "value"], rows, fmt)]


def _heading(title: str, fmt: str) -> str:
    return f"### {title}" if fmt == "md" else f"{title}:"


def _header(kind: str, p: Plan | Serving, fmt: str, chip_note: str) -> list[str]:
    title = (f"{p.model} {kind} on {p.chip}{chip_note}, mesh {p.mesh} ({p.devices} chips), "
             f"{p.strategy}")
    words = parse_strategy(p.strategy).title()
    return [f"## {title}" if fmt == "md" else title, f"{words}; batch {p.batch} x "
            f"{p.context} tokens", ""]


def _memory(p: Plan | Serving, fmt: str) -> list[str]:
    rows = [(k, text(v), gigabytes(v)) for k, v in p.memory.items()]
    verdict = "fits" if p.fits else "does NOT fit"
    extra = getattr(p, "extra", None) or {"memory_stage": getattr(p, "memory_stage", None),
                                          "memory_stages": getattr(p, "memory_stages", None)}
    stage = f", on the {extra['memory_stage']} pipeline stage (the larger account)" \
        if extra.get("memory_stages") else ""
    return [_heading(f"memory per device{stage}", fmt),
            *table(["part", "bytes", ""], rows, fmt),
            f"capacity {gigabytes(p.capacity)} per chip: {verdict}", ""]


def _terms(terms: dict[str, Term] | Any, fmt: str, phases: Sequence[str]) -> list[str]:
    rows = []
    for name, term in terms.items():
        rows.append((name, *(seconds(term.phases.get(ph, 0)) for ph in phases),
                     seconds(term.time)))
    head = ["term", *phases, "total"] if len(phases) > 1 else ["term", "time"]
    if len(phases) == 1:
        rows = [(r[0], r[-1]) for r in rows]
    return table(head, rows, fmt)


def _plan(p: Plan, fmt: str, chip_note: str = "") -> list[str]:
    out = _header("training", p, fmt, chip_note) + _memory(p, fmt)
    rows = []
    for u, name, time, size in p.uses:
        rows.append((name.split(" over ")[0], u.collective, u.what, u.block, u.phase,
                     text(u.per_layer) if u.scope == "layer" else "-", text(u.per_step),
                     gigabytes(size), seconds(time)))
    if rows:
        out += [_heading("collectives (per layer, and per step per device)", fmt),
                *table(["kind", "collective", "array", "block", "phase", "per layer",
                        "per step", "bytes each", "time per step"], rows, fmt), ""]
    out += [_heading("terms per step", fmt), *_terms(p.terms, fmt, PHASES), ""]
    out += [f"T_lower  {seconds(p.t_lower)}  (each term overlapping the compute of its phase)",
            f"T_upper  {seconds(p.t_upper)}  (nothing overlapping)",
            *([f"predicted  {seconds(p.predicted)}  (overlap {p.overlap}, at the efficiency "
               "stated)"] if p.predicted is not None else []),
            *([f"MFU      {approx(100 * sp.sympify(mfu))}% at T_lower (PaLM's definition)"]
              if (mfu := p.extra.get("mfu")) is not None else []),
            f"bound    {p.bound} (" + ", ".join(f"{ph}: {t}" for ph, t in
                                            bound_by_phase(p.terms).items()) + ")"]
    if p.critical_batch is not None:
        out.append(f"critical batch  {exact(p.critical_batch)} tokens per chip (now "
                   f"{exact(p.batch * p.context / p.devices)})")
    else:
        out.append(f"critical batch  none: {p.critical_note}")
    return [*out, "", _heading("assumptions", fmt), *(f"- {a}" for a in p.assumptions)]


def _phase(ph: DeviceStep, fmt: str) -> list[str]:
    rows = [(k, seconds(v)) for k, v in ph.terms.items()]
    longest = "each stage's longest term" if ph.stages else "the longest term"
    out = [_heading(f"{ph.name} step", fmt), *table(["term", "time"], rows, fmt),
           f"latency {seconds(ph.latency)} (" + (
               f"T_lower; T_upper {seconds(ph.t_upper)}" if ph.overlap == "op" else
               "T_upper: no overlap" if ph.overlap == "none" else
               f"overlap {ph.overlap}, {longest}; T_upper {seconds(ph.t_upper)}") +
           f"), bound "
           f"{ph.bound}, {approx(ph.throughput)} tokens/s", ""]
    if ph.stages:  # a pipeline: the latency their times and the sends, the slowest's rate
        stages = [(st.name + (" (slowest)" if st.name == ph.slowest else ""), str(st.count),
                   seconds(st.time), seconds(st.send), seconds(st.period))
                  for st in ph.stages]
        out += [_heading(f"{ph.name} pipeline stages", fmt),
                *table(["stage", "stages", "time", "send", "period"], stages, fmt), ""]
    if ph.comms:
        calls = [(c.after, f"{c.collective}{'' if c.algorithm == 'ring' else ' ' + c.algorithm}"
                  f" ({c.kind})", gigabytes(c.nbytes), text(c.calls),
                  seconds(c.calls * c.time)) for c in ph.comms]
        out += [_heading(f"{ph.name} collectives", fmt),
                *table(["after", "collective", "bytes", "per step", "time"], calls, fmt), ""]
    return out


def _serving(s: Serving, fmt: str, chip_note: str = "") -> list[str]:
    out = _header("serving", s, fmt, chip_note) + _memory(s, fmt)
    out += _phase(s.prefill, fmt)
    if s.chunked is not None:
        out += _chunks(s, fmt)
    out += _phase(s.decode, fmt)
    per_chip = s.decode.throughput / s.devices
    out.append(f"decode: {approx(s.decode.throughput)} tokens/s, {approx(per_chip)} per chip")
    out += ["", _heading("decode against batch B and context T", fmt),
            *table(["batch", "context", "latency", "tokens/s per chip", "fits"],
                   [(str(b), str(t), seconds(lat), approx(rate), "yes" if ok else "no")
                    for b, t, lat, rate, ok in s.grid], fmt), ""]
    c = s.critical
    if c.integer is not None:
        value = f"B > {exact(c.value)}, " if c.value is not None else ""
        note = f"; {c.reason}" if c.reason else ""
        out.append(f"critical batch  decode is compute-bound from B = {c.integer} "
                   f"({value}at context {s.context}){note}")
    else:
        out.append(f"critical batch  none: {c.reason}")
    out.append(f"prefill:decode  1 : {approx(1 / s.balance)} (chips to keep up with requests "
               f"of {s.context} prompt tokens generating {s.generate})")
    if s.requests is not None:
        r = s.requests
        rows = [("time to first token", seconds(r["time_to_first_token"])),
                ("time per output token", seconds(r["time_per_output_token"])),
                ("request latency", seconds(r["request_latency"])),
                ("tokens/s per request", approx(r["tokens_per_s_per_request"])),
                ("requests/s", approx(r["requests_per_s"])),
                ("requests/s per chip", approx(r["requests_per_s_per_chip"]))]
        out += ["", _heading(f"a request of {s.context} prompt tokens generating "
                             f"{s.generate}, batch {s.batch}", fmt),
                *table(["what", "value"], rows, fmt)]
    return [*out, "", _heading("assumptions", fmt), *(f"- {a}" for a in s.assumptions)]


def _chunks(s: Serving, fmt: str, shown: int = 8) -> list[str]:
    """The chunked prefill: each chunk's step (the first and last few of many), the sum."""
    c = s.chunked
    assert c is not None
    flowing = c.flows  # on a pipeline: when each chunk leaves the last stage too
    rows = [(str(i), str(n), str(p), seconds(st.latency),
             *([seconds(c.left[i])] if flowing else []), st.bound)
            for i, n, p, st in c.rows()]
    if len(rows) > shown:
        rows = [*rows[:shown // 2], ("...",) + ("",) * (len(rows[0]) - 1),
                *rows[-(shown // 2):]]
    how = (f"the chunks flowing through the {c.steps[0].pipeline} stages; their steps summed "
           f"{seconds(c.serial)}" if flowing else "the chunks' steps summed")
    return [_heading(f"chunked prefill: {len(c.sizes)} chunks of {c.chunk} tokens per "
                     "sequence", fmt),
            *table(["chunk", "tokens", "cached", "step", *(["leaves"] if flowing else []),
                    "bound"], rows, fmt),
            f"prefill {seconds(c.time)} ({how}; T_upper "
            f"{seconds(c.time_upper)}), against {seconds(s.prefill.latency)} unchunked",
            *([] if c.apart is None else [
                f"each step carries {c.riders} decode tokens: {seconds(c.time)} against "
                f"{seconds(c.apart)} with the chunks and {len(c.sizes)} decode steps run "
                "apart"]), ""]


def _search(s: Search, fmt: str) -> list[str]:
    # under a rule other than phase the candidates rank by their predicted time: a column
    ranked = s.overlap != "phase"
    rows = [(str(i + 1), c.spec, c.strategy, str(c.microbatches), str(c.chunks), c.recompute,
             seconds(sp.Float(c.t_lower)),
             *([seconds(sp.Float(c.predicted))] if ranked else []),
             gigabytes(sp.Float(c.memory)), c.bound)
            for i, c in enumerate(s.ranking)]
    return [_heading(f"search over {s.chips} chips: {s.searched} plans, {s.feasible} fit", fmt),
            *table(["rank", "mesh", "strategy", "microbatches", "chunks", "recompute",
                    "T_lower", *([f"predicted ({s.overlap})"] if ranked else []), "memory",
                    "bound"],
                   rows, fmt),
            s.explain(), *(f"- {a}" for a in s.assumptions)]


def _given(given: Plan, chosen: Plan, fmt: str) -> list[str]:
    """The plan set beside the search, and the search's choice against it."""
    ranked = chosen.overlap != "phase"  # the search ranked by the predicted time: a column
    rows = [(name, p.mesh, p.strategy, str(p.extra["microbatches"]),
             str(p.extra.get("chunks", 1)), str(p.extra["recompute"]),
             seconds(p.t_lower), seconds(p.t_upper),
             *([seconds(_ranked_time(p))] if ranked else []), gigabytes(p.memory["total"]),
             "yes" if p.fits else "no") for name, p in (("given", given), ("chosen", chosen))]
    by = "predicted" if ranked else "T_lower"  # under phase the predicted time is T_lower
    ratio = _ranked_time(chosen) / _ranked_time(given)
    verdict = (f"the chosen plan is {approx((1 - ratio) * 100)}% faster than the given one "
               f"({by})" if ratio < 1 else "the chosen plan ties with the given one "
               f"({by})" if ratio == 1 else
               f"the given plan is {approx((1 / ratio - 1) * 100)}% faster than the chosen "
               f"one ({by}): it lies outside the searched plans")
    if not given.fits:
        verdict += "; the given plan does not fit in memory"
    return [_heading("the given plan beside the search's choice", fmt),
            *table(["plan", "mesh", "strategy", "microbatches", "chunks", "recompute",
                    "T_lower", "T_upper", *([f"predicted ({chosen.overlap})"] if ranked else []),
                    "memory", "fits"], rows, fmt), verdict]


def _ranked_time(p: Plan) -> Any:
    return p.predicted if p.predicted is not None else p.t_lower


def _mfu(u: Mfu, fmt: str) -> list[str]:
    return [_heading("MFU", fmt), f"{approx(u.value * 100)}% = {approx(u.tokens_per_second)} "
            f"tokens/s x {text(u.flops_per_token)} FLOPs per token / ({text(u.chips)} chips x "
            f"{approx(u.peak)} FLOP/s)", f"definition: {u.definition}"] + (
        [f"HFU {approx(u.hfu * 100)}% = {approx(u.tokens_per_second)} tokens/s x "
         f"{text(u.flops_per_token + u.rerun_flops_per_token)} FLOPs per token, {u.recompute} "
         f"recomputation's forward rerun ({text(u.rerun_flops_per_token)}) counted"]
        if u.rerun_flops_per_token != 0 else [])


def _cost(costs: Sequence[Cost], fmt: str) -> list[str]:
    p = costs[0].price
    out = [_heading(f"cost at {approx(p.amount)} {p.currency} per chip-hour (the price "
                    f"given, {p.stated!r})", fmt)]
    for c in costs:
        upper = c.per_step_upper
        also = f" ({approx(upper)} {p.currency} at T_upper)" if upper is not None else ""
        out.append(f"{c.what}: {approx(c.per_step)} {p.currency} per step of "
                   f"{seconds(c.seconds)} on {text(c.chips)} chips{also}; "
                   f"{approx(c.per_million_tokens)} {p.currency} per million tokens "
                   f"({approx(c.tokens)} tokens per step)")
    return out


def _laws(laws: Sequence[Any], fmt: str) -> list[str]:
    rows = []
    notes = []
    for law in laws:
        if isinstance(law, tuple):
            notes.append(f"- {law[0]}: {law[1]}")
            continue
        value = approx(law.value) if law.value.is_number else \
            f"{approx(law.limit)} x {text(sp.factor(law.value / law.limit))}"
        rows.append((law.chip, law.kind, law.axis, text(law.expression), value,
                     text(law.book), approx(law.book_value)))
    return [_heading("critical batch per chip (tokens) above which the strategy's comms hide "
                     "under compute; C peak FLOP/s, W one-way bytes/s per chip on the axis; "
                     "the exact law and the book's form (the leading term in the axis size, "
                     "no latency)",
                     fmt), *table(["chip", "kind", "axis", "law (exact)", "value",
                                   "book form", "book value"], rows, fmt),
            *notes]


def search_lines(s: ServingSearch, fmt: str = "text", chip_note: str = "") -> list[str]:
    """The search as text: the limits, the best plan, the best of each mode, the frontier;
    ``chip_note`` follows the chip's name."""
    out = [f"{s.model} serving on {s.chips} x {s.chip}{chip_note}: "
           f"TTFT <= {si(s.ttft_limit, 's')}, TPOT <= {si(s.tpot_limit, 's')}; "
           f"prompts of {s.context} tokens generating {s.generate}",
           f"searched {s.searched} configurations over the worker shapes "
           f"{', '.join(s.shapes)}; {s.feasible} meet the limits", ""]
    if s.best is None:
        return [*out, f"no plan: {s.why}", "", "assumptions:",
                *(f"- {a}" for a in s.assumptions)]

    def row(label: str, p: ServingPlan) -> list[str]:
        return [label, p.describe(), str(p.chips), si(p.ttft, "s"), si(p.tpot, "s"),
                f"{p.tokens_per_s_per_chip:.1f}", f"{p.tokens_per_s_per_user:.1f}"]
    head = ["", "plan", "chips", "TTFT", "TPOT", "tokens/s per chip", "tokens/s per user"]
    best = [row("best", s.best)]
    for label, p in (("best aggregated", s.best_aggregated),
                     ("best disaggregated", s.best_disaggregated)):
        if p is not None:
            best.append(row(label, p))
    out += table(head, best, fmt)
    out += ["", "frontier (tokens/s per chip against tokens/s per user, within the limits):"]
    out += table(head[1:], [row("", p)[1:] for p in s.frontier], fmt)
    return [*out, "", "assumptions:", *(f"- {a}" for a in s.assumptions)]
