"""symroof verify: every claim of the derivations, judged."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import emit


def register(verbs: Any) -> None:
    v = verbs.add_parser(
        "verify", help="check every claim of derivation files and give verdicts",
        description="Derive every claim of the derivation modules and compare it with what "
                    "the text states, at its printed precision. Exit 0 when every claim holds "
                    "(OK, ROUNDING, a known ERRATUM, or an UNVERIFIABLE measurement), 1 when "
                    "any is MISMATCH, STALE, ERROR or TIMEOUT, 2 on bad input.",
        epilog="examples:\n  symroof verify\n  symroof verify derivations/rooflines/zh.toml "
               "--json\n  symroof verify --only MISMATCH,ERRATUM",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("paths", nargs="*", metavar="PATH",
                   help="derivation modules or folders (default: the bundled derivations)")
    v.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                   help="limit per claim (default 30)")
    v.add_argument("--only", metavar="VERDICTS", help="show only these verdicts, e.g. "
                   "MISMATCH,ERRATUM (the summary and exit code still count all)")
    v.add_argument("--no-cache", action="store_true",
                   help="derive every claim afresh (verdicts of unchanged files are otherwise "
                        "reused from the cache, see $SYMROOF_CACHE_DIR)")
    v.add_argument("--no-timing", action="store_true",
                   help="leave seconds out of --json, for output that is identical across runs")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from ..claims.consistency import conflicts_of
    from ..claims.runner import (
        FAILING,
        VERDICTS,
        VerdictCache,
        cached_rows,
        load_derivations,
        summary_of,
        verify,
    )
    from ..core.errors import InputError
    from ..render.terminal import VerdictLine, verdict_lines
    if args.timeout <= 0:
        raise InputError(f"must be positive, got {args.timeout:g}", "--timeout")
    only = None
    if args.only:
        only = {v.strip().upper() for v in args.only.split(",")}
        unknown = sorted(only - set(VERDICTS))
        if unknown:
            raise InputError(f"unknown verdict {unknown[0]!r} (verdicts: "
                             f"{', '.join(VERDICTS)})", "--only")
    cache = None if args.no_cache else VerdictCache()
    known = cached_rows(args.paths, cache, args.timeout) if cache is not None else None
    if known is not None:  # every file unchanged: no SymPy work at all
        count, rows = known
        table: list[Any] = [VerdictLine.of_record(r) for r in rows]
    else:
        derivations = load_derivations(args.paths)
        tty = sys.stderr.isatty() and not args.json
        progress = None
        if tty:
            def progress(done: int, total: int, v: Any) -> None:
                print(f"\r\033[K[{done}/{total}] {v.derivation}: {v.claim.id}", end="",
                      file=sys.stderr, flush=True)
        result = verify(derivations, timeout=args.timeout, progress=progress, cache=cache)
        if tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        count, rows = len(derivations), result.to_json()["claims"]
        table = list(result.verdicts)
    if args.no_timing:
        rows = [{**r, "seconds": None, "cached": None} for r in rows]
    failed = any(r["verdict"] in FAILING for r in rows)
    if args.json:
        shown = [r for r in rows if only is None or r["verdict"] in only]
        emit({"claims": shown, "summary": summary_of(rows), "conflicts": conflicts_of(rows)})
    else:
        print("\n".join(verdict_lines(table, count, color=sys.stdout.isatty(), only=only)))
    return 1 if failed else 0
