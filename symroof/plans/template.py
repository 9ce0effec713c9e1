"""What each strategy communicates, derived from a model's layer ops: the collectives per
layer and per step, in the degrees of parallelism as symbols.

>>> from symroof.models import model
>>> t = training_template(model("llama-2-7b"), context=4096, kinds=("tp",))
>>> sorted({(u.collective, u.phase) for u in t.uses if u.scope == "layer"})
[('allreduce', 'backward'), ('allreduce', 'forward')]
>>> [u.per_layer for u in t.uses if u.block == "layer"]
[1, 1, 1, 1]

Megatron-LM splits each weight matmul of a layer by a rule (Shoeybi et al., 2019, section
3; kept as the table ``MEGATRON``): a column-parallel matmul splits its output features
over the tensor axes, so its input arrives whole and its input gradient is a partial sum
to all-reduce in the backward pass; a row-parallel matmul splits its input features, so its
output is a partial sum to all-reduce in the forward pass. With sequence parallelism
(Korthikanti et al., 2022) each AllReduce becomes a ReduceScatter over the sequence and the
matching AllGather moves before the next column-parallel matmul. The collectives are read
off the layer's ops: which op, which array (its bytes from the op), which phase.
Data-parallel kinds send the weights' gradients (and, for ZeRO, gather weights): their
bytes come from the ops' parameters; a pipeline permutes a layer's output between stages;
experts all-to-all the routed tokens.

Symbols: ``d_dp``, ``d_zero``, ``d_tp``, ``d_pp``, ``d_ep`` (degrees), ``m`` (microbatches)
and ``b`` (sequences per replica and microbatch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from ..core.sizes import dtype_bytes
from ..engine.ops import Op
from ..models.config import ModelConfig
from ..models.counts import op_weights, params
from ..models.layers import StepOps, layer_ops
from ..models.tensor_parallel import MEGATRON

D_DP, D_ZERO, D_TP, D_PP, D_EP, MICRO, BATCH = (
    sp.Symbol(n, positive=True, integer=True)
    for n in ("d_dp", "d_zero", "d_tp", "d_pp", "d_ep", "m", "b"))
DEGREE = {"dp": D_DP, "zero": D_ZERO, "tp": D_TP, "pp": D_PP, "ep": D_EP}



@dataclass(frozen=True)
class Use:
    """One collective a strategy needs: ``kind`` (dp, zero, tp, pp, ep) runs ``collective``
    over its axes on an array of ``nbytes`` (NCCL's size convention), ``per_layer`` times per
    layer of ``block`` (or per step when ``scope`` is ``step``), ``per_step`` times in all,
    in ``phase`` (forward or backward) whose compute it overlaps."""

    kind: str
    collective: str
    what: str
    block: str
    phase: str
    scope: str
    per_layer: Expr
    per_step: Expr
    nbytes: Expr


@dataclass(frozen=True)
class Template:
    """A model's step with every strategy's collectives, and its parameters by split."""

    cfg: ModelConfig
    context: Expr
    step: StepOps
    uses: tuple[Use, ...]
    params_total: Expr
    params_device: Expr
    layers: Expr


def op_params(o: Op, cfg: ModelConfig, symbolic: bool = False) -> Expr:
    """Parameters of one op of a layer: ``models.counts.op_weights``, the one count (a
    routed-expert op holds all E experts' weights; ops without weights hold none)."""
    return op_weights(cfg, cfg.sizes(symbolic)).get(o.name, sp.S.Zero)


def _activation(o: Op, weights: Expr, side: str, wb: Expr) -> Expr:
    """Bytes of a matmul's input or output array, from its traffic: the output is what it
    writes, the input what it reads less its ``weights``."""
    if side == "output":
        return o.writes.get("hbm", sp.S.Zero)
    return sp.expand(o.reads.get("hbm", sp.S.Zero) - weights * wb)


def training_template(cfg: ModelConfig, *, context: int | Expr,
                      kinds: tuple[str, ...] = ("dp", "zero", "tp", "pp", "ep"),
                      zero_stage: int = 0, sequence_parallel: bool = False,
                      bytes_per_param: Mapping[str, int] | None = None,
                      dtype: str = "bf16", step: StepOps | None = None,
                      symbolic: bool = False, attention: str = "materialised") -> Template:
    """The collectives of a training step of ``cfg`` under the kinds of parallelism named,
    for ``b`` sequences of ``context`` tokens per replica and microbatch; ``symbolic``
    keeps the model's sizes as its letters (L, D, F, ...); ``attention`` is the attention
    kernel of the layer ops (``models.layers.ATTENTION``; training's default keeps the
    scores, as Megatron-LM without a fused kernel)."""
    per = bytes_per_param or {"weights": 2, "gradients": 2, "optimizer": 12}
    # a preset that keeps no gradient copy (adam-bf16) still sends its gradients, made in
    # the weights' dtype
    wb, gb = sp.sympify(per["weights"]), sp.sympify(per["gradients"] or per["weights"])
    step = step or layer_ops(cfg, "prefill", batch=BATCH, context=context, dtype=dtype,
                             activation_dtype=dtype, symbolic=symbolic, attention=attention)
    tokens = step.tokens
    uses: list[Use] = []
    ep = "ep" in kinds and cfg.moe is not None
    layer_blocks = [blk for blk in step.blocks if blk.name != "head"]
    layers = sp.Add(*(blk.count for blk in layer_blocks))
    pp = D_PP if "pp" in kinds else sp.S.One
    micro = MICRO  # microbatches per step: a pipeline's, or gradient accumulation's
    shard = D_TP if "tp" in kinds else sp.S.One
    device_params = sp.S.Zero
    block_params = sp.S.Zero
    per_block: list[tuple[str, Expr, Expr]] = []  # (block, layers on the stage, params/layer)
    dense: list[tuple[str, Expr, Expr]] = []  # the same, without the routed experts
    for blk in step.blocks:
        on_stage = blk.count / pp if blk.name != "head" else sp.S.One
        mine = sp.S.Zero
        shared = sp.S.Zero
        for o in blk.ops:
            n = op_params(o, cfg, symbolic)
            block_params += blk.count * n
            split = (shard if o.name in MEGATRON else 1) * (
                D_EP if ep and o.name.startswith("experts") else 1)
            mine += n / split
            if not o.name.startswith("experts"):
                shared += n / split
            if "tp" in kinds and o.name in MEGATRON:
                uses += _megatron(o, blk.name, on_stage * micro, sequence_parallel, wb, n)
        per_block.append((blk.name, on_stage, sp.expand(mine)))
        dense.append((blk.name, on_stage, sp.expand(shared)))
        device_params += on_stage * mine
        if ep and blk.name != "head" and any(o.name.startswith("experts") for o in blk.ops):
            uses += _experts(cfg, blk.name, on_stage * micro, tokens, dtype, symbolic)
    if "pp" in kinds:
        last = layer_blocks[-1].ops[-1]
        out = last.writes.get("hbm", sp.S.Zero) / (shard if sequence_parallel else 1)
        for phase, what in (("forward", "activations"), ("backward", "their gradients")):
            uses.append(Use("pp", "permute", f"layer output {what} to the next stage",
                            layer_blocks[-1].name, phase, "step", sp.S.Zero, micro, out))
        if cfg.tied_embeddings:  # the last stage's copy of the word embeddings (the head's)
            # and the first stage's all-reduce their gradients once per step, two ranks: an
            # exchange of the gradient each way (Megatron-LM, megatron/core/distributed/
            # finalize_model_grads.py, _allreduce_word_embedding_grads)
            sizes = cfg.sizes(symbolic)
            uses.append(Use("pp", "permute", "word embedding gradients, all-reduced between "
                            "the first stage's and the last stage's copy (tied embeddings)",
                            "head", "backward", "step", sp.S.Zero, sp.S.One,
                            sizes["V"] * sizes["D"] / shard * gb))
    total = params(cfg, symbolic=symbolic).total
    embedding = sp.expand((total - block_params) / shard)
    per_block.append(("embedding", sp.S.One, embedding))
    dense.append(("embedding", sp.S.One, embedding))
    device_params = sp.expand(device_params + embedding)
    uses += _data(kinds, zero_stage, per_block, wb, gb)
    if ep:  # the expert axes split the batch too: every weight but the experts' is a replica
        shard_zero = D_ZERO if "zero" in kinds and zero_stage > 0 else 1
        for block, count, n in dense:
            scope = "step" if block in ("embedding", "head") else "layer"
            uses.append(Use("ep", "allreduce", "dense weight gradients", block, "backward",
                            scope, sp.S.Zero if scope == "step" else sp.S.One, count,
                            n * gb / shard_zero))
    return Template(cfg, sp.sympify(context), step, tuple(uses), total, device_params, layers)


def _megatron(o: Op, block: str, per_step: Expr, sp_on: bool, wb: Expr,
              weights: Expr) -> list[Use]:
    """The tensor-axis collectives of one Megatron-split matmul."""
    scope = "step" if block == "head" else "layer"
    each: Expr = sp.S.Zero if scope == "step" else sp.S.One
    if MEGATRON[o.name] == "column":
        x = _activation(o, weights, "input", wb)
        if sp_on:
            return [Use("tp", "allgather", f"input of {o.name!r} (split over the sequence)",
                        block, "forward", scope, each, per_step, x),
                    Use("tp", "reducescatter", f"gradient of the input of {o.name!r}", block,
                        "backward", scope, each, per_step, x)]
        return [Use("tp", "allreduce", f"gradient of the input of {o.name!r}", block,
                    "backward", scope, each, per_step, x)]
    y = _activation(o, weights, "output", wb)
    if sp_on:
        return [Use("tp", "reducescatter", f"output of {o.name!r} (partial sums)", block,
                    "forward", scope, each, per_step, y),
                Use("tp", "allgather", f"gradient of the output of {o.name!r}", block,
                    "backward", scope, each, per_step, y)]
    return [Use("tp", "allreduce", f"output of {o.name!r} (partial sums)", block, "forward",
                scope, each, per_step, y)]


def _experts(cfg: ModelConfig, block: str, per_step: Expr, tokens: Expr,
             dtype: str, symbolic: bool) -> list[Use]:
    """Routed tokens: each of ``tokens`` goes to k experts, as a [tokens k, D] array."""
    assert cfg.moe is not None
    s = cfg.sizes(symbolic)
    array = tokens * s["k"] * s["D"] * dtype_bytes(dtype)
    return [Use("ep", "alltoall", f"routed tokens {what}", block, phase, "layer", 1,
                per_step, array)
            for phase in ("forward", "backward") for what in ("dispatched", "combined")]


def _data(kinds: tuple[str, ...], stage: int, per_block: list[tuple[str, Expr, Expr]],
          wb: Expr, gb: Expr) -> list[Use]:
    """Gradient reductions and weight gathers of the data kinds, layer by layer.

    ZeRO stages 1 and 2 reduce-scatter the gradients and all-gather the updated weights
    (the volume of one AllReduce); stage 3 gathers each layer's weights for the forward
    and again for the backward pass and reduce-scatters its gradients; a ``dp`` axis beside
    a ZeRO axis all-reduces the gradient shard."""
    out: list[Use] = []
    zero = "zero" in kinds and stage > 0
    for block, count, n in per_block:
        scope = "step" if block in ("embedding", "head") else "layer"
        each = sp.S.Zero if scope == "step" else sp.S.One
        if zero:
            gathers = [("forward", "weights"), ("backward", "weights again")] if stage == 3 \
                else [("forward", "updated weights")]
            out += [Use("zero", "allgather", what, block, phase, scope, each, count, n * wb)
                    for phase, what in gathers]
            out.append(Use("zero", "reducescatter", "weight gradients", block, "backward",
                           scope, each, count, n * gb))
        if "dp" in kinds:
            shard = D_ZERO if zero else 1
            out.append(Use("dp", "allreduce", "weight gradients" + (" (ZeRO shards)" if zero
                                                                     else ""),
                           block, "backward", scope, each, count, n * gb / shard))
    return out
