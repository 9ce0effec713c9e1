"""symroof derive: a roofline, its regime and threshold from formulas typed on the command line.

>>> from symroof.cli.main import main
>>> main(["derive", "--einsum", "B D, D F -> B F", "--set", "hbm=B1", "--solve", "B",
...       "--regime", "B<<D,F"])  # doctest: +ELLIPSIS
B D, D F -> B F on tpu-v5e (mxu bf16)
...
  threshold, B<<D,F   9850/41 ≈ 240.24
...
0
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    bounded,
    chip_options,
    choices_option,
    emit,
    exact_option,
    overrides,
    timeout_option,
)

EXAMPLES_DERIVE = """\
examples:
  symroof derive --einsum "B D, D F -> B F" --dtypes bf16 --chip tpu-v5e --set hbm=B1 \\
      --solve B --regime "B<<D,F"
  symroof derive --flops "2*N - 1" --bytes "4*N + 2" --regime "N->oo"
  symroof derive --flops "2*B*D*F" --chip h100-sxm
  symroof derive --flops "2*B*D*F" --comm-bytes "4*B*F" --comm-per both --link ici
  symroof derive --flops "B*D*F" --comm-bytes "2*B*F" --link ici --solve D
  symroof derive --einsum "B D, D F -> B F" --dtypes bf16,int8 --out-dtype bf16 \\
      --set hbm=8.2e11 --solve B --subs "D=4096,F=4096" --json
  symroof derive --mesh "X=2" --chip tpu-v5e --matmul "bf16[B, D_X] x bf16[D_X, F]" \\
      --between math,ici --solve D
  symroof derive --mesh "X=16:wraps" --chip tpu-v5e --matmul "bf16[B, D_X] x bf16[D_X, F]"
  symroof derive --mesh "X=8" --chip h100-sxm --flops "2*B*D*F/8" --comm-bytes "2*B*F" \\
      --link X --between math,nvlink --solve D
  symroof derive --mesh "X=8" --chip tpu-v5e --matmul "bf16[B, D_X] x bf16[D_X, F]" \\
      --serial ici,latency --subs "B=512,D=8192,F=8192"
  symroof derive --mesh "X=16,Y=16,Z=16" --chip tpu-v5p --mlp "fsdp=XY,tp=Z" \\
      --choices book --between math,ici --solve B --subs "D=8192,F=65536"
  symroof derive --mesh "X=4,Y=4,Z=4" --chip tpu-v5p --stationary "d=X,f=YZ" \\
      --choices book --between math,ici --solve B

Formulas use + - * / ** ( ), numbers (1.97e14 is read exactly), names (every name is a
positive size) and sqrt exp log min max floor ceil. Nothing is evaluated as Python.
"""


def register(verbs: Any) -> None:
    d = verbs.add_parser(
        "derive", help="derive a roofline from formulas typed on the command line",
        description="Derive intensity, roofline times and bounds, the asymptotic intensity "
                    "in a regime and the critical threshold of one op on one chip.",
        epilog=EXAMPLES_DERIVE, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = d.add_argument_group("the op (formulas or an einsum spec)")
    src.add_argument("--flops", metavar="EXPR", help="FLOPs, e.g. '2*B*D*F' (alone: a "
                     "pure-FLOP op, compute-bound at any size)")
    src.add_argument("--bytes", metavar="EXPR", help="bytes moved to and from HBM")
    src.add_argument("--comm-bytes", metavar="EXPR", help="bytes sent over --link, per "
                     "direction (timed at the one-way bandwidth) unless --comm-per both")
    src.add_argument("--comm-per", default="direction", choices=("direction", "both"),
                     help="--comm-bytes counts one direction (default; the one-way "
                          "bandwidth) or both directions summed (the bidirectional one)")
    src.add_argument("--link", metavar="NAME", help="link of --comm-bytes (default ici)")
    src.add_argument("--einsum", metavar="SPEC", help="einsum spec, e.g. 'B D, D F -> B F'")
    src.add_argument("--dtypes", metavar="LIST", help="dtype of each einsum operand, or one "
                     "for all (default bf16)")
    src.add_argument("--out-dtype", metavar="NAME", help="dtype of the einsum output "
                     "(default: the first operand's)")
    chip_options(d)
    timeout_option(d)
    d.add_argument("--dtype", metavar="NAME", help="dtype whose peak applies (default: the "
                   "first operand's, or bf16)")
    d.add_argument("--compute", "--unit", dest="compute", default="mxu", choices=("mxu", "vpu"),
                   help="compute unit: matrix (mxu, tensor cores) or vector (vpu; default mxu)")
    d.add_argument("--solve", metavar="SYMBOL", help="solve T_math = T_memory for SYMBOL")
    d.add_argument("--regime", metavar="R", help="asymptotic regime, e.g. 'B<<D,F' or 'N->oo'")
    d.add_argument("--subs", metavar="VALUES", help="sizes, e.g. 'D=8192,F=32768'")
    d.add_argument("--format", default="text", choices=("text", "md", "tex"),
                   help="output format (default text)")
    on = d.add_argument_group("many chips")
    on.add_argument("--mesh", metavar="SPEC", help="a mesh, e.g. 'X=8,Y=4' (then --link "
                    "may name an axis)")
    on.add_argument("--matmul", metavar="'LHS x RHS'", help="a sharded matmul on --mesh, "
                    "e.g. 'bf16[B, D_X] x bf16[D_X, F]'")
    on.add_argument("--scatter", metavar="DIM", help="reduce-scatter the matmul's partial "
                    "sums onto DIM instead of all-reducing them")
    on.add_argument("--mlp", metavar="SPEC", help="one pass of an MLP layer's training step "
                    "In[B, D] W_in[D, F] W_out[F, D] on --mesh: FSDP and tensor-parallel "
                    "axes, e.g. 'fsdp=XY,tp=Z' (its terms: math, hbm, each link)")
    on.add_argument("--stationary", metavar="SPEC", help="an MLP's inference forward on "
                    "--mesh with its weights at rest: F over the f axes, and for a 2-D "
                    "layout D over the d axes, e.g. 'f=XYZ' (1-D) or 'd=X,f=YZ' (2-D); its "
                    "terms: math, hbm, each link, latency")
    on.add_argument("--phase", metavar="NAME", help="the --mlp pass: forward (default) or "
                    "backward")
    choices_option(on, "--mlp or --stationary")
    on.add_argument("--topology", metavar="NAME", help="the chip's topology (default: its "
                    "first)")
    d.add_argument("--between", metavar="TERM,TERM", help="the threshold between two terms: "
                   "math, a memory level, a link, latency, bandwidth (e.g. math,ici)")
    d.add_argument("--serial", metavar="TERMS", help="terms that do not overlap the others "
                   "and add to T_lower, e.g. 'ici,latency' (default: all overlap)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    exact_option(d)
    d.set_defaults(run=run_derive)


def run_derive(args: argparse.Namespace) -> int:
    return bounded(args.timeout, lambda: _derive(args))


def _derive(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    if args.mesh is not None:
        if args.einsum is not None:
            raise InputError("with --mesh use --matmul 'LHS x RHS' (sharded arrays) instead "
                             "of --einsum", "--einsum")
    else:
        for flag in ("matmul", "scatter", "topology", "mlp", "stationary", "phase",
                     "choices"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} needs --mesh", f"--{flag}")
    from ..commands.derive import DeriveRequest, derive
    on_mesh = {"mesh": args.mesh, "topology": args.topology, "matmul": args.matmul,
               "scatter": args.scatter, "mlp": args.mlp, "phase": args.phase,
               "stationary": args.stationary,
               "choices": args.choices} if args.mesh is not None else {}
    formulas = {"einsum": args.einsum, "dtypes": args.dtypes, "out_dtype": args.out_dtype,
                "compute": args.compute} if args.mesh is None else {}
    result = derive(DeriveRequest(
        flops=args.flops, bytes=args.bytes, comm_bytes=args.comm_bytes, link=args.link,
        chip=args.chip, catalog=args.catalog, overrides=overrides(args.set),
        dtype=args.dtype, solve=args.solve, regime=args.regime, subs=args.subs,
        between=args.between, serial=args.serial, comm_per=args.comm_per, **on_mesh,
        **formulas))
    if args.json:
        emit(result.to_json())
        return 0
    from ..render.terminal import derive_lines
    print("\n".join(derive_lines(result, args.format)))
    return 0
