"""Results of pure derivation functions remembered by the value of their arguments.

>>> calls = []
>>> @memo
... def square(x):
...     calls.append(x)
...     return x * x
>>> square(sp.Symbol("B")), square(sp.Symbol("B")), len(calls)
(B**2, B**2, 1)
>>> square(sp.Float(2)), square(sp.Integer(2)), len(calls)   # 2.0 and 2 are not one key
(4.00000000000000, 4, 3)

A chapter with two translations derives the same roofline, threshold and optimum twice; a
derivation asks for one optimum in several places. :func:`memo` returns the result of the
first call to later calls with equal arguments. Arguments are compared by value: SymPy
expressions structurally (``2.0*B`` is not ``2*B``), frozen dataclasses field by field,
mappings and sequences item by item, each with its type, so only calls that must give the
same result share one. A call whose arguments hold anything else (a list of unknown
objects, a function) is not remembered, just run. Results must be immutable (the frozen
dataclasses of the engine are); exceptions are not remembered. Each function keeps its
most recent ``size`` results; :func:`forget` empties them all (a benchmark that times the
work, not the lookup, calls it with SymPy's ``clear_cache``).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from functools import wraps
from typing import Any, TypeVar, cast, overload

import sympy as sp

F = TypeVar("F", bound=Callable[..., Any])

_SCALARS = (str, int, float, complex, bool, bytes, type(None))
_ALL: list[OrderedDict[Hashable, Any]] = []  # the results of every remembering function


class _Unkeyable(Exception):
    """An argument that has no value key."""


def value_key(obj: Any) -> Hashable:
    """A hashable key equal for equal values of the same types.

    >>> value_key({"B": 1}) == value_key({"B": 1}), value_key(1) == value_key(1.0)
    (True, False)
    """
    if isinstance(obj, sp.Basic):
        return obj
    if isinstance(obj, _SCALARS):
        return (type(obj), obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _dataclass_key(obj)
    if isinstance(obj, Mapping):
        return (type(obj), tuple((value_key(k), value_key(v)) for k, v in obj.items()))
    if isinstance(obj, (tuple, list, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, frozenset) else obj
        return (type(obj), tuple(value_key(x) for x in items))
    raise _Unkeyable(type(obj).__name__)


_FIELDS: dict[type, tuple[str, ...] | None] = {}  # a dataclass's fields; None: not frozen
_KEY = "_symroof_value_key"  # where a frozen instance keeps its key, once made


def _dataclass_key(obj: Any) -> Hashable:
    """A frozen dataclass's key, made once per instance (its fields never change)."""
    cls = type(obj)
    if cls not in _FIELDS:
        frozen = cls.__dataclass_params__.frozen
        _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(obj)) if frozen else None
    names = _FIELDS[cls]
    if names is None:
        raise _Unkeyable(cls.__name__)
    kept = getattr(obj, "__dict__", None)
    if kept is not None and _KEY in kept:
        return kept[_KEY]
    key = (cls, tuple(value_key(getattr(obj, n)) for n in names))
    if kept is not None:
        kept[_KEY] = key
    return key


@overload
def memo(fn: F, *, size: int = ...) -> F: ...
@overload
def memo(fn: None = None, *, size: int = ...) -> Callable[[F], F]: ...


def memo(fn: F | None = None, *, size: int = 512) -> Any:
    """Remember ``fn``'s most recent ``size`` results by the value of their arguments."""

    def wrap(f: F) -> F:
        results: OrderedDict[Hashable, Any] = OrderedDict()
        _ALL.append(results)

        @wraps(f)
        def remembered(*args: Any, **kwargs: Any) -> Any:
            try:
                key = (value_key(args), value_key(sorted(kwargs.items())))
            except _Unkeyable:
                return f(*args, **kwargs)
            if key in results:
                results.move_to_end(key)
                return results[key]
            value = f(*args, **kwargs)
            results[key] = value
            if len(results) > size:
                results.popitem(last=False)
            return value

        return cast(F, remembered)

    return wrap(fn) if fn is not None else wrap


def forget() -> None:
    """Empty the remembered results of every function.

    >>> forget()
    """
    for results in _ALL:
        results.clear()
