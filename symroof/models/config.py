"""A transformer's configuration: the sizes and the structure that its costs follow from.

>>> cfg = ModelConfig("tiny", layers=2, d_model=64, d_ff=256, heads=4, kv_heads=2,
...                   head_dim=16, vocab=1000)
>>> cfg.dims()["K"], cfg.letters()["K"]
(2, K)
>>> cfg.gqa_group
2

Sizes have letters, as "How To Scale Your Model" writes them: L layers, D d_model, F d_ff,
N query heads, K key/value heads, H head dim, V vocabulary, P learned positions; for a
mixture of experts E routed experts of width F_e each, k of them per token, E_s shared
experts of width F_s, and L_d dense layers (the rest, L - L_d, are MoE layers); for latent
attention (DeepSeek's MLA) C the key/value latent rank, R the shared rotary key width, Q the
query latent rank (0: none) and H_v the value head dim, H being the query/key head dim. The counts
in ``symroof.models.counts`` are written once over these letters: ``dims()`` gives the
config's integers, ``letters()`` positive symbols, and the same code yields both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import InputError

NORMS = ("rmsnorm", "layernorm")
MLPS = ("gated", "plain")
POSITIONS = ("rope", "learned", "none")
LETTERS = ("L", "D", "F", "N", "K", "H", "V", "P", "E", "k", "F_e", "E_s", "F_s", "L_d",
           "C", "R", "Q", "H_v")


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts layers: ``experts`` routed experts of width ``d_ff`` (F_e), ``top_k``
    of them per token; ``shared`` experts of width ``shared_d_ff`` (F_s) every token uses,
    run as one MLP of width E_s F_s, optionally behind a sigmoid gate (one D-vector); the
    first ``dense_layers`` layers (L_d) keep a dense MLP of width F instead."""

    experts: int
    top_k: int
    d_ff: int
    shared: int = 0
    shared_d_ff: int = 0
    shared_gate: bool = False
    dense_layers: int = 0

    def __post_init__(self) -> None:
        for name in ("experts", "top_k", "d_ff"):
            _positive(getattr(self, name), f"moe.{name}")
        for name in ("shared", "shared_d_ff", "dense_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InputError(f"must be a whole number >= 0, got {value!r}", f"moe.{name}")
        if self.top_k > self.experts:
            raise InputError(f"top_k {self.top_k} exceeds the {self.experts} experts", "moe")
        if self.shared and not self.shared_d_ff:
            raise InputError("shared experts need a width", "moe.shared_d_ff")
        if self.shared_gate and not self.shared:
            raise InputError("a shared-expert gate needs shared experts", "moe.shared_gate")


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2): keys and values come from a per-token
    latent of ``kv_rank`` (C) plus a rotary key of ``rope_dim`` (R) shared by the heads;
    each head's query/key is ``nope_dim + rope_dim`` wide and its value ``v_dim`` (H_v);
    queries go through a latent of ``q_rank`` (Q) when it is nonzero."""

    kv_rank: int
    rope_dim: int
    nope_dim: int
    v_dim: int
    q_rank: int = 0

    def __post_init__(self) -> None:
        for name in ("kv_rank", "rope_dim", "nope_dim", "v_dim"):
            _positive(getattr(self, name), f"mla.{name}")
        if not isinstance(self.q_rank, int) or isinstance(self.q_rank, bool) or self.q_rank < 0:
            raise InputError(f"must be a whole number >= 0, got {self.q_rank!r}", "mla.q_rank")


@dataclass(frozen=True, repr=False)
class ModelConfig(tb.RichView):
    """A decoder-only transformer. ``mlp`` is ``gated`` (SwiGLU: gate, up, down) or ``plain``
    (up, down); ``norm`` is ``rmsnorm`` (a weight) or ``layernorm`` (a weight and a bias);
    ``qkv_bias``, ``out_bias`` and ``mlp_bias`` say which projections carry biases;
    ``positions`` is ``rope``, ``learned`` (``max_positions`` rows, P) or ``none``;
    ``dropout`` says whether training applies dropout (its masks are activations too);
    ``context_length`` is the longest context the model was configured for (0: unknown)."""

    name: str
    layers: int
    d_model: int
    d_ff: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    mlp: str = "gated"
    tied_embeddings: bool = False
    norm: str = "rmsnorm"
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    positions: str = "rope"
    max_positions: int = 0
    moe: MoE | None = None
    sliding_window: int | None = None
    dropout: bool = False
    context_length: int = 0
    mla: MLA | None = None
    source: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [
            (k, sp.Integer(getattr(self, k))) for k in
            ("layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab")]
        rows += [("mlp", self.mlp), ("norm", self.norm), ("positions", self.positions),
                 ("tied embeddings", "yes" if self.tied_embeddings else "no")]
        if self.moe is not None:
            rows.append(("mixture of experts", str(self.moe).split("(", 1)[-1].rstrip(")")))
        rows += [(f"source ({k})", v) for k, v in sorted(self.source.items())]
        return f"model {self.name}", tb.key_values(rows)

    def __post_init__(self) -> None:
        where = self.name
        for name in ("layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab"):
            _positive(getattr(self, name), f"{where}: {name}")
        if self.heads % self.kv_heads:
            raise InputError(f"heads {self.heads} is not a multiple of kv_heads "
                             f"{self.kv_heads}", where)
        for value, allowed, what in ((self.mlp, MLPS, "mlp"), (self.norm, NORMS, "norm"),
                                     (self.positions, POSITIONS, "positions")):
            if value not in allowed:
                raise InputError(f"{what} must be one of {', '.join(allowed)}, got {value!r}",
                                 where)
        if self.positions == "learned":
            _positive(self.max_positions, f"{where}: max_positions")
        if self.sliding_window is not None:  # None is no window; 0 is no width a window has
            _positive(self.sliding_window, f"{where}: sliding_window")
        if not isinstance(self.aliases, tuple) or not all(isinstance(a, str)
                                                          for a in self.aliases):
            raise InputError(f"aliases must be a tuple of names, got {self.aliases!r:.60}",
                             f"{where}: aliases")
        if self.mla is not None and self.head_dim != self.mla.nope_dim + self.mla.rope_dim:
            raise InputError("head_dim must be mla.nope_dim + mla.rope_dim", where)
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise InputError(f"{self.moe.dense_layers} dense layers exceed the "
                             f"{self.layers} layers", f"{where}: moe.dense_layers")

    @property
    def gqa_group(self) -> int:
        """Query heads per key/value head (N / K)."""
        return self.heads // self.kv_heads

    def dims(self) -> dict[str, sp.Expr]:
        """The config's sizes by letter, as SymPy integers (absent features are 0)."""
        moe = self.moe
        values = {
            "L": self.layers, "D": self.d_model, "F": self.d_ff, "N": self.heads,
            "K": self.kv_heads, "H": self.head_dim, "V": self.vocab,
            "P": self.max_positions if self.positions == "learned" else 0,
            "E": moe.experts if moe else 0, "k": moe.top_k if moe else 0,
            "F_e": moe.d_ff if moe else 0, "E_s": moe.shared if moe else 0,
            "F_s": moe.shared_d_ff if moe else 0,
            "L_d": moe.dense_layers if moe else self.layers,
            "C": self.mla.kv_rank if self.mla else 0, "R": self.mla.rope_dim if self.mla else 0,
            "Q": self.mla.q_rank if self.mla else 0, "H_v": self.mla.v_dim if self.mla else 0,
        }
        return {k: sp.Integer(v) for k, v in values.items()}

    def letters(self) -> dict[str, sp.Expr]:
        """The same sizes as positive symbols; a feature the config lacks stays 0, and a
        model without MoE layers has L_d = L (every layer dense)."""
        numbers = self.dims()
        out: dict[str, sp.Expr] = {}
        for name in LETTERS:
            out[name] = sp.Symbol(name, positive=True) if numbers[name] != 0 else sp.S.Zero
        if self.moe is None:
            out["L_d"] = out["L"]
        return out

    def values(self) -> dict[sp.Symbol, sp.Expr]:
        """Symbol -> integer, to evaluate a symbolic count at this config."""
        numbers = self.dims()
        return {s: numbers[n] for n, s in self.letters().items() if isinstance(s, sp.Symbol)}

    def sizes(self, symbolic: bool = False) -> dict[str, sp.Expr]:
        """``letters()`` when ``symbolic``, else ``dims()``."""
        return self.letters() if symbolic else self.dims()


def _positive(value: object, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"must be a positive whole number, got {value!r}", where)
