"""A float as a text prints it, without SymPy (the verdict table of a cached run prints
with it before SymPy is loaded); ``core.printer.approx`` gives an exact value the same way.

>>> decimal_text(9850 / 41), decimal_text(78800 / 9), decimal_text(1.97e14)
('240.24', '8755.6', '1.97e14')
"""

from __future__ import annotations

import math


def decimal_text(number: float, digits: int = 5) -> str:
    """``digits`` significant digits, at least two decimals below 10^4, in scientific
    notation outside [1e-4, 1e7)."""
    if number == 0 or not math.isfinite(number):
        return str(number)
    if 1e-4 <= abs(number) < 1e7:
        return f"{number:.{digits}g}" if abs(number) < 1 else _decimal(number, digits)
    mantissa, exponent = f"{number:.{digits - 1}e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _decimal(number: float, digits: int) -> str:
    """Two decimals for numbers below 10^4 (240.24), fewer as they grow (8755.6)."""
    whole = len(str(int(abs(number))))
    places = max(digits - whole, 0) if whole > 3 else 2
    out = f"{number:.{places}f}"
    return out.rstrip("0").rstrip(".") if "." in out else out
