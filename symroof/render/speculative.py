"""The text and JSON views of ``symroof speculate``: renders only, every value was derived
before.

>>> from symroof.plans.speculative import best_draft, speculate
>>> s = speculate("0.8", 4, "0.05")
>>> print("\\n".join(speculation_lines(s, best_draft("0.8", "0.05"))))  # doctest: +ELLIPSIS
speculative decoding: acceptance rate alpha = 0.8, draft tokens per step gamma = 4, ...
  tokens per verification step  2101/625 ≈ 3.36  = (1 - alpha**(gamma + 1))/(1 - alpha)
  cost of a verification step   6/5 ≈ 1.2 target steps  = gamma*c + 1
  expected speedup              2101/750 ≈ 2.8  = (1 - alpha**(gamma + 1))/...
  best draft length             8 (speedup 1690981/546875 ≈ 3.09)
  source                        Leviathan, Kalman and Matias 2023, equation (1) and Theorem 3.8
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..core.printer import approx, number_value, text
from ..plans.speculative import Speculation, derived

SOURCE = "Leviathan, Kalman and Matias 2023, equation (1) and Theorem 3.8"


def _exact(value: sp.Expr) -> str:
    return text(value) if value.is_Integer else f"{text(value)} ≈ {approx(value)}"


def _input(value: sp.Expr) -> str:
    return text(value) if value.is_Integer else approx(value)


def speculation_lines(s: Speculation, best: Speculation | None, why_none: str = "",
                      basis: str = "") -> list[str]:
    """The speculation, one quantity per line, each with the formula it came from."""
    rows = [("tokens per verification step",
             f"{_exact(s.tokens_per_step)}  = {sp.sstr(derived()[0])}"),
            ("cost of a verification step", f"{_exact(s.step_cost)} target steps  = "
                                            "gamma*c + 1"),
            ("expected speedup", f"{_exact(s.speedup)}  = {sp.sstr(derived()[1])}"
             + ("  (slower than plain decoding)" if s.speedup < 1 else ""))]
    rows.append(("best draft length", f"{best.gamma} (speedup {_exact(best.speedup)})"
                 if best is not None else why_none))
    if basis:
        rows.append(("cost ratio c", basis))
    rows.append(("source", SOURCE))
    width = max(len(k) for k, _ in rows)
    head = (f"speculative decoding: acceptance rate alpha = {_input(s.alpha)}, draft tokens "
            f"per step gamma = {s.gamma}, a draft step's cost c = {_input(s.cost_ratio)} "
            "target steps")
    return [head, *(f"  {k:<{width}}  {v}" for k, v in rows)]


def speculation_json(s: Speculation, best: Speculation | None, why_none: str = "",
                     basis: str = "") -> dict[str, Any]:
    """Exact values as strings, ``_value`` floats beside them."""
    def pair(name: str, value: sp.Expr) -> dict[str, Any]:
        return {name: text(value), f"{name}_value": number_value(value)}
    return {"acceptance_rate": text(s.alpha), "draft_tokens": s.gamma,
            "cost_ratio": text(s.cost_ratio), **pair("tokens_per_step", s.tokens_per_step),
            **pair("step_cost", s.step_cost), **pair("speedup", s.speedup),
            "tokens_per_step_formula": sp.sstr(derived()[0]),
            "speedup_formula": sp.sstr(derived()[1]),
            "best_draft_tokens": best.gamma if best else None,
            **(pair("best_speedup", best.speedup) if best else
               {"best_speedup": None, "best_speedup_value": None}),
            "best_note": why_none, "cost_ratio_basis": basis or None, "source": SOURCE}
