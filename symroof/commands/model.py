"""``symroof model``: a transformer's summary, one step's roofline, or what fits in memory.

>>> r = model_step(ModelRequest("llama-2-7b", batch=1, context=1024, chip="h100-sxm"), "decode")
>>> r.step.bound, r.batch, r.critical.integer
('hbm', 1, None)

The requests hold parameters, not flags: errors name the fields (``where="context"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.choices import EXACT, STEP_CHOICES, Choices
from ..core.errors import DerivationError, InputError
from ..core.quant import rest_dtype
from ..engine.critical import Critical
from ..hardware import DEFAULT_CHIP
from ..hardware.catalog import Chip, chip_with
from ..models import (
    bundled,
    decode_intensity,
    flops_per_token,
    inference_memory,
    kv_bytes_per_token,
    max_batch,
    max_context,
    min_chips,
    model,
    params,
    training_flops_per_token,
)
from ..models.config import ModelConfig
from ..models.counts import Summary
from ..models.layers import DEFAULT_KERNEL, Kernel
from ..models.tensor_parallel import shard
from ..parallel.mesh import Mesh, mesh

if TYPE_CHECKING:  # the model step's own modules: imported where it is built
    from ..plans.device_step import DeviceStep
    from ..plans.meets import Meet

# the round figures of a model a text may state (``ModelRequest.round_figures``, --set)
ROUND_FIGURES = {"params": "the parameter count (a 70B model: 70e9)",
                 "kv_bytes_per_token": "the KV-cache bytes per token"}


def bundled_models() -> list[tuple[str, str, int]]:
    """The bundled models: name, Hugging Face repository, parameters.

    >>> bundled_models()[0][:2]
    ('deepseek-v2-lite', 'deepseek-ai/DeepSeek-V2-Lite')
    """
    return [(n, c.source.get("repo", ""), int(params(c).total)) for n, c in bundled().items()]


@dataclass(frozen=True)
class ModelRequest:
    """A model by ``name`` (bundled, Hugging Face id or config file), at ``batch`` and
    ``context`` (``tokens`` per sequence for a prefill), ``dtype`` weights and ``kv_dtype``
    KV cache, on ``chip`` (with figure ``overrides``), tensor parallel over ``mesh``;
    ``between`` two terms of a step, its collectives under ``choices``, on ``chips`` chips
    and a ``usable`` memory fraction for the fit."""

    name: str
    batch: int | None = None
    context: int | None = None
    tokens: int | None = None
    dtype: str = "bf16"
    kv_dtype: str | None = None
    chip: str | None = None
    catalog: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    mesh: str | None = None
    between: str | None = None
    chips: int | None = None
    usable: str | None = None
    symbolic: bool = False
    kernel: Kernel = DEFAULT_KERNEL
    choices: Choices = EXACT
    round_figures: Mapping[str, str] = field(default_factory=dict)
    overlap: str = "op"

    @property
    def kv(self) -> str:
        return self.kv_dtype or rest_dtype(self.dtype)

    def config(self) -> ModelConfig:
        """The model, with the round figures a text states (``params``,
        ``kv_bytes_per_token``) when given: ``sizes=nominal`` takes them."""
        cfg = model(self.name)
        bad = sorted(set(self.round_figures) - set(ROUND_FIGURES))
        if bad:
            raise InputError(f"no round figure {bad[0]!r} (known: {', '.join(ROUND_FIGURES)})",
                             "round_figures")
        if not self.round_figures:
            return cfg
        if self.choices.sizes != "nominal":
            raise InputError("a round figure is taken under sizes=nominal: add it to the "
                             "choices", f"round_figures {', '.join(self.round_figures)}")
        from ..models.nominal import nominal_params, positive_number, with_round_params
        for key, value in self.round_figures.items():
            try:
                got = positive_number(value, key)
            except InputError as exc:
                raise InputError(exc.message, f"round_figures {key}") from None
            if not got.is_Integer:
                raise InputError(f"a round figure is a whole number such as 70e9, got "
                                 f"{value!r}", f"round_figures {key}")
        total = self.round_figures.get("params") or nominal_params(cfg)
        return with_round_params(cfg, total, kv_bytes_per_token=self.round_figures.get(
            "kv_bytes_per_token"))

    def the_chip(self) -> Chip:
        return chip_with(self.chip or DEFAULT_CHIP, self.catalog, self.overrides)


def model_summary(request: ModelRequest) -> Summary:
    """Parameters, FLOPs per token, KV-cache bytes per token (and in letters, when asked);
    under the text's ``choices`` (``sizes``, ``flops``) the counts as the text takes them
    too."""
    cfg, kv = request.config(), request.kv
    choices = request.choices.within(("sizes", "flops"), "a model's summary")
    chosen: dict[str, Any] = {}
    if choices.sizes == "nominal":
        from ..models.chosen import params_under
        from ..models.nominal import kv_bytes_under
        chosen["params"] = params_under(cfg, choices, active=False)
        if cfg.moe is not None:
            chosen["params_active"] = params_under(cfg, choices)
        chosen["kv_bytes_per_token"] = kv_bytes_under(cfg, kv, choices)
    if choices.flops != "full":
        from ..models.chosen import flops_under
        chosen["flops_per_token"] = flops_under(cfg, request.context, choices)
    elif choices.sizes == "nominal":
        from ..models.chosen import flops_under
        chosen["flops_per_token"] = flops_under(cfg, request.context,
                                                choices.with_(flops="per_token_2P"))
    symbolic = None
    if request.symbolic:
        symbolic = {"params": params(cfg, symbolic=True).total,
                    "params_active": params(cfg, symbolic=True).active,
                    "flops_per_token": flops_per_token(cfg, symbolic=True),
                    "kv_bytes_per_token": kv_bytes_per_token(cfg, kv, symbolic=True)}
    return Summary(cfg, params(cfg), flops_per_token(cfg, request.context),
                        training_flops_per_token(cfg, request.context),
                        kv_bytes_per_token(cfg, kv), request.context, request.dtype, kv,
                        symbolic, chosen, choices)


@dataclass(frozen=True)
class ModelStep:
    """One decode or prefill step of ``config`` at ``batch`` and ``context`` on ``chip``
    (per chip of ``mesh``): its roofline, critical batch, the decode intensity, and where
    two named terms meet (``meet``)."""

    config: ModelConfig
    phase: str
    batch: int
    context: int
    chip: Chip
    mesh: Mesh | None
    step: DeviceStep
    critical: Critical | None
    intensity: Any
    meet: Meet | None
    book: Any = None  # the step in a book's form, when choices are named


def given_choices(choices: Choices, what: str = "a model step",
                  allowed: tuple[str, ...] = STEP_CHOICES, chip: Chip | None = None
                  ) -> Choices:
    """The choices a command line gives a model step (or ``what``, which takes
    ``allowed``): ``edition`` names another edition of the chip table, taken by the step
    (or plan) of ``chip`` when it has one of that label (``Mesh.under``, noted); with no
    chip, what is given takes none.

    >>> from symroof import chip
    >>> given_choices(Choices(edition="B1"), chip=chip("tpu-v5e")).edition
    'B1'
    >>> given_choices(Choices(edition="B2"), chip=chip("h100-sxm"))
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: choices: edition=B2: the chip table has no figure of \
h100-sxm from an edition 'B2' (its editions: B1, B12, B12-table, NV-H100, NV-H100-bidi)

    A text's count of a memory and its KV cache's dtype are the judge's readings of a text,
    not a command's choices (the dtype has its flag):

    >>> given_choices(Choices(kv_dtype="fp8"))
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: choices: kv_dtype=fp8 is how the judge reads a text's \
KV cache, not a choice of a model step: give the KV cache's dtype as `kv_dtype` fp8
    """
    for name in ("memory", "kv_dtype"):
        if name in choices.changed():
            value = getattr(choices, name)
            raise InputError(f"{name}={value} is how the judge reads a text's "
                             + ("KV cache" if name == "kv_dtype" else "count of a memory")
                             + f", not a choice of {what}"
                             + (f": give the KV cache's dtype as `kv_dtype` {value}"
                                if name == "kv_dtype" else ""), "choices")
    if choices.edition and chip is None:
        raise InputError(f"{what} takes the choices {', '.join(allowed)}; "
                         f"edition={choices.edition} does not apply to it (a figure of "
                         f"another edition is set on the chip by its label: "
                         f"FIGURE={choices.edition})", "choices")
    if choices.edition and chip is not None:
        labels = sorted({a.label for f in chip.figures.values() for a in f.alternatives})
        if choices.edition not in labels:
            raise InputError(f"edition={choices.edition}: the chip table has no figure of "
                             f"{chip.name} from an edition {choices.edition!r} (its "
                             f"editions: {', '.join(labels) or 'none'})", "choices")
    return choices


def model_step(request: ModelRequest, phase: str) -> ModelStep:
    """The ``phase`` (decode or prefill) step: the serving plan's step, tensor parallel over
    every axis of the mesh when there is one."""
    r = request
    cfg = r.config()
    context = r.context if phase == "decode" else (r.tokens or r.context)
    if context == 0:
        raise InputError("a step attends at least one position, got 0", "context")
    if context is None:
        raise InputError("give the positions attended", "context" if phase == "decode"
                         else "tokens")
    batch = r.batch or 1
    the_chip = r.the_chip()
    m = mesh(r.mesh, the_chip) if r.mesh else None
    # a text's round sizes reach the book form of the step; the step itself is exact
    step_choices = given_choices(r.choices, chip=the_chip).with_(sizes="exact")
    from ..plans.meets import step_between
    from ..plans.serving import step_on
    step, critical = step_on(cfg, phase, the_chip, m, batch=batch, context=context,
                             dtype=r.dtype, kv_dtype=r.kv_dtype, kernel=r.kernel,
                             choices=step_choices, overlap=r.overlap)
    # the step took the edition itself (noted); the rest is shown on that edition's chip
    the_chip, m = the_chip.under(r.choices), m.under(r.choices) if m is not None else None
    met = None
    if r.between is not None:
        met = step_between(cfg, phase, the_chip, m, r.between, context=context,
                           dtype=r.dtype, kv_dtype=r.kv_dtype, kernel=r.kernel)
    intensity = None
    if phase == "decode":
        tp = int(m.devices) if m is not None else 1
        intensity = decode_intensity(shard(cfg, tp), dtype=r.dtype, kv_dtype=r.kv_dtype,
                                     kernel=r.kernel, experts=r.choices.experts,
                                     traffic=r.choices.traffic)
    book = None
    chips = m.devices if m is not None else 1
    if phase == "decode" and r.choices != EXACT:
        from ..models.chosen import book_decode_time
        book = book_decode_time(cfg, the_chip, batch, context, r.choices, r.dtype, r.kv,
                                chips=chips)
    elif r.choices != EXACT:
        from ..models.chosen import book_prefill_time
        book = book_prefill_time(cfg, the_chip, batch, context, r.choices, r.dtype,
                                 chips=chips)
    return ModelStep(cfg, phase, batch, context, the_chip, m, step, critical, intensity, met,
                     book)


@dataclass(frozen=True)
class ModelFit:
    """What fits: the memory at ``batch`` and ``context``, one chip's capacity, and the
    largest batch, longest context and fewest chips (each a result or why there is none)."""

    config: ModelConfig
    chip: Chip
    batch: int
    context: int
    chips: int
    memory: Any
    capacity: Any
    fits: Mapping[str, tuple[Any, str]]

    choices: Choices = EXACT

    def facts(self, dtype: str, kv_dtype: str) -> dict[str, Any]:
        from ..models.nominal import kv_bytes_under
        return {"model": self.config.name, "chip": self.chip.name, "context": self.context,
                "batch": self.batch, "chips": self.chips, "dtype": dtype, "kv_dtype": kv_dtype,
                "kv_bytes_per_token": int(kv_bytes_under(self.config, kv_dtype, self.choices)),
                "choices": self.choices.describe()}


def model_fit(request: ModelRequest) -> ModelFit:
    """Memory, largest batch, longest context and fewest chips; on a mesh one chip's shard
    against one chip's memory."""
    r = request
    cfg = r.config()
    context = cfg.context_length if r.context is None else r.context
    if r.context == 0:
        raise InputError("`fit` needs a positive context (0 attends nothing)", "context")
    if not context:
        raise InputError("the config names no context length: give one", "context")
    the_chip = r.the_chip()
    batch = r.batch or 1
    chips = r.chips or 1
    tp, pooled = 1, chips
    if r.mesh:
        n = mesh(r.mesh, the_chip).devices
        if not n.is_Integer:
            raise InputError(f"the mesh must have a whole number of chips, got {n}", "mesh")
        chips, tp, pooled = int(n), int(n), 1
    choices = r.choices.within(("sizes",), "a fit of a model in memory")
    common = {"dtype": r.dtype, "kv_dtype": r.kv_dtype,
              "usable": "1" if r.usable is None else r.usable, "choices": choices}
    fits: dict[str, tuple[Any, str]] = {}
    for key, call in (
            ("max_batch", lambda: max_batch(cfg, the_chip, context=context, chips=pooled,
                                            tp=tp, **common)),
            ("max_context", lambda: max_context(cfg, the_chip, batch=batch, chips=pooled,
                                                tp=tp, **common)),
            ("min_chips", lambda: min_chips(cfg, the_chip, batch=batch, context=context,
                                            **common))):
        try:
            fits[key] = (call(), "")
        except DerivationError as exc:
            fits[key] = (None, exc.message)
    mem = inference_memory(cfg, batch=batch, context=context, dtype=r.dtype, kv_dtype=r.kv,
                           choices=choices)
    return ModelFit(cfg, the_chip, batch, context, chips, mem, fits["min_chips"][0].capacity,
                    fits, choices)
