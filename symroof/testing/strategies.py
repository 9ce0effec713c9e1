"""Hypothesis strategies for one's own ``@given`` tests: sizes, points deep in a regime,
chips, dtypes and einsum ops.

>>> from hypothesis import find
>>> find(deep_points("B<<D,F", "B D F", depth=1000), lambda p: True)
{B: 1, D: 1000, F: 1000}

hypothesis is imported only when a strategy is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import sympy as sp

from ..core.errors import InputError
from ..core.sizes import DTYPES
from ..engine.asymptotics import Regime
from ..engine.ops import Op, einsum
from ..hardware.catalog import Catalog, Chip, load_catalog
from .points import BASE, SIZES, Point, Size, bind, deepen, has, ordered, regime_of, symbols_of

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


def size_values(lo: Size = SIZES[0], hi: Size = SIZES[1], *,
                integer: bool = True) -> SearchStrategy[Size]:
    """Sizes between ``lo`` and ``hi``: whole numbers, or exact fractions."""
    from hypothesis import strategies as st
    if integer:
        return st.integers(math.ceil(Fraction(lo)), math.floor(Fraction(hi)))
    return st.fractions(Fraction(lo), Fraction(hi), max_denominator=1000)


def points(symbols: Iterable[sp.Symbol] | str | sp.Basic, *, lo: Size = SIZES[0],
           hi: Size = SIZES[1], integer: bool = True) -> SearchStrategy[Point]:
    """Random sizes for ``symbols`` (a list, ``"B D F"``, or an expression's symbols);
    symbols declared integer always get whole numbers."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({s: size_values(lo, hi, integer=integer or bool(s.is_integer))
                                  for s in symbols_of(symbols)}).map(ordered)


def deep_points(regime: Regime | str, symbols: Iterable[sp.Symbol] | str | sp.Basic, *,
                depth: int = 10**4, lo: Size = BASE[0], hi: Size = BASE[1],
                integer: bool = True) -> SearchStrategy[Point]:
    """Points ``depth`` deep in ``regime``: random sizes in [lo, hi], then the regime's large
    symbols multiplied by ``depth`` and its small ones divided by it.

    >>> from hypothesis import find
    >>> find(deep_points("B<<D,F", "B D F", depth=1000), lambda p: True)
    {B: 1, D: 1000, F: 1000}
    """
    reg = bind(regime_of(regime), symbols_of(symbols))
    return points(symbols, lo=lo, hi=hi, integer=integer).map(lambda p: deepen(reg, p, depth))


def chips(names: Iterable[str] | None = None, *, having: Iterable[str] = (),
          catalog: Catalog | None = None) -> SearchStrategy[Chip]:
    """Chips from the catalogue (all, or ``names``) that have every figure in ``having``
    (``"mxu.int8"``, ``"ici"``)."""
    from hypothesis import strategies as st
    cat = catalog or load_catalog()
    keys = list(having)
    pool = [cat[n] for n in (sorted(cat.chips) if names is None else names)]
    pool = [c for c in pool if all(has(c, k) for k in keys)]
    if not pool:
        raise InputError(f"no chip in {cat.path} has {', '.join(keys)}")
    return st.sampled_from(pool)


def dtypes(names: Iterable[str] | None = None, *, chip: Chip | None = None,
           compute: str = "mxu") -> SearchStrategy[str]:
    """Dtype names (all, or ``names``), those ``chip`` has a ``compute`` peak for if given."""
    from hypothesis import strategies as st
    pool = list(DTYPES if names is None else names)
    if chip is not None:
        pool = [d for d in pool if f"{compute}.{d}" in chip.figures]
    if not pool:
        raise InputError(f"no dtype with a {compute} peak on {chip.name if chip else 'any chip'}")
    return st.sampled_from(pool)


def chip_dtypes(compute: str = "mxu", *, having: Iterable[str] = (),
                catalog: Catalog | None = None) -> SearchStrategy[tuple[Chip, str]]:
    """(chip, dtype) pairs such that the chip has a ``compute`` peak in that dtype (and
    every figure in ``having``, such as ``"hbm"``; ``"links"`` asks for at least one link)."""
    from hypothesis import strategies as st
    cat = catalog or load_catalog()
    keys = list(having)

    def fits(c: Chip) -> bool:
        return all(bool(c.links) if k == "links" else has(c, k) for k in keys)
    return st.sampled_from([(cat.chips[n], d) for n in sorted(cat.chips) for d in DTYPES
                            if f"{compute}.{d}" in cat.chips[n].figures and fits(cat.chips[n])])


def einsum_ops(dims: str = "B D F G", *, max_operands: int = 2,
               dtype_names: Sequence[str] | None = None) -> SearchStrategy[Op]:
    """Random einsum ops over ``dims``: one to ``max_operands`` operands of one to three
    dimensions each, any output, random dtypes per operand."""
    from hypothesis import strategies as st
    names = dims.split()
    kinds = list(DTYPES if dtype_names is None else dtype_names)

    @st.composite
    def build(draw: Callable[[SearchStrategy[Any]], Any]) -> Op:
        operand = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
        operands = draw(st.lists(operand, min_size=1, max_size=max_operands))
        used = sorted({d for o in operands for d in o}, key=names.index)
        output = draw(st.lists(st.sampled_from(used), unique=True, max_size=len(used)))
        types = draw(st.lists(st.sampled_from(kinds), min_size=len(operands),
                              max_size=len(operands)))
        spec = ", ".join(" ".join(o) for o in operands) + " -> " + " ".join(output)
        return einsum(spec, types)

    return build()
