"""Parallel strategies mapped to mesh axes, parsed from ``"fsdp=X,tp=Y"``.

>>> s = parse_strategy("dp=pods,fsdp=X,tp=Y,sp")
>>> s.axes("fsdp"), s.zero_stage, s.sequence_parallel
(('X',), 3, True)
>>> str(parse_strategy("zero1=X+Y,pp=Z"))
'zero1=X+Y,pp=Z'

Kinds: ``dp`` (replicated weights, gradients all-reduced), ``zero1``/``zero2``/``zero3``
(ZeRO's stages: optimizer state, then gradients, then weights sharded over the axes;
``fsdp`` is ``zero3``), ``tp`` (Megatron tensor parallel), ``sp`` (a flag: sequence
parallel on the ``tp`` axes), ``pa`` (a flag: ZeRO-R's partitioned activation checkpoints
over the ``tp`` axes), ``pp`` (pipeline stages, 1F1B) and ``ep`` (experts). An
entry names one axis or several joined by ``+``; every axis serves one kind. ``dp`` may
sit beside one ZeRO kind (``dp=pods,fsdp=X``: replicas across pods, shards within).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core.errors import InputError

STRATEGY_KINDS = ("dp", "zero1", "zero2", "zero3", "tp", "pp", "ep")
ALIASES = {"fsdp": "zero3"}
FLAGS = ("sp", "pa")
ZERO = {"zero1": 1, "zero2": 2, "zero3": 3}
TITLES = {"dp": "data parallel", "zero1": "ZeRO stage 1", "zero2": "ZeRO stage 2",
          "zero3": "FSDP (ZeRO stage 3)", "tp": "tensor parallel (Megatron)",
          "pp": "pipeline (1F1B)", "ep": "expert parallel"}
_AXIS = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Strategy:
    """Which mesh axes each kind of parallelism uses; ``sequence_parallel`` and
    ``partition_activations`` (ZeRO-R's Pa) go with ``tp``."""

    assignments: tuple[tuple[str, tuple[str, ...]], ...]
    sequence_parallel: bool = False
    fsdp_spelling: bool = False
    partition_activations: bool = False

    def axes(self, kind: str) -> tuple[str, ...]:
        """The axes of ``kind`` (``fsdp`` means ``zero3``); empty when it is not used."""
        kind = ALIASES.get(kind, kind)
        return next((axes for k, axes in self.assignments if k == kind), ())

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.assignments)

    @property
    def zero_stage(self) -> int:
        """ZeRO stage over the sharded data axes: 0 when the data axes only replicate."""
        return next((ZERO[k] for k in self.kinds if k in ZERO), 0)

    @property
    def zero_kind(self) -> str | None:
        return next((k for k in self.kinds if k in ZERO), None)

    @property
    def data_axes(self) -> tuple[str, ...]:
        """Axes that split the batch: ``dp`` and the ZeRO kind (the global batch is split
        over them; the model is split over the others)."""
        return (*self.axes("dp"), *(self.axes(self.zero_kind) if self.zero_kind else ()))

    @property
    def all_axes(self) -> tuple[str, ...]:
        return tuple(a for _, axes in self.assignments for a in axes)

    def __str__(self) -> str:
        parts = []
        for kind, axes in self.assignments:
            name = "fsdp" if kind == "zero3" and self.fsdp_spelling else kind
            parts.append(f"{name}={'+'.join(axes)}")
        if self.sequence_parallel:
            parts.append("sp")
        if self.partition_activations:
            parts.append("pa")
        return ",".join(parts)

    def title(self) -> str:
        """In words: ``FSDP (ZeRO stage 3) over X, tensor parallel (Megatron) over Y``."""
        words = [f"{TITLES[k]} over {'+'.join(a)}" for k, a in self.assignments]
        if self.sequence_parallel:
            words.append("sequence parallel with the tensor axes")
        if self.partition_activations:
            words.append("activation checkpoints partitioned over the tensor axes (ZeRO-R)")
        return ", ".join(words)

    def check_mesh(self, axes: Iterable[str], where: str = "strategy") -> None:
        """Every strategy axis is on the mesh, and every mesh axis has a strategy."""
        names = list(axes)
        for axis in self.all_axes:
            if axis not in names:
                raise InputError(f"axis {axis!r} is not on the mesh (axes: "
                                 f"{', '.join(names)})", where)
        idle = [a for a in names if a not in self.all_axes]
        if idle:
            raise InputError(f"mesh axis {idle[0]!r} has no strategy (replicate over it "
                             f"with dp={idle[0]})", where)


def parse_strategy(spec: str, where: str = "strategy") -> Strategy:
    """A strategy from its spec; errors name the entry that is wrong.

    >>> parse_strategy("fsdp=X,tp=Y").title()
    'FSDP (ZeRO stage 3) over X, tensor parallel (Megatron) over Y'
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("empty strategy (write e.g. 'fsdp=X,tp=Y')", where)
    seen_axes: dict[str, str] = {}
    assignments: list[tuple[str, tuple[str, ...]]] = []
    flags: set[str] = set()
    fsdp = False
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            raise InputError(f"empty entry in {spec!r}", where)
        name, eq, value = (s.strip() for s in entry.partition("="))
        low = name.lower()
        if not eq:
            if low in FLAGS:
                flags.add(low)
                continue
            raise InputError(f"expected KIND=AXES, got {entry!r}", where)
        if low in FLAGS:
            raise InputError(f"{name!r} is a flag on the tp axes: write ',{low}', not "
                             f"{entry!r}", where)
        kind = ALIASES.get(low, low)
        if kind not in STRATEGY_KINDS:
            known = ", ".join([*STRATEGY_KINDS, *ALIASES, *FLAGS])
            raise InputError(f"unknown strategy {name!r} in {entry!r} (known: {known})", where)
        fsdp = fsdp or low == "fsdp"
        if any(k == kind for k, _ in assignments):
            raise InputError(f"{name!r} is given twice", where)
        axes = tuple(a.strip() for a in value.split("+"))
        for axis in axes:
            if not _AXIS.match(axis):
                raise InputError(f"bad axis name {axis!r} in {entry!r}", where)
            if axis in seen_axes:
                raise InputError(f"axis {axis!r} serves both {seen_axes[axis]} and {name}",
                                 where)
            seen_axes[axis] = name
        assignments.append((kind, axes))
    zero = [k for k, _ in assignments if k in ZERO]
    if len(zero) > 1:
        raise InputError(f"one ZeRO stage at a time, got {' and '.join(zero)}", where)
    for flag, what in (("sp", "sequence parallel"), ("pa", "partitioned activations")):
        if flag in flags and not any(k == "tp" for k, _ in assignments):
            raise InputError(f"'{flag}' ({what}) needs tp=AXES", where)
    if {"sp", "pa"} <= flags:
        raise InputError("'pa' partitions the checkpoints that sequence parallelism already "
                         "splits over the tensor axes: give sp or pa", where)
    if not assignments:
        raise InputError(f"no axis is assigned in {spec!r}", where)
    order = {k: i for i, k in enumerate(STRATEGY_KINDS)}
    assignments.sort(key=lambda kv: order[kv[0]])
    return Strategy(tuple(assignments), "sp" in flags, fsdp, "pa" in flags)


def degrees(strategy: Strategy, sizes: Mapping[str, object]) -> dict[str, object]:
    """The degree of each kind: the product of its axes' sizes (1 for a kind not used).

    >>> degrees(parse_strategy("fsdp=X,tp=Y"), {"X": 8, "Y": 4})["zero3"]
    8
    """
    out: dict[str, object] = {}
    for kind in STRATEGY_KINDS:
        total: object = 1
        for axis in strategy.axes(kind):
            total = total * sizes[axis]  # type: ignore[operator]
        out[kind] = total
    return out
