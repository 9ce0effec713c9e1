"""The serving search: tensor and pipeline sizes x batch x aggregated (in-flight batching) or
disaggregated (prefill and decode pools) serving on a number of chips, under a time-to-first-
token and a time-per-output-token limit; the best plan by output tokens/s per chip and the
frontier of tokens/s per chip against tokens/s per user.

>>> from symroof.hardware.catalog import chip
>>> from symroof.models import model
>>> s = search_serving(model("llama-2-7b"), chip("h100-sxm"), 2, ttft=1.0, tpot=0.02,
...                    context=1024, generate=128)
>>> s.best is not None and s.best.ttft <= 1.0 and s.best.tpot <= 0.02
True
>>> s.searched, s.shapes   # 512 batches: 3 shapes, 1 pair of pools x 4 prompt batches
(3584, ('tp=1', 'tp=1,pp=2', 'tp=2'))

Each worker shape (tp, pp, and ep for a mixture of experts) is built once as the one device
step (``device_step``) of a hybrid batch at the prompt's context T, P prompts prefilled
beside one decode token of each of D sequences (the weights read once for both), with P
and D symbols, and compiled with ``lambdify`` to NumPy over the batches: h(0, D) is the
decode step and h(P, 0) the prefill ``plan --serve`` times (a law checks both), the
catalogue's link latencies counted. A request has ``context`` prompt tokens and generates
``generate``; a decode step is timed at the prompt's context, as ``plan --serve`` times it;
a worker holds its sequences' KV cache at context + generate positions.

- Aggregated (in-flight batching with piggybacked prefill, TensorRT-LLM's and vLLM's
  default): each of N / (tp pp ep) workers runs B sequences; each iteration decodes a token of
  each and prefills the B / generate prompts that replace the finished ones in the same
  step: TPOT = h(B / generate, B); a new prompt's prefill rides one iteration: TTFT =
  h(1, B); tokens/s = B / its period per worker (pp batches in flight: the slowest
  stage's time and send, ``DeviceStep.period``; TPOT / pp when the stages are alike, TPOT
  without a pipeline).
- Disaggregated (DistServe, Splitwise): x prefill workers run batches of b prompts, y decode
  workers B sequences, x s_p + y s_d <= N chips; TTFT = h(b, 0) plus the KV cache's transfer
  to the decode pool over the chips' link (b T KV bytes over min(tp_p, tp_d) chips' links, one
  hop); TPOT = h(0, B); the pools' rates meet at min(x b / period(b, 0), y B /
  (period(0, B) generate)) requests per second (each period a pipeline's slowest stage's,
  h itself without one).

Tokens/s per chip counts the chips a plan uses; tokens/s per user is 1 / TPOT.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.parse import symbol
from ..core.printer import si
from ..core.quant import rest_dtype
from ..engine.sweeps import to_numpy
from ..hardware.catalog import Chip
from ..models.config import ModelConfig
from ..models.counts import kv_bytes_per_token
from ..models.tensor_parallel import shard
from ..parallel.mesh import Mesh, mesh
from .device_step import device_step
from .efficiency import PEAK, Efficiency
from .options import StepOptions
from .serving import device_memory

#: the batches a worker is tried at (sequences; a decode worker's, per stage)
BATCHES = tuple(range(1, 513))
#: the prompts a prefill worker batches
PREFILL_BATCHES = (1, 2, 4, 8)
MODES = ("aggregated", "disaggregated")


@dataclass(frozen=True)
class Shape:
    """A worker: tensor size ``tp`` x pipeline size ``pp`` x expert size ``ep`` chips; its
    compiled step: ``step`` the hybrid step of P prompts' prefill beside D sequences'
    decode (``h(P, D)``), and ``memory`` per device at B sequences per stage."""

    tp: int
    pp: int
    step: Expr
    memory: Expr
    h: Callable[..., Any] = field(compare=False, repr=False)
    mem: Callable[..., Any] = field(compare=False, repr=False)
    ep: int = 1
    #: with a pipeline, the step's period (its slowest stage's: ``DeviceStep.period``)
    slow: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.ep

    @property
    def name(self) -> str:
        return (f"tp={self.tp}" + (f",pp={self.pp}" if self.pp > 1 else "")
                + (f",ep={self.ep}" if self.ep > 1 else ""))

    def d(self, batch: Any) -> Any:
        """The decode step of ``batch`` sequences: h(0, B)."""
        return self.h(0.0, batch)

    def p(self, batch: Any) -> Any:
        """The prefill step of ``batch`` prompts: h(B, 0)."""
        return self.h(batch, 0.0)

    def period(self, prompts: Any, sequences: Any) -> Any:
        """The time between two batches' steps with pp batches in flight: the slowest
        stage's period (its time and its send), h itself without a pipeline."""
        if self.slow is None:
            return self.h(prompts, sequences)
        return self.slow(prompts, sequences)


@dataclass(frozen=True)
class ServingPlan:
    """One configuration: ``mode``, the decode workers (shape, count, batch), for
    disaggregated serving the prefill workers too, and what it achieves."""

    mode: str
    decode: tuple[str, int, int]  # shape, workers, batch per worker
    prefill: tuple[str, int, int] | None  # shape, workers, prompts per batch
    chips: int
    ttft: float
    tpot: float
    tokens_per_s_per_chip: float
    tokens_per_s_per_user: float

    def describe(self) -> str:
        (ds, dn, db) = self.decode
        if self.prefill is None:
            return f"aggregated: {dn} x ({ds}), batch {db}"
        (ps, pn, pb) = self.prefill
        return (f"disaggregated: prefill {pn} x ({ps}), {pb} prompt{'s' if pb > 1 else ''} a "
                f"batch; decode {dn} x ({ds}), batch {db}")

    def to_json(self) -> dict[str, Any]:
        def pool(p: tuple[str, int, int] | None, what: str) -> dict[str, Any] | None:
            return None if p is None else {"shape": p[0], "workers": p[1], what: p[2]}
        return {"mode": self.mode, "decode_pool": pool(self.decode, "batch"),
                "prefill_pool": pool(self.prefill, "prompts_per_batch"), "chips": self.chips,
                "ttft_value": self.ttft, "tpot_value": self.tpot,
                "tokens_per_s_per_chip_value": self.tokens_per_s_per_chip,
                "tokens_per_s_per_user_value": self.tokens_per_s_per_user}


@dataclass(frozen=True)
class ServingSearch:
    """What the search tried and found: the best plan (``None`` when no plan meets the
    limits, ``why`` then says which limit and by how much), the frontier, the assumptions."""

    model: str
    chip: str
    chips: int
    context: int
    generate: int
    ttft_limit: float
    tpot_limit: float
    shapes: tuple[str, ...]
    searched: int
    feasible: int
    best: ServingPlan | None
    best_aggregated: ServingPlan | None
    best_disaggregated: ServingPlan | None
    frontier: tuple[ServingPlan, ...]
    why: str
    assumptions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        def one(p: ServingPlan | None) -> dict[str, Any] | None:
            return None if p is None else p.to_json()
        return {"model": self.model, "chip": self.chip, "chips": self.chips,
                "context": self.context, "generate": self.generate,
                "ttft_limit_value": self.ttft_limit, "tpot_limit_value": self.tpot_limit,
                "shapes": list(self.shapes), "searched": self.searched,
                "feasible": self.feasible, "best": one(self.best),
                "best_aggregated": one(self.best_aggregated),
                "best_disaggregated": one(self.best_disaggregated),
                "frontier": [p.to_json() for p in self.frontier],
                "why": self.why or None, "assumptions": list(self.assumptions)}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _touched(E: Any, k: Any, M: Any) -> Any:
    """``models.layers.Touched`` over NumPy arrays: E (1 - (1 - k/E)^M), E past M k > 64 E."""
    return np.where(M * k > 64 * E, E, E * (1 - (1 - k / E) ** M))


#: what the compiled steps call beside NumPy: the experts a batch touches
NUMERIC: dict[str, Any] = {"Touched": _touched}


def worker_mesh(the_chip: Chip, tp: int, pp: int,
                ep: int = 1) -> tuple[Mesh, dict[str, tuple[str, ...]]]:
    """The mesh of one worker and its axes: tp over ``X``, pp over ``P``, ep over ``E``."""
    parts = [*([f"P={pp}"] if pp > 1 else []), *([f"E={ep}"] if ep > 1 else []), f"X={tp}"]
    axes: dict[str, tuple[str, ...]] = {}
    if tp > 1:
        axes["tp"] = ("X",)
    if pp > 1:
        axes["pp"] = ("P",)
    if ep > 1:
        axes["ep"] = ("E",)
    return mesh(",".join(parts), the_chip), axes


def compile_shape(cfg: ModelConfig, the_chip: Chip, tp: int, pp: int, *, context: int,
                  end: int, dtype: str, kv_dtype: str,
                  efficiency: Efficiency = PEAK, ep: int = 1) -> Shape:
    """A (tp, pp) worker's step at ``context``: P prompts prefilled beside one decode token
    of each of D sequences (Sarathi-Serve's hybrid batch: the weights read once), and its
    memory per device at B sequences (per stage) of ``end`` positions, compiled to NumPy.
    At D = 0 the step is the prefill, at P = 0 the decode step ``plan --serve`` times."""
    m, axes = worker_mesh(the_chip, tp, pp, ep)
    P, D, B = symbol("P"), symbol("D"), symbol("B")
    built = device_step(cfg, "prefill", m, axes, batch=P, context=context,
                        decoding=(D, context),
                        options=StepOptions(dtype=dtype, kv_dtype=kv_dtype,
                                            efficiency=efficiency))
    step = built.latency
    memory = device_memory(cfg, tp, pp, ep, batch=B * pp / ep, context=sp.Integer(end),
                           dtype=dtype, kv_dtype=kv_dtype)["total"]
    slow = to_numpy((P, D), built.period, NUMERIC) if built.stages else None
    return Shape(tp, pp, step, memory, to_numpy((P, D), step, NUMERIC),
                 to_numpy(B, memory, NUMERIC), ep, slow)


def shapes_for(cfg: ModelConfig, the_chip: Chip, chips: int, *, context: int, end: int,
               dtype: str, kv_dtype: str, efficiency: Efficiency = PEAK) -> list[Shape]:
    """Every worker shape of at most ``chips`` chips the model splits over: tp within one
    host (the chips' fast link), the layers over pp stages, a mixture's routed experts over
    ep ranks (each with its share of the batch, the experts' tokens all-to-all)."""
    host = int(sp.Mul(*the_chip.topology().host)) if the_chip.topologies else chips
    out = []
    eps = _divisors(chips) if cfg.moe is not None else [1]
    for tp, pp, ep in itertools.product(_divisors(chips), _divisors(chips), eps):
        size = tp * pp * ep
        if size > chips or tp > host or chips % size:
            continue
        try:
            shard(cfg, tp, pp=pp, ep=ep)
            out.append(compile_shape(cfg, the_chip, tp, pp, context=context, end=end,
                                     dtype=dtype, kv_dtype=kv_dtype, efficiency=efficiency,
                                     ep=ep))
        except InputError:
            continue  # heads, KV heads, vocabulary or layers do not split
    return out


def search_serving(cfg: ModelConfig, the_chip: Chip, chips: int, *, ttft: float, tpot: float,
                   context: int, generate: int, dtype: str = "bf16",
                   kv_dtype: str | None = None, efficiency: Efficiency = PEAK,
                   shapes: Sequence[Shape] | None = None) -> ServingSearch:
    """The best serving plan of ``cfg`` on ``chips`` chips under the limits (seconds)."""
    if not chips > 0:
        raise InputError(f"a search needs a positive number of chips, got {chips}", "search")
    for name, value in (("ttft", ttft), ("tpot", tpot)):
        if not value > 0:
            raise InputError(f"a limit must be a positive time, got {value}", name)
    kv = kv_dtype or rest_dtype(dtype)
    found = list(shapes) if shapes is not None else shapes_for(
        cfg, the_chip, chips, context=context, end=context + generate, dtype=dtype,
        kv_dtype=kv, efficiency=efficiency)
    if not found:
        raise InputError(f"{cfg.name} splits over no worker of at most {chips} chips", "search")
    capacity = float(the_chip.capacity("hbm"))
    Bs = np.array(BATCHES, dtype=float)
    kv_bytes = float(kv_bytes_per_token(cfg, kv))
    link = mesh(f"X={chips}", the_chip).axis("X") if chips > 1 else None
    per_chip_link = float(link.bandwidth) if link is not None else float("inf")
    hop = float(link.latency.subs({s: 0 for s in link.latency.free_symbols})) \
        if link is not None else 0.0
    blocks: list[tuple[str, tuple[str, int], tuple[str, int, int] | None, int]] = []
    ttfts, tpots, rates, fitting = [], [], [], []

    def add(mode: str, dec: tuple[str, int], pre: tuple[str, int, int] | None, used: int,
            first: Any, step: Any, rate: Any, fits: Any) -> None:
        blocks.append((mode, dec, pre, used))
        ttfts.append(np.broadcast_to(first, Bs.shape))
        tpots.append(np.broadcast_to(step, Bs.shape))
        rates.append(np.broadcast_to(rate, Bs.shape))
        fitting.append(fits)

    decode_fits = {s.name: np.broadcast_to(s.mem(Bs), Bs.shape) <= capacity for s in found}
    decode_step = {s.name: np.broadcast_to(s.d(Bs), Bs.shape) for s in found}
    decode_period = {s.name: decode_step[s.name] if s.slow is None else
                     np.broadcast_to(s.period(0.0, Bs), Bs.shape) for s in found}
    for s in found:  # aggregated
        step = np.broadcast_to(s.h(Bs / generate, Bs), Bs.shape)
        workers = chips // s.chips
        period = step if s.slow is None else np.broadcast_to(
            s.period(Bs / generate, Bs), Bs.shape)
        add("aggregated", (s.name, workers), None, workers * s.chips,
            np.broadcast_to(s.h(1.0, Bs), Bs.shape), step, Bs / period / s.chips,
            decode_fits[s.name])
    for sp_, sd in itertools.product(found, repeat=2):  # disaggregated
        if sp_.chips + sd.chips > chips:
            continue
        d, d_period = decode_step[sd.name], decode_period[sd.name]
        for b in PREFILL_BATCHES:
            if float(sp_.mem(float(b))) > capacity:
                continue
            prefill = float(sp_.p(float(b)))
            p_period = float(sp_.period(float(b), 0.0))
            first = prefill + b * context * kv_bytes / (min(sp_.tp, sd.tp) * per_chip_link) \
                + hop
            for x in range(1, chips // sp_.chips + 1):
                for y in range(1, (chips - x * sp_.chips) // sd.chips + 1):
                    used = x * sp_.chips + y * sd.chips
                    supply = x * b / p_period
                    demand = y * Bs / (d_period * generate)
                    add("disaggregated", (sd.name, y), (sp_.name, x, b), used, first, d,
                        np.minimum(supply, demand) * generate / used, decode_fits[sd.name])
    first_all, step_all = np.concatenate(ttfts), np.concatenate(tpots)
    rate_all, fits_all = np.concatenate(rates), np.concatenate(fitting)
    searched = len(first_all)
    good = fits_all & (first_all <= ttft) & (step_all <= tpot)

    def plan(k: int) -> ServingPlan:
        mode, (dname, dn), pre, used = blocks[k // len(BATCHES)]
        return ServingPlan(mode, (dname, dn, BATCHES[k % len(BATCHES)]), pre, used,
                           float(first_all[k]), float(step_all[k]), float(rate_all[k]),
                           float(1 / step_all[k]))

    def best_of(mask: Any) -> ServingPlan | None:
        idx = np.flatnonzero(mask)
        if not len(idx):
            return None
        top = idx[np.lexsort((1 / step_all[idx], rate_all[idx]))[-1]]
        return plan(int(top))
    modes = np.repeat(np.array([b[0] == "aggregated" for b in blocks]), len(BATCHES))
    best = best_of(good)
    agg, dis = best_of(good & modes), best_of(good & ~modes)
    idx = np.flatnonzero(good)
    order = idx[np.lexsort((-rate_all[idx], step_all[idx]))]  # fastest per user first
    edge: list[int] = []
    top = -np.inf
    for k in order:
        if rate_all[k] > top:
            edge.append(int(k))
            top = rate_all[k]
    why = "" if best is not None else _why(cfg.name, chips, ttft, tpot, fits_all, first_all,
                                           step_all, plan)
    assumptions = (
        f"a request: {context} prompt tokens, {generate} generated; each decode step timed at "
        "the prompt's context, as a serving plan times it; a worker's KV cache held at "
        f"{context + generate} positions",
        "aggregated: each iteration decodes one token of each of the worker's B sequences and "
        "prefills the B / generate prompts replacing the finished ones in the same step (a "
        "hybrid batch, the weights read once); TTFT = the iteration a prompt's prefill rides",
        "disaggregated: prefill and decode pools; TTFT = the prefill of a batch of prompts + "
        f"its KV cache's transfer ({si(kv_bytes, 'B')} a position) over "
        + (f"the {link.link.name} link, one hop" if link is not None else "no link")
        + "; the pools' rates meet at the slower",
        "tokens/s per chip over the chips a plan uses; tokens/s per user = 1 / TPOT",
        f"efficiency: {efficiency.describe()}")
    return ServingSearch(cfg.name, the_chip.name, chips, context, generate, ttft, tpot,
                         tuple(s.name for s in found), searched, int(good.sum()), best, agg,
                         dis, tuple(plan(k) for k in edge), why, assumptions)


def _why(name: str, chips: int, ttft: float, tpot: float, fits: Any, first: Any, step: Any,
         plan: Callable[[int], ServingPlan]) -> str:
    """Which limit no plan meets, and the closest plan."""
    if not fits.any():
        return f"{name} does not fit on {chips} chips at any batch"
    idx = np.flatnonzero(fits)
    k = int(idx[np.argmin(first[idx])])
    if first[k] > ttft:
        return (f"no plan meets TTFT <= {si(ttft, 's')}: the fastest first token is "
                f"{si(first[k], 's')} ({plan(k).describe()})")
    k = int(idx[np.argmin(step[idx])])
    if step[k] > tpot:
        return (f"no plan meets TPOT <= {si(tpot, 's')}: the fastest output token is "
                f"{si(step[k], 's')} ({plan(k).describe()})")
    within = idx[first[idx] <= ttft]
    k = int(within[np.argmin(step[within])])
    return (f"no plan meets both limits: within TTFT <= {si(ttft, 's')} the fastest output "
            f"token is {si(step[k], 's')} ({plan(k).describe()})")


@dataclass(frozen=True)
class ServingSearchRequest:
    """``symroof plan MODEL --serve --search CHIPS --ttft T --tpot T'``, fields named as
    the parameters errors name."""

    model: str
    chip: str
    search: int
    ttft: str
    tpot: str
    context: int = 2048
    generate: int = 256
    catalog: str | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    dtype: str = "bf16"
    kv_dtype: str | None = None
    efficiency: str | None = None

    def run(self) -> ServingSearch:
        from ..core.units import TIME, parse_quantity
        from ..hardware.catalog import load_catalog
        from ..models import model
        from .calibration import parse_efficiency
        from .serving_reality import serving_efficiency
        limits = [parse_quantity(v, TIME, where=k) for k, v in (("ttft", self.ttft),
                                                                 ("tpot", self.tpot))]
        cfg = model(self.model)
        the_chip = load_catalog(self.catalog)[self.chip].with_figures(dict(self.overrides))
        return search_serving(cfg, the_chip, self.search, ttft=float(limits[0]),
                              tpot=float(limits[1]), context=self.context,
                              generate=self.generate, dtype=self.dtype,
                              kv_dtype=self.kv_dtype,
                              efficiency=serving_efficiency(self.efficiency, the_chip.name,
                                                            self.dtype)
                              or parse_efficiency(self.efficiency))
