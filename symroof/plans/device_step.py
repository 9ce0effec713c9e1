"""The step one device runs: the engine's step roofline of its share of the layer ops, plus
the strategy's collectives as named serial terms. Every verb that times a step uses it.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> s = device_step(model("llama-2-7b"), "decode", mesh("X=8", "h100-sxm"),
...                 {"tp": ("X",)}, batch=64, context=2048)
>>> sorted(s.terms), s.bound
(['compute', 'hbm', 'tp over X (nvlink)'], 'hbm')

The device's ops are ``layer_ops`` of its shard (``models.tensor_parallel.shard``) at its
replica's batch, the routed experts split over the expert ranks. Under tensor parallelism
the row-parallel partial sums are all-reduced over the tensor axes after the attention
output and after each MLP (or experts, or shared experts) block, and after the
vocabulary-split embedding lookup (Megatron's vocabulary-parallel embedding); the
vocabulary-split output head's logits of the sampled positions (one per sequence) are
all-gathered before sampling; experts all-to-all the routed tokens before and after
the experts; a pipeline's stages pass a token's activations on, pp - 1 times, and a step
that samples tokens for the next (a decode step, a chunk's decode riders) sends them back
from the last stage to the first's embedding, 4 bytes each (int32 ids). Each
collective is a serial term of the op it follows (the next op needs its result). The step
covers the token's whole path (every stage of a pipeline): its ops, terms, FLOPs and bytes
are the path's (every layer, the embedding and the head once), and with a pipeline its
latency is the sum over the stages of each stage's own time under the overlap rule (the
first runs the embedding and its 1/pp of the layers, a middle one its layers, the last its
layers, the final norm and the output head; each with the collectives of the ops it runs)
plus the pp - 1 sends and the sampled tokens' trip back (``stages``). pp batches are in
flight at once, so the throughput is bound by the slowest stage: its time plus the send it
makes (``period``; the last stage's is the trip back; the stages' periods sum to the
latency, so the slowest is never shorter than latency / pp). Each
collective costs its hops at the link's per-hop latency where the catalogue gives one (a
GPU's NVLink, PCIe and InfiniBand: NCCL's per-step figures; a TPU's ICI), noted with its
source; ``--set "<link>.latency=0"`` gives
the bandwidth-only bound. A link latency no source gives (``alpha_<link>``) is taken as 0,
which keeps T_lower a lower bound and is stated with the symbol's name; set it with
``--set "<link>.latency=2us"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.choices import DROPS, EXACT, OP_CHOICES, OPTIONS, STEP_CHOICES
from ..core.errors import InputError
from ..core.parse import symbol
from ..core.printer import si
from ..core.quant import scheme_of
from ..core.sizes import dtype_bytes
from ..core.units import COUNT, PER_SECOND, TIME, records
from ..engine.critical import Critical, critical_size
from ..engine.rooflines import binding
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.layers import DEFAULT_KERNEL, layer_ops, spelled
from ..models.step_roofline import Row, StepRoofline, peak_rooflines, step_roofline
from ..models.tensor_parallel import shard
from ..parallel.collectives import TITLES, Collective, collective
from ..parallel.in_network import in_switch_algorithm
from ..parallel.mesh import Mesh
from .efficiency import SERVING_OVERLAPS, CallLatency, Efficiency
from .options import DEFAULT_OPTIONS, TRAINING_ONLY, StepOptions
from .train_step import FIRST_STAGE_OPS, LAST_STAGE_OPS

#: the bytes of a sampled token's id on its way back to the first stage (int32, as
#: vLLM's and Megatron-LM's samplers return them)
TOKEN_ID_BYTES = 4
_BACK = "sampled tokens back"  # a pipeline's last stage to its first, once a step

OVERLAP = ("T_lower: each op's compute overlaps its own memory traffic, ops run one after "
           "another and each collective waits for the op it follows; T_upper: nothing "
           "overlaps")


def overlap_said(rule: str) -> str:
    """The assumption a step's overlap rule prints.

    >>> overlap_said("phase").split(": ")[0], overlap_said("op") == OVERLAP
    ('latency under overlap phase', True)
    """
    return OVERLAP if rule == "op" else (f"latency under overlap {rule}: "
                                         f"{SERVING_OVERLAPS[rule]}; T_upper: nothing overlaps")


@dataclass(frozen=True)
class Comm:
    """One collective of a step: ``collective`` of ``nbytes`` (NCCL's size convention) over
    the axes of ``kind`` after op ``after``, ``calls`` times per step, ``time`` per call."""

    after: str
    kind: str
    collective: str
    nbytes: Expr
    calls: Expr
    time: Expr
    algorithm: str = "ring"


@dataclass(frozen=True)
class Stage:
    """One pipeline stage of a step (``first``, ``middle``: each of the ``count`` alike
    between the ends, ``last``): ``rows``, its share of each op of the path (each op's
    roofline with the collectives after it, times the share of its count the stage runs),
    its ``time`` under the step's overlap rule, and ``send``, its pass of the activations
    to the next stage (on the last, the sampled tokens' trip back to the first: 0 where
    the step samples none for the next)."""

    name: str
    count: int
    rows: tuple[tuple[Row, Expr], ...] = field(repr=False)
    time: Expr
    send: Expr

    @cached_property
    def terms(self) -> dict[str, Expr]:
        """Its named terms (``compute``, each memory level, each collective): its share of
        each op's, summed (built when first asked)."""
        return _summed(self.rows)

    @property
    def period(self) -> Expr:
        """The time between two batches through the stage: its time and its send (the send
        waits for the op it follows, as every collective of a step)."""
        return self.time + self.send


@dataclass(frozen=True)
class DeviceStep:
    """One step (prefill or decode) on one device: its ops' rooflines, its named terms
    (``compute``, ``hbm``, one per collective kind and axes), its bounds and bound, and the
    tokens the whole mesh produces per step."""

    name: str
    roofline: StepRoofline
    terms: Mapping[str, Expr]
    t_lower: Expr
    t_upper: Expr
    bound: str
    tokens: Expr
    throughput: Expr
    notes: tuple[str, ...] = ()
    comms: tuple[Comm, ...] = ()
    overlap: str = "op"  # the rule its latency (t_lower) is under (SERVING_OVERLAPS)
    #: with a pipeline, its stages (the latency their times summed with the sends) and the
    #: slowest one ("" while the sizes are symbols), whose period bounds the throughput
    stages: tuple[Stage, ...] = ()
    slowest: str = ""

    @property
    def pipeline(self) -> int:
        """The pipeline's stages (1 without one): the batches in flight."""
        return sum(s.count for s in self.stages) or 1

    @property
    def period(self) -> Expr:
        """The time between two batches' steps with pp batches in flight: the slowest
        stage's period (``Stage.period``), the latency without a pipeline; the throughput
        is the tokens over it."""
        if not self.stages:
            return self.t_lower
        return _slowest_period(self.stages)

    @property
    def latency(self) -> Expr:
        """The step's time under its overlap rule (``t_lower`` holds it; under ``none`` it
        is T_upper)."""
        return self.t_lower

    @property
    def lower(self) -> Expr:
        """A lower bound on the step's time under its fractions: its time under its rule
        where the rule overlaps (``op``, ``phase``); under ``none``, each op's compute under
        its own memory traffic (the ``op`` rule's time). JSON's ``t_lower`` (``latency``
        beside it is the rule's time).

        >>> from symroof import chip
        >>> from symroof.models import model
        >>> none = Efficiency(overlap="none")
        >>> s = device_step(model("llama-2-7b"), "prefill", None, {}, batch=1, context=128,
        ...                 chip=chip("h100-sxm"), options=StepOptions(efficiency=none))
        >>> s.latency == s.t_upper, s.lower == device_step(
        ...     model("llama-2-7b"), "prefill", None, {}, batch=1, context=128,
        ...     chip=chip("h100-sxm")).latency, bool(s.lower < s.latency)
        (True, True, True)
        """
        if self.overlap != "none":
            return self.t_lower
        return self.roofline.t_lower + (self.t_upper - self.roofline.t_upper)

    @property
    def flops(self) -> Expr:
        return self.roofline.flops

    @property
    def bytes(self) -> Expr:
        return self.roofline.bytes


def degree(m: Mesh | None, axes: tuple[str, ...]) -> int:
    """The product of the sizes of ``axes`` (1 without a mesh)."""
    if m is None:
        return 1
    return int(sp.Mul(*(m.axis(a).size for a in axes)))


@records(t_lower=TIME, t_upper=TIME, terms=TIME, tokens=COUNT, throughput=PER_SECOND,
         editions=True, tries=({"kv_dtype": "fp8"}, {"kv_dtype": "int8"}))
def device_step(cfg: ModelConfig, phase: str, m: Mesh | None,
                axes: Mapping[str, tuple[str, ...]], *, batch: int | Expr | None,
                context: int | Expr, options: StepOptions = DEFAULT_OPTIONS,
                chip: Chip | None = None, prior: int | Expr = 0,
                decoding: tuple[int | Expr, int] | None = None,
                prompt: int | None = None, sampled: int | Expr | None = None) -> DeviceStep:
    """The step of ``phase`` under ``options``: ``device_steps`` under its one efficiency.

    >>> from symroof import chip
    >>> from symroof.core.choices import Choices
    >>> from symroof.models import model
    >>> at = dict(batch=8, context=4096, chip=chip("h100-sxm"))
    >>> step = device_step(model("llama-2-7b"), "decode", None, {}, **at,
    ...                    options=StepOptions(choices=Choices(kv_dtype="fp8")))
    >>> step == device_step(model("llama-2-7b"), "decode", None, {}, **at,
    ...                     options=StepOptions(kv_dtype="fp8"))
    True
    """
    return device_steps(cfg, phase, m, axes, batch=batch, context=context, options=options,
                        chip=chip, prior=prior, decoding=decoding, prompt=prompt,
                        sampled=sampled)[0]


def device_steps(cfg: ModelConfig, phase: str, m: Mesh | None,
                 axes: Mapping[str, tuple[str, ...]], *, batch: int | Expr | None,
                 context: int | Expr, options: StepOptions = DEFAULT_OPTIONS,
                 efficiencies: tuple[Efficiency, ...] | None = None,
                 chip: Chip | None = None, prior: int | Expr = 0,
                 decoding: tuple[int | Expr, int] | None = None,
                 prompt: int | None = None,
                 sampled: int | Expr | None = None) -> tuple[DeviceStep, ...]:
    """The step of ``phase`` for ``batch`` sequences (global; symbol B when None) at
    ``context`` on mesh ``m``, ``axes`` naming the mesh axes of each kind (tp, pp, ep, dp);
    without a mesh, on ``chip`` alone; built under ``options`` (``plans.options``): its
    weights and cache in ``options.dtype`` and ``options.kv_dtype``, its kernels as
    ``options.kernel`` says (default flash attention); with ``options.in_network`` the
    tensor-parallel AllReduces reduce in the switch where the tensor axes are one switched
    network (``parallel.in_network``), as rings otherwise (noted); its collectives costed
    under ``options.choices`` (``core.choices.COLLECTIVE_CHOICES``) and a mixture's routed
    experts reading the weights ``choices.experts`` says (``layer_ops``); a
    ``choices.kv_dtype`` other than ``as_given`` (a text's KV cache in ``fp8`` or ``int8``,
    tried by the judge) is the KV cache's dtype, as ``options.kv_dtype`` gives it. A prefill with
    ``prior`` positions already cached is a chunk of a chunked prefill (``layer_ops``);
    ``decoding`` = (B_d, T_d) rides B_d decode tokens (global; a number or a symbol) along
    a prefill chunk; ``prompt`` is the whole prompt's length a chunk's dense attention
    count scores against (``layer_ops``); ``sampled`` (global) is how many token ids the
    step sends back from a pipeline's last stage to its first for the next step (default:
    one per sequence of a decode step, one per decode rider of a chunk, none for a plain
    prefill or chunk); the step counts the HBM traffic
    ``choices.traffic`` says (``layer_ops``); ``choices.edition`` takes the chip table's
    other edition of the chip's figures (its peaks, HBM and links: ``Mesh.under``), noted.
    One step under each of ``efficiencies``
    (default: ``options.efficiency``), each under ``options.overlap`` when it names a rule,
    the ops, their collectives and their rooflines at peak built once for all of them (a
    forecast and its bound)."""
    options.refuse(TRAINING_ONLY, "a model step")
    dtype, kv_dtype, in_network = options.dtype, options.kv_dtype, options.in_network
    kernel = options.kernel_or(DEFAULT_KERNEL)
    efficiencies = efficiencies or (options.efficiency,)
    if options.overlap is not None:
        efficiencies = tuple(replace(e, overlap=options.overlap) for e in efficiencies)
    choices = options.choices
    edition = choices.edition  # another edition of the chip table: its figures, links too
    if edition:
        m = m.under(choices) if m is not None else None
        chip = chip.under(choices) if chip is not None else None
        choices = choices.with_(edition="")
    if choices.kv_dtype != EXACT.kv_dtype:  # a text's KV cache dtype: options.kv_dtype's
        kv_dtype, choices = choices.kv_dtype, choices.with_(kv_dtype=EXACT.kv_dtype)
    choices = choices.within(STEP_CHOICES, "a model step")
    read = choices.experts
    if read != EXACT.experts and cfg.moe is None:
        raise InputError(f"experts={read}: {cfg.name} has no mixture of experts", "choices")
    counted = choices.traffic
    if counted == "weights_kv" and cfg.mla is not None:
        raise InputError(f"traffic=weights_kv: {cfg.name}'s latent attention (MLA) has no "
                         "text's count of its KV cache here; traffic=weights or all", "choices")
    # what is left costs the collectives
    choices = choices.with_(**{n: getattr(EXACT, n) for n in OP_CHOICES})
    tp, pp, ep = (degree(m, axes.get(k, ())) for k in ("tp", "pp", "ep"))
    replicas = degree(m, axes.get("dp", ())) * ep
    part = shard(cfg, tp, pp=pp, ep=ep)
    B = symbol("B") if batch is None else sp.sympify(batch)
    riders = sp.S.Zero if decoding is None else sp.sympify(decoding[0]) / replicas
    ops = layer_ops(part, phase, batch=B / replicas, context=context, dtype=dtype,
                    kv_dtype=kv_dtype, expert_split=ep, prior=prior,
                    decoding=None if decoding is None else (riders, decoding[1]),
                    prompt=prompt, experts=read, traffic=counted, **kernel.options())
    the_chip = m.chip if m is not None else chip
    if the_chip is None:
        raise InputError("a step needs a mesh or a chip", "chip")
    _peak_for(dtype, the_chip)
    ab = dtype_bytes(ops.dtype)
    row_bytes = ops.tokens * cfg.d_model * ab
    notes: set[str] = set(the_chip.rounded())  # a text's rounded figures, said
    if edition:
        notes.add(f"edition={edition}: the chip figures of that edition of the table")
    if read != EXACT.experts:
        notes.add(f"experts={read}: {OPTIONS['experts'][read]} (leaves out "
                  f"{DROPS[('experts', read)]})")
    if counted != EXACT.traffic:
        notes.add(f"traffic={counted}: {OPTIONS['traffic'][counted]} (leaves out "
                  f"{DROPS[('traffic', counted)]})")
    if kernel.activations == "on_chip" and batch is not None:  # what the choice asks to hold
        through = layer_ops(part, phase, batch=B / replicas, context=context, dtype=dtype,
                            kv_dtype=kv_dtype, expert_split=ep, prior=prior,
                            decoding=None if decoding is None else (riders, decoding[1]),
                            prompt=prompt, experts=read,
                            **replace(kernel, activations="hbm").options())
        largest = max(o.writes.get("hbm", sp.S.Zero) for _, o in through.rows())
        notes.add(f"{phase}: activations kept on chip, the largest an op writes "
                  f"{si(largest, 'B')} per device (an on-chip memory must hold it)")
    # the collectives, each (op it follows or None for once a step, kind, costed collective)
    planned: list[tuple[str | None, str, Collective]] = []

    def add(op_name: str | None, kind: str, c: Collective) -> None:
        if choices != EXACT:
            c = c.under(choices)
        if m is not None:
            _sourced(c, m, notes)
        planned.append((op_name, kind, c))

    if m is not None and tp > 1:
        how = "ring"
        if in_network:
            how = in_switch_algorithm([m.axis(a) for a in axes["tp"]]) or "ring"
            notes.add(f"tp over {'+'.join(axes['tp'])}: AllReduce " + (
                f"reduced in the switch ({how})" if how != "ring" else
                "as a ring (the tensor axes are not one switched network)"))
        reduce = collective("allreduce", row_bytes, axes["tp"], m, how)
        after = {"embedding", "output", *(b.ops[-1].name for b in ops.blocks[:-1])}
        order = ["embedding", *(o.name for b in ops.blocks[:-1] for o in b.ops)]
        for name in dict.fromkeys(n for n in order if n in after):  # in the step's order
            add(name, "tp", reduce)  # the row-parallel outputs (experts' too), the lookup
        logits = (ops.batch + riders) * cfg.vocab * ab  # sampled positions, one a sequence
        add("output head", "tp", collective("allgather", logits, axes["tp"], m))
    if m is not None and ep > 1 and cfg.moe is not None:
        routed = ops.tokens * cfg.moe.top_k * cfg.d_model * ab
        a2a = collective("alltoall", routed, axes["ep"], m)
        add("router", "ep", a2a)  # dispatch after the router, combine after the experts
        add("experts down", "ep", a2a)
    # the token ids the next step needs back at the first stage (a device's share)
    ids: Expr = (sp.sympify(sampled) / replicas if sampled is not None
                 else ops.batch if phase == "decode" else riders)
    if m is not None and pp > 1:
        add(None, "pp", collective("permute", row_bytes, axes["pp"][0], m))
        if ids != 0:
            add(_BACK, "pp", collective("permute", ids * TOKEN_ID_BYTES,
                                        axes["pp"][0], m))
    calls: dict[str, Expr] = {}
    for b in ops.blocks:
        for o in b.ops:
            calls[o.name] = calls.get(o.name, sp.S.Zero) + b.count
    costs = [(c.bandwidth_time, _known(c.latency_time, notes)) for _, _, c in planned]
    base = peak_rooflines(ops, the_chip)
    tokens = ops.tokens * replicas

    def under(efficiency: Efficiency) -> DeviceStep:
        extras: dict[str, dict[str, Expr]] = {}
        once: dict[str, Expr] = {}
        back: Expr = sp.S.Zero  # a pipeline's sampled tokens, last stage to first
        comms: list[Comm] = []
        said = set(notes)
        for (op_name, kind, c), (bandwidth, latency) in zip(planned, costs, strict=True):
            label = f"{kind} over {'+'.join(c.axes)} ({', '.join(sorted(c.bandwidths()))})"
            f = min((efficiency.of(x) for x in (*c.bandwidths(), kind)), default=sp.S.One)
            time = (_called(c, efficiency.calls, bandwidth / f, latency, said)
                    if efficiency.calls else bandwidth / f + latency)
            if op_name is None:  # a pipeline's hop, pp - 1 times a step
                once[label] = (pp - 1) * time
                comms.append(Comm("each stage", kind, c.kind, c.nbytes, sp.Integer(pp - 1),
                                  time))
                continue
            if op_name == _BACK:  # once a step, from the last stage; none while no rider
                # (in sizes still symbols, 0 at none: a compiled hybrid step at D = 0)
                back = time if ids.is_number else sp.Piecewise(
                    (time, sp.Gt(ids, 0, evaluate=False)), (sp.S.Zero, True),
                    evaluate=False)
                once[f"{_BACK} over {label.split(' over ', 1)[1]}"] = back
                comms.append(Comm("last stage", kind, c.kind, c.nbytes, sp.S.One, back))
                continue
            extras.setdefault(op_name, {})
            extras[op_name][label] = extras[op_name].get(label, 0) + time
            comms.append(Comm(op_name, kind, c.kind, c.nbytes, calls[op_name], time,
                              c.algorithm))
        fractions = {k: efficiency.of(k) for k in ("compute", "hbm")}
        srl = step_roofline(ops, the_chip, extras, fractions, base)
        terms = dict(srl.terms)
        terms.update(once)
        # the step's latency under the efficiency's overlap rule: per op (T_lower), every
        # term at once (the longest), or none (T_upper; a calibration says why it takes it)
        t_upper = srl.t_upper + sp.Add(*once.values())
        if pp > 1:  # the path: each stage's own time under the rule, and the sends
            send = (sp.Add(*once.values()) - back) / (pp - 1)
            stages = pipeline_stages(srl, pp, efficiency.overlap, send, back)
            t_lower = sp.Add(*(s.count * s.time for s in stages)) + (pp - 1) * send + back
            slowest = _slowest(stages)
            return DeviceStep(phase, srl, terms, t_lower, t_upper, binding(terms), tokens,
                              tokens / _slowest_period(stages),
                              tuple(sorted(said)), tuple(comms), efficiency.overlap,
                              stages, slowest)
        t_lower = {"op": srl.t_lower + sp.Add(*once.values()), "none": t_upper,
                   "phase": sp.Max(*terms.values())}[efficiency.overlap]
        return DeviceStep(phase, srl, terms, t_lower, t_upper, binding(terms), tokens,
                          tokens * pp / t_lower, tuple(sorted(said)), tuple(comms),
                          efficiency.overlap)
    return tuple(under(e) for e in efficiencies)


def stage_share(block: str, op_name: str, stage: str, pp: int) -> Expr:
    """The share of an op of ``block`` that pipeline ``stage`` (``first``, ``middle`` or
    ``last``) of ``pp`` runs: 1/pp of each layer block's count; the head block's embedding
    on the first stage alone, its final norm and output head on the last.

    >>> stage_share("layer", "qkv", "middle", 4), stage_share("head", "embedding", "last", 4)
    (1/4, 0)
    """
    if block != "head":
        return sp.Rational(1, pp)
    runs = FIRST_STAGE_OPS if stage == "first" else LAST_STAGE_OPS if stage == "last" else ()
    return sp.S.One if op_name.startswith(runs) else sp.S.Zero


def pipeline_stages(srl: StepRoofline, pp: int, overlap: str, send: Expr,
                    back: Expr = sp.S.Zero) -> tuple[Stage, ...]:
    """The stages of a step on ``pp`` > 1 stages from the rows of its path ``srl`` (each
    op's roofline with the collectives after it): each stage's share of each op
    (``stage_share``), its time under ``overlap`` (``op``: each op's overlapped time,
    summed; ``phase``: its longest term; ``none``: every term, summed) and ``send`` after
    it but the last, which sends ``back`` (the sampled tokens to the first stage).

    >>> from symroof.models import model
    >>> from symroof.parallel.mesh import mesh
    >>> s = device_step(model("llama-2-7b"), "decode", mesh("X=4", "h100-sxm"),
    ...                 {"pp": ("X",)}, batch=8, context=1024)
    >>> [(x.name, x.count) for x in s.stages], s.slowest   # the last runs the head
    ([('first', 1), ('middle', 2), ('last', 1)], 'last')
    >>> s.latency == (sum(x.count * x.time for x in s.stages) + 3 * s.stages[0].send
    ...               + s.stages[-1].send)   # the activations on, the sampled tokens back
    True
    """
    names = ("first", "middle", "last") if pp > 2 else ("first", "last")
    out = []
    for name in names:
        rows = tuple((r, r.count * share) for r in srl.rows
                     if (share := stage_share(r.block.name, r.op.name, name, pp)) != 0)
        if overlap == "phase":
            time = sp.Max(*_summed(rows).values())
        else:
            time = sp.Add(*(n * (r.roofline.t_lower if overlap == "op" else
                                 r.roofline.t_upper) for r, n in rows))
        out.append(Stage(name, pp - 2 if name == "middle" else 1, rows, time,
                         back if name == "last" else send))
    return tuple(out)


def restaged(step: DeviceStep, stages: tuple[Stage, ...], **changed: Any) -> DeviceStep:
    """Pipelined ``step`` with its ``stages`` retimed (each still the same share of the
    path): its latency their periods summed, its throughput the tokens over the slowest
    period; ``changed`` replaces other fields (its terms, T_upper, bound).

    >>> from symroof.models import model
    >>> from symroof.parallel.mesh import mesh
    >>> s = device_step(model("llama-2-7b"), "decode", mesh("X=2", "h100-sxm"),
    ...                 {"pp": ("X",)}, batch=8, context=1024)
    >>> restaged(s, s.stages) == s
    True
    """
    latency = sp.Add(*(st.count * st.period for st in stages))
    return replace(step, t_lower=latency, throughput=step.tokens / _slowest_period(stages),
                   stages=stages, slowest=_slowest(stages), **changed)


def _summed(rows: tuple[tuple[Row, Expr], ...]) -> dict[str, Expr]:
    """The named terms of ``rows`` (a roofline row and how many times it runs), summed."""
    parts: dict[str, list[Expr]] = {}
    for r, n in rows:
        for k, v in r.roofline.terms.items():
            parts.setdefault(k, []).append(n * v)
    return {k: sp.Add(*v) for k, v in parts.items()}


def _slowest_period(stages: tuple[Stage, ...]) -> Expr:
    """The longest of the end stages' periods: a middle stage runs what the first does but
    the embedding, with the same send, so it is never the slower of the two. In sizes
    still symbols the maximum is left unevaluated (comparing the two sums term by term
    costs more than a search's whole compiled step; a number evaluates it)."""
    periods = (stages[0].period, stages[-1].period)
    return sp.Max(*periods, evaluate=all(p.is_number for p in periods))


def _slowest(stages: tuple[Stage, ...]) -> str:
    """The stage with the longest period (the first of equals, from the first stage on),
    "" while the sizes are symbols."""
    periods = [s.period for s in stages]
    if not all(p.is_number for p in periods):
        return ""
    top = max(periods, key=lambda p: sp.Rational(p) if p.is_Rational else float(p))
    return next(s.name for s in stages if s.period == top)


def _peak_for(dtype: str, chip: Chip) -> None:
    """A weights scheme that runs the projections in its activations' dtype (fp8-w8a8)
    needs the chip's matrix peak in that dtype."""
    s = scheme_of(dtype)
    if s is not None and s.activations and f"mxu.{s.activations}" not in chip.figures:
        raise InputError(f"{s.name} runs the projections at the chip's {s.activations} "
                         f"peak, and {chip.name} lists none", "dtype")


RING_MODELLED = ("allreduce", "allgather", "reducescatter")  # NCCL's ring cost model's


def _called(c: Collective, calls: Mapping[str, tuple[CallLatency, ...]],
            bandwidth: Expr, latency: Expr, notes: set[str]) -> Expr:
    """The time of ring collective ``c`` on one link a calibration names in ``calls``: each
    protocol's cost (its per-call and per-hop latency, its bytes at its bandwidth, or
    ``bandwidth``, the time at the calibrated fraction), the fastest where the sizes are
    numbers (the library's tuner picks by the same model), else the protocol at the
    calibrated fraction; noted. Any other collective (on more than one link, reduced in
    the switch, a pipeline's send or an all-to-all, which NCCL's ring model does not cost)
    costs ``bandwidth + latency``.

    >>> from symroof.parallel.mesh import mesh
    >>> from symroof.plans.efficiency import CallLatency
    >>> c = collective("allreduce", 2**21, ("X",), mesh("X=4", "h100-sxm"))
    >>> simple = CallLatency("Simple", sp.Rational(84, 10**7), sp.Rational(34, 10**7), "N")
    >>> _called(c, {"nvlink": (simple,)}, 0, c.latency_time, set()) * 10**6  # 8.4 + 6 x 3.4
    144/5
    """
    links = {s.link for s in c.stages}
    if (len(links) != 1 or next(iter(links)) not in calls or c.algorithm != "ring"
            or c.kind not in RING_MODELLED):
        return bandwidth + latency
    link = next(iter(links))
    per_link = sp.Add(*(s.per_link for s in c.stages))
    costs = [(p.latency(c.hops) + (bandwidth if p.bandwidth is None else
                                   per_link / p.bandwidth), p) for p in calls[link]]
    if not all(t.is_number for t, _ in costs):  # sizes in symbols: the fastest at each
        notes.add(f"{link}: a collective call costs its library's modelled time, the "
                  f"fastest of its protocols ({', '.join(p.protocol for p in calls[link])}) "
                  f"at the call's size ({'; '.join(p.source for p in calls[link])})")
        return sp.Min(*(t for t, _ in costs))
    time, chosen = min(costs, key=lambda tp: float(tp[0]))
    notes.difference_update({n for n in notes if n.startswith(f"{link}: ")})
    notes.add(f"{link}: a collective call costs its library's modelled time, the fastest "
              f"of its protocols ({', '.join(p.protocol for p in calls[link])}) at the "
              f"call's size, in place of the catalogue's per-hop latency")
    notes.add(f"{link} {TITLES[c.kind]} of {si(c.nbytes, 'B')} over {'+'.join(c.axes)}: "
              f"{chosen.protocol}, {si(chosen.per_call, 's')} a call and "
              f"{si(chosen.per_hop, 's')} a hop ({chosen.source})")
    return time


def _known(latency: Expr, notes: set[str]) -> Expr:
    """A latency term with every unknown per-hop latency taken as 0 (noted)."""
    unknown = {s for s in latency.free_symbols if s.name.startswith("alpha_")}
    link_of = {s: s.name.removeprefix("alpha_") for s in unknown}
    notes.update(f"{s}: a per-hop latency no source gives, taken as 0 (T_lower stays a "
                 f"lower bound; give the figure \"{link}.latency\", e.g. "
                 f"{link}.latency=2us)"
                 for s, link in link_of.items())
    return latency.subs({s: 0 for s in unknown})


def _sourced(c: Collective, m: Mesh, notes: set[str]) -> None:
    """Notes each sourced per-hop latency ``c`` counts, with its source."""
    for name in c.axes:
        axis = m.axis(name)
        for part in axis.parts or (axis,):
            ln = part.link
            if ln.latency_known and ln.latency == 0:
                notes.add(f"{ln.name}: per-hop latency set to 0 ({ln.latency_source}): "
                          f"its collectives at bandwidth only")
            elif ln.latency_known:
                notes.add(f"{ln.name}: {si(ln.latency, 's')} per hop counted "
                          f"({ln.latency_source}); the figure \"{ln.name}.latency\" set "
                          f"to 0 gives the bandwidth-only bound")


def step_critical(step: DeviceStep, context: int | None = None) -> Critical:
    """The global batch above which ``step`` (built with ``batch=None``) is compute-bound:
    compute against each of its other terms (``engine.critical``); ``context`` for a step
    built in the symbol T too."""
    at = {} if context is None else {symbol("T"): context}
    terms = {k: spelled(v.xreplace(at)) for k, v in step.terms.items()}
    return critical_size(terms["compute"], {k: v for k, v in terms.items() if k != "compute"},
                         symbol("B"))
