"""Steps: what an engine operation did, recorded so a write-up can show the chain.

>>> import sympy as sp
>>> s = Step("limit", "leading term of the intensity", sp.Symbol("I"), sp.Symbol("B"), "B << D, F")
>>> s.kind, s.justification
('limit', 'B << D, F')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STEP_KINDS = ("define", "substitute", "simplify", "limit", "series", "solve", "evaluate", "compare")


@dataclass(frozen=True)
class Step:
    """One operation: its kind, what it was about, its input and output, and why."""

    kind: str
    title: str
    input: Any
    output: Any
    justification: str = ""

    def __post_init__(self) -> None:
        if self.kind not in STEP_KINDS:
            raise ValueError(f"unknown step kind {self.kind!r} (kinds: {', '.join(STEP_KINDS)})")
