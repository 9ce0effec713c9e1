"""Achieved efficiency: a named assumption, a fraction of a peak per term, never a fudge.

>>> e = parse_fractions("compute=0.6, ici=0.8")
>>> e.of("compute"), e.of("hbm"), e.describe()
(3/5, 1, 'compute at 3/5 of peak, ici at 4/5 of peak')

A term's time under an assumption is its time at peak divided by the fraction; a term the
assumption does not name runs at its peak. The assumption travels with the plan and is
printed beside every result it changes. A named calibration (``megatron-a100``, or a
``.toml`` file; ``symroof.plans.calibration.parse_efficiency``) brings its fractions with
their sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy as sp

from ..core.errors import InputError
from ..core.parse import parse_expr

if TYPE_CHECKING:
    from .conventions import Conventions


@dataclass(frozen=True)
class CallLatency:
    """What one collective call on a link costs under one ``protocol`` of its library:
    ``per_call`` seconds once and ``per_hop`` seconds a step of its ring, its bytes at
    ``bandwidth`` (bytes/s on the busiest link; None: the link's peak times the
    calibration's fraction), as ``source`` measures or models them.

    >>> c = CallLatency("Simple", sp.Rational(84, 10**7), sp.Rational(34, 10**7), "NCCL")
    >>> c.latency(6) * 10**6                 # 8.4 + 6 x 3.4 us
    144/5
    """

    protocol: str
    per_call: sp.Expr
    per_hop: sp.Expr
    source: str
    bandwidth: sp.Expr | None = None

    def latency(self, hops: sp.Expr | int) -> sp.Expr:
        return self.per_call + hops * self.per_hop


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak by term name (``compute``, ``hbm``, a link or an axis name);
    ``conventions``: the choices a calibration was fitted under (``plans.conventions``),
    which it brings along; ``calls``: what a collective call costs on a link, by link name,
    under each protocol of its library (``CallLatency``: a serving calibration's, with its
    source), in place of the catalogue's per-hop latency."""

    fractions: Mapping[str, sp.Expr] = field(default_factory=dict)
    label: str = ""
    notes: tuple[str, ...] = ()
    overlap: str = "op"  # a serving step's rule (SERVING_OVERLAPS): how its terms add up
    conventions: Conventions | None = None
    calls: Mapping[str, tuple[CallLatency, ...]] = field(default_factory=dict)

    def of(self, term: str) -> sp.Expr:
        """The fraction assumed for ``term``: its own, else its family's (``ici`` for
        ``ici:X``), else 1."""
        if term in self.fractions:
            return self.fractions[term]
        family = term.split(":")[0].split(" ")[0]
        return self.fractions.get(family, sp.Integer(1))

    def apply(self, term: str, time: sp.Expr) -> sp.Expr:
        return time / self.of(term)

    def describe(self) -> str:
        if not self.fractions:
            return "every term at its peak"
        if self.label:
            return f"calibration {self.label}: " + "; ".join(self.notes) + (
                "" if self.overlap == "op" else f"; overlap {self.overlap}: "
                f"{SERVING_OVERLAPS[self.overlap]}")
        return ", ".join(f"{k} at {sp.sstr(v)} of peak" for k, v in self.fractions.items())

    def to_json(self) -> dict[str, str]:
        return {k: sp.sstr(v) for k, v in self.fractions.items()}


# how a serving step's time adds up its terms: the names and meanings of training's rules
# (plans.train_step.OVERLAPS), for the one phase a serving step is
SERVING_OVERLAPS = {
    "op": "each op's compute overlaps its own memory traffic, ops run one after another "
          "and each collective waits for the op it follows",
    "phase": "every term overlaps the others over the whole step (the step takes its "
             "longest term)",
    "none": "nothing overlaps (every op's compute, memory traffic and collective one after "
            "another)"}

PEAK = Efficiency()


def parse_fractions(spec: str | None, where: str = "efficiency") -> Efficiency:
    """``"compute=0.6,ici=0.8"`` -> fractions in (0, 1]; errors name the bad entry (a named
    calibration is ``plans.calibration.parse_efficiency``'s)."""
    if spec is None or not spec.strip():
        return PEAK
    out: dict[str, sp.Expr] = {}
    for raw in spec.split(","):
        name, eq, value = (s.strip() for s in raw.partition("="))
        if not eq or not name or not value:
            raise InputError(f"expected TERM=FRACTION, got {raw.strip()!r}", where)
        if name in out:
            raise InputError(f"{name!r} is given twice", where)
        try:
            fraction = parse_expr(value)
        except InputError as exc:
            raise InputError(f"{name}: {exc.message}", where) from None
        if not fraction.is_number or fraction.is_extended_real is not True or \
                not (0 < fraction <= 1):
            raise InputError(f"{name}: an efficiency is a fraction in (0, 1], got {value!r}",
                             where)
        out[name] = fraction
    return Efficiency(out)
