"""symroof optimize: a constrained optimum by Lagrange multipliers.

>>> from symroof.cli.main import main
>>> main(["optimize", "--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D = C",
...       "--values", "alpha=0.34,beta=0.28"])  # doctest: +ELLIPSIS
minimise   A/N**(17/50) + B/D**(7/25)
subject to 6*D*N = C
...
d log N* / d log C = 14/31 ≈ 0.45161
d log D* / d log C = 17/31 ≈ 0.54839
0
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import bounded, emit, timeout_option


def register(verbs: Any) -> None:
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
    timeout_option(o)
    o.set_defaults(run=run_optimize)


def run_optimize(args: argparse.Namespace) -> int:
    return bounded(args.timeout, lambda: _optimize(args))


def _optimize(args: argparse.Namespace) -> int:
    from ..commands.optimize import OptimizeRequest, optimize
    result = optimize(OptimizeRequest(minimize=args.minimize, subject_to=args.subject_to,
                                      variables=args.vars, values=args.values,
                                      constants=args.constants, at=args.at,
                                      method=args.method))
    if args.json:
        emit(result.to_json())
    else:
        from ..render.terminal import optimum_lines
        print("\n".join(optimum_lines(result, exact_in="--json")))
    return 0
