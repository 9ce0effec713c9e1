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
cache over the HBM bandwidth, ``book_prefill_time`` a prefill's, 2 P per token over the
peak (``decode_time_of`` the decode step from a parameter count and KV bytes per token
alone; ``traffic="weights"`` the weights-only floorline);
``queries_per_second``, ``prefill_decode_balance`` and ``tokens_evicted_per_step`` the
serving arithmetic a text does from given step times and lengths. For training budgets:
``training_flops_of`` (6 N D from two numbers), ``flop_budget`` (chip-hours x peak),
``chips_for_batch``, ``largest_model``, ``model_flops_utilisation`` (MFU or HFU from a
throughput) and the ``PETAFLOP_DAY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.choices import EXACT, Choices
from ..core.errors import InputError
from ..core.sizes import dtype_bytes
from ..core.units import COUNT, FLOPS, PER_SECOND, TIME, records
from ..hardware.catalog import Chip
from .config import ModelConfig
from .counts import KV_TRIES, context_symbol, forward_flops, params
from .memory import OPTIMIZERS, activation_bytes, checkpointed_bytes
from .nominal import kv_bytes_under, nominal_params
from .nominal import positive_number as _number

# the optimizer choices (symroof.core.choices) as the training_memory presets they name
OPTIMIZER_PRESETS = {"zero16": "adam-mixed", "megatron18": "adam-megatron",
                     "adam_bf16": "adam-bf16", "adam_8bit": "adam-8bit",
                     "sgd_momentum": "sgd-momentum"}
OPTIMIZER_BYTES = {choice: sum(OPTIMIZERS[preset][:3])
                   for choice, preset in OPTIMIZER_PRESETS.items()}


@records(COUNT)
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
    """Training bytes per parameter (weights, gradients and optimizer states): a preset's
    (``OPTIMIZER_PRESETS``, the ``training_memory`` presets) or the text's own k.

    >>> optimizer_bytes(Choices(optimizer="adam_8bit")), optimizer_bytes(Choices(
    ...     optimizer="adam_bf16")), optimizer_bytes(Choices(optimizer="sgd_momentum"))
    (6, 10, 12)
    """
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
    if choices.checkpoints in ("k_tensors_of_D", "matmuls"):
        return checkpointed_bytes(cfg, choices.checkpoints, dtype=dtype,
                                  tensors=choices.checkpoint_tensors).total
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


@records(TIME, tries=KV_TRIES)
def book_decode_time(cfg: ModelConfig, chip: Chip, batch: int | sp.Expr,
                     context: int | sp.Expr, choices: Choices = EXACT,
                     dtype: str = "bf16", kv_dtype: str = "bf16", *,
                     chips: int | sp.Expr = 1, traffic: str | None = None) -> sp.Expr:
    """A decode step in a book's form: the weights and the batch's KV cache read once from
    HBM, (P x bytes + B x T x KV bytes per token) / (chips x HBM bandwidth), with no
    activation traffic and no compute term (the full step is
    ``symroof.models.step_roofline``); ``traffic="weights"`` (or the choice
    ``traffic=weights``, which the full step takes too) counts the weights alone. A
    ``choices.kv_dtype`` other than ``as_given`` (a text's KV cache in ``fp8`` or
    ``int8``, tried by the judge) is the KV cache's dtype, as ``kv_dtype`` gives it.

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> book_decode_time(model("llama-2-7b"), chip("h100-sxm"), 1, 0,
    ...                  Choices(sizes="nominal"))
    7/1675
    >>> book_decode_time(model("llama-2-7b"), chip("h100-sxm"), 8, 4096,
    ...                  Choices(sizes="nominal", traffic="weights"))
    7/1675
    >>> book_decode_time(model("llama-2-7b"), chip("h100-sxm"), 8, 4096,
    ...                  Choices(kv_dtype="fp8")) == book_decode_time(
    ...     model("llama-2-7b"), chip("h100-sxm"), 8, 4096, kv_dtype="fp8")
    True
    """
    if choices.kv_dtype != "as_given":  # a text's KV cache dtype: as kv_dtype= gives it
        kv_dtype, choices = choices.kv_dtype, choices.with_(kv_dtype="as_given")
    counted = traffic or ("weights" if choices.traffic == "weights" else "weights_kv")
    # the KV bytes are the cache's in kv_dtype: the decode time reads them as that
    return decode_time_of(params_under(cfg, choices, active=False),
                          kv_bytes_under(cfg, kv_dtype, choices), chip, batch, context,
                          bytes_per_param=dtype_bytes(dtype), chips=chips, traffic=counted,
                          kv_bytes_dtype=kv_dtype)


@records(TIME)
def book_prefill_time(cfg: ModelConfig, chip: Chip, batch: int | sp.Expr,
                      tokens: int | sp.Expr, choices: Choices = EXACT, dtype: str = "bf16",
                      *, chips: int | sp.Expr = 1) -> sp.Expr:
    """A prefill in a book's form: 2 FLOPs per (active) parameter per token over the peak,
    2 x P x B x T / (chips x C), with no attention and no memory term (the full step is
    ``symroof.models.step_roofline``); ``sizes="nominal"`` takes the text's round count.

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> book_prefill_time(model("llama-2-7b"), chip("h100-sxm"), 1, 1000,
    ...                   Choices(sizes="nominal"))
    70/4947
    """
    from ..core.quant import matmul_input
    peak = chip.peak(matmul_input("bf16", dtype))
    return sp.cancel(2 * params_under(cfg, choices) * sp.sympify(batch) * sp.sympify(tokens)
                     / (_number(chips, "chips") * peak))


TRAFFIC = {"weights_kv": "the weights and the batch's KV cache read once per step",
           "weights": "the weights alone read once per step (a floorline: no KV cache)"}


def _decode_under(choices: Choices, params_count: Any, kv_bytes_per_token_: Any, chip: Chip,
                  batch: Any, context: Any, **given: Any) -> sp.Expr:
    """:func:`decode_time_of` as ``choices`` take it: ``traffic=weights`` counts the weights
    alone (the floorline a text draws, no KV cache read), ``edition`` takes the chip table's
    other edition of the HBM bandwidth (a book's rounded 3.4e12 B/s for the H100), a
    ``kv_dtype`` choice (``fp8``, ``int8``) reads the KV cache in that dtype, as
    ``kv_dtype=`` gives it; the counts it is given are the text's own, so no other choice
    applies to them.

    >>> from symroof import chip
    >>> h100 = chip("h100-sxm")
    >>> _decode_under(Choices(traffic="weights"), "7e9", "1e5", h100, 8, 1000)
    7/1675
    >>> _decode_under(Choices(edition="B12-table"), "7e9", "1e5", h100, 8, 1000)
    37/8500
    >>> _decode_under(Choices(kv_dtype="fp8"), "7e9", "1e5", h100, 8, 1000)
    36/8375
    """
    if choices.traffic == "weights":
        given = {**given, "traffic": "weights"}
    if choices.kv_dtype != "as_given":  # the cache in the dtype a text takes
        given = {**given, "kv_dtype": choices.kv_dtype}
    return decode_time_of(params_count, kv_bytes_per_token_, chip.under(choices), batch,
                          context, **given)


@records(TIME, again=_decode_under, tries=({"traffic": "weights"}, *KV_TRIES), editions=True,
         base={"traffic": "weights_kv"})
def decode_time_of(params_count: int | float | str | sp.Expr,
                   kv_bytes_per_token_: int | float | str | sp.Expr, chip: Chip,
                   batch: int | sp.Expr, context: int | sp.Expr, *,
                   bytes_per_param: int | float | sp.Expr = 2, chips: int | sp.Expr = 1,
                   traffic: str = "weights_kv", kv_dtype: str | None = None,
                   kv_bytes_dtype: str = "bf16") -> sp.Expr:
    """A decode step of a model given only by its parameter count and KV bytes per token
    (no config), in a book's form: (P x bytes per parameter + B x T x KV bytes per token)
    / (chips x HBM bandwidth); ``traffic="weights"`` counts the weights alone (the
    floorline a text draws under the step). The KV bytes per token are counted in
    ``kv_bytes_dtype``: 16 bits unless the caller says (a key and a value of bf16
    elements, as ``kv_bytes_per_token`` gives them by default; ``"fp8"`` for bytes a text
    gives already in fp8). ``kv_dtype`` (``fp8``, ``int8``, any dtype name; default: the
    dtype the bytes are counted in) reads the cache in that dtype: those bytes times its
    bytes per element over theirs.

    >>> from symroof import chip
    >>> decode_time_of("70e9", "320e3", chip("h100-sxm"), 32, 2048, chips=8)
    1877/312500
    >>> decode_time_of(70 * 10**9, 0, chip("h100-sxm"), 1, 0, traffic="weights")
    14/335
    >>> decode_time_of("7e9", "1e5", chip("h100-sxm"), 8, 1000, kv_dtype="fp8")
    36/8375

    The same cache given as its fp8 bytes reads as they are, and in fp8 the same:

    >>> decode_time_of("7e9", "5e4", chip("h100-sxm"), 8, 1000, kv_bytes_dtype="fp8")
    36/8375
    >>> decode_time_of("7e9", "5e4", chip("h100-sxm"), 8, 1000, kv_dtype="fp8",
    ...                kv_bytes_dtype="fp8")
    36/8375
    """
    if traffic not in TRAFFIC:
        raise InputError(f"traffic is one of {', '.join(TRAFFIC)}, got {traffic!r}",
                         "traffic")
    weights = _number(params_count, "params") * _number(bytes_per_param, "bytes_per_param")
    counted = dtype_bytes(kv_bytes_dtype, where="kv_bytes_dtype")  # what the bytes are in
    per_element = sp.Integer(1) if kv_dtype is None else \
        dtype_bytes(kv_dtype, where="kv_dtype") / counted
    kv = 0 if traffic == "weights" or kv_bytes_per_token_ == 0 else \
        sp.sympify(batch) * sp.sympify(context) * _number(kv_bytes_per_token_,
                                                          "kv_bytes_per_token") * per_element
    return sp.cancel((weights + kv) / (_number(chips, "chips") * chip.bandwidth("hbm")))


@records(PER_SECOND)
def queries_per_second(batch: int | sp.Expr, step_time: int | float | str | sp.Expr,
                       tokens: int | sp.Expr, chips: int | sp.Expr = 1) -> sp.Expr:
    """Queries per second per chip of a decode server: ``batch`` queries finish every
    ``tokens`` steps of ``step_time`` seconds, on ``chips`` chips.

    >>> queries_per_second(32, "0.02", 512, chips=8)
    25/64
    """
    return sp.cancel(sp.sympify(batch) / (_number(step_time, "step_time") *
                                          _number(tokens, "tokens") * _number(chips, "chips")))


@records(COUNT)
def tokens_evicted_per_step(batch: int | sp.Expr, generate: int | sp.Expr,
                            prompt: int | sp.Expr = 0) -> sp.Expr:
    """Tokens of KV cache a continuous-batching decode server frees per step at steady
    state: each of ``batch`` sequences generates ``generate`` tokens after a ``prompt``, so
    batch / generate of them finish each step, each freeing its prompt's and its generated
    tokens' entries, batch (prompt + generate) / generate; as many as the step adds (a
    token for each sequence, a prompt for each one admitted), the cache's size held.

    >>> tokens_evicted_per_step(32, 512, prompt=2048)
    160
    """
    held = sp.sympify(prompt) if isinstance(prompt, (int, sp.Expr)) else prompt
    if held != 0:
        try:
            held = _number(prompt, "prompt")
        except InputError:
            raise InputError(f"prompt must be 0 or more tokens, got {prompt!r}",
                             "prompt") from None
    return sp.cancel(_number(batch, "batch") * (held + _number(generate, "generate")) /
                     _number(generate, "generate"))


@records(COUNT)
def prefill_decode_balance(prefill_time: int | float | str | sp.Expr,
                           decode_step_time: int | float | str | sp.Expr,
                           tokens: int | sp.Expr, decode_batch: int | sp.Expr, *,
                           prefill_batch: int | sp.Expr = 1,
                           prefill_chips: int | sp.Expr = 1,
                           decode_chips: int | sp.Expr = 1) -> sp.Expr:
    """Prefill chips per decode chip that keep both busy, from the latencies a text gives:
    a query takes ``prefill_time`` on ``prefill_chips`` (``prefill_batch`` prompts at once)
    and ``tokens`` decode steps of ``decode_step_time`` on ``decode_chips`` shared by
    ``decode_batch`` queries; the chips go as the chip-seconds per query.

    >>> prefill_decode_balance("0.5", "0.02", 512, 32, prefill_chips=8, decode_chips=8)
    25/16
    """
    prefill = _number(prefill_time, "prefill_time") * _number(prefill_chips, "prefill_chips") \
        / _number(prefill_batch, "prefill_batch")
    decode = _number(decode_step_time, "decode_step_time") * _number(tokens, "tokens") * \
        _number(decode_chips, "decode_chips") / _number(decode_batch, "decode_batch")
    return sp.cancel(prefill / decode)


# one petaFLOP/s sustained for a day, the unit a text states training compute in
PETAFLOP_DAY = sp.Integer(10**15 * 86400)


@records(FLOPS)
def training_flops_of(params_count: int | float | str | sp.Expr,
                      tokens: int | float | str | sp.Expr) -> sp.Expr:
    """6 N D: the training FLOPs of ``params_count`` parameters on ``tokens`` tokens, from
    the two numbers alone (no config).

    >>> training_flops_of("70e9", "1.4e12") / PETAFLOP_DAY
    61250/9
    """
    return 6 * _number(params_count, "params") * _number(tokens, "tokens")


@records(FLOPS)
def flop_budget(chip_hours: int | float | str | sp.Expr, peak: sp.Expr | Chip,
                utilisation: int | float | str | sp.Expr = 1, dtype: str = "bf16") -> sp.Expr:
    """The FLOPs ``chip_hours`` of a chip deliver at its peak (a chip's ``dtype`` peak, or
    a number) times ``utilisation``.

    >>> from symroof import chip
    >>> flop_budget(1000, chip("h100-sxm"), "0.5")
    1780920000000000000000
    """
    rate = peak.peak(dtype) if isinstance(peak, Chip) else _number(peak, "peak")
    return _number(chip_hours, "chip_hours") * 3600 * rate * _number(utilisation, "utilisation")


@records(COUNT)
def chips_for_batch(global_batch: int | sp.Expr, per_chip: int | sp.Expr) -> sp.Expr:
    """The most chips a global batch keeps at or above a per-chip (critical) batch:
    floor(global / per chip).

    >>> chips_for_batch(4 * 10**6, 2550)
    1568
    """
    return sp.floor(_number(global_batch, "global_batch") / _number(per_chip, "per_chip"))


@records(COUNT)
def largest_model(memory: int | float | str | sp.Expr,
                  bytes_per_param: int | float | str | sp.Expr) -> sp.Expr:
    """The most parameters ``memory`` bytes hold at ``bytes_per_param`` each (whole
    parameters).

    >>> largest_model(80 * 10**9, 16)
    5000000000
    """
    return sp.floor(_number(memory, "memory") / _number(bytes_per_param, "bytes_per_param"))


@records(COUNT)
def model_flops_utilisation(tokens_per_second: int | float | str | sp.Expr,
                            flops_per_token: int | float | str | sp.Expr,
                            peak: int | float | str | sp.Expr, chips: int | sp.Expr = 1,
                            ) -> sp.Expr:
    """MFU (or HFU, with the hardware's FLOPs per token, recomputation included) from a
    reported throughput: tokens/s x FLOPs per token / (chips x peak); a throughput above
    the peak is refused.

    >>> model_flops_utilisation(3000, 6 * 7 * 10**9, 989 * 10**12)
    126/989
    """
    mfu = sp.cancel(_number(tokens_per_second, "tokens_per_second") *
                    _number(flops_per_token, "flops_per_token") /
                    (_number(chips, "chips") * _number(peak, "peak")))
    if mfu.is_number and mfu > 1:
        raise InputError(f"the throughput needs {sp.N(mfu, 4)} x the peak: more than the "
                         "chips can do", "tokens_per_second")
    return mfu


@dataclass(frozen=True)
class Utilisation:
    """MFU (the model's FLOPs, 6 N per token) and HFU (the FLOPs the hardware ran, the
    recomputed forward included) of a reported throughput, as fractions of the peak."""

    mfu: sp.Expr
    hfu: sp.Expr
    recompute: str


def flops_utilisation(tokens_per_second: int | float | str | sp.Expr,
                      params_count: int | float | str | sp.Expr,
                      peak: int | float | str | sp.Expr, chips: int | sp.Expr = 1,
                      recompute: str = "none") -> Utilisation:
    """MFU and HFU side by side from a throughput and a parameter count (no config): the
    model does 6 N FLOPs per token; under ``recompute="full"`` the hardware also reruns
    the forward, 2 N more (8 N); under ``none`` HFU is MFU. The hardware's FLOPs above the
    peak are refused (HFU <= 1).

    >>> u = flops_utilisation(3000, "7e9", 989 * 10**12, recompute="full")
    >>> u.mfu, u.hfu
    (126/989, 168/989)
    """
    rerun = {"none": 0, "full": 2}
    if recompute not in rerun:
        raise InputError(f"recompute is one of {', '.join(rerun)} (from a parameter count "
                         f"alone), got {recompute!r}", "recompute")
    n = _number(params_count, "params")
    hfu = model_flops_utilisation(tokens_per_second, (6 + rerun[recompute]) * n, peak, chips)
    mfu = model_flops_utilisation(tokens_per_second, 6 * n, peak, chips)
    return Utilisation(mfu, hfu, recompute)
