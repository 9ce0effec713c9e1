"""symroof: exact symbolic rooflines for ML systems.

>>> from symroof import einsum, chip, roofline
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> rl.ridge
9850/41

The public face is re-exported lazily, so ``import symroof`` does not import SymPy.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SymroofError": "errors",
    "InputError": "errors",
    "DerivationError": "errors",
    "parse_expr": "parse",
    "parse_relation": "parse",
    "parse_quantity": "units",
    "sizes": "quantities",
    "dtype_bytes": "quantities",
    "DTYPES": "quantities",
    "Chip": "hardware",
    "Catalog": "hardware",
    "chip": "hardware",
    "load_catalog": "hardware",
    "Op": "ops",
    "einsum": "ops",
    "elementwise": "ops",
    "sequence": "ops",
    "fuse": "ops",
    "Regime": "asymptotics",
    "parse_regime": "asymptotics",
    "expansion": "asymptotics",
    "leading": "asymptotics",
    "theta": "asymptotics",
    "Roofline": "rooflines",
    "roofline": "rooflines",
    "Threshold": "thresholds",
    "threshold": "thresholds",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'symroof' has no attribute {name!r}")
    return getattr(importlib.import_module(f"symroof.{module}"), name)
