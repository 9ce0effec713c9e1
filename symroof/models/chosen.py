"""A model's counts under a text's modelling choices: FLOPs per token, parameter counts and
training bytes per parameter as a book simplifies them.

>>> from symroof.core.choices import Choices
>>> from symroof.models import model
>>> cfg = model("llama-2-7b")
>>> flops_under(cfg, 1024, Choices(flops="per_token_2P", sizes="nominal"))
14000000000
>>> nominal_params(cfg), optimizer_bytes(Choices(optimizer="megatron18"))
(7000000000, 18)

``flops`` (forward FLOPs per token at a context): ``full`` counts every matmul and the
attention core, ``causal`` the attention core for the causal half (a token attends to the
positions before it), ``per_token_2P`` is 2 FLOPs per active parameter with no attention,
``per_token_6P`` is 6 per active parameter (forward and backward). ``sizes="nominal"``
takes the parameter count the model is published as ("7B": 7e9) instead of the exact one.
``optimizer`` gives the training bytes per parameter: ZeRO's 16, Megatron's 18, or the
text's own k. ``checkpoints`` gives the activation bytes kept per token: the exact model's
under no, selective or full recomputation, or a text's k tensors of D per layer.
``training_min_chips`` puts them together: the fewest chips whose HBM holds the weights,
gradients and optimizer states and the activations of ``tokens`` tokens.
``book_decode_time`` is a serving step in a book's form: weights plus the batch's KV
cache over the HBM bandwidth.
"""

from __future__ import annotations

import re

import sympy as sp

from ..core.choices import EXACT, Choices
from ..core.errors import InputError
from ..core.sizes import dtype_bytes
from ..hardware.catalog import Chip
from .config import ModelConfig
from .counts import context_symbol, forward_flops, kv_bytes_per_token, params
from .memory import activation_bytes

OPTIMIZER_BYTES = {"zero16": 16, "megatron18": 18}
_NOMINAL = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([MBT])\b")
_SCALE = {"M": 10**6, "B": 10**9, "T": 10**12}


def nominal_params(cfg: ModelConfig, active: bool = False) -> sp.Expr:
    """The parameter count the model is published as (its source's ``published``: "7B",
    or "15.7B total, 2.4B activated" with ``active`` for the second)."""
    said = str((cfg.source or {}).get("published", ""))
    found = _NOMINAL.findall(said)
    if not found:
        raise InputError(f"model {cfg.name!r} states no round parameter count (published: "
                         f"{said or 'none'!r})", "sizes=nominal")
    number, unit = found[1] if active and len(found) > 1 else found[0]
    return sp.Rational(number) * _SCALE[unit]


def params_under(cfg: ModelConfig, choices: Choices = EXACT, active: bool = True) -> sp.Expr:
    """Active (or total) parameters, exact or nominal."""
    if choices.sizes == "nominal":
        return nominal_params(cfg, active=active and cfg.moe is not None)
    p = params(cfg)
    return p.active if active else p.total


def flops_under(cfg: ModelConfig, context: int | sp.Expr | None = None,
                choices: Choices = EXACT) -> sp.Expr:
    """Forward FLOPs per token (training FLOPs under ``per_token_6P``) under ``choices``."""
    if choices.flops == "per_token_2P":
        return 2 * params_under(cfg, choices)
    if choices.flops == "per_token_6P":
        return 6 * params_under(cfg, choices)
    if choices.sizes == "nominal":
        raise InputError("nominal sizes go with a per-token count (per_token_2P or "
                         "per_token_6P): the full count needs the exact shapes", "choices")
    f = forward_flops(cfg, context)
    return f.total if choices.flops == "full" else sp.expand(f.total - f.attention / 2)


def optimizer_bytes(choices: Choices = EXACT) -> int:
    """Training bytes per parameter (weights, gradients and optimizer states)."""
    if choices.optimizer == "bytes_per_param":
        assert choices.optimizer_bytes is not None
        return choices.optimizer_bytes
    return OPTIMIZER_BYTES[choices.optimizer]


def activation_bytes_under(cfg: ModelConfig, context: int | sp.Expr | None = None,
                           choices: Choices = EXACT, dtype: str = "bf16") -> sp.Expr:
    """Activation bytes kept per token for the backward pass, whole model.

    >>> from symroof.models import model
    >>> activation_bytes_under(model("llama-2-7b"), 4096,
    ...                        Choices(checkpoints="k_tensors_of_D", checkpoint_tensors=2))
    524288
    """
    if choices.checkpoints == "k_tensors_of_D":
        assert choices.checkpoint_tensors is not None
        return choices.checkpoint_tensors * cfg.d_model * cfg.layers * dtype_bytes(dtype)
    return activation_bytes(cfg, choices.checkpoints, context=context, dtype=dtype).total


def training_min_chips(cfg: ModelConfig, chip: Chip, choices: Choices = EXACT,
                       tokens: int | sp.Expr = 0, context: int | sp.Expr | None = None,
                       ) -> tuple[sp.Expr, sp.Expr]:
    """(the bound n >= bytes / HBM per chip, the fewest whole chips) for training with
    ``tokens`` tokens in flight (batch x context) under ``choices``.

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> training_min_chips(model("llama-2-7b"), chip("h100-sxm"))[1]
    2
    """
    weights = params_under(cfg, choices, active=False) * optimizer_bytes(choices)
    act = 0 if tokens == 0 else sp.sympify(tokens) * activation_bytes_under(
        cfg, context_symbol(context), choices)
    bound = sp.cancel((weights + act) / chip.capacity("hbm"))
    return bound, sp.ceiling(bound)


def book_decode_time(cfg: ModelConfig, chip: Chip, batch: int | sp.Expr,
                     context: int | sp.Expr, choices: Choices = EXACT,
                     dtype: str = "bf16", kv_dtype: str = "bf16") -> sp.Expr:
    """A decode step in a book's form: the weights and the batch's KV cache read once from
    HBM, (P x bytes + B x T x KV bytes per token) / HBM bandwidth, with no activation
    traffic and no compute term (the full step is ``symroof.models.step_roofline``).

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> book_decode_time(model("llama-2-7b"), chip("h100-sxm"), 1, 0,
    ...                  Choices(sizes="nominal"))
    7/1675
    """
    weights = params_under(cfg, choices, active=False) * dtype_bytes(dtype)
    kv = sp.sympify(batch) * sp.sympify(context) * kv_bytes_per_token(cfg, kv_dtype)
    return sp.cancel((weights + kv) / chip.bandwidth("hbm"))
