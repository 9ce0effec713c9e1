"""A training step's ops on one device, timed by the engine: the forward ops of the device's
shard (the serving prefill's ops), the backward as each op's input-gradient and
weight-gradient ops, and recomputation's reruns; every time ``engine.rooflines.roofline``
of an op on the chip (``models.step_roofline``), nothing divided by hand.

>>> from symroof import chip
>>> from symroof.models import model
>>> ops = training_ops(model("llama-2-7b"), batch=8, context=2048)
>>> ops["backward"].total().flops == 2 * ops["forward"].total().flops
True
>>> t = phase_terms(ops, chip("h100-sxm"))
>>> t["backward"]["hbm"] == 2 * t["forward"]["hbm"]
True

An op with weights has two backward ops, the gradient of its input and the gradient of
its weights, each with the op's FLOPs and bytes (two matrix products of the same shape);
an op without weights (the attention core, a lookup) has one gradient op of twice its
FLOPs and bytes. ``full`` recomputation reruns the whole forward before the backward,
``selective`` the attention core (the matrix-unit ops without weights). A layer block
runs 1/pp of its layers on a stage, the embedding and the head once (the busiest stage's
ops, ``stage_extras`` saying which stage runs which; the memory account holds each on its
own stage, ``head_params``); with sequence parallelism a norm's activations split over the
tensor ranks, its weights stay whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.sizes import dtype_bytes
from ..engine.ops import Op
from ..engine.rooflines import roofline
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.counts import op_weights, params
from ..models.layers import Block, StepOps, layer_ops
from ..models.memory import checkpoint_policy
from ..models.step_roofline import op_roofline
from ..models.tensor_parallel import shard
from .efficiency import PEAK, Efficiency

TRAIN_PHASES = ("forward", "backward")
OVERLAPS = {
    "phase": "each term overlaps the compute of its phase (a phase takes its longest term)",
    "op": "each op's compute overlaps its own memory traffic, ops run one after another and "
          "the collectives and host transfers wait for the compute (a serving step's rule)",
    "none": "nothing overlaps (every term one after another)",
}
DEFAULT_OVERLAP = "phase"


@dataclass(frozen=True)
class Term:
    """A named time of a training step, split by the phase whose compute it overlaps
    (``step``: once per step, outside the pipeline's schedule)."""

    name: str
    phases: Mapping[str, Expr]
    detail: str = ""

    @property
    def time(self) -> Expr:
        return sp.Add(*self.phases.values())


def training_ops(cfg: ModelConfig, *, batch: int | Expr, context: int | Expr, tp: int = 1,
                 pp: int = 1, ep: int = 1, sequence_parallel: bool = False,
                 attention: str = "materialised", recompute: str = "none",
                 dtype: str = "bf16", symbolic: bool = False,
                 elementwise: bool = False) -> dict[str, StepOps]:
    """The ops one device runs for one microbatch of ``batch`` sequences (a replica's) on
    the busiest pipeline stage: ``forward`` and ``backward`` (reruns included);
    ``elementwise`` adds Megatron-LM's fused elementwise kernels to each layer
    (``megatron_kernels``)."""
    forward, weights = forward_ops(cfg, batch=batch, context=context, tp=tp, pp=pp, ep=ep,
                                   sequence_parallel=sequence_parallel, attention=attention,
                                   dtype=dtype, symbolic=symbolic)
    if elementwise:
        forward = with_megatron_kernels(forward, cfg, batch=batch, context=context, tp=tp,
                                        sequence_parallel=sequence_parallel, symbolic=symbolic)
    return {"forward": forward, "backward": backward_ops(forward, weights, recompute)}


def with_megatron_kernels(forward: StepOps, cfg: ModelConfig, *, batch: int | Expr,
                          context: int | Expr, tp: int = 1, sequence_parallel: bool = False,
                          symbolic: bool = False) -> StepOps:
    """``forward`` with Megatron-LM's fused elementwise kernels (``megatron_kernels``) run
    by each layer block (the head block runs none).

    >>> from symroof.models import model
    >>> cfg = model("megatron-gpt-22b")
    >>> f, _ = forward_ops(cfg, batch=1, context=2048, tp=8)
    >>> len(with_megatron_kernels(f, cfg, batch=1, context=2048, tp=8).rows()) - len(f.rows())
    5
    """
    extra = megatron_kernels(cfg, batch=batch, context=context, tp=tp,
                             sequence_parallel=sequence_parallel, symbolic=symbolic)
    return replace(forward, blocks=tuple(
        Block(b.name, b.ops + extra, b.count) if b.name != "head" else b
        for b in forward.blocks))


# Megatron-LM's fused elementwise kernels of a GPT layer beside its matmuls and norms,
# forward, as (name, size per token, bytes read and written per element, split): each
# reads its 2-byte inputs and writes its outputs, a dropout mask 1 byte per element. NT:
# heads x sequence (the attention scores), D: hidden, F: MLP width. "heads" and "F" split
# over the tensor ranks, "D" only under sequence parallelism. Korthikanti et al. 2022,
# section 4.1 (the layer's tensors: softmax output 2as^2b, dropout mask as^2b, the
# bias-dropout-add masks sbh, the GeLU input 8sbh).
MEGATRON_KERNELS: tuple[tuple[str, str, int, int, str], ...] = (
    ("scale, mask, softmax", "NT", 2, 2, "heads"),
    ("attention dropout", "NT", 2, 3, "heads"),
    ("bias, dropout, add (attention)", "D", 4, 3, "D"),
    ("bias, GeLU", "F", 2, 2, "F"),
    ("bias, dropout, add (MLP)", "D", 4, 3, "D"),
)
CORE_KERNELS = ("scale, mask, softmax", "attention dropout")


def megatron_kernels(cfg: ModelConfig, *, batch: int | Expr, context: int | Expr,
                     tp: int = 1, sequence_parallel: bool = False,
                     symbolic: bool = False) -> tuple[Op, ...]:
    """One layer's fused elementwise kernels (``MEGATRON_KERNELS``) on one tensor rank, each
    an op on the vector unit of one FLOP per element, bound by its traffic.

    >>> from symroof.models import model
    >>> k = megatron_kernels(model("megatron-gpt-22b"), batch=1, context=2048, tp=8)
    >>> k[2].bytes() == 7 * 2048 * 6144     # whole on every rank without sequence parallelism
    True
    """
    s = cfg.sizes(symbolic)
    tokens = sp.sympify(batch) * context
    size = {"NT": s["N"] * sp.sympify(context), "D": s["D"], "F": s["F"]}
    out = []
    for name, dim, reads, writes, split in MEGATRON_KERNELS:
        n = tokens * size[dim] / (1 if split == "D" and not sequence_parallel else tp)
        out.append(Op(name, n, reads={"hbm": reads * n}, writes={"hbm": writes * n},
                      compute="vpu"))
    return tuple(out)


def forward_ops(cfg: ModelConfig, *, batch: int | Expr, context: int | Expr, tp: int = 1,
                pp: int = 1, ep: int = 1, sequence_parallel: bool = False,
                attention: str = "materialised", dtype: str = "bf16",
                symbolic: bool = False, cache: dict[Any, Any] | None = None,
                ) -> tuple[StepOps, dict[str, Expr]]:
    """The forward ops of the busiest stage (``training_ops``) and each op's weights;
    ``cache`` keeps the shard's layer ops and weights (what neither the pipeline nor
    sequence parallelism changes) for the next call of the same shard."""
    part = shard(cfg, tp, pp=pp, ep=ep)
    key = (cfg.name, tp, ep, batch, context, attention, dtype, symbolic)
    if cache is not None and key in cache:
        fwd, weights = cache[key]
    else:
        fwd = layer_ops(part, "prefill", batch=batch, context=context, dtype=dtype,
                        activation_dtype=dtype, symbolic=symbolic, expert_split=ep,
                        attention=attention)
        weights = op_weights(part, part.sizes(symbolic))
        if cache is not None:
            cache[key] = (fwd, weights)
    wb = dtype_bytes(dtype)
    blocks = []
    for b in fwd.blocks:
        count = sp.S.One if b.name == "head" else b.count / pp
        ops = tuple(_split_norm(o, weights.get(o.name, sp.S.Zero) * wb, tp)
                    if sequence_parallel and tp > 1 and o.name.endswith("norm") else o
                    for o in b.ops)
        blocks.append(Block(b.name, ops, count))
    return replace(fwd, blocks=tuple(blocks)), weights


def backward_ops(forward: StepOps, weights: Mapping[str, Expr], recompute: str) -> StepOps:
    """The backward of ``forward``: reruns first, then each op's gradient ops in reverse.
    Full recomputation (and a text's k tensors of D kept per layer) reruns the whole
    forward, selective the attention core, checkpoints after the weight matmuls every op
    but those matmuls (``models.memory.checkpoint_policy``)."""
    mode, _ = checkpoint_policy(recompute)
    back = []
    for b in forward.blocks:
        ops_b: list[Op] = []
        if mode in ("full", "k_tensors_of_D"):
            ops_b += [o.renamed(f"{o.name} rerun") for o in b.ops]
        elif mode == "selective":
            ops_b += [o.renamed(f"{o.name} rerun") for o in b.ops if _core(o, weights)]
        elif mode == "matmuls":  # their outputs kept: the norms, the core, the rest rerun
            ops_b += [o.renamed(f"{o.name} rerun") for o in b.ops
                      if not (o.compute == "mxu" and weights.get(o.name, 0) != 0)]
        for o in reversed(b.ops):
            if weights.get(o.name, 0) != 0:
                ops_b += [o.renamed(f"{o.name} input-gradient"),
                          o.renamed(f"{o.name} weight-gradient")]
            else:
                ops_b.append(o.repeat(2, f"{o.name} gradient"))
        back.append(Block(b.name, tuple(ops_b), b.count))
    return replace(forward, phase="backward", blocks=tuple(back))


def _core(o: Op, weights: Mapping[str, Expr]) -> bool:
    """The attention core: a matrix-unit op without weights (and Megatron-LM's softmax and
    attention dropout kernels)."""
    return (o.compute == "mxu" and weights.get(o.name, 0) == 0) or o.name in CORE_KERNELS


def _split_norm(o: Op, held: Expr, tp: int) -> Op:
    """A norm under sequence parallelism: its FLOPs and activations over ``tp`` ranks, the
    weights it reads whole."""
    reads = {k: (v - held) / tp + held if k == "hbm" else v / tp for k, v in o.reads.items()}
    return replace(o, flops=o.flops / tp, reads=reads,
                   writes={k: v / tp for k, v in o.writes.items()})


FIRST_STAGE_OPS = ("embedding",)  # the ops of the head block the first stage runs
LAST_STAGE_OPS = ("final norm", "output head")  # and those the last stage runs


def stage_extras(ops: Mapping[str, StepOps]) -> dict[str, dict[str, StepOps]]:
    """The ops of the head block that one pipeline stage alone runs, by phase: ``first``,
    the embedding's (the first stage's), and ``last``, the final norm's and the output
    head's (the last stage's), each with the reruns and gradient ops made from them. The
    busiest stage (``training_ops``) runs both; every other stage runs neither.

    >>> from symroof.models import model
    >>> ops = training_ops(model("llama-2-7b"), batch=1, context=2048, pp=4)
    >>> [o.name for _, o in stage_extras(ops)["first"]["backward"].rows()]
    ['embedding gradient']
    >>> len(stage_extras(ops)["last"]["backward"].rows())   # two gradient ops each
    4
    """
    def only(names: tuple[str, ...]) -> dict[str, StepOps]:
        return {ph: replace(step, blocks=tuple(
            Block(b.name, tuple(o for o in b.ops if o.name.startswith(names)), b.count)
            for b in step.blocks if b.name == "head"))
            for ph, step in ops.items()}
    return {"first": only(FIRST_STAGE_OPS), "last": only(LAST_STAGE_OPS)}


def op_key(o: Op) -> tuple[Any, ...]:
    """What an op's times depend on (``phase_terms``' cache key): a rerun or a gradient op
    has its forward op's."""
    return (o.flops, tuple(o.reads.items()), tuple(o.writes.items()), o.compute, o.dtype)


def phase_terms(ops: Mapping[str, StepOps], chip: Chip, efficiency: Efficiency = PEAK,
                cache: dict[Any, dict[str, Expr]] | None = None) -> dict[str, dict[str, Expr]]:
    """Each phase's named terms in seconds (``compute`` and each memory level): every op's
    engine roofline (``models.step_roofline.op_roofline``) times its block's count, summed,
    compute and memory at ``efficiency``; ``cache`` keeps an op's times by its costs (a
    rerun or a gradient op costs what its forward op does)."""
    fractions = {k: efficiency.of(k) for k in ("compute", "hbm")}
    seen = {} if cache is None else cache
    out: dict[str, dict[str, Expr]] = {}
    for ph, step in ops.items():
        parts: dict[str, list[Expr]] = {}
        for block, o in step.rows():
            key = op_key(o)
            if key not in seen:
                rl, _ = op_roofline(o, chip)
                seen[key] = {"compute": _at(rl.t_math, fractions["compute"]),
                             **{k: _at(v, fractions.get(k, 1)) for k, v in rl.t_comms.items()}}
            for k, v in seen[key].items():
                parts.setdefault(k, []).append(block.count * v)
        out[ph] = {k: sp.Add(*v) for k, v in parts.items()}
    return out


def _at(time: Expr, fraction: Expr | int) -> Expr:
    """``time`` at ``fraction`` of peak (``time`` itself at peak: no division to build)."""
    return time if fraction == 1 else time / fraction


def op_overlapped(ops: Mapping[str, StepOps], chip: Chip, efficiency: Efficiency = PEAK,
                  cache: dict[Any, dict[str, Expr]] | None = None) -> dict[str, Expr]:
    """Each phase's time with each op's compute overlapping its own memory traffic and the
    ops one after another: the sum over the ops of their longest term, times their counts
    (``phase_terms``' op times)."""
    seen = {} if cache is None else cache
    phase_terms(ops, chip, efficiency, seen)
    out: dict[str, Expr] = {}
    for ph, step in ops.items():
        total = sp.S.Zero
        for block, o in step.rows():
            total += block.count * sp.Max(*seen[op_key(o)].values())
        out[ph] = total
    return out


STAGES = ("first", "last")  # the pipeline stages whose memory differs from the others'


def head_params(cfg: ModelConfig, tp: int, pp: int = 1) -> dict[str, Expr]:
    """Parameters of the head block one tensor rank holds, by where they sit: ``both``,
    what the one stage of a step without a pipeline holds (the embedding, the output head
    unless tied to it, the final norm); with a pipeline the ``first`` stage holds the word
    embedding and any learned positions, the ``last`` the final norm and the output head.
    With tied embeddings the last stage keeps its own copy of the word embeddings as the
    head's weights, a parameter of its own (its gradients all-reduced with the first
    stage's): Megatron-LM, ``megatron/core/models/common/language_module/
    language_module.py``, ``setup_embeddings_and_output_layer`` ("Create a second copy of
    word_embeddings on the last stage").

    >>> from symroof.models import model
    >>> h = head_params(model("megatron-gpt-22b"), 8)    # tied, 2048 learned positions
    >>> h["first"] - h["last"] == 2048 * 6144 - 2 * 6144   # the positions, not the norm
    True
    """
    part = shard(cfg, tp, pp=pp)
    p = params(part)
    norm = p.norms / (2 * cfg.layers + 1)
    word = sp.Integer(part.vocab * part.d_model)
    positions = p.embedding - word * (1 if cfg.tied_embeddings else 2)
    return {"both": sp.expand(p.embedding + norm), "first": sp.expand(word + positions),
            "last": sp.expand(word + norm)}


def device_params(cfg: ModelConfig, tp: int, pp: int, stage: str = "both") -> Expr:
    """Parameters one device holds for a dense model: its tensor shard's
    (``models.tensor_parallel.shard``: KV heads replicated where the tensor ranks outnumber
    them), the layers' over the ``pp`` stages, and the head block's that ``stage`` holds
    (``head_params``: ``both`` on one stage, the count ``plans.serving.device_memory``
    charges weight bytes for; ``first`` or ``last`` with a pipeline; without one every
    stage is ``both``).

    >>> from symroof.models import model
    >>> device_params(model("llama-3-8b"), 16, 1)   # 8 KV heads: each rank holds one
    518918144
    >>> cfg = model("llama-2-7b")
    >>> device_params(cfg, 1, 4, "both") - device_params(cfg, 1, 4, "first")  # head, norm
    131076096
    """
    if stage not in ("both", *STAGES):
        raise InputError(f"a pipeline stage is one of both, first, last, got {stage!r}",
                         "stage")
    p = params(shard(cfg, tp, pp=pp))
    head = head_params(cfg, tp, pp)
    layers = p.total - head["both"]
    return sp.expand(layers / pp + head[stage if pp != 1 else "both"])


def optimizer_step(states: Mapping[str, Expr]) -> Op:
    """The optimizer's step on one device, once per training step: it reads the gradients
    and the optimizer state and writes the weights and the state (``states``: bytes of
    ``weights``, ``gradients``, ``optimizer``, as the memory account holds them), its few
    FLOPs a parameter left out (an elementwise kernel, bound by its traffic).

    >>> optimizer_step({"weights": 2, "gradients": 2, "optimizer": 12}).bytes()
    28
    """
    return Op("optimizer step", sp.S.Zero,
              reads={"hbm": states["gradients"] + states["optimizer"]},
              writes={"hbm": states["weights"] + states["optimizer"]}, compute="vpu")


def optimizer_time(states: Mapping[str, Expr], chip: Chip,
                   efficiency: Efficiency = PEAK) -> Expr:
    """The optimizer step's time on ``chip`` (its engine roofline), memory at
    ``efficiency``."""
    return phase_terms({"step": StepOps("step", sp.S.One, sp.S.One, sp.S.One, (
        Block("optimizer", (optimizer_step(states),), sp.S.One),))}, chip,
        efficiency)["step"].get("hbm", sp.S.Zero)


def with_peak(chip: Chip, peak: Expr) -> Chip:
    """``chip`` with its bf16 matrix-unit peak replaced by ``peak`` (a symbol for a law)
    and no vector-unit figures, so that every op runs at ``peak`` (the law's one rate)."""
    key = chip.resolve("bf16")
    figures = {k: v for k, v in chip.figures.items() if not k.startswith("vpu.")}
    figures[key] = replace(figures[key], value=peak)
    return replace(chip, figures=figures)


def matrix_rate(chip: Chip) -> Expr:
    """The rate the engine charges a bf16 matrix-unit op at on ``chip`` (FLOP/s): what
    PaLM's MFU divides by."""
    return 1 / roofline(Op("one FLOP", sp.S.One), chip).t_math
