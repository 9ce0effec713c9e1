"""Chunked prefill (Sarathi-Serve, Agrawal et al. 2024): each prompt's prefill in chunks of C
tokens, chunk i attending to the KV cache of the chunks before it and to itself.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.device_step import device_step
>>> m, cfg = mesh("X=8", "h100-sxm"), model("llama-2-7b")
>>> c = chunked_prefill(cfg, m, {"tp": ("X",)}, batch=8, context=4096, chunk=1024)
>>> c.sizes, c.priors
((1024, 1024, 1024, 1024), (0, 1024, 2048, 3072))
>>> whole = chunked_prefill(cfg, m, {"tp": ("X",)}, batch=8, context=4096, chunk=4096)
>>> whole.time == device_step(cfg, "prefill", m, {"tp": ("X",)}, batch=8, context=4096).latency
True

Each chunk is the one device step (``device_step``) of a prefill of c_i tokens with P_i =
i C positions already cached: its projections, norms and head run over the chunk's B c_i
tokens; its attention scores c_i queries against the P_i + c_i keys (reading the P_i
cached positions' K and V from memory), c_i P_i + c_i (c_i + 1) / 2 pairs causally. Summed
over the chunks of a prompt of T = n C tokens the causal pairs are C^2 n (n - 1) / 2 +
n C (C + 1) / 2 = T (T + 1) / 2, the causal prefill's exactly. The dense count (the
default) scores each chunk's c_i queries against the prompt's T positions, as the plain
prefill's dense count does: c_i T pairs, T^2 summed, the plain prefill's exactly; so
chunking never looks faster for counting fewer pairs (the block-causal rectangles
c_i (P_i + c_i), T (T + C) / 2 in all, are what a kernel that skips no masked block
but sees no later chunk computes; ``--causal`` is the count that sees the mask). Each chunk
waits for the KV cache of the ones before it; the first token comes with the last chunk. A
last chunk shorter than C takes the remainder. Without a pipeline the prefill time is the
sum of the chunks' steps. On a pipeline the chunks flow through the stages as microbatches
do (``flow``): chunk i enters a stage once it has left the stage before (and been sent on)
and chunk i - 1 has left that stage (its KV cache there written), each chunk's stage times
its own step's (``DeviceStep.stages``); the prefill time is the last chunk leaving the last
stage:

>>> m4 = mesh("X=4", "h100-sxm")
>>> p = chunked_prefill(cfg, m4, {"pp": ("X",)}, batch=8, context=4096, chunk=1024)
>>> p.flows, p.time < p.serial, p.time == p.left[-1]
(True, True, True)

The hybrid steps of ``decoding`` run one after another on a pipeline too: each carries the
next decode token of the same sequences, which waits for the token the step before sampled
on the last stage and sent back to the first (each step's latency counts that trip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..models.config import ModelConfig
from ..models.layers import DEFAULT_KERNEL
from ..parallel.mesh import Mesh
from .device_step import DeviceStep, device_steps
from .efficiency import Efficiency
from .options import DEFAULT_OPTIONS, StepOptions

#: the most chunks one prompt is split into (each a device step to derive)
MAX_CHUNKS = 1024


@dataclass(frozen=True)
class ChunkedPrefill:
    """The chunks of a prefill: their token counts, the positions each finds cached, and
    their device steps; ``time`` the prefill's: their latencies summed, or on a pipeline
    the last chunk leaving the last stage as the chunks flow through the stages
    (``flows``)."""

    chunk: int
    sizes: tuple[int, ...]
    priors: tuple[int, ...]
    steps: tuple[DeviceStep, ...]
    riders: int = 0  # decode tokens each chunk step carries (Sarathi-Serve's hybrid batch)
    apart: Expr | None = None  # with riders: the chunks and the decode steps run apart

    @property
    def flows(self) -> bool:
        """Whether the chunks flow through a pipeline's stages (``flow``): on a pipeline,
        unless each step carries decode tokens (the next step's wait for the tokens this
        one samples on the last stage)."""
        return bool(self.steps[0].stages) and self.riders == 0

    @property
    def serial(self) -> Expr:
        """Every chunk's step, one after another: their latencies summed."""
        return sp.Add(*(s.latency for s in self.steps))

    @cached_property
    def left(self) -> tuple[Expr, ...]:
        """When each chunk leaves the last stage, from the first chunk's start: as the
        chunks flow through the stages (``flow`` of each chunk's stage periods) when they
        flow, else one after another."""
        if self.flows:
            return flow([stage_periods(s) for s in self.steps])
        return tuple(sp.Add(*(s.latency for s in self.steps[:i + 1]))
                     for i in range(len(self.steps)))

    @property
    def time(self) -> Expr:
        """The prefill, to the first token: the last chunk leaving the last stage."""
        return self.left[-1] if self.flows else self.serial

    @property
    def time_upper(self) -> Expr:
        """Nothing overlapping, not even chunks on different stages: the chunks' T_upper
        summed."""
        return sp.Add(*(s.t_upper for s in self.steps))

    @property
    def flops(self) -> Expr:
        return sp.Add(*(s.flops for s in self.steps))

    @property
    def bytes(self) -> Expr:
        return sp.Add(*(s.bytes for s in self.steps))

    def rows(self) -> list[tuple[int, int, int, DeviceStep]]:
        """(index, tokens, cached positions, step) per chunk."""
        return [(i, c, p, s) for i, (c, p, s) in enumerate(zip(self.sizes, self.priors,
                                                               self.steps, strict=True))]


def stage_periods(step: DeviceStep) -> tuple[Expr, ...]:
    """The period of each of a pipelined step's stages, first to last (a middle one as many
    times as there are alike): its time under the step's rule and its send on
    (``Stage.period``); they sum to the step's latency.

    >>> from symroof.models import model
    >>> from symroof.parallel.mesh import mesh
    >>> from symroof.plans.device_step import device_step
    >>> s = device_step(model("llama-2-7b"), "prefill", mesh("X=4", "h100-sxm"),
    ...                 {"pp": ("X",)}, batch=1, context=512)
    >>> len(stage_periods(s)), sum(stage_periods(s)) == s.latency
    (4, True)
    """
    return tuple(st.period for st in step.stages for _ in range(st.count))


def flow(periods: Sequence[Sequence[Expr]]) -> tuple[Expr, ...]:
    """When each of the jobs ``periods`` lists (each its time on every stage, in the
    stages' order) leaves the last stage, the jobs passing through the stages in order, one
    at a time on each stage: the permutation flow shop's max-plus recurrence

        T[k][s] = max(T[k - 1][s], T[k][s - 1]) + t[k][s],   T[-1][s] = T[k][-1] = 0,

    job k entering stage s once it has left stage s - 1 and job k - 1 has left stage s,
    exactly. A chunked prefill's t[k][s] is chunk k's period on stage s
    (``stage_periods``): its time there and its send to stage s + 1, which holds the stage
    as ``Stage.period`` counts it (0 on the last, where a chunk without decode riders
    samples no token for the next step). The last job's is the makespan; with one job it
    is the job's periods summed; it is at least any stage's periods summed over the jobs
    and any job's over the stages, and at most every period summed.

    >>> flow([[2, 1], [2, 1]])  # the second job waits for the first stage, not the second
    (3, 5)
    >>> flow([[1, 3], [1, 3], [1, 3]])  # the slow second stage sets the pace
    (4, 7, 10)
    """
    jobs = [[sp.sympify(t) for t in job] for job in periods]
    left: list[Expr] = []
    if all(t.is_Rational for job in jobs for t in job):  # in exact fractions: a long flow's
        at = [Fraction(0)] * (len(jobs[0]) if jobs else 0)  # speed, SymPy's forms aside
        for job in jobs:
            out = Fraction(0)
            for s, t in enumerate(job):
                out = at[s] = max(at[s], out) + Fraction(int(t.p), int(t.q))
            left.append(sp.Rational(out.numerator, out.denominator))
        return tuple(left)
    done: list[Expr] = [sp.S.Zero] * len(jobs[0])
    for job in jobs:
        before: Expr = sp.S.Zero
        for s, t in enumerate(job):
            before = done[s] = sp.Max(done[s], before) + t
        left.append(before)
    return tuple(left)


def chunk_sizes(context: int, chunk: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The chunks of a prompt of ``context`` tokens: C tokens each, the last the remainder,
    and the positions cached before each.

    >>> chunk_sizes(10, 4)
    ((4, 4, 2), (0, 4, 8))
    """
    if not chunk > 0:
        raise InputError(f"a chunk holds a positive number of tokens, got {chunk}", "chunk")
    n = -(-context // chunk)
    if n > MAX_CHUNKS:
        raise InputError(f"{context} tokens in chunks of {chunk} make {n} chunks; at most "
                         f"{MAX_CHUNKS}", "chunk")
    sizes = tuple(min(chunk, context - i * chunk) for i in range(n))
    return sizes, tuple(i * chunk for i in range(n))


def chunked_prefill(cfg: ModelConfig, m: Mesh, axes: Mapping[str, tuple[str, ...]], *,
                    batch: int, context: int, chunk: int,
                    options: StepOptions = DEFAULT_OPTIONS,
                    decoding: tuple[int, int] | None = None) -> ChunkedPrefill:
    """The prefill of ``batch`` prompts of ``context`` tokens in chunks of ``chunk`` on
    mesh ``m`` (``axes`` as ``device_step`` takes them), each chunk's step under
    ``options``; with ``decoding`` = (B_d, T_d), each chunk step also carries one decode
    token of each of B_d sequences at context T_d, the weights read once for both
    (``apart``: the same work as chunk steps and decode steps one after another)."""
    return chunked_prefills(cfg, m, axes, batch=batch, context=context, chunk=chunk,
                            options=options, decoding=decoding)[0]


def chunked_prefills(cfg: ModelConfig, m: Mesh, axes: Mapping[str, tuple[str, ...]], *,
                     batch: int, context: int, chunk: int,
                     options: StepOptions = DEFAULT_OPTIONS,
                     efficiencies: tuple[Efficiency, ...] | None = None,
                     decoding: tuple[int, int] | None = None) -> tuple[ChunkedPrefill, ...]:
    """``chunked_prefill`` under each of ``efficiencies`` (default: ``options``' one),
    each chunk's step built once for all of them (``device_steps``)."""
    sizes, priors = chunk_sizes(context, chunk)
    kernel = options.kernel_or(DEFAULT_KERNEL)
    built = [device_steps(cfg, "prefill", m, axes, batch=batch, context=c, options=options,
                          efficiencies=efficiencies, prior=p, decoding=decoding,
                          prompt=None if kernel.causal else context)
             for c, p in zip(sizes, priors, strict=True)]
    steps = [tuple(b[i] for b in built) for i in range(len(built[0]))]
    if decoding is None:
        return tuple(ChunkedPrefill(chunk, sizes, priors, s) for s in steps)
    alone = chunked_prefills(cfg, m, axes, batch=batch, context=context, chunk=chunk,
                             options=options, efficiencies=efficiencies)
    decode = device_steps(cfg, "decode", m, axes, batch=decoding[0], context=decoding[1],
                          options=options, efficiencies=efficiencies)
    return tuple(ChunkedPrefill(chunk, sizes, priors, s, decoding[0],
                                a.time + len(sizes) * d.latency)
                 for s, a, d in zip(steps, alone, decode, strict=True))
