"""The ops of one transformer layer, for prefill and for decode, as einsums with dtypes.

>>> from symroof.models import model
>>> step = layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024)
>>> [o.name for o in step.blocks[0].ops]
['attention norm', 'qkv', 'attention', 'output', 'MLP norm', 'gate/up', 'down']
>>> step.blocks[0].count, step.total().flops
(32, 13751558144)

A step is blocks of ops, each block run ``count`` times: the decoder layer (for a MoE model
with leading dense layers, a dense and a MoE layer), then once per step the embedding
lookup, the final norm and the output head. One layer's ops are built once and scaled by
the layer count, so an 80-layer model costs no more to derive than a 1-layer one.

Decode processes ``batch`` new tokens, each attending over ``context`` positions (the KV
cache read in full); prefill processes ``batch`` sequences of ``context`` tokens, scoring
the full T x T matrix and the output head over every token. FLOPs follow the conventions
of ``symroof.models.counts`` (norm weights and biases at 2 per element, softmax and
activations not counted), so a step's FLOPs are its tokens times ``flops_per_token``.

The attention core is a choice (``ATTENTION``). ``flash`` (the default, as every serving
stack runs it) is one fused kernel: the scores stay on chip, so it reads Q, K and V (the
KV cache in decode) and writes O. ``materialised`` runs the scores and the values as two
ops, the scores written to memory and read back. ``causal=True`` counts prefill's scores
and values for the causal part only: position s attends to s + 1 positions, T (T + 1) / 2
of the T^2 pairs (a dense count is the default, as PaLM's MFU counts it). Where the
activations live is a choice too (``ACTIVATIONS``): through HBM kernel by kernel (the
default), or kept on chip, leaving the weights, the KV cache read and the new K and V.
``Kernel`` holds the three.

>>> unfused = layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024,
...                     attention="materialised")
>>> [o.name for o in unfused.blocks[0].ops][2:4]
['scores', 'values']
>>> unfused.total().bytes() - step.total().bytes()   # the scores, written and read back
4194304

A routed-expert op reads the weights of the experts its tokens touch: under uniform routing
of M tokens, each to k of E experts, E (1 - (1 - k/E)^M) of them on average
(``experts_touched``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact, symbol
from ..core.quant import check_scheme, matmul_input, rest_dtype
from ..core.sizes import dtype_bytes
from ..engine.ops import Op, einsum, fuse, op, sequence
from .config import ModelConfig
from .counts import norm_params, op_weights, sizes_of

PHASES = ("decode", "prefill")
# where the activations between ops live -> what the step's HBM traffic is
ACTIVATIONS = {
    "hbm": "every op reads its inputs from HBM and writes its output there (kernel by kernel)",
    "on_chip": "activations stay on chip between ops (an L2 or VMEM that holds them): HBM "
               "moves the weights, the KV cache read and the new KV entries written"}
# the attention core's kernel -> what it moves
ATTENTION = {"flash": "one fused kernel: Q, K, V read, O written, the scores kept on chip",
             "materialised": "the scores written to memory and read back (two kernels)",
             "per-head": "flash's fused kernel with one thread block per query head and "
                         "sequence in decode, as TensorRT-LLM's masked multi-head attention "
                         "before its XQA kernel: each query head reads its KV head's cache, "
                         "so a group of G query heads reads it G times"}


@dataclass(frozen=True)
class Kernel:
    """How a step's kernels run (``models.layers``): the attention core's kernel
    (``ATTENTION``), prefill's attention FLOPs counted for the causal part, and where the
    activations between ops live (``ACTIVATIONS``).

    >>> Kernel().describe()
    'flash attention; attention FLOPs dense; activations through HBM'
    """

    attention: str = "flash"
    causal: bool = False
    activations: str = "hbm"

    def __post_init__(self) -> None:
        for name, value, table in (("attention", self.attention, ATTENTION),
                                   ("activations", self.activations, ACTIVATIONS)):
            if value not in table:
                raise InputError(f"unknown choice {value!r} (choices: {', '.join(table)})",
                                 name)

    def options(self) -> dict[str, Any]:
        """``layer_ops``'s keyword arguments."""
        return {"attention": self.attention, "causal": self.causal,
                "activations": self.activations}

    def describe(self) -> str:
        where = "through HBM" if self.activations == "hbm" else "kept on chip"
        return (f"{self.attention} attention; attention FLOPs "
                f"{'causal' if self.causal else 'dense'}; activations {where}")


DEFAULT_KERNEL = Kernel()  # flash attention, a dense count, activations through HBM


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
    """A projection of M tokens: its input in ``matmul_input`` (fp8 under ``fp8-w8a8``,
    which also sets the peak it runs at), its output in ``a``."""
    return einsum("M I, I O -> M O", [matmul_input(a, w), w], out=a, name=name,
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
             split: int = 1, read: str = "touched") -> list[Op]:
    """Routed experts: M k token-expert pairs through the weights of the touched experts.
    Split over ``split`` devices (expert parallelism), each holds E / split experts and takes
    the pairs routed to them from the M ``split`` tokens of its group: M k on average, and
    the experts of its share those tokens touch."""
    D, E, k, Fe = s["D"], s["E"], s["k"], s["F_e"]
    q = matmul_input(a, w)
    ab, qb, wb = dtype_bytes(a), dtype_bytes(q), dtype_bytes(w)
    touched = experts_touched(E, k, M * split) / split
    pairs = M * k
    wide = (2 if cfg.mlp == "gated" else 1) * Fe
    up_params = D * wide + (wide if cfg.mlp_bias else 0)
    down_params = Fe * D + (D if cfg.mlp_bias else 0)
    if read != "touched":  # EXPERT_READS: every expert's weights, or one token's top k
        touched = (E if read == "all" else k) / split
    up = op("experts gate/up" if cfg.mlp == "gated" else "experts up",
            2 * pairs * up_params, pairs * D * qb + touched * up_params * wb,
            writes=pairs * wide * ab, dtype=q)
    down = op("experts down", 2 * pairs * down_params, pairs * Fe * qb + touched * down_params
              * wb, writes=pairs * D * ab, dtype=q)
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
               kv: str, kernel: str, causal: bool, prior: sp.Expr = sp.S.Zero,
               prompt: sp.Expr | None = None) -> list[Op]:
    dims = {"B": B, "T": T + prior, "S": T, "K": s["K"], "G": s["N"] / s["K"], "H": s["H"]}
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
        if causal:  # position s attends to P + s + 1 positions: T (T + 1) / 2 + P T pairs
            half = (prior + (T + 1) / 2) / (prior + T)  # of the T (P + T) a dense count has
            scores, values = (replace(o, flops=o.flops * half) for o in (scores, values))
        elif prompt is not None:  # a chunk's T queries against the prompt's every position
            whole = prompt / (prior + T)  # as the unchunked dense count scores them
            scores, values = (replace(o, flops=o.flops * whole) for o in (scores, values))
    if kernel == "flash":
        return [fuse(scores, values, name="attention")]
    if kernel == "per-head":
        core = fuse(scores, values, name="attention")
        if phase == "decode":  # the other G - 1 query heads of a group read the cache again
            again = (dims["G"] - 1) * 2 * B * dims["T"] * dims["K"] * dims["H"] * dtype_bytes(kv)
            core = replace(core, reads={**core.reads, "hbm": core.reads["hbm"] + again})
        return [core]
    return [scores, values]


def _vector(name: str, M: sp.Expr, width: sp.Expr, a: str, r: str) -> Op:
    """An RMSNorm of ``width`` over M tokens (latent attention's query and key/value
    latents)."""
    return op(name, 2 * M * width, M * width * dtype_bytes(a) + width * dtype_bytes(r),
              writes=M * width * dtype_bytes(a), dtype=a, compute="vpu")


def _mla(s: Mapping[str, sp.Expr], phase: str, B: sp.Expr, T: sp.Expr, M: sp.Expr, a: str,
         w: str, r: str, kv: str, kernel: str, causal: bool, prior: sp.Expr = sp.S.Zero,
         prompt: sp.Expr | None = None) -> list[Op]:
    """Latent attention (DeepSeek-V2, section 2.1): the queries (through a latent of Q when
    the config has one), the per-token latent of C and rotary key of R (``kv down``: what
    the cache stores), its norm; then for prefill the keys and values decompressed from
    the latents of every position (``kv up``) and attention over N heads of H (scores) and
    H_v (values); for decode the absorbed path (``_mla_decode``)."""
    N, H, C, R, Q, Hv = s["N"], s["H"], s["C"], s["R"], s["Q"], s["H_v"]
    D = s["D"]
    query = ([_matmul("q down", M, D, Q, a, w), _vector("q norm", M, Q, a, r),
              _matmul("q up", M, Q, N * H, a, w)] if Q != 0
             else [_matmul("q", M, D, N * H, a, w)])
    latent = [_matmul("kv down", M, D, C + R, a, w), _vector("kv norm", M, C, a, r)]
    if phase == "decode":
        return [*query, *latent, *_mla_decode(s, B, T, a, w, kv, kernel)]
    positions = T + prior
    up = _matmul("kv up", B * positions, C, N * (H - R + Hv), a, w)
    dims = {"B": B, "T": positions, "S": T, "N": N, "H": H, "V": Hv}
    scores = einsum("B S N H, B T N H -> B N S T", [a, a], out=a, name="scores", dims=dims)
    values = einsum("B N S T, B T N V -> B S N V", [a, a], out=a, name="values", dims=dims)
    if causal:
        half = (prior + (T + 1) / 2) / positions
        scores, values = (replace(o, flops=o.flops * half) for o in (scores, values))
    elif prompt is not None:
        scores, values = (replace(o, flops=o.flops * prompt / positions)
                          for o in (scores, values))
    core = [fuse(scores, values, name="attention")] if kernel == "flash" else [scores, values]
    return [*query, *latent, up, *core]


def _mla_decode(s: Mapping[str, sp.Expr], B: sp.Expr, T: sp.Expr, a: str, w: str, kv: str,
                kernel: str) -> list[Op]:
    """Latent attention's absorbed decode (DeepSeek-V2, section 2.1.2): each head's
    no-rotary query (H - R) multiplied into the key half of ``kv up`` (``q absorb``, to C),
    scores against the T cached latents and rotary keys (C + R each), values as the
    weighted latents (C), then through the value half of ``kv up`` (``v absorb``, to
    H_v); the cache is read once, B T (C + R) elements."""
    N, H, C, R, Hv = s["N"], s["H"], s["C"], s["R"], s["H_v"]
    dims = {"B": B, "N": N, "P": H - R, "C": C, "L": C + R, "T": T, "V": Hv}
    q = matmul_input(a, w)
    absorb = einsum("B N P, N P C -> B N C", [q, w], out=a, name="q absorb", dims=dims)
    scores = einsum("B N L, B T L -> B N T", [a, kv], out=a, name="scores", dims=dims)
    values = einsum("B N T, B T C -> B N C", [a, kv], out=a, name="values", dims=dims)
    back = einsum("B N C, N C V -> B N V", [q, w], out=a, name="v absorb", dims=dims)
    if kernel == "flash":  # one kernel: the query and the cache read once, the output written
        core = fuse(scores, values, name="attention")
        core = replace(core, reads={"hbm": B * N * (C + R) * dtype_bytes(a)
                                    + B * T * (C + R) * dtype_bytes(kv)})
        return [absorb, core, back]
    return [absorb, scores, values, back]


# which experts' weights a routed-expert op reads (Choices.experts)
EXPERT_READS = ("touched", "all", "top_k")
# the HBM traffic a step counts (Choices.traffic): everything its kernels move, the weights
# and the KV cache read (a text's count), or the weights alone (a text's floorline)
TRAFFIC = ("all", "weights_kv", "weights")


def layer_ops(cfg: ModelConfig, phase: str = "decode", *, batch: int | sp.Expr | None = None,
              context: int | sp.Expr | None = None, dtype: str = "bf16",
              kv_dtype: str | None = None, activation_dtype: str = "bf16",
              symbolic: bool = False, expert_split: int = 1, attention: str = "flash",
              causal: bool = False, activations: str = "hbm",
              prior: int | sp.Expr = 0,
              decoding: tuple[int | sp.Expr, int | sp.Expr] | None = None,
              prompt: int | sp.Expr | None = None, experts: str = "touched",
              traffic: str = "all") -> StepOps:
    """The ops of one step of ``phase`` (``decode`` or ``prefill``) at ``batch`` (symbol B
    when omitted) and ``context`` (symbol T), weights in ``dtype``, the KV cache in
    ``kv_dtype`` (default: ``dtype``), activations in ``activation_dtype``; the routed
    experts split over ``expert_split`` devices; the attention core's kernel
    (``ATTENTION``), for prefill a causal count of its FLOPs, and where the activations
    live (``ACTIVATIONS``). A prefill with ``prior`` P > 0 is one chunk of a chunked
    prefill: its ``context`` tokens attend to the P positions already in the KV cache (read
    from it) and to themselves; with ``prompt`` (the whole prompt's length) a dense count
    scores the chunk's queries against every position of the prompt, as the unchunked
    prefill's dense count does, so the chunks' FLOPs sum to it (a causal count needs no
    length: its chunks sum to the causal prefill). ``decoding`` = (B_d, T_d) adds a decode
    token for each of B_d sequences at context T_d to a prefill (Sarathi-Serve's hybrid
    batch): the projections, norms and head run over the B T + B_d tokens together,
    reading each weight once, and the decode tokens' attention (``decode attention``)
    reads their cache. ``experts`` says which experts' weights a routed-expert op reads:
    those its tokens touch (on average), ``all`` of them (the large-batch regime) or the
    ``top_k`` of one token. ``traffic`` says which HBM traffic the step counts
    (``TRAFFIC``): ``all`` that its kernels move; ``weights_kv`` each op's weights and the KV
    cache attention reads, as a text counts a step (no activations, no new KV entries
    written); ``weights`` the weights alone, the floorline a text draws under a decode step.

    >>> from symroof.models import model
    >>> full = layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024)
    >>> floor = layer_ops(model("llama-2-7b"), "decode", batch=1, context=1024,
    ...                   traffic="weights")
    >>> floor.total().bytes() < full.total().bytes(), floor.total().flops == full.total().flops
    (True, True)
    """
    if traffic not in TRAFFIC:
        raise InputError(f"traffic is one of {', '.join(TRAFFIC)}, got {traffic!r}",
                         "traffic")
    if cfg.mla is not None and traffic == "weights_kv":
        raise InputError(f"{cfg.name}: the KV cache a text counts is not modelled for latent "
                         "attention (MLA); traffic=weights or all", "traffic")
    if experts not in EXPERT_READS:
        raise InputError(f"experts is one of {', '.join(EXPERT_READS)}, got {experts!r}",
                         "experts")
    if phase not in PHASES:
        raise InputError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    if attention not in ATTENTION:
        raise InputError(f"unknown attention kernel {attention!r} (choices: "
                         f"{', '.join(ATTENTION)})", "attention")
    if activations not in ACTIVATIONS:
        raise InputError(f"unknown place {activations!r} (choices: "
                         f"{', '.join(ACTIVATIONS)})", "activations")
    if attention == "per-head" and (cfg.mla is not None or activations != "hbm"):
        raise InputError(f"{cfg.name}: the per-head kernel is modelled for KV heads (not "
                         "latent attention) with activations through HBM", "attention")
    if cfg.mla is not None and activations != "hbm":
        raise InputError(f"{cfg.name}: activations kept on chip are not modelled for latent "
                         "attention (MLA)", "activations")
    s = sizes_of(cfg, symbolic)
    B, T = _size(batch, "B", "batch"), _size(context, "T", "context")
    M = B if phase == "decode" else B * T
    if decoding is not None and phase != "prefill":
        raise InputError("decode tokens ride along with a prefill chunk only", "piggyback")
    Bd, Td = (_size(decoding[0], "B_d", "decode batch"),
              _size(decoding[1], "T_d", "decode context")) if decoding else (0, 0)
    M = M + Bd
    P = exact(prior)
    if P != 0 and phase != "prefill":
        raise InputError("positions already cached are for a chunk of a prefill", "chunk")
    if P.is_number and not (P.is_integer and P >= 0):
        raise InputError(f"positions already cached must be a whole number, got {prior}",
                         "chunk")
    a, w, kv = activation_dtype, dtype, kv_dtype or rest_dtype(dtype)
    wb = dtype_bytes(w, where="dtype")
    dtype_bytes(kv, where="kv_dtype")
    D, N, K, H = s["D"], s["N"], s["K"], s["H"]
    check_scheme(w, "weights", where="dtype")
    check_scheme(kv, "kv", head_dim=None if cfg.mla is not None else H, where="kv_dtype")
    r = rest_dtype(w)  # a weight scheme leaves the embedding, head and norms in 16 bits
    if cfg.mla is not None:
        block = [_norm("attention norm", cfg, s, M, a, r),
                 *_mla(s, phase, B, T, M, a, w, r, kv, attention, causal, P,
                       None if prompt is None else exact(prompt)),
                 *(replace(o, name=f"decode {o.name}") for o in (
                     _mla_decode(s, Bd, Td, a, w, kv, attention) if decoding else ())),
                 _matmul("output", M, N * s["H_v"], D, a, w),
                 _norm("MLP norm", cfg, s, M, a, r)]
        return _layers(cfg, s, phase, B, T, M, a, w, r, kv, P, Bd * Td, block, activations,
                       expert_split, experts, traffic)
    qkv = _with_bias(_matmul("qkv", M, D, (N + 2 * K) * H, a, w), M,
                     (N + 2 * K) * H if cfg.qkv_bias else 0, wb)
    out = _with_bias(_matmul("output", M, N * H, D, a, w), M, D if cfg.out_bias else 0, wb)
    block = [_norm("attention norm", cfg, s, M, a, r), qkv,
             *_attention(s, phase, B, T, a, kv, attention, causal, P,
                         None if prompt is None else exact(prompt)),
             *(replace(o, name=f"decode {o.name}") for o in (
                 _attention(s, "decode", Bd, Td, a, kv, attention, False)
                 if decoding else ())), out,
             _norm("MLP norm", cfg, s, M, a, r)]
    return _layers(cfg, s, phase, B, T, M, a, w, r, kv, P, Bd * Td, block, activations,
                   expert_split, experts, traffic, attention)


def _layers(cfg: ModelConfig, s: Mapping[str, sp.Expr], phase: str, B: sp.Expr, T: sp.Expr,
            M: sp.Expr, a: str, w: str, r: str, kv: str, P: sp.Expr, riding: sp.Expr,
            block: list[Op], activations: str, expert_split: int,
            experts: str = "touched", traffic: str = "all",
            attention: str = "flash") -> StepOps:
    """A layer's attention ``block`` with its MLP (or experts) after it, the layers, the
    embedding, final norm and head once."""
    D = s["D"]
    blocks: list[Block] = []
    dense_layers, moe_layers = s["L_d"], s["L"] - s["L_d"]
    if dense_layers != 0:
        name = "layer" if moe_layers == 0 else "dense layer"
        blocks.append(Block(name, (*block, *_mlp("", cfg, s, M, s["F"], a, w)),
                            dense_layers))
    if moe_layers != 0:
        moe = cfg.moe
        assert moe is not None
        router = _matmul("router", M, D, s["E"], a, w)
        ops = [*block, router, *_experts(cfg, s, M, a, w, expert_split, experts)]
        if moe.shared:
            shared = _mlp("shared ", cfg, s, M, s["E_s"] * s["F_s"], a, w)
            if moe.shared_gate:
                shared[0] = _with_bias(shared[0], M, D, dtype_bytes(w))
            ops += shared
        blocks.append(Block("layer" if dense_layers == 0 else "MoE layer", tuple(ops),
                            moe_layers))
    rb = dtype_bytes(r)
    lookup = M * D * rb + (M * D * rb if cfg.positions == "learned" else 0)
    once = (op("embedding", 0, lookup, writes=M * D * dtype_bytes(a), dtype=a, compute="vpu"),
            _norm("final norm", cfg, s, M, a, r), _matmul("output head", M, D, s["V"], a, r))
    blocks.append(Block("head", once, sp.S.One))
    if activations == "on_chip" or traffic != "all":
        weights = op_weights(cfg, s)
        # a text's count: the cache read (each query head's under the per-head kernel) or
        # none, and no new entries written
        cache = (sp.S.Zero if traffic == "weights" else
                 s["N"] / s["K"] if attention == "per-head" and phase == "decode" else
                 sp.S.One)
        blocks = [replace(b, ops=tuple(_on_chip(o, weights, s, phase, B, T, M, a, w, kv, P,
                                                riding, cache, traffic == "all")
                                       for o in b.ops)) for b in blocks]
    return StepOps(phase, B, T, M, tuple(blocks), a)


def _on_chip(o: Op, weights: Mapping[str, sp.Expr], s: Mapping[str, sp.Expr], phase: str,
             B: sp.Expr,
             T: sp.Expr, M: sp.Expr, a: str, w: str, kv: str,
             prior: sp.Expr = sp.S.Zero, riding: sp.Expr = sp.S.Zero,
             times: sp.Expr = sp.S.One, entries: bool = True) -> Op:
    """``o`` with its activation traffic kept on chip: what is left in HBM is the weights it
    reads (``weights``: ``op_weights``; the embedding's rows, the touched experts'), the KV
    cache attention reads (``times`` over: 0 leaves it out) and the new K and V entries the
    qkv projection writes (unless ``entries`` is false)."""
    entry = 2 * s["K"] * s["H"] * dtype_bytes(kv)  # one token's K and V in one layer
    if o.name == "embedding":
        reads = o.reads["hbm"]
    elif o.name.startswith("decode ") and o.name.removeprefix("decode ") in weights:
        reads = weights[o.name.removeprefix("decode ")] * dtype_bytes(w)  # latent absorbs
    elif o.name.startswith("decode "):  # the riding decode tokens' cache: B_d T_d entries
        reads = times * riding * entry / (1 if o.name == "decode attention" else 2)
    elif o.name in ("attention", "scores", "values"):
        cache = times * B * (T if phase == "decode" else prior) * entry
        reads = cache if o.name == "attention" else cache / 2
    elif o.name.startswith("experts"):  # touched weights: the reads less the routed tokens
        width = s["D"] if o.name != "experts down" else s["F_e"]
        reads = o.reads["hbm"] - M * s["k"] * width * dtype_bytes(matmul_input(a, w))
    else:
        held = rest_dtype(w) if o.name == "output head" or "norm" in o.name else w
        reads = weights[o.name] * dtype_bytes(held)
    writes = {"hbm": M * entry} if o.name == "qkv" and entries else {}
    return replace(o, reads={"hbm": sp.expand(reads)}, writes=writes)
