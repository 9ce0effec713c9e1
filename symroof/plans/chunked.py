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
but sees no later chunk computes; ``--causal`` is the count that sees the mask). The
prefill time is the sum of the chunks' steps
(each waits for the one before: its KV); the first token comes with the last chunk. A last
chunk shorter than C takes the remainder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
    their device steps; ``time`` their latencies summed."""

    chunk: int
    sizes: tuple[int, ...]
    priors: tuple[int, ...]
    steps: tuple[DeviceStep, ...]
    riders: int = 0  # decode tokens each chunk step carries (Sarathi-Serve's hybrid batch)
    apart: Expr | None = None  # with riders: the chunks and the decode steps run apart

    @property
    def time(self) -> Expr:
        """The prefill: every chunk's step, one after another."""
        return sp.Add(*(s.latency for s in self.steps))

    @property
    def time_upper(self) -> Expr:
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
