"""The command line: ``symroof VERB ...``, one module per verb.

>>> main(["derive", "--flops", "B*D*F", "--comm-bytes", "2*B*F",
...       "--solve", "D"])  # doctest: +ELLIPSIS
flops B*D*F on tpu-v5e (mxu bf16)
...
  threshold            D > 78800/9 ≈ 8755.6 (against ici)
  smallest integer     8756
...
0

Exit codes: 0 success, 1 a check failed, 2 bad input or usage (one line on stderr).
SymPy is imported only by the verbs that need it, so ``symroof --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from . import (
    chips,
    claims,
    collective,
    derive,
    model,
    optimize,
    plan,
    report,
    speculate,
    verify,
)
from .common import Parser

VERBS = (derive, collective, model, plan, speculate, verify, report, optimize, chips, claims)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="symroof",
        description="Exact symbolic rooflines for ML systems: intensity, bounds, regimes, "
                    "thresholds, from formulas or einsum specs.",
        epilog="Run 'symroof VERB --help' for a verb's options and examples.")
    parser.add_argument("--version", action="version", version=_version())
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    for verb in VERBS:
        verb.register(verbs)
    return parser


def one_line(text: str) -> str:
    """An error message kept on one line: control characters and line breaks a message
    quotes from its input (a path, a name) escaped.

    >>> one_line("a\\nb\\x1b[31m: no such file")
    'a\\\\nb\\\\x1b[31m: no such file'
    """
    return re.sub("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]",
                  lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 2
    run: Callable[[argparse.Namespace], int] = args.run
    from ..core.errors import SymroofError
    try:
        if getattr(args, "exact", False):  # the printer imports SymPy: only when asked
            from ..core.printer import exact_views
            with exact_views():
                return run(args)
        return run(args)
    except SymroofError as exc:
        from .flags import flagged
        print(f"symroof: error: {one_line(str(flagged(exc, args.verb)))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("symroof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped (head): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def console() -> NoReturn:
    """The ``symroof`` program: :func:`main`, its output flushed, then the process ends
    without tearing the interpreter down object by object (after a verify that is a tenth
    of a second of freeing SymPy's expressions). Every file it writes is closed by then.
    A closed standard stream reads or writes the null device; text that the output's
    encoding cannot take is replaced; output that cannot be written is one line, exit 1."""
    _standard_streams()
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        code = 1
    except OSError as exc:  # a full disk, /dev/full
        _say(f"symroof: error: cannot write the output: {exc.strerror or exc}")
        code = 1
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)


class _ClosedOutput(io.TextIOBase):
    """A standard output that was closed: writing to it is an error (as on /dev/full)."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            raise OSError(errno.EBADF, "the standard output is closed")
        return 0


def _standard_streams() -> None:
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the number stays taken
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if fd == 1:
                sys.stdout = _ClosedOutput()
                continue
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace",  # noqa: SIM115
                                    closefd=False))
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def _version() -> str:
    from .. import __version__
    return f"symroof {__version__}"


if __name__ == "__main__":
    console()
