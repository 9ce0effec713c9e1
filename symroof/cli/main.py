"""The command line: ``symroof derive | chips | chip``.

Exit codes: 0 success, 1 a check failed, 2 bad input or usage (one line on stderr).
SymPy is imported only by the verbs that need it, so ``symroof --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

EXAMPLES_DERIVE = """\
examples:
  symroof derive --einsum "B D, D F -> B F" --dtypes bf16 --chip tpu-v5e --set hbm=B1 \\
      --solve B --regime "B<<D,F"
  symroof derive --flops "2*N - 1" --bytes "4*N + 2" --regime "N->oo"
  symroof derive --flops "B*D*F" --comm-bytes "2*B*F" --link ici --solve D
  symroof derive --einsum "B D, D F -> B F" --dtypes bf16,int8 --out-dtype bf16 \\
      --set hbm=8.2e11 --solve B --subs "D=4096,F=4096" --json

Formulas use + - * / ** ( ), numbers (1.97e14 is read exactly), names (every name is a
positive size) and sqrt exp log min max floor ceil. Nothing is evaluated as Python.
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"symroof: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="symroof",
        description="Exact symbolic rooflines for ML systems: intensity, bounds, regimes, "
                    "thresholds, from formulas or einsum specs.",
        epilog="Run 'symroof VERB --help' for a verb's options and examples.")
    parser.add_argument("--version", action="version", version=_version())
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    d = verbs.add_parser(
        "derive", help="derive a roofline from formulas typed on the command line",
        description="Derive intensity, roofline times and bounds, the asymptotic intensity "
                    "in a regime and the critical threshold of one op on one chip.",
        epilog=EXAMPLES_DERIVE, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = d.add_argument_group("the op (formulas or an einsum spec)")
    src.add_argument("--flops", metavar="EXPR", help="FLOPs, e.g. '2*B*D*F'")
    src.add_argument("--bytes", metavar="EXPR", help="bytes moved to and from HBM")
    src.add_argument("--comm-bytes", metavar="EXPR", help="bytes sent over --link")
    src.add_argument("--link", metavar="NAME", help="link of --comm-bytes (default ici)")
    src.add_argument("--einsum", metavar="SPEC", help="einsum spec, e.g. 'B D, D F -> B F'")
    src.add_argument("--dtypes", metavar="LIST", help="dtype of each einsum operand, or one "
                     "for all (default bf16)")
    src.add_argument("--out-dtype", metavar="NAME", help="dtype of the einsum output "
                     "(default: the first operand's)")
    _chip_options(d)
    d.add_argument("--dtype", metavar="NAME", help="dtype whose peak applies (default: the "
                   "first operand's, or bf16)")
    d.add_argument("--unit", default="mxu", choices=("mxu", "vpu"),
                   help="matrix (mxu, tensor cores) or vector unit (default mxu)")
    d.add_argument("--solve", metavar="SYMBOL", help="solve T_math = T_memory for SYMBOL")
    d.add_argument("--regime", metavar="R", help="asymptotic regime, e.g. 'B<<D,F' or 'N->oo'")
    d.add_argument("--subs", metavar="VALUES", help="sizes, e.g. 'D=8192,F=32768'")
    d.add_argument("--format", default="text", choices=("text", "md", "tex"),
                   help="output format (default text)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(run=_derive)

    v = verbs.add_parser(
        "verify", help="check every claim of derivation files and give verdicts",
        description="Derive every claim of the derivation modules and compare it with what "
                    "the text states, at its printed precision. Exit 0 when every claim holds "
                    "(OK, ROUNDING, a known ERRATUM, or an UNVERIFIABLE measurement), 1 when "
                    "any is MISMATCH, STALE, ERROR or TIMEOUT, 2 on bad input.",
        epilog="examples:\n  symroof verify\n  symroof verify derivations/rooflines_ru.py "
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
    v.set_defaults(run=_verify)

    r = verbs.add_parser(
        "report", help="write the derivations up as Markdown, LaTeX and PDF",
        description="Verify the derivations and write each one up (steps, claims with "
                    "stated and derived values and verdicts, figures), with an index that "
                    "lists every verdict and the errata. Files are written atomically once "
                    "everything has rendered; output is byte-for-byte deterministic.",
        epilog="examples:\n  symroof report\n  symroof report --format md,tex,pdf --out out\n"
               "  symroof report --check          (exit 1 when reports/ is stale)\n"
               "  symroof report --lang ru --out reports-ru",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("paths", nargs="*", metavar="PATH",
                   help="derivation modules or folders (default: the bundled derivations)")
    r.add_argument("--format", default="md,tex", metavar="LIST",
                   help="any of md, tex, pdf, comma-separated (default md,tex)")
    r.add_argument("--out", default="reports", metavar="DIR", help="output folder "
                   "(default reports)")
    r.add_argument("--lang", default="en", choices=("en", "ru", "zh"),
                   help="language of the headings and words (default en)")
    r.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when DIR differs from a fresh render")
    r.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                   help="limit per claim (default 30)")
    r.add_argument("--no-cache", action="store_true", help="derive every claim afresh")
    r.set_defaults(run=_report)

    o = verbs.add_parser(
        "optimize", help="constrained optimum by Lagrange multipliers (power-law fast path)",
        description="Minimise an objective subject to an equation by Lagrange multipliers. "
                    "A sum of one power law per variable under a monomial constraint (the "
                    "Chinchilla form) is solved exactly through its log-linear conditions.",
        epilog="examples:\n"
               "  symroof optimize --minimize \"A/N**alpha + B/D**beta\" "
               "--subject-to \"6*N*D = C\" --vars N,D --values alpha=0.34,beta=0.28\n"
               "  symroof optimize --constants hoffmann2022 --at C=5.76e23\n"
               "  symroof optimize --constants besiroglu2024 --json\n\n"
               "constant sets: hoffmann2022, hoffmann2022-unrounded, besiroglu2024, "
               "kaplan2020",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("--minimize", metavar="EXPR", help="the objective (default: the form of "
                   "--constants)")
    o.add_argument("--subject-to", metavar="EQ", help="the constraint, e.g. '6*N*D = C'")
    o.add_argument("--vars", metavar="LIST", default="N,D",
                   help="variables to optimise over (default N,D)")
    o.add_argument("--values", metavar="VALUES", help="constants, e.g. alpha=0.34,beta=0.28")
    o.add_argument("--constants", metavar="NAME", help="a published constant set")
    o.add_argument("--at", metavar="VALUES", help="evaluate at a budget, e.g. C=5.76e23")
    o.add_argument("--method", default="auto", choices=("auto", "power-law", "general"),
                   help="solver (default auto: the fast path when the form allows it)")
    o.add_argument("--json", action="store_true", help="machine-readable output")
    o.set_defaults(run=_optimize)

    c = verbs.add_parser("chips", help="list the chip catalogue",
                         description="List every chip of the catalogue with its headline "
                                     "figures.")
    c.add_argument("--catalog", metavar="FILE", help="a catalogue TOML file of your own")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=_chips)

    one = verbs.add_parser("chip", help="show one chip with the source of every figure",
                           description="Show every figure of one chip, its alternatives and "
                                       "their sources.")
    one.add_argument("name", metavar="NAME", help="chip name, e.g. tpu-v5e")
    _chip_options(one, with_name=False)
    one.add_argument("--json", action="store_true", help="machine-readable output")
    one.set_defaults(run=_chip)
    return parser


def _chip_options(p: argparse.ArgumentParser, with_name: bool = True) -> None:
    if with_name:
        p.add_argument("--chip", default="tpu-v5e", metavar="NAME",
                       help="chip from the catalogue (default tpu-v5e; see 'symroof chips')")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a figure for this run: hbm=8.1e11, hbm='810 GB/s', "
                        "bf16=9.1e14, or an alternative's label (hbm=B1)")
    p.add_argument("--catalog", metavar="FILE", help="a catalogue TOML file of your own")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 2
    run: Callable[[argparse.Namespace], int] = args.run
    from ..core.errors import SymroofError
    try:
        return run(args)
    except SymroofError as exc:
        print(f"symroof: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("symroof: interrupted", file=sys.stderr)
        return 130


def _overrides(pairs: list[str]) -> dict[str, str]:
    from ..core.errors import InputError
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", "--set")
        out[key.strip()] = value.strip()
    return out


def _emit(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _derive(args: argparse.Namespace) -> int:
    from ..engine.formulas import derive_adhoc
    result = derive_adhoc(
        flops=args.flops, bytes=args.bytes, comm_bytes=args.comm_bytes, link=args.link,
        einsum_spec=args.einsum, dtypes=args.dtypes, out_dtype=args.out_dtype,
        chip_name=args.chip, catalog=args.catalog, overrides=_overrides(args.set),
        dtype=args.dtype, unit=args.unit, solve=args.solve, regime=args.regime,
        subs=args.subs)
    if args.json:
        _emit(result.to_json())
        return 0
    from ..render.terminal import derive_lines
    print("\n".join(derive_lines(result, args.format)))
    return 0


def _verify(args: argparse.Namespace) -> int:
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
    from ..render.terminal import verdict_lines
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
    if args.no_timing:
        rows = [{**r, "seconds": None, "cached": None} for r in rows]
    failed = any(r["verdict"] in FAILING for r in rows)
    if args.json:
        shown = [r for r in rows if only is None or r["verdict"] in only]
        _emit({"claims": shown, "summary": summary_of(rows)})
    else:
        print("\n".join(verdict_lines(rows, count, color=sys.stdout.isatty(), only=only)))
    return 1 if failed else 0


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..claims.runner import VerdictCache, load_derivations, verify
    from ..core.errors import InputError
    from ..render.report import FORMATS, render, stale, write
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise InputError(f"unknown format {unknown[0] if unknown else ''!r} (formats: "
                         f"{', '.join(FORMATS)})", "--format")
    if args.check and "pdf" in formats:
        raise InputError("--check compares md and tex only", "--format")
    derivations = load_derivations(args.paths)
    tty = sys.stderr.isatty()
    if tty:
        print("verifying...", end="", file=sys.stderr, flush=True)
    result = verify(derivations, timeout=args.timeout,
                    cache=None if args.no_cache else VerdictCache())
    if tty:
        print("\r\033[Krendering...", end="", file=sys.stderr, flush=True)
    rendered = render(result, formats, lang=args.lang)
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    out = Path(args.out)
    if args.check:
        differing = stale(rendered, out)
        for name in differing:
            print(f"stale: {out / name}")
        if differing:
            print(f"{len(differing)} of {len(rendered.files)} files differ from a fresh "
                  f"render: run 'symroof report' and commit {out}")
            return 1
        print(f"{out}: {len(rendered.files)} files match a fresh render")
        return 0
    written = write(rendered, out)
    print(f"wrote {len(written)} files to {out} "
          f"({len(result.verdicts)} claims: "
          + ", ".join(f"{n} {k}" for k, n in result.summary.items()) + ")")
    return 1 if result.failed else 0


def _optimize(args: argparse.Namespace) -> int:
    from ..models.optimum import optimize_formulas as optimize_adhoc
    result = optimize_adhoc(minimize=args.minimize, subject_to=args.subject_to,
                            variables=args.vars, values=args.values,
                            constants=args.constants, at=args.at, method=args.method)
    if args.json:
        _emit(result.to_json())
    else:
        from ..render.terminal import optimum_lines
        print("\n".join(optimum_lines(result)))
    return 0


def _chips(args: argparse.Namespace) -> int:
    from ..hardware.catalog import load_catalog
    from ..render.terminal import chip_json, chips_lines
    catalog = load_catalog(args.catalog)
    if args.json:
        _emit({"catalog": catalog.path if args.catalog else "bundled",
               "chips": [chip_json(c, brief=True) for c in catalog.chips.values()]})
    else:
        print("\n".join(chips_lines(catalog)))
    return 0


def _chip(args: argparse.Namespace) -> int:
    from ..hardware.catalog import load_catalog
    from ..render.terminal import chip_json, chip_lines
    found = load_catalog(args.catalog)[args.name].with_figures(_overrides(args.set))
    if args.json:
        _emit(chip_json(found))
    else:
        print("\n".join(chip_lines(found)))
    return 0


def _version() -> str:
    from .. import __version__
    return f"symroof {__version__}"


if __name__ == "__main__":
    raise SystemExit(main())
