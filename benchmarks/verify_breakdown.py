"""Where the time of ``symroof verify`` goes, phase by phase, in one fresh process.

Run by ``benchmarks/run.py`` in a subprocess (so SymPy is imported cold); prints one JSON
object: seconds to import SymPy, to import ``symroof.verify``, to load (import and
``build()``) each bundled derivation module, to run every claim, and in total.

    python3 benchmarks/verify_breakdown.py
"""

from __future__ import annotations

import json
import time


def main() -> None:
    start = time.perf_counter()
    import sympy  # noqa: F401  (timed on purpose: the import itself is a phase)

    after_sympy = time.perf_counter()
    from symroof.claims.loader import derivation_units, load_unit
    from symroof.claims.runner import verify

    after_symroof = time.perf_counter()
    loads: dict[str, float] = {}
    derivations = []
    for file in derivation_units([]):
        t = time.perf_counter()
        derivations += load_unit(file)
        loads[file.name] = time.perf_counter() - t
    after_load = time.perf_counter()
    result = verify(derivations)
    end = time.perf_counter()
    claims: dict[str, float] = {}
    for v in result.verdicts:
        claims[v.derivation] = claims.get(v.derivation, 0.0) + v.seconds
    print(json.dumps({
        "import sympy": after_sympy - start,
        "import symroof.claims.runner": after_symroof - after_sympy,
        "load (import + build) per module": loads,
        "load total": after_load - after_symroof,
        "claims per derivation": claims,
        "claims total": end - after_load,
        "total": end - start,
    }))


if __name__ == "__main__":
    main()
