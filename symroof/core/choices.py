"""Modelling choices as data: what a cost model assumes, each choice named and explained.

>>> c = Choices(collectives="leading", latency="off")
>>> c.changed()
('collectives', 'latency')
>>> c.describe()
'collectives=leading, latency=off'
>>> c.lines()[0]
'collectives = leading: the leading term in the axis size n: (n-1)/n taken as 1'
>>> tried(lambda ch: 2 if ch.latency == "on" else 1).alternatives[0][1]
1

A text states a simplified chain (an AllGather as V/W, training FLOPs as 6·P·T, "a 70B
model" as 70e9 parameters); the engine derives the exact model. Neither is wrong: the text
made choices, and a :class:`Choices` value names them. The exact model is ``Choices()``;
a text's form is a preset (``BOOK``), never a second formula. ``OPTIONS`` holds every
field's values with a one-line meaning (the write-ups print them); ``DROPS`` says what a
simplification leaves out, for a verdict that names it.

:func:`tried` evaluates a value under its own choices and under the candidate choices of
``CANDIDATES`` (the simplifications and the usual slips, such as taking the one-way
figure of a link whose ring sends both ways): a :class:`Tried` value, from which the judge
can say which choice reproduces a stated number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from itertools import combinations
from typing import Any

from .errors import InputError, SymroofError

# field -> value -> one-line meaning; the first value of each field is the exact model's
OPTIONS: dict[str, dict[str, str]] = {
    "collectives": {
        "exact": "a ring's (n-1)/n and its floor terms as derived",
        "leading": "the leading term in the axis size n: (n-1)/n taken as 1",
        "v_over_w": "each collective as its bytes over the link bandwidth, V/W: an "
                    "AllReduce's 2(n-1)/n dropped (one pass of the ring, not a ReduceScatter "
                    "and an AllGather), an AllGather's (n-1)/n as the leading term"},
    "latency": {
        "on": "each collective pays its hops times the per-hop latency",
        "off": "no latency term: bandwidth alone",
        "per_message": "each collective call pays the per-hop latency once (a fixed "
                       "per-message cost), not once per hop"},
    "link_alpha": {
        "bidirectional": "a wrapped ring sends both ways: W is the bidirectional figure",
        "one_way": "W is one direction's figure, also on a ring that sends both ways"},
    "levels": {
        "sequence": "a collective over several networks (a node's switch, then the "
                    "scale-out fabric) crosses them one after the other: their times add",
        "slowest": "the networks of a hierarchical collective work at once, each on its "
                   "share: the slowest one sets the time (the GPU book's max over levels)"},
    "concurrent": {
        "none": "collectives issued together run one after the other: their times add",
        "shared": "collectives issued together run at once: on a link they share, their "
                  "bytes add, and the busiest link sets the time",
        "whole_link": "collectives run at once, each as if it had the link to itself: the "
                      "slowest one sets the time"},
    "experts": {
        "touched": "a mixture of experts reads the weights of the experts its tokens reach: "
                   "E (1 - (1 - k/E)^M) on average under uniform routing",
        "all": "every expert's weights are read (a large batch touches them all)",
        "top_k": "only the top-k experts' weights are read (one token's worth)"},
    "traffic": {
        "all": "a step's HBM traffic as its kernels move it: weights, KV cache and "
               "activations",
        "weights_kv": "the weights and the KV cache read, as a text counts a step: no "
                      "activation traffic, no new KV entries written",
        "weights": "the weights alone, a text's weights-only floorline: no KV cache, no "
                   "activation traffic"},
    "peak": {
        "dense": "the dense peak of the compute unit",
        "sparse": "the 2:4-sparse spec-sheet figure: twice the dense peak (NVIDIA)"},
    "flops": {
        "full": "every matmul counted, attention included",
        "causal": "attention scores counted for the causal half",
        "per_token_2P": "2 FLOPs per parameter per token, no attention",
        "per_token_6P": "6 FLOPs per parameter per token (forward and backward)"},
    "sizes": {
        "exact": "parameter and KV sizes as the config gives them",
        "nominal": "the model's stated round parameter count and KV bytes"},
    "optimizer": {
        "zero16": "16 bytes per parameter (ZeRO: bf16 weights and grads, fp32 Adam)",
        "megatron18": "18 bytes per parameter (Megatron: adds an fp32 gradient copy)",
        "bytes_per_param": "the text's own k bytes per parameter",
        "adam_bf16": "10 bytes per parameter (bf16 weights, two fp32 moments, no gradient "
                     "copy)",
        "adam_8bit": "6 bytes per parameter (8-bit Adam: bf16 weights and grads, two 8-bit "
                     "moments)",
        "sgd_momentum": "12 bytes per parameter (SGD with momentum: bf16 weights and grads, "
                        "fp32 master weights and momentum)"},
    "memory": {
        "all": "every part of a serving memory counted: the weights and the KV cache",
        "training": "every part of a training memory counted: the weights, the gradients, "
                    "the optimizer state and the activations",
        "weights": "the weights alone: the KV cache not counted (of a training memory: the "
                   "gradients, the optimizer state and the activations)",
        "states": "a training memory's weights, gradients and optimizer state: the "
                  "activations not counted"},
    "kv_dtype": {
        "as_given": "the KV cache in the dtype the call gives (16 bits unless it says)",
        "fp8": "the KV cache in fp8: one byte an element",
        "int8": "the KV cache in int8: one byte an element"},
    "checkpoints": {
        "none": "every activation kept for the backward pass",
        "selective": "only what is costly to recompute kept",
        "full": "the layer inputs kept, everything else recomputed",
        "k_tensors_of_D": "k tensors of D per token per layer kept",
        "matmuls": "the outputs of each layer's weight matmuls kept, the rest recomputed"},
}
# what a text leaves out when it makes a choice, for the verdict that names it
DROPS: dict[tuple[str, str], str] = {
    ("collectives", "leading"): "(n-1)/n",
    ("latency", "off"): "the hop latency",
    ("latency", "per_message"): "the latency of every hop but one",
    ("link_alpha", "one_way"): "the second direction of the ring",
    ("levels", "slowest"): "the time of every network but the slowest",
    ("concurrent", "shared"): "the time of every link but the busiest",
    ("experts", "all"): "the experts a batch leaves untouched",
    ("experts", "top_k"): "the experts beyond a token's top-k",
    ("traffic", "weights_kv"): "the activations' traffic and the KV entries written",
    ("traffic", "weights"): "the KV cache's reads, the activations' traffic and the KV "
                            "entries written",
    ("flops", "per_token_2P"): "attention FLOPs",
    ("flops", "per_token_6P"): "attention FLOPs",
    ("sizes", "nominal"): "the exact parameter count",
    ("flops", "causal"): "the masked half of the attention scores",
    ("memory", "weights"): "the KV cache",
    ("memory", "states"): "the activations",
}
# what a choice leaves out when the value's own model had already made another of that
# field (a book's decode time counts the weights and the KV cache: the weights alone drop
# the cache's reads only), by (field, the model's value, the choice)
DROPS_FROM: dict[tuple[str, str, str], str] = {
    ("traffic", "weights_kv", "weights"): "the KV cache's reads",
    ("memory", "training", "weights"): "the gradients, the optimizer state and the "
                                       "activations",
}


def dropped(field: str, value: str, base: str) -> str | None:
    """What setting ``field`` to ``value`` leaves out of a model that had ``base``.

    >>> dropped("traffic", "weights", "weights_kv"), dropped("latency", "off", "on")
    ("the KV cache's reads", 'the hop latency')
    """
    return DROPS_FROM.get((field, base, value)) or DROPS.get((field, value))


# choices that are slips rather than modelling choices: a verdict names them in a MISMATCH
SLIPS: dict[tuple[str, str], str] = {
    ("link_alpha", "one_way"): "the one-way link figure for a ring that sends both ways",
    ("link_alpha", "bidirectional"): "the bidirectional link figure for one direction",
    ("peak", "sparse"): "the sparse peak of the spec sheet for a dense matmul",
    ("concurrent", "whole_link"): "a whole link for each of several collectives that share it",
    ("collectives", "v_over_w"): "an AllReduce costed as its bytes over the link bandwidth "
                                 "(V/W, without the ring's 2(n-1)/n)",
}
# a slip that gives what another choice gives on some values (an AllGather's V/W is its
# leading term): where both give one value, the other is named, and the slip is left out
SAME_AS: dict[tuple[str, str], tuple[str, str]] = {
    ("collectives", "v_over_w"): ("collectives", "leading"),
}


@dataclass(frozen=True)
class Choices:
    """What a cost model assumes; ``Choices()`` is the exact model.

    ``optimizer_bytes`` is k of ``optimizer="bytes_per_param"`` and ``checkpoint_tensors``
    k of ``checkpoints="k_tensors_of_D"``. ``edition`` names another edition of the chip
    table (an alternative's label, such as ``B1``): its figures are taken where it has one
    (``Chip.edition``): a figure another edition prints is a modelling choice of the text
    (the vendor's 312 TFLOP/s, a book's rounded 8.2e11 B/s), which a diagnosis names.
    """

    collectives: str = "exact"
    latency: str = "on"
    link_alpha: str = "bidirectional"
    levels: str = "sequence"
    concurrent: str = "none"
    experts: str = "touched"
    traffic: str = "all"
    peak: str = "dense"
    flops: str = "full"
    sizes: str = "exact"
    memory: str = "all"
    kv_dtype: str = "as_given"
    optimizer: str = "zero16"
    optimizer_bytes: int | None = None
    checkpoints: str = "none"
    checkpoint_tensors: int | None = None
    edition: str = ""  # the label of a chip table's other edition whose figures are taken

    def __post_init__(self) -> None:
        for name, options in OPTIONS.items():
            got = getattr(self, name)
            if got not in options:
                raise InputError(f"unknown value {got!r} (choices: {', '.join(options)})",
                                 f"choice {name}")
        for name, k, needs in (("optimizer", self.optimizer_bytes, "bytes_per_param"),
                               ("checkpoints", self.checkpoint_tensors, "k_tensors_of_D")):
            if (getattr(self, name) == needs) != (k is not None):
                raise InputError(f"{needs} goes with its k (and only it)", f"choice {name}")
            if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
                raise InputError(f"k must be a positive whole number, got {k!r}",
                                 f"choice {name}")

    def with_(self, **changes: Any) -> Choices:
        """A copy with fields changed (an unknown field is an input error).

        >>> Choices().with_(latency="off").latency
        'off'
        """
        known = {f.name for f in fields(self)}
        bad = sorted(set(changes) - known)
        if bad:
            raise InputError(f"unknown choice {bad[0]!r} (choices: {', '.join(sorted(known))})")
        return replace(self, **changes)

    def changed(self, base: Choices | None = None) -> tuple[str, ...]:
        """The fields (of ``OPTIONS``) that differ from ``base`` (the exact model)."""
        other = base if base is not None else EXACT
        return tuple(n for n in (*OPTIONS, "edition") if getattr(self, n) != getattr(other, n))

    def describe(self, base: Choices | None = None) -> str:
        """``field=value`` of the changed fields, or ``exact``."""
        parts = [f"{n}={self._value(n)}" for n in self.changed(base)]
        return ", ".join(parts) or "exact"

    def lines(self) -> list[str]:
        """One line per field: its value and what it means."""
        return [f"{n} = {self._value(n)}: {OPTIONS[n][getattr(self, n)]}" for n in OPTIONS] + \
            ([f"edition = {self.edition}: the chip figures of that edition of the table"]
             if self.edition else [])

    def drops(self, base: Choices | None = None) -> list[str]:
        """What the changed fields leave out (``(n-1)/n``, ``the hop latency``)."""
        other = base if base is not None else EXACT
        return [d for n in self.changed(base)
                if (d := dropped(n, getattr(self, n), getattr(other, n))) is not None]

    def slips(self, base: Choices | None = None) -> list[str]:
        """The changed fields that are slips (``SLIPS``), in words."""
        return [SLIPS[(n, getattr(self, n))] for n in self.changed(base)
                if (n, getattr(self, n)) in SLIPS]

    def within(self, allowed: tuple[str, ...], what: str, where: str = "choices") -> Choices:
        """``self`` when it changes only ``allowed`` fields; a choice ``what`` does not take
        is an input error naming it.

        >>> BOOK.within(COLLECTIVE_CHOICES, "a plan") == BOOK
        True
        """
        other = [n for n in self.changed() if n not in allowed]
        if other:
            raise InputError(f"{what} takes the choices {', '.join(allowed)}; "
                             f"{other[0]}={self._value(other[0])} does not apply to it", where)
        return self

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def _value(self, name: str) -> str:
        k = {"optimizer": self.optimizer_bytes, "checkpoints": self.checkpoint_tensors}.get(name)
        return f"{getattr(self, name)}={k}" if k is not None else str(getattr(self, name))


EXACT = Choices()
# the choices a collective takes (``parallel.collectives.Collective.under``)
COLLECTIVE_CHOICES = ("collectives", "latency", "link_alpha")
# and what a collective costed alone (or a layout of them) takes besides
LINK_CHOICES = (*COLLECTIVE_CHOICES, "levels")
# and what collectives issued together take besides (symroof.parallel.concurrent)
TOGETHER_CHOICES = (*LINK_CHOICES, "concurrent")
# and what a model's step takes besides (``plans.device_step``): which experts it reads
# and the HBM traffic it counts
STEP_CHOICES = (*COLLECTIVE_CHOICES, "experts", "traffic")
# what a model's ops take (``models.layers.layer_ops``), not its collectives
OP_CHOICES = ("experts", "traffic")
# the book's form of a collective: V/W with the bidirectional figure, no latency
BOOK = Choices(collectives="leading", latency="off")
PRESETS = {"exact": EXACT, "book": BOOK}


def parse_choices(text: str, where: str = "choices") -> Choices:
    """A preset (``exact``, ``book``) or ``field=value`` pairs, comma-separated.

    >>> parse_choices("book") == BOOK, parse_choices("latency=off").describe()
    (True, 'latency=off')
    >>> parse_choices("optimizer=bytes_per_param=12").optimizer_bytes
    12
    """
    spec = text.strip()
    if spec in PRESETS:
        return PRESETS[spec]
    changes: dict[str, Any] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, eq, value = part.partition("=")
        if not eq or not value:
            raise InputError(f"expected a preset ({', '.join(PRESETS)}) or FIELD=VALUE, got "
                             f"{part!r}", where)
        value, eq2, k = value.partition("=")
        if eq2:
            if not k.isdigit():
                raise InputError(f"k must be a whole number, got {k!r}", where)
            extra = {"optimizer": "optimizer_bytes", "checkpoints": "checkpoint_tensors"}
            if name.strip() not in extra:
                raise InputError(f"only optimizer and checkpoints take a k, not {name!r}",
                                 where)
            changes[extra[name.strip()]] = int(k)
        changes[name.strip()] = value.strip()
    try:
        return EXACT.with_(**changes)
    except InputError as exc:
        raise InputError(exc.message if not exc.where else f"{exc.where}: {exc.message}",
                         where) from None


# the choices a diagnosis tries, each a set of changes from the exact model: simplifications
# (alone and together), a model's counts as a book simplifies them (symroof.models.chosen),
# and the usual slips (alone and with the simplifications)
_SIMPLER: tuple[Mapping[str, str], ...] = ({"collectives": "leading"}, {"latency": "off"})
_SLIPPED: tuple[Mapping[str, str], ...] = ({"link_alpha": "one_way"}, {"peak": "sparse"})
# a hand calculation's AllReduce as V/W (the ring's 2(n-1)/n dropped), with its latency and
# without (it replaces the leading term, so it is not combined with it)
_RING: tuple[Mapping[str, str], ...] = ({"collectives": "v_over_w"},
                                        {"collectives": "v_over_w", "latency": "off"})
# a model's counts as a book simplifies them (symroof.models.chosen); a candidate a value
# does not depend on gives the exact value and is left out
_COUNTS: tuple[Mapping[str, str], ...] = (
    {"sizes": "nominal"}, {"flops": "causal"}, {"flops": "per_token_2P"}, {"flops": "per_token_6P"},
    {"flops": "per_token_2P", "sizes": "nominal"}, {"flops": "per_token_6P", "sizes": "nominal"})


def _candidates() -> tuple[Mapping[str, str], ...]:
    simpler = [dict(kv for d in combo for kv in d.items())
               for r in range(1, len(_SIMPLER) + 1) for combo in combinations(_SIMPLER, r)]
    slipped = [{**s, **c} for s in _SLIPPED for c in [{}, *simpler]]
    return (*simpler, *_COUNTS, *slipped, *_RING)


CANDIDATES = _candidates()


@dataclass(frozen=True)
class Tried:
    """A value under the exact model (``choices``), with the values that the text's declared
    choices and the candidate choices give (``alternatives``, in the order tried)."""

    value: Any
    choices: Choices
    alternatives: tuple[tuple[Choices, Any], ...]


def tried(make: Callable[[Choices], Any], choices: Choices | None = None,
          candidates: tuple[Mapping[str, str], ...] = CANDIDATES,
          editions: tuple[str, ...] = (), base: Choices = EXACT) -> Tried:
    """``make(choices)`` and ``make`` under each candidate: the exact model first, then the
    text's declared ``choices`` (when given), then the candidates in order (the fewest
    changes first, then the chip table's other ``editions``), each a change of the exact
    model. A candidate whose value equals the value of one with fewer changes adds nothing
    and is left out, and so is one the value cannot be made under (a sparse peak of a chip
    that has none, a queue's wait at a utilisation of 1 or more). ``base`` is the model the
    value is made under when it is not the exact model (a book's decode time, which counts
    the weights and the KV cache)."""
    exact = make(base)
    seen: list[tuple[Choices, Any]] = []
    if choices is not None and choices != base:
        seen.append((choices, make(choices)))
    values: dict[frozenset[tuple[str, str]], Any] = {frozenset(): exact}
    for change in (*candidates, *({"edition": e} for e in editions)):
        c = base.with_(**change)
        try:
            got = make(c)
        except SymroofError:
            continue
        if got is None:  # no value under it (a queue that grows without bound)
            continue
        key = frozenset(change.items())
        values[key] = got
        twins = [key - {kv} | {SAME_AS[kv]} for kv in key if kv in SAME_AS]
        redundant = any(values.get(key - {kv}) == got for kv in key) or any(
            t in values and values[t] == got for t in twins)
        if not redundant and all(c != s for s, _ in seen):
            seen.append((c, got))
    return Tried(exact, base, tuple(seen))
