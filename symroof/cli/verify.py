"""symroof verify: every claim of the derivations, judged.

>>> from symroof.cli.main import main
>>> main(["verify", "rooflines-ru", "--only", "ROUNDING"])  # doctest: +ELLIPSIS
verdict   claim ...
ROUNDING  ...
67 claims in 1 derivation: ...
0
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import color, emit


def register(verbs: Any) -> None:
    v = verbs.add_parser(
        "verify", help="check every claim of derivation files and give verdicts",
        description="Derive every claim of the derivation modules and compare it with what "
                    "the text states, at its printed precision; expressions are equal only when "
                    "SymPy proves it (NOT PROVEN otherwise). Exit 0 when no claim is NOT "
                    "PROVEN, MISMATCH, STALE, ERROR or TIMEOUT (OK, ROUNDING, APPROX, SIMPLIFIED, "
                    "DEFINITION, MEASURED, a known "
                    "ERRATUM, INCONSISTENT or UNVERIFIABLE pass), 1 when one is, 2 on bad "
                    "input.",
        epilog="examples:\n  symroof verify\n  symroof verify rooflines-zh --json\n"
               "  symroof verify derivations/rooflines/zh.toml --json\n"
               "  symroof verify --only MISMATCH,ERRATUM",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("paths", nargs="*", metavar="PATH",
                   help="derivation modules or folders (default: the bundled derivations)")
    v.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                   help="limit of each unit's import and build() and of each claim "
                        "(default 30)")
    v.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="units verified at once, each in its own process (default: one "
                        "more than the cores)")
    v.add_argument("--catalog", metavar="FILE",
                   help="a catalogue TOML file of your own, used by the derivations' chips")
    v.add_argument("--only", metavar="VERDICTS", help="show only these verdicts, e.g. "
                   "MISMATCH,ERRATUM (the summary and exit code still count all)")
    v.add_argument("--no-cache", action="store_true",
                   help="derive every claim afresh. Derived values are otherwise reused "
                        "from the cache ($SYMROOF_CACHE_DIR), and judged again against the "
                        "tables, while nothing the build read has changed: the files it "
                        "opened or imported, the environment variables it read (os.environ, "
                        "os.environb, posix.environ, /proc/self/environ), the links it read "
                        "(os.readlink), PYTHONPATH and SYMROOF_*. A build that calls native "
                        "code (ctypes) or starts a process is never kept. Not tracked: a "
                        "socket, a database server, file metadata (os.stat) or a folder "
                        "listing; a chapter that reads them says cache = false under "
                        "[chapter] in its table. Without Landlock (Linux 5.13) no cache is "
                        "used (see docs/threat-model.md)")
    v.add_argument("--no-timing", action="store_true",
                   help="leave seconds out of --json, for output that is identical across runs")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from ..claims.cache import VerdictCache
    from ..claims.loader import derivation_units
    from ..claims.runner import FAILING, VERDICTS, check_timeout, run_units, summary_of
    from ..core.errors import InputError
    from ..render.verdicts import VerdictLine, verdict_lines
    check_timeout(args.timeout)
    if args.jobs < 0:
        raise InputError(f"must be at least 1, got {args.jobs}", "--jobs")
    only = None
    if args.only:
        only = {v.strip().upper() for v in args.only.split(",")}
        unknown = sorted(only - set(VERDICTS))
        if unknown:
            raise InputError(f"unknown verdict {unknown[0]!r} (verdicts: "
                             f"{', '.join(VERDICTS)})", "--only")
    extra = [catalog_file(args.catalog)] if args.catalog is not None else []
    units = derivation_units(args.paths)
    tty = sys.stderr.isatty() and not args.json
    progress = None
    if tty:
        def progress(done: int, row: dict[str, Any]) -> None:
            print(f"\r\033[K[{done}] {row['derivation']}: {row['id']}", end="",
                  file=sys.stderr, flush=True)
    outcome = run_units(units, args.timeout, None if args.no_cache else VerdictCache(),
                        args.jobs or None, progress, extra_deps=extra)
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    rows = list(outcome.rows)
    if args.no_timing:
        rows = [{**r, "seconds": None, "cached": None} for r in rows]
    failed = any(r["verdict"] in FAILING for r in rows)
    if args.json:
        shown = [r for r in rows if only is None or r["verdict"] in only]
        from ..claims.consistency import conflicts_of
        emit({"claims": shown, "summary": summary_of(rows), "conflicts": conflicts_of(rows)})
    else:
        lines = [VerdictLine.of_record(r) for r in rows]
        print("\n".join(verdict_lines(lines, outcome.derivations, color=color(), only=only)))
    return 1 if failed else 0


def catalog_file(raw: str) -> str:
    """A user catalogue for the derivations: a regular file, passed to the workers through
    ``SYMROOF_CATALOG`` (which the cache key includes, with the file's bytes)."""
    import os
    from pathlib import Path

    from ..core.errors import InputError
    path = Path(raw)
    if not raw or not path.exists():
        raise InputError("no such catalogue file", raw or "--catalog")
    if not path.is_file():
        raise InputError("not a regular file", raw)
    full = str(path.resolve())
    os.environ["SYMROOF_CATALOG"] = full
    return full
