"""Choosing a training plan: every mesh a chip count factors into, every strategy on its
axes, evaluated at once with NumPy, the fastest that fits memory chosen and explained.

>>> from symroof.models import model
>>> from symroof.hardware.catalog import chip
>>> s = search(model("llama-2-7b"), chip("tpu-v5p"), 64, batch=256, context=2048)
>>> s.best.strategy == s.plan.strategy, s.feasible <= s.searched
(True, True)

The space: a torus's chips split over its dimensions (one mesh axis each, no larger than
the dimension; pods beyond one over DCN), a GPU system's over up to three axes (the last
ones in the NVLink domain). Each axis takes one kind (dp, zero1, zero2, zero3, tp with or
without sp, pp, ep for a MoE); axes of one kind join. Each strategy runs every schedule
``_schedules`` gives, every one ``training.train`` accepts: every microbatch count m the
replica's batch splits into (gradient accumulation, or a pipeline's 1F1B, m < p too), and a
pipeline's multiples of p also over every number of chunks per stage (interleaved 1F1B).
Every formula the search evaluates is the symbolic plan's (``symroof.plans.template``: bytes
of each collective in the degrees of parallelism; ``zero``, ``pipeline``: memory and
makespan), compiled once with ``lambdify``;
each collective's seconds per byte and latency on an axis come from
``symroof.parallel.collectives`` once per distinct axis. The chosen plan is then rebuilt
exactly by ``symroof.plans.training.train``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from ..core.errors import InputError
from ..engine.sweeps import to_numpy
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.counts import RECOMPUTE
from ..models.layers import Block, Kernel, StepOps, layer_ops
from ..models.memory import plan_states
from ..models.tensor_parallel import check_degrees
from ..parallel.mesh import Mesh, mesh
from .conventions import Conventions
from .efficiency import PEAK, Efficiency
from .factor import divisors, factorisations
from .options import StepOptions
from .pipeline import ends_in_flight, in_flight, interleaved_cost, pipeline_cost
from .search_terms import PARTS, Costs, offload_functions, signature
from .strategy import STRATEGY_KINDS, parse_strategy
from .template import BATCH, D_DP, D_EP, D_PP, D_TP, D_ZERO, MICRO, training_template
from .train_step import (
    DEFAULT_OVERLAP,
    OVERLAPS,
    STAGES,
    backward_ops,
    forward_ops,
    op_key,
    optimizer_time,
    phase_terms,
    stage_extras,
    with_megatron_kernels,
)
from .train_step import TRAIN_PHASES as PHASES
from .training import HEAD_BLOCKS, Plan, _with_reruns, held_params, train
from .zero import zero_states

LABELS = ("dp", "zero1", "zero2", "zero3", "tp", "pp", "ep")
DEGREES = (D_DP, D_ZERO, D_TP, D_PP, D_EP, MICRO)
HELD = sp.Symbol("held", positive=True)  # parameters a device holds (``held_params``)
V = sp.Symbol("V", positive=True)  # model chunks per pipeline stage
FLIGHT = sp.Symbol("flight", positive=True)  # microbatches in flight on a pipeline stage
# microbatches whose activations outside the layers a stage holds (``pipeline.ends_in_flight``)
ENDS = (sp.Symbol("embedding_held", nonnegative=True), sp.Symbol("head_held", nonnegative=True))


@dataclass(frozen=True)
class Candidate:
    """One mesh and strategy: ``spec`` for ``mesh()``, ``strategy`` for
    ``parse_strategy()``."""

    spec: str
    strategy: str
    degrees: tuple[int, int, int, int, int, int]
    stage: int
    sequence_parallel: bool
    kinds: dict[str, tuple[str, ...]]
    recompute: str = "none"
    chunks: int = 1


@dataclass(frozen=True)
class Choice:
    """A ranked candidate: its step time (T_lower), memory, and what binds it; ``predicted``
    its step time under the search's overlap rule (``training.Plan.predicted``, T_lower
    under ``phase``); ``chunks`` the model chunks per pipeline stage (its interleaving,
    ``StepOptions.interleave``)."""

    spec: str
    strategy: str
    t_lower: float
    memory: float
    bound: str
    microbatches: int = 1
    recompute: str = "none"
    predicted: float = 0.0
    chunks: int = 1


@dataclass(frozen=True)
class Search:
    """The search's outcome: the best plan (exact), the runner-up, and the counts."""

    chips: int
    searched: int
    feasible: int
    best: Choice
    runner_up: Choice | None
    plan: Plan
    ranking: tuple[Choice, ...]
    assumptions: tuple[str, ...]
    ties: int = 1
    slower: Choice | None = None
    every: Sequence[Choice] = ()
    overlap: str = DEFAULT_OVERLAP

    def explain(self) -> str:
        """Which term binds the chosen plan, and how much the runner-up loses (in the step
        time the candidates rank by: T_lower under ``phase``, else ``predicted``)."""
        by = "T_lower" if self.overlap == DEFAULT_OVERLAP else "predicted"
        text = (f"chosen: {self.best.strategy} on {self.best.spec}, {by} "
                f"{self.best.predicted:.4g} s, bound by {self.best.bound}")
        if self.ties > 1:
            at = "T_lower" if by == "T_lower" else "predicted time"
            text += (f"; {self.ties} plans tie at that {at}, ordered by T_upper (nothing "
                     f"overlapping), then memory")
        if self.runner_up is not None:
            loss = self.runner_up.predicted / self.best.predicted - 1
            text += (f"; runner-up {self.runner_up.strategy} on {self.runner_up.spec} "
                     f"(bound by {self.runner_up.bound}) loses {loss:.2%}")
        if self.slower is not None and self.slower is not self.runner_up:
            loss = self.slower.predicted / self.best.predicted - 1
            text += (f"; the fastest slower plan, {self.slower.strategy} on "
                     f"{self.slower.spec} (bound by {self.slower.bound}), loses {loss:.2%}")
        return text


def meshes(chip: Chip, n: int) -> Iterator[list[tuple[str, int, str]]]:
    """Mesh shapes for ``n`` chips: (axis name, size, ``@link`` or '') lists."""
    topo = chip.topology()
    if topo.kind == "torus":
        pod = topo.size
        pods, rest = divmod(n, pod) if n > pod else (1, 0)
        if rest:
            raise InputError(f"{n} chips are not a whole number of {pod}-chip pods",
                             "search")
        # one axis per torus dimension, or an axis spanning several (as the mesh allows)
        for k in range(1, len(topo.shape) + 1):
            for row in factorisations(n // pods, k).tolist():
                if k > 1 and 1 in row:
                    continue
                axes = [(name, size, "") for name, size in zip("XYZ", row, strict=False)]
                if pods > 1:
                    axes.insert(0, ("pods", pods, f"@{topo.scale_out or 'dcn'}"))
                try:
                    mesh(",".join(f"{a}={b}{c}" for a, b, c in axes), chip)
                except InputError:
                    continue
                yield axes
        return
    for k in (1, 2, 3):
        for row in factorisations(n, k).tolist():
            if k > 1 and 1 in row:
                continue
            yield [(name, size, "") for name, size in zip("XYZ", row, strict=False)]


def candidates(cfg: ModelConfig, axes: list[tuple[str, int, str]],
               batch: int) -> Iterator[Candidate]:
    """Every strategy on these axes that the model's sizes allow, with each of its
    microbatch counts and interleavings (``_schedules``)."""
    for variants, schedules in _strategies(cfg, axes, batch):
        for micro, chunks in schedules:
            for c in variants:
                yield replace(c, degrees=(*c.degrees[:5], micro), chunks=chunks)


def _strategies(cfg: ModelConfig, axes: list[tuple[str, int, str]], batch: int,
                ) -> Iterator[tuple[tuple[Candidate, ...], list[tuple[int, int]]]]:
    """Each strategy on these axes the model's sizes allow: its candidates without and with
    sequence parallelism (one microbatch, one chunk) and the (microbatches, chunks) it
    runs under."""
    labels = [x for x in LABELS if x != "ep" or cfg.moe is not None]
    spec = ",".join(f"{name}={size}{link}" for name, size, link in axes)
    for choice in itertools.product(labels, repeat=len(axes)):
        zeros = {c for c in choice if c.startswith("zero")}
        if len(zeros) > 1 or choice.count("pp") > 1:
            continue
        kinds: dict[str, tuple[str, ...]] = {}
        deg = dict.fromkeys(("dp", "zero", "tp", "pp", "ep"), 1)
        for (name, size, _), label in zip(axes, choice, strict=True):
            kinds[label] = (*kinds.get(label, ()), name)
            deg["zero" if label.startswith("zero") else label] *= size
        if not _allowed(cfg, deg, batch):
            continue
        schedules = _schedules(batch, deg["dp"] * deg["zero"] * deg["ep"], deg["pp"],
                               cfg.layers)
        if not schedules:
            continue
        stage = int(next(iter(zeros))[-1]) if zeros else 0
        text = ",".join(f"{'fsdp' if k == 'zero3' else k}={'+'.join(kinds[k])}"
                        for k in STRATEGY_KINDS if k in kinds)
        yield tuple(Candidate(spec, text + (",sp" if sp_on else ""),
                              (deg["dp"], deg["zero"], deg["tp"], deg["pp"], deg["ep"], 1),
                              stage, sp_on, kinds)
                    for sp_on in ((False, True) if "tp" in kinds else (False,))), schedules


def _schedules(batch: int, replicas: int, pp: int, layers: int) -> list[tuple[int, int]]:
    """(microbatches, chunks per stage) a strategy runs under: every pair ``training.train``
    accepts. The microbatches m are every count the replica's batch splits into (m divides
    it, as Megatron-LM asks: gradient accumulation without a pipeline; with one, fewer
    microbatches than stages too, the fill and drain then at least the steady state);
    a pipeline runs each m as plain 1F1B (v = 1), and where m is a multiple of the p stages
    (Megatron-LM's interleaved schedule runs microbatches in groups of p) over every
    number of chunks v > 1 the stage's layers split into (interleaved 1F1B, Narayanan et
    al., 2021; ``pipeline.model_chunks`` checks both).

    >>> _schedules(12, 2, 1, 32)
    [(1, 1), (2, 1), (3, 1), (6, 1)]
    >>> _schedules(24, 1, 8, 96)[4:10]
    [(6, 1), (8, 1), (8, 2), (8, 3), (8, 4), (8, 6)]
    """
    if batch % replicas:
        return []
    per = batch // replicas
    counts = divisors(per)
    chunks = [v for v in range(2, layers // pp + 1) if layers % (pp * v) == 0] \
        if pp != 1 else []
    return [(m, v) for m in counts for v in (1, *(chunks if m % pp == 0 else ()))]


def _allowed(cfg: ModelConfig, deg: dict[str, int], batch: int) -> bool:
    try:
        check_degrees(cfg, tp=deg["tp"], pp=deg["pp"], ep=deg["ep"])
    except InputError:
        return False
    return deg["dp"] * deg["zero"] * deg["ep"] <= batch


def search(cfg: ModelConfig, chip: Chip, n: int, *, batch: int, context: int,
           recompute: str = "none", optimizer: str = "adam-mixed",
           attention: str = "materialised",
           efficiency: Efficiency = PEAK,
           progress: Callable[[int, int], None] | None = None, in_network: bool = False,
           offload: tuple[str, ...] = (), overlap: str = DEFAULT_OVERLAP,
           conventions: Conventions | None = None) -> Search:
    """The fastest training plan of ``cfg`` on ``n`` chips that fits in memory, each
    candidate timed as ``training.train`` predicts it (``Plan.predicted``) under the
    ``overlap`` rule (``train_step.OVERLAPS``) at ``efficiency``, and ranked by that time;
    ``recompute="any"`` tries every recomputation policy with every candidate;
    ``in_network`` reduces every AllReduce over one switched network in the switch;
    ``offload`` keeps those parts in host memory (``plans.offload``) in every candidate;
    ``conventions`` (e.g. Megatron-LM's) brings the choices ``train`` takes from them
    (``rerun_collectives``, ``pipeline_sends``, ``elementwise_kernels``); its optimizer and
    overlap are the caller's to pass, as for ``train``."""
    if overlap not in OVERLAPS:
        raise InputError(f"overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}",
                         "overlap")
    per_op = overlap == "op"
    elementwise = conventions is not None and conventions.flag("elementwise_kernels")
    reruns = conventions is not None and conventions.flag("rerun_collectives")
    scatter = conventions is not None and conventions.flag("pipeline_sends")
    shapes = list(meshes(chip, n))
    # each strategy's candidates (without and with sequence parallelism) once, as bases;
    # a candidate is a base with a microbatch count and chunks per stage (``_schedules``),
    # in the order ``candidates`` yields them
    bases: list[Candidate] = []
    base_l: list[int] = []
    micro_l: list[int] = []
    chunks_l: list[int] = []
    for shape in shapes:
        for variants, schedules in _strategies(cfg, shape, batch):
            first, k = len(bases), len(variants)
            bases.extend(variants)
            for count, depth in schedules:
                base_l.extend(range(first, first + k))
                micro_l.extend((count,) * k)
                chunks_l.extend((depth,) * k)
    if not base_l:
        raise InputError(f"no mesh and strategy of {n} chips fits the model's sizes and a "
                         f"batch of {batch}", "search")
    w, g, o, why = plan_states(optimizer)
    per = {"weights": w, "gradients": g, "optimizer": o}
    step = layer_ops(cfg, "prefill", batch=BATCH, context=context, attention=attention)
    templates = {}
    for stage in (0, 1, 2, 3):
        for sp_on in (False, True):
            templates[stage, sp_on] = training_template(
                cfg, context=context, kinds=("dp", "zero", "tp", "pp", "ep"), zero_stage=stage,
                sequence_parallel=sp_on, bytes_per_param=per, step=step)
    costs = Costs(in_network, efficiency)
    pairs = sorted({(u.kind, u.collective) for t in templates.values() for u in t.uses})
    # each base's seconds per byte and latency of each pair, filled as lists (an item at a
    # time), then arrays
    byte_of = {pair: [0.0] * len(bases) for pair in pairs}
    latency_of = {pair: [0.0] * len(bases) for pair in pairs}
    signatures: dict[str, tuple[Mesh, dict[str, int]]] = {}
    ids: dict[tuple[Any, ...], int] = {}  # each distinct axis once, as a small number
    # the candidates of one mesh and one assignment of kinds to axes cost their collectives
    # alike (their microbatches and sequence parallelism aside): each such group once
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(bases):
        groups.setdefault((c.spec, *sorted(c.kinds.items())), []).append(i)
    tried = np.bincount(base_l, minlength=len(bases)).tolist()  # each base's candidates
    done, total = 0, len(base_l)
    for rows in groups.values():
        c = bases[rows[0]]
        if c.spec not in signatures:
            m = mesh(c.spec, chip)
            signatures[c.spec] = (m, {a: ids.setdefault(signature(m, a), len(ids))
                                      for a in m.axes})
        m, sig = signatures[c.spec]
        for kind, coll in pairs:
            axes = c.kinds.get(_label(kind, c), ())
            if axes:
                cost = costs.get(coll, axes, m, tuple(sig[a] for a in axes), _name(kind, c))
                for row in rows:
                    byte_of[kind, coll][row], latency_of[kind, coll][row] = cost
        now = done + sum(tried[row] for row in rows)
        if progress and now // 512 > done // 512:
            progress(now, total)
        done = now
    per_byte = {pair: np.array(v) for pair, v in byte_of.items()}
    latency = {pair: np.array(v) for pair, v in latency_of.items()}
    # each recomputation policy asked for: the same candidates again (comm costs shared);
    # each candidate's base, policy (its index in ``policies``), microbatches and chunks
    policies = RECOMPUTE if recompute == "any" else (recompute,)
    n_all = total * len(policies)
    base = np.tile(np.array(base_l), len(policies))
    pol = np.repeat(np.arange(len(policies)), total)
    chunks = np.tile(np.array(chunks_l, dtype=np.float64), len(policies))
    per_byte = {k: v[base] for k, v in per_byte.items()}
    latency = {k: v[base] for k, v in latency.items()}
    deg = np.vstack([np.array([c.degrees[:5] for c in bases], dtype=np.float64).T[:, base],
                     np.tile(np.array(micro_l, dtype=np.float64), len(policies))])
    replicas = deg[0] * deg[1] * deg[4]
    micro = deg[5]
    b_value = batch / (replicas * micro)
    # a device's compute and HBM time per phase: the training step's ops timed by the engine
    # (``train_step``), one polynomial in the microbatch per (tp, pp, ep, sequence
    # parallelism, recomputation) the candidates use, compiled for NumPy
    per_phase = {(ph, res): np.zeros(n_all) for ph in PHASES
                 for res in ("compute", "hbm")}
    # what only the first stage (the embedding) or the last (final norm, head) adds
    extra = {(w, ph, res): np.zeros(n_all) for w in ("first", "last") for ph in PHASES
             for res in ("compute", "hbm")}
    # under ``op``: each phase's ops, each op's compute overlapping its own memory traffic
    # (``train_step.op_overlapped``), in all and what each extra adds
    ops_time = {ph: np.zeros(n_all) for ph in PHASES}
    extra_ops = {(w, ph): np.zeros(n_all) for w in ("first", "last") for ph in PHASES}
    op_polys: dict[Any, Any] = {}
    shape_ids: dict[tuple[int, int, int, bool], int] = {}
    base_shape = np.array([shape_ids.setdefault(
        (int(c.degrees[2]), int(c.degrees[3]), int(c.degrees[4]), c.sequence_parallel),
        len(shape_ids)) for c in bases])
    named = list(shape_ids)
    shapes_of = {(*named[k // len(policies)], policies[k % len(policies)]): idx
                 for k, idx in _grouped(base_shape[base] * len(policies) + pol)}
    seen: dict[Any, Any] = {}
    forwards: dict[tuple[int, int, int, bool], Any] = {}
    shards: dict[Any, Any] = {}  # each tensor shard's layer ops, for every pipeline depth
    extras_of: dict[tuple[int, int, bool, str], dict[tuple[str, str, str], Any]] = {}
    # a pipeline's depth changes only how many layers a block runs: each block's ops and
    # their summed terms (``phase_terms`` of the block run once) are every depth's
    backs: dict[tuple[int, int, bool, str], StepOps] = {}
    blocks: dict[tuple[Any, ...], dict[str, sp.Expr]] = {}

    powers: dict[tuple[Any, ...], dict[str, dict[int, Fraction]] | None] = {}

    def timed(step: StepOps, shard: tuple[Any, ...]) -> dict[str, _Evaluator]:
        """The compute and HBM times of ``step`` (``phase_terms``), each block's once per
        shard, as evaluators in the microbatch: where every block's times are polynomials
        with rational coefficients, their exact coefficients summed over the blocks times
        their counts (the coefficients of the sum, rounded once), else the sum itself."""
        keys = [(*shard, step.phase, b.name) for b in step.blocks]
        for b, key in zip(step.blocks, keys, strict=True):
            if key not in blocks:
                one = replace(step, blocks=(Block(b.name, b.ops, sp.S.One),))
                blocks[key] = phase_terms({"one": one}, chip, efficiency, seen)["one"]
                powers[key] = _powers(blocks[key])
        exact: list[tuple[Fraction, dict[str, dict[int, Fraction]]]] = []
        for b, key in zip(step.blocks, keys, strict=True):
            count, known = _fraction(b.count), powers[key]
            if count is None or known is None:
                break
            exact.append((count, known))
        else:
            return {res: _Evaluator(None, _rounded([(c, p[res]) for c, p in exact if res in p]))
                    for res in ("compute", "hbm")}
        total: dict[str, list[sp.Expr]] = {}
        for b, key in zip(step.blocks, keys, strict=True):
            for k, v in blocks[key].items():
                total.setdefault(k, []).append(b.count * v)
        return {res: _evaluator(sp.Add(*total.get(res, ()))) for res in ("compute", "hbm")}

    for (tp, pp, ep, sp_on, r), idx in shapes_of.items():
        if (tp, pp, ep, sp_on) not in forwards:  # the forward is every policy's
            forward, weights = forward_ops(cfg, batch=BATCH, context=context, tp=tp, pp=pp,
                                           ep=ep, sequence_parallel=sp_on, attention=attention,
                                           cache=shards)
            if elementwise:
                forward = with_megatron_kernels(forward, cfg, batch=BATCH, context=context,
                                                tp=tp, sequence_parallel=sp_on)
            forwards[tp, pp, ep, sp_on] = (forward, weights, timed(forward, (tp, ep, sp_on)))
        forward, weights, coeffs = forwards[tp, pp, ep, sp_on]
        if (tp, ep, sp_on, r) not in backs:
            backs[tp, ep, sp_on, r] = backward_ops(forward, weights, r)
        back = backs[tp, ep, sp_on, r]  # its blocks run as many layers as the forward's
        back = replace(back, blocks=tuple(Block(b.name, b.ops, f.count) for b, f in
                                          zip(back.blocks, forward.blocks, strict=True)))
        ops = {"forward": forward, "backward": back}
        backward = timed(back, (tp, ep, sp_on, r))
        b_idx, micro_idx = b_value[idx], micro[idx]
        for (ph, res), out in per_phase.items():
            poly = coeffs[res] if ph == "forward" else backward[res]
            out[idx] = poly(b_idx) * micro_idx
        if per_op:
            overlapped = _overlapped(ops, chip, efficiency, seen, op_polys, b_idx,
                                     (tp, ep, sp_on, r))
            for ph in PHASES:
                ops_time[ph][idx] = overlapped[ph] * micro_idx
            if pp != 1:
                for w, only in stage_extras(ops).items():
                    alone = _overlapped(only, chip, efficiency, seen, op_polys, b_idx,
                                        (tp, ep, sp_on, r, w))
                    for ph in PHASES:
                        extra_ops[w, ph][idx] = alone[ph] * micro_idx
        if pp != 1:  # the head block is every pipeline's: its polynomials once
            if (tp, ep, sp_on, r) not in extras_of:
                extras_of[tp, ep, sp_on, r] = {
                    (w, ph, res): _evaluator(alone[ph].get(res, sp.S.Zero))
                    for w, part in stage_extras(ops).items()
                    for alone in [phase_terms(part, chip, efficiency, seen)]
                    for ph in PHASES for res in ("compute", "hbm")}
            for part, poly in extras_of[tp, ep, sp_on, r].items():
                extra[part][idx] = poly(b_idx) * micro_idx
    phase = {ph: per_phase[ph, "compute"] for ph in PHASES}
    memory_time = {ph: per_phase[ph, "hbm"] for ph in PHASES}
    lower = {ph: np.maximum(phase[ph], memory_time[ph]) for ph in phase}
    upper = {ph: phase[ph] + memory_time[ph] for ph in phase}
    # what binds each phase, as its index in ``terms`` (compute, HBM, then each other term
    # in the order it first binds a candidate)
    terms = ["compute", "hbm"]
    binding = {ph: np.where(phase[ph] >= lower[ph], 0, 1).astype(np.int8) for ph in phase}
    # the same for a stage that runs neither extra, the first's and the last's (training's
    # ``pipelined``): every other term is each stage's alike
    staged: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    drops = {"middle": ("first", "last"), "first": ("last",), "last": ("first",)}
    for name, drop in drops.items():
        own = {(ph, res): per_phase[ph, res] - sum(extra[d, ph, res] for d in drop)
               for ph in PHASES for res in ("compute", "hbm")}
        staged[name] = {
            "lower": {ph: np.maximum(own[ph, "compute"], own[ph, "hbm"]) for ph in PHASES},
            "upper": {ph: own[ph, "compute"] + own[ph, "hbm"] for ph in PHASES},
            "op": {ph: ops_time[ph] - sum(extra_ops[d, ph] for d in drop) for ph in PHASES}}
    serial = {ph: np.zeros(n_all) for ph in PHASES}  # every term but compute and HBM
    serial_of = {w: {ph: np.zeros(n_all) for ph in PHASES} for w in staged}  # by stage
    # the memory account of the first and the last pipeline stage (``training.stage_memory``;
    # without a pipeline both the one stage's), the plan's memory the larger: one function
    # of the parameters a stage holds and its microbatches in flight (``pipeline.in_flight``,
    # interleaving's too; and ``pipeline.ends_in_flight``, those of the activations outside
    # the layers, the function itself at each distinct schedule) for both stages
    by_stage = {w: np.zeros(n_all) for w in STAGES}
    mem_fns = {r: _memory_functions(templates, cfg, per, r, context, attention)
               for r in policies}
    host_total, host_terms, host_notes = offload_functions(offload, per, chip, efficiency) \
        if offload else (None, {}, ())
    mem_parts = {r: _memory_functions(templates, cfg, per, r, context, attention, PARTS)
                 for r in policies} if offload else {}
    # the optimizer step, once per step: its engine time on the states one device holds,
    # each stage's, the step waiting for the slowest
    steps = _memory_functions(templates, cfg, per, "none", context, attention,
                              step_of=lambda mem: optimizer_time(mem, chip, efficiency))
    opt = np.zeros(n_all)
    parts = {w: np.zeros((len(PARTS), n_all)) for w in STAGES}  # for an offload
    interleaved = chunks != 1
    flight = {}
    for w in STAGES:
        flight[w] = np.array(_compile(in_flight(D_PP, MICRO, 1, w), (D_PP, MICRO))(deg[3],
                                                                                 micro))
        if interleaved.any():
            flight[w][interleaved] = _compile(in_flight(D_PP, MICRO, V, w), (D_PP, MICRO, V))(
                deg[3, interleaved], micro[interleaved], chunks[interleaved])
    span = int(max(micro.max(), chunks.max())) + 1  # a schedule (p, m, v) as one integer
    distinct, which = np.unique((deg[3].astype(np.int64) * span + micro.astype(np.int64))
                                * span + chunks.astype(np.int64), return_inverse=True)
    ends = {w: np.array([[float(x) for x in ends_in_flight(
        int(k) // span // span, int(k) // span % span, int(k) % span, w)]
        for k in distinct]).T[:, which.ravel()] for w in STAGES}
    group_ids: dict[tuple[int, bool], int] = {}
    base_group = np.array([group_ids.setdefault((c.stage, c.sequence_parallel), len(group_ids))
                           for c in bases])
    named_groups = list(group_ids)
    by_group = {named_groups[k]: idx for k, idx in _grouped(base_group[base])}
    # the parameters a device holds on each stage, the plan's count (``training.held_params``)
    counts: dict[tuple[Any, ...], float] = {}
    for c in bases:
        shard = c.degrees[2:5]
        for w in STAGES:
            if (*shard, w) not in counts:
                counts[*shard, w] = float(held_params(templates[0, False], cfg, {
                    D_TP: sp.Integer(shard[0]), D_PP: sp.Integer(shard[1]),
                    D_EP: sp.Integer(shard[2])}, w))
    held = {w: np.array([counts[*c.degrees[2:5], w] for c in bases])[base] for w in STAGES}
    for (stage, sp_on), idx in sorted(by_group.items()):
        t = templates[stage, sp_on]
        args = (b_value[idx], *deg[:, idx])
        opt[idx] = np.maximum(*(steps[stage, sp_on](*args, held[w][idx], flight[w][idx],
                                                    *ends[w][:, idx]) for w in STAGES))
        for j, r in enumerate(policies):
            mine = idx[pol[idx] == j]
            if not len(mine):
                continue
            shared = (b_value[mine], *deg[:, mine])
            for w in STAGES:
                at = (*shared, held[w][mine], flight[w][mine], *ends[w][:, mine])
                by_stage[w][mine] = mem_fns[r][stage, sp_on](*at)
                for k, fn in enumerate(mem_parts.get(r, {}).get((stage, sp_on), ())):
                    parts[w][k, mine] = fn(*at)
        # the collectives: the template's, and under the conventions each policy's reruns
        # (``training._with_reruns``) and pipeline sends split over the tensor ranks; the
        # group's figures taken out of the whole arrays once, summed, and put back
        split: list[tuple[np.ndarray | slice, tuple[Any, ...]]] = [(slice(None), t.uses)]
        if reruns:  # each policy's candidates of the group, and its collectives
            split = [(mine, tuple(_with_reruns(t.uses, r, sp_on))) for j, r in
                     enumerate(policies) if len(mine := np.flatnonzero(pol[idx] == j))]
        term: dict[tuple[str, str], np.ndarray] = {}
        head_comms: dict[tuple[str, str, str], np.ndarray] = {}  # the head block's, by stage
        values: dict[sp.Expr, np.ndarray] = {}  # each formula of the group's uses once
        cost_of: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}  # of each pair
        group_chunks = chunks[idx]
        for mine, uses in split:
            for u in uses:
                for expr in (per_step := sp.sympify(u.per_step), u.nbytes):
                    if expr not in values:
                        values[expr] = _compile(expr)(*args)
                calls = values[per_step][mine]
                if u.kind == "pp" and u.block not in HEAD_BLOCKS:  # a stage sends each
                    calls = calls * group_chunks[mine]  # chunk's output on: v a microbatch
                size = values[u.nbytes][mine] * calls
                if u.kind == "pp" and scatter and not sp_on and u.block not in HEAD_BLOCKS:
                    size = size / args[3][mine]  # over the tensor-parallel degree
                pair = (u.kind, u.collective)
                key = (u.kind, u.phase)
                if key not in term:
                    term[key] = np.zeros(len(idx))
                if pair not in cost_of:
                    cost_of[pair] = (per_byte[pair][idx], latency[pair][idx])
                time = size * cost_of[pair][0][mine] + calls * cost_of[pair][1][mine]
                term[key][mine] = term[key][mine] + time
                runs = HEAD_BLOCKS.get(u.block)  # only the stage that runs it
                if runs:
                    own_part = head_comms.setdefault((runs, *key), np.zeros(len(idx)))
                    own_part[mine] = own_part[mine] + time
        touched = {ph for _, ph in term}
        low = {ph: lower[ph][idx] for ph in touched}
        up = {ph: upper[ph][idx] for ph in touched}
        ser = {ph: serial[ph][idx] for ph in touched}
        bind = {ph: binding[ph][idx] for ph in touched}
        stage_low = {(w, ph): v["lower"][ph][idx] for w, v in staged.items() for ph in touched}
        stage_up = {(w, ph): v["upper"][ph][idx] for w, v in staged.items() for ph in touched}
        stage_ser = {(w, ph): serial_of[w][ph][idx] for w in staged for ph in touched}
        for (kind, ph), time in term.items():  # in place on the group's own copies
            bind[ph][time > low[ph]] = _index(terms, kind)
            np.maximum(low[ph], time, out=low[ph])
            np.add(up[ph], time, out=up[ph])
            np.add(ser[ph], time, out=ser[ph])
            for w in staged:
                heads = [head_comms[d, kind, ph] for d in drops[w] if (d, kind, ph) in head_comms]
                share = time - sum(heads, np.zeros(len(idx))) if heads else time  # x - 0: x
                np.maximum(stage_low[w, ph], share, out=stage_low[w, ph])
                np.add(stage_up[w, ph], share, out=stage_up[w, ph])
                np.add(stage_ser[w, ph], share, out=stage_ser[w, ph])
        for ph in touched:
            lower[ph][idx], upper[ph][idx], serial[ph][idx] = low[ph], up[ph], ser[ph]
            binding[ph][idx] = bind[ph]
            for w, v in staged.items():
                v["lower"][ph][idx], v["upper"][ph][idx] = stage_low[w, ph], stage_up[w, ph]
                serial_of[w][ph][idx] = stage_ser[w, ph]
    last = (deg[3] != 1) & (by_stage["last"] > by_stage["first"])  # the larger, first on a tie
    memory = np.where(last, by_stage["last"], by_stage["first"])
    # an offload acts on that stage's account, with its microbatches in flight
    host_args = (*np.where(last, parts["last"], parts["first"]), cfg.layers / deg[3], micro,
                 np.where(last, flight["last"], flight["first"]))
    if host_total is not None:  # an offload: HBM keeps less, the host link moves the rest
        memory = host_total(*host_args)
    for (name, ph), fn in host_terms.items():  # the host link, one term per direction
        time = fn(*host_args)
        binding[ph][time > lower[ph]] = _index(terms, name)
        lower[ph] = np.maximum(lower[ph], time)
        upper[ph] = upper[ph] + time
        serial[ph] = serial[ph] + time
        for w, v in staged.items():
            v["lower"][ph] = np.maximum(v["lower"][ph], time)
            v["upper"][ph] = v["upper"][ph] + time
            serial_of[w][ph] = serial_of[w][ph] + time
    if progress:
        progress(n_all, n_all)
    f_, g_ = sp.symbols("f g")
    plain = _compile(pipeline_cost(D_PP, MICRO, f_, g_).makespan, (f_, g_, D_PP, MICRO))
    chunked = _compile(interleaved_cost(D_PP, MICRO, V, f_, g_).makespan,
                       (f_, g_, D_PP, MICRO, V))

    def makespan(f: np.ndarray, g: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The 1F1B makespan of every candidate, interleaved over its chunks where it is."""
        out = plain(f, g, p, m)
        if interleaved.any():
            out = np.where(interleaved, chunked(f, g, p, m, chunks), out)
        return np.asarray(out)

    def pipelined(bound: str, whole: dict[str, np.ndarray]) -> np.ndarray:
        """``training.pipelined`` over every candidate: the last stage the busiest where it
        adds at least what the first adds, else every stage taken as the busiest."""
        middle, first, last = (staged[k][bound] for k in ("middle", "first", "last"))
        adds = {w: sum(x[ph] - middle[ph] for ph in PHASES)
                for w, x in (("first", first), ("last", last))}
        split = makespan(middle["forward"] / micro, middle["backward"] / micro, deg[3],
                         micro) + adds["last"] + adds["first"] / micro
        alike = makespan(whole["forward"] / micro, whole["backward"] / micro, deg[3], micro)
        return np.where((deg[3] != 1) & (adds["last"] >= adds["first"]), split, alike)

    t_lower = pipelined("lower", lower) + opt
    t_upper = pipelined("upper", upper) + opt
    if per_op:  # every stage's ops overlapped, then every other term one after another
        for w, v in staged.items():
            v["op"] = {ph: v["op"][ph] + serial_of[w][ph] for ph in PHASES}
        predicted = pipelined("op", {ph: ops_time[ph] + serial[ph] for ph in PHASES}) + opt
    else:
        predicted = t_lower if overlap == "phase" else t_upper
    fits = memory <= float(chip.capacity("hbm"))
    if not fits.any():
        smallest = bases[base[int(np.argmin(memory))]]
        raise InputError(f"no plan of {n} chips fits in {chip.name}'s memory: the smallest "
                         f"needs {memory.min() / 1e9:.3g} GB per chip "
                         f"({smallest.strategy} on {smallest.spec})", "search")
    # fastest first; among equals the one with the shorter T_upper, then the less memory
    order = np.lexsort((np.arange(n_all), memory, t_upper,
                        np.where(fits, predicted, np.inf)))
    ranked = order[fits[order]]

    # each ranked candidate's figures as Python floats, its bound the backward's binding
    # term unless that is compute, else the forward's
    bound = np.where(binding["backward"] != 0, binding["backward"], binding["forward"])
    choice = _Chooser(bases, base, pol, policies, deg[5], chunks, t_lower, memory, predicted,
                      bound, tuple(terms))
    choices = tuple(choice(i) for i in ranked[:10])
    best = choices[0]
    plan = train(cfg, mesh(best.spec, chip), parse_strategy(best.strategy), batch=batch,
                 context=context, optimizer=optimizer, conventions=conventions,
                 options=StepOptions(kernel=Kernel(attention), efficiency=efficiency,
                                     recompute=best.recompute, microbatches=best.microbatches,
                                     interleave=best.chunks, offload=offload,
                                     in_network=in_network, overlap=overlap))
    notes: tuple[str, ...] = (
        f"latency {', '.join(sorted(costs.unknown))} taken as 0 in the search (no source "
        "gives it)",) if costs.unknown else ()
    if in_network:
        notes += ("every AllReduce over one switched network reduced in the switch ("
                  + (", ".join(sorted(costs.algorithms - {"ring"})) or "none here") + "); "
                  "others as rings",)
    notes += tuple(f"in every candidate: {x}" for x in host_notes)
    if overlap != DEFAULT_OVERLAP:
        notes += (f"candidates rank by their predicted step time under overlap {overlap}: "
                  f"{OVERLAPS[overlap]}",)
    if conventions is not None:  # each choice (their sources: the plan's assumptions)
        ran = conventions.override({"overlap": overlap, "optimizer": optimizer})
        notes += (f"in every candidate: {ran.name}'s conventions, "
                  + ", ".join(f"{k} {v}" + (" (set by the user)" if k in ran.overridden
                                            else "") for k, v in ran.choices.items())
                  + " (their sources: the chosen plan's assumptions)",)
    elif efficiency.conventions is not None:  # fitted under conventions not given here
        conv = efficiency.conventions
        notes += (f"the calibration's fractions were fitted under {conv.name}'s conventions, "
                  f"which this search was not given: its candidates run none of "
                  f"{', '.join(sorted(set(conv.choices) - {'optimizer', 'overlap'}))}",)
    top = predicted[ranked[0]]
    tied = int(np.count_nonzero(predicted[ranked] <= top * (1 + 1e-12)))
    slower = choice(int(ranked[tied])) if tied < len(ranked) else None
    return Search(n, n_all, int(fits.sum()), choices[0],
                  choices[1] if len(choices) > 1 else None, plan, choices,
                  (*notes, "microbatches: every count m the replica's batch splits into "
                   "(gradient accumulation without a pipeline; with p stages plain 1F1B, "
                   "fewer than p too, and where m is a multiple of p also every number of "
                   "chunks per stage v > 1 its layers split into: Megatron-LM's interleaved "
                   f"1F1B); {why}"), tied, slower, _Ranked(choice, ranked),
                  overlap)


def _grouped(keys: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Each distinct key and the indices holding it (ascending), in the order the keys
    first appear.

    >>> [(k, i.tolist()) for k, i in _grouped(np.array([3, 1, 3, 2, 1]))]
    [(3, [0, 2]), (1, [1, 4]), (2, [3])]
    """
    order = np.argsort(keys, kind="stable")
    values, first = np.unique(keys, return_index=True)
    split = np.split(order, np.searchsorted(keys[order], values[1:]))
    return [(int(values[j]), split[j]) for j in np.argsort(first)]


@dataclass(frozen=True)
class _Chooser:
    """A candidate's ``Choice`` from the search's arrays (each candidate's base, policy,
    microbatches, chunks and figures)."""

    bases: list[Candidate]
    base: np.ndarray
    pol: np.ndarray
    policies: tuple[str, ...]
    micro: np.ndarray
    chunks: np.ndarray
    t_lower: np.ndarray
    memory: np.ndarray
    predicted: np.ndarray
    bound: np.ndarray  # each candidate's binding term, by its index in ``terms``
    terms: tuple[str, ...]

    def __call__(self, i: int) -> Choice:
        c = self.bases[self.base[i]]
        return Choice(c.spec, c.strategy, float(self.t_lower[i]), float(self.memory[i]),
                      self.terms[self.bound[i]], int(self.micro[i]), self.policies[self.pol[i]],
                      float(self.predicted[i]), int(self.chunks[i]))


class _Ranked(Sequence[Choice]):
    """Every plan that fits, fastest first, each ``Choice`` made when it is read."""

    def __init__(self, choice: Callable[[int], Choice], ranked: np.ndarray) -> None:
        self._choice, self._ranked = choice, ranked

    def __len__(self) -> int:
        return len(self._ranked)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return tuple(self._choice(int(i)) for i in self._ranked[k])
        return self._choice(int(self._ranked[k]))


def _index(names: list[str], name: str) -> int:
    """``name``'s index in ``names``, appended if it is not there yet."""
    if name not in names:
        names.append(name)
    return names.index(name)


def _label(kind: str, c: Candidate) -> str:
    if kind == "zero":
        return next((k for k in c.kinds if k.startswith("zero")), "zero3")
    return kind


def _name(kind: str, c: Candidate) -> str:
    """The strategy kind a collective's term is named by (``training._label``)."""
    label = _label(kind, c)
    return "fsdp" if label == "zero3" else label


def _overlapped(ops: Mapping[str, StepOps], chip: Chip, efficiency: Efficiency,
                seen: dict[Any, Any], polys: dict[Any, Any], b: np.ndarray,
                shard: tuple[Any, ...]) -> dict[str, np.ndarray]:
    """``train_step.op_overlapped`` at the microbatches ``b``: each op's longest term, its
    polynomials in the microbatch evaluated, summed over its block's ops, times the block's
    count; ``polys`` keeps each block's coefficients by ``shard``, the phase and its name,
    and each op's evaluators (an op's times are ``phase_terms``', kept in ``seen``)."""
    out = {}
    for ph, step in ops.items():
        total = np.zeros(len(b))
        for block in step.blocks:
            key = (*shard, ph, block.name)
            if key not in polys:
                if any(op_key(o) not in seen for o in block.ops):  # each op's terms
                    phase_terms({ph: replace(step, blocks=(
                        Block(block.name, block.ops, sp.S.One),))}, chip, efficiency, seen)
                each = []
                for o in block.ops:  # an op's terms' evaluators once, whatever block runs it
                    own = ("op", op_key(o))
                    if own not in polys:
                        polys[own] = [_evaluator(v) for v in seen[own[1]].values()]
                    each.append(polys[own])
                polys[key] = _stacked([[e.coefficients for e in t] for t in each]) \
                    if all(e.coefficients is not None for t in each for e in t) else each
            coeffs = polys[key]  # (op, term, power), highest power first
            if not isinstance(coeffs, np.ndarray):  # a term not polynomial: op by op
                longest = [np.max([e(b) for e in t], axis=0) for t in coeffs]
                total += float(block.count) * np.sum(longest, axis=0)
                continue
            y = np.zeros((*coeffs.shape[:2], len(b)))
            for k in range(coeffs.shape[2]):  # numpy.polyval's Horner steps
                y = y * b + coeffs[:, :, k, None]
            total += float(block.count) * y.max(axis=1).sum(axis=0)
        out[ph] = total
    return out


def _stacked(coefficients: Any) -> np.ndarray:
    """Each op's terms' coefficients as one array (op, term, power): a shorter polynomial
    led by zeros, an op with fewer terms given its first term again (the longest term
    unchanged)."""
    if not coefficients:
        return np.zeros((0, 1, 1))
    terms = max(len(t) for t in coefficients)
    powers = max(len(c) for t in coefficients for c in t)
    out = np.zeros((len(coefficients), terms, powers))
    for i, t in enumerate(coefficients):
        for j in range(terms):
            c = t[j] if j < len(t) else t[0]
            out[i, j, powers - len(c):] = c
    return out


_COMPILED: dict[tuple[Any, ...], Callable[..., Any]] = {}


def _coefficients(expr: sp.Expr) -> list[float]:
    """The coefficients of ``expr``, a polynomial in the microbatch, each exact and then
    rounded once to a float (for ``numpy.polyval``).

    >>> b = BATCH
    >>> _coefficients(3 * b**2 / 4 + 2), _coefficients(sp.S.Zero), _coefficients(b * (b + 1))
    ([0.75, 0.0, 2.0], [0.0], [1.0, 1.0, 0.0])
    """
    # a sum of numbers times whole powers of the microbatch (an op's times summed are one,
    # like terms already collected) gives its coefficients as it stands; else sp.Poly
    terms = sp.sympify(expr).as_coefficients_dict()
    powers: dict[int, Any] = {}
    for k, v in terms.items():
        power = 0 if k == 1 else 1 if k == BATCH else int(k.exp) if (
            k.is_Pow and k.base == BATCH and k.exp.is_Integer and k.exp > 0) else None
        if power is None or not v.is_Number:
            return [float(c) for c in sp.Poly(expr, BATCH).all_coeffs()]
        powers[power] = v
    top = max(powers, default=0)
    return [float(powers.get(p, 0)) for p in range(top, -1, -1)]


@dataclass(frozen=True)
class _Evaluator:
    """An expression in the microbatch evaluated at many microbatches: a polynomial from
    its coefficients (``numpy.polyval``), any other (an MoE's experts touched) exactly at
    each distinct microbatch, then rounded once.

    >>> from symroof.models.layers import Touched
    >>> e = _evaluator(BATCH + Touched(8, 2, 2 * BATCH))
    >>> e.coefficients is None, e(np.array([1.0, 2.0, 1.0])).tolist()
    (True, [4.5, 7.46875, 4.5])
    """

    expr: sp.Expr | None  # None: given by its coefficients alone
    coefficients: tuple[float, ...] | None

    def __call__(self, b: np.ndarray) -> np.ndarray:
        if self.coefficients is not None:
            return np.asarray(np.polyval(self.coefficients, b))
        assert self.expr is not None
        values, where = np.unique(b, return_inverse=True)
        return np.array([float(self.expr.subs(BATCH, sp.Integer(int(v)) if float(v).is_integer()
                                              else sp.Rational(float(v))))
                         for v in values])[where]


def _fraction(x: Any) -> Fraction | None:
    """``x`` as a fraction, if it is a rational number."""
    x = sp.sympify(x)
    return Fraction(int(x.p), int(x.q)) if x.is_Rational else None


def _powers(terms: Mapping[str, sp.Expr]) -> dict[str, dict[int, Fraction]] | None:
    """Each of ``terms`` as its exact coefficients by power of the microbatch, if every
    one is a polynomial in it with rational coefficients (else None).

    >>> _powers({"hbm": 3 * BATCH**2 / 4 + 2, "compute": sp.S.Zero})
    {'hbm': {0: Fraction(2, 1), 2: Fraction(3, 4)}, 'compute': {0: Fraction(0, 1)}}
    >>> _powers({"hbm": sp.sqrt(BATCH)}) is None
    True
    """
    out: dict[str, dict[int, Fraction]] = {}
    for name, expr in terms.items():
        out[name] = {}
        for k, v in sp.sympify(expr).as_coefficients_dict().items():
            power = 0 if k == 1 else 1 if k == BATCH else int(k.exp) if (
                k.is_Pow and k.base == BATCH and k.exp.is_Integer and k.exp > 0) else None
            value = _fraction(v)
            if power is None or value is None:
                return None
            out[name][power] = value
    return out


def _rounded(parts: Sequence[tuple[Fraction, dict[int, Fraction]]]) -> tuple[float, ...]:
    """The coefficients of the sum of the polynomials ``parts`` (each a count and its
    exact coefficients by power), highest power first, each exact and then rounded once:
    ``_coefficients`` of the sum.

    >>> _rounded([(Fraction(2), {1: Fraction(1, 3), 0: Fraction(1)}), (Fraction(1), {})])
    (0.6666666666666666, 2.0)
    >>> _rounded([(Fraction(1), {2: Fraction(1)}), (Fraction(-1), {2: Fraction(1)})])
    (0.0,)
    """
    total: dict[int, Fraction] = {}
    for count, coefficients in parts:
        for power, c in coefficients.items():
            total[power] = total.get(power, Fraction(0)) + count * c
    top = max((p for p, c in total.items() if c), default=0)
    return tuple(float(total.get(p, 0)) for p in range(top, -1, -1))


def _evaluator(expr: sp.Expr) -> _Evaluator:
    try:
        return _Evaluator(expr, tuple(_coefficients(expr)))
    except sp.PolynomialError:
        return _Evaluator(expr, None)


def _compile(expr: sp.Expr, args: tuple[sp.Symbol, ...] | None = None) -> Callable[..., Any]:
    """A NumPy function of (b, d_dp, d_zero, d_tp, d_pp, d_ep, m), compiled once."""
    names = args or (BATCH, *DEGREES)
    key = (expr, names)  # an expression's hash is kept with it: no printing to look it up
    fn = _COMPILED.get(key)
    if fn is None:
        raw = to_numpy(names, expr)

        def fn(*values: Any, _raw: Any = raw) -> Any:
            out = _raw(*values)
            return np.broadcast_to(np.asarray(out, dtype=np.float64), np.shape(values[0]))
        _COMPILED[key] = fn
    return fn


def _memory_functions(templates: dict[tuple[int, bool], Any], cfg: ModelConfig,
                      per: dict[str, int], recompute: str, context: int,
                      attention: str = "materialised", parts: tuple[str, ...] | None = None,
                      step_of: Callable[[dict[str, sp.Expr]], sp.Expr] | None = None,
                      ) -> dict[tuple[int, bool], Any]:
    """NumPy functions of (b, the degrees, the parameters a stage holds, the microbatches in
    flight on it, those whose activations outside the layers it holds: the embedding's and
    the head's) per (ZeRO stage, sequence parallelism): the memory's total (or ``parts``,
    or ``step_of`` the memory) of a pipeline stage (``training._memory``), its
    ``pipeline.in_flight`` and ``pipeline.ends_in_flight`` counts arguments, so that one
    function serves every stage (the last stage's account differs only in those) and
    every interleaving."""
    from .strategy import Strategy
    from .training import _memory
    out: dict[tuple[int, bool], Any] = {}
    flight = {in_flight(D_PP, MICRO, 1): FLIGHT}
    for (stage, sp_on), t in templates.items():
        kinds = ((f"zero{stage}", ("Z",)),) if stage else ()
        s = Strategy((*kinds, ("tp", ("T",))), sp_on)
        subs = {D_DP: D_DP, D_ZERO: D_ZERO, D_TP: D_TP, D_PP: D_PP, D_EP: D_EP, MICRO: MICRO}
        mem = {k: sp.sympify(v).xreplace(flight) for k, v in
               _memory(t, cfg, s, subs, BATCH, per, recompute, context, D_PP, MICRO,
                       attention, held=HELD, stage="first", ends=ENDS).items()}
        args = (BATCH, *DEGREES, HELD, FLIGHT, *ENDS)
        if step_of is not None:
            out[stage, sp_on] = _compile(sp.sympify(step_of(mem)), args)
            continue
        out[stage, sp_on] = _compile(mem["total"], args) if parts is None else \
            tuple(_compile(sp.sympify(mem[k]), args) for k in parts)
    return out


__all__ = ["Choice", "Search", "candidates", "meshes", "search", "zero_states"]
