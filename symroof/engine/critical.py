"""The critical size of a sum of terms: where compute outlasts every other named term.

>>> import sympy as sp
>>> B = sp.Symbol("B", positive=True)
>>> c = critical_size(B / 100, {"hbm": 1 + B / 1000, "network": B / 400}, B)
>>> c.relation, c.value, c.integer
('B > 1000/9', 1000/9, 112)
>>> critical_size(B, {"hbm": 2 * B}, B).reason
'never compute-bound: hbm grows with B at least as fast as compute'

A step is compute-bound once its compute time exceeds each other term (the terms summed
over its ops, as the bound compares them). Each term is solved against compute by the
engine's ``solve_gap`` when their gap is a polynomial in the size; the step's critical size
is the largest of those roots, and its first whole number the integer above it. A gap with
terms c r^s (0 < r < 1: the experts a batch of s tokens leaves untouched) has no closed
form: its sign is decided exactly at whole s, each r^s term bounded by |c| and computed only
where the bound leaves the sign open, and the first whole s found by doubling and bisection
(the gap is a polynomial plus decaying terms, so it turns positive once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import DerivationError
from .thresholds import solve_gap

SEARCH_LIMIT = 2**24


@dataclass(frozen=True, repr=False)
class Critical(tb.RichView):
    """``relation`` (``B > 1000/9``, or None), its exact ``value`` when it has a closed form,
    the first whole ``integer`` on the compute-bound side, or the ``reason`` there is none.
    A size solved on a mesh also has its ``per_chip`` share, the ``chips`` that split it,
    the ``binding`` thresholds (phase, link, value) it is the largest of, and the
    ``existence`` condition on the other sizes for them to exist.

    >>> critical_size(sp.Symbol("B", positive=True), {}, sp.Symbol("B", positive=True))
    <Critical: critical B>
    """

    relation: str | None
    value: sp.Expr | None
    integer: int | None
    reason: str = ""
    size: sp.Symbol | None = None
    per_chip: sp.Expr | None = None
    chips: sp.Expr | None = None
    binding: tuple[tuple[str, str, sp.Expr], ...] = ()
    existence: sp.Basic = sp.true

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [("critical size", self.value if self.value is not None
                                        else self.relation or self.reason)]
        if self.integer is not None and self.value is not None and not self.value.is_Integer:
            rows.append(("first whole size", self.integer))
        if self.per_chip is not None:
            rows.append(("per chip", self.per_chip))
        rows += [(f"{p} against {link}", v) for p, link, v in self.binding]
        if self.existence is not sp.true:
            rows.append(("exists when", self.existence))
        return f"critical {self.size if self.size is not None else 'size'}", \
            tb.key_values(rows)


def critical_size(compute: sp.Expr, others: Mapping[str, sp.Expr], s: sp.Symbol) -> Critical:
    """The size ``s`` above which ``compute`` exceeds every one of ``others`` (their other
    symbols, a peak C or a bandwidth W, taken positive)."""
    return replace(_critical(compute, others, s), size=s)


def _critical(compute: sp.Expr, others: Mapping[str, sp.Expr], s: sp.Symbol) -> Critical:
    values: list[sp.Expr] = []
    integers: list[int | None] = []
    searched = False
    for name, term in others.items():
        gap = sp.expand(compute - term)
        poly = sp.Poly(sp.Add(*(t for t in sp.Add.make_args(gap) if t.is_polynomial(s))), s)
        if poly.degree() < 1 or poly.LC().is_nonpositive:
            if gap.is_nonnegative:
                continue
            return Critical(None, None, None, f"never compute-bound: {name} grows with "
                                              f"{s} at least as fast as compute")
        if gap.is_polynomial(s):
            if gap.subs(s, 0).is_nonnegative:
                continue
            try:
                root, _, _ = solve_gap(gap, s, f"T_compute = T_{name}")
            except DerivationError as exc:
                return Critical(None, None, None, exc.message)
            values.append(root)
            integers.append(int(sp.floor(root)) + 1 if root.is_number else None)
            continue
        first = _first_whole(gap, s)
        if first is None:
            return Critical(None, None, None, f"compute does not outlast {name} at any {s} "
                                              f"up to {SEARCH_LIMIT}")
        integers.append(first)
        searched = True
    if not integers:
        return Critical(f"{s} >= 1", None, 1)
    if searched:
        top = max(i for i in integers if i is not None)
        return Critical(f"{s} >= {top}", None, top, "no closed form: the experts a batch "
                        "touches grow like E (1 - (1 - k/E)^B); the integer is exact")
    value = sp.Max(*values)
    whole = None if None in integers else max(i for i in integers if i is not None)
    return Critical(f"{s} > {value}", value, whole)


def _first_whole(gap: sp.Expr, s: sp.Symbol) -> int | None:
    terms = sp.Add.make_args(gap)
    poly = sp.Add(*(t for t in terms if t.is_polynomial(s)))
    bound = sp.Add(*(abs(t.subs(s, 0)) for t in terms if not t.is_polynomial(s)))

    def ok(b: int) -> bool:
        base = poly.subs(s, b)
        if base - bound >= 0:
            return True
        if base + bound < 0:
            return False
        return bool(gap.subs(s, b) >= 0)
    if ok(1):
        return 1
    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > SEARCH_LIMIT:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
