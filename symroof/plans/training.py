"""A training step on a mesh: memory per device, compute and every comm term, time bounds,
and the critical batch per chip above which the step is compute-bound.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.strategy import parse_strategy
>>> p = train(model("llama-2-7b"), mesh("X=16,Y=16", "tpu-v5e"), parse_strategy("fsdp=X,tp=Y"),
...           batch=256, context=4096)
>>> p.bound, p.memory["weights"]
('tp over Y (ici)', 52675072)

Each term overlaps the compute of its phase (forward or backward): a phase takes the
longest of its compute, its HBM traffic and each strategy's collectives on their own
links (T_lower, perfect overlap), or all of them one after another (T_upper). A pipeline
adds its bubble to both. The critical batch solves, phase by phase, compute = each term
that does not grow with the batch; a term that grows as fast as compute (tensor-parallel
activations) is either always hidden or never.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp
from sympy import Expr

from ..core import tables as tb
from ..core.choices import COLLECTIVE_CHOICES, EXACT, Choices
from ..core.errors import InputError
from ..core.parse import exact
from ..core.printer import si
from ..core.units import CAPACITY, TIME, records
from ..engine.critical import critical_size
from ..engine.rooflines import binding
from ..models.config import ModelConfig
from ..models.layers import Kernel, spelled
from ..models.memory import (
    ALL_PARTS,
    CHECKPOINTS,
    OUTSIDE_PART,
    OUTSIDE_STAGES,
    TRAINING_COUNTED,
    TRAINING_COUNTS,
    VOCABULARY_PARALLEL,
    activation_bytes,
    checkpoint_policy,
    checkpointed_bytes,
    outside_layer_bytes,
    plan_states,
    recomputation,
)
from ..models.tensor_parallel import check_degrees
from ..parallel.collectives import collective
from ..parallel.in_network import in_switch_algorithm
from ..parallel.mesh import Mesh
from .conventions import Conventions
from .efficiency import Efficiency
from .mfu import predicted_mfu
from .options import DEFAULT_OPTIONS, SERVING_ONLY, StepOptions
from .pipeline import ends_in_flight, in_flight, interleaved_cost, model_chunks
from .strategy import ZERO, Strategy
from .template import BATCH, DEGREE, MICRO, Template, Use, training_template
from .train_step import (
    DEFAULT_OVERLAP,
    OVERLAPS,
    STAGES,
    Term,
    device_params,
    head_params,
    matrix_rate,
    op_overlapped,
    optimizer_time,
    phase_terms,
    stage_extras,
    training_ops,
    with_peak,
)
from .zero import zero_states

PHASES = ("forward", "backward")
B_GLOBAL = sp.Symbol("B", positive=True)


@dataclass(frozen=True, repr=False)
class Plan(tb.RichView):
    """A plan's results; every value exact (SymPy), per device unless said otherwise."""

    mode: str
    model: str
    chip: str
    mesh: str
    strategy: str
    devices: Expr
    batch: Expr
    context: Expr
    memory: Mapping[str, Expr]
    capacity: Expr
    terms: Mapping[str, Term]
    t_lower: Expr
    t_upper: Expr
    bound: str
    critical_batch: Expr | None
    critical_note: str
    uses: tuple[tuple[Use, str, Expr, Expr], ...]
    assumptions: tuple[str, ...]
    extra: Mapping[str, object] = field(default_factory=dict)
    critical_terms: Mapping[str, Expr] = field(default_factory=dict)
    predicted: Expr | None = None
    overlap: str = DEFAULT_OVERLAP

    @property
    def fits(self) -> bool:
        return bool(self.memory["total"] <= self.capacity)

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [(f"memory: {k}, bytes", v)
                                       for k, v in self.memory.items()]
        rows.append(("capacity, bytes", self.capacity))
        rows += [(f"term: {k}, s", t.time) for k, t in self.terms.items()]
        rows += [("T_lower, s", self.t_lower), ("T_upper, s", self.t_upper),
                 ("bound", self.bound)]
        if self.critical_batch is not None:
            rows.append(("critical batch per chip", self.critical_batch))
        title = (f"{self.mode} {self.model} on {self.mesh} {self.chip}, {self.strategy}, "
                 f"batch {self.batch}")
        return title, tb.key_values(rows)


def degrees_of(strategy: Strategy, m: Mesh) -> dict[sp.Symbol, Expr]:
    """The template's degree symbols at this mesh and strategy."""
    def size(kind: str) -> Expr:
        return sp.Mul(*(m.axis(a).size for a in strategy.axes(kind)))
    zero = strategy.zero_kind
    return {DEGREE["dp"]: size("dp"), DEGREE["zero"]: size(zero) if zero else sp.S.One,
            DEGREE["tp"]: size("tp"), DEGREE["pp"]: size("pp"), DEGREE["ep"]: size("ep")}


def kinds_of(strategy: Strategy) -> tuple[str, ...]:
    return tuple(sorted({"zero" if k in ZERO else k for k in strategy.kinds}))


def axes_for(strategy: Strategy, kind: str) -> tuple[str, ...]:
    return strategy.axes(strategy.zero_kind or "zero3") if kind == "zero" else \
        strategy.axes(kind)


TRAINING_KERNEL = Kernel("materialised")  # a training step's attention unless chosen


@records(t_lower=TIME, t_upper=TIME, predicted=TIME, memory=CAPACITY, capacity=CAPACITY,
         editions=True, tries=({"memory": "weights"}, {"memory": "states"}),
         base={"memory": "training"})
def train(cfg: ModelConfig, m: Mesh, strategy: Strategy, *, batch: int | Expr,
          context: int, options: StepOptions = DEFAULT_OPTIONS,
          optimizer: str = "adam-mixed", peak: Expr | None = None,
          template: Template | None = None, symbolic: bool = False,
          conventions: Conventions | None = None) -> Plan:
    """The training plan of ``cfg`` on mesh ``m`` under ``strategy`` for ``batch`` sequences
    of ``context`` tokens per step, built under ``options`` (``plans.options``; a serving
    choice is refused, the attention kernel is materialised unless ``options.kernel`` says
    otherwise), whose fields are named below: in ``microbatches`` per replica (or
    microbatches of ``microbatch`` sequences: gradient accumulation for any strategy, a pipeline's
    schedule with a pipeline axis). ``peak`` replaces the chip's bf16 peak (a symbol for a
    law); ``symbolic`` keeps the model's sizes as letters; ``offload`` names the parts kept
    in host memory (:mod:`symroof.plans.offload`); ``in_network`` has every AllReduce over
    one switched network reduce in the switch (:mod:`symroof.parallel.in_network`);
    ``choices`` costs every collective as a text does (``core.choices``: the leading term in
    the axis size, no latency, the one-way link figure; ``edition``, the chip table's other
    edition of the chip's figures, its peaks, HBM and links: ``Mesh.under``, stated in the
    assumptions); ``interleave`` runs v model chunks
    per pipeline stage (interleaved 1F1B, Narayanan et al., 2021, section 2.2.2): the bubble
    shrinks to (p - 1)/(v m) of the busy time, a stage sends each microbatch on v times (once
    per chunk), and the first stage holds 1 + (p - 1)/(p v) times the activations
    (Korthikanti et al., 2022, section 4.2.3). ``overlap`` (``train_step.OVERLAPS``) is the
    rule of ``predicted``, the step's time at ``efficiency``: ``phase`` (T_lower's rule),
    ``op`` (a serving step's) or ``none`` (T_upper's). ``conventions``
    (``plans.conventions``, e.g. Megatron-LM's) brings the choices ``rerun_collectives``
    and ``pipeline_sends`` and is stated in the assumptions; its ``optimizer`` and
    ``overlap`` are the caller's to apply (``PlanRequest`` does, unless the user set them).
    Its choices' ``memory`` is what a text counts of its memory's total (the parts as they
    are): every part (``training``, the plan's own, or ``all``), the weights alone
    (``weights``), or the weights, gradients and optimizer state (``states``)."""
    options.refuse(SERVING_ONLY, "a training plan")
    kernel = options.kernel_or(TRAINING_KERNEL)
    if (kernel.causal, kernel.activations) != (False, "hbm"):
        raise InputError("a training step's kernels take an attention choice only (its "
                         "attention FLOPs dense, its activations through HBM), got "
                         f"{kernel.describe()}", "kernel")
    attention, recompute, efficiency = kernel.attention, options.recompute, options.efficiency
    microbatches, microbatch, interleave = (options.microbatches, options.microbatch,
                                            options.interleave)
    offload, in_network, choices = options.offload, options.in_network, options.choices
    overlap = options.overlap or DEFAULT_OVERLAP
    if overlap not in OVERLAPS:
        raise InputError(f"overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}",
                         "overlap")
    edition = choices.edition  # another edition of the chip table: its figures, links too
    if edition:
        m, choices = m.under(choices), choices.with_(edition="")
    # what a text counts of the memory: a choice of the plan's total, not of its steps
    counted, choices = PLAN_COUNTS[choices.memory], choices.with_(memory="all")
    choices = choices.within(COLLECTIVE_CHOICES, "a training plan")
    strategy.check_mesh(m.axes)
    if len(strategy.axes("pp")) > 1:
        raise InputError("a pipeline runs along one axis, got pp="
                         + "+".join(strategy.axes("pp")), "strategy")
    deg = degrees_of(strategy, m)
    check_degrees(cfg, **{k: int(deg[DEGREE[k]]) for k in ("tp", "pp", "ep")
                          if deg[DEGREE[k]].is_Integer})
    pp = deg[DEGREE["pp"]]
    replicas = deg[DEGREE["dp"]] * deg[DEGREE["zero"]] * deg[DEGREE["ep"]]
    micro = _microbatches(batch, replicas, pp, microbatches, microbatch)
    chunks = model_chunks(cfg.name, cfg.layers, interleave, pp, micro)
    w, g, o, why = plan_states(optimizer)
    per = {"weights": w, "gradients": g, "optimizer": o}
    t = template or training_template(cfg, context=context, kinds=kinds_of(strategy),
                                      zero_stage=strategy.zero_stage,
                                      sequence_parallel=strategy.sequence_parallel,
                                      bytes_per_param=per, symbolic=symbolic,
                                      attention=attention)
    n = exact(m.devices)
    B = exact(batch)
    if B.is_number and (not B.is_Integer or B < 1 or B % (replicas * micro) != 0):
        raise InputError(f"a batch of {B} sequences does not split into {replicas} replicas "
                         f"x {micro} microbatches", "batch")
    subs = {**deg, MICRO: micro}
    sums: dict[str, Expr] = {}  # the ops' FLOPs and bytes, and each phase's per-op time
    sym, uses, where = _terms(t, m, strategy, subs, B_GLOBAL / (replicas * micro), B_GLOBAL,
                              n, peak, cfg, recompute, efficiency, symbolic, in_network,
                              attention, choices, chunks, sums, overlap == "op",
                              conventions)
    largest, by_stage = stage_memory(t, cfg, strategy, subs, B / (replicas * micro), per,
                                     recompute, context, pp, micro, attention, chunks)
    tier = None
    if offload:  # on the stage the plan's memory is
        from .offload import host_tier
        tier = host_tier(offload, _memory(t, cfg, strategy, subs,
                                          B_GLOBAL / (replicas * micro), per, recompute,
                                          context, pp, micro, attention, chunks,
                                          stage=largest),
                         per, m.chip, cfg.layers / pp, micro,
                         in_flight(pp, micro, chunks, largest), efficiency)
        sym.update(tier.terms)
    by_term, note = _critical(sym, B_GLOBAL, n, context)
    crit = None if note or not by_term else sp.Max(*by_term.values())
    terms = {k: Term(x.name, {ph: v.subs(B_GLOBAL, B) for ph, v in x.phases.items()}, x.detail)
             for k, x in sym.items()}
    uses = [(u, name, time.subs(B_GLOBAL, B), size.subs(B_GLOBAL, B))
            for u, name, time, size in uses]
    stages = {k: v.subs(B_GLOBAL, B) for k, v in sums.items()
              if k.startswith(("first ", "last ")) or k.endswith(" per op")}
    lower, upper, bound, bubble = _bounds(terms, pp, micro, chunks, stages)
    predicted = {"phase": lower, "none": upper}.get(overlap)
    if predicted is None:  # per op: the ops' overlapped times, then every other term serial
        predicted = pipelined(terms, pp, micro, chunks, stages, "op")[0]
    if bubble != 0:
        terms["pipeline bubble"] = Term(
            "pipeline bubble", {"step": bubble},
            "the busiest stage idle: 1F1B's fill and drain through the other stages, "
            + ("(p - 1)/(m + p - 1) of the step for alike stages" if chunks == 1 else
               f"interleaved over {chunks} chunks, (p - 1)/(v m + p - 1) of the step for "
               "alike stages") + "; the last stage runs the output head, the first the "
            "embedding")
    memory = by_stage[largest]
    # once per step, each stage after its last backward: the stage holding the most states
    opt = sp.Max(*(optimizer_time(x, m.chip, efficiency) for x in by_stage.values()))
    terms["optimizer step"] = Term("optimizer step", {"step": opt},
                                   "reads the gradients and the optimizer state, writes the "
                                   "weights and the state, once per step")
    lower, upper, predicted = lower + opt, upper + opt, predicted + opt
    if tier is not None:
        memory = {k: sp.sympify(v).subs(B_GLOBAL, B) for k, v in tier.memory.items()}
    if counted is not None:  # a text's total: some of the parts (the parts as they are)
        memory = {**memory, "total": sp.Add(*(memory[k] for k in counted))}
    rate = peak if peak is not None else matrix_rate(m.chip)
    mfu = predicted_mfu(cfg, B * context, lower, n, rate, context) \
        if not symbolic and lower.is_number else None
    assumptions = (
        f"optimizer {optimizer}: {why}" + (
            "; no gradient buffer held, the gradients still reduced over the data axes in "
            "the weights' dtype" if g == 0 else ""),
        f"activations: {recomputation(recompute)}, bf16{_kernel(attention)}; 1F1B keeps "
        "min(p, m) microbatches in flight on the first stage" + (
            f", times 1 + (p - 1)/(p v) interleaved over v = {chunks} chunks per stage, "
            "and min((v - 1) p + 1, v m)/v on the last (Megatron-LM's warm-up)"
            if chunks != 1 else ", 1 on the last") if pp != 1 else
        f"activations: {recomputation(recompute)}, bf16{_kernel(attention)}",
        _outside_note(cfg, strategy, pp, chunks),
        "each comm term overlaps the compute of its phase in T_lower (none does in T_upper)",
        f"overlap {overlap} (predicted): {OVERLAPS[overlap]}",
        "the optimizer step once per step after the backward, serial in every bound: it "
        "reads the gradients and the optimizer state and writes the weights and the state "
        "(bytes as the memory account holds them before any offload; an offloaded "
        "optimizer's update on the host is charged the same)" + (
            "; each stage updates its own after its last backward, the step waiting for "
            "the stage holding the most states" if pp != 1 else ""),
        *(["pipeline stages of 1/p of the layers each, the first also running the embedding "
           "and the last the final norm and the output head, each with its collectives (the "
           "head's tensor-parallel ones, the head block's gradient reductions): the step is "
           "the last stage's m microbatches back to back and the fill and drain through the "
           "others",
           _stage_note(cfg, largest, by_stage)] if pp != 1 else []),
        *([f"gradient accumulation over {micro} microbatches: the data-parallel reductions "
           "and ZeRO gathers run once per step"] if micro != 1 and pp == 1 else []),
        "compute and HBM traffic from the device's ops, each op's engine roofline: the "
        "forward ops of its shard (a serving prefill's; replicated norms counted on every "
        "tensor rank, norms on the vector unit), the backward as each op's input-gradient "
        "and weight-gradient ops, recomputation's reruns",
        f"efficiency: {efficiency.describe()}",
        *([conventions.override({"overlap": overlap, "optimizer": optimizer}).describe()]
          if conventions is not None else []),
        *(tier.notes if tier else ()), *where,
        *([f"collectives as a text costs them: {choices.describe()} (leaves out "
           f"{', '.join(choices.drops()) or 'nothing'})"] if choices != EXACT else []),
        *([f"edition={edition}: the chip figures of that edition of the table"]
          if edition else []),
        *([f"memory as a text counts it: {TRAINING_COUNTED[options.choices.memory]}"]
          if counted is not None else []),
        *m.assumptions)
    return Plan("train", cfg.name, m.chip.name, m.spec or _mesh_text(m), str(strategy),
                n, B, exact(context), memory, m.chip.capacity("hbm"), terms,
                lower, upper, bound, crit, note, tuple(uses), assumptions,
                {"microbatches": micro, "chunks": chunks, "replicas": replicas, "mfu": mfu,
                 "recompute": recompute,
                 "memory_stage": largest, "memory_stages": by_stage if pp != 1 else {},
                 "flops": sums["flops"].subs(B_GLOBAL, B),
                 "bytes": sums["bytes"].subs(B_GLOBAL, B)},
                by_term, predicted, overlap)


def _stage_note(cfg: ModelConfig, largest: str, by_stage: Mapping[str, Mapping[str, Expr]],
                ) -> str:
    """What the memory account of each end stage holds, and which the plan's memory is."""
    sizes = ", ".join(f"the {k} {si(v['total'], 'B')}" for k, v in by_stage.items()
                      if v["total"].is_number)
    return (f"memory per device: the {largest} stage's, the larger account"
            + (f" ({sizes})" if sizes else "") + "; the first stage holds its layers, the "
            "word embedding" + (" and the learned positions" if cfg.positions == "learned" else "")
            + " and the most microbatches in flight, the last its layers, the final norm and "
            "the output head, their inputs and the logits" + (
                ": with tied embeddings its own copy of the word embeddings, as Megatron-LM "
                "keeps one on the last stage" if cfg.tied_embeddings else ""))


def _outside_note(cfg: ModelConfig, strategy: Strategy, pp: Expr, chunks: int) -> str:
    """What the memory's ``activations_outside_layers`` holds, and on which stage."""
    mask = "the embedding's dropout mask (1 byte an element)" if cfg.dropout else \
        "no embedding activation (no dropout; its output is the first layer's input)"
    head = "the final norm's and the output head's inputs (bf16) and the logits (fp32)"
    where = (f"{mask} on the first stage for min(p, m) microbatches"
             + (" (interleaved: min(2 p, m), Megatron-LM's schedule)" if chunks != 1 else "")
             + f", {head} on the last for 1") if pp != 1 else \
        f"{mask}, {head}, on the one stage for 1 microbatch"
    return ("activations outside the layers (Korthikanti et al. 2022, section 4.3), under "
            f"every recomputation policy: {where}; the logits split over the tensor ranks "
            "with the vocabulary, the rest " + (
                "over them with sequence parallelism" if strategy.sequence_parallel else
                "whole on every rank (no sequence parallelism)"))


def _kernel(attention: str) -> str:
    return "" if attention == "materialised" else (
        f", {attention} attention (the softmax statistics kept, not the scores, which stay on "
        "chip)")


def _microbatches(batch: int | Expr, replicas: Expr, pp: Expr, count: int | None,
                  size: int | None) -> Expr:
    """Microbatches per replica: given, or from a microbatch size, else 4 per pipeline
    stage (1 without a pipeline)."""
    if count and size:
        raise InputError("give the microbatches' number or their size, not both",
                         "microbatch")
    if size:
        B = exact(batch)
        if B.is_number and B % (replicas * size) != 0:
            raise InputError(f"a batch of {B} sequences does not split into {replicas} "
                             f"replicas x microbatches of {size}", "microbatch")
        return exact(B / (replicas * size))
    return sp.Integer(count) if count else (4 * pp if pp != 1 else sp.S.One)


def _mesh_text(m: Mesh) -> str:
    return ",".join(f"{k}={a.size}" for k, a in m.axes.items())


def _terms(t: Template, m: Mesh, strategy: Strategy, subs: dict[sp.Symbol, Expr],
           b: Expr, B: Expr, n: Expr, rate: Expr | None, cfg: ModelConfig, recompute: str,
           eff: Efficiency, symbolic: bool = False, in_network: bool = False,
           attention: str = "materialised", choices: Choices = EXACT, chunks: int = 1,
           sums: dict[str, Expr] | None = None, per_op: bool = False,
           conventions: Conventions | None = None,
           ) -> tuple[dict[str, Term], list[tuple[Use, str, Expr, Expr]], list[str]]:
    T = t.context
    tp, pp, ep = (subs[DEGREE[k]] for k in ("tp", "pp", "ep"))
    if not all(x.is_Integer for x in (tp, pp, ep)):
        raise InputError("tensor, pipeline and expert degrees must be numbers (a symbolic "
                         "axis size is for data-parallel kinds)", "mesh")
    if symbolic and tp != 1:
        raise InputError("a tensor-parallel step is built from the model's numbers, not its "
                         "letters", "symbolic")
    ops = training_ops(cfg, batch=b, context=T, tp=int(tp), pp=int(pp), ep=int(ep),
                       sequence_parallel=strategy.sequence_parallel, attention=attention,
                       recompute=recompute, symbolic=symbolic,
                       elementwise=conventions is not None and conventions.flag(
                           "elementwise_kernels"))
    the_chip = m.chip if rate is None else with_peak(m.chip, rate)
    seen: dict[Any, dict[str, Expr]] = {}  # each op's times, built once for every sum below
    by_phase = phase_terms(ops, the_chip, eff, seen)
    micro = subs[MICRO]
    flops = micro * sp.Add(*(s.total().flops for s in ops.values()))
    if sums is not None:  # what the plan reports beside the terms
        sums["flops"] = sp.expand(flops)
        sums["bytes"] = sp.expand(micro * sp.Add(*(s.total().bytes() for s in ops.values())))
        if per_op:
            overlapped = op_overlapped(ops, the_chip, eff, seen)
            sums.update({f"{ph} per op": micro * overlapped[ph] for ph in PHASES})
        if pp != 1:  # what only the first or the last stage runs, by term and phase
            for where, part in stage_extras(ops).items():
                timed = phase_terms(part, the_chip, eff, seen)
                for ph in PHASES:
                    for k, v in timed[ph].items():
                        sums[f"{where} {k} {ph}"] = micro * v
                if per_op:
                    alone = op_overlapped(part, the_chip, eff, seen)
                    sums.update({f"{where} per op {ph}": micro * alone[ph] for ph in PHASES})
    detail = {"compute": f"{sp.sstr(sp.expand(flops))} FLOPs per device: the forward ops of its "
                         "shard, their input- and weight-gradient ops"
                         + (f" and {recompute} recomputation's reruns"
                            if recompute != "none" else "") + " (engine rooflines)",
              "hbm": "the HBM bytes of the same ops per device (the forward's are a serving "
                     "prefill's)"}
    terms = {k: Term(k, {ph: micro * by_phase[ph].get(k, sp.S.Zero) for ph in PHASES},
                     detail.get(k, ""))
             for k in dict.fromkeys(k for ph in PHASES for k in by_phase[ph])}
    uses: list[tuple[Use, str, Expr, Expr]] = []
    notes: set[str] = set()
    reruns = conventions is not None and conventions.flag("rerun_collectives")
    scatter = conventions is not None and conventions.flag("pipeline_sends")
    given = (*t.uses, *(_partitioned(t, cfg, recompute, attention)
                        if strategy.partition_activations else ()))
    for u in _with_reruns(given, recompute, strategy.sequence_parallel) if reruns else given:
        axes = axes_for(strategy, u.kind)
        if not axes:
            continue
        nbytes = sp.expand(u.nbytes.subs(BATCH, b).subs(subs))
        count = exact(u.per_step).subs(subs)
        if u.kind == "pp" and u.block not in HEAD_BLOCKS:  # a stage sends each chunk's
            # output on: v sends per microbatch
            count = count * chunks
            if scatter and not strategy.sequence_parallel:  # split over the tensor ranks
                nbytes = nbytes / tp
        how = (in_switch_algorithm([m.axis(a) for a in axes]) or "ring") \
            if in_network and u.collective == "allreduce" else "ring"
        coll = collective(u.collective, nbytes, list(axes), m, how)
        if choices != EXACT:
            coll = coll.under(choices)
        links = sorted(coll.bandwidths())
        name = f"{_label(strategy, u.kind)} over {'+'.join(axes)} ({', '.join(links)})"
        if in_network and u.collective == "allreduce":
            notes.add(f"{name}: AllReduce " + (f"reduced in the switch ({how})" if how != "ring"
                                               else "as a ring (not one switched network)"))
        f = min((eff.of(x) for x in (*links, name.split(' ')[0])), default=sp.S.One)
        latency = coll.latency_time
        unknown = {s for s in latency.free_symbols if s.name.startswith("alpha_")}
        for sym in unknown:
            notes.add(f"{sym}: a per-hop latency no source gives, taken as 0")
        each = coll.bandwidth_time / f + latency.subs({s: 0 for s in unknown})
        uses.append((replace(u, per_step=count), name, count * each, nbytes))
        term = terms.get(name) or Term(name, {}, "")
        phases = dict(term.phases)
        phases[u.phase] = phases.get(u.phase, sp.S.Zero) + count * each
        terms[name] = Term(name, phases, "")
        runs = HEAD_BLOCKS.get(u.block)
        if sums is not None and pp != 1 and runs:  # only the stage that runs it
            key = f"{runs} {name} {u.phase}"
            sums[key] = sums.get(key, sp.S.Zero) + count * each
    return terms, uses, sorted(notes)


# the head block's parts by the pipeline stage that runs them: the output head's (and the
# final norm's) collectives on the last stage, the embedding's on the first
HEAD_BLOCKS = {"head": "last", "embedding": "first"}


def _partitioned(t: Template, cfg: ModelConfig, recompute: str,
                 attention: str = "materialised") -> list[Use]:
    """ZeRO-R's partitioned activation checkpoints (Pa; Rajbhandari et al. 2020, section
    6.1): the checkpoints tensor parallelism leaves whole on every rank (those D wide) are
    partitioned over the tensor axes, and each layer's are all-gathered for the backward."""
    sym, num = _kept(cfg, recompute, int(t.context), attention)
    d_wide = {sp.Symbol("D", positive=True)}
    pp = DEGREE["pp"]
    out = []
    for blk in t.step.blocks:
        if blk.name == "head":
            continue
        kind = "dense" if cfg.moe is None or blk.name == "dense layer" else "moe"
        parts_sym, parts = getattr(sym, kind), getattr(num, kind)
        whole = sp.Add(*(v for n, v in parts.items() if parts_sym[n].free_symbols <= d_wide))
        if whole != 0:
            out.append(Use("tp", "allgather", "partitioned activation checkpoints (ZeRO-R), "
                           "gathered for the backward", blk.name, "backward", "layer",
                           sp.S.One, blk.count / pp * MICRO, t.step.tokens * whole))
    return out


def _kept(cfg: ModelConfig, recompute: str, context: int,
          attention: str = "materialised") -> tuple[Any, Any]:
    """The activations kept per token under ``recompute`` (a mode or a checkpoint
    policy), in the config's letters and in numbers."""
    mode, tensors = checkpoint_policy(recompute)
    if mode in CHECKPOINTS:
        return (checkpointed_bytes(cfg, mode, symbolic=True, tensors=tensors),
                checkpointed_bytes(cfg, mode, tensors=tensors))
    return (activation_bytes(cfg, recompute, context=context, symbolic=True,
                             attention=attention),
            activation_bytes(cfg, recompute, context=context, attention=attention))


def _with_reruns(uses: tuple[Use, ...], recompute: str, sequence_parallel: bool,
                 ) -> list[Use]:
    """``uses`` and the tensor-parallel collectives a rerun repeats in the backward: full
    recomputation's rerun of each forward one, and with sequence parallelism each
    column-parallel input gathered again (only its sequence shard was kept)."""
    out = list(uses)
    for u in uses:
        if u.kind != "tp" or u.scope != "layer" or u.phase != "forward":
            continue
        if recompute == "full" or recompute.startswith("k_tensors_of_D"):
            out.append(replace(u, phase="backward", what=f"{u.what}, rerun by the "
                               "recomputation"))
        if sequence_parallel and u.collective == "allgather":
            out.append(replace(u, phase="backward", what=f"{u.what}, gathered again for the "
                               "weight gradient"))
    return out


def _label(strategy: Strategy, kind: str) -> str:
    if kind == "zero":
        zk = strategy.zero_kind or "zero3"
        return "fsdp" if zk == "zero3" and strategy.fsdp_spelling else zk
    return kind


def _bounds(terms: Mapping[str, Term], pp: Expr, micro: Expr, chunks: int,
            stages: Mapping[str, Expr]) -> tuple[Expr, Expr, str, Expr]:
    """T_lower and T_upper (``pipelined`` under ``phase`` and ``none``), the bound and
    T_lower's bubble: the busiest stage's idle time."""
    lower, busy = pipelined(terms, pp, micro, chunks, stages, "phase")
    upper, _ = pipelined(terms, pp, micro, chunks, stages, "none")
    return lower, upper, bound_of(terms), lower - busy


def pipelined(terms: Mapping[str, Term], pp: Expr, micro: Expr, chunks: int,
              stages: Mapping[str, Expr], rule: str) -> tuple[Expr, Expr]:
    """The step's makespan under the overlap ``rule`` and the busiest stage's busy time.

    ``terms`` are the busiest stage's, which runs the embedding (the first stage's) and the
    output head (the last stage's) beside its layers (``train_step.stage_extras``);
    ``stages`` holds what each of the two alone adds, by term and phase (``first compute
    forward``; the head block's collectives too, ``last tp over Y (nvlink) backward``), and
    for ``op`` each phase's ops' overlapped sum (``forward per op``) and what each of the
    two adds to it (``first per op forward``). A phase takes its longest
    term (``phase``), every term one after another (``none``), or its ops' overlapped
    times and then every other term (``op``). Without a pipeline the one stage runs
    everything: the 1F1B makespan of it (``pipeline.interleaved_cost``). With one, when the
    last stage adds at least what the first adds (its output head outweighs the embedding:
    every plan of a real model), the last stage is the busiest: it runs its m microbatches
    back to back, the first microbatch's forward reaches it through p - 1 chunks of the
    other stages and the last backward leaves through p - 1, the first stage's extra on
    that path once each way; so the makespan is the 1F1B makespan of the layers alone plus
    the last stage's extra m times and the first's once. Without interleaving the played
    schedule gives the same (``pipeline.played_makespan``, a law in
    tests/test_pipeline_stages.py); interleaved, the same critical path is taken, not
    played. Otherwise every stage is taken as the busiest one (an upper bound of that
    case).
    """
    def time(ph: str, drop: tuple[str, ...]) -> Expr:
        def own(k: str, x: Term) -> Expr:  # the term less what the dropped stages alone run
            return x.phases.get(ph, sp.S.Zero) - sp.Add(
                *(stages.get(f"{d} {k} {ph}", sp.S.Zero) for d in drop))
        if rule == "op":
            ops = stages.get(f"{ph} per op", sp.S.Zero) - sp.Add(
                *(stages.get(f"{d} per op {ph}", sp.S.Zero) for d in drop))
            return ops + sp.Add(*(own(k, x) for k, x in terms.items()
                                  if k not in ("compute", "hbm")))
        each = [own(k, x) for k, x in terms.items()]
        return sp.Max(*each) if rule == "phase" else sp.Add(*each)

    def makespan(drop: tuple[str, ...]) -> Expr:
        at = {ph: time(ph, drop) for ph in PHASES}
        return interleaved_cost(pp, micro, chunks, at["forward"] / micro,
                                at["backward"] / micro).makespan

    whole = {ph: time(ph, ()) for ph in PHASES}
    if pp != 1 and any(k.startswith(("first ", "last ")) for k in stages):
        middle = {ph: time(ph, ("first", "last")) for ph in PHASES}
        last = {ph: time(ph, ("first",)) for ph in PHASES}
        first = {ph: time(ph, ("last",)) for ph in PHASES}
        adds = {w: sp.Add(*(x[ph] - middle[ph] for ph in PHASES))
                for w, x in (("first", first), ("last", last))}
        if (adds["last"] - adds["first"]).is_nonnegative:
            return (makespan(("first", "last")) + adds["last"] + adds["first"] / micro,
                    sp.Add(*last.values()))
    return makespan(()), sp.Add(*whole.values())


def bound_by_phase(terms: Mapping[str, Term]) -> dict[str, str]:
    """The term that sets each phase's time in T_lower (``engine.rooflines.binding``:
    compute wins ties, undetermined while a term is symbolic)."""
    if not all(x.time.is_number for x in terms.values()):
        return dict.fromkeys(PHASES, "undetermined")
    return {ph: binding({x.name: x.phases.get(ph, sp.S.Zero) for x in terms.values()})
            for ph in PHASES}


def bound_of(terms: Mapping[str, Term]) -> str:
    """The step's bound: the term binding the phase that takes longer in T_lower."""
    by = bound_by_phase(terms)
    if "undetermined" in by.values():
        return "undetermined"
    longest = max(PHASES, key=lambda ph: terms[by[ph]].phases.get(ph, 0))
    return by[longest]


# what a text counts of a training plan's memory (the ``memory`` choice): the parts
# ``models.memory.TRAINING_COUNTS`` names, by the plan's memory keys (None: every part, the
# plan's own total)
_PLAN_KEYS = {"weights": "weights", "gradients": "gradients", "optimizer state": "optimizer",
              "activations": "activations"}
PLAN_COUNTS: dict[str, tuple[str, ...] | None] = {
    k: None if set(parts) == set(ALL_PARTS) else tuple(_PLAN_KEYS[p] for p in parts)
    for k, parts in TRAINING_COUNTS.items()}


def _memory(t: Template, cfg: ModelConfig, strategy: Strategy, subs: dict[sp.Symbol, Expr],
            b: Expr, per: dict[str, int], recompute: str, context: int, pp: Expr,
            micro: Expr, attention: str = "materialised", chunks: int = 1,
            held: Expr | None = None, stage: str = "first",
            ends: tuple[Expr, Expr] | None = None) -> dict[str, Expr]:
    """The memory account of one device on pipeline stage ``stage`` (``first`` or
    ``last``; without a pipeline the one stage, whichever is named): the states of the
    parameters it holds (``held_params``, or ``held``), the activations of its 1/p of
    the layers for the microbatches in flight on it (``pipeline.in_flight``) and those
    outside the layers (``models.memory.outside_layer_bytes``, Korthikanti et al. 2022,
    section 4.3) that the stage holds, for the microbatches ``pipeline.ends_in_flight``
    counts (or ``ends``: the embedding's, the head's), under every recomputation policy
    (a policy reruns the layers only). The paper counts them with sequence parallelism,
    each split over the tensor ranks: here the final norm's and the output head's inputs
    and the embedding's dropout mask are split so only with it (else whole on every rank,
    as a layer's D-wide tensors are), the fp32 logits always (the head is split over the
    vocabulary)."""
    if held is None:  # the parameters a device holds (``held_params``)
        held = held_params(t, cfg, subs, stage)
    states = zero_states(held, subs[DEGREE["zero"]], strategy.zero_stage, per)
    tp = subs[DEGREE["tp"]]
    symbolic, numeric = _kept(cfg, recompute, context, attention)
    per_token = sp.S.Zero
    for kind, layers in (("dense", numeric.layers_dense), ("moe", numeric.layers_moe)):
        parts_sym = getattr(symbolic, kind)
        for name, value in getattr(numeric, kind).items():
            d_only = parts_sym[name].free_symbols <= {sp.Symbol("D", positive=True)}
            split = tp if (strategy.sequence_parallel or strategy.partition_activations
                           or not d_only) else 1
            per_token += layers * value / split
    activations = sp.expand(per_token / pp * in_flight(pp, micro, chunks, stage) * b
                            * context)
    held_ends = dict(zip(STAGES, ends or ends_in_flight(pp, micro, chunks, stage),
                         strict=True))
    outside = sp.S.Zero
    for name, value in outside_layer_bytes(cfg).items():
        split = tp if strategy.sequence_parallel or name in VOCABULARY_PARALLEL else 1
        outside += held_ends[OUTSIDE_STAGES[name]] * value / split
    out = {"weights": states["weights"], "gradients": states["gradients"],
           "optimizer": states["optimizer"], "activations": activations,
           OUTSIDE_PART: sp.expand(outside * b * context), "kv_cache": sp.S.Zero}
    out["total"] = sp.Add(*out.values())
    return out


def stage_memory(t: Template, cfg: ModelConfig, strategy: Strategy,
                 subs: dict[sp.Symbol, Expr], b: Expr, per: dict[str, int], recompute: str,
                 context: int, pp: Expr, micro: Expr, attention: str = "materialised",
                 chunks: int = 1) -> tuple[str, dict[str, dict[str, Expr]]]:
    """Each pipeline stage's memory account whose memory differs from the others' (the
    first and the last: ``_memory``; a stage between them holds what the first does less
    the embedding and fewer microbatches in flight) and the one holding the most, the
    plan's memory (the first on a tie); without a pipeline, the one stage as ``first``."""
    by = {s: _memory(t, cfg, strategy, subs, b, per, recompute, context, pp, micro,
                     attention, chunks, stage=s)
          for s in (STAGES if pp != 1 else STAGES[:1])}
    largest = "last" if len(by) > 1 and (
        by["last"]["total"] - by["first"]["total"]).is_positive else "first"
    return largest, by


def held_params(t: Template, cfg: ModelConfig, subs: Mapping[sp.Symbol, Expr],
                stage: str = "both") -> Expr:
    """The parameters one device holds at the degrees ``subs`` on pipeline stage ``stage``
    (``train_step.head_params``: ``first``, ``last``, or ``both`` head-block parts on one
    stage; without a pipeline every stage holds both): a dense model's tensor shard's
    (``train_step.device_params``, the serving plan's count: KV heads replicated where the
    tensor ranks outnumber them, norms and row-parallel biases whole on every rank), else
    the template's, its head block taken as the stage holds it."""
    held = t.params_device.subs(subs)
    tp, pp = subs[DEGREE["tp"]], subs[DEGREE["pp"]]
    if cfg.moe is None and tp.is_Integer and pp.is_Integer and held.is_number:
        return device_params(cfg, int(tp), int(pp), stage)
    if stage != "both" and pp.is_Integer and pp != 1 and tp.is_Integer:
        head = head_params(cfg, int(tp), int(pp))
        return held - head["both"] + head[stage]
    return held


def _critical(terms: Mapping[str, Term], B: sp.Symbol, n: Expr,
              context: int) -> tuple[dict[str, Expr], str]:
    """Tokens per chip above which each term hides under the compute of its phase: the
    engine's ``critical_size`` of that compute against the term, in the global batch B
    (exact when the term is polynomial in B, else the exact first whole batch); a term
    that grows as fast as compute never hides (the note says which)."""
    out: dict[str, Expr] = {}
    never = ""
    for ph in PHASES:
        compute = terms["compute"].phases[ph]
        for x in terms.values():
            if x.name == "compute" or ph not in x.phases:
                continue
            c = critical_size(spelled(compute), {x.name: spelled(x.phases[ph])}, B)
            if c.relation is None:
                never = never or f"{c.reason} (the {ph} compute)"
                continue
            if c.value is None and not c.reason:
                continue
            batch = c.value if c.value is not None else sp.Integer(c.integer or 0)
            b_star = sp.cancel(batch * context / n)
            out[x.name] = b_star if x.name not in out else sp.Max(out[x.name], b_star)
    return out, never
