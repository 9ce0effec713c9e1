"""Capacity as thresholds: the largest batch or context that fits, the fewest chips.

>>> from symroof import chip
>>> from symroof.models import model
>>> fit = max_batch(model("llama-2-7b"), chip("a100-80gb"), context=4096)
>>> fit.relation, fit.integer
(B <= 1015063/32768, 30)
>>> min_chips(model("llama-2-70b"), chip("a100-80gb"), batch=1, context=4096).integer
2

Serving memory is the weights plus the KV cache, W + B T kv (``inference_memory``); it fits
n chips of capacity C when W + B T kv <= n u C, u the usable fraction of memory (1 unless
stated, an assumption every result names). Each answer is the exact relation, solved for
its size, and the first whole number that satisfies it. Weights and KV cache are split
evenly over the n chips (tensor-parallel serving), nothing replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ..core.choices import EXACT, Choices
from ..core.errors import DerivationError, InputError
from ..core.parse import exact, exact_number, symbol
from ..core.printer import si
from ..hardware.catalog import Chip
from .config import ModelConfig
from .counts import context_symbol
from .memory import Memory, inference_memory


@dataclass(frozen=True)
class Fit:
    """``relation`` (``B <= 5001109/16384``) and ``integer`` (the largest or smallest whole
    number that satisfies it), with the memory it was solved from."""

    symbol: sp.Symbol
    exact: sp.Expr
    direction: str
    memory: Memory
    capacity: sp.Expr
    assumptions: dict[str, str] = field(default_factory=dict)

    @property
    def relation(self) -> sp.Rel:
        return sp.Rel(self.symbol, self.exact, self.direction, evaluate=False)

    @property
    def integer(self) -> int:
        if self.direction == "<=":
            return int(sp.floor(self.exact))
        return int(sp.ceiling(self.exact))


def _capacity(chip: Chip, chips: int | sp.Expr, usable: sp.Expr | float | str,
              ) -> tuple[sp.Expr, str]:
    u = exact_number(usable, "usable")
    if not 0 < u <= 1:
        raise InputError(f"usable memory fraction must be in (0, 1], got {usable}", "usable")
    return exact(chips) * u * chip.capacity("hbm"), f"usable fraction of HBM {u}"


def _solve(need: sp.Expr, limit: sp.Expr, s: sp.Symbol, what: str) -> tuple[sp.Expr, str]:
    """``need(s) <= limit`` for ``s``, with ``need`` linear in ``s`` with a positive slope."""
    poly = sp.Poly(sp.expand(need), s)
    if poly.degree() != 1:
        raise DerivationError(f"memory is not linear in {s}: {need}")
    slope, base = poly.all_coeffs()
    if (base - limit).is_number and base >= limit:
        raise DerivationError(f"{what}: the weights alone ({si(base, 'B')}) do not fit in "
                              f"{si(limit, 'B')}")
    return sp.cancel((limit - base) / slope), "<="


def max_batch(cfg: ModelConfig, chip: Chip, *, context: int | sp.Expr, chips: int = 1,
              dtype: str = "bf16", kv_dtype: str | None = None,
              usable: sp.Expr | float | str = 1, tp: int = 1,
              choices: Choices = EXACT) -> Fit:
    """The largest batch whose weights and KV cache at ``context`` fit ``chips`` chips
    (split evenly), or with ``tp`` > 1 one chip of a tensor-parallel mesh (``chips`` then
    1: its shard, replicated parts included); ``choices`` with ``sizes="nominal"`` takes
    the round figures a text states (``inference_memory``).

    >>> from symroof import chip
    >>> from symroof.models import model, with_round_params
    >>> cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
    >>> fit = max_batch(cfg, chip("h100-sxm"), context=2048, chips=8,
    ...                 choices=Choices(sizes="nominal"))
    >>> fit.integer, fit.assumptions["sizes"]
    (762, 'nominal: as the text states it: 70000000000 parameters, 320000 KV bytes per token')
    """
    B = symbol("B")
    mem = inference_memory(cfg, batch=B, context=context, dtype=dtype, kv_dtype=kv_dtype,
                           tp=tp, choices=choices)
    cap, note = _capacity(chip, chips, usable)
    exact, direction = _solve(mem.total, cap, B, f"{cfg.name} on {chips} x {chip.name}")
    return Fit(B, exact, direction, mem, cap, _notes(note, mem))


def _notes(memory_note: str, mem: Memory) -> dict[str, str]:
    """A fit's assumptions: the usable memory, and the round sizes when taken."""
    return {"memory": memory_note, **({"sizes": mem.assumptions["sizes"]}
                                      if "sizes" in mem.assumptions else {})}


def max_context(cfg: ModelConfig, chip: Chip, *, batch: int | sp.Expr, chips: int = 1,
                dtype: str = "bf16", kv_dtype: str | None = None,
                usable: sp.Expr | float | str = 1, tp: int = 1,
                choices: Choices = EXACT) -> Fit:
    """The longest context at ``batch`` whose weights and KV cache fit ``chips`` chips (or
    one chip of a ``tp``-way tensor-parallel mesh), under ``choices`` (``max_batch``)."""
    T = context_symbol(None)
    mem = inference_memory(cfg, batch=batch, context=T, dtype=dtype, kv_dtype=kv_dtype,
                           tp=tp, choices=choices)
    cap, note = _capacity(chip, chips, usable)
    exact, direction = _solve(mem.total, cap, T, f"{cfg.name} on {chips} x {chip.name}")
    return Fit(T, exact, direction, mem, cap, _notes(note, mem))


def min_chips(cfg: ModelConfig, chip: Chip, *, batch: int | sp.Expr = 1,
              context: int | sp.Expr | None = None, dtype: str = "bf16",
              kv_dtype: str | None = None, usable: sp.Expr | float | str = 1,
              choices: Choices = EXACT) -> Fit:
    """The fewest chips whose memory holds the weights and the KV cache of ``batch``
    sequences of ``context`` tokens: n >= (W + B T kv) / (u C), under ``choices``
    (``sizes="nominal"``: a text's round figures).

    >>> from symroof import chip
    >>> from symroof.models import model
    >>> min_chips(model("llama-3-70b"), chip("h100-sxm"), context=0,
    ...           choices=Choices(sizes="nominal")).relation
    n >= 7/4
    """
    n = symbol("n")
    mem = inference_memory(cfg, batch=batch, context=context, dtype=dtype, kv_dtype=kv_dtype,
                           choices=choices)
    per_chip, note = _capacity(chip, 1, usable)
    return Fit(n, sp.cancel(mem.total / per_chip), ">=", mem, per_chip, _notes(note, mem))
