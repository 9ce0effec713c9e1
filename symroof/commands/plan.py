"""What ``symroof plan`` asks for: a model, a chip and either a mesh with a strategy or a
chip count to search; run, it gives the plan's :class:`~symroof.plans.result.Result`.

>>> PlanRequest(model="llama-2-7b", mode="train", chip="tpu-v5e").checked().batch
256
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..plans.result import Result

if TYPE_CHECKING:
    from ..core.choices import Choices
    from ..plans.mfu import Mfu
    from ..plans.training import Plan

DEFAULT_CONTEXT = 2048
DEFAULT_BATCH = {"train": 256, "serve": 1}
# training keeps the scores (Megatron-LM's layers); serving runs a fused (flash) kernel
DEFAULT_ATTENTION = {"train": "materialised", "serve": "flash"}


@dataclass(frozen=True)
class PlanRequest:
    """The command line's options for one plan."""

    model: str
    mode: str
    chip: str
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    mesh: str | None = None
    strategy: str | None = None
    search: int | None = None
    batch: int | None = None
    context: int | None = None
    microbatches: int | None = None
    microbatch: int | None = None
    recompute: str = "none"
    optimizer: str | None = None  # default: the calibration's conventions', else adam-mixed
    attention: str | None = None  # default: materialised to train, flash to serve
    causal: bool = False
    activations: str = "hbm"
    efficiency: str | None = None
    mfu: str | None = None
    latency_target: str | None = None
    generate: int | None = None
    laws: bool = False
    offload: str | None = None
    price: str | None = None
    in_network: bool = False
    dtype: str = "bf16"
    kv_dtype: str | None = None
    choices: str | None = None
    interleave: int = 1
    overlap: str | None = None  # default: the calibration's conventions', else phase
    chunk: int | None = None
    piggyback: bool = False
    draft: str | None = None
    gamma: int | None = None
    acceptance: str | None = None
    rate: str | None = None

    def checked(self) -> PlanRequest:
        """Defaults filled in; options that do not go together are input errors."""
        if self.mode not in DEFAULT_BATCH:
            raise InputError(f"mode must be train or serve, got {self.mode!r}")
        if self.recompute == "any" and self.search is None:
            raise InputError("'any' is for `search`; a plan takes none, selective, full, "
                             "matmuls or k_tensors_of_D=K", "recompute")
        if self.recompute != "any":
            from ..models.counts import RECOMPUTE
            from ..models.memory import checkpoint_policy
            checkpoint_policy(self.recompute)
            if self.search is not None and self.recompute not in RECOMPUTE:
                raise InputError(f"a search tries none, selective and full (any); "
                                 f"{self.recompute} is for a plan given by hand", "recompute")
        if self.mode == "serve" and self.search is not None:
            raise InputError("the search is over training plans; for serving, ask for the "
                             "fewest chips with `latency_target`", "search")
        if self.price is not None and self.laws:
            raise InputError("a price is for a plan: give it without `laws`", "price")
        if self.mode != "serve":
            for flag, given, why in (
                    ("causal", self.causal, "counts its FLOPs as PaLM does"),
                    ("activations", self.activations != "hbm",
                     "moves its activations through HBM, kernel by kernel")):
                if given:
                    raise InputError(f"a choice of the serving steps' kernels (`serve`); a "
                                     f"training step {why}", flag)
        if self.choices is not None and (self.search is not None or self.laws):
            raise InputError("choices cost one plan's collectives as a text does: give them "
                             "with `mesh` and `strategy`", "choices")
        if self.interleave != 1 and (self.mode != "train" or self.mesh is None):
            raise InputError("interleaving is for one training plan with a pipeline (`train` "
                             "with `mesh` and a pp axis in `strategy`; beside a `search`, "
                             "the plan given)", "interleave")
        from ..plans.efficiency import SERVING_OVERLAPS  # training's names too (a law)
        if self.overlap is not None and self.overlap not in SERVING_OVERLAPS:
            raise InputError(f"the overlap rule is one of {', '.join(SERVING_OVERLAPS)}, "
                             f"got {self.overlap!r}", "overlap")
        if self.chunk is not None and self.mode != "serve":
            raise InputError("chunked prefill is a serving choice: use it with `serve`",
                             "chunk")
        if self.piggyback and self.chunk is None:
            raise InputError("decode tokens ride along with prefill chunks: give `chunk`",
                             "piggyback")
        if (self.draft or self.gamma is not None or self.acceptance is not None) and \
                self.mode != "serve":
            raise InputError("speculative decoding is a serving choice: use `draft` with "
                             "`serve`", "draft" if self.draft else
                             "gamma" if self.gamma is not None else "acceptance")
        if self.draft and (self.gamma is None or self.acceptance is None):
            raise InputError("speculative decoding needs `gamma` (draft tokens per iteration) "
                             "and `acceptance` (the chance a draft token is kept) beside "
                             "`draft`", "gamma" if self.gamma is None else "acceptance")
        if not self.draft and (self.gamma is not None or self.acceptance is not None):
            raise InputError("draft tokens and their acceptance need a draft model: give "
                             "`draft`", "gamma" if self.gamma is not None else "acceptance")
        if self.rate is not None and (self.mode != "serve" or self.draft):
            raise InputError("an arrival rate queues requests for a serving plan: use it with "
                             "`serve` (without `draft`)", "rate")
        if self.offload is not None and self.mode != "train" and self.chunk is not None:
            raise InputError("offloading with a chunked prefill is not modelled", "offload")
        return replace(self, batch=self.batch or DEFAULT_BATCH[self.mode],
                       context=self.context or DEFAULT_CONTEXT,
                       attention=self.attention or DEFAULT_ATTENTION[self.mode])

    def conventional(self, eff: Any) -> PlanRequest:
        """The request with the optimizer and overlap its calibration's conventions bring
        (``eff.conventions``) where not given, else the defaults (adam-mixed, phase)."""
        conv = eff.conventions.choices if eff.conventions is not None else {}
        return replace(self, optimizer=self.optimizer or conv.get("optimizer", "adam-mixed"),
                       overlap=self.overlap or conv.get("overlap", "phase")
                       if self.mode == "train" else self.overlap)

    def run(self, progress: Callable[[int, int], None] | None = None) -> Result:
        """Build what was asked for."""
        from ..core.units import TIME, parse_quantity
        from ..hardware.catalog import load_catalog
        from ..models import model
        from ..parallel.mesh import mesh
        from ..plans.calibration import parse_efficiency
        from ..plans.offload import parse_offload
        from ..plans.strategy import parse_strategy
        r = self.checked()
        assert r.batch is not None and r.context is not None and r.attention is not None
        from ..core.choices import EXACT, parse_choices
        chosen = parse_choices(r.choices) if r.choices is not None else EXACT
        from .model import given_choices
        cfg = model(r.model)
        the_chip = load_catalog(r.catalog)[r.chip].with_figures(dict(r.overrides))
        if r.mode == "serve":
            given_choices(chosen, "a serving plan", chip=the_chip)
        else:
            from ..core.choices import COLLECTIVE_CHOICES
            given_choices(chosen, "a training plan", COLLECTIVE_CHOICES, chip=the_chip)
        # the plan takes the edition itself (noted in its assumptions); what is costed
        # beside it (the host link, a model FLOPs utilisation) on that edition's chip
        on_edition = the_chip.under(chosen)
        served_eff = None
        if r.mode == "serve":
            from ..plans.serving_reality import serving_efficiency
            served_eff = serving_efficiency(r.efficiency, the_chip.name, r.dtype or "bf16")
        eff = served_eff or parse_efficiency(r.efficiency)
        given = r.optimizer
        r = r.conventional(eff)
        if r.mode == "train" and "optimizer" in chosen.changed():
            optimizer, chosen = _optimizer_choice(chosen, given)
            r = replace(r, optimizer=optimizer)
        if r.mode == "train" and "checkpoints" in chosen.changed():
            r = replace(r, recompute=_checkpoint_choice(chosen, r.recompute))
            chosen = chosen.with_(checkpoints="none", checkpoint_tensors=None)
        assert r.batch is not None and r.context is not None and r.attention is not None
        assert r.optimizer is not None and (r.overlap is not None or r.mode == "serve")
        if r.efficiency and "=" in r.efficiency:  # typed fractions: each names a term
            _check_terms(eff.fractions, the_chip, r.mesh)  # (a calibration covers a system)
        out = Result(r.mode)
        if r.laws:
            from ..plans.laws import law_table
            return replace(out, laws=tuple(law_table(cfg, context=r.context)))
        if r.mode == "train":
            from ..plans.training import train
            if r.search is not None:
                from ..plans.search import search
                found = search(cfg, the_chip, r.search, batch=r.batch, context=r.context,
                               recompute=r.recompute, optimizer=r.optimizer,
                               attention=r.attention, efficiency=eff, progress=progress,
                               in_network=r.in_network, offload=parse_offload(r.offload),
                               overlap=r.overlap or "phase", conventions=eff.conventions)
                from ..plans.relaxed import relaxed_mix
                out = replace(out, search=found, train=found.plan,
                              relaxed=relaxed_mix(cfg, the_chip, r.search, batch=r.batch,
                                                  context=r.context))
                if r.mesh is not None and r.strategy is not None:
                    out = replace(out, given=_given(cfg, mesh(r.mesh, the_chip),
                                                    parse_strategy(r.strategy), r, eff))
            else:
                assert r.mesh is not None and r.strategy is not None and r.overlap is not None
                from ..models.layers import Kernel
                from ..plans.options import StepOptions
                plan = train(cfg, mesh(r.mesh, the_chip), parse_strategy(r.strategy), batch=r.batch,
                             context=r.context, optimizer=r.optimizer, conventions=eff.conventions,
                             options=StepOptions(kernel=Kernel(r.attention), choices=chosen,
                                                 overlap=r.overlap, efficiency=eff,
                                                 recompute=r.recompute, microbatches=r.microbatches,
                                                 microbatch=r.microbatch, interleave=r.interleave,
                                                 offload=parse_offload(r.offload),
                                                 in_network=r.in_network))
                out = replace(out, train=plan)
            if r.mfu is not None:
                out = replace(out, mfu=_mfu(cfg, out.train, r.mfu, on_edition))
            return _priced(out, r.price)
        from ..models.layers import Kernel
        from ..plans.options import StepOptions
        from ..plans.serving import fewest_chips, serve
        assert r.mesh is not None
        if r.overlap is not None:  # the user's rule over the calibration's
            eff = replace(eff, overlap=r.overlap)
        # one set of options for every step the request builds
        options = StepOptions(dtype=r.dtype, kv_dtype=r.kv_dtype,
                              kernel=Kernel(r.attention, r.causal, r.activations),
                              choices=chosen, overlap=r.overlap, efficiency=eff,
                              in_network=r.in_network)
        # a forecast: the bound at peak beside it, from the same build (serve's at_peak)
        served = serve(cfg, mesh(r.mesh, the_chip),
                       parse_strategy(r.strategy) if r.strategy else None, batch=r.batch,
                       context=r.context, generate=r.generate or 256, chunk=r.chunk,
                       piggyback=r.piggyback, bound=bool(eff.fractions),
                       options=options)
        bound = served.at_peak
        served = replace(served, at_peak=None)
        from ..plans.serving_offload import offload_serving, parse_serving_offload
        if r.offload is not None:
            served = offload_serving(served, parse_serving_offload(r.offload), on_edition,
                                     layers=cfg.layers, efficiency=eff)
        out = replace(out, serve=served)
        if bound is not None:
            if r.offload is not None:
                bound = offload_serving(bound, parse_serving_offload(r.offload), on_edition,
                                        layers=cfg.layers)
            out = replace(out, bound=bound)
        if r.draft:
            from ..plans.serving import serving_axes, tp_over
            from ..plans.speculative_plan import speculative_step
            m = mesh(r.mesh, the_chip)
            strategy = parse_strategy(r.strategy) if r.strategy else tp_over(m)
            assert r.gamma is not None and r.acceptance is not None
            try:
                small = model(r.draft)
            except InputError as exc:
                raise InputError(exc.message, "draft") from None
            out = replace(out, speculative=speculative_step(
                cfg, small, m, serving_axes(cfg, m, strategy), batch=r.batch,
                context=r.context, gamma=r.gamma, acceptance=r.acceptance, options=options))
        if r.rate is not None:
            from ..plans.queueing import queue
            assert served.requests is not None
            out = replace(out, queue=queue(served.requests, r.rate))
        out = _priced(out, r.price)
        if r.latency_target is not None:
            target = parse_quantity(r.latency_target, TIME, where="latency_target")
            if not target > 0:
                raise InputError(f"a latency target must be positive, got "
                                 f"{r.latency_target!r}", "latency_target")
            out = replace(out, fewest=fewest_chips(cfg, the_chip, batch=r.batch,
                                                   context=r.context, target=target,
                                                   options=options))
        return out


def _checkpoint_choice(chosen: Choices, given: str) -> str:
    """A training plan's checkpoint policy named as a choice (``checkpoints=matmuls``,
    ``checkpoints=k_tensors_of_D=4``): the recomputation policy it names."""
    policy = chosen.checkpoints + (f"={chosen.checkpoint_tensors}"
                                   if chosen.checkpoint_tensors is not None else "")
    if given not in ("none", policy):
        raise InputError(f"checkpoints={policy} is the recomputation policy {policy}, but "
                         f"the policy given is {given}: give one", "choices")
    return policy


def _optimizer_choice(chosen: Choices, given: str | None) -> tuple[str, Choices]:
    """A training plan's optimizer named as a choice (``optimizer=adam_8bit``): the preset
    it names (``symroof.models.chosen.OPTIMIZER_PRESETS``), and the choices without it. A
    text's k bytes per parameter is refused: a plan shards weights, gradients and state
    apart, and k does not split them."""
    from ..models.chosen import OPTIMIZER_PRESETS
    if chosen.optimizer == "bytes_per_param":
        raise InputError(f"optimizer=bytes_per_param={chosen.optimizer_bytes} does not say "
                         "how the bytes split over weights, gradients and state, which a "
                         "training plan shards apart: name a preset (optimizer="
                         f"{', '.join(OPTIMIZER_PRESETS)}) or give `optimizer`", "choices")
    preset = OPTIMIZER_PRESETS[chosen.optimizer]
    from ..models.memory import plan_states
    try:
        plan_states(preset)
    except InputError as exc:
        raise InputError(f"optimizer={chosen.optimizer}: {exc.message}", "choices") from None
    if given not in (None, preset):
        raise InputError(f"optimizer={chosen.optimizer} is the preset {preset}, but the "
                         f"optimizer given is {given}: give one", "choices")
    return preset, chosen.with_(optimizer="zero16")

def _given(cfg: Any, m: Any, strategy: Any, r: PlanRequest, eff: Any) -> Plan:
    """The plan set beside a search: ``r``'s mesh, strategy, microbatches and interleaving,
    under its recomputation policy (``any``: the fastest that fits of each policy, by
    its predicted time, then T_upper), built as the search builds its plans (the overlap
    rule, the efficiency and its calibration's conventions)."""
    from ..models.counts import RECOMPUTE
    from ..models.layers import Kernel
    from ..plans.offload import parse_offload
    from ..plans.options import StepOptions
    from ..plans.training import train
    assert r.batch is not None and r.context is not None and r.attention is not None
    assert r.optimizer is not None and r.overlap is not None
    plans = [train(cfg, m, strategy, batch=r.batch, context=r.context, optimizer=r.optimizer,
                   conventions=eff.conventions,
                   options=StepOptions(kernel=Kernel(r.attention), overlap=r.overlap,
                                       efficiency=eff, recompute=policy,
                                       microbatches=r.microbatches, microbatch=r.microbatch,
                                       interleave=r.interleave, offload=parse_offload(r.offload),
                                       in_network=r.in_network))
             for policy in (RECOMPUTE if r.recompute == "any" else (r.recompute,))]
    return min(plans, key=lambda p: (not p.fits, float(p.predicted if p.predicted is not None
                                                        else p.t_lower), float(p.t_upper)))


def _priced(out: Result, price: str | None) -> Result:
    """The result with the cost of its steps at ``price`` per chip-hour (an input)."""
    if price is None:
        return out
    from ..plans.cost import cost_of, parse_price
    p = parse_price(price)
    if out.train is not None:
        t = out.train
        return replace(out, cost=(cost_of(p, chips=t.devices, seconds=t.t_lower,
                                          tokens=t.batch * t.context, what="training step",
                                          upper_seconds=t.t_upper),))
    assert out.serve is not None
    s = out.serve
    return replace(out, cost=tuple(
        cost_of(p, chips=s.devices, seconds=ph.latency, tokens=ph.tokens,
                what=f"{ph.name} step") for ph in (s.prefill, s.decode)) + tuple(
        cost_of(p, chips=s.devices, seconds=s.prefill_time, tokens=s.prefill.tokens,
                what=f"chunked prefill ({len(s.chunked.sizes)} chunks)")
        for _ in (s.chunked,) if s.chunked is not None))


def _mfu(cfg: Any, plan: Plan | None, rate: str, chip: Any) -> Mfu:
    from ..core.parse import parse_expr
    from ..plans.mfu import mfu_of
    from ..plans.train_step import matrix_rate
    assert plan is not None
    tps = parse_expr(rate, where="mfu")
    return mfu_of(cfg, plan.context, tps, plan.devices, matrix_rate(chip),
                  str(plan.extra.get("recompute", "none")))


def _check_terms(names: Any, chip: Any, mesh_spec: str | None) -> None:
    """Every --efficiency name is a term a plan has: compute, a memory level or link of the
    chip, a mesh axis, or LINK:AXIS."""
    from ..core.parse import parse_assignments
    resources = {k for k in chip.figures if "." not in k}
    axes = set(parse_assignments(mesh_spec, where="mesh")) if mesh_spec else set()
    known = {"compute", *resources, *axes}
    for name in names:
        link, _, axis = name.partition(":")
        if name in known or (axis and link in resources and axis in axes):
            continue
        raise InputError(f"{name!r} is not a term of this plan (terms: "
                         f"{', '.join(sorted(known))})", "efficiency")
