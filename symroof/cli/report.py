"""symroof report: the write-ups in Markdown, LaTeX, PDF and HTML.

>>> import tempfile
>>> from symroof.cli.main import main
>>> main(["report", "scaling-ru", "--out", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
wrote ... files to ...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def register(verbs: Any) -> None:
    r = verbs.add_parser(
        "report", help="write the derivations up as Markdown, LaTeX, PDF and HTML",
        description="Verify the derivations and write each one up (steps, claims with "
                    "stated and derived values and verdicts, figures), with an index that "
                    "lists every verdict and the errata. Files are written atomically once "
                    "everything has rendered; output is byte-for-byte deterministic. Exit 0 "
                    "when everything is written and no claim fails; 1 when everything is "
                    "written but a claim is NOT PROVEN, MISMATCH, STALE, ERROR or TIMEOUT (as "
                    "verify), or when nothing is written because a derivation could not be "
                    "loaded or rendered, or when --check finds a file that differs; 2 on bad "
                    "input (nothing written).",
        epilog="examples:\n  symroof report mychapter          (into write-ups/)\n"
               "  symroof report --format md,tex,pdf --out out\n"
               "  symroof report --check          (exit 1 when reports/ is stale)\n"
               "  symroof report --lang ru --out reports-ru",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("paths", nargs="*", metavar="PATH",
                   help="derivation modules or folders (default: the bundled derivations)")
    r.add_argument("--format", default="md,tex", metavar="LIST",
                   help="any of md, tex, pdf, html, comma-separated (default md,tex; html "
                        "needs KaTeX from npm: npm ci)")
    r.add_argument("--out", metavar="DIR", help="output folder (default write-ups, a "
                   "folder of your own, never the committed reports/ of a checkout, which "
                   "`make reports` writes with --out reports; with --check, reports)")
    r.add_argument("--lang", default="en", choices=("en", "ru", "zh"),
                   help="language of the headings and words (default en)")
    r.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when DIR differs from a fresh render")
    r.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                   help="limit per claim, and of pdflatex per document (default 30)")
    r.add_argument("--no-cache", action="store_true",
                   help="accepted for symmetry with verify: a report always derives afresh")
    r.set_defaults(run=run_report)


DEFAULT_OUT = "write-ups"  # ignored by git in a checkout: never the committed reports/
CHECKED = "reports"  # the committed write-ups, which --check compares

SYSTEM_FOLDERS = frozenset({"/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root",
                            "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/home"})


def run_report(args: argparse.Namespace) -> int:
    from ..claims.cache import VerdictCache
    from ..claims.loader import derivation_units
    from ..claims.runner import check_timeout, run_units, summary_of
    from ..core.errors import InputError
    from ..render.files import write
    from ..render.report import FORMATS
    from ..render.sealed import NotRendered, render_sealed
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise InputError(f"unknown format {unknown[0] if unknown else ''!r} (formats: "
                         f"{', '.join(FORMATS)})", "--format")
    if args.check and ("pdf" in formats or "html" in formats):
        raise InputError("--check compares md and tex only", "--format")
    check_timeout(args.timeout)
    if "html" in formats:
        from ..render.html import katex_dir
        katex_dir()  # before any work: an HTML write-up without KaTeX is refused at once
    if args.out is None:
        args.out = CHECKED if args.check else DEFAULT_OUT
    if not args.out.strip():
        raise InputError("the output folder is empty", "--out")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in args.out):
        raise InputError("a control character is not allowed in the output folder", "--out")
    resolved = Path(args.out).resolve()
    if resolved == Path(resolved.anchor) or str(resolved) in SYSTEM_FOLDERS:
        raise InputError(f"will not write write-ups into the system folder {resolved}",
                         "--out")
    if args.check and not Path(args.out).is_dir():
        print(f"nothing to compare against: {Path(args.out).resolve()} is not a folder "
              f"(write the reports with 'symroof report --out {args.out}')")
        return 1
    units = derivation_units(args.paths)
    tty = sys.stderr.isatty()
    if tty:
        print("verifying...", end="", file=sys.stderr, flush=True)
    # first sealed (workers, time-bounded, cached): a unit that exits, hangs or defines no
    # derivation stops the report before anything of it runs here
    outcome = run_units(units, args.timeout, None if args.no_cache else VerdictCache())
    broken = [r for r in outcome.rows if r["kind"] == "unit"]
    if broken:
        if tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        for r in broken:
            print(f"symroof: {r['verdict']}: {r['detail']}", file=sys.stderr)
        return 1
    # then built again and rendered in a sealed worker, with the verdicts of the sealed run:
    # a write-up shows the derived objects, which the verdict rows (text) do not hold
    if tty:
        print("\r\033[Krendering...", end="", file=sys.stderr, flush=True)
    try:
        rendered = render_sealed(units, outcome.rows, formats, args.lang, args.timeout)
    except NotRendered as exc:
        if tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        print(f"symroof: ERROR: {exc}", file=sys.stderr)
        return 1
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    for note in rendered.notes:
        print(f"symroof report: {note}", file=sys.stderr)
    out = Path(args.out)
    if args.check:
        return _check(rendered.files, out)
    written = write(rendered.files, out)
    claims = [r for r in outcome.rows if r["kind"] != "unit"]
    print(f"wrote {len(written)} files to {out} ({len(claims)} claims: "
          + ", ".join(f"{n} {k}" for k, n in summary_of(claims).items()) + ")")
    return 1 if outcome.failed else 0


def _check(files: Mapping[str, str | bytes], out: Path) -> int:
    """Compare a fresh render with the files under ``out``: name the folder compared
    against, and tell a missing file from one that differs."""
    from ..render.files import stale
    where = out.resolve()
    differing = stale(files, out)
    missing = [name for name in differing if not (out / name).is_file()]
    for name in differing:
        print(f"{'missing' if name in missing else 'stale'}: {out / name}")
    if differing:
        changed = len(differing) - len(missing)
        print(f"compared against {where}: {changed} of {len(files)} files differ from a "
              f"fresh render, {len(missing)} missing: run 'symroof report --out {out}' and "
              f"commit {out}")
        return 1
    print(f"{out}: {len(files)} files match a fresh render")
    return 0
