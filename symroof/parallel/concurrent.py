"""Collectives issued together: one after the other, or at once sharing their links.

>>> from symroof.core.choices import Choices
>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=16", "tpu-v5e")
>>> gather = collective("allgather", "V", "X", m)
>>> scatter = collective("reducescatter", "V", "X", m)
>>> t = together(gather, scatter, choices=Choices(latency="off"))
>>> t.time == gather.under(Choices(latency="off")).time * 2
True
>>> together(gather, scatter, choices=Choices(latency="off", concurrent="shared")).time
V/48000000000
>>> together(gather, scatter, choices=Choices(latency="off", concurrent="whole_link")).time
V/96000000000

A text that overlaps two collectives (the next layer's weights gathered while the last
layer's gradients are reduce-scattered) names the choice ``concurrent``: under ``none`` (the
exact model's order, as everywhere in the engine) their times add; under ``shared`` they
run at once, and the bytes of those that cross one link add on it, the busiest link
setting the time (collectives on different links overlap, each no faster than alone);
``whole_link`` gives each collective the link to itself, so the slowest sets the time: a
slip where they share a link, which a diagnosis names. The latencies add under ``none``
and overlap otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.choices import EXACT, TOGETHER_CHOICES, Choices
from ..core.errors import InputError
from ..core.units import TIME, records
from .collectives import LATENCY, Collective
from .collectives import collective as collective  # re-exported for the examples


@dataclass(frozen=True, repr=False)
class Together(tb.RichView):
    """Collectives issued together, each costed under ``choices``."""

    collectives: tuple[Collective, ...]
    choices: Choices = EXACT

    @property
    def per_link(self) -> dict[str, sp.Expr]:
        """Each link's time: the bytes every collective sends over it, at its bandwidth."""
        out: dict[str, sp.Expr] = {}
        for c in self.collectives:
            for link, t in c.terms().items():
                if link != LATENCY:
                    out[link] = out.get(link, sp.S.Zero) + t
        return out

    @property
    def bandwidth_time(self) -> sp.Expr:
        """Added (``none``), the busiest link's (``shared``: and no less than any one
        collective takes alone, whose levels keep their order) or the slowest collective's
        (``whole_link``)."""
        how = self.choices.concurrent
        times = [c.bandwidth_time for c in self.collectives]
        if how == "shared":
            return sp.Max(*self.per_link.values(), *times)
        return sp.Max(*times) if how == "whole_link" else sp.Add(*times)

    @property
    def latency_time(self) -> sp.Expr:
        """Added (``none``), or the longest one's (the collectives overlap)."""
        times = [c.latency_time for c in self.collectives]
        return sp.Add(*times) if self.choices.concurrent == "none" else sp.Max(*times)

    @property
    def time(self) -> sp.Expr:
        return self.bandwidth_time + self.latency_time

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [
            *((c.title, c.time) for c in self.collectives),
            *((f"on {link}, s", t) for link, t in self.per_link.items()),
            ("choices", self.choices.describe()), ("time, s", self.time)]
        return f"{len(self.collectives)} collectives together", tb.key_values(rows)


@records(time=TIME, bandwidth_time=TIME, latency_time=TIME)
def together(*collectives: Collective, choices: Choices = EXACT) -> Together:
    """Collectives issued together, costed under ``choices`` (``concurrent`` says whether
    they run at once; see the module).

    >>> from symroof.core.choices import Choices
    >>> from symroof.parallel.mesh import mesh
    >>> m = mesh("node=2,gpu=8", "h100-sxm")
    >>> inside, across = collective("allgather", "V", "gpu", m), collective("permute", "V",
    ...                                                                     "node", m)
    >>> together(inside, across, choices=Choices(latency="off", concurrent="shared")).time
    V/50000000000
    """
    if not collectives:
        raise InputError("give the collectives issued together", "together")
    bad = [c for c in collectives if not isinstance(c, Collective)]
    if bad:
        raise InputError(f"together takes collectives, got {type(bad[0]).__name__}",
                         "together")
    choices.within(TOGETHER_CHOICES, "collectives issued together", "together")
    return Together(tuple(c.under(choices) for c in collectives), choices)
