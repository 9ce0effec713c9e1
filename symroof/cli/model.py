"""symroof model: a transformer's parameters, FLOPs, KV cache, step rooflines and capacity.

>>> from symroof.cli.main import main
>>> main(["model", "llama-2-7b"])  # doctest: +ELLIPSIS
llama-2-7b: 32 layers, d_model 4096, d_ff 11008 (gated), ...
  parameters                 6738415616 ≈ 6.7384e9
...
0
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    chip_options,
    choices_option,
    defaulted_chip,
    emit,
    exact_option,
    kernel_options,
    overrides,
)

EXAMPLES_MODEL = """\
examples:
  symroof model llama-2-7b
  symroof model meta-llama/Llama-2-7b-hf --context 4096 --json
  symroof model path/to/config.json --symbolic
  symroof model llama-2-7b --decode --batch 64 --context 1024 --chip a100-80gb
  symroof model mixtral-8x7b --prefill --tokens 2048 --chip h100-sxm --format md
  symroof model llama-2-7b --decode --context 2048 --chip h100-sxm --mesh X=8 \\
      --between math,nvlink
  symroof model llama-3-70b --fit --chip a100-80gb --context 8192
  symroof model llama-3-70b --fit --chip h100-sxm --context 2048 --chips 8 \\
      --choices sizes=nominal --set params=70e9 --set kv_bytes_per_token=320e3

Bundled models: symroof model --list. Weights and KV cache are bf16 unless --dtype and
--kv-dtype say otherwise. --choices sizes=nominal takes the round size texts use (70B for
llama-3-70b's 70.6B), or the text's own figures given with --set params=N and --set
kv_bytes_per_token=N.
"""


def register(verbs: Any) -> None:
    m = verbs.add_parser(
        "model", help="a transformer's parameters, FLOPs, KV cache, rooflines and capacity",
        description="Exact parameter counts, FLOPs per token, KV-cache bytes, per-layer "
                    "rooflines of a decode or prefill step, and what fits in memory, for a "
                    "bundled model or a Hugging Face config.json.",
        epilog=EXAMPLES_MODEL, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("name", nargs="?", metavar="NAME|config.json",
                   help="bundled model (llama-2-7b), Hugging Face id, or a config file")
    m.add_argument("--list", action="store_true", help="list the bundled models")
    what = m.add_mutually_exclusive_group()
    what.add_argument("--decode", action="store_true", help="roofline of one decode step")
    what.add_argument("--prefill", action="store_true", help="roofline of one prefill step")
    what.add_argument("--fit", action="store_true", help="memory, largest batch, fewest chips")
    m.add_argument("--batch", type=int, metavar="B", help="sequences in the batch (default 1)")
    m.add_argument("--context", type=int, metavar="T", help="positions attended (decode), "
                   "or the context of the FLOP count and of --fit")
    m.add_argument("--tokens", type=int, metavar="T", help="prompt tokens per sequence "
                   "(prefill)")
    m.add_argument("--dtype", default="bf16", metavar="NAME", help="weights (default bf16)")
    m.add_argument("--kv-dtype", metavar="NAME", help="KV cache (default: --dtype)")
    m.add_argument("--chips", type=int, metavar="N",
                   help="chips holding the model for --fit's largest batch (default 1)")
    m.add_argument("--mesh", metavar="AXES", help="split weights and KV cache over a mesh "
                   "by tensor parallelism, e.g. 'X=8' (its chips for --fit)")
    m.add_argument("--between", metavar="TERM,TERM", help="--decode/--prefill: the batch where "
                   "two terms of the step meet: math, hbm, a collective's term or its link "
                   "(e.g. math,nvlink)")
    m.add_argument("--usable", metavar="FRACTION",
                   help="usable fraction of each chip's memory for --fit (default 1)")
    m.add_argument("--symbolic", action="store_true",
                   help="also print the counts in the config's letters")
    chip_options(m)
    m.set_defaults(chip=None)  # tpu-v5e, when a step or --fit asks for a chip
    kernel_options(m, "flash")
    m.add_argument("--overlap", choices=("op", "phase", "none"),
                   help="--decode/--prefill: how the step's terms add up, as plan's --overlap: "
                        "op (default), each op's compute overlaps its own memory traffic and "
                        "each collective waits for its op; phase, every term overlaps the "
                        "others (the longest term); none, nothing overlaps (T_upper)")
    choices_option(m, "--decode/--prefill on a mesh, as plan --serve, their book form "
                      "under sizes=nominal too; --fit takes sizes=nominal (a text's round "
                      "figures), the summary sizes and flops")
    m.add_argument("--format", default="text", choices=("text", "md"),
                   help="output format (default text)")
    m.add_argument("--json", action="store_true", help="machine-readable output")
    exact_option(m)
    m.set_defaults(run=run_model)


def run_model(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    if args.list:
        return _list(args)
    if not args.name:
        raise InputError("give a model name or a config.json path (symroof model --list)")
    from ..models.counts import count_of
    for flag in ("batch", "context", "tokens", "chips"):
        # a context of 0 attends nothing (the FLOP count without attention), as in Python
        if getattr(args, flag) is not None:
            count_of(getattr(args, flag), "", f"--{flag}", least=int(flag != "context"))
    from ..core.sizes import dtype_bytes
    dtype_bytes(args.dtype, where="--dtype")
    if args.kv_dtype is not None:
        dtype_bytes(args.kv_dtype, where="--kv-dtype")
    mode = "--decode" if args.decode else "--prefill" if args.prefill else \
        "--fit" if args.fit else None
    from ..commands.model import ROUND_FIGURES
    chip_set = overrides(args.set)
    round_set = {k: chip_set.pop(k) for k in list(chip_set) if k in ROUND_FIGURES}
    on_chip, fit = "only --decode, --prefill and --fit use it", "only --fit uses it"
    unused = {"--chip": (args.chip is not None and mode is None, on_chip),
              "--set": (bool(chip_set) and mode is None, on_chip),
              **{f"--set {k}": (mode != "--fit" and not args.choices,
                                "a round figure is taken by the summary, --fit and the book "
                                "form of --decode and --prefill, under --choices "
                                "sizes=nominal") for k in round_set},
              "--catalog": (args.catalog is not None and mode is None, on_chip),
              "--mesh": (args.mesh is not None and mode is None, on_chip),
              "--batch": (args.batch is not None and mode is None, on_chip),
              "--chips": (args.chips is not None and mode != "--fit", fit),
              "--usable": (args.usable is not None and mode != "--fit", fit),
              "--tokens": (args.tokens is not None and mode != "--prefill",
                           "only --prefill uses it (--context for the others)"),
              "--symbolic": (args.symbolic and mode is not None,
                             "the summary (no --decode, --prefill or --fit) prints the letters"),
              **{flag: (given and mode not in ("--decode", "--prefill"),
                        "only --decode and --prefill run kernels")
                 for flag, given in (("--attention", args.attention is not None),
                                     ("--causal", args.causal),
                                     ("--activations", args.activations != "hbm"),
                                     )}}
    for flag, (ignored, why) in unused.items():
        if ignored:
            raise InputError(f"given but not used: {why}", flag)
    if args.chips is not None and args.mesh:
        raise InputError("--fit on a mesh holds the model on the mesh's chips: give --chips "
                         "or --mesh, not both", "--chips")
    from ..commands.model import ModelRequest
    from ..core.choices import EXACT, parse_choices
    from ..models.layers import Kernel
    request = ModelRequest(
        args.name, batch=args.batch, context=args.context, tokens=args.tokens,
        dtype=args.dtype, kv_dtype=args.kv_dtype, chip=args.chip, catalog=args.catalog,
        overrides=chip_set, round_figures=round_set, mesh=args.mesh, between=args.between,
        chips=args.chips, usable=args.usable, symbolic=args.symbolic,
        kernel=Kernel(args.attention or "flash", args.causal,
                      args.activations.replace("-", "_")),
        choices=parse_choices(args.choices) if args.choices else EXACT,
        overlap=args.overlap or "op")
    if args.overlap is not None and not (args.decode or args.prefill):
        raise InputError("the overlap rule times a step: give --decode or --prefill",
                         "--overlap")
    try:
        request.config()  # an unknown model is the first error
    except InputError as exc:
        if (exc.where or "").startswith("round_figures"):
            raise InputError(exc.message, "--set " + (exc.where or "").split(" ", 1)[-1]) from None
        raise
    if args.between is not None and not (args.decode or args.prefill):
        raise InputError("--between solves a step for its batch: give --decode or --prefill",
                         "--between")
    if args.decode or args.prefill:
        return _step(args, request, "decode" if args.decode else "prefill")
    if args.fit:
        return _fit(args, request)
    return _summary(args, request)


def _list(args: argparse.Namespace) -> int:
    from ..commands.model import bundled_models
    rows = bundled_models()
    if args.json:
        emit({"models": [{"name": n, "repo": r, "params": p} for n, r, p in rows]})
    else:
        width = max(len(n) for n, _, _ in rows)
        print("\n".join(f"{n:<{width}}  {p:>14,}  {r}" for n, r, p in rows))
    return 0


def _summary(args: argparse.Namespace, request: Any) -> int:
    from ..commands.model import model_summary
    from ..render.model_views import summary_json, summary_lines
    s = model_summary(request)
    if args.json:
        emit(summary_json(s))
    else:
        print("\n".join(summary_lines(s, args.format)))
    return 0


def _step(args: argparse.Namespace, request: Any, phase: str) -> int:
    from ..commands.model import model_step
    from ..core.printer import number_value, si, text
    from ..render.model_views import meet_line, step_json, step_lines
    r = model_step(request, phase)
    met = r.meet
    if args.json:
        emit({"model": r.config.name, "mesh": args.mesh,
              **step_json(r.step, r.critical, r.intensity),
              **({"between": met.to_json()} if met is not None else {}),
              **({f"book_{phase}_time": text(r.book), f"book_{phase}_time_value":
                  number_value(r.book)} if r.book is not None else {})})
        return 0
    on = f", per chip of mesh {args.mesh} (tp={'+'.join(r.mesh.axes)})" if r.mesh else ""
    title = (f"{r.config.name} {phase}, batch {r.batch}, " +
             (f"context {r.context}" if phase == "decode" else f"{r.context} tokens each") +
             f", on {r.chip.name}{defaulted_chip(args.chip)}{on} ({args.dtype} weights, "
             f"{request.kv} KV cache)")
    read = "weights" if request.choices.traffic == "weights" else "weights and KV cache"
    on = f" on {text(r.mesh.devices)} chips" if r.mesh else ""
    said = (f"{read} read once over {r.chip.name}'s HBM{on}, no compute" if phase == "decode"
            else f"2 FLOPs per parameter per token over {r.chip.name}'s peak{on}, no memory")
    book = [f"book form: {said}: {si(r.book, 's')}" + _sizes(request)] \
        if r.book is not None else []
    print("\n".join(step_lines(r.step, r.critical, r.intensity, args.format, title) +
                    ([meet_line(met)] if met is not None else []) + book))
    return 0


def _sizes(request: Any) -> str:
    """Which round figures the book form took, under sizes=nominal."""
    if request.choices.sizes != "nominal":
        return ""
    from ..models.nominal import round_figures
    return f" (sizes nominal: {round_figures(request.config())})"


def _fit(args: argparse.Namespace, request: Any) -> int:
    from ..commands.model import model_fit
    from ..render.model_views import fit_json, fit_lines
    r = model_fit(request)
    kv, context, batch = request.kv, r.context, r.batch
    if args.json:
        emit(fit_json(r.memory, r.capacity, r.fits, r.facts(args.dtype, kv)))
        return 0
    # two questions, said apart: a mesh is tensor parallel (norms and replicated KV heads on
    # every chip, as plan --serve holds them); --chips pools the memory, split evenly
    on = (f"mesh {args.mesh} (tp)" if args.mesh else
          f"{r.chips} x {r.chip.name}, split evenly" if r.chips > 1 else r.chip.name)
    labels = {"max_batch": f"largest batch at context {context} on {on}",
              "max_context": f"longest context at batch {batch} on {on}",
              "min_chips": f"fewest chips at batch {batch}, context {context}, split evenly"}
    title = (f"{r.config.name} on {r.chip.name}{defaulted_chip(args.chip)}: {args.dtype} "
             f"weights, {kv} KV cache; memory at batch {batch}, context {context}")
    print("\n".join(fit_lines(title, r.memory, r.capacity, r.fits, labels, args.format)))
    return 0
