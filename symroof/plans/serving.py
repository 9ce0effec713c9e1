"""Serving a model on a mesh: prefill and decode steps, latency and throughput against
batch and context, the batch at which decode turns compute-bound, the fewest chips for a
latency target and the prefill:decode balance.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.strategy import parse_strategy
>>> s = serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy("tp=X"),
...           batch=64, context=2048)
>>> s.decode.bound, s.decode.terms["tp over X (nvlink)"] > 0
('hbm', True)

A step is the one device step of ``symroof.plans.device_step`` (the step ``symroof model
--decode --mesh`` shows too): its layers' forward ops (decode: one new token per sequence
over the KV cache; prefill: the whole prompt) split over the mesh, the weights and heads
over the tensor axes, the layers over the pipeline stages (a token crosses every stage;
pp batches in flight give the throughput), the sequences over the data and expert axes.
The latency of a step is its T_lower; the critical batch is where decode's compute
outlasts each other term (``engine.critical``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

import sympy as sp
from sympy import Expr

from ..core.choices import EXACT, OP_CHOICES, Choices
from ..core.errors import InputError
from ..core.parse import symbol
from ..core.printer import si
from ..core.quant import rest_dtype, scheme_of
from ..core.sizes import dtype_bytes
from ..core.units import CAPACITY, PER_SECOND, TIME, records
from ..engine.critical import Critical
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.counts import kv_bytes_per_token, params
from ..models.layers import DEFAULT_KERNEL, Kernel
from ..models.tensor_parallel import shard
from ..parallel.mesh import Mesh, mesh
from .chunked import ChunkedPrefill, chunked_prefills
from .device_step import DeviceStep, device_step, device_steps, overlap_said, step_critical
from .efficiency import PEAK, Efficiency
from .options import DEFAULT_OPTIONS, TRAINING_ONLY, StepOptions
from .strategy import Strategy, parse_strategy
from .train_step import STAGES, head_params

SERVING = ("dp", "tp", "pp", "ep")


@dataclass(frozen=True)
class Serving:
    """A serving plan: memory per device, the two steps, and what follows from them."""

    model: str
    chip: str
    mesh: str
    strategy: str
    devices: int
    batch: Expr
    context: Expr
    memory: Mapping[str, Expr]
    capacity: Expr
    prefill: DeviceStep
    decode: DeviceStep
    critical: Critical
    balance: Expr
    generate: int
    assumptions: tuple[str, ...]
    grid: tuple[tuple[int, int, Expr, Expr, bool], ...] = ()
    dtype: str = "bf16"
    kv_dtype: str = "bf16"
    requests: Mapping[str, Expr] | None = None
    chunked: ChunkedPrefill | None = None
    at_peak: Serving | None = None  # a forecast's bound: the same plan at peak
    memory_stage: str = "first"  # the pipeline stage whose account ``memory`` is
    #: with a pipeline, the first and last stages' accounts (``stage_memories``)
    memory_stages: Mapping[str, Mapping[str, Expr]] = field(default_factory=dict)
    #: with more than two stages, a stage between the ends' (its layers alone)
    memory_middle: Mapping[str, Expr] = field(default_factory=dict)

    @property
    def prefill_time(self) -> Expr:
        """The prefill's latency; chunked, the chunked prefill's time (its chunks' steps
        summed, or on a pipeline the last chunk leaving the last stage)."""
        return self.chunked.time if self.chunked is not None else self.prefill.latency

    @property
    def fits(self) -> bool:
        return bool(self.memory["total"] <= self.capacity)


def tp_over(m: Mesh) -> Strategy:
    """Tensor parallelism over every axis of ``m``: the default serving strategy."""
    return parse_strategy("tp=" + "+".join(m.axes))


def serving_axes(cfg: ModelConfig, m: Mesh, strategy: Strategy) -> dict[str, tuple[str, ...]]:
    """The mesh axes of each serving kind; other kinds and sequence parallelism refused."""
    strategy.check_mesh(m.axes)
    bad = [k for k in strategy.kinds if k not in SERVING]
    if bad:
        raise InputError(f"{bad[0]} shards training state; a serving plan takes "
                         f"{', '.join(SERVING)}", "strategy")
    if strategy.sequence_parallel:
        raise InputError("sequence parallelism is a training strategy here; drop ',sp'",
                         "strategy")
    if len(strategy.axes("pp")) > 1:
        raise InputError("a pipeline runs along one axis, got pp="
                         + "+".join(strategy.axes("pp")), "strategy")
    return {k: strategy.axes(k) for k in SERVING if strategy.axes(k)}


def step_on(cfg: ModelConfig, phase: str, chip: Chip | None, m: Mesh | None = None, *,
            batch: int, context: int, dtype: str = "bf16", kv_dtype: str | None = None,
            kernel: Kernel | None = None, choices: Choices = EXACT,
            overlap: str = "op") -> tuple[DeviceStep, Critical | None]:
    """The step ``symroof model --decode/--prefill [--mesh]`` shows: the serving plan's
    step with tensor parallelism over every axis of ``m`` (or one chip without a mesh), its
    collectives under ``choices``, its latency under ``overlap`` (a rule of
    ``efficiency.SERVING_OVERLAPS``), and for decode its critical batch.

    >>> from symroof.models import model
    >>> step, critical = step_on(model("llama-2-7b"), "decode", None, mesh("X=8", "h100-sxm"),
    ...                          batch=64, context=2048)
    >>> step.t_lower == serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), batch=64,
    ...                       context=2048).decode.t_lower
    True
    """
    axes = serving_axes(cfg, m, tp_over(m)) if m is not None else {}
    k = kernel or DEFAULT_KERNEL

    def at(b: int | None) -> DeviceStep:
        return device_step(cfg, phase, m, axes, batch=b, context=context, chip=chip,
                           options=StepOptions(dtype=dtype, kv_dtype=kv_dtype, kernel=k,
                                               choices=choices,
                                               efficiency=replace(PEAK, overlap=overlap)))
    return at(batch), step_critical(at(None)) if phase == "decode" else None


def device_memory(cfg: ModelConfig, tp: int, pp: int, ep: int, *, batch: Expr, context: Expr,
                  dtype: str, kv_dtype: str, stage: str | None = None) -> dict[str, Expr]:
    """Weights and KV cache one device holds on pipeline stage ``stage``: its shard's
    parameters, the layers' over the stages and the routed experts' over the expert ranks,
    the head block's part that stage holds (``train_step.head_params``, the count a
    training plan holds: ``first`` the word embedding and any learned positions, ``last``
    the final norm and the output head, with tied embeddings its own copy of the word
    embeddings; ``both`` without a pipeline), and its ``batch`` sequences' KV cache for its
    shard's KV heads and its stage's layers; a ``middle`` stage holds its layers alone.
    Without ``stage``, the plan's memory: the larger of the two end stages' accounts
    (``stage_memories``).

    >>> from symroof.models import model
    >>> at = dict(batch=sp.Integer(1), context=sp.Integer(256), dtype="bf16", kv_dtype="bf16")
    >>> cfg = model("llama-2-7b")   # untied: the last stage holds the head and the norm
    >>> device_memory(cfg, 1, 4, 1, stage="last", **at)["weights"] - device_memory(
    ...     cfg, 1, 4, 1, stage="first", **at)["weights"] == 2 * 4096
    True
    """
    if stage is None:
        largest, by = stage_memories(cfg, tp, pp, ep, batch=batch, context=context,
                                     dtype=dtype, kv_dtype=kv_dtype)
        return by[largest]
    if stage not in ("both", *STAGES, "middle"):
        raise InputError(f"a pipeline stage is one of both, first, middle, last, got "
                         f"{stage!r}", "stage")
    part = shard(cfg, tp, pp=pp, ep=ep)
    p = params(part)
    head = head_params(cfg, tp, pp)
    layers = p.total - head["both"] - p.experts * (1 - sp.Rational(1, ep))
    wq, wr = dtype_bytes(dtype, where="dtype"), dtype_bytes(rest_dtype(dtype))
    # a weight scheme leaves norms, embedding and head in 16 bits
    layer_norms = p.norms - p.norms / (2 * cfg.layers + 1)
    held = head.get(stage if pp != 1 else "both", sp.S.Zero)
    weights = ((layers - layer_norms) * wq + layer_norms * wr) / pp + held * wr
    kv = batch * context * kv_bytes_per_token(part, kv_dtype) / pp
    memory = {"weights": sp.expand(weights), "kv_cache": sp.expand(kv)}
    memory["total"] = sp.Add(*memory.values())
    return memory


def stage_memories(cfg: ModelConfig, tp: int, pp: int, ep: int, *, batch: Expr,
                   context: Expr, dtype: str,
                   kv_dtype: str) -> tuple[str, dict[str, dict[str, Expr]]]:
    """The memory accounts of a pipeline's first and last stages (``device_memory``; a
    stage between them holds its layers only) and the one holding more, the plan's memory
    (the first on a tie: they differ by weights alone, whatever the batch); without a
    pipeline, the one stage as ``first``.

    >>> from symroof.models import model
    >>> stage_memories(model("llama-2-7b"), 1, 4, 1, batch=sp.Integer(1),
    ...                context=sp.Integer(256), dtype="bf16", kv_dtype="bf16")[0]
    'last'
    """
    by = {s: device_memory(cfg, tp, pp, ep, batch=batch, context=context, dtype=dtype,
                           kv_dtype=kv_dtype, stage=s if pp != 1 else "both")
          for s in (STAGES if pp != 1 else STAGES[:1])}
    largest = "last" if len(by) > 1 and (
        by["last"]["weights"] - by["first"]["weights"]).is_positive else "first"
    return largest, by


#: what a serving plan's values are, for a text that prints them (``core.units.records``)
SERVING_VALUES = {
    "prefill.t_lower": TIME, "prefill.t_upper": TIME, "prefill.terms": TIME,
    "prefill.throughput": PER_SECOND, "decode.t_lower": TIME, "decode.t_upper": TIME,
    "decode.terms": TIME, "decode.throughput": PER_SECOND, "prefill_time": TIME,
    "memory": CAPACITY, "requests.time_to_first_token": TIME,
    "requests.time_per_output_token": TIME, "requests.request_latency": TIME,
    "requests.tokens_per_s_per_request": PER_SECOND, "requests.requests_per_s": PER_SECOND,
    "requests.requests_per_s_per_chip": PER_SECOND}


@records(SERVING_VALUES, editions=True, tries=(
    {"memory": "weights"}, {"kv_dtype": "fp8"}, {"kv_dtype": "int8"}))
def serve(cfg: ModelConfig, m: Mesh, strategy: Strategy | None = None, *, batch: int,
          context: int, generate: int = 256, options: StepOptions = DEFAULT_OPTIONS,
          chunk: int | None = None, piggyback: bool = False, bound: bool = False) -> Serving:
    """Prefill and decode of ``batch`` sequences of ``context`` tokens on mesh ``m`` under
    ``strategy`` (default: tensor parallelism over every axis), each step built under
    ``options`` (``plans.options``: dtypes, kernel (default: flash attention, a dense count,
    activations through HBM), choices, efficiency, overlap rule and in-network reduction;
    a training choice is refused); with ``chunk``, the prefill runs in chunks of that many
    tokens (``plans.chunked``), with ``piggyback`` each chunk step carrying a decode token
    of each of the batch's sequences at ``context`` (Sarathi-Serve's hybrid batch); with
    ``bound``, the same plan at peak too (``at_peak``: a forecast's bound), its steps built
    with the forecast's (``device_steps``: the ops, collectives and rooflines once), under
    ``options.overlap`` (a rule of ``efficiency.SERVING_OVERLAPS``) when it names one, else
    under the efficiency's own. Its choices' ``kv_dtype`` (``fp8``, ``int8``) is the KV
    cache's dtype, as ``options.kv_dtype`` gives it, and ``memory="weights"`` counts the
    weights alone in its memory's total (a text's count, the KV cache left out)."""
    options.refuse(TRAINING_ONLY, "a serving plan")
    dtype, choices, overlap = options.dtype, options.choices, options.overlap
    strategy = strategy or tp_over(m)
    k = options.kernel_or(DEFAULT_KERNEL)
    axes = serving_axes(cfg, m, strategy)
    kv = options.kv_dtype or rest_dtype(dtype)  # a weight scheme's cache: 16 bits
    # what a text counts of the memory, and its KV cache's dtype (as kv_dtype= gives it):
    # choices of the plan, not of its steps
    counted = choices.memory
    if counted not in ("all", "weights"):
        raise InputError(f"memory={counted} counts a training memory; a serving plan takes "
                         "memory=all or memory=weights", "choices")
    if choices.kv_dtype != "as_given":
        kv = choices.kv_dtype
    choices = choices.with_(memory="all", kv_dtype="as_given")
    step = options.with_(kv_dtype=kv, kernel=k, choices=choices)
    size = {k: int(sp.Mul(*(m.axis(a).size for a in v))) for k, v in axes.items()}
    tp, pp, ep = (size.get(k, 1) for k in ("tp", "pp", "ep"))
    replicas = size.get("dp", 1) * ep
    if batch % replicas:
        raise InputError(f"a batch of {batch} sequences does not split into {replicas} "
                         f"replicas", "batch")

    efficiency = options.efficiency
    if overlap is not None:
        efficiency = replace(efficiency, overlap=overlap)
    peak = PEAK if overlap is None else replace(PEAK, overlap=overlap)
    efficiencies = (efficiency, peak) if bound else (efficiency,)
    # the rest cost the collectives (an edition is the steps' chip, noted by them)
    costed = choices.with_(**{n: getattr(EXACT, n) for n in OP_CHOICES}, edition="")

    def steps(phase: str, b: int | None, t: int | Expr) -> tuple[DeviceStep, ...]:
        return device_steps(cfg, phase, m, axes, batch=b, context=t, options=step,
                            efficiencies=efficiencies)
    prefills, decodes = steps("prefill", batch, context), steps("decode", batch, context)
    swepts = steps("decode", None, symbol("T"))  # built once, in the swept sizes B and T
    largest, by_stage = stage_memories(cfg, tp, pp, ep, batch=sp.Integer(batch // replicas),
                                       context=sp.Integer(context), dtype=dtype, kv_dtype=kv)
    if counted == "weights":  # a text's total: the weights alone (the parts as they are)
        by_stage = {s: {**x, "total": x["weights"]} for s, x in by_stage.items()}
    memory = by_stage[largest]
    middle = device_memory(cfg, tp, pp, ep, batch=sp.Integer(batch // replicas),
                           context=sp.Integer(context), dtype=dtype, kv_dtype=kv,
                           stage="middle") if pp > 2 else {}
    if counted == "weights" and middle:
        middle = {**middle, "total": middle["weights"]}
    capacity = m.chip.capacity("hbm")
    points = []
    for t in sorted({max(1, context // 4), context, 4 * context}):
        for bb in sorted({1, *(batch * 4**k for k in range(3)),
                          *(batch // 4**k for k in (1, 2) if batch // 4**k >= 1)}):
            if bb % replicas:
                continue
            held = device_memory(cfg, tp, pp, ep, batch=sp.Integer(bb // replicas),
                                 context=sp.Integer(t), dtype=dtype, kv_dtype=kv)
            points.append((bb, t, bool(held["total"] <= capacity)))

    chunkeds: tuple[ChunkedPrefill | None, ...] = (None,) * len(efficiencies)
    if chunk is not None:
        chunkeds = chunked_prefills(
            cfg, m, axes, batch=batch, context=context, chunk=chunk, options=step,
            efficiencies=efficiencies, decoding=(batch, context) if piggyback else None)

    def assembled(eff: Efficiency, prefill: DeviceStep, decode: DeviceStep,
                  swept: DeviceStep, chunked: ChunkedPrefill | None) -> Serving:
        critical = step_critical(swept, context)
        prefill_time = chunked.time if chunked is not None else prefill.latency
        # the chips a prefill keeps busy: its chunks' steps, however they overlap in time
        ratio = (chunked.serial if chunked is not None else prefill.latency) / (
            generate * decode.latency)
        balance = ratio if ratio.is_Rational else sp.nsimplify(ratio)  # Floats: a simple form
        grid = []
        for bb, t, fits in points:
            d = swept_at(swept, bb, t)  # the decode step at (bb, t), exactly
            grid.append((int(bb), t, d["latency"], d["throughput"] / m.devices, fits))
        requests = per_request(prefill, decode, generate, pp, m.devices, prefill_time,
                               chunked.steps if chunked is not None else ())
        notes = set(prefill.notes) | set(decode.notes)
        schemes = tuple(s.describe() for s in dict.fromkeys(filter(None, map(scheme_of,
                                                                             (dtype, kv)))))
        assumptions = (
            f"weights {dtype}; KV cache {kv}, its heads split over min(tp, KV heads) and its "
            "layers over the stages", *schemes,
            *(("memory as a text counts it: the weights alone, the KV cache left out",)
              if counted == "weights" else ()),
            overlap_said(eff.overlap),
            "a pipeline's stages run one after another for a token; pp batches in flight"
            if pp == 1 else pipeline_note(prefill, decode, pp),
            *((_stage_note(cfg, largest, by_stage),) if pp != 1 else ()),
            "the sampled positions' logits (one per sequence) all-gathered over the tensor "
            "axes; the embedding lookup all-reduced (vocabulary-parallel)",
            f"kernels: {k.describe()}",
            f"a request: its prompt's prefill, then {generate} decode steps each timed at the "
            f"prompt's context (the cache grows by {generate} tokens over them); batches run "
            "one after another on the same chips, pp of them in flight",
            *(() if chunked is None else (
                f"chunked prefill (Sarathi-Serve, Agrawal et al. 2024): {len(chunked.sizes)} "
                f"chunks of {chunk} tokens, each attending to the KV cache of those before "
                "it (read from memory) and to itself; " + _chunks_flow(chunked, pp) + (
                    f"; each chunk step carries one decode token of each of {batch} running "
                    f"sequences at context {context} (a hybrid batch: the weights read once "
                    "for both; the request figures still time its decode steps apart)"
                    if piggyback else ""),)),
            f"efficiency: {eff.describe()}", *sorted(notes),
            *([f"collectives as a text costs them: {costed.describe()} (leaves out "
               f"{', '.join(costed.drops()) or 'nothing'})"] if costed != EXACT else []),
            *(a for a in m.assumptions if a not in notes))
        return Serving(cfg.name, m.chip.name, m.spec, str(strategy), int(m.devices),
                       sp.Integer(batch), sp.Integer(context), memory, capacity, prefill,
                       decode, critical, balance, generate, assumptions, tuple(grid), dtype,
                       kv, requests, chunked, memory_stage=largest,
                       memory_stages=by_stage if pp != 1 else {}, memory_middle=middle)
    made = [assembled(e, p, d, w, c) for e, p, d, w, c in zip(efficiencies, prefills, decodes,
                                                              swepts, chunkeds, strict=True)]
    return replace(made[0], at_peak=made[1]) if bound else made[0]


def pipeline_note(prefill: DeviceStep, decode: DeviceStep, pp: int) -> str:
    """How a pipelined step's latency and throughput are made, and its slowest stages."""
    def slowest(step: DeviceStep) -> str:
        return f"{step.name} the {step.slowest} stage's" if step.slowest else \
            f"{step.name} the slowest stage's"
    return ("a pipeline's stages run one after another for a token: the latency is each "
            "stage's own time under the overlap rule (the first runs the embedding and its "
            f"1/{pp} of the layers, the last its layers, the final norm and the output head, "
            f"each with its ops' collectives) plus the {pp - 1} send{'s' if pp > 2 else ''}, "
            "and for a decode step the sampled tokens' trip back to the first stage; "
            f"{pp} batches in "
            "flight, so the throughput is the slowest stage's (its time and its send: "
            f"{slowest(prefill)}, {slowest(decode)})")


def _chunks_flow(chunked: ChunkedPrefill, pp: int) -> str:
    """How a chunked prefill's chunks run: one after another, or through a pipeline's
    stages as microbatches do."""
    if pp == 1:
        return "the prefill is their steps one after another, the first token after the last"
    if not chunked.flows:
        return ("the prefill is their steps one after another, the first token after the "
                "last: each step's decode tokens wait for the tokens the step before sampled "
                "on the last stage, so the chunks do not overlap across the stages")
    return (f"the chunks flow through the {pp} stages as microbatches do: a chunk enters a "
            "stage once it has left the stage before (and been sent on) and the chunk "
            "before it has left that stage (its KV cache there written), each chunk's stage "
            "its own step's stage period; the first token comes when the last chunk leaves "
            "the last stage (T_upper: the chunks' steps one after another)")


def _stage_note(cfg: ModelConfig, largest: str,
                by_stage: Mapping[str, Mapping[str, Expr]]) -> str:
    """What each end stage's memory account holds, and which the plan's memory is."""
    sizes = ", ".join(f"the {k} {si(v['total'], 'B')}" for k, v in by_stage.items())
    return (f"memory per device: the {largest} stage's, the larger account ({sizes}); the "
            "first stage holds its layers and the word embedding"
            + (" and the learned positions" if cfg.positions == "learned" else "")
            + ", the last its layers, the final norm and the output head" + (
                ": with tied embeddings its own copy of the word embeddings, as Megatron-LM "
                "keeps one on the last stage" if cfg.tied_embeddings else "")
            + "; each its share of the KV cache")


def swept_at(step: DeviceStep, batch: int, context: int) -> dict[str, Expr]:
    """The latency and throughput of ``step`` (built in the symbols B and T) at ``batch``
    and ``context``: exact numbers, equal to the step built at those sizes (a law in
    tests/test_serving.py), at the cost of two substitutions instead of a step's build.

    >>> from symroof.core.parse import symbol
    >>> from symroof.models import model
    >>> cfg, m = model("llama-2-7b"), mesh("X=8", "h100-sxm")
    >>> axes = serving_axes(cfg, m, tp_over(m))
    >>> swept = device_step(cfg, "decode", m, axes, batch=None, context=symbol("T"))
    >>> built = device_step(cfg, "decode", m, axes, batch=64, context=2048)
    >>> swept_at(swept, 64, 2048) == {"latency": built.latency,
    ...                               "throughput": built.throughput}
    True
    """
    at = {symbol("B"): Fraction(batch), symbol("T"): Fraction(context)}
    out = {}
    for name, e in (("latency", step.latency), ("throughput", step.throughput)):
        try:
            v = _exactly(e, at)
            out[name] = sp.Rational(v.numerator, v.denominator)
        except _Other:  # a node the walk does not take (a Float, a ceiling): substituted
            out[name] = e.xreplace({k: sp.Integer(int(v)) for k, v in at.items()})
    return out


class _Other(Exception):
    """A node ``_exactly`` does not evaluate."""


def _exactly(e: Expr, at: Mapping[sp.Symbol, Fraction]) -> Fraction:
    """``e`` at ``at`` in exact fractions: sums, products, integer powers, Max and Min of
    rationals, the SymPy arithmetic without its canonical forms (a sweep's fast path)."""
    if e.is_Rational:
        return Fraction(int(e.p), int(e.q))
    if e.is_Symbol:
        if e not in at:
            raise _Other(str(e))
        return at[e]
    if e.is_Pow and e.exp.is_Integer:
        return _exactly(e.base, at) ** int(e.exp)
    args = [_exactly(a, at) for a in e.args]
    if e.is_Add:
        return sum(args, Fraction(0))
    if e.is_Mul:
        out = Fraction(1)
        for a in args:
            out *= a
        return out
    if isinstance(e, sp.Max):
        return max(args)
    if isinstance(e, sp.Min):
        return min(args)
    raise _Other(type(e).__name__)


def per_request(prefill: DeviceStep, decode: DeviceStep, generate: int, pp: int,
                devices: Expr, prefill_time: Expr | None = None,
                chunks: tuple[DeviceStep, ...] = ()) -> dict[str, Expr]:
    """What a request sees and what the mesh serves, for prompts of the steps' context
    generating ``generate`` tokens: time to the first token (the prefill), time per output
    token (a decode step), the request's latency, its tokens per second, and requests per
    second (per chip) with a batch of sequences at a time and ``pp`` batches in flight;
    ``prefill_time`` (default: the prefill step's latency) and ``chunks`` (their steps) for
    a chunked prefill. With a pipeline's stages (``DeviceStep.stages``), a batch's request
    occupies each stage for its prefill's periods and ``generate`` decode periods there, and
    the rate is the busiest stage's (the stages' occupancies sum to the request's latency,
    so it is never above pp batches per latency).

    >>> from symroof.models import model
    >>> s = serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), batch=64, context=2048,
    ...           generate=128)
    >>> r = s.requests
    >>> r["request_latency"] == s.prefill.latency + 128 * s.decode.latency
    True
    >>> r["requests_per_s"] == 64 / r["request_latency"]
    True
    """
    first = prefill.latency if prefill_time is None else prefill_time
    latency = first + generate * decode.latency
    rate = decode.tokens * pp / latency
    if decode.stages:
        steps = chunks or (prefill,)

        def period(step: DeviceStep, name: str) -> Expr:
            return next(x.period for x in step.stages if x.name == name)
        busy = [sp.Add(*(period(st, s.name) for st in steps)) + generate * s.period
                for s in decode.stages]
        rate = decode.tokens / sp.Max(*busy)
    return {"time_to_first_token": first, "time_per_output_token": decode.latency,
            "request_latency": latency, "tokens_per_s_per_request": 1 / decode.latency,
            "requests_per_s": rate, "requests_per_s_per_chip": rate / devices}


def fewest_chips(cfg: ModelConfig, chip_name: object, *, batch: int, context: int,
                 target: Expr, limit: int = 1024,
                 options: StepOptions = DEFAULT_OPTIONS) -> tuple[int | None, str]:
    """The fewest chips, tensor-parallel over one axis of the chip's fastest network, whose
    decode step meets ``target`` seconds and whose memory holds weights and KV cache. Each
    mesh's step is ``serve``'s under the plan's own ``options`` (dtypes, kernel, choices,
    efficiency and overlap rule), so a plan on ``X=n`` with ``tp=X`` and the row for n
    chips are one step.

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> fewest_chips(model("llama-2-7b"), chip("h100-sxm"), batch=16, context=2048,
    ...              target=sp.Rational(2, 1000))
    (8, 'tp=8: decode step 1.732 ms')
    """
    n = 1
    tried = []
    while n <= limit:
        try:
            m = mesh(f"X={n}", chip_name)  # type: ignore[arg-type]
        except InputError:
            break
        try:
            s = serve(cfg, m, parse_strategy("tp=X"), batch=batch, context=context,
                      options=options)
        except InputError:
            s = None
        if s is not None:
            tried.append((n, float(s.decode.latency), s.fits))
            if s.fits and s.decode.latency <= target:
                return n, f"tp={n}: decode step {_si(s.decode.latency)}"
        n *= 2
    shown = ", ".join(f"{k} chips {_si(t)}{'' if f else ' (does not fit)'}"
                      for k, t, f in tried)
    return None, f"no tensor-parallel mesh meets it ({shown})"


def _si(seconds: object) -> str:
    return si(seconds, "s")
