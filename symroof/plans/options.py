"""How a step runs, one value for every verb: a training step, a serving step and the device
step under both take a ``StepOptions``.

>>> from symroof.models.layers import Kernel
>>> o = StepOptions(dtype="int8", kernel=Kernel(causal=True), overlap="none")
>>> o.kernel_or(Kernel()).describe()
'flash attention; attention FLOPs causal; activations through HBM'
>>> try:
...     StepOptions(recompute="full").refuse(TRAINING_ONLY, "a serving plan")
... except InputError as exc:
...     print(exc.message)
recompute='full' is a training choice, not one of a serving plan

A field left at ``None`` takes the verb's default: a serving step's kernel is flash attention
(``models.layers.DEFAULT_KERNEL``), a training step's attention is materialised; a serving
step's overlap rule is its efficiency's (a calibration's own, else ``op``), a training
step's ``phase`` (``train_step.DEFAULT_OVERLAP``). The options a verb does not take are
refused by it (``refuse``), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.choices import EXACT, Choices
from ..core.errors import InputError
from ..models.layers import Kernel
from .efficiency import PEAK, Efficiency


@dataclass(frozen=True)
class StepOptions:
    """The choices a step is built and timed under.

    ``dtype`` and ``kv_dtype`` the weights' and the KV cache's number formats (a serving
    step's; training runs bf16 mixed precision); ``kernel`` the attention kernel, its
    causal count and where activations live; ``choices`` how a text costs the collectives
    (``core.choices``); ``overlap`` the rule a step's terms overlap under; ``efficiency``
    the fractions of peak or a calibration; ``recompute``, ``microbatches`` or
    ``microbatch``, ``interleave`` and ``offload`` a training step's; ``in_network`` the
    tensor-parallel AllReduces reduced in the switch where one switched network joins the
    tensor axes."""

    dtype: str = "bf16"
    kv_dtype: str | None = None
    kernel: Kernel | None = None
    choices: Choices = EXACT
    overlap: str | None = None
    efficiency: Efficiency = PEAK
    recompute: str = "none"
    microbatches: int | None = None
    microbatch: int | None = None
    interleave: int = 1
    offload: tuple[str, ...] = ()
    in_network: bool = False

    def kernel_or(self, default: Kernel) -> Kernel:
        """The kernel given, else the verb's ``default``."""
        return self.kernel if self.kernel is not None else default

    def with_(self, **changes: Any) -> StepOptions:
        """These options with ``changes``."""
        return replace(self, **changes)

    def refuse(self, names: tuple[str, ...], verb: str) -> None:
        """Raise when one of ``names`` is not at its default: ``verb`` does not take it."""
        default = StepOptions()
        for name in names:
            value = getattr(self, name)
            if value != getattr(default, name):
                raise InputError(f"{name}={value!r} is a {_OWNER[name]} choice, not one of "
                                 f"{verb}", name)


TRAINING_ONLY = ("recompute", "microbatches", "microbatch", "interleave", "offload")
SERVING_ONLY = ("dtype", "kv_dtype")
_OWNER = {**dict.fromkeys(TRAINING_ONLY, "training"), **dict.fromkeys(SERVING_ONLY, "serving")}
DEFAULT_OPTIONS = StepOptions()
