"""Exact counts of a transformer: parameters, FLOPs per token, KV-cache bytes.

>>> from symroof.models import model
>>> p = params(model("llama-2-7b"))
>>> p.total, p.embedding
(6738415616, 262144000)
>>> params(model("llama-2-7b"), symbolic=True).total
3*D*F*L + 2*D*H*K*L + 2*D*H*L*N + 2*D*L + 2*D*V + D

The symbolic forms are over the config's letters (``ModelConfig.letters``, with N H = D
written out only when the config says so). Conventions, stated once:

- FLOPs per token forward are 2 per parameter a token multiplies (a multiply and an add;
  norm weights and biases counted alike, as the 2N rule does), the output head included and
  the input embedding and learned positions excluded (they are looked up), plus the
  attention term 4 N H T per layer (scores Q K^T and values A V, each 2 N H T at context
  T). Softmax, activation functions, residual adds and norm statistics are not counted.
- Training is forward plus backward, the backward twice the forward (3x); selective
  recomputation reruns the attention core once more, full recomputation the whole forward.
- KV-cache bytes per token: a key and a value vector per KV head per layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.choices import Choices
from ..core.errors import InputError, expect
from ..core.parse import exact, symbol
from ..core.quant import check_scheme
from ..core.sizes import dtype_bytes
from ..core.units import CAPACITY, COUNT, records
from .config import ModelConfig

RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class Params:
    """Parameter counts by part (whole model); ``total``, ``active`` (per token, with only
    top-k routed experts), ``embedding`` (vocabulary matrices and learned positions) and
    ``non_embedding``."""

    embedding: sp.Expr
    attention: sp.Expr
    mlp: sp.Expr
    experts: sp.Expr
    shared_experts: sp.Expr
    router: sp.Expr
    norms: sp.Expr
    inactive: sp.Expr

    @property
    def total(self) -> sp.Expr:
        return sp.expand(self.embedding + self.attention + self.mlp + self.experts
                         + self.shared_experts + self.router + self.norms)

    @property
    def active(self) -> sp.Expr:
        return sp.expand(self.total - self.inactive)

    @property
    def non_embedding(self) -> sp.Expr:
        return sp.expand(self.total - self.embedding)

    def parts(self) -> dict[str, sp.Expr]:
        """The nonzero parts by name, in the order a table shows them."""
        named = {"embedding": self.embedding, "attention": self.attention, "mlp": self.mlp,
                 "routed experts": self.experts, "shared experts": self.shared_experts,
                 "router": self.router, "norms": self.norms}
        return {k: v for k, v in named.items() if v != 0}


def sizes_of(cfg: ModelConfig, symbolic: bool) -> dict[str, sp.Expr]:
    """The letters' values: symbols when ``symbolic``, else the config's integers."""
    return cfg.sizes(symbolic)


def attention_params(cfg: ModelConfig, s: Mapping[str, sp.Expr]) -> sp.Expr:
    """One layer's attention: Q (D x N H), K and V (D x K H each), output (N H x D), biases.
    Latent attention: Q (D x N H, or D x Q, its norm, Q x N H), the latent and rotary key
    (D x (C + R)), the latent's norm (C), K and V from the latent (C x N (H - R + H_v)), the
    output (N H_v x D)."""
    D, N, H = s["D"], s["N"], s["H"]
    if cfg.mla is not None:
        C, R, Q, Hv = s["C"], s["R"], s["Q"], s["H_v"]
        query = D * Q + Q + Q * N * H if cfg.mla.q_rank else D * N * H
        return query + D * (C + R) + C + C * N * (H - R + Hv) + N * Hv * D
    w = op_weights(cfg, s)
    return w["qkv"] + w["output"]


def mlp_parts(cfg: ModelConfig, s: Mapping[str, sp.Expr],
              width: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """An MLP of ``width``, its first matmul and its down projection: gated has gate and up
    (D x 2W), plain up (D x W); down is W x D; biases when the config has them."""
    D = s["D"]
    wide = (2 if cfg.mlp == "gated" else 1) * width
    return D * wide + (wide if cfg.mlp_bias else 0), width * D + (D if cfg.mlp_bias else 0)


def mlp_params(cfg: ModelConfig, s: Mapping[str, sp.Expr], width: sp.Expr) -> sp.Expr:
    """An MLP of ``width``: gated has gate, up (D x W) and down (W x D); plain has up, down."""
    return sp.Add(*mlp_parts(cfg, s, width))


def op_weights(cfg: ModelConfig, s: Mapping[str, sp.Expr]) -> dict[str, sp.Expr]:
    """The parameters each weight op of ``layer_ops`` holds, by its name: per layer for a
    layer's ops (the routed experts' all E of them), once for the final norm and the output
    head. The one parameter count: ``params`` sums these.

    >>> from symroof.models import model
    >>> w = op_weights(model("llama-2-7b"), model("llama-2-7b").sizes(False))
    >>> w["qkv"], w["down"], w["MLP norm"]
    (50331648, 45088768, 4096)
    """
    D, N, K, H, V = s["D"], s["N"], s["K"], s["H"], s["V"]
    norm = norm_params(cfg, s)
    first, down = mlp_parts(cfg, s, s["F"])
    up = "gate/up" if cfg.mlp == "gated" else "up"
    out = {"attention norm": norm, "MLP norm": norm, "final norm": norm,
           "qkv": D * (N + 2 * K) * H + ((N + 2 * K) * H if cfg.qkv_bias else 0),
           "output": N * H * D + (D if cfg.out_bias else 0),
           up: first, "down": down, "output head": V * D}
    if cfg.mla is not None:  # latent attention's ops (``layer_ops``); decode absorbs kv up
        C, R, Q, Hv = s["C"], s["R"], s["Q"], s["H_v"]
        del out["qkv"]
        out.update({"kv down": D * (C + R), "kv norm": C,
                    "kv up": C * N * (H - R + Hv), "q absorb": N * (H - R) * C,
                    "v absorb": N * C * Hv, "output": N * Hv * D})
        out.update({"q down": D * Q, "q norm": Q, "q up": Q * N * H} if cfg.mla.q_rank
                   else {"q": D * N * H})
    moe = cfg.moe
    if moe is not None:
        e_first, e_down = mlp_parts(cfg, s, s["F_e"])
        out.update({"router": D * s["E"], f"experts {up}": s["E"] * e_first,
                    "experts down": s["E"] * e_down})
        if moe.shared:
            s_first, s_down = mlp_parts(cfg, s, s["E_s"] * s["F_s"])
            out.update({f"shared {up}": s_first + (D if moe.shared_gate else 0),
                        "shared down": s_down})
    return out


def norm_params(cfg: ModelConfig, s: Mapping[str, sp.Expr]) -> sp.Expr:
    """One norm: a weight of D (RMSNorm), plus a bias of D (LayerNorm)."""
    return s["D"] * (2 if cfg.norm == "layernorm" else 1)


@dataclass(frozen=True)
class Counts:
    """The parameter counts a text reads (:func:`params` under ``sizes=nominal``)."""

    total: sp.Expr
    active: sp.Expr
    non_embedding: sp.Expr


def _params_under(choices: Any, cfg: ModelConfig, *, symbolic: bool = False) -> Any:
    """:func:`params` as ``choices`` take it: at ``sizes=nominal`` the total and active
    counts the model is published as ("7B": 7e9), what a text simplifies them to (the
    count without embeddings has no published figure: it stays exact).

    >>> from symroof.core.choices import Choices
    >>> from symroof.models import model
    >>> _params_under(Choices(sizes="nominal"), model("llama-2-7b")).total
    7000000000
    """
    from .nominal import nominal_params  # (nominal sizes build on these counts)
    exact_ = params(cfg, symbolic=symbolic)
    if choices.sizes != "nominal" or symbolic:
        return exact_
    return Counts(nominal_params(cfg), nominal_params(cfg, active=cfg.moe is not None),
                  exact_.non_embedding)


@records(total=COUNT, active=COUNT, non_embedding=COUNT, again=_params_under)
def params(cfg: ModelConfig, *, symbolic: bool = False) -> Params:
    """Exact parameter counts of ``cfg`` (integers, or expressions in its letters)."""
    expect(cfg, ModelConfig, "a ModelConfig (model('llama-2-7b'))", "params")
    s = sizes_of(cfg, symbolic)
    L, D, V, P, E, k = s["L"], s["D"], s["V"], s["P"], s["E"], s["k"]
    moe_layers = L - s["L_d"]
    embedding = V * D + P * D + (0 if cfg.tied_embeddings else V * D)
    expert = mlp_params(cfg, s, s["F_e"]) if cfg.moe else sp.S.Zero
    # shared experts run as one MLP of width E_s F_s (as DeepSeek's and Qwen's code build them)
    shared = (mlp_params(cfg, s, s["E_s"] * s["F_s"]) if cfg.moe and cfg.moe.shared else 0) \
        + (D if cfg.moe and cfg.moe.shared_gate else 0)
    return Params(
        embedding=sp.expand(embedding),
        attention=sp.expand(L * attention_params(cfg, s)),
        mlp=sp.expand(s["L_d"] * mlp_params(cfg, s, s["F"])),
        experts=sp.expand(moe_layers * E * expert),
        shared_experts=sp.expand(moe_layers * shared),
        router=sp.expand(moe_layers * D * E),
        norms=sp.expand((2 * L + 1) * norm_params(cfg, s)),
        inactive=sp.expand(moe_layers * (E - k) * expert))


def multiplied_params(cfg: ModelConfig, *, symbolic: bool = False) -> sp.Expr:
    """Parameters a token multiplies: the active ones less the input embedding and learned
    positions (looked up), the output head included (for tied embeddings the head is the
    embedding matrix used a second time)."""
    s = sizes_of(cfg, symbolic)
    p = params(cfg, symbolic=symbolic)
    return sp.expand(p.active - p.embedding + s["V"] * s["D"])


def count_of(value: object, letter: str, where: str, *, least: int = 1) -> sp.Expr:
    """A count a model's formulas take (a context, a batch): the symbol ``letter`` when
    ``value`` is None, else a whole number from ``least`` on or a SymPy size (``T``).

    >>> count_of(None, "T", "context"), count_of(1024, "T", "context")
    (T, 1024)
    >>> count_of(-1, "B", "batch")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: batch: must be a positive whole number, got -1
    """
    if value is None:
        return symbol(letter)
    least_text = "a positive whole number" if least == 1 else f"a whole number >= {least}"
    if isinstance(value, str | bool | float):
        raise InputError(f"must be {least_text} or a SymPy size, got {value!r:.60}", where)
    out = exact(value, where)
    if out.is_number and not (out.is_Integer and out >= least):
        raise InputError(f"must be {least_text}, got {value}", where)
    if not out.is_number and (out.is_extended_real is False or out.is_negative
                              or (least and out.is_nonpositive)):
        raise InputError(f"must be {least_text}, got {value}", where)
    return out


def context_symbol(context: int | sp.Expr | None) -> sp.Expr:
    """``T`` when no context is given, else the given value as SymPy (a whole number >= 0,
    or a SymPy size)."""
    return count_of(context, "T", "context", least=0)


@dataclass(frozen=True)
class Flops:
    """FLOPs per token: ``weights`` (2 per multiplied parameter), ``attention`` (scores and
    values at the context), and their sum ``total``."""

    weights: sp.Expr
    attention: sp.Expr

    @property
    def total(self) -> sp.Expr:
        return sp.expand(self.weights + self.attention)


def attention_flops(cfg: ModelConfig, context: int | sp.Expr | None = None, *,
                    symbolic: bool = False) -> sp.Expr:
    """Scores and values of one token over ``context`` positions, all layers: 4 L N H T
    (2 L N (H + H_v) T for latent attention, its keys and values decompressed)."""
    s = sizes_of(cfg, symbolic)
    value = s["H_v"] if cfg.mla is not None else s["H"]
    return sp.expand(2 * s["L"] * s["N"] * (s["H"] + value) * context_symbol(context))


def forward_flops(cfg: ModelConfig, context: int | sp.Expr | None = None, *,
                  symbolic: bool = False) -> Flops:
    """Forward FLOPs per token at ``context`` (symbol T when omitted), split in two."""
    return Flops(2 * multiplied_params(cfg, symbolic=symbolic),
                 attention_flops(cfg, context, symbolic=symbolic))


def flops_per_token(cfg: ModelConfig, context: int | sp.Expr | None = None, *,
                    symbolic: bool = False) -> sp.Expr:
    """Forward FLOPs per token at ``context``.

    >>> from symroof.models import model
    >>> flops_per_token(model("llama-2-7b"), context=1024)
    13751558144
    """
    return forward_flops(cfg, context, symbolic=symbolic).total


def training_flops_per_token(cfg: ModelConfig, context: int | sp.Expr | None = None, *,
                             recompute: str = "none", symbolic: bool = False) -> sp.Expr:
    """Forward and backward FLOPs per token: 3x forward, plus the attention core again
    under ``selective`` recomputation, plus a whole forward again under ``full``.

    >>> from symroof.models import model
    >>> training_flops_per_token(model("gpt2"), 1024) == 3 * flops_per_token(model("gpt2"), 1024)
    True
    """
    if recompute not in RECOMPUTE:
        raise InputError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    f = forward_flops(cfg, context, symbolic=symbolic)
    extra = {"none": 0, "selective": f.attention, "full": f.total}[recompute]
    return sp.expand(3 * f.total + extra)


def _kv_under(choices: Any, cfg: ModelConfig, dtype: str = "bf16", *,
              symbolic: bool = False) -> sp.Expr:
    """:func:`kv_bytes_per_token` as ``choices`` take it: at ``sizes=nominal`` the KV bytes
    a text states for the model (``with_round_params``), where it states them; with a
    ``kv_dtype`` choice, in that dtype.

    >>> from symroof.core.choices import Choices
    >>> from symroof.models import model, with_round_params
    >>> cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
    >>> _kv_under(Choices(sizes="nominal"), cfg), _kv_under(Choices(), cfg)
    (320000, 327680)
    """
    from .nominal import kv_bytes_under  # (nominal sizes build on these counts)
    if choices.kv_dtype != "as_given":  # the cache in the dtype a text takes
        dtype = choices.kv_dtype
    if symbolic:
        return kv_bytes_per_token(cfg, dtype, symbolic=True)
    return kv_bytes_under(cfg, dtype, choices)


# the KV cache's dtypes a diagnosis tries on a plain value
KV_TRIES: tuple[dict[str, str], ...] = ({"kv_dtype": "fp8"}, {"kv_dtype": "int8"})


@records(CAPACITY, again=_kv_under, tries=KV_TRIES)
def kv_bytes_per_token(cfg: ModelConfig, dtype: str = "bf16", *,
                       symbolic: bool = False) -> sp.Expr:
    """KV-cache bytes per token: 2 (a key and a value) x L x K x H x bytes per element;
    for latent attention the latent and the rotary key, L (C + R) elements (DeepSeek-V2,
    section 2.1.2: (d_c + d_h^R) l).

    >>> from symroof.models import model
    >>> kv_bytes_per_token(model("llama-2-7b")), kv_bytes_per_token(model("llama-3-8b"), "int8")
    (524288, 65536)
    """
    s = sizes_of(cfg, symbolic)
    b = dtype_bytes(dtype, where="kv_dtype")
    check_scheme(dtype, "kv", head_dim=None if cfg.mla is not None else s["H"],
                 where="kv_dtype")
    if cfg.mla is not None:
        return sp.expand(s["L"] * (s["C"] + s["R"]) * b)
    return sp.expand(2 * s["L"] * s["K"] * s["H"] * b)


def _kv_sequence_under(choices: Any, cfg: ModelConfig, context: int | sp.Expr | None = None,
                       dtype: str = "bf16", *, symbolic: bool = False) -> sp.Expr:
    """:func:`kv_bytes_per_sequence` as ``choices`` take it: at ``sizes=nominal`` the KV
    bytes per token a text states for the model (``with_round_params``), where it states
    them, times the context; with a ``kv_dtype`` choice, in that dtype.

    >>> from symroof.core.choices import Choices
    >>> from symroof.models import model, with_round_params
    >>> cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
    >>> _kv_sequence_under(Choices(sizes="nominal"), cfg, 4096)
    1310720000
    """
    return sp.expand(_kv_under(choices, cfg, dtype, symbolic=symbolic)
                     * context_symbol(context))


@records(CAPACITY, again=_kv_sequence_under, tries=KV_TRIES)
def kv_bytes_per_sequence(cfg: ModelConfig, context: int | sp.Expr | None = None,
                          dtype: str = "bf16", *, symbolic: bool = False) -> sp.Expr:
    """KV-cache bytes of one sequence of ``context`` tokens."""
    return sp.expand(kv_bytes_per_token(cfg, dtype, symbolic=symbolic) * context_symbol(context))


@dataclass(frozen=True)
class Summary:
    """A model's counts as ``symroof model NAME`` shows them: parameters, FLOPs per token
    (forward and training), KV bytes per token, at a context and dtypes, and the counts in
    the config's letters when asked (``commands.model.model_summary`` derives it)."""

    cfg: ModelConfig
    params: Params
    flops: sp.Expr
    training_flops: sp.Expr
    kv_bytes: sp.Expr
    context: sp.Expr | None
    dtype: str
    kv_dtype: str
    symbolic: Mapping[str, sp.Expr] | None = None
    chosen: Mapping[str, sp.Expr] | None = None  # the counts under a text's ``choices``
    choices: Choices | None = None
