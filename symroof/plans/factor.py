"""Every way to split a chip count over named degrees of parallelism, as a NumPy array.

>>> factorisations(8, 2).tolist()
[[1, 8], [2, 4], [4, 2], [8, 1]]
>>> len(factorisations(256, 5)), int(factorisations(256, 5).prod(axis=1).min())
(495, 256)

A factorisation is ordered: ``(dp, tp) = (2, 4)`` and ``(4, 2)`` are different plans. The
rows are sorted lexicographically, so a search over them is deterministic.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..core.errors import InputError

MAX_CHIPS = 1 << 20


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    if n < 1:
        raise InputError(f"a chip count must be a positive integer, got {n}")
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


@lru_cache(maxsize=64)
def _rows(n: int, k: int) -> tuple[tuple[int, ...], ...]:
    if k == 1:
        return ((n,),)
    return tuple((d, *rest) for d in divisors(n) for rest in _rows(n // d, k - 1))


def factorisations(n: int, k: int) -> np.ndarray:
    """All ordered k-tuples of positive integers whose product is ``n`` (shape (count, k))."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_CHIPS:
        raise InputError(f"a chip count must be an integer from 1 to {MAX_CHIPS}, got {n!r}")
    if not isinstance(k, int) or k < 1:
        raise InputError(f"the number of degrees must be a positive integer, got {k!r}")
    return np.array(_rows(n, k), dtype=np.int64).reshape(-1, k)
