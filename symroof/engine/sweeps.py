"""Sweeps: a formula compiled once with ``lambdify`` and evaluated over NumPy arrays.

>>> import numpy as np
>>> from symroof import sizes
>>> B, D = sizes("B D")
>>> sweep(B * D / (B + D), "B", np.array([1.0, 3.0]), {"D": 3}).tolist()
[0.75, 1.5]

The compiled function is cached per formula, swept size and fixed sizes, so the second
sweep of a formula costs one cache look-up and the array operations of the formula itself:
the same ones NumPy would do on the same formula written by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from functools import lru_cache
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact, symbol
from .algebra import substitute

Fixed = Mapping[str | sp.Symbol, sp.Expr | int | float]


def to_numpy(symbols: Any, expr: Any,
             functions: Mapping[str, Callable[..., Any]] | None = None) -> Callable[..., Any]:
    """``lambdify(symbols, expr, "numpy")`` (``functions``: a function of the formula's
    own by its name), the same code, importing only the NumPy functions it calls:
    lambdify's ``"numpy"`` first copies NumPy's whole namespace, which loads NumPy's test
    and Fortran tools (0.1 s of a process that compiles a formula). Nor does it look
    through the formula for SymPy's implemented functions (symroof has none: a function
    of its own is one of ``functions``) or print the formula again into the compiled
    function's docstring (unread): together half of lambdify's own time.

    >>> from symroof import sizes
    >>> B, D = sizes("B D")
    >>> float(to_numpy((B, D), sp.Max(B, D) + sp.sqrt(B))(4.0, 3.0))
    6.0
    """
    from sympy.printing.numpy import NumPyPrinter
    own = dict(functions or {})
    printer = NumPyPrinter({"fully_qualified_modules": False, "inline": True,
                            "allow_unknown_functions": True,
                            "user_functions": {k: k for k in own}})
    return sp.lambdify(symbols, expr, modules=[own], printer=printer, use_imps=False,
                       docstring_limit=0)


@lru_cache(maxsize=1024)
def compiled(expr: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> Callable[..., Any]:
    """``lambdify(symbols, expr, "numpy")`` (``to_numpy``), compiled once per formula.

    >>> from symroof import sizes
    >>> B, D = sizes("B D")
    >>> compiled(B * D, (B, D)) is compiled(B * D, (B, D))
    True
    """
    return to_numpy(symbols, expr)


def sweep(expr: sp.Expr, name: str | sp.Symbol, values: Any, fixed: Fixed | None = None,
          ) -> Any:
    """``expr`` at every one of ``values`` (an array) of the size ``name``, every other
    size ``fixed``; an array of the shape of ``values``."""
    import numpy as np
    x = np.asarray(values, dtype=np.float64)
    return np.broadcast_to(at_fixed(expr, name, fixed)(x), x.shape)


def at_fixed(expr: sp.Expr, name: str | sp.Symbol, fixed: Fixed | None = None,
             ) -> Callable[[Any], Any]:
    """The compiled one-argument function of ``expr`` in ``name``, the other sizes fixed."""
    key = tuple(sorted(((str(k), v) for k, v in (fixed or {}).items()), key=lambda kv: kv[0]))
    try:
        hash(key)
    except TypeError:  # a value that cannot be hashed: compile without the cache
        return _at_fixed.__wrapped__(expr, str(name), key)
    return _at_fixed(expr, str(name), key)


@lru_cache(maxsize=1024)
def _at_fixed(expr: sp.Expr, name: str, fixed: tuple[tuple[str, Hashable], ...],
              ) -> Callable[[Any], Any]:
    by_name = {s.name: s for s in expr.free_symbols if isinstance(s, sp.Symbol)}
    s = by_name.get(name, symbol(name))
    values = {by_name.get(k, symbol(k)): exact(v) for k, v in fixed}
    formula = substitute(expr, values)
    rest = formula.free_symbols - {s}
    if rest:
        raise InputError(f"give a value for {', '.join(sorted(map(str, rest)))} in fixed")
    return compiled(formula, (s,))
