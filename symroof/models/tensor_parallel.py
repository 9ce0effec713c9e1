"""A step split over a mesh by tensor parallelism: weights and KV cache divided by the chips.

>>> from symroof.parallel import mesh
>>> from symroof.models import model
>>> tp = tensor_parallel_step(model("llama-2-70b"), "decode", mesh("X=8", "h100-sxm"),
...                           batch=1, context=1024)
>>> tp.shard.heads, tp.shard.kv_heads, tp.shard.d_ff
(8, 1, 3584)
>>> sorted(tp.collectives)
['down', 'output']

Every chip of the mesh (all its axes, n chips) holds 1/n of the heads, of the MLP and expert
widths, and of the vocabulary (Megatron-style: column-split projections, row-split output
and down projections): its ops are the layer ops of that shard of the config, so FLOPs,
weight bytes and KV-cache bytes divide by n while the norms, the embedding lookup and the
router stay replicated. The row-split outputs are summed by an AllReduce of the M x D
activations over all the mesh's axes after the attention output and after the MLP (or the
experts), a serial term of the op it follows. With n > K each KV head is kept on n / K
chips. The output head's logits stay split (a distributed argmax or softmax is not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import sympy as sp

from ..core.errors import InputError
from ..core.sizes import dtype_bytes
from ..parallel.collectives import Collective, collective
from ..parallel.mesh import Mesh
from .config import ModelConfig
from .layers import Step, layer_ops


@dataclass(frozen=True)
class ShardedStep:
    """The per-chip ``step`` of a tensor-parallel ``mesh``, the ``shard`` of the config each
    chip runs, and the AllReduce that follows each named op."""

    step: Step
    mesh: Mesh
    shard: ModelConfig
    collectives: Mapping[str, Collective]

    def extras(self) -> dict[str, dict[str, sp.Expr]]:
        """Op name -> its collective's time, as a named roofline term."""
        return {name: {f"allreduce {''.join(c.axes)}": c.time}
                for name, c in self.collectives.items()}


def shard(cfg: ModelConfig, n: int) -> ModelConfig:
    """The part of ``cfg`` one of ``n`` tensor-parallel chips holds."""
    where = f"tensor parallelism over {n} chips"
    for value, what in ((cfg.heads, "heads"), (cfg.d_ff, "d_ff")):
        if value % n:
            raise InputError(f"{cfg.name}: {what} {value} does not divide by {n} chips", where)
    if cfg.kv_heads % n and n % cfg.kv_heads:
        raise InputError(f"{cfg.name}: {cfg.kv_heads} KV heads do not split over {n} chips",
                         where)
    moe = cfg.moe
    if moe is not None:
        for value, what in ((moe.d_ff, "moe d_ff"), (moe.shared_d_ff, "shared d_ff")):
            if value % n:
                raise InputError(f"{cfg.name}: {what} {value} does not divide by {n} chips",
                                 where)
        moe = replace(moe, d_ff=moe.d_ff // n, shared_d_ff=moe.shared_d_ff // n)
    return replace(cfg, name=f"{cfg.name} / {n}", heads=cfg.heads // n,
                   kv_heads=max(cfg.kv_heads // n, 1), d_ff=cfg.d_ff // n,
                   vocab=-(-cfg.vocab // n), moe=moe)


def tensor_parallel_step(cfg: ModelConfig, phase: str, on: Mesh, *,
                         batch: int | sp.Expr | None = None,
                         context: int | sp.Expr | None = None, dtype: str = "bf16",
                         kv_dtype: str | None = None,
                         activation_dtype: str = "bf16") -> ShardedStep:
    """The per-chip ops of ``phase`` with the model split over every chip of ``on``."""
    n = on.devices
    if not (n.is_Integer and n >= 1):
        raise InputError(f"the mesh must have a whole number of chips, got {n}", "--mesh")
    part = shard(cfg, int(n))
    step = layer_ops(part, phase, batch=batch, context=context, dtype=dtype,
                     kv_dtype=kv_dtype, activation_dtype=activation_dtype)
    if n == 1:
        return ShardedStep(step, on, part, {})
    activations = step.tokens * cfg.d_model * dtype_bytes(activation_dtype)
    reduce = collective("allreduce", activations, tuple(on.axes), on)
    after: dict[str, Collective] = {}
    for block in step.blocks[:-1]:
        names = [o.name for o in block.ops]
        after["output"] = reduce
        after[names[-1]] = reduce
    return ShardedStep(step, on, part, after)
