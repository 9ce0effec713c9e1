"""The part of a model one device holds under tensor, pipeline and expert parallelism.

>>> from symroof.models import model
>>> part = shard(model("llama-2-70b"), tp=8)
>>> part.heads, part.kv_heads, part.d_ff, part.vocab
(8, 1, 3584, 4000)
>>> shard(model("llama-3-8b"), tp=16).kv_heads      # 8 KV heads: each kept on 2 chips
1

The one tensor-parallel split (Megatron-LM, Shoeybi et al., 2019, section 3; the table
``MEGATRON``): a column-parallel matmul splits its output features over the tensor axes, a
row-parallel one its input features, so its output is a partial sum to all-reduce. Each of
``tp`` chips holds 1/tp of the query heads, of the MLP and expert widths and of the
vocabulary (the embedding and the output head split over it); with tp > K each KV head is
kept whole on tp / K chips. Norms, the router and the embedding lookup's activations stay
replicated: every rank holds and runs them. A degree that does not divide what it splits
(heads, d_ff, the vocabulary, the layers over pipeline stages, the experts over expert
ranks) is an input error naming both sizes.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import InputError
from .config import ModelConfig

# Megatron-LM's split of each weight matmul (the output head and embedding split over the
# vocabulary, section 3 "input embedding"); norms and the router are replicated on every
# tensor rank, and the routed experts split their width as ``shard`` says.
MEGATRON = {
    "qkv": "column", "output": "row", "gate/up": "column", "up": "column", "down": "row",
    "shared gate/up": "column", "shared up": "column", "shared down": "row",
    "output head": "column",
}


def check_degrees(cfg: ModelConfig, *, tp: int = 1, pp: int = 1, ep: int = 1) -> None:
    """Refuse degrees that do not divide the sizes they split, naming both."""
    where = "strategy"
    splits = [(tp, "tp", cfg.heads, "heads"), (tp, "tp", cfg.d_ff, "d_ff"),
              (tp, "tp", cfg.vocab, "vocabulary"), (pp, "pp", cfg.layers, "layers")]
    moe = cfg.moe
    if moe is not None:
        splits += [(tp, "tp", moe.d_ff, "expert d_ff"), (ep, "ep", moe.experts, "experts")]
        if moe.shared:
            splits.append((tp, "tp", moe.shared_d_ff, "shared-expert d_ff"))
        if moe.dense_layers:
            splits += [(pp, "pp", moe.dense_layers, "dense layers"),
                       (pp, "pp", cfg.layers - moe.dense_layers, "MoE layers")]
    elif ep != 1:
        raise InputError(f"{cfg.name} has no experts to split over ep={ep}", where)
    for degree, kind, size, what in splits:
        if size % degree:
            raise InputError(f"{cfg.name}: {kind}={degree} does not divide its {size} "
                             f"{what}", where)
    if cfg.kv_heads % tp and tp % cfg.kv_heads:
        raise InputError(f"{cfg.name}: tp={tp} neither divides nor is a multiple of its "
                         f"{cfg.kv_heads} KV heads", where)


def shard(cfg: ModelConfig, tp: int = 1, *, pp: int = 1, ep: int = 1) -> ModelConfig:
    """The part of ``cfg`` one of ``tp`` tensor-parallel chips runs (all the layers: a
    pipeline stage runs ``1/pp`` of them, an expert rank ``1/ep`` of the experts, which
    ``layer_ops(..., expert_split=ep)`` and the memory account for)."""
    check_degrees(cfg, tp=tp, pp=pp, ep=ep)
    if tp == 1:
        return cfg
    moe = cfg.moe
    if moe is not None:
        moe = replace(moe, d_ff=moe.d_ff // tp, shared_d_ff=moe.shared_d_ff // tp)
    return replace(cfg, name=f"{cfg.name} / tp {tp}", heads=cfg.heads // tp,
                   kv_heads=max(cfg.kv_heads // tp, 1), d_ff=cfg.d_ff // tp,
                   vocab=cfg.vocab // tp, moe=moe)
