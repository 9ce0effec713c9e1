"""Lines of derivation Python per distinct claim, over all of ``derivations/``.

    python3 benchmarks/claim_lines.py          # prints the figure and a line per chapter

Counts the non-blank lines of every ``*.py`` file under ``derivations/`` (claims files,
helpers, docstrings and comments alike) and divides by the number of distinct claim ids:
a chapter folder's ids are the keys of its translation tables (a claim stated by two
translations counts once), a module's ids are the claims its ``build()`` returns. The
target of the chapter form is at most 4.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 4.0


def table_ids(table: Path) -> set[str]:
    data = tomllib.loads(table.read_text("utf-8"))
    return {key for section, rows in data.items() if section not in ("chapter", "inputs")
            for key in rows}


def module_ids(module: Path) -> set[str]:
    sys.path.insert(0, str(ROOT))
    from symroof.claims.runner import load_derivations
    return {c.id for d in load_derivations([str(module)]) for c in d.claims}


def lines(file: Path) -> int:
    return sum(1 for line in file.read_text("utf-8").splitlines() if line.strip())


def main() -> int:
    folder = ROOT / "derivations"
    total_lines, total_ids = 0, 0
    rows = []
    for unit in sorted(folder.iterdir()):
        if unit.is_dir() and (unit / "claims.py").is_file():
            ids = set().union(*(table_ids(t) for t in sorted(unit.glob("*.toml"))))
            n = sum(lines(f) for f in sorted(unit.glob("*.py")))
        elif unit.suffix == ".py":
            ids, n = (set() if unit.name.startswith("_") else module_ids(unit)), lines(unit)
        else:
            continue
        rows.append((unit.name, n, len(ids)))
        total_lines += n
        total_ids += len(ids)
    for name, n, k in rows:
        print(f"{name:<24} {n:5d} lines  {k:4d} claims  {n / max(k, 1):5.2f}")
    figure = total_lines / max(total_ids, 1)
    print(f"{'all of derivations/':<24} {total_lines:5d} lines  {total_ids:4d} claims  "
          f"{figure:5.2f} lines per claim (target at most {TARGET:g})")
    return 0 if figure <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
