"""The shapes a verdict row takes, shared by the parent's judge, the cache, the pool and the
runner (no SymPy, nothing else of the claims package imported here).

>>> finite(float("nan")) is None and finite(2.5) == 2.5
True
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Claim

# the names of rules.Verdict and rules.FAILING (a test holds them equal), here without
# SymPy, for the runs that only read verdict rows (a fully cached verify)
VERDICTS = ("OK", "ROUNDING", "APPROX", "SIMPLIFIED", "DEFINITION", "MEASURED", "ERRATUM",
            "UNVERIFIABLE", "INCONSISTENT", "NOT PROVEN", "MISMATCH", "STALE", "ERROR", "TIMEOUT")
FAILING = frozenset({"NOT PROVEN", "MISMATCH", "STALE", "ERROR", "TIMEOUT"})


def claim_row(c: Claim, derivation: str) -> dict[str, Any]:
    """What a verdict row says of the claim itself (the fields a verdict does not fill)."""
    return {"id": c.id, "derivation": derivation,
            "source": {"book": c.source.book, "chapter": c.source.chapter,
                       "section": c.source.section, "seed": c.source.seed,
                       "language": c.source.language},
            "statement": c.statement, "quote": c.quote, "kind": c.kind, "stated": c.stated,
            "measured": list(c.measured),
            "derived": "", "derived_value": None, "verdict": "", "rel_error": None,
            "assumptions": list(c.assumptions) + ([c.assumed] if c.assumed else []),
            "conflicts": [k.to_json() for k in c.conflicts],
            "detail": "", "diagnosis": None, "erratum": None if c.erratum is None else
            {"why": c.erratum.why, "right": c.erratum.right},
            "seconds": 0.0, "cached": False, "samples": []}


def unit_row(unit: Path, verdict: str, detail: str) -> dict[str, Any]:
    """The row of a unit that gave no claims to check (it exited, hung or defined none)."""
    return {"id": unit.name, "derivation": str(unit),
            "source": {"book": "", "chapter": "", "section": "", "seed": "", "language": ""},
            "statement": "", "quote": "", "kind": "unit", "stated": "", "derived": "",
            "derived_value": None, "verdict": verdict, "rel_error": None, "assumptions": [],
            "conflicts": [], "detail": detail, "diagnosis": None, "erratum": None,
            "seconds": 0.0, "cached": False, "samples": []}


def finite(x: float | None) -> float | None:
    """``x``, or None for NaN and infinities (JSON has no such numbers)."""
    return x if x is None or math.isfinite(x) else None


def _derive(claim: Claim) -> Any:
    """The claim's derived value (None for a measurement), as ``judge`` takes it."""
    if claim.kind == "measurement":
        return None
    return claim.derive() if claim.derive is not None else claim.value


def _origin(exc: BaseException) -> str:
    """``file:line: `` of the deepest frame of ``exc`` outside symroof itself."""
    import traceback
    package = str(Path(__file__).resolve().parent.parent)
    place = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if not str(Path(frame.filename).resolve()).startswith(package + os.sep):
            place = f"{frame.filename}:{frame.lineno}: "
    return place
