"""The 1F1B pipeline schedule: its timeline, its bubble and its in-flight microbatches.

>>> import sympy as sp
>>> p, m = sp.symbols("p m", positive=True, integer=True)
>>> bubble_fraction(p, m)
(p - 1)/(m + p - 1)
>>> schedule(4, 8).bubble_fraction(), schedule(4, 8).in_flight
(Fraction(3, 11), (4, 3, 2, 1))
>>> v = sp.Symbol("v", positive=True, integer=True)
>>> bubble_over_ideal(p, m, v)
(p - 1)/(m*v)

The schedule is built by playing 1F1B (Narayanan et al., 2021): stage s runs
min(p - s, m) forwards to warm up, then alternates one backward and one forward, then drains
its backwards; each forward waits for the stage before it, each backward for the stage after
it. The symbolic bubble comes from the schedule's critical path, not from a typed formula:
the first microbatch's forward crosses p - 1 stages before the last stage starts, the last
stage then runs all m forwards and m backwards back to back, and the last backward crosses
p - 1 stages back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import sympy as sp

from ..core.errors import InputError
from ..core.memo import memo
from ..core.parse import exact
from ..core.steps import Step


@dataclass(frozen=True)
class Slot:
    """One forward (``F``) or backward (``B``) of microbatch ``micro`` on ``stage``."""

    stage: int
    kind: str
    micro: int
    start: Fraction
    end: Fraction


@dataclass(frozen=True)
class Schedule:
    """A played 1F1B schedule: every slot, the makespan and each stage's peak in-flight
    microbatches (forwards whose backward has not run: the activations it holds)."""

    stages: int
    micro: int
    forward: Fraction
    backward: Fraction
    slots: tuple[Slot, ...]
    makespan: Fraction
    in_flight: tuple[int, ...]

    def bubble_fraction(self) -> Fraction:
        """Idle share of each stage's time: 1 - busy / makespan (every stage is busy
        m (t_f + t_b))."""
        busy = self.micro * (self.forward + self.backward)
        return 1 - busy / self.makespan


def schedule(stages: int, micro: int, forward: Fraction | int = 1,
             backward: Fraction | int = 2) -> Schedule:
    """Play 1F1B with ``stages`` stages and ``micro`` microbatches, each forward taking
    ``forward`` and each backward ``backward`` on every stage.

    >>> schedule(2, 2).makespan
    Fraction(9, 1)
    """
    if stages < 1 or micro < 1:
        raise InputError(f"a pipeline needs at least 1 stage and 1 microbatch, got "
                         f"{stages} stages and {micro} microbatches")
    tf, tb = Fraction(forward), Fraction(backward)
    if tf <= 0 or tb < 0:
        raise InputError("forward time must be positive and backward time not negative")
    slots, ends = _play([tf] * stages, [tb] * stages, micro)
    peaks = []
    for s in range(stages):
        live = best = 0
        for kind, _ in _order(s, stages, micro):
            live += 1 if kind == "F" else -1
            best = max(best, live)
        peaks.append(best)
    return Schedule(stages, micro, tf, tb, tuple(slots), max(ends), tuple(peaks))


def played_makespan(forward: Sequence[Fraction], backward: Sequence[Fraction],
                    micro: int) -> Fraction:
    """The makespan of 1F1B played with stages of their own times: stage s runs each
    forward in ``forward[s]`` and each backward in ``backward[s]`` (a pipeline whose first
    stage also runs the embedding and whose last the output head).

    >>> played_makespan([Fraction(1)] * 4, [Fraction(2)] * 4, 8) == schedule(4, 8).makespan
    True
    >>> played_makespan([1, 1, 2], [2, 2, 4], 4)   # (4 + 3 - 1) x 3, and the last stage's 3 x 4
    Fraction(30, 1)
    """
    if len(forward) != len(backward) or not forward or micro < 1:
        raise InputError("a played pipeline needs one forward and one backward time per "
                         "stage and at least 1 microbatch")
    _, ends = _play([Fraction(x) for x in forward], [Fraction(x) for x in backward], micro)
    return max(ends)


def _play(tf: list[Fraction], tb: list[Fraction], micro: int,
          ) -> tuple[list[Slot], list[Fraction]]:
    """Every slot of 1F1B over ``len(tf)`` stages, and when each stage ends."""
    stages = len(tf)
    orders = [_order(s, stages, micro) for s in range(stages)]
    done: dict[tuple[int, str, int], Fraction] = {}
    free = [Fraction(0)] * stages
    position = [0] * stages
    slots: list[Slot] = []
    while any(position[s] < len(orders[s]) for s in range(stages)):
        progressed = False
        for s in range(stages):
            if position[s] == len(orders[s]):
                continue
            kind, i = orders[s][position[s]]
            need = (s - 1, "F", i) if kind == "F" else (s + 1, "B", i)
            if kind == "B" and s == stages - 1:
                need = (s, "F", i)
            if kind == "F" and s == 0:
                ready: Fraction | None = Fraction(0)
            else:
                ready = done.get(need)
            if ready is None:
                continue
            start = max(free[s], ready)
            end = start + (tf[s] if kind == "F" else tb[s])
            done[(s, kind, i)] = end
            free[s] = end
            slots.append(Slot(s, kind, i, start, end))
            position[s] += 1
            progressed = True
        if not progressed:  # pragma: no cover - the 1F1B order never deadlocks
            raise InputError("the pipeline schedule deadlocked")
    return slots, free


def _order(stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    warm = min(stages - stage, micro)
    order = [("F", i) for i in range(warm)]
    nxt_f, nxt_b = warm, 0
    while nxt_b < micro:
        order.append(("B", nxt_b))
        nxt_b += 1
        if nxt_f < micro:
            order.append(("F", nxt_f))
            nxt_f += 1
    return order


@dataclass(frozen=True)
class PipelineCost:
    """The step of a pipeline, symbolic: makespan, busy time per stage and bubble, and the
    steps that define the makespan's parts (the bubble is factored on first use: a plan
    takes the makespan of each overlap rule and reads no bubble, a factoring of its
    symbolic Max terms that took a third of a training plan's time).

    >>> tf, tb = sp.symbols("t_f t_b", positive=True)
    >>> cost = pipeline_cost(4, 8, tf, tb)
    >>> cost.bubble, [s.kind for s in cost.steps]
    (3/11, ['define', 'define', 'define', 'simplify'])
    """

    makespan: sp.Expr
    busy: sp.Expr
    parts: tuple[Step, ...]

    @cached_property
    def bubble(self) -> sp.Expr:
        """Idle time over the makespan."""
        return sp.factor(sp.cancel(1 - self.busy / self.makespan))

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """The parts' steps, then the bubble's."""
        return (*self.parts, Step("simplify", "bubble fraction", 1 - self.busy / self.makespan,
                                  self.bubble, "idle time / makespan"))


def pipeline_cost(stages: sp.Expr | int, micro: sp.Expr | int, forward: sp.Expr,
                  backward: sp.Expr) -> PipelineCost:
    """The 1F1B makespan from its critical path, for symbolic or concrete sizes.

    >>> tf, tb = sp.symbols("t_f t_b", positive=True)
    >>> pipeline_cost(4, 8, tf, tb).makespan
    11*t_b + 11*t_f
    """
    p, m = exact(stages), exact(micro)
    fill = (p - 1) * forward
    steady = m * (forward + backward)
    drain = (p - 1) * backward
    makespan = sp.expand(fill + steady + drain)
    busy = sp.expand(steady)
    parts = (
        Step("define", "fill: the first forward crosses p - 1 stages", None, fill,
             "each forward waits for the stage before it"),
        Step("define", "steady state on the last stage", None, steady,
             "1F1B: m forwards and m backwards back to back"),
        Step("define", "drain: the last backward crosses p - 1 stages", None, drain,
             "each backward waits for the stage after it"),
    )
    return PipelineCost(makespan, busy, parts)


def bubble_fraction(stages: sp.Expr | int, micro: sp.Expr | int) -> sp.Expr:
    """The 1F1B bubble, idle time over step time, derived from the critical path."""
    tf, tb = sp.symbols("t_f t_b", positive=True)
    return sp.factor(pipeline_cost(stages, micro, tf, tb).bubble)


def interleaved_cost(stages: sp.Expr | int, micro: sp.Expr | int, chunks: sp.Expr | int,
                     forward: sp.Expr, backward: sp.Expr) -> PipelineCost:
    """Interleaved 1F1B (Narayanan et al., 2021, section 2.2.2): each device runs ``chunks``
    (v) model chunks of L/(p v) layers, so a microbatch's forward on one chunk takes t_f/v;
    the first microbatch's forward crosses p - 1 chunks before the last device starts, and
    the last backward crosses p - 1 chunks back. ``forward`` and ``backward`` are one
    microbatch's times on one device (all its chunks).

    >>> tf, tb = sp.symbols("t_f t_b", positive=True)
    >>> interleaved_cost(4, 8, 2, tf, tb).makespan
    19*t_b/2 + 19*t_f/2
    """
    p, m, v = sp.sympify(stages), sp.sympify(micro), sp.sympify(chunks)
    fill = (p - 1) * forward / v
    steady = m * (forward + backward)
    drain = (p - 1) * backward / v
    makespan = sp.expand(fill + steady + drain)
    parts = (
        Step("define", "fill: the first forward crosses p - 1 chunks of 1/v of a stage", None,
             fill, "each chunk's forward waits for the chunk before it"),
        Step("define", "steady state on the last device", None, steady,
             "m forwards and m backwards of all its chunks"),
        Step("define", "drain: the last backward crosses p - 1 chunks", None, drain,
             "each chunk's backward waits for the chunk after it"),
    )
    return PipelineCost(makespan, steady, parts)


def bubble_over_ideal(stages: sp.Expr | int, micro: sp.Expr | int,
                      chunks: sp.Expr | int = 1) -> sp.Expr:
    """The bubble as Megatron-LM states it, idle time over the ideal (busy) time: (p - 1)/m,
    and (p - 1)/(v m) interleaved; derived from the makespan."""
    tf, tb = sp.symbols("t_f t_b", positive=True)
    cost = interleaved_cost(stages, micro, chunks, tf, tb)
    return sp.factor(sp.cancel((cost.makespan - cost.busy) / cost.busy))


@memo  # a plan's memory asks for it in each account: Min of symbols is SymPy's slow part
def in_flight(pp: sp.Expr, micro: sp.Expr, chunks: int, stage: str = "first") -> sp.Expr:
    """Microbatches whose activations a pipeline stage holds at its peak, in whole stages'
    worth: the ``first`` stage min(p, m) under 1F1B, times 1 + (p - 1)/(p v) interleaved
    over v chunks (Korthikanti et al., 2022, section 4.2.3); the ``last`` stage 1 (its
    warm-up runs no forward ahead: the played schedule's count, ``Schedule.in_flight``),
    and interleaved the (v - 1) p chunks Megatron-LM's schedule warms up on every stage and
    the one it runs before its first backward, over v chunks a stage, at most the m
    microbatches (Megatron-LM, ``megatron/core/pipeline_parallel/schedules.py``,
    ``forward_backward_pipelining_with_interleaving``: ``num_warmup_microbatches``).

    >>> in_flight(4, 8, 1), in_flight(4, 8, 1, "last"), in_flight(4, 8, 2, "last")
    (4, 1, 5/2)
    """
    if stage not in ("first", "last"):
        raise InputError(f"a pipeline stage is 'first' or 'last', got {stage!r}", "stage")
    p, m = sp.sympify(pp), sp.sympify(micro)
    if p == 1:
        return sp.S.One
    if stage == "last":
        return sp.S.One if chunks == 1 else \
            sp.Min((chunks - 1) * p + 1, m * chunks) / chunks
    return sp.Min(p, m) * (1 + (p - 1) / (p * chunks) if chunks != 1 else 1)


def ends_in_flight(pp: sp.Expr, micro: sp.Expr, chunks: int, stage: str = "first",
                   ) -> tuple[sp.Expr, sp.Expr]:
    """Microbatches whose activations outside the layers a pipeline stage holds at its
    peak: (the embedding's, the output head's). Korthikanti et al. 2022, section 4.3, count
    the embedding's for p microbatches on the first stage ("the factor p comes from the
    pipeline parallelism and the fact that we need to store p microbatches"): min(p, m)
    under 1F1B. Interleaved over v chunks (which the paper's section 4.3 leaves out), the
    first stage's first chunk runs a second round of p microbatches before its first
    backward, min(2 p, m): Megatron-LM's schedule played in order (``megatron/core/
    pipeline_parallel/schedules.py``, ``forward_backward_pipelining_with_interleaving``:
    (p - 1) 2 + (v - 1) p warm-up forwards on the first stage, or all of them if that is as
    many, then one forward per backward; m a multiple of p). The paper counts the head's
    only without a pipeline; here the last stage holds them for 1 microbatch, each
    microbatch's last forward followed at once by its backward (interleaved too: the last
    chunk's). Without a pipeline the one stage holds both, for 1 microbatch.

    >>> ends_in_flight(4, 16, 1), ends_in_flight(4, 16, 1, "last"), ends_in_flight(4, 16, 2)
    ((4, 0), (0, 1), (8, 0))
    >>> ends_in_flight(1, 8, 1)
    (1, 1)
    """
    if stage not in ("first", "last"):
        raise InputError(f"a pipeline stage is 'first' or 'last', got {stage!r}", "stage")
    p, m = sp.sympify(pp), sp.sympify(micro)
    if p == 1:
        return sp.S.One, sp.S.One
    if stage == "last":
        return sp.S.Zero, sp.S.One
    return (sp.Min(p, m) if chunks == 1 else sp.Min(2 * p, m)), sp.S.Zero


def model_chunks(model: str, layers: int, interleave: int, pp: sp.Expr,
                 micro: sp.Expr) -> int:
    """The model chunks per stage, checked: a pipeline of p stages, L divisible by p v, and
    (Megatron-LM's interleaved schedule) microbatches a multiple of p."""
    if isinstance(interleave, bool) or not isinstance(interleave, int) or interleave < 1:
        raise InputError(f"model chunks per stage are a positive whole number, got "
                         f"{interleave!r}", "interleave")
    if interleave == 1:
        return 1
    if pp == 1:
        raise InputError("interleaving splits a pipeline's stages: give a pp axis",
                         "interleave")
    if layers % (pp * interleave):
        raise InputError(f"{model}: {layers} layers do not split into {pp} stages x "
                         f"{interleave} chunks", "interleave")
    if micro.is_Integer and micro % pp:
        raise InputError(f"an interleaved schedule runs microbatches in groups of the {pp} "
                         f"stages, got {micro}", "microbatches")
    return interleave
