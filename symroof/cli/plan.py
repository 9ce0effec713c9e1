"""symroof plan: a model trained or served on a mesh: memory, terms, bounds, critical batch.

>>> from symroof.cli.main import main
>>> main(["plan", "llama-2-7b", "--train", "--mesh", "X=16,Y=16", "--strategy", "fsdp=X,tp=Y",
...       "--chip", "tpu-v5e", "--batch", "256", "--context", "4096"])  # doctest: +ELLIPSIS
llama-2-7b ...
0
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..hardware import DEFAULT_CHIP
from .common import (
    chip_options,
    choices_option,
    count,
    defaulted_chip,
    emit,
    exact_option,
    kernel_options,
    overrides,
)

EXAMPLES_PLAN = """\
examples:
  symroof plan llama-2-7b --train --mesh "X=16,Y=16" --strategy "fsdp=X,tp=Y" \\
      --chip tpu-v5e --batch 256 --context 4096
  symroof plan llama-2-7b --train --mesh "X=8,Y=8" --strategy "zero1=X,pp=Y" \\
      --microbatches 16 --chip tpu-v5p --batch 512 --context 2048 --json
  symroof plan llama-2-7b --train --search 256 --chip tpu-v5e --batch 256 --context 4096
  symroof plan megatron-gpt-175b --train --search 64 --mesh "X=8,Y=8" \\
      --strategy "pp=X,tp=Y,sp" --microbatches 64 --chip a100-80gb --batch 64 \\
      --optimizer adam-megatron --recompute selective --efficiency megatron-a100
  symroof plan llama-2-7b --serve --mesh "X=8" --strategy "tp=X" --chip h100-sxm \\
      --batch 64 --context 2048 --latency-target 20ms
  symroof plan llama-2-7b --serve --mesh "X=8" --dtype int8 --chip h100-sxm --batch 64
  symroof plan llama-2-7b --train --mesh "X=16" --strategy "fsdp=X" --chip tpu-v5e \\
      --batch 64 --context 2048 --mfu 5e4
  symroof plan llama-3-70b --serve --mesh "X=8" --chip h100-sxm --batch 16 \\
      --context 4096 --draft llama-3-8b --gamma 4 --acceptance 0.8
  symroof plan llama-3-70b --serve --search 8 --chip h100-sxm --context 4096 \\
      --ttft 3s --tpot 20ms
  symroof plan llama-2-7b --train --laws --context 4096
  symroof plan llama-2-7b --train --mesh "X=8" --strategy "zero2=X" --chip h100-sxm \\
      --batch 8 --context 4096 --offload optimizer

Strategies: dp (data parallel), zero1 / zero2 / zero3 = fsdp (ZeRO stages), tp (Megatron
tensor parallel; add ',sp' for sequence parallel or ',pa' for ZeRO-R's activation
checkpoints partitioned over the tensor axes), pp (1F1B pipeline), ep (experts). Mix
them over the mesh's axes: 'fsdp=X,tp=Y', 'dp=pods,fsdp=X', 'fsdp=X+Y'. --batch is the
global batch in sequences of --context tokens.
"""


def register(verbs: Any) -> None:
    p = verbs.add_parser(
        "plan", help="train or serve a model on a mesh: memory, step time, critical batch",
        description="A training or serving plan for a model on a mesh of chips: memory per "
                    "device, the step's compute and every comm term per axis, time bounds, "
                    "the bound, and the critical batch per chip; or the best plan over every "
                    "factorisation of a chip count (--search).",
        epilog=EXAMPLES_PLAN, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="NAME", help="a bundled model (e.g. llama-2-7b) or a "
                   "config.json file")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--train", action="store_true", help="a training step")
    mode.add_argument("--serve", action="store_true", help="prefill and decode steps")
    p.add_argument("--mesh", metavar="AXES", help="mesh axes and sizes, e.g. 'X=16,Y=16'")
    p.add_argument("--strategy", metavar="SPEC", help="strategy per axis, e.g. 'fsdp=X,tp=Y' "
                   "(serving: default tp over every axis)")
    p.add_argument("--search", metavar="CHIPS", type=count,
                   help="choose mesh and strategy over every factorisation of CHIPS chips, "
                        "with every microbatch count the replica's batch splits into and a "
                        "pipeline's chunks per stage (where the count is a multiple of its "
                        "stages, as --interleave asks); with "
                        "--mesh and --strategy, that plan (its --microbatches, --interleave) "
                        "is set beside the choice")
    p.add_argument("--laws", action="store_true",
                   help="training: the critical batch per chip of dp and fsdp, exact in the "
                        "peak C and link bandwidth W, on every catalogue chip")
    chip_options(p)
    p.set_defaults(chip=None)  # tpu-v5e, said in the title when taken
    p.add_argument("--batch", metavar="B", type=count,
                   help="global batch in sequences (default: train 256, serve 1)")
    p.add_argument("--context", metavar="T", type=count,
                   help="tokens per sequence (default 2048)")
    p.add_argument("--microbatches", metavar="M", type=count,
                   help="microbatches per step and replica (default: 4 x the pipeline "
                        "stages, else 1)")
    p.add_argument("--microbatch", metavar="SIZE", type=count,
                   help="sequences per microbatch: gradient accumulation for any strategy")
    p.add_argument("--interleave", metavar="V", type=count, default=1,
                   help="training: V model chunks per pipeline stage (interleaved 1F1B: the "
                        "bubble shrinks V times; default 1)")
    p.add_argument("--overlap", choices=("phase", "op", "none"),
                   help="how a step's terms add up, one vocabulary for both modes: phase, "
                        "each term overlaps the others over its phase (the longest term); "
                        "op, each op's compute overlaps its own memory traffic and each "
                        "collective waits for its op; none, nothing overlaps (T_upper). "
                        "Training: the rule of the predicted time, which a --search ranks by "
                        "(default phase, or the calibration's conventions': op for "
                        "megatron-a100). Serving: the rule "
                        "of each step's latency, the bound's too (default op, or the "
                        "calibration's: none for trtllm-a100 and trtllm-h100)")
    p.add_argument("--recompute", default="none", metavar="POLICY",
                   help="activation recomputation policy: none (default), selective, full, "
                        "matmuls (checkpoints after the weight matmuls, the rest rerun) or "
                        "k_tensors_of_D=K (a text's k tensors of D kept per layer, the forward "
                        "rerun); any: --search tries none, selective and full")
    p.add_argument("--optimizer", metavar="PRESET|PARTS",
                   help="bytes per parameter of weights, gradients and optimizer state: a "
                        "preset (default adam-mixed: 2 + 2 + 12, or the calibration's "
                        "conventions': adam-megatron for megatron-a100; adam-megatron: fp32 "
                        "gradients, 18; adam-fp32; sgd-mixed; adam-8bit: 2 + 2 + 2; "
                        "sgd-momentum: 2 + 2 + 8) or dtype names, e.g. "
                        "'weights=bf16,gradients=fp32,state=fp32+fp32+fp32'")
    kernel_options(p, "train materialised, serve flash; --causal and --activations: serving")
    choices_option(p, "one training or serving plan")
    p.add_argument("--offload", metavar="PARTS",
                   help="training: keep optimizer, weights and/or activations in host memory "
                        "over the host link (PCIe), e.g. 'optimizer' or 'optimizer,activations';"
                        " serving: weights and/or kv, e.g. 'weights,kv'")
    p.add_argument("--in-network", action="store_true",
                   help="every AllReduce over one switched network (serving: the tensor-"
                        "parallel ones) reduces in the switch (nvls on NVSwitch, sharp on "
                        "InfiniBand)")
    p.add_argument("--efficiency", metavar="FRACTIONS",
                   help="achieved fraction of peak per term, e.g. 'compute=0.6,ici=0.8', "
                        "or a named calibration (megatron-a100) or its .toml file "
                        "(default: every term at its peak)")
    p.add_argument("--mfu", metavar="TOKENS_PER_S", type=_rate,
                   help="a measured training throughput: print its MFU on the plan's chips")
    p.add_argument("--price", metavar="PRICE",
                   help="a price per chip-hour, e.g. '2.5 USD/h': print the cost per step "
                        "and per million tokens")
    p.add_argument("--latency-target", metavar="TIME",
                   help="serving: the fewest chips whose decode step meets TIME (e.g. 20ms)")
    p.add_argument("--draft", metavar="MODEL",
                   help="serving: speculative decoding with this draft model on the same "
                        "mesh (with --gamma and --acceptance)")
    p.add_argument("--gamma", metavar="G", type=count,
                   help="serving, with --draft: draft tokens per iteration")
    p.add_argument("--acceptance", metavar="A",
                   help="serving, with --draft: the chance each draft token is kept (0 to 1, "
                        "e.g. 0.8 or 4/5)")
    p.add_argument("--ttft", metavar="TIME",
                   help="serving search (--serve --search CHIPS): the time-to-first-token "
                        "limit, e.g. 3s")
    p.add_argument("--tpot", metavar="TIME",
                   help="serving search (--serve --search CHIPS): the time-per-output-token "
                        "limit, e.g. 20ms")
    p.add_argument("--rate", metavar="R",
                   help="serving: requests arriving per second (a Poisson stream): the "
                        "plan's utilisation and its M/D/1 queueing wait, e.g. 2.5 or 5/2")
    p.add_argument("--generate", metavar="G", type=count,
                   help="serving: tokens generated per request, for the prefill:decode "
                        "balance (default 256)")
    p.add_argument("--dtype", default="bf16", metavar="NAME",
                   help="serving: the weights' dtype (default bf16; int8 halves them) or a "
                   "scheme (int4-awq, int4-gptq, int4-sym; fp8-w8a8: weights and the "
                   "projections' inputs in fp8, the projections at the chip's fp8 peak)")
    p.add_argument("--kv-dtype", metavar="NAME", help="serving: the KV cache's dtype "
                   "(default: --dtype) or a scheme (fp8-tensor, fp8-head, int8-token, kivi-2)")
    p.add_argument("--chunk", metavar="C", type=count,
                   help="serving: prefill each prompt in chunks of C tokens (Sarathi-Serve), "
                        "each attending to the chunks before it")
    p.add_argument("--piggyback", action="store_true",
                   help="serving, with --chunk: each chunk step also carries a decode token "
                        "of each of the batch's sequences (a hybrid batch)")
    p.add_argument("--format", default="text", choices=("text", "md"),
                   help="output format (default text)")
    p.add_argument("--progress", action="store_true",
                   help="report the progress of a --search on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    exact_option(p)
    p.set_defaults(run=run_plan)


def _rate(text: str) -> str:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected tokens per second, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive throughput, got {text!r}")
    return text


def run_plan(args: argparse.Namespace) -> int:
    from ..commands.plan import PlanRequest
    from ..core.errors import InputError
    if args.serve and args.search is not None:
        return _serving_search(args)
    if args.ttft or args.tpot:
        raise InputError("a limit of the serving search: use it with --serve --search CHIPS",
                         "--ttft" if args.ttft else "--tpot")
    if args.laws and (args.serve or args.mesh or args.strategy or args.search):
        raise InputError("--laws stands alone: give it with --train and the model only",
                         "--laws")
    if args.search is not None and bool(args.mesh) != bool(args.strategy):
        raise InputError("a plan beside a search needs both --mesh and --strategy",
                         "--strategy" if args.mesh else "--mesh")
    if not args.laws and args.search is None and not (args.mesh and (args.strategy or
                                                                      args.serve)):
        missing = "--mesh" if not args.mesh else "--strategy"
        raise InputError("a plan needs --mesh and --strategy (or --search CHIPS)", missing)
    if args.train and (args.dtype != "bf16" or args.kv_dtype):
        raise InputError("a serving option: training keeps bf16 weights", "--dtype"
                         if args.dtype != "bf16" else "--kv-dtype")
    if args.serve and args.mfu:
        raise InputError("MFU is for a training throughput: use it with --train", "--mfu")
    if args.train and (args.latency_target or args.generate):
        flag = "--latency-target" if args.latency_target else "--generate"
        raise InputError("a serving option: use it with --serve", flag)
    import re
    if args.latency_target is not None and re.fullmatch(
            r"\s*[-+]?[0-9._]*(?:[eE][-+]?[0-9]+)?\s*", args.latency_target):
        raise InputError(f"a time needs its unit (e.g. 20ms or 0.02 s), got "
                         f"{args.latency_target!r}", "--latency-target")
    request = PlanRequest(
        model=args.model, mode="train" if args.train else "serve",
        chip=args.chip or DEFAULT_CHIP,
        catalog=args.catalog, overrides=overrides(args.set), mesh=args.mesh,
        strategy=args.strategy, search=args.search, batch=args.batch, context=args.context,
        microbatches=args.microbatches, microbatch=args.microbatch,
        recompute=args.recompute, optimizer=args.optimizer, attention=args.attention,
        causal=args.causal, activations=args.activations.replace("-", "_"),
        efficiency=args.efficiency,
        mfu=args.mfu, latency_target=args.latency_target, generate=args.generate,
        laws=args.laws, offload=args.offload, price=args.price, in_network=args.in_network,
        dtype=args.dtype, kv_dtype=args.kv_dtype, choices=args.choices,
        interleave=args.interleave, overlap=args.overlap, chunk=args.chunk,
        piggyback=args.piggyback, draft=args.draft, gamma=args.gamma,
        acceptance=args.acceptance, rate=args.rate)
    progress = _progress if args.progress else None
    result = request.run(progress)
    if args.json:
        emit(result.to_json())
    else:
        from ..render.plan_views import lines
        print("\n".join(lines(result, args.format, defaulted_chip(args.chip))))
    return 0


# what a serving search chooses or does not model, refused beside it
_NOT_IN_SERVING_SEARCH = ("mesh", "strategy", "batch", "chunk", "piggyback", "latency_target",
                          "draft", "gamma", "acceptance", "rate",
                          "in_network", "offload", "price", "mfu", "laws", "choices",
                          "microbatches", "microbatch")


def _serving_search(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    from ..plans.serving_search import ServingSearchRequest
    from ..render.plan_views import search_lines
    for name in (*_NOT_IN_SERVING_SEARCH, "interleave"):
        if getattr(args, name, None) not in (None, False, [], "", 1 if name == "interleave"
                                              else None):
            flag = "--" + name.replace("_", "-")
            raise InputError("the serving search chooses the workers and their batches and "
                             "models none of this: drop it or give a plan with --mesh", flag)
    for flag, value in (("--ttft", args.ttft), ("--tpot", args.tpot)):
        if not value:
            raise InputError("a serving search needs both --ttft and --tpot", flag)
    found = ServingSearchRequest(
        model=args.model, chip=args.chip or DEFAULT_CHIP, search=args.search, ttft=args.ttft,
        tpot=args.tpot,
        context=args.context or 2048, generate=args.generate or 256, catalog=args.catalog,
        overrides=tuple(overrides(args.set).items()), dtype=args.dtype,
        kv_dtype=args.kv_dtype, efficiency=args.efficiency).run()
    if args.json:
        emit(found.to_json())
    else:
        print("\n".join(search_lines(found, args.format, defaulted_chip(args.chip))))
    return 0


def _progress(done: int, total: int) -> None:
    print(f"\rsearched {done}/{total} plans", end="" if done < total else "\n",
          file=sys.stderr, flush=True)
