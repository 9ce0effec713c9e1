"""Speculative decoding on a serving plan: the draft model's decode steps and the target's
verification step on the same mesh, tokens per second and the time per output token,
beside the Leviathan et al. ratio (``plans.speculative``).

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> s = speculative_step(model("llama-2-70b"), model("llama-2-7b"), mesh("X=8", "h100-sxm"),
...                      {"tp": ("X",)}, batch=16, context=2048, gamma=4, acceptance="0.8")
>>> s.tokens == (1 - s.acceptance**5) / (1 - s.acceptance)
True
>>> s.time_per_output_token < s.decode.latency   # faster than decoding token by token
True

One iteration: gamma decode steps of the draft (batch B, the prompt's context; the draft
split over the same tensor axes), then one step of the target over the gamma + 1 positions
of each sequence with the context already cached (``device_step``'s chunk of a prefill:
gamma + 1 queries against the cache and themselves). Each draft token is accepted with
probability ``acceptance`` independently, so an iteration yields the expected tokens of
``plans.speculative`` per sequence: 1 at acceptance 0, gamma + 1 at acceptance 1.
TPOT = the iteration / those tokens; tokens/s = B x those tokens x pp / the iteration, or
with a pipeline's stages (``DeviceStep.stages``) B x those tokens per the busiest stage's
share of an iteration (gamma draft periods and the verification's period there). The
Leviathan ratio takes the verification to cost one decode step; the plan times it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.units import COUNT, PER_SECOND, TIME, records
from ..models.config import ModelConfig
from ..models.counts import KV_TRIES
from ..parallel.mesh import Mesh
from .device_step import DeviceStep, degree, device_step
from .options import DEFAULT_OPTIONS, StepOptions
from .speculative import Speculation, speculate


@dataclass(frozen=True)
class SpeculativeStep:
    """The draft's step, the target's verification and plain decode steps, and what an
    iteration of gamma draft tokens yields."""

    target: str
    draft_model: str
    gamma: int
    acceptance: Expr
    draft: DeviceStep
    verify: DeviceStep
    decode: DeviceStep
    leviathan: Speculation
    pp: int
    devices: int

    @property
    def iteration(self) -> Expr:
        """gamma draft steps, then one verification."""
        return self.gamma * self.draft.latency + self.verify.latency

    @property
    def tokens(self) -> Expr:
        """Expected tokens a sequence gains per iteration."""
        return self.leviathan.tokens_per_step

    @property
    def time_per_output_token(self) -> Expr:
        return self.iteration / self.tokens

    @property
    def tokens_per_s(self) -> Expr:
        """Output tokens per second of the whole mesh: pp batches in flight, each stage's
        share of an iteration its gamma draft periods and its verification period, the
        busiest one's setting the rate (the stages' shares sum to the iteration)."""
        if not (self.draft.stages and self.verify.stages):
            return self.decode.tokens * self.tokens * self.pp / self.iteration
        busy = [self.gamma * d.period + v.period
                for d, v in zip(self.draft.stages, self.verify.stages, strict=True)]
        return self.decode.tokens * self.tokens / sp.Max(*busy)

    @property
    def speedup(self) -> Expr:
        """Over decoding token by token on the same mesh."""
        return self.decode.latency / self.time_per_output_token

    def to_json(self) -> dict[str, Any]:
        def exact(name: str, value: Expr) -> dict[str, Any]:
            return {name: sp.sstr(value), f"{name}_value": float(value)}
        return {"draft": self.draft_model, "gamma": self.gamma,
                **exact("acceptance", self.acceptance),
                **exact("draft_step", self.draft.latency),
                **exact("verify_step", self.verify.latency),
                **exact("decode_step", self.decode.latency),
                **exact("iteration", self.iteration), **exact("tokens", self.tokens),
                **exact("time_per_output_token", self.time_per_output_token),
                **exact("tokens_per_s", self.tokens_per_s),
                **exact("tokens_per_s_per_chip", self.tokens_per_s / self.devices),
                **exact("speedup", self.speedup),
                **exact("leviathan_cost_ratio", self.leviathan.cost_ratio),
                **exact("leviathan_speedup", self.leviathan.speedup)}


@records(iteration=TIME, tokens=COUNT, time_per_output_token=TIME, tokens_per_s=PER_SECOND,
         speedup=COUNT, editions=True, tries=KV_TRIES)
def speculative_step(target: ModelConfig, draft: ModelConfig, m: Mesh,
                     axes: Mapping[str, tuple[str, ...]], *, batch: int, context: int,
                     gamma: int, acceptance: Expr | int | str,
                     options: StepOptions = DEFAULT_OPTIONS) -> SpeculativeStep:
    """Speculative decoding of ``batch`` sequences at ``context`` on mesh ``m``: ``draft``
    proposes ``gamma`` tokens, ``target`` verifies them, each accepted with probability
    ``acceptance``; every step built under ``options`` (``plans.options``). Its choices'
    ``kv_dtype`` (a text's KV cache in ``fp8`` or ``int8``, tried by the judge) is the
    KV cache's dtype of the draft's and the target's steps, as ``options.kv_dtype`` gives
    it:

    >>> from symroof.core.choices import Choices
    >>> from symroof.models import model
    >>> from symroof.parallel.mesh import mesh
    >>> def drafted(options: StepOptions) -> SpeculativeStep:
    ...     return speculative_step(model("llama-2-70b"), model("llama-2-7b"),
    ...                             mesh("X=8", "h100-sxm"), {"tp": ("X",)}, batch=16,
    ...                             context=2048, gamma=4, acceptance="0.8", options=options)
    >>> drafted(StepOptions(choices=Choices(kv_dtype="fp8"))) == drafted(
    ...     StepOptions(kv_dtype="fp8"))
    True
    """
    if draft.vocab != target.vocab:
        raise InputError(f"the draft {draft.name} has a vocabulary of {draft.vocab}, the "
                         f"target {target.name} {target.vocab}: speculative decoding needs "
                         "one vocabulary", "draft")
    if not isinstance(gamma, int) or isinstance(gamma, bool) or gamma < 1:
        raise InputError(f"the draft tokens per iteration are a whole number of 1 or more, "
                         f"got {gamma!r}", "gamma")
    kw: dict[str, Any] = {"options": options}
    try:
        small = device_step(draft, "decode", m, axes, batch=batch, context=context, **kw)
    except InputError as exc:
        raise InputError(f"the draft {draft.name} on this mesh: {exc.message}",
                         "draft") from None
    # on a pipeline the verification's tokens (the accepted drafts and the target's own,
    # at most gamma + 1 a sequence) go back to the first stage for the next iteration
    verify = device_step(target, "prefill", m, axes, batch=batch, context=gamma + 1,
                         prior=context, sampled=batch * (gamma + 1), **kw)
    plain = device_step(target, "decode", m, axes, batch=batch, context=context, **kw)
    try:
        lev = speculate(acceptance, gamma, small.latency / plain.latency)
    except InputError as exc:
        raise InputError(exc.message, "acceptance" if exc.where == "alpha" else exc.where
                         ) from None
    return SpeculativeStep(target.name, draft.name, gamma, lev.alpha, small, verify, plain,
                           lev, degree(m, axes.get("pp", ())), int(m.devices))
