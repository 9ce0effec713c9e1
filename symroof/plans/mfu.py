"""Model FLOPs utilisation as PaLM defines it (Chowdhery et al., 2022, appendix B).

>>> import sympy as sp
>>> N, L, H, Q, T = sp.symbols("N L H Q T", positive=True)
>>> palm_flops_per_token(N, L, H, Q, T)
12*H*L*Q*T + 6*N
>>> u = mfu_from(540_350_000_000, 118, 48, 256, 2048, 238_300, 6144, 275 * 10**12)
>>> round(float(u.value), 3)
0.462

MFU is the throughput a run achieves, counted in the model's own FLOPs (no rematerialised
work), over the peak of the chips it ran on. N is what the model multiplies: an untied input
embedding and learned positions are looked up, not multiplied, so they are left out
(``model_params``) and a plan at its compute bound reads exactly 100%.

>>> from symroof.models import model
>>> model_params(model("llama-2-7b"))
6607343616

PaLM counts 6N FLOPs per token for the dense
matmuls of forward and backward and 12 L H Q T for attention's two matmuls at sequence
length T: forward 2 x 2 L H Q T (scores and values, each a multiply and an add per element),
backward twice that.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact
from ..models.config import ModelConfig
from ..models.counts import params

DEFINITION = ("MFU = tokens per second x (6 N + 12 L H Q T) / (chips x peak FLOP/s); "
              "N parameters a token multiplies (an untied input embedding and learned "
              "positions excluded), L layers, H heads, Q head dimension, T sequence length "
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
    rerun_flops_per_token: sp.Expr = sp.S.Zero  # recomputation's forward rerun
    recompute: str = "none"

    @property
    def hfu(self) -> sp.Expr:
        """Hardware FLOPs utilisation: the model's FLOPs and recomputation's rerun (Korthikanti
        et al. 2022, section 6), over the same peak."""
        return self.tokens_per_second * (self.flops_per_token + self.rerun_flops_per_token) \
            / (self.chips * self.peak)

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


def mfu_from(n_params: sp.Expr | int, layers: sp.Expr | int, heads: sp.Expr | int,
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
    fpt = palm_flops_per_token(n_params, layers, heads, head_dim, context)
    value = tps * fpt / (n_chips * rate)
    if value.is_number and value > 1:
        raise InputError(f"{sp.sstr(tps)} tokens/s is an MFU of {float(value):.2%}, above the "
                         f"peak of {sp.sstr(n_chips)} chips: check the throughput, the chip "
                         "and the chip count", "tokens_per_second")
    return Mfu(value, fpt, tps, n_chips, rate)


def model_params(cfg: ModelConfig) -> sp.Expr:
    """Parameters a token multiplies: the active ones, less an untied input embedding (the
    tied one is the output head too) and learned positions."""
    s = cfg.sizes(False)
    looked_up = (0 if cfg.tied_embeddings else s["V"] * s["D"]) + (
        s["P"] * s["D"] if cfg.positions == "learned" else 0)
    return params(cfg).active - looked_up


# the forward FLOPs a recomputation policy reruns, by PaLM's count: the forward's 2 N
# + 4 L H Q T under full recomputation (and a text's k tensors of D kept, which rerun the
# forward), the attention core's 4 L H Q T under selective and under checkpoints after the
# weight matmuls (the rest they rerun, norms and activations, PaLM's count leaves out)
RERUN = {"none": (0, 0), "selective": (0, 4), "full": (2, 4), "matmuls": (0, 4),
         "k_tensors_of_D": (2, 4)}


def rerun_flops_per_token(n_params: sp.Expr | int, layers: sp.Expr | int,
                          heads: sp.Expr | int, head_dim: sp.Expr | int,
                          context: sp.Expr | int, recompute: str = "none") -> sp.Expr:
    """The forward FLOPs per token ``recompute`` runs again in the backward, by PaLM's
    count (HFU counts them, MFU does not).

    >>> import sympy as sp
    >>> N, L, H, Q, T = sp.symbols("N L H Q T", positive=True)
    >>> rerun_flops_per_token(N, L, H, Q, T, "full")
    4*H*L*Q*T + 2*N
    """
    mode = recompute.partition("=")[0]
    if mode not in RERUN:
        raise InputError(f"recompute must be one of {', '.join(RERUN)}, got {recompute!r}",
                         "recompute")
    a, b = RERUN[mode]
    n, layer, h, q, t = (exact(v) for v in (n_params, layers, heads, head_dim, context))
    return a * n + b * layer * h * q * t


def mfu_of(cfg: ModelConfig, context: sp.Expr | int, tokens_per_second: sp.Expr | int,
           chips: sp.Expr | int, peak: sp.Expr | int, recompute: str = "none") -> Mfu:
    """PaLM's MFU of ``cfg`` at a throughput, with N = ``model_params(cfg)``, and the HFU
    beside it under ``recompute`` (the hardware's FLOPs above the peak are refused).

    >>> from symroof.models import model
    >>> u = mfu_of(model("llama-2-7b"), 4096, 20000, 8, 989 * 10**12, "full")
    >>> float(u.value) < float(u.hfu) <= 1
    True
    """
    u = mfu_from(model_params(cfg), cfg.layers, cfg.heads, cfg.head_dim, context,
                 tokens_per_second, chips, peak)
    rerun = rerun_flops_per_token(model_params(cfg), cfg.layers, cfg.heads, cfg.head_dim,
                                  context, recompute)
    from dataclasses import replace
    u = replace(u, rerun_flops_per_token=rerun, recompute=recompute)
    if u.hfu.is_number and u.hfu > 1:
        raise InputError(f"{sp.sstr(u.tokens_per_second)} tokens/s is an HFU of "
                         f"{float(u.hfu):.2%} under {recompute} recomputation, above the peak "
                         f"of {sp.sstr(u.chips)} chips: check the throughput, the chip and "
                         "the chip count", "tokens_per_second")
    return u


def predicted_mfu(cfg: ModelConfig, tokens: sp.Expr | int, seconds: sp.Expr,
                  chips: sp.Expr | int, peak: sp.Expr, context: sp.Expr | int) -> sp.Expr:
    """The MFU a plan would reach if a step of ``tokens`` took ``seconds`` (its T_lower)."""
    fpt = palm_flops_per_token(model_params(cfg), cfg.layers, cfg.heads, cfg.head_dim,
                               context)
    return sp.sympify(tokens) * fpt / (sp.sympify(seconds) * chips * peak)
