"""The cost of a collective on each network it crosses: ring, line, switch, torus rings at once.

>>> from symroof.parallel.mesh import mesh
>>> [s.hops for s in stages("allgather", sp.Integer(1000), [mesh("X=16", "tpu-v5e").axis("X")])]
[8]

The rules are those of :mod:`symroof.parallel.collectives` (its docstring lists them);
``choices`` (:mod:`symroof.core.choices`) take the leading term in the axis size, drop the
latency, or leave a ring's second direction out; ``collectives="v_over_w"`` is a hand
calculation's slip, an AllReduce costed as one pass of its leading term (V/W, not the
2(n-1)/n V/W of a ReduceScatter and an AllGather).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from ..core.choices import EXACT, Choices
from .mesh import Axis


@dataclass(frozen=True)
class Stage:
    """One network a collective crosses: ``sent`` bytes per device, ``per_link`` bytes on
    the busiest directed link (or switch port), ``hops`` latency steps."""

    axis: str
    size: sp.Expr
    link: str
    bandwidth: sp.Expr
    sent: sp.Expr
    per_link: sp.Expr
    hops: sp.Expr
    latency: sp.Expr

    @property
    def bandwidth_time(self) -> sp.Expr:
        return self.per_link / self.bandwidth

    @property
    def latency_time(self) -> sp.Expr:
        return self.hops * self.latency



def stages(kind: str, v: sp.Expr, axes: list[Axis],
            choices: Choices = EXACT) -> tuple[Stage, ...]:
    flat = [(a.name, s) for a in axes for s in a.stages()]
    if choices.link_alpha == "one_way":  # a ring's second direction is not counted
        flat = [(n, replace(s, bidirectional=False) if s.ring else s) for n, s in flat]
    if kind in ("allgather", "reducescatter"):
        out = _gather(v, flat, choices)
    elif kind == "allreduce":
        gather = _gather(v, flat, choices)
        out = gather if choices.collectives == "v_over_w" else (*reversed(gather), *gather)
    elif kind == "alltoall":
        out = tuple(_one(kind, g[0][0], g[0][1], v, choices) if len(g) == 1 else
                    _all_to_all_at_once(g, v, choices) for g in _groups(flat))
    else:
        out = tuple(_one(kind, name, s, v, choices) for name, s in flat)
    if kind == "reducescatter":
        out = tuple(reversed(out))
    if choices.latency == "off":
        out = tuple(replace(s, latency=sp.S.Zero) for s in out)
    if choices.latency == "per_message" and out:  # one message per call, not per hop
        out = (replace(out[0], hops=sp.S.One),
               *(replace(s, hops=sp.S.Zero, latency=sp.S.Zero) for s in out[1:]))
    return out


def _groups(flat: list[tuple[str, Axis]]) -> list[list[tuple[str, Axis]]]:
    """Neighbouring rings (more than one chip) of one link, which run at once."""
    groups: list[list[tuple[str, Axis]]] = []
    for name, s in flat:
        last = groups[-1][-1][1] if groups else None
        if last is not None and s.ring and s.size != 1 and last.ring and last.size != 1 \
                and last.link.name == s.link.name:
            groups[-1].append((name, s))
        else:
            groups.append([(name, s)])
    return groups


def _all_to_all_at_once(group: list[tuple[str, Axis]], v: sp.Expr,
                        choices: Choices = EXACT) -> Stage:
    """An AllToAll over several rings of a torus: every ring works at once and the longest
    one decides (the book: V max(A, B, ...) / (4 N W_bidi) for V bytes over N chips)."""
    parts = [_one("alltoall", name, s, v, choices) for name, s in group]
    n = sp.Mul(*(s.size for _, s in group))
    return Stage("".join(name for name, _ in group), n, parts[0].link, parts[0].bandwidth,
                 sp.cancel(_share(n, choices) * v), sp.Max(*(p.per_link for p in parts)),
                 sp.Add(*(p.hops for p in parts)), parts[0].latency)


def _gather(v: sp.Expr, flat: list[tuple[str, Axis]],
            choices: Choices = EXACT) -> tuple[Stage, ...]:
    """AllGather stages in order; neighbouring rings of one link run at once (their
    bandwidths add, their hops add), as the book has it for AllGather_XY on a torus."""
    groups = _groups(flat)
    out = []
    for i, group in enumerate(groups):
        later = sp.Mul(*(t.size for g in groups[i + 1:] for _, t in g))
        if len(group) == 1:
            out.append(_one("allgather", group[0][0], group[0][1], v / later, choices))
        else:
            out.append(_concurrent(group, v / later, choices))
    return tuple(out)


def _concurrent(group: list[tuple[str, Axis]], v: sp.Expr,
                choices: Choices = EXACT) -> Stage:
    """Rings of one link gathering at once: (n-1)/n V over the sum of their bandwidths."""
    n = sp.Mul(*(s.size for _, s in group))
    base = group[0][1].bandwidth
    rate = sp.Add(*((2 if s.wraps and s.bidirectional else 1) * s.bandwidth for _, s in group))
    sent = sp.cancel(_share(n, choices) * v)
    lead = _leading(choices)
    hops = sp.Add(*(_half(s.size, lead) if s.wraps and s.bidirectional else
                    s.size - (0 if lead else 1) for _, s in group))
    return Stage("".join(name for name, _ in group), n, group[0][1].link.name, base, sent,
                 sp.cancel(sent * base / rate), hops, group[0][1].latency)


def _leading(choices: Choices) -> bool:
    """The leading term in the axis size: also what a text that writes V/W takes."""
    return choices.collectives in ("leading", "v_over_w")


def _share(n: sp.Expr, choices: Choices) -> sp.Expr:
    """The share of the gathered bytes a device receives: (n-1)/n, or 1 as a leading term."""
    return sp.S.One if _leading(choices) else (n - 1) / n


def _half(n: sp.Expr, lead: bool) -> sp.Expr:
    return n / 2 if lead else sp.floor(n / 2)


def _one(kind: str, name: str, s: Axis, v: sp.Expr, choices: Choices = EXACT) -> Stage:
    """One stage on one network; ``v`` is the gathered size (AllGather) or the per-device
    size (AllToAll, permute). As a leading term in n, (n-1) is n and floor(x) is x."""
    n = s.size
    if n == 1:
        zero = sp.S.Zero
        return Stage(name, n, s.link.name, s.bandwidth, zero, zero, zero, s.latency)
    wrapped = s.ring and s.wraps and s.bidirectional
    one_way = s.ring and s.wraps and not s.bidirectional
    line = s.ring and not s.wraps
    lead = _leading(choices)
    less = n if lead else n - 1
    sent = _share(n, choices) * v
    if kind == "allgather":
        per_link = sent / 2 if wrapped else sent
        hops = _half(n, lead) if wrapped else less
    elif kind == "alltoall":
        quarter = n ** 2 / 4 if lead else sp.floor(n ** 2 / 4)
        per_link = (quarter * v / (2 * n) if wrapped else less * v / 2 if one_way
                    else quarter * v / n if line else sent)
        hops = _half(n, lead) if wrapped else less if s.ring else sp.S.One
    else:  # permute
        sent = per_link = v
        hops = less if line else sp.S.One
    return Stage(name, n, s.link.name, s.bandwidth, sp.cancel(sent), sp.cancel(per_link),
                 sp.sympify(hops), s.latency)
