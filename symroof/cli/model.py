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

from .common import chip_options, emit, exact_option, kernel_options, overrides

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

Bundled models: symroof model --list. Weights and KV cache are bf16 unless --dtype and
--kv-dtype say otherwise.
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
    m.add_argument("--format", default="text", choices=("text", "md"),
                   help="output format (default text)")
    m.add_argument("--json", action="store_true", help="machine-readable output")
    exact_option(m)
    m.set_defaults(run=run_model)


def run_model(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    from ..models import bundled, model
    if args.list:
        return _list(args, bundled())
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
    on_chip, fit = "only --decode, --prefill and --fit use it", "only --fit uses it"
    unused = {"--chip": (args.chip is not None and mode is None, on_chip),
              "--set": (bool(args.set) and mode is None, on_chip),
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
                                     ("--activations", args.activations != "hbm"))}}
    for flag, (ignored, why) in unused.items():
        if ignored:
            raise InputError(f"given but not used: {why}", flag)
    if args.chips is not None and args.mesh:
        raise InputError("--fit on a mesh holds the model on the mesh's chips: give --chips "
                         "or --mesh, not both", "--chips")
    cfg = model(args.name)
    if args.between is not None and not (args.decode or args.prefill):
        raise InputError("--between solves a step for its batch: give --decode or --prefill",
                         "--between")
    if args.decode or args.prefill:
        return _step(args, cfg)
    if args.fit:
        return _fit(args, cfg)
    return _summary(args, cfg)


def _list(args: argparse.Namespace, configs: dict[str, Any]) -> int:
    from ..models import params
    rows = [(n, c.source.get("repo", ""), params(c).total) for n, c in configs.items()]
    if args.json:
        emit({"models": [{"name": n, "repo": r, "params": int(p)} for n, r, p in rows]})
    else:
        width = max(len(n) for n, _, _ in rows)
        print("\n".join(f"{n:<{width}}  {int(p):>14,}  {r}" for n, r, p in rows))
    return 0


def _summary(args: argparse.Namespace, cfg: Any) -> int:
    from ..core.quant import rest_dtype
    from ..models import flops_per_token, kv_bytes_per_token, params, training_flops_per_token
    from ..render.model_views import Summary, summary_json, summary_lines
    kv = args.kv_dtype or rest_dtype(args.dtype)
    symbolic = None
    if args.symbolic:
        symbolic = {"params": params(cfg, symbolic=True).total,
                    "params_active": params(cfg, symbolic=True).active,
                    "flops_per_token": flops_per_token(cfg, symbolic=True),
                    "kv_bytes_per_token": kv_bytes_per_token(cfg, kv, symbolic=True)}
    s = Summary(cfg, params(cfg), flops_per_token(cfg, args.context),
                training_flops_per_token(cfg, args.context), kv_bytes_per_token(cfg, kv),
                None if args.context is None else args.context, args.dtype, kv, symbolic)
    if args.json:
        emit(summary_json(s))
    else:
        print("\n".join(summary_lines(s, args.format)))
    return 0


def _chip(args: argparse.Namespace) -> Any:
    from ..engine.formulas import command_line_chip
    return command_line_chip(args.chip or "tpu-v5e", args.catalog, overrides(args.set))


def _step(args: argparse.Namespace, cfg: Any) -> int:
    from ..core.errors import InputError
    from ..models import decode_intensity
    from ..models.layers import Kernel
    from ..models.tensor_parallel import shard
    from ..plans.serving import step_on
    from ..render.model_views import meet_line, step_json, step_lines
    phase = "decode" if args.decode else "prefill"
    context = args.context if phase == "decode" else (args.tokens or args.context)
    if context == 0:
        raise InputError("a step attends at least one position, got 0", "--context")
    if context is None:
        raise InputError("give the positions attended", "--context" if phase == "decode"
                         else "--tokens")
    batch = args.batch or 1
    the_chip = _chip(args)
    on, m = "", None
    if args.mesh:  # the serving plan's step, tensor parallel over every axis of the mesh
        from ..parallel import mesh
        m = mesh(args.mesh, the_chip)
        on = f", per chip of mesh {args.mesh} (tp={'+'.join(m.axes)})"
    kernel = Kernel(args.attention or "flash", args.causal,
                    args.activations.replace("-", "_"))
    step, critical = step_on(cfg, phase, the_chip, m, batch=batch, context=context,
                             dtype=args.dtype, kv_dtype=args.kv_dtype, kernel=kernel)
    met = None
    if args.between is not None:
        from ..plans.meets import step_between
        met = step_between(cfg, phase, the_chip, m, args.between, context=context,
                           dtype=args.dtype, kv_dtype=args.kv_dtype, kernel=kernel)
    intensity = None
    if phase == "decode":
        tp = int(m.devices) if m is not None else 1
        intensity = decode_intensity(shard(cfg, tp), dtype=args.dtype, kv_dtype=args.kv_dtype,
                                     kernel=kernel)
    if args.json:
        emit({"model": cfg.name, "mesh": args.mesh, **step_json(step, critical, intensity),
              **({"between": met.to_json()} if met is not None else {})})
        return 0
    from ..core.quant import rest_dtype
    kv = args.kv_dtype or rest_dtype(args.dtype)
    title = (f"{cfg.name} {phase}, batch {batch}, " +
             (f"context {context}" if phase == "decode" else f"{context} tokens each") +
             f", on {the_chip.name}{on} ({args.dtype} weights, {kv} KV cache)")
    print("\n".join(step_lines(step, critical, intensity, args.format, title) +
                    ([meet_line(met)] if met is not None else [])))
    return 0


def _fit(args: argparse.Namespace, cfg: Any) -> int:
    from ..core.errors import DerivationError, InputError
    from ..models import inference_memory, kv_bytes_per_token, max_batch, max_context, min_chips
    from ..render.model_views import fit_json, fit_lines
    context = cfg.context_length if args.context is None else args.context
    if args.context == 0:
        raise InputError("--fit needs a positive context (0 attends nothing)", "--context")
    if not context:
        raise InputError("the config names no context length: give one", "--context")
    the_chip = _chip(args)
    batch = args.batch or 1
    args.chips = args.chips or 1
    tp, pooled = 1, args.chips  # a mesh: one chip's shard against one chip's memory
    if args.mesh:
        from ..parallel import mesh
        n = mesh(args.mesh, the_chip).devices
        if not n.is_Integer:
            raise InputError(f"the mesh must have a whole number of chips, got {n}", "--mesh")
        args.chips, tp, pooled = int(n), int(n), 1
    common = {"dtype": args.dtype, "kv_dtype": args.kv_dtype,
              "usable": "1" if args.usable is None else args.usable}
    fits: dict[str, tuple[Any, str]] = {}
    for key, call in (
            ("max_batch", lambda: max_batch(cfg, the_chip, context=context, chips=pooled,
                                            tp=tp, **common)),
            ("max_context", lambda: max_context(cfg, the_chip, batch=batch, chips=pooled,
                                                tp=tp, **common)),
            ("min_chips", lambda: min_chips(cfg, the_chip, batch=batch, context=context,
                                            **common))):
        try:
            fits[key] = (call(), "")
        except DerivationError as exc:
            fits[key] = (None, exc.message)
    from ..core.quant import rest_dtype
    kv = args.kv_dtype or rest_dtype(args.dtype)
    mem = inference_memory(cfg, batch=batch, context=context, dtype=args.dtype, kv_dtype=kv)
    cap = fits["min_chips"][0].capacity
    facts = {"model": cfg.name, "chip": the_chip.name, "context": context, "batch": batch,
             "chips": args.chips, "dtype": args.dtype, "kv_dtype": kv,
             "kv_bytes_per_token": int(kv_bytes_per_token(cfg, kv))}
    if args.json:
        emit(fit_json(mem, cap, fits, facts))
        return 0
    on = f"{args.chips} x {the_chip.name}" if args.chips > 1 else the_chip.name
    labels = {"max_batch": f"largest batch at context {context} on {on}",
              "max_context": f"longest context at batch {batch} on {on}",
              "min_chips": f"fewest chips at batch {batch}, context {context}"}
    title = (f"{cfg.name} on {the_chip.name}: {args.dtype} weights, {kv} KV cache; memory "
             f"at batch {batch}, context {context}")
    print("\n".join(fit_lines(title, mem, cap, fits, labels, args.format)))
    return 0
