"""A text's round numbers: the parameter count and KV bytes a model is said to have.

>>> from symroof.models import model
>>> nominal_params(model("llama-3-70b"))
70000000000
>>> cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
>>> nominal_kv_bytes(cfg), round_figures(cfg)
(320000, 'as the text states it: 70000000000 parameters, 320000 KV bytes per token')

A model card states a size ("70.6B"), a text rounds it ("a 70B model"): a bundled config
keeps both, ``published`` (the card) and ``nominal`` (the round figure texts use, when it
differs). ``with_round_params`` states a text's own figures once; every count under
``sizes="nominal"`` (``symroof.core.choices``) then takes them: FLOPs and parameters
(``symroof.models.chosen``), serving memory, the largest batch and the fewest chips
(``symroof.models.capacity``). The KV bytes are the config's exact ones unless the text
states its own.
"""

from __future__ import annotations

import re
from dataclasses import replace

import sympy as sp

from ..core.choices import EXACT, Choices
from ..core.errors import InputError
from ..core.units import COUNT, records
from .config import ModelConfig
from .counts import kv_bytes_per_token

_NOMINAL = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([MBT])\b")
_SCALE = {"M": 10**6, "B": 10**9, "T": 10**12}
_STATED = "as the text states it: "


def positive_number(value: int | float | str | sp.Expr, what: str) -> sp.Expr:
    """An exact positive number or symbol for a book-form formula (a float is read from
    its decimal text, never its binary value).

    >>> positive_number(0.1, "x"), positive_number("70e9", "params")
    (1/10, 70000000000)
    """
    if isinstance(value, str):
        from ..core.parse import parse_expr
        out = parse_expr(value, where=what)
    elif isinstance(value, float):
        out = sp.Rational(repr(value))
    else:
        out = sp.sympify(value)
    if out.is_positive is False:
        raise InputError(f"{what} must be positive, got {value!r}", what)
    return out


def with_round_params(cfg: ModelConfig, total: int | str | sp.Expr,
                      active: int | str | sp.Expr | None = None, *,
                      kv_bytes_per_token: int | str | sp.Expr | None = None) -> ModelConfig:
    """``cfg`` with the round parameter count a text states ("a 70B model": 70e9), and
    optionally its KV bytes per token, which every count under ``sizes="nominal"`` then
    takes instead of the model card's.

    >>> from symroof.models import model
    >>> cfg = with_round_params(model("llama-2-7b"), "6.7e9")
    >>> nominal_params(cfg), cfg.source["published"]
    (6700000000, 'as the text states it: 6700000000')
    """
    figures = {"published": _STATED + str(_whole(total, "params"))}
    if active is not None:
        figures["published"] += f", {_whole(active, 'active params')} activated"
    if kv_bytes_per_token is not None:
        figures["nominal_kv_bytes_per_token"] = str(_whole(kv_bytes_per_token,
                                                           "kv_bytes_per_token"))
    source = {k: v for k, v in (cfg.source or {}).items()
              if k not in ("nominal", "nominal_kv_bytes_per_token")}
    return replace(cfg, source={**source, **figures})


def _whole(value: int | str | sp.Expr, what: str) -> sp.Integer:
    """A round figure: a positive whole number (70e9, not a letter)."""
    got = positive_number(value, what)
    if not got.is_Integer:
        raise InputError(f"a round figure is a whole number such as 70e9, got {value!r}", what)
    return got


@records(COUNT)
def nominal_params(cfg: ModelConfig, active: bool = False) -> sp.Expr:
    """The round parameter count the model is known by: a text's own
    (``with_round_params``), else its config's ``nominal`` ("70B" for a card's 70.6B),
    else the ``published`` one ("7B", or "15.7B total, 2.4B activated" with ``active`` for
    the second)."""
    source = cfg.source or {}
    said = str(source.get("published", ""))
    if said.startswith(_STATED):
        counts = re.findall(r"[0-9]+", said)
        return sp.Integer(counts[1] if active and len(counts) > 1 else counts[0])
    said = str(source.get("nominal") or said)
    found = _NOMINAL.findall(said)
    if not found:
        raise InputError(f"model {cfg.name!r} states no round parameter count (published: "
                         f"{said or 'none'!r})", "sizes=nominal")
    number, unit = found[1] if active and len(found) > 1 else found[0]
    return sp.Rational(number) * _SCALE[unit]


def nominal_kv_bytes(cfg: ModelConfig) -> sp.Expr | None:
    """The KV bytes per token a text states for the model (``with_round_params``), or
    None: the config's exact ones then stand."""
    said = (cfg.source or {}).get("nominal_kv_bytes_per_token")
    return None if said is None else sp.Integer(said)


def kv_bytes_under(cfg: ModelConfig, dtype: str = "bf16",
                   choices: Choices = EXACT) -> sp.Expr:
    """KV-cache bytes per token: the text's own figure under ``sizes="nominal"`` when it
    states one (``with_round_params``), else the config's exact bytes in ``dtype``.

    >>> from symroof.models import model
    >>> cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
    >>> kv_bytes_under(cfg), kv_bytes_under(cfg, choices=Choices(sizes="nominal"))
    (327680, 320000)
    """
    stated = nominal_kv_bytes(cfg)
    if choices.sizes == "nominal" and stated is not None:
        return stated
    return kv_bytes_per_token(cfg, dtype)


def round_figures(cfg: ModelConfig) -> str:
    """Which round figures ``sizes="nominal"`` takes for ``cfg``, in words (the
    assumptions print it).

    >>> from symroof.models import model
    >>> round_figures(model("llama-3-70b"))
    '70B (the round size texts use; the card states 70.6B), exact KV bytes'
    """
    source = cfg.source or {}
    kv = nominal_kv_bytes(cfg)
    said = str(source.get("published", ""))
    if said.startswith(_STATED):
        return f"{_STATED}{nominal_params(cfg)} parameters" + \
            (f", {kv} KV bytes per token" if kv is not None else ", exact KV bytes")
    if source.get("nominal"):
        return f"{source['nominal']} (the round size texts use; the card states {said})" \
            ", exact KV bytes"
    return f"{said} as published, exact KV bytes"
