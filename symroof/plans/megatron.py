"""Megatron-LM's training step as Korthikanti et al. 2022 describe it: memory per GPU and an
iteration's time by op class, each convention a named choice.

>>> from symroof.models import model
>>> r = Run(model("megatron-gpt-22b"), tensor=8, pipeline=1, global_batch=4, micro_batch=4,
...         sequence=2048, mode="sequence+selective")
>>> layer_activation_bytes(r) == 2048 * 4 * 6144 * 34 // 8
True
>>> parameters_optimizer(r) == 18 * 12 * 48 * 6144**2 // 8
True

Conventions (the paper's, sections 4 and 5, Table 2): activations per layer and microbatch
are what the backward pass keeps (``symroof.models.memory.activation_bytes``); without sequence
parallelism the tensors before the first and after the last matmul of each block (layer
norms, their inputs, dropout masks: 10 s b h bytes) are whole on every tensor-parallel rank
and the rest is split, s b h (10 + 24/t + 5 a s/(h t)); sequence parallelism splits all of
it, s b h (34 + 5 a s/h)/t; selective recomputation drops the 5 a s^2 b attention-core
bytes; full recomputation keeps each layer's input, 2 s b h. The first pipeline stage holds
L layers' worth under 1F1B, times 1 + (p - 1)/(p v) with v model chunks per GPU
(interleaving; the paper's m, section 4.2.3). Parameters and optimizer state are 18 bytes
per parameter (fp16 weights, fp32 gradients, fp32 master weights and two moments) over the
layers' weight matrices, 12 h^2 per layer: the convention the bars of the paper's Figure 1
follow (its text states no bytes per parameter; 18 x 12 h^2 L/(t p) is each bar to the
byte). ``exact`` counts the stage's biases, norms and embeddings too.

An iteration is (m + (p - 1)/v) microbatch slots, each the serial sum of its op classes
(Megatron-LM runs tensor-parallel collectives and pipeline sends between its kernels, not
under them), then the optimizer step: matmul FLOPs (``compute``), the fused elementwise
kernels' HBM traffic (``hbm``, table ``ELEMENTWISE``), tensor-parallel collectives
(``nvlink``) and pipeline sends (``ib``).

The generic plan (``symroof.plans.training``) times the same run stated as a mesh and a
strategy (``Run.as_plan``). The two agree on the FLOPs, the activations (for m >= p; the
generic 1F1B keeps min(p, m) microbatches in flight), the compute term, the schedule (m +
p - 1 slots without interleaving) and the tensor-parallel collectives of a layer (taken
from the generic plan's template), and differ by named terms only
(``tests/test_megatron_generic.py``): HBM (the generic plan counts every op's traffic, the
backward twice the forward, no rerun; here only the fused elementwise kernels, the matmuls'
operands taken to stream under their FLOPs, with recomputation's reruns); the tensor
collectives Megatron-LM adds (here the backward's AllGather of each column-parallel input
again under sequence parallelism and full recomputation's rerun of the forward's) and the
output head's (there); the pipeline sends (here split over the tensor ranks, Megatron-LM's
scatter/gather; there only with sequence parallelism); the optimizer step (here only); the
parameters (there the layer norms whole on each tensor rank, the final norm on each stage
and the learned positions split; here the reverse); and T_lower (there each phase's terms
overlap, here each slot's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..models.config import ModelConfig
from ..models.counts import params, training_flops_per_token
from ..models.memory import OPTIMIZERS, activation_bytes
from ..parallel.collectives import collective
from ..parallel.mesh import mesh
from .efficiency import PEAK, Efficiency
from .pipeline import interleaved_cost

# mode -> (recomputation, sequence parallel)
MODES: dict[str, tuple[str, bool]] = {
    "none": ("none", False), "sequence": ("none", True), "selective": ("selective", False),
    "sequence+selective": ("selective", True), "full": ("full", False),
    "sequence+full": ("full", True),
}
BYTES_PER_PARAM = sum(OPTIMIZERS["adam-megatron"][:3])  # 18
OPTIMIZER_STEP_BYTES = 30  # Adam reads 16 (gradient, master, 2 moments), writes 14
CONVENTIONS = ("megatron", "exact")

# Megatron-LM's fused elementwise kernels of a GPT layer, forward, in bytes per token over
# D (hidden), F (MLP width) and NT (heads x sequence): each reads its fp16 inputs and writes
# its outputs (a dropout mask is 1 byte per element). "sp": whole on every tensor-parallel
# rank unless sequence parallel; "tp": always split; "core": the attention core, rerun by
# selective recomputation.
ELEMENTWISE: tuple[tuple[str, str, int, str], ...] = (
    ("attention layer norm", "D", 4, "sp"),       # read x, write y
    ("scale, mask, softmax", "NT", 4, "core"),    # read scores, write probabilities
    ("attention dropout", "NT", 5, "core"),       # read, write, mask
    ("bias, dropout, add (attention)", "D", 7, "sp"),  # read out and residual, write, mask
    ("MLP layer norm", "D", 4, "sp"),
    ("bias, GeLU", "F", 4, "tp"),                 # read, write
    ("bias, dropout, add (MLP)", "D", 7, "sp"),
)
HDR_PER_GPU = sp.Integer(25 * 10**9)  # one 200 Gb/s HDR InfiniBand adapter per GPU, one way
BACKWARD_TRAFFIC = 2  # the backward of an elementwise kernel moves twice its forward bytes


@dataclass(frozen=True)
class Run:
    """One Megatron-LM training configuration: ``tensor`` x ``pipeline`` x ``data`` GPUs,
    ``global_batch`` sequences of ``sequence`` tokens in microbatches of ``micro_batch``,
    ``interleave`` model chunks per GPU, recomputation ``mode`` (a key of ``MODES``)."""

    cfg: ModelConfig
    tensor: int
    pipeline: int
    global_batch: int
    micro_batch: int
    sequence: int
    mode: str
    data: int = 1
    interleave: int = 1
    chip: str = "a100-80gb"
    ib_per_gpu: Expr = HDR_PER_GPU
    name: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(f"unknown mode {self.mode!r} (known: {', '.join(MODES)})",
                             self.name or self.cfg.name)
        if self.global_batch % (self.micro_batch * self.data):
            raise InputError(f"global batch {self.global_batch} does not split into "
                             f"{self.data} replicas x microbatches of {self.micro_batch}",
                             self.name or self.cfg.name)
        if self.cfg.layers % (self.pipeline * self.interleave):
            raise InputError(f"{self.cfg.layers} layers do not split into {self.pipeline} "
                             f"stages x {self.interleave} chunks", self.name or self.cfg.name)

    @property
    def recompute(self) -> str:
        return MODES[self.mode][0]

    @property
    def sequence_parallel(self) -> bool:
        return MODES[self.mode][1]

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.data)

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data

    def as_plan(self) -> tuple[str, str, int]:
        """The run as ``symroof plan`` states it: mesh, strategy and microbatches per
        replica, the data, pipeline and tensor axes in that order (the last in the NVLink
        domain). Its ``interleave`` is the generic plan's too (``train(..., interleave=)``).

        >>> from symroof.models import model
        >>> Run(model("megatron-gpt-22b"), 8, 2, 8, 1, 2048, "sequence+selective").as_plan()
        ('X=2,Y=8', 'pp=X,tp=Y,sp', 8)
        """
        sizes = [(k, n) for k, n in (("dp", self.data), ("pp", self.pipeline),
                                     ("tp", self.tensor)) if n > 1] or [("dp", 1)]
        names = "XYZ"
        spec = ",".join(f"{names[i]}={n}" for i, (_, n) in enumerate(sizes))
        strategy = ",".join(f"{k}={names[i]}" for i, (k, _) in enumerate(sizes))
        if self.sequence_parallel and self.tensor > 1:
            strategy += ",sp"
        return spec, strategy, self.microbatches


def layer_activation_bytes(run: Run) -> Expr:
    """Bytes one layer keeps for the backward pass of one microbatch on one GPU."""
    cfg, t = run.cfg, sp.Integer(run.tensor)
    numeric = activation_bytes(cfg, run.recompute, context=run.sequence)
    symbolic = activation_bytes(cfg, run.recompute, context=run.sequence, symbolic=True)
    d = sp.Symbol("D", positive=True)
    total = sp.S.Zero
    for name, value in numeric.dense.items():
        whole = symbolic.dense[name].free_symbols <= {d} and not run.sequence_parallel
        total += value / (1 if whole else t)
    return sp.nsimplify(total * run.micro_batch * run.sequence)


def interleave_factor(run: Run) -> Expr:
    """The first stage's activations over L layers' worth: 1 + (p - 1)/(p v) when the
    schedule is interleaved (v > 1), else 1 (section 4.2.3)."""
    p, v = sp.Integer(run.pipeline), sp.Integer(run.interleave)
    return sp.S.One if v == 1 or p == 1 else 1 + (p - 1) / (p * v)


def activations(run: Run) -> Expr:
    """Activation bytes on the first pipeline stage (the most)."""
    return run.cfg.layers * layer_activation_bytes(run) * interleave_factor(run)


def stage_parameters(run: Run, convention: str = "megatron") -> Expr:
    """Parameters on the first stage's GPU: the layers' weight matrices (``megatron``) or
    every parameter of its layers plus the embeddings it holds (``exact``)."""
    if convention not in CONVENTIONS:
        raise InputError(f"unknown convention {convention!r} (known: {', '.join(CONVENTIONS)})")
    s = run.cfg.sizes(False)
    D, N, K, H, F, L = s["D"], s["N"], s["K"], s["H"], s["F"], s["L"]
    mlp = (3 if run.cfg.mlp == "gated" else 2) * D * F
    matrices = D * (N + 2 * K) * H + N * H * D + mlp
    t, p = run.tensor, run.pipeline
    if convention == "megatron":
        return sp.Integer(L * matrices) / (t * p)
    every = params(run.cfg)
    per_layer = sp.Integer(every.non_embedding - s["D"] * (2 if run.cfg.norm == "layernorm"
                                                             else 1)) / L
    positions = s["P"] * D if run.cfg.positions == "learned" else 0
    return sp.Rational(L, p) * per_layer / t + sp.Integer(s["V"] * D) / t + positions


def parameters_optimizer(run: Run, convention: str = "megatron") -> Expr:
    """Bytes of weights, gradients and optimizer state per GPU, 18 per parameter."""
    return BYTES_PER_PARAM * stage_parameters(run, convention)


@dataclass(frozen=True)
class Term:
    """One op class of a microbatch slot (or of the optimizer step): its quantity (FLOPs or
    bytes) and time at the resource's peak."""

    name: str
    resource: str
    quantity: Expr
    time: Expr


@dataclass(frozen=True)
class Iteration:
    """An iteration's terms and times; ``slots`` = m + (p - 1)/v."""

    run: Run
    per_microbatch: tuple[Term, ...]
    after: tuple[Term, ...]
    slots: Expr

    def time(self, efficiency: Efficiency = PEAK) -> Expr:
        """Serial: every term of a slot one after another, then the optimizer step, each
        at its resource's fraction of peak."""
        slot = sp.Add(*(x.time / efficiency.of(x.resource) for x in self.per_microbatch))
        return self.slots * slot + sp.Add(*(x.time / efficiency.of(x.resource)
                                            for x in self.after))

    @property
    def t_lower(self) -> Expr:
        """At peak with perfect overlap inside a slot: the slowest term per slot."""
        return self.slots * sp.Max(*(x.time for x in self.per_microbatch)) + sp.Add(
            *(x.time for x in self.after))

    @property
    def t_upper(self) -> Expr:
        return self.time(PEAK)

    def by_resource(self, efficiency: Efficiency = PEAK) -> dict[str, Expr]:
        """Each resource's share of the iteration's time."""
        out: dict[str, Expr] = {}
        for x in self.per_microbatch:
            out[x.resource] = out.get(x.resource, 0) + self.slots * x.time / efficiency.of(
                x.resource)
        for x in self.after:
            out[x.resource] = out.get(x.resource, 0) + x.time / efficiency.of(x.resource)
        return out


def _elementwise_bytes(run: Run) -> Expr:
    s = run.cfg.sizes(False)
    size = {"D": s["D"], "F": s["F"], "NT": s["N"] * run.sequence}
    t = run.tensor
    passes = 1 + BACKWARD_TRAFFIC + (1 if run.recompute == "full" else 0)
    total = sp.S.Zero
    for _, dim, per, split in ELEMENTWISE:
        whole = split == "sp" and not run.sequence_parallel
        each = sp.Integer(per * size[dim]) / (1 if whole else t)
        again = 1 if (run.recompute == "selective" and split == "core") else 0
        total += each * (passes + again)
    return total * run.micro_batch * run.sequence


def tensor_collectives(run: Run) -> tuple[tuple[str, int], ...]:
    """Collectives per layer and microbatch on the tensor axis, each of one s b h array: the
    generic plan's (``symroof.plans.template``: Megatron's split of each matmul, an AllReduce
    after each row-parallel matmul forward and each column-parallel matmul's input gradient
    backward; with sequence parallelism an AllGather and a ReduceScatter in their place),
    plus Megatron-LM's own: with sequence parallelism the backward gathers each
    column-parallel input again (only its sequence shard is kept for the weight gradient,
    section 4.2.2); full recomputation reruns the forward's."""
    from .template import training_template
    t = training_template(run.cfg, context=run.sequence, kinds=("tp",),
                          sequence_parallel=run.sequence_parallel)
    layer = [u for u in t.uses if u.kind == "tp" and u.scope == "layer"]
    forward = [u for u in layer if u.phase == "forward"]
    regather = [u for u in forward if run.sequence_parallel and u.collective == "allgather"]
    rerun = forward if run.recompute == "full" else []
    counts: dict[str, int] = {}
    for u in (*layer, *regather, *rerun):
        counts[u.collective] = counts.get(u.collective, 0) + int(u.per_layer)
    return tuple(counts.items())


def iteration(run: Run) -> Iteration:
    """The terms of one iteration of ``run`` on its chip, exact."""
    from ..hardware.catalog import chip as chip_of
    c = chip_of(run.chip)
    peak, hbm = c.peak("fp16"), c.bandwidth("hbm")
    tokens = run.micro_batch * run.sequence
    n_model = run.tensor * run.pipeline
    flops = tokens * training_flops_per_token(run.cfg, run.sequence,
                                              recompute=run.recompute) / n_model
    layers = sp.Rational(run.cfg.layers, run.pipeline)
    terms = [Term("matmul", "compute", flops, flops / peak)]
    moved = layers * _elementwise_bytes(run)
    terms.append(Term("elementwise kernels", "hbm", moved, moved / hbm))
    if run.tensor > 1:
        m = mesh(f"X={run.tensor}", run.chip)
        array = 2 * tokens * run.cfg.d_model  # fp16 [s, b, h]
        for kind, count in tensor_collectives(run):
            each = collective(kind, array, ["X"], m).bandwidth_time
            terms.append(Term(f"tensor {kind}", "nvlink", layers * count * array,
                              layers * count * each))
    if run.pipeline > 1:
        sent = 2 * run.interleave * sp.Integer(2 * tokens * run.cfg.d_model) / run.tensor
        terms.append(Term("pipeline sends", "ib", sent, sent / run.ib_per_gpu))
    tf, tb = sp.symbols("t_f t_b", positive=True)
    cost = interleaved_cost(run.pipeline, run.microbatches, run.interleave, tf, tb)
    slots = sp.cancel(cost.makespan / (tf + tb))  # m + (p - 1)/v
    state = OPTIMIZER_STEP_BYTES * stage_parameters(run, "exact")
    after = (Term("optimizer step", "hbm", state, state / hbm),)
    return Iteration(run, tuple(terms), after, slots)


def fit_fraction(run: Run, published: Expr, resource: str,
                 efficiency: Efficiency) -> Expr:
    """The fraction of ``resource``'s peak at which ``run`` takes ``published`` seconds, the
    other resources at ``efficiency``: the time is a + b/f in it, so f = b/(published - a)."""
    it = iteration(run)
    f = sp.Symbol("f", positive=True)
    fractions: Mapping[str, Expr] = {**efficiency.fractions, resource: f}
    time = sp.expand(it.time(Efficiency(dict(fractions))) * f)
    a, b = time.coeff(f, 1), time.coeff(f, 0)
    gap = sp.nsimplify(published) - a
    if gap <= 0:
        raise InputError(f"{run.name or run.cfg.name}: the other terms alone take "
                         f"{float(a):.4g} s, not under the published {published} s")
    return sp.nsimplify(b / gap)
