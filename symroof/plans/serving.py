"""Serving a model on a mesh: prefill and decode steps, latency and throughput against
batch and context, the batch at which decode turns compute-bound, the fewest chips for a
latency target and the prefill:decode balance.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.strategy import parse_strategy
>>> s = serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy("tp=X"),
...           batch=64, context=2048)
>>> s.decode.bound, s.decode.terms["tp over X (nvlink)"].time > 0
('hbm', True)

A step runs its layers' forward ops (``symroof.models.layers``, decode: one new token per
sequence over the KV cache; prefill: the whole prompt) split over the mesh: the weights and
heads over the tensor axes (Megatron, so two AllReduces per layer), the layers over the
pipeline stages (a token crosses every stage, so latency adds the stages; pp batches in
flight give the throughput), the sequences over the data axes. Every term overlaps the
others in T_lower, none does in T_upper; the latency of a step is its T_lower.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.parse import symbol
from ..models.config import ModelConfig
from ..models.counts import kv_bytes_per_token
from ..models.layers import layer_ops
from ..parallel.collectives import collective
from ..parallel.mesh import Mesh, mesh
from .efficiency import PEAK, Efficiency
from .strategy import Strategy, parse_strategy
from .template import BATCH, DEGREE, MICRO, training_template
from .training import Term, axes_for, check_degrees, degrees_of

SERVING = ("dp", "tp", "pp", "ep")
B_SYM = symbol("B")
T_SYM = symbol("T")
MAX_BATCH = 1 << 20


@dataclass(frozen=True)
class Phase:
    """One serving step (prefill or decode) per device: terms, bounds, and the tokens it
    produces."""

    name: str
    terms: Mapping[str, Term]
    t_lower: Expr
    t_upper: Expr
    bound: str
    tokens: Expr
    latency: Expr
    throughput: Expr


@dataclass(frozen=True)
class Serving:
    """A serving plan: memory per device, the two steps, and what follows from them."""

    model: str
    chip: str
    mesh: str
    strategy: str
    devices: int
    batch: Expr
    context: Expr
    memory: Mapping[str, Expr]
    capacity: Expr
    prefill: Phase
    decode: Phase
    critical_batch: Expr | None
    critical_integer: int | None
    critical_note: str
    balance: Expr
    generate: int
    assumptions: tuple[str, ...]
    latency_of: Expr = sp.S.Zero
    grid: tuple[tuple[int, int, Expr, Expr, bool], ...] = ()

    @property
    def fits(self) -> bool:
        return bool(self.memory["total"] <= self.capacity)


def serve(cfg: ModelConfig, m: Mesh, strategy: Strategy, *, batch: int, context: int,
          generate: int = 256, efficiency: Efficiency = PEAK) -> Serving:
    """Prefill and decode of ``batch`` sequences of ``context`` tokens on mesh ``m``."""
    strategy.check_mesh(m.axes)
    bad = [k for k in strategy.kinds if k not in SERVING]
    if bad:
        raise InputError(f"{bad[0]} shards training state; a serving plan takes "
                         f"{', '.join(SERVING)}", "--strategy")
    if strategy.sequence_parallel:
        raise InputError("sequence parallelism is a training strategy here; drop ',sp'",
                         "--strategy")
    deg = degrees_of(strategy, m)
    check_degrees(cfg, deg)
    replicas = deg[DEGREE["dp"]] * deg[DEGREE["ep"]]
    if batch % replicas:
        raise InputError(f"a batch of {batch} sequences does not split into {replicas} "
                         f"replicas", "--batch")
    b = B_SYM / replicas
    kinds = tuple(k for k in ("tp", "pp", "ep") if k in strategy.kinds)
    steps = {}
    templates = {}
    notes: set[str] = set()
    for phase in ("prefill", "decode"):  # symbolic in the batch B and the context T
        ops = layer_ops(cfg, phase, batch=BATCH, context=T_SYM)
        templates[phase] = training_template(cfg, context=T_SYM, kinds=kinds, step=ops)
        steps[phase] = _phase(phase, templates[phase], ops, m, strategy, deg, b, efficiency,
                              notes)
    pp = deg[DEGREE["pp"]]
    tp = deg[DEGREE["tp"]]
    kv_split = sp.Min(tp, cfg.kv_heads) * pp
    weights = sp.expand(templates["decode"].params_device.subs(deg) * 2)
    memory = {"weights": weights, "gradients": sp.S.Zero, "optimizer": sp.S.Zero,
              "activations": sp.S.Zero,
              "kv_cache": sp.expand(b * T_SYM * kv_bytes_per_token(cfg) / kv_split)}
    memory["total"] = sp.Add(*memory.values())
    at_context = {T_SYM: sp.Integer(context)}
    crit, integer, note = _critical(_at(steps["decode"], at_context, bound=False))
    at = {B_SYM: sp.Integer(batch), T_SYM: sp.Integer(context)}
    fixed = {k: _at(v, at) for k, v in steps.items()}
    decode, prefill = fixed["decode"], fixed["prefill"]
    balance = sp.nsimplify(prefill.latency / (generate * decode.latency)) \
        if decode.latency.is_number else prefill.latency / (generate * decode.latency)
    grid = _grid(steps["decode"], memory["total"], m.chip.capacity("hbm"), int(m.devices),
                 batch, context)
    memory = {k: v.subs(at) for k, v in memory.items()}
    assumptions = (
        "weights bf16; KV cache bf16, split over min(tp, KV heads) and the stages",
        "each term overlaps the others in T_lower (the latency), none does in T_upper",
        "a pipeline's stages run one after another for a token; pp batches in flight",
        f"efficiency: {efficiency.describe()}", *sorted(notes), *m.assumptions)
    return Serving(cfg.name, m.chip.name, m.spec, str(strategy), int(m.devices),
                   sp.Integer(batch), sp.Integer(context), memory, m.chip.capacity("hbm"),
                   prefill, decode, crit, integer, note, balance, generate, assumptions,
                   steps["decode"].latency, grid)


def _phase(name: str, t: object, ops: object, m: Mesh, strategy: Strategy,
           deg: dict[sp.Symbol, Expr], b: Expr, eff: Efficiency, notes: set[str]) -> Phase:
    from .template import Template
    assert isinstance(t, Template)
    split = deg[DEGREE["tp"]] * deg[DEGREE["pp"]]
    total = t.step.total()
    rate = m.chip.peak("bf16") * eff.of("compute")
    terms = {"compute": Term("compute", {"forward": total.flops.subs(BATCH, b) / split / rate}),
             "hbm": Term("hbm", {"forward": total.bytes().subs(BATCH, b) / split /
                                 (m.chip.bandwidth("hbm") * eff.of("hbm"))})}
    for u in t.uses:
        if u.phase != "forward":
            continue
        axes = axes_for(strategy, u.kind)
        if not axes:
            continue
        nbytes = sp.expand(u.nbytes.subs(BATCH, b).subs(deg))
        count = sp.sympify(u.per_step).subs(deg).subs(MICRO, 1)
        coll = collective(u.collective, nbytes, list(axes), m)
        links = sorted(coll.bandwidths())
        label = f"{u.kind} over {'+'.join(axes)} ({', '.join(links)})"
        lat = coll.latency_time
        unknown = {s for s in lat.free_symbols if s.name.startswith("alpha_")}
        notes.update(f"{s}: a per-hop latency no source gives, taken as 0" for s in unknown)
        f = min((eff.of(x) for x in (*links, u.kind)), default=sp.S.One)
        time = count * (coll.bandwidth_time / f + lat.subs({s: 0 for s in unknown}))
        old = terms.get(label)
        terms[label] = Term(label, {"forward": (old.time if old else 0) + time})
    stage_lower = sp.Max(*(x.time for x in terms.values()), evaluate=False)
    stage_upper = sp.Add(*(x.time for x in terms.values()))
    pp = deg[DEGREE["pp"]]
    tokens = b * (t.context if name == "prefill" else 1) * deg[DEGREE["dp"]] * deg[DEGREE["ep"]]
    latency = pp * stage_lower
    return Phase(name, terms, latency, pp * stage_upper, "undetermined", tokens, latency,
                 tokens / stage_lower)


def _at(p: Phase, at: Mapping[sp.Symbol, Expr], bound: bool = True) -> Phase:
    terms = {k: Term(x.name, {ph: v.subs(at) for ph, v in x.phases.items()}, x.detail)
             for k, x in p.terms.items()}
    times = {k: x.time for k, x in terms.items()}
    binding = max(times, key=lambda k: (times[k], k == "compute")) \
        if bound and all(v.is_number for v in times.values()) else "undetermined"
    return Phase(p.name, terms, p.t_lower.subs(at), p.t_upper.subs(at), binding,
                 p.tokens.subs(at), p.latency.subs(at), p.throughput.subs(at))


def _grid(decode: Phase, memory: Expr, capacity: Expr, devices: int, batch: int,
          context: int) -> tuple[tuple[int, int, Expr, Expr, bool], ...]:
    """Decode latency and throughput per chip at batches 1 to 16x ``batch`` (by 4) and at
    a quarter, once and 4x ``context``: the symbolic step evaluated, not rebuilt."""
    rows = []
    for t in sorted({max(1, context // 4), context, 4 * context}):
        for bb in sorted({1, *(batch * 4**k for k in range(-2, 3) if batch * 4**k >= 1)}):
            at = {B_SYM: sp.Integer(int(bb)), T_SYM: sp.Integer(t)}
            latency = decode.latency.subs(at)
            rows.append((int(bb), t, latency, decode.throughput.subs(at) / devices,
                         bool(memory.subs(at) <= capacity)))
    return tuple(rows)


def _critical(decode: Phase) -> tuple[Expr | None, int | None, str]:
    """The decode batch above which compute outlasts every other term: solved exactly when
    every term is linear in B, else the first whole batch found by bisection."""
    comp = decode.terms["compute"].time
    others = [x.time for k, x in decode.terms.items() if k != "compute"]
    linear = all(sp.diff(e, B_SYM, 2) == 0 for e in (comp, *others))
    if linear:
        best: Expr | None = None
        for e in others:
            c, beta, alpha = sp.diff(comp, B_SYM), sp.diff(e, B_SYM), e.subs(B_SYM, 0)
            if c <= beta:
                name = next(k for k, x in decode.terms.items() if x.time == e)
                return None, None, (f"decode never turns compute-bound: {name} grows with "
                                    "the batch as fast as compute does")
            if alpha == 0:
                continue
            x = sp.nsimplify(alpha / (c - beta))
            best = x if best is None else sp.Max(best, x)
        if best is None:
            return None, 1, ""
        return best, int(sp.floor(best)) + 1, ""
    gap = sp.lambdify(B_SYM, comp - sp.Max(*others), "numpy")
    hi = 1
    while gap(float(hi)) < 0:
        hi *= 2
        if hi > MAX_BATCH:
            return None, None, f"not compute-bound at any batch up to {MAX_BATCH}"
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if gap(float(mid)) >= 0 else (mid, hi)
    return None, hi, "no closed form (routed experts touched grow nonlinearly in B)"


def fewest_chips(cfg: ModelConfig, chip_name: object, *, batch: int, context: int,
                 target: Expr, limit: int = 1024) -> tuple[int | None, str]:
    """The fewest chips, tensor-parallel over one axis of the chip's fastest network, whose
    decode step meets ``target`` seconds and whose memory holds weights and KV cache."""
    n = 1
    tried = []
    while n <= limit:
        try:
            m = mesh(f"X={n}", chip_name)  # type: ignore[arg-type]
        except InputError:
            break
        if cfg.heads % n == 0:
            s = serve(cfg, m, parse_strategy("tp=X"), batch=batch, context=context)
            tried.append((n, float(s.decode.latency), s.fits))
            if s.fits and s.decode.latency <= target:
                return n, f"tp={n}: decode step {float(s.decode.latency):.4g} s"
        n *= 2
    shown = ", ".join(f"{k} chips {t:.3g} s{'' if f else ' (does not fit)'}"
                      for k, t, f in tried)
    return None, f"no tensor-parallel mesh meets it ({shown})"
