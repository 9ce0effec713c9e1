"""symroof speculate: speculative decoding's expected tokens per step and speedup, exact.

>>> from symroof.cli.main import main
>>> main(["speculate", "--acceptance", "0.8", "--draft-tokens", "4",
...       "--cost-ratio", "0.05"])  # doctest: +ELLIPSIS
speculative decoding: acceptance rate alpha = 0.8, draft tokens per step gamma = 4, ...
  expected speedup              2101/750 ≈ 2.8 ...
0
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import emit

EXAMPLES = """\
examples:
  symroof speculate --acceptance 0.8 --draft-tokens 4 --cost-ratio 0.05
  symroof speculate --acceptance 4/5 --cost-ratio 1/20 --json

A draft model proposes --draft-tokens (gamma) tokens, each accepted by the target model with
probability --acceptance (alpha); a draft step costs --cost-ratio (c) target steps. Without
--draft-tokens the best draft length is used. Leviathan, Kalman and Matias 2023.
"""


def register(verbs: Any) -> None:
    c = verbs.add_parser(
        "speculate", help="speculative decoding: expected tokens per step and speedup",
        description="The expected tokens per verification step (1 - alpha^(gamma+1))/(1 - "
                    "alpha) and the expected speedup over plain decoding, divided by gamma c "
                    "+ 1, exact; and the draft length with the largest speedup.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--acceptance", required=True, metavar="ALPHA",
                   help="the probability a draft token is accepted, 0 to 1 (e.g. 0.8 or 4/5)")
    c.add_argument("--draft-tokens", type=_count, metavar="GAMMA",
                   help="draft tokens per verification step (default: the best)")
    c.add_argument("--cost-ratio", required=True, metavar="C",
                   help="a draft step's time over a target step's (e.g. 0.05)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=run_speculate)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def run_speculate(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    from ..plans.speculative import best_draft, no_best, speculate
    from ..render.speculative import speculation_json, speculation_lines
    best = best_draft(args.acceptance, args.cost_ratio)
    why = "" if best is not None else no_best(args.acceptance, args.cost_ratio)
    if best is None and args.draft_tokens is None:
        raise InputError(f"no best draft length ({why.removeprefix('none: ')}): give "
                         "--draft-tokens", "--draft-tokens")
    gamma = args.draft_tokens or (best.gamma if best else 1)
    s = speculate(args.acceptance, gamma, args.cost_ratio)
    if args.json:
        emit(speculation_json(s, best, why))
    else:
        print("\n".join(speculation_lines(s, best, why)))
    return 0
