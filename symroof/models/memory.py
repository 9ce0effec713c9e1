"""Memory of a transformer: activations under a recomputation policy, training and inference.

>>> from symroof.models import model
>>> training_memory(model("llama-2-7b")).bytes_per_param
16
>>> activation_bytes(model("gpt2"), "selective", context=1024).per_layer
26112

Activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", section 4: per layer and token, what the backward pass needs, at
``dtype`` bytes per element (1 byte per dropout-mask element). For a GPT layer (4D MLP,
dropout, 16-bit) the sum is 34 D + 5 N T bytes, their s b h (34 + 5 a s / h) per s b.
A gated MLP keeps gate and up outputs, the activation output and their product (4 F); a
plain MLP the activation input and output (2 F). Selective recomputation reruns the
attention core (Q K^T, softmax, dropout, A V) and drops its T-wide terms; full
recomputation keeps only each layer's input. A fused (flash) attention kernel keeps none of
the T-wide tensors (its backward recomputes the scores, and regenerates a dropout mask from
its seed) but the softmax statistics, one fp32 log-sum-exp per query head and token, as
FlashAttention-2 keeps them (Dao 2023, section 3.1; the first FlashAttention kept two, the
row maximum and sum): ``attention="flash"``.

>>> activation_bytes(model("gpt2"), context=1024, attention="flash").per_layer
26160
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..core.choices import EXACT, Choices
from ..core.errors import InputError
from ..core.quant import rest_dtype
from ..core.sizes import dtype_bytes
from ..core.units import CAPACITY, records
from .config import ModelConfig
from .counts import RECOMPUTE, context_symbol, count_of, kv_bytes_per_token, params, sizes_of
from .nominal import kv_bytes_under, nominal_kv_bytes, nominal_params, round_figures

# bytes per parameter (weights, gradients, optimizer state); sources in the docstring
OPTIMIZERS: dict[str, tuple[int, int, int, str]] = {
    "adam-mixed": (2, 2, 12, "mixed-precision Adam: bf16 weights and gradients, fp32 master "
                   "weights and two fp32 moments (Rajbhandari et al. 2020, ZeRO, section 3.1)"),
    "adam-megatron": (2, 4, 12, "Megatron-LM's mixed-precision Adam: fp16 weights, fp32 "
                      "gradients, fp32 master weights and two fp32 moments, 18 bytes per "
                      "parameter (the bars of Korthikanti et al. 2022, Figure 1)"),
    "adam-fp32": (4, 4, 8, "fp32 Adam: fp32 weights, gradients and two moments"),
    "sgd-mixed": (2, 2, 4, "mixed-precision SGD without momentum: fp32 master weights only"),
    "adam-bf16": (2, 0, 8, "bf16 weights and two fp32 Adam moments, no gradient copy kept "
                  "(each gradient applied as it is made) and no master copy: 10 bytes per "
                  "parameter"),
    "adam-8bit": (2, 2, 2, "8-bit Adam: bf16 weights and gradients, the two moments "
                  "quantised to 8 bits each (Dettmers et al. 2022, 8-bit Optimizers via "
                  "Block-wise Quantization), no master copy"),
    "sgd-momentum": (2, 2, 8, "mixed-precision SGD with momentum: bf16 weights and "
                     "gradients, fp32 master weights and one fp32 momentum"),
}
def plan_states(optimizer: str) -> tuple[sp.Expr, sp.Expr, sp.Expr, str]:
    """A preset's bytes per parameter (weights, gradients, state) and why, for a training
    plan, or the parts given by dtype name (``weights=bf16,gradients=fp32,state=fp32+fp32``,
    each part's tensors joined by ``+``). A preset that keeps no gradient copy
    (``adam-bf16``: each gradient applied as it is made) holds 0 bytes of gradients; its
    gradients still cross the links, in the weights' dtype (``plans.template``).

    >>> plan_states("adam-mixed")[:3], plan_states("adam-bf16")[:3]
    ((2, 2, 12), (2, 0, 8))
    >>> plan_states("weights=bf16, gradients=fp32, state=fp32+fp32+fp32")
    (2, 4, 12, 'weights bf16, gradients fp32, state fp32+fp32+fp32, as given')
    """
    if "=" in optimizer:
        given: dict[str, str] = {}
        for part in (p.strip() for p in optimizer.split(",")):
            name, _, value = part.partition("=")
            name = name.strip()
            if name not in ("weights", "gradients", "state") or not value.strip():
                raise InputError(f"expected weights=, gradients= and state= dtype names (state "
                                 f"joined by '+'), got {part!r}", "optimizer")
            if name in given:
                raise InputError(f"{name} is given twice", "optimizer")
            given[name] = value.strip()
        missing = [n for n in ("weights", "gradients", "state") if n not in given]
        if missing:
            raise InputError(f"no bytes for {missing[0]}: give weights=, gradients= and "
                             "state=", "optimizer")
        w, g, st = (_part_bytes(given[n], 0, f"optimizer {n}")
                    for n in ("weights", "gradients", "state"))
        return w, g, st, ", ".join(f"{n} {given[n]}" for n in given) + ", as given"
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r} (known: {', '.join(OPTIMIZERS)}, or "
                         "weights=, gradients= and state= dtype names)", "optimizer")
    w0, g0, s0, why = OPTIMIZERS[optimizer]
    return sp.Integer(w0), sp.Integer(g0), sp.Integer(s0), why


# checkpoint policies training_memory takes beyond the recomputation modes (RECOMPUTE):
# the outputs of each layer's weight matmuls kept, or a text's k tensors of D per layer
CHECKPOINTS = ("matmuls", "k_tensors_of_D")


def checkpoint_policy(recompute: str) -> tuple[str, int | None]:
    """A training plan's recomputation policy as (mode, k): a mode of ``RECOMPUTE``, a
    checkpoint policy of ``CHECKPOINTS``, ``k_tensors_of_D`` with its k written after an
    ``=`` (``"k_tensors_of_D=4"``).

    >>> checkpoint_policy("selective"), checkpoint_policy("k_tensors_of_D=4")
    (('selective', None), ('k_tensors_of_D', 4))
    """
    mode, eq, k = recompute.partition("=")
    known = (*RECOMPUTE, "matmuls", "k_tensors_of_D=K")
    if mode not in (*RECOMPUTE, *CHECKPOINTS):
        raise InputError(f"unknown recomputation policy {recompute!r} (known: "
                         f"{', '.join(known)})", "recompute")
    if (mode == "k_tensors_of_D") != bool(eq):
        raise InputError("k_tensors_of_D takes its k, k_tensors_of_D=K (and only it takes "
                         f"one), got {recompute!r}", "recompute")
    if not eq:
        return mode, None
    if not k.isdigit() or int(k) < 1:
        raise InputError(f"k must be a whole number of tensors, at least 1, got {k!r}",
                         "recompute")
    return mode, int(k)
T_WIDE = ("softmax output", "softmax dropout mask", "softmax dropout output")
ATTENTION = ("materialised", "flash")


@dataclass(frozen=True)
class Activations:
    """Activation bytes per token: ``dense`` and ``moe`` layer parts by name (a kind the
    model lacks is empty), ``per_layer`` (a dense layer's sum, else a MoE layer's) and
    ``total`` (all layers)."""

    policy: str
    dense: Mapping[str, sp.Expr]
    moe: Mapping[str, sp.Expr]
    layers_dense: sp.Expr
    layers_moe: sp.Expr

    @property
    def per_layer(self) -> sp.Expr:
        return sp.expand(sum((self.dense or self.moe).values(), sp.S.Zero))

    @property
    def total(self) -> sp.Expr:
        return sp.expand(self.layers_dense * sum(self.dense.values(), sp.S.Zero)
                         + self.layers_moe * sum(self.moe.values(), sp.S.Zero))


def _layer_parts(cfg: ModelConfig, s: Mapping[str, sp.Expr], width: sp.Expr, T: sp.Expr, a: sp.Expr,
                 dropout: bool) -> dict[str, sp.Expr]:
    D, N, K, H = s["D"], s["N"], s["K"], s["H"]
    m = sp.S.One if dropout else sp.S.Zero
    parts = {
        "attention norm input": a * D, "QKV input": a * D, "Q and K": a * (N + K) * H,
        "V": a * K * H, "softmax output": a * N * T, "softmax dropout mask": m * N * T,
        "softmax dropout output": a * N * T if dropout else sp.S.Zero,
        "output projection input": a * N * H, "attention dropout mask": m * D,
        "MLP norm input": a * D, "MLP input": a * D,
    }
    if cfg.mlp == "gated":
        parts |= {"gate and up outputs": 2 * a * width, "activation output": a * width,
                  "gated product": a * width}
    else:
        parts |= {"activation input": a * width, "activation output": a * width}
    parts["MLP dropout mask"] = m * D
    return {k: v for k, v in parts.items() if v != 0}


def activation_bytes(cfg: ModelConfig, policy: str = "none", *,
                     context: int | sp.Expr | None = None, dtype: str = "bf16",
                     dropout: bool | None = None, symbolic: bool = False,
                     attention: str = "materialised") -> Activations:
    """Activation bytes per token kept for the backward pass under ``policy`` (``none``,
    ``selective`` or ``full`` recomputation), for sequences of ``context`` tokens; dropout
    masks count when ``dropout`` (default: the config's); ``attention`` is the kernel
    (``materialised`` scores or ``flash``)."""
    if attention not in ATTENTION:
        raise InputError(f"attention must be one of {', '.join(ATTENTION)}, got {attention!r}",
                         "attention")
    if policy not in RECOMPUTE:
        raise InputError(f"recomputation policy must be one of {', '.join(RECOMPUTE)}, "
                         f"got {policy!r}")
    if cfg.mla is not None:
        raise InputError(f"{cfg.name}: activations of latent attention (MLA) are not modelled")
    s = sizes_of(cfg, symbolic)
    T, a = context_symbol(context), dtype_bytes(dtype, where="activation dtype")
    moe_width = s["k"] * s["F_e"] + s["E_s"] * s["F_s"]

    def kept(width: sp.Expr) -> dict[str, sp.Expr]:
        parts = _layer_parts(cfg, s, width, T, a, cfg.dropout if dropout is None else dropout)
        if attention == "flash":
            parts = {k: v for k, v in parts.items() if k not in T_WIDE}
            parts["softmax statistics"] = 4 * s["N"]
        if policy == "selective":
            return {k: v for k, v in parts.items() if k not in T_WIDE}
        if policy == "full":
            return {"layer input": a * s["D"]}
        return parts

    dense = kept(s["F"]) if s["L_d"] != 0 else {}
    moe = kept(moe_width) if cfg.moe is not None and s["L"] - s["L_d"] != 0 else {}
    return Activations(policy, dense, moe, s["L_d"], s["L"] - s["L_d"])


# the activations outside the transformer layers, by the pipeline stage that holds them
# (Korthikanti et al. 2022, section 4.3): the embedding's on the first, the head's on the last
OUTSIDE_STAGES = {"embedding dropout mask": "first", "final norm input": "last",
                  "output head input": "last", "logits (fp32)": "last"}
VOCABULARY_PARALLEL = ("logits (fp32)",)  # split over the tensor ranks with the vocabulary
OUTSIDE_PART = "activations_outside_layers"  # their part of a training plan's memory


def outside_layer_bytes(cfg: ModelConfig, *, dtype: str = "bf16",
                        dropout: bool | None = None) -> dict[str, sp.Expr]:
    """Activation bytes per token kept outside the transformer layers for the backward
    pass, one device's whole (before any tensor split), after Korthikanti et al. 2022,
    "Reducing Activation Recomputation in Large Transformer Models", section 4.3 ("Total
    Activations Memory"): the embedding keeps no considerable activation ("Position and
    word embeddings do not require any considerable activations to be stored for the
    backward pass"; its output is the first layer's input, counted with the layer) but its
    dropout's mask, one byte an element (``dropout``, default the config's), the paper's
    sbh p / t; the final norm its input and the output head its input at ``dtype``, the
    paper's 2 s b h / t each; the cross entropy the logits in fp32 whatever ``dtype`` is
    ("calculated in 32-bit floating point", 4 s b v / t). Which stage holds each:
    ``OUTSIDE_STAGES``.

    >>> from symroof.models import model
    >>> kept = outside_layer_bytes(model("megatron-gpt-22b"))   # D 6144, V 51200, dropout
    >>> list(kept.values())
    [6144, 12288, 12288, 204800]
    """
    a = dtype_bytes(dtype, where="activation dtype")
    mask = sp.S.One if (cfg.dropout if dropout is None else dropout) else sp.S.Zero
    D, V = sp.Integer(cfg.d_model), sp.Integer(cfg.vocab)
    return {"embedding dropout mask": mask * D, "final norm input": a * D,
            "output head input": a * D, "logits (fp32)": 4 * V}


@dataclass(frozen=True)
class Memory:
    """Bytes by part, and the assumptions (bytes per parameter, dtypes) they rest on."""

    parts: Mapping[str, sp.Expr]
    assumptions: Mapping[str, str] = field(default_factory=dict)
    bytes_per_param: sp.Expr = sp.S.Zero

    @property
    def total(self) -> sp.Expr:
        return sp.expand(sum(self.parts.values(), sp.S.Zero))


def _training_under(choices: Choices, cfg: ModelConfig, **given: Any) -> Memory:
    """:func:`training_memory` as ``choices`` take it: ``sizes=nominal`` counts the
    weights, gradients and optimizer state of the round parameter count a text uses ("7B":
    7e9), ``optimizer`` (other than the exact model's) that preset's bytes per parameter,
    ``checkpoints`` (other than none) that recomputation policy for the activations; a
    choice left at the exact model's keeps what the call gave. ``memory`` is what a text
    counts of it (``TRAINING_COUNTS``): every part (``training``, or ``all``), the weights
    alone (``weights``), or the weights, gradients and optimizer state without the
    activations (``states``); its ``bytes_per_param`` is then of the parts counted.

    >>> from symroof.models import model
    >>> _training_under(Choices(sizes="nominal"), model("llama-2-7b")).total
    112000000000
    >>> _training_under(Choices(optimizer="megatron18"), model("llama-2-7b")).bytes_per_param
    18
    >>> m = _training_under(Choices(memory="weights"), model("llama-2-7b"), batch=1,
    ...                     context=4096)
    >>> m.parts, m.bytes_per_param
    ({'weights': 13476831232}, 2)
    >>> list(_training_under(Choices(memory="states"), model("llama-2-7b"), batch=1,
    ...                      context=4096).parts)
    ['weights', 'gradients', 'optimizer state']
    """
    from .chosen import OPTIMIZER_PRESETS  # (the choices' presets build on this module)
    counted = TRAINING_COUNTS[choices.memory]  # (every count of OPTIONS has its parts)
    if choices.optimizer != EXACT.optimizer:
        if choices.optimizer not in OPTIMIZER_PRESETS:
            raise InputError(f"optimizer={choices.optimizer} names no preset", "choices")
        given = {**given, "optimizer": OPTIMIZER_PRESETS[choices.optimizer],
                 "weights": None, "gradients": None, "state": None}
    if choices.checkpoints != EXACT.checkpoints:
        given = {**given, "recompute": choices.checkpoints,
                 "tensors": choices.checkpoint_tensors}
    got = training_memory(cfg, **given)
    if choices.sizes == "nominal" and not given.get("symbolic"):
        exact_, round_ = params(cfg).total, nominal_params(cfg)
        states = ("weights", "gradients", "optimizer state")
        got = Memory({k: sp.expand(v * round_ / exact_) if k in states else v
                      for k, v in got.parts.items()},
                     {**got.assumptions, "sizes": f"nominal: {round_figures(cfg)}"},
                     got.bytes_per_param)
    if counted is ALL_PARTS:
        return got
    per = {"weights": sp.Integer(0), "gradients": sp.Integer(0),
           "optimizer state": sp.Integer(0)}
    per.update({k: v for k, v in _bytes_per_part(given).items() if k in counted})
    return Memory({k: v for k, v in got.parts.items() if k in counted},
                  {**got.assumptions, "memory": TRAINING_COUNTED[choices.memory]},
                  sum(per.values(), sp.S.Zero))


def _bytes_per_part(given: Mapping[str, Any]) -> dict[str, sp.Expr]:
    """Bytes per parameter of the weights, the gradients and the optimizer state of a
    :func:`training_memory` call's keywords ``given``."""
    w0, g0, s0, _ = OPTIMIZERS[given.get("optimizer", "adam-mixed")]
    return {name: _part_bytes(given.get(key), d, key) for name, key, d in
            (("weights", "weights", w0), ("gradients", "gradients", g0),
             ("optimizer state", "state", s0))}


# what a text counts of a training memory (the ``memory`` choice): every part, the weights
# alone, or the weights, gradients and optimizer state without the activations
ALL_PARTS = ("weights", "gradients", "optimizer state", "activations")
TRAINING_COUNTS: dict[str, tuple[str, ...]] = {
    "training": ALL_PARTS, "all": ALL_PARTS, "weights": ("weights",),
    "states": ("weights", "gradients", "optimizer state")}
TRAINING_COUNTED = {"weights": "the weights alone (the gradients, the optimizer state and "
                               "the activations not counted)",
                    "states": "the weights, gradients and optimizer state (the activations "
                              "not counted)"}
# what a text may count of a training memory, tried by a diagnosis: its preset's and
# Megatron's optimizer, the recomputation policies, and the parts it counts (at the exact
# and the nominal size)
TRAINING_TRIES: tuple[dict[str, str], ...] = (
    {"optimizer": "megatron18"}, {"optimizer": "megatron18", "sizes": "nominal"},
    {"checkpoints": "selective"}, {"checkpoints": "full"}, {"memory": "weights"},
    {"memory": "states"}, {"memory": "weights", "sizes": "nominal"},
    {"memory": "states", "sizes": "nominal"})


@records(total=CAPACITY, again=_training_under, tries=TRAINING_TRIES,
         base={"memory": "training"})
def training_memory(cfg: ModelConfig, *, optimizer: str = "adam-mixed",
                    weights: int | str | None = None, gradients: int | str | None = None,
                    state: int | str | None = None, batch: int | sp.Expr | None = None,
                    context: int | sp.Expr | None = None, recompute: str = "none",
                    activation_dtype: str = "bf16", symbolic: bool = False,
                    tensors: int | None = None,
                    partitioned: int | sp.Expr = 1) -> Memory:
    """Training memory: weights, gradients and optimizer state at stated bytes per parameter
    (``optimizer`` presets, or ``weights``/``gradients``/``state`` given as bytes or dtype
    names, ``state`` as its tensors' dtypes joined by ``+``: ``"fp32+fp32"`` for two fp32
    moments), plus activations for ``batch`` sequences of ``context`` tokens when a batch is
    given, under ``recompute``: a recomputation mode (none, selective, full), ``matmuls``
    (the outputs of each layer's weight matmuls kept: Q, K, V, the output projection, the
    MLP's in and out; the rest recomputed) or ``k_tensors_of_D`` (a text's ``tensors`` k
    tensors of D per layer and token). ``partitioned`` > 1 is ZeRO-R's partitioned
    activation checkpoints (Pa; Rajbhandari et al. 2020, section 6.1): the activations kept
    split over that many model-parallel ranks, each rank holding its share. This is the
    textbook account, the layers' activations only: a training plan on one chip
    (``plans.training.train``) counts every part alike and adds the activations outside the
    layers (the embedding's dropout mask, the head's inputs and its fp32 logits).

    >>> from symroof.models import model
    >>> training_memory(model("gpt2"), batch=8, context=1024, recompute="full",
    ...                 partitioned=4).parts["activations"] == 8 * 1024 * 768 * 2 * 12 // 4
    True
    >>> training_memory(model("llama-2-7b"), optimizer="adam-8bit").bytes_per_param
    6
    >>> training_memory(model("llama-2-7b"), weights="bf16", gradients=0,
    ...                 state="fp32+fp32").bytes_per_param
    10
    >>> m = training_memory(model("gpt2"), batch=1, context=1024, recompute="k_tensors_of_D",
    ...                     tensors=2)
    >>> m.parts["activations"] == 1024 * 2 * 768 * 12 * 2
    True
    """
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r} (known: {', '.join(OPTIMIZERS)})",
                         "optimizer")
    w0, g0, s0, why = OPTIMIZERS[optimizer]
    w, g, st = (_part_bytes(x, d, name) for x, d, name in
                ((weights, w0, "weights"), (gradients, g0, "gradients"), (state, s0, "state")))
    n = params(cfg, symbolic=symbolic).total
    parts = {"weights": w * n, "gradients": g * n, "optimizer state": st * n}
    notes = {"optimizer": why, "bytes per parameter": f"weights {w}, gradients {g}, "
             f"optimizer state {st}"}
    if (recompute == "k_tensors_of_D") != (tensors is not None):
        raise InputError("k_tensors_of_D goes with its k (tensors=) and only it", "tensors")
    if tensors is not None:
        count_of(tensors, "k", "tensors")
    if batch is not None:
        act = checkpointed_bytes(cfg, recompute, context=context, dtype=activation_dtype,
                                 symbolic=symbolic, tensors=tensors)
        ranks = count_of(partitioned, "P_a", "partitioned")
        parts["activations"] = sp.expand(count_of(batch, "B", "batch") * context_symbol(context)
                                         * act.total / ranks)
        notes["activations"] = f"{recomputation(recompute, tensors)}, {activation_dtype}" + (
            f", partitioned over {ranks} model-parallel ranks (ZeRO-R)" if ranks != 1 else "")
    return Memory({k: sp.expand(v) for k, v in parts.items()}, notes, w + g + st)


def _part_bytes(given: int | str | None, preset: int, name: str) -> sp.Expr:
    """Bytes per parameter of one part: the preset's, a number, a dtype name, or dtype
    names joined by ``+`` (one per tensor the part keeps)."""
    if given is None:
        return sp.Integer(preset)
    if isinstance(given, str):
        names = [t.strip() for t in given.split("+")]
        if not all(names):
            raise InputError(f"expected dtype names joined by '+', got {given!r}", name)
        return sum((dtype_bytes(t, where=name) for t in names), sp.S.Zero)
    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
        raise InputError(f"bytes per parameter must be a whole number >= 0 or a dtype name, "
                         f"got {given!r}", name)
    return sp.Integer(given)


def checkpointed_bytes(cfg: ModelConfig, policy: str = "none", *,
                       context: int | sp.Expr | None = None, dtype: str = "bf16",
                       symbolic: bool = False, tensors: int | None = None) -> Activations:
    """Activation bytes per token kept under a recomputation mode (``activation_bytes``) or
    a checkpoint policy: ``matmuls`` keeps the outputs of each layer's weight matmuls,
    a (N + 2 K) H + D + (2 F gated, F plain) + D bytes per token; ``k_tensors_of_D`` keeps
    ``tensors`` k tensors of D, a k D.

    >>> from symroof.models import model
    >>> checkpointed_bytes(model("llama-2-7b"), "matmuls").per_layer == 2 * (3 * 4096 + 4096
    ...                                                       + 2 * 11008 + 4096)
    True
    """
    if policy not in CHECKPOINTS:
        return activation_bytes(cfg, policy, context=context, dtype=dtype, symbolic=symbolic)
    if cfg.mla is not None:
        raise InputError(f"{cfg.name}: activations of latent attention (MLA) are not modelled")
    s = sizes_of(cfg, symbolic)
    a = dtype_bytes(dtype, where="activation dtype")
    if policy == "k_tensors_of_D":
        if tensors is None:
            raise InputError("k_tensors_of_D goes with its k (tensors=)", "tensors")
        k = count_of(tensors, "k", "tensors")

        def kept(width: sp.Expr) -> dict[str, sp.Expr]:
            return {f"{k} tensors of D": k * a * s["D"]}
    else:
        def kept(width: sp.Expr) -> dict[str, sp.Expr]:
            mlp_in = 2 * width if cfg.mlp == "gated" else width
            return {"Q, K and V projections": a * (s["N"] + 2 * s["K"]) * s["H"],
                    "output projection": a * s["D"], "MLP input projection": a * mlp_in,
                    "MLP output projection": a * s["D"]}
    moe_width = s["k"] * s["F_e"] + s["E_s"] * s["F_s"]
    dense = kept(s["F"]) if s["L_d"] != 0 else {}
    moe = kept(moe_width) if cfg.moe is not None and s["L"] - s["L_d"] != 0 else {}
    return Activations(policy, dense, moe, s["L_d"], s["L"] - s["L_d"])


# what a text may count of a serving memory, tried by a diagnosis: the weights alone (at the
# exact and the nominal size), the KV cache in one byte an element
SERVING_TRIES: tuple[dict[str, str], ...] = (
    {"memory": "weights"}, {"memory": "weights", "sizes": "nominal"}, {"kv_dtype": "fp8"},
    {"kv_dtype": "int8"})


@records(total=CAPACITY, tries=SERVING_TRIES)
def inference_memory(cfg: ModelConfig, *, batch: int | sp.Expr | None = None,
                     context: int | sp.Expr | None = None, dtype: str = "bf16",
                     kv_dtype: str | None = None, symbolic: bool = False,
                     tp: int = 1, choices: Choices = EXACT) -> Memory:
    """Serving memory: the weights in ``dtype`` plus the KV cache of ``batch`` sequences of
    ``context`` tokens (symbols B and T when omitted); with ``tp`` > 1, what one of ``tp``
    tensor-parallel chips holds (its ``shard``: norms and KV heads past their count
    replicated). Under ``choices`` with ``sizes="nominal"`` the weights are the round
    parameter count (``symroof.models.nominal``) at ``dtype`` bytes, split evenly over
    ``tp``, and the KV cache takes the text's KV bytes per token when it states them. With
    ``memory="weights"`` it counts the weights alone (the KV cache left out), and with a
    ``kv_dtype`` choice (``fp8``, ``int8``) the cache is in that dtype, as ``kv_dtype=``
    gives it.

    >>> from symroof.models import model
    >>> inference_memory(model("llama-2-7b"), batch=1, context=4096).total
    15624314880
    >>> m = inference_memory(model("llama-3-70b"), context=0, choices=Choices(sizes="nominal"))
    >>> m.total, m.assumptions["sizes"]
    (140000000000, 'nominal: 70B (the round size texts use; the card states 70.6B), exact KV bytes')
    >>> inference_memory(model("llama-2-7b"), batch=1, context=4096,
    ...                  choices=Choices(memory="weights")).parts
    {'weights': 13476831232}
    """
    if choices.memory not in ("all", "weights"):
        raise InputError(f"memory={choices.memory} counts a training memory; a serving memory "
                         "takes memory=all or memory=weights", "choices")
    kv = kv_dtype or rest_dtype(dtype)  # a weight scheme's cache: 16 bits
    if choices.kv_dtype != "as_given":
        kv = choices.kv_dtype
    B = count_of(batch, "B", "batch")
    notes = {"weights": dtype, "kv cache": kv}
    if choices.sizes == "nominal":
        weights = nominal_params(cfg) * dtype_bytes(dtype, where="dtype") / tp
        per_token = kv_bytes_under(cfg, kv, choices)
        if nominal_kv_bytes(cfg) is None and tp != 1:
            from .tensor_parallel import shard
            per_token = kv_bytes_per_token(shard(cfg, tp), kv)
        elif tp != 1:
            per_token = per_token / tp
        notes["sizes"] = f"nominal: {round_figures(cfg)}"
    else:
        if tp != 1:
            from .tensor_parallel import shard
            cfg = shard(cfg, tp)
        p = params(cfg, symbolic=symbolic)
        rest = p.embedding + p.norms  # a weight scheme leaves these in 16 bits
        weights = ((p.total - rest) * dtype_bytes(dtype, where="dtype")
                   + rest * dtype_bytes(rest_dtype(dtype)))
        per_token = kv_bytes_per_token(cfg, kv, symbolic=symbolic)
    cache = B * context_symbol(context) * per_token
    if choices.memory == "weights":  # a text's count of the weights alone
        notes["memory"] = "the weights alone (the KV cache not counted)"
        return Memory({"weights": sp.expand(weights)}, notes, dtype_bytes(dtype))
    return Memory({"weights": sp.expand(weights), "kv cache": sp.expand(cache)},
                  notes, dtype_bytes(dtype))


def zero3_weights(cfg: ModelConfig, devices: int | sp.Expr, *, live_layers: int = 2,
                  dtype: str = "bf16") -> Memory:
    """The weights a ZeRO-3 (FSDP) device holds at its peak: its 1/N shard of every weight,
    plus the live parameters, the ``live_layers`` layers it has gathered whole (the one it
    computes and the one it prefetches; DeepSpeed's ``stage3_max_live_parameters``), of
    which it owned 1/N already.

    >>> from symroof.models import model
    >>> m = zero3_weights(model("gpt2"), 4, live_layers=1)
    >>> m.parts["live parameters"] == 7087872 * 2 * 3 // 4   # a layer: 12 D^2 + 13 D
    True
    """
    n = count_of(devices, "N", "devices")
    live = count_of(live_layers, "", "live_layers")
    if n.is_number and live.is_number and live > cfg.layers:
        raise InputError(f"{live} live layers, but {cfg.name} has {cfg.layers}", "live_layers")
    from dataclasses import replace
    p = params(cfg).total
    layer = params(replace(cfg, layers=cfg.layers + 1)).total - p  # one (the last kind of) layer
    w = dtype_bytes(dtype, where="dtype")
    return Memory({"weight shard": sp.expand(p * w / n),
                   "live parameters": sp.expand(live * layer * w * (n - 1) / n)},
                  {"weights": f"{dtype}, sharded over {n} devices (ZeRO-3)",
                   "live parameters": f"{live} layers of {layer} parameters gathered whole"},
                  w)


def recomputation(mode: str, tensors: int | None = None) -> str:
    """The recomputation mode or checkpoint policy as the assumptions say it.

    >>> recomputation("none"), recomputation("full"), recomputation("k_tensors_of_D", 2)
    ('no recomputation', 'full recomputation', 'checkpoints of 2 tensors of D per layer')
    >>> recomputation("k_tensors_of_D=2")
    'checkpoints of 2 tensors of D per layer, the forward rerun in full'
    """
    if "=" in mode:
        mode, tensors = checkpoint_policy(mode)
        return f"{recomputation(mode, tensors)}, the forward rerun in full"
    if mode == "matmuls":
        return "checkpoints after the weight matmuls (their outputs kept, the rest recomputed)"
    if mode == "k_tensors_of_D":
        return f"checkpoints of {tensors} tensors of D per layer"
    return "no recomputation" if mode == "none" else f"{mode} recomputation"
