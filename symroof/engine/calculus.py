"""Derivatives of matrix expressions: the gradient of a scalar such as ``Trace(G.T * X W)``
with respect to a matrix, by SymPy's matrix calculus.

>>> h, W, G = (sp.MatrixSymbol(n, *shape) for n, shape in
...            (("h", (1, 3)), ("W", (3, 2)), ("G", (1, 2))))
>>> matrix_derivative(sp.Trace(G.T * (h * W)), W)
h.T*G
>>> matrix_derivative(sp.Trace(G.T * (h * W)), h)
G*W.T

SymPy's first matrix derivative imports its array expressions and the handlers of its
assumption system, which register a few hundred dispatched functions; each registration
reorders its dispatcher, so the imports cost time quadratic in the handlers. Here they are
imported once with the ordering held (SymPy's ``halt_ordering``) and every dispatcher is
ordered once at the end: the first derivative takes about 20 ms less. Only imports run while
the ordering is held.
"""

from __future__ import annotations

import contextlib
import importlib
from functools import cache

import sympy as sp
from sympy.multipledispatch import halt_ordering, restart_ordering

# what SymPy imports on its first matrix derivative (array expressions, then what their
# conversion back to matrices asks of the assumption system)
_FIRST_IMPORTS = (
    "sympy.tensor.array.expressions.from_matrix_to_array",
    "sympy.tensor.array.expressions.arrayexpr_derivatives",
    "sympy.tensor.array.expressions.from_array_to_matrix",
    "sympy.tensor.array.array_derivatives",
    "sympy.assumptions.handlers.calculus",
    "sympy.assumptions.handlers.common",
    "sympy.assumptions.handlers.matrices",
    "sympy.assumptions.handlers.ntheory",
    "sympy.assumptions.handlers.order",
    "sympy.assumptions.handlers.sets",
    "sympy.assumptions.satask",
    "sympy.assumptions.lra_satask",
    "sympy.assumptions.facts",
    "sympy.logic.algorithms.dpll2",
)


def matrix_derivative(expr: sp.Expr, wrt: sp.MatrixSymbol) -> sp.Expr:
    """``d expr / d wrt`` for a SymPy matrix expression (``expr.diff(wrt)``).

    >>> x, A = sp.MatrixSymbol("x", 3, 1), sp.MatrixSymbol("A", 3, 3)
    >>> matrix_derivative(x.T * A * x, x)
    A*x + A.T*x
    """
    _import_held(_FIRST_IMPORTS)
    return expr.diff(wrt)


@cache
def _import_held(names: tuple[str, ...]) -> None:
    """Import ``names`` (once) with SymPy's dispatch ordering held, then order every
    dispatcher they added to once; a module this SymPy does not have is left out."""
    halt_ordering()
    try:
        for name in names:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    finally:
        restart_ordering()
