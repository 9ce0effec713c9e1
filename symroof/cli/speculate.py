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

from .common import count, emit

EXAMPLES = """\
examples:
  symroof speculate --acceptance 0.8 --draft-tokens 4 --cost-ratio 0.05
  symroof speculate --acceptance 4/5 --cost-ratio 1/20 --json
  symroof speculate --acceptance 0.8 --draft llama-2-7b --target llama-2-70b

A draft model proposes --draft-tokens (gamma) tokens, each accepted by the target model with
probability --acceptance (alpha); a draft step costs --cost-ratio (c) target steps. Without
--draft-tokens the best draft length is used. --draft and --target give c as the ratio of
the weights a token multiplies (decoding one sequence reads each weight once).
Leviathan, Kalman and Matias 2023.
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
    c.add_argument("--draft-tokens", type=count, metavar="GAMMA",
                   help="draft tokens per verification step, at most 1024 (default: the "
                        "best)")
    ratio = c.add_mutually_exclusive_group(required=True)
    ratio.add_argument("--cost-ratio", metavar="C",
                       help="a draft step's time over a target step's (e.g. 0.05)")
    ratio.add_argument("--draft", metavar="NAME", help="a draft model (bundled or a "
                       "config.json): c from its weights over --target's")
    c.add_argument("--target", metavar="NAME", help="the target model, with --draft")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=run_speculate)


def run_speculate(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    from ..plans.speculative import best_draft, no_best, speculate
    from ..render.speculative import speculation_json, speculation_lines
    ratio, basis = _ratio(args)
    best = best_draft(args.acceptance, ratio)
    why = "" if best is not None else no_best(args.acceptance, ratio)
    if best is None and args.draft_tokens is None:
        raise InputError(f"no best draft length ({why.removeprefix('none: ')}): give "
                         "--draft-tokens", "--draft-tokens")
    from ..plans.speculative import MAX_GAMMA
    if args.draft_tokens is not None and args.draft_tokens > MAX_GAMMA:
        raise InputError(f"at most {MAX_GAMMA} (the longest draft length the best is searched "
                         f"over), got {args.draft_tokens}", "--draft-tokens")
    gamma = args.draft_tokens or (best.gamma if best else 1)
    s = speculate(args.acceptance, gamma, ratio)
    if args.json:
        emit(speculation_json(s, best, why, basis))
    else:
        print("\n".join(speculation_lines(s, best, why, basis)))
    return 0


def _ratio(args: argparse.Namespace) -> tuple[Any, str]:
    """--cost-ratio as given, or the ratio of --draft's weights to --target's."""
    from ..core.errors import InputError
    if args.draft is None:
        if args.target is not None:
            raise InputError("--target goes with --draft", "--target")
        return args.cost_ratio, ""
    if args.target is None:
        raise InputError("--draft needs --target, the model it drafts for", "--draft")
    from ..core.printer import approx, text
    from ..models import model
    from ..plans.mfu import model_params
    from ..plans.speculative import cost_ratio_of
    try:
        draft = model(args.draft)
    except InputError as exc:
        raise InputError(exc.message, "--draft") from None
    try:
        target = model(args.target)
    except InputError as exc:
        raise InputError(exc.message, "--target") from None
    c = cost_ratio_of(draft, target)
    return c, (f"{text(c)} = {model_params(draft)} / {model_params(target)} weights a token "
               f"multiplies ({draft.name} over {target.name}; decoding one sequence reads "
               f"each once; ≈ {approx(c)})")
