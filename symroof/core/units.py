"""Exact unit parsing for catalogue and command-line values.

>>> parse_quantity("819 GB/s", BANDWIDTH)
819000000000
>>> parse_quantity("16 GiB", CAPACITY)
17179869184
>>> parse_quantity("197 TFLOP/s", COMPUTE)
197000000000000

A quantity is a number, an optional prefix (decimal k..E = 10^3n, binary Ki..Ei = 2^10n)
and a unit whose dimension must match what is expected: a bandwidth is bytes per time,
so ``197 TFLOP/s`` given as a bandwidth is an input error. A bare number is taken in base
units (bytes, FLOP, seconds).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import wraps
from typing import Any, TypeVar

import sympy as sp

from .errors import InputError, SymroofError
from .parse import MAX_DIGITS, MAX_EXPONENT


@dataclass(frozen=True)
class Dimension:
    """Exponents of (byte, flop, second); ``name`` is how messages call it."""

    byte: int
    flop: int
    second: int
    name: str


BANDWIDTH = Dimension(1, 0, -1, "a bandwidth (bytes per second)")
CAPACITY = Dimension(1, 0, 0, "a capacity (bytes)")
COMPUTE = Dimension(0, 1, -1, "a compute rate (FLOP per second)")
FLOPS = Dimension(0, 1, 0, "an operation count (FLOP)")
TIME = Dimension(0, 0, 1, "a time (seconds)")

INTENSITY = Dimension(-1, 1, 0, "an intensity (FLOP per byte)")
COUNT = Dimension(0, 0, 0, "a count or a ratio")
PER_SECOND = Dimension(0, 0, -1, "a rate (per second)")

#: the dimension of each engine result a claim may add, by (type, attribute); a mapping
#: attribute (a roofline's bandwidths and memory times) gives the dimension of its values
ENGINE_DIMENSIONS: dict[tuple[str, str], Dimension] = {
    ("Roofline", "peak"): COMPUTE, ("Roofline", "ridge"): INTENSITY,
    ("Roofline", "intensity"): INTENSITY, ("Roofline", "t_math"): TIME,
    ("Roofline", "t_lower"): TIME, ("Roofline", "t_upper"): TIME,
    ("Roofline", "attainable"): COMPUTE, ("Roofline", "bandwidths"): BANDWIDTH,
    ("Roofline", "t_comms"): TIME,
    ("Op", "flops"): FLOPS,
    ("Collective", "time"): TIME, ("Collective", "bandwidth_time"): TIME,
    ("Collective", "latency_time"): TIME, ("Collective", "bytes_per_device"): CAPACITY,
    ("Collective", "nbytes"): CAPACITY,
}
_F = TypeVar("_F", bound=Callable[..., Any])
#: what the engine's helpers made while a chapter was built: (value, dimension)
_MADE: ContextVar[list[tuple[Any, Dimension]] | None] = ContextVar("made", default=None)


def records(dimension: Dimension | Mapping[str, Dimension] | None = None, /, *,
            again: Callable[..., Any] | None = None,
            tries: tuple[Mapping[str, str], ...] = (), editions: bool = False,
            base: Mapping[str, str] | None = None,
            through: Mapping[str, Dimension | None] | None = None,
            **attributes: Dimension) -> Callable[[_F], _F]:
    """Mark an engine helper whose result has ``dimension`` (or whose named
    ``attributes`` have theirs, given as keywords or a mapping; a dotted name is an
    attribute's attribute): while a chapter is built (:func:`recording`) each result is
    noted, so a claim that adds it is judged in that dimension without saying it.

    A result is noted with how to make it again under other modelling choices
    (:func:`remade`): a helper that takes ``choices`` (or a step's ``options`` holding
    them) is called again with them, a result
    with ``under(choices)`` (a collective, a sharded matmul) is asked for it, and
    ``again(choices, *args, **kwargs)`` says it for a helper that has neither (a model's
    parameter count at its nominal size). The judge tries them on a value the text
    simplified: the usual candidates (``core.choices.CANDIDATES``), the changes in
    ``tries`` its helper takes besides (a decode time counting the weights alone), and,
    with ``editions``, the chip table's other editions of the chip its arguments name (a
    chip, or a mesh's), which the helper takes through ``choices.edition``. ``base`` names
    the choices its value is made under when they are not the exact model's (a book's
    decode time counts ``traffic=weights_kv``), from which a diagnosis says what a choice
    drops. ``through`` names the parameters of a helper that takes another helper's result
    rather than choices (a queue the requests of a serving plan, a cost a step's seconds),
    each with the dimension of a number it takes (None: an object, matched as itself):
    its result is made again from that result made again (an argument that is a chip taken
    under the choices too), with the editions, changes and base of the helper that made it.

    >>> @records(TIME)
    ... def step(n): return n / 1000
    >>> with recording() as made:
    ...     _ = step(3)
    >>> [(recorded(value), d.name) for value, d in made]
    [(0.003, 'a time (seconds)')]

    A helper made from another's result is made again from that result made again:

    >>> @records(TIME)
    ... def hop(choices=None): return sp.Rational(0 if choices == "off" else 1, 10**6)
    >>> @records(COUNT, through={"seconds": TIME})
    ... def per_ms(seconds): return sp.Rational(1, 1000) / (seconds + sp.Rational(1, 10**6))
    >>> with recording() as made:
    ...     n = per_ms(hop())
    >>> n, remade(made[-1][0])("off")
    (500, 1000)
    """
    if isinstance(dimension, Mapping):
        attributes, dimension = {**dimension, **attributes}, None

    def mark(fn: _F) -> _F:
        params = inspect.signature(fn).parameters
        # where the helper takes its choices: itself, or in a step's options value
        takes = "choices" if "choices" in params else "options" if "options" in params \
            else None

        @wraps(fn)
        def made(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            seen = _MADE.get()
            if seen is not None:
                remake = _remake(fn, takes, again, out, args, kwargs)
                labels = _chip_editions((*args, *kwargs.values())) if editions else ()
                own, extra = tuple(sorted((base or {}).items())), tries
                if remake is None and through:
                    remake, labels, extra, own = _through(fn, through, seen, args, kwargs)
                remake = _once(remake)  # its attributes, and what is made from it, share it
                if dimension is not None:
                    seen.append((_Later(out, "", remake, extra, labels, own) if remake
                                 else out, dimension))
                # an attribute is read when the chapter's claims are built, not here
                seen.extend((_Later(out, a, remake, extra, labels, own), d)
                            for a, d in attributes.items())
            return out
        return made  # type: ignore[return-value]
    return mark


def _remake(fn: Callable[..., Any], takes: str | None, again: Callable[..., Any] | None,
            out: Any, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Callable[[Any], Any] | None:
    """How a helper's result is made again under choices, or None: ``takes`` names the
    parameter that holds them, ``choices`` itself or ``options`` (a step's options value,
    ``plans.options.StepOptions``, whose ``choices`` are replaced)."""
    if takes is not None:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments[takes]

        def called(choices: Any) -> Any:
            bound.arguments[takes] = choices if takes == "choices" else \
                given.with_(choices=choices)
            return fn(*bound.args, **bound.kwargs)
        return called
    if callable(getattr(out, "under", None)):
        return lambda choices: out.under(choices)
    if again is not None:
        return lambda choices: again(choices, *args, **kwargs)
    return None


def _once(remake: Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    """``remake`` made once for each choices it is asked for."""
    if remake is None:
        return None
    done: dict[Any, Any] = {}

    def once(choices: Any) -> Any:
        try:
            hash(choices)
        except TypeError:  # choices that are no key: made each time
            return remake(choices)
        if choices not in done:
            done[choices] = remake(choices)
        return done[choices]
    return once


def _through(fn: Callable[..., Any], names: Mapping[str, Dimension | None],
             seen: list[tuple[Any, Dimension]], args: tuple[Any, ...], kwargs: dict[str, Any]
             ) -> tuple[Callable[[Any], Any] | None, tuple[str, ...],
                        tuple[Mapping[str, str], ...], tuple[tuple[str, str], ...]]:
    """How a helper's result is made again when its parameters ``names`` hold what another
    helper noted in ``seen`` made (the result itself, one of its parts, or a number equal
    to one of its noted values of the parameter's dimension): from that result made again,
    with the chip table's editions, the changes and the base of the helper that made it;
    (None, (), (), ()) when no parameter holds such a result."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    again: dict[str, Callable[[Any], Any]] = {}
    found: list[_Later] = []
    for name, dimension in names.items():
        given = bound.arguments.get(name)
        source = None if given is None else _source(given, dimension, seen)
        if source is not None:
            entry, path = source
            again[name] = _part_of(entry, path)
            found.append(entry)
    if not again:
        return None, (), (), ()

    def called(choices: Any) -> Any:
        remade_ = {k: (again[k](choices) if k in again else
                       v.under(choices) if type(v).__name__ == "Chip" else v)
                   for k, v in bound.arguments.items()}
        call = bound.signature.bind_partial()
        call.arguments.update(remade_)
        return fn(*call.args, **call.kwargs)
    labels = tuple(sorted({lb for e in found for lb in e.editions}))
    tries: list[Mapping[str, str]] = []
    for t in (t for e in found for t in e.tries):
        if t not in tries:
            tries.append(t)
    return called, labels, tuple(tries), found[0].base


def _part_of(entry: _Later, path: str) -> Callable[[Any], Any]:
    """The part ``path`` of ``entry``'s result made again under choices."""
    assert entry.again is not None
    remake = entry.again
    return lambda choices: _attribute(remake(choices), path)


def _source(given: Any, dimension: Dimension | None, seen: list[tuple[Any, Dimension]]
            ) -> tuple[_Later, str] | None:
    """The latest entry of ``seen`` that can be made again and made ``given``, and the
    path of ``given`` in its result ("" for the result itself); a number matches a noted
    value of ``dimension`` equal to it, anything else only the very object."""
    number = isinstance(given, sp.Expr)
    for entry, noted in reversed(seen):
        if not isinstance(entry, _Later) or entry.again is None:
            continue
        if not number:
            if given is entry.thing:
                return entry, ""
            head = entry.attribute.split(".")[0]
            if head and getattr(entry.thing, head, None) is given:
                return entry, head
            continue
        if noted != dimension:
            continue  # a number of another dimension (a count equal to a time)
        try:
            if entry.value() == given:
                return entry, entry.attribute
        except (SymroofError, ArithmeticError, AttributeError, LookupError, TypeError):
            continue  # a noted value that cannot be read matches nothing
    return None


def _chip_editions(given: tuple[Any, ...]) -> tuple[str, ...]:
    """The labels of the other editions of the chip table of the chips among ``given``
    (a chip: its ``figures``; a mesh: its ``chip``'s), sorted."""
    labels: set[str] = set()
    for value in given:
        figures = getattr(value, "figures", None) or getattr(
            getattr(value, "chip", None), "figures", None)
        if isinstance(figures, Mapping):
            labels.update(a.label for f in figures.values()
                          for a in getattr(f, "alternatives", ()))
    return tuple(sorted(labels))


@dataclass(frozen=True)
class _Later:
    """An attribute of an engine result (the result itself for ``""``), read when it is
    asked for, how to make it again under choices, the changes its helper takes besides
    the usual candidates, and the chip table's editions it takes."""

    thing: Any
    attribute: str
    again: Callable[[Any], Any] | None = None
    tries: tuple[Mapping[str, str], ...] = ()
    editions: tuple[str, ...] = ()
    base: tuple[tuple[str, str], ...] = ()  # the choices it is made under, when not exact

    def value(self) -> Any:
        return _attribute(self.thing, self.attribute)

    def under(self, choices: Any) -> Any:
        return _attribute(self.again(choices) if self.again is not None else self.thing,
                          self.attribute)


def _attribute(thing: Any, path: str) -> Any:
    """``thing``'s attribute ``path`` (dotted: ``op.flops``; a mapping's key:
    ``requests.requests_per_s``), or ``thing`` for ``""``."""
    for name in path.split(".") if path else ():
        thing = thing[name] if isinstance(thing, Mapping) else getattr(thing, name)
    return thing


@contextmanager
def recording() -> Iterator[list[tuple[Any, Dimension]]]:
    """Note what the helpers marked with :func:`records` make inside the block; an
    attribute's value is read from the list with :func:`recorded`."""
    seen: list[tuple[Any, Dimension]] = []
    token = _MADE.set(seen)
    try:
        yield seen
    finally:
        _MADE.reset(token)


def recorded(entry: Any) -> Any:
    """The value of an entry :func:`recording` noted (an attribute read now)."""
    return entry.value() if isinstance(entry, _Later) else entry


def remade(entry: Any) -> Callable[[Any], Any] | None:
    """The value of an entry :func:`recording` noted as a function of the modelling
    choices (``core.choices``), or None when its helper cannot make it again.

    >>> from symroof.core.choices import Choices
    >>> @records(TIME)
    ... def hop(choices=Choices()): return 0 if choices.latency == "off" else 10**-6
    >>> with recording() as made:
    ...     _ = hop()
    >>> remade(made[0][0])(Choices(latency="off"))
    0
    """
    if isinstance(entry, _Later) and entry.again is not None:
        return entry.under
    return None


def also_tried(entry: Any) -> tuple[tuple[Mapping[str, str], ...], tuple[str, ...],
                                    dict[str, str]]:
    """What a diagnosis tries on an entry :func:`recording` noted besides the usual
    candidates: the changes its helper takes (``records(tries=...)``), the labels of
    the chip table's editions it takes (``records(editions=True)``) and the choices its
    value is made under (``records(base=...)``); ((), (), {}) for others.

    >>> @records(TIME, tries=({"traffic": "weights"},))
    ... def hop(choices=None): return 1
    >>> with recording() as made:
    ...     _ = hop()
    >>> also_tried(made[0][0])
    (({'traffic': 'weights'},), (), {})
    """
    if isinstance(entry, _Later):
        return entry.tries, entry.editions, dict(entry.base)
    return (), (), {}


#: how a message writes a dimension
_BASE = (("B", 0), ("FLOP", 1), ("s", 2))


def dimension_text(dims: tuple[int, int, int]) -> str:
    """A dimension as a unit a reader knows.

    >>> dimension_text((-1, 1, 0)), dimension_text((1, 0, -1)), dimension_text((0, 0, 0))
    ('FLOP/B', 'B/s', 'a count or ratio')
    """
    up = [name + (f"^{dims[i]}" if dims[i] > 1 else "") for name, i in _BASE if dims[i] > 0]
    down = [name + (f"^{-dims[i]}" if dims[i] < -1 else "") for name, i in _BASE
            if dims[i] < 0]
    if not up and not down:
        return "a count or ratio"
    return ("*".join(up) or "1") + ("/" + "/".join(down) if down else "")


DECIMAL_PREFIXES = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
BINARY_PREFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}

# unit symbol -> (scale in base units, dimension exponents (byte, flop, second))
UNITS: dict[str, tuple[Fraction, tuple[int, int, int]]] = {
    "B": (Fraction(1), (1, 0, 0)),
    "byte": (Fraction(1), (1, 0, 0)),
    "bytes": (Fraction(1), (1, 0, 0)),
    "bit": (Fraction(1, 8), (1, 0, 0)),
    "b": (Fraction(1, 8), (1, 0, 0)),
    "FLOP": (Fraction(1), (0, 1, 0)),
    "FLOPs": (Fraction(1), (0, 1, 0)),
    "OP": (Fraction(1), (0, 1, 0)),
    "OPs": (Fraction(1), (0, 1, 0)),
    "s": (Fraction(1), (0, 0, 1)),
    "ms": (Fraction(1, 10**3), (0, 0, 1)),
    "us": (Fraction(1, 10**6), (0, 0, 1)),
    "µs": (Fraction(1, 10**6), (0, 0, 1)),
    "ns": (Fraction(1, 10**9), (0, 0, 1)),
}
# spellings that already mean "per second"
RATES = {"FLOPS": "FLOP/s", "OPS": "OP/s", "Bps": "B/s", "bps": "bit/s"}

_QUANTITY = re.compile(r"\s*([-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                       r"\s*(.*?)\s*\Z")
_UNIT = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei|k|K|M|G|T|P|E)?([A-Za-zµ]+)\Z")


def parse_quantity(text: str, expected: Dimension, *, where: str | None = None,
                   zero: bool = False) -> sp.Rational:
    """The exact value of ``text`` in base units, checked against ``expected``; positive,
    or with ``zero`` also 0 (a latency left out).

    >>> parse_quantity("1.97e14 FLOP/s", COMPUTE)
    197000000000000
    >>> parse_quantity("4.5e10", BANDWIDTH)
    45000000000
    """
    match = _QUANTITY.match(str(text))
    if not match:
        raise InputError(f"cannot read {text!r} as {expected.name}", where)
    number, unit = match.groups()
    mantissa, _, exponent = number.lower().replace("_", "").partition("e")
    if len(mantissa) > MAX_DIGITS or (exponent and abs(int(exponent)) > MAX_EXPONENT):
        raise InputError(f"the number in {text!r} is beyond the limits of a formula literal "
                         f"({MAX_DIGITS} digits, exponent {MAX_EXPONENT})", where)
    try:
        value = Fraction(number.replace("_", ""))
    except ValueError:
        raise InputError(f"cannot read the number in {text!r}", where) from None
    if value < 0 or (value == 0 and not zero):
        raise InputError(f"{text!r} must be {'zero or ' if zero else ''}positive", where)
    if not unit:
        return sp.Rational(value.numerator, value.denominator)
    scale, dims = _unit(unit, text, where)
    if dims != (expected.byte, expected.flop, expected.second):
        raise InputError(f"{text!r} is not {expected.name}", where)
    value *= scale
    return sp.Rational(value.numerator, value.denominator)


def unit_scale(unit: str, *, where: str | None = None) -> sp.Rational:
    """One ``unit`` in base units, whatever its dimension.

    >>> unit_scale("ms"), unit_scale("KiB"), unit_scale("TB/s")
    (1/1000, 1024, 1000000000000)
    """
    scale, _ = _unit(unit, unit, where)
    return sp.Rational(scale.numerator, scale.denominator)


def unit_dimension(unit: str, *, where: str | None = None) -> tuple[int, int, int]:
    """The (byte, FLOP, second) exponents of ``unit``.

    >>> unit_dimension("TFLOP/s"), unit_dimension("GiB"), unit_dimension("us")
    ((0, 1, -1), (1, 0, 0), (0, 0, 1))
    >>> unit_dimension("1/s"), unit_scale("1/ms")
    ((0, 0, -1), 1000)
    """
    _, dims = _unit(unit, unit, where)
    return dims


def _unit(unit: str, text: str, where: str | None) -> tuple[Fraction, tuple[int, int, int]]:
    numerator, slash, denominator = unit.partition("/")
    for spelled, rate in RATES.items():
        if numerator.endswith(spelled) and not slash:
            numerator, slash, denominator = numerator[: -len(spelled)] + rate.split("/")[0], \
                "/", "s"
            break
    # 1/s: a rate per second (queries, tokens), nothing counted in the numerator
    scale, dims = (Fraction(1), (0, 0, 0)) if numerator.strip() == "1" and slash else \
        _factor(numerator.strip(), text, where)
    if slash:
        d_scale, d_dims = _factor(denominator.strip(), text, where)
        scale /= d_scale
        dims = (dims[0] - d_dims[0], dims[1] - d_dims[1], dims[2] - d_dims[2])
    return scale, dims


def _factor(unit: str, text: str, where: str | None) -> tuple[Fraction, tuple[int, int, int]]:
    if unit in UNITS:
        return UNITS[unit]
    match = _UNIT.match(unit)
    if match:
        prefix, base = match.groups()
        if base in UNITS:
            if prefix in BINARY_PREFIXES:
                if UNITS[base][1] != (1, 0, 0):
                    raise InputError(f"binary prefix {prefix!r} applies to bytes only, "
                                     f"in {text!r}", where)
                factor = Fraction(2) ** (10 * BINARY_PREFIXES[prefix])
            else:
                factor = Fraction(10) ** (3 * DECIMAL_PREFIXES[prefix or ""])
            scale, dims = UNITS[base]
            return scale * factor, dims
    raise InputError(f"unknown unit {unit!r} in {text!r}", where)
