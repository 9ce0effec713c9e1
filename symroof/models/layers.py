"""The ops of one transformer layer, for prefill and for decode, as einsums with dtypes.

>>> from symroof.models import model
>>> step = layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024)
>>> [o.name for o in step.blocks[0].ops]
['attention norm', 'qkv', 'scores', 'values', 'output', 'MLP norm', 'gate/up', 'down']
>>> step.blocks[0].count, step.total().flops
(32, 13751558144)

A step is blocks of ops, each block run ``count`` times: the decoder layer (for a MoE model
with leading dense layers, a dense and a MoE layer), then once per step the embedding
lookup, the final norm and the output head. One layer's ops are built once and scaled by
the layer count, so an 80-layer model costs no more to derive than a 1-layer one.

Decode processes ``batch`` new tokens, each attending over ``context`` positions (the KV
cache read in full); prefill processes ``batch`` sequences of ``context`` tokens, scoring
the full T x T matrix (a dense kernel; a causal kernel skips about half) and the output
head over every token. FLOPs follow the conventions of ``symroof.models.counts`` (norm
weights and biases at 2 per element, softmax and activations not counted), so a step's
FLOPs are its tokens times ``flops_per_token``. Scores are written to and read from memory
(an unfused kernel); a fused attention kernel would drop that traffic.
A routed-expert op reads the weights of the experts its tokens touch: under uniform routing
of M tokens, each to k of E experts, E (1 - (1 - k/E)^M) of them on average
(``experts_touched``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact, symbol
from ..core.sizes import dtype_bytes
from ..engine.ops import Op, einsum, op, sequence
from .config import ModelConfig
from .counts import norm_params, sizes_of

PHASES = ("decode", "prefill")


@dataclass(frozen=True)
class Block:
    """Ops run one after another, the whole block ``count`` times per step."""

    name: str
    ops: tuple[Op, ...]
    count: sp.Expr


@dataclass(frozen=True)
class StepOps:
    """One forward step: ``tokens`` processed (B for decode, B T for prefill)."""

    phase: str
    batch: sp.Expr
    context: sp.Expr
    tokens: sp.Expr
    blocks: tuple[Block, ...]
    dtype: str = "bf16"

    def total(self) -> Op:
        """The whole step as one op: every cost of every block, times its count, charged
        at the matrix unit in the compute dtype."""
        ops = sequence(*(o.repeat(b.count) for b in self.blocks for o in b.ops),
                       name=f"{self.phase} step")
        return replace(ops, compute="mxu", dtype=self.dtype)

    def rows(self) -> list[tuple[Block, Op]]:
        """(block, op) for every op, in order."""
        return [(b, o) for b in self.blocks for o in b.ops]


def _size(value: int | sp.Expr | None, name: str, label: str) -> sp.Expr:
    if value is None:
        return symbol(name)
    out = exact(value)
    if out.is_number and not (out.is_integer and out > 0):
        raise InputError(f"must be a positive whole number, got {value}", label)
    return out


def _with_bias(o: Op, tokens: sp.Expr, elements: sp.Expr, w: sp.Expr) -> Op:
    """A projection plus its bias: 2 FLOPs per bias element per token, the bias read once."""
    if elements == 0:
        return o
    reads = dict(o.reads)
    reads["hbm"] = reads.get("hbm", sp.S.Zero) + elements * w
    return replace(o, flops=o.flops + 2 * tokens * elements, reads=reads)


def _matmul(name: str, M: sp.Expr, inner: sp.Expr, outer: sp.Expr, a: str, w: str) -> Op:
    return einsum("M I, I O -> M O", [a, w], out=a, name=name,
                  dims={"M": M, "I": inner, "O": outer})


def _norm(name: str, cfg: ModelConfig, s: Mapping[str, sp.Expr], M: sp.Expr, a: str, w: str) -> Op:
    n = norm_params(cfg, s)
    return op(name, 2 * M * n, M * s["D"] * dtype_bytes(a) + n * dtype_bytes(w),
              writes=M * s["D"] * dtype_bytes(a), dtype=a, compute="vpu")


def _mlp(prefix: str, cfg: ModelConfig, s: Mapping[str, sp.Expr], M: sp.Expr, width: sp.Expr,
         a: str, w: str) -> list[Op]:
    D, wb = s["D"], dtype_bytes(w)
    if cfg.mlp == "gated":
        first = _matmul(f"{prefix}gate/up", M, D, 2 * width, a, w)
        first = _with_bias(first, M, 2 * width if cfg.mlp_bias else 0, wb)
    else:
        first = _matmul(f"{prefix}up", M, D, width, a, w)
        first = _with_bias(first, M, width if cfg.mlp_bias else 0, wb)
    down = _with_bias(_matmul(f"{prefix}down", M, width, D, a, w), M,
                      D if cfg.mlp_bias else 0, wb)
    return [first, down]


def _experts(cfg: ModelConfig, s: Mapping[str, sp.Expr], M: sp.Expr, a: str, w: str,
             split: int = 1) -> list[Op]:
    """Routed experts: M k token-expert pairs through the weights of the touched experts.
    Split over ``split`` devices (expert parallelism), each holds E / split experts and takes
    the pairs routed to them from the M ``split`` tokens of its group: M k on average, and
    the experts of its share those tokens touch."""
    D, E, k, Fe = s["D"], s["E"], s["k"], s["F_e"]
    ab, wb = dtype_bytes(a), dtype_bytes(w)
    touched = experts_touched(E, k, M * split) / split
    pairs = M * k
    wide = (2 if cfg.mlp == "gated" else 1) * Fe
    up_params = D * wide + (wide if cfg.mlp_bias else 0)
    down_params = Fe * D + (D if cfg.mlp_bias else 0)
    up = op("experts gate/up" if cfg.mlp == "gated" else "experts up",
            2 * pairs * up_params, pairs * D * ab + touched * up_params * wb,
            writes=pairs * wide * ab, dtype=a)
    down = op("experts down", 2 * pairs * down_params, pairs * Fe * ab + touched * down_params
              * wb, writes=pairs * D * ab, dtype=a)
    return [up, down]


class Touched(sp.Function):
    """Distinct experts M tokens reach, each routed uniformly to k of E: on average
    E (1 - (1 - k/E)^M), evaluated once M is a number; taken as E once M k / E > 64,
    where the two differ by less than E e^-64 (and the exact power would have thousands of
    digits). ``spelled`` writes it out for algebra on the symbolic form.

    >>> Touched(8, 2, 1), Touched(8, 2, 2), Touched(8, 2, 10**6)
    (2, 7/2, 8)
    """

    @classmethod
    def eval(cls, E: sp.Expr, k: sp.Expr, M: sp.Expr) -> sp.Expr | None:
        if M.is_number and E.is_number and k.is_number:
            return E if M * k > 64 * E else E * (1 - (1 - k / E) ** M)
        return None


def spelled(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each ``Touched`` written out as E (1 - (1 - k/E)^M)."""
    return expr.replace(Touched, lambda E, k, M: E * (1 - (1 - k / E) ** M))


def experts_touched(E: sp.Expr, k: sp.Expr, M: sp.Expr) -> sp.Expr:
    """Distinct experts M tokens reach (``Touched``); in the config's letters, written out."""
    if E.is_number and k.is_number:
        return Touched(E, k, M)
    return E * (1 - (1 - k / E) ** M)


def _attention(s: Mapping[str, sp.Expr], phase: str, B: sp.Expr, T: sp.Expr, a: str,
               kv: str) -> list[Op]:
    dims = {"B": B, "T": T, "S": T, "K": s["K"], "G": s["N"] / s["K"], "H": s["H"]}
    if phase == "decode":
        scores = einsum("B K G H, B T K H -> B K G T", [a, kv], out=a, name="scores",
                        dims=dims)
        values = einsum("B K G T, B T K H -> B K G H", [a, kv], out=a, name="values",
                        dims=dims)
    else:
        scores = einsum("B S K G H, B T K H -> B K G S T", [a, kv], out=a, name="scores",
                        dims=dims)
        values = einsum("B K G S T, B T K H -> B S K G H", [a, kv], out=a, name="values",
                        dims=dims)
    return [scores, values]


def layer_ops(cfg: ModelConfig, phase: str = "decode", *, batch: int | sp.Expr | None = None,
              context: int | sp.Expr | None = None, dtype: str = "bf16",
              kv_dtype: str | None = None, activation_dtype: str = "bf16",
              symbolic: bool = False, expert_split: int = 1) -> StepOps:
    """The ops of one step of ``phase`` (``decode`` or ``prefill``) at ``batch`` (symbol B
    when omitted) and ``context`` (symbol T), weights in ``dtype``, the KV cache in
    ``kv_dtype`` (default: ``dtype``), activations in ``activation_dtype``; the routed
    experts split over ``expert_split`` devices."""
    if phase not in PHASES:
        raise InputError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    if cfg.mla is not None:
        raise InputError(f"{cfg.name}: the layer ops of latent attention (MLA) are not "
                         "modelled; its counts are (params, FLOPs and KV bytes per token)")
    s = sizes_of(cfg, symbolic)
    B, T = _size(batch, "B", "batch"), _size(context, "T", "context")
    M = B if phase == "decode" else B * T
    a, w, kv = activation_dtype, dtype, kv_dtype or dtype
    wb = dtype_bytes(w, where="--dtype")
    dtype_bytes(kv, where="--kv-dtype")
    D, N, K, H = s["D"], s["N"], s["K"], s["H"]
    qkv = _with_bias(_matmul("qkv", M, D, (N + 2 * K) * H, a, w), M,
                     (N + 2 * K) * H if cfg.qkv_bias else 0, wb)
    out = _with_bias(_matmul("output", M, N * H, D, a, w), M, D if cfg.out_bias else 0, wb)
    attention = [_norm("attention norm", cfg, s, M, a, w), qkv,
                 *_attention(s, phase, B, T, a, kv), out,
                 _norm("MLP norm", cfg, s, M, a, w)]
    blocks: list[Block] = []
    dense_layers, moe_layers = s["L_d"], s["L"] - s["L_d"]
    if dense_layers != 0:
        name = "layer" if moe_layers == 0 else "dense layer"
        blocks.append(Block(name, (*attention, *_mlp("", cfg, s, M, s["F"], a, w)),
                            dense_layers))
    if moe_layers != 0:
        moe = cfg.moe
        assert moe is not None
        router = _matmul("router", M, D, s["E"], a, w)
        ops = [*attention, router, *_experts(cfg, s, M, a, w, expert_split)]
        if moe.shared:
            shared = _mlp("shared ", cfg, s, M, s["E_s"] * s["F_s"], a, w)
            if moe.shared_gate:
                shared[0] = _with_bias(shared[0], M, D, wb)
            ops += shared
        blocks.append(Block("layer" if dense_layers == 0 else "MoE layer", tuple(ops),
                            moe_layers))
    lookup = M * D * wb + (M * D * wb if cfg.positions == "learned" else 0)
    once = (op("embedding", 0, lookup, writes=M * D * dtype_bytes(a), dtype=a, compute="vpu"),
            _norm("final norm", cfg, s, M, a, w), _matmul("output head", M, D, s["V"], a, w))
    blocks.append(Block("head", once, sp.S.One))
    return StepOps(phase, B, T, M, tuple(blocks), a)
