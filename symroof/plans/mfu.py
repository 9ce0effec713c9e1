"""Model FLOPs utilisation as PaLM defines it (Chowdhery et al., 2022, appendix B).

>>> import sympy as sp
>>> N, L, H, Q, T = sp.symbols("N L H Q T", positive=True)
>>> palm_flops_per_token(N, L, H, Q, T)
12*H*L*Q*T + 6*N
>>> u = mfu_from(540_350_000_000, 118, 48, 256, 2048, 238_300, 6144, 275 * 10**12)
>>> round(float(u.value), 3)
0.462

MFU is the throughput a run achieves, counted in the model's own FLOPs (no rematerialised
work), over the peak of the chips it ran on. PaLM counts 6N FLOPs per token for the dense
matmuls of forward and backward and 12 L H Q T for attention's two matmuls at sequence
length T: forward 2 x 2 L H Q T (scores and values, each a multiply and an add per element),
backward twice that.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact

DEFINITION = ("MFU = tokens per second x (6 N + 12 L H Q T) / (chips x peak FLOP/s); "
              "N parameters, L layers, H heads, Q head dimension, T sequence length "
              "(PaLM, Chowdhery et al., 2022, appendix B)")


@dataclass(frozen=True)
class Mfu:
    """An MFU and what it was computed from."""

    value: sp.Expr
    flops_per_token: sp.Expr
    tokens_per_second: sp.Expr
    chips: sp.Expr
    peak: sp.Expr
    definition: str = DEFINITION

    @property
    def achieved(self) -> sp.Expr:
        """Model FLOP/s achieved per chip."""
        return self.tokens_per_second * self.flops_per_token / self.chips


def palm_flops_per_token(params: sp.Expr | int, layers: sp.Expr | int,
                         heads: sp.Expr | int, head_dim: sp.Expr | int,
                         context: sp.Expr | int) -> sp.Expr:
    """Training FLOPs per token by PaLM's count: 6 N + 12 L H Q T."""
    n, layer, h, q, t = (exact(v) for v in (params, layers, heads, head_dim, context))
    return 6 * n + 12 * layer * h * q * t


def mfu_from(params: sp.Expr | int, layers: sp.Expr | int, heads: sp.Expr | int,
             head_dim: sp.Expr | int, context: sp.Expr | int,
             tokens_per_second: sp.Expr | int | float, chips: sp.Expr | int,
             peak: sp.Expr | int) -> Mfu:
    """MFU from the sizes PaLM's definition names, a throughput and a per-chip peak."""
    tps = sp.nsimplify(tokens_per_second) if isinstance(tokens_per_second, float) \
        else exact(tokens_per_second)
    n_chips, rate = exact(chips), exact(peak)
    for name, v in (("throughput", tps), ("chips", n_chips), ("peak", rate)):
        if v.is_number and not v.is_positive:
            raise InputError(f"{name} must be positive, got {v}")
    fpt = palm_flops_per_token(params, layers, heads, head_dim, context)
    value = tps * fpt / (n_chips * rate)
    if value.is_number and value > 1:
        raise InputError(f"{tps} tokens/s would need {float(value):.4g} times the chips' peak "
                         "FLOP/s (an MFU above 100% is impossible)", "--mfu")
    return Mfu(value, fpt, tps, n_chips, rate)
