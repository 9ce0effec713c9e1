"""Model states per device under data parallelism and ZeRO's stages.

>>> import sympy as sp
>>> P, N = sp.symbols("P N", positive=True)
>>> adam = {"weights": 2, "gradients": 2, "optimizer": 12}
>>> [sp.factor(sum(zero_states(P, N, k, adam).values())) for k in range(4)]
[16*P, 4*P*(N + 3)/N, 2*P*(N + 7)/N, 16*P/N]

The three model states are sharded in a fixed order as the stage rises (Rajbhandari et al.,
2020): stage 1 shards the optimizer state over the N data-parallel devices, stage 2 the
gradients as well, stage 3 the weights too. The bytes per parameter of each state are an
assumption the caller states (mixed-precision Adam: 2, 2 and 12).
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact

STATES = ("weights", "gradients", "optimizer")
# the stage from which each state is sharded over the data axes
SHARDED_FROM = {"optimizer": 1, "gradients": 2, "weights": 3}


def zero_states(params: sp.Expr | int, devices: sp.Expr | int, stage: int,
                bytes_per_param: Mapping[str, sp.Expr | int]) -> dict[str, sp.Expr]:
    """Bytes per device of each model state, for ``params`` parameters replicated or sharded
    over ``devices`` devices at ZeRO ``stage`` (0 is plain data parallelism)."""
    if stage not in (0, 1, 2, 3):
        raise InputError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    missing = [s for s in STATES if s not in bytes_per_param]
    if missing:
        raise InputError(f"bytes per parameter missing for {', '.join(missing)}")
    p, n = exact(params), exact(devices)
    return {s: exact(bytes_per_param[s]) * p / (n if stage >= SHARDED_FROM[s] else 1)
            for s in STATES}


def sharded_states(stage: int) -> tuple[str, ...]:
    """The states a stage shards over the data axes.

    >>> sharded_states(2)
    ('gradients', 'optimizer')
    """
    return tuple(s for s in STATES if stage >= SHARDED_FROM[s])
