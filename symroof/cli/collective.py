"""symroof collective: the bytes, bandwidth and latency terms of one collective on a mesh.

>>> from symroof.cli.main import main
>>> main(["collective", "allgather", "--array", "bf16[B_X, D]", "--axes", "X",
...       "--mesh", "X=8,Y=4", "--chip", "tpu-v5e"])  # doctest: +ELLIPSIS
AllGather_X bf16[B_X, D] on tpu-v5e ...
  bandwidth time                 7*B*D/180000000000 s
...
0
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core.names import COLLECTIVES
from .common import (
    bounded,
    chip_options,
    choices_option,
    emit,
    exact_option,
    overrides,
    timeout_option,
)

EXAMPLES = """\
examples:
  symroof collective allgather --array "bf16[B_X, D]" --axes X --mesh "X=16" --chip tpu-v5e
  symroof collective allreduce --bytes "2*P" --axes X --mesh "X=8" --chip h100-sxm \\
      --set "nvlink.latency=2 us" --json
  symroof collective reducescatter --array "bf16[B, F]" --axes XY --mesh "X=8,Y=4" \\
      --subs "B=1024,F=8192"
  symroof collective allreduce --bytes V --axes X --mesh "X=8" --chip h100-sxm --algorithm nvls
  symroof collective allreduce --bytes V --axes X --mesh "X=8" --chip h100-sxm --algorithm tree
  symroof collective allgather --bytes V --axes X --mesh "X=16" --chip h100-sxm \\
      --set "nvlink.latency=2 us" --set "ib.latency=5 us" --between nvlink,latency --solve V
  symroof collective allgather --bytes V --axes X --mesh "X=N" --chip tpu-v5e --solve N
  symroof collective alltoall --bytes V --total --axes X --mesh "X=8" --chip tpu-v5e
  symroof collective send --bytes 9e8 --axes XY --mesh "X=4,Y=4" --chip tpu-v5e \\
      --from 0,0 --to 3,1
  symroof collective pipeline --bytes "2*4096*8192" --axes node --mesh "node=16,gpu=8" \\
      --chip h100-sxm --microbatches 8
  symroof collective allgather --bytes "2*8192*32768" --axes X --mesh "X=16" \\
      --chip tpu-v5e --with reducescatter --choices concurrent=shared,latency=off

--bytes follows NCCL's size convention: the gathered bytes per device (AllGather), the bytes
reduced per device (ReduceScatter, AllReduce), the bytes each device holds (AllToAll,
permute); with --total an AllToAll's V is the total over the group (each device holds
V/n). A link with no sourced per-hop latency keeps the symbol alpha_<link>.
--algorithm nvls (NVSwitch) or sharp (InfiniBand) reduces an AllReduce in the switch: each
device sends and receives V once, V / W and two steps (the ring: 2 (n-1)/n V / W).
--algorithm tree runs an AllReduce up and down NCCL's double binary tree on one switched
network: 2V / W and 2 floor(log2 n) steps (the ring: 2 (n-1) steps).
send is a point-to-point transfer of --bytes: over several axes it uses a link of each at
once (their bandwidths add), the hops from the coordinates --from and --to (the shorter way
round on an axis that wraps) or --hops (a number, or per axis 'X=3,Y=1').
pipeline is a pipeline's sends between its stages along one axis: --bytes of activations per
batch in --microbatches, N_mb + N_stages - 2 sends of --bytes / N_mb (--stages, else the
axis size). --with KIND[:BYTES[:AXES]] issues more collectives together with the first (the
same bytes and axes unless given); --choices concurrent=shared runs them at once, their
bytes adding on a link they share (none: one after the other; whole_link: each as if alone).
"""


def register(verbs: Any) -> None:
    c = verbs.add_parser(
        "collective", help="cost a collective over mesh axes",
        description="Bytes per device and per link, the bandwidth and latency terms, the time "
                    "and the size below which a collective is latency-bound.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("kind", choices=(*COLLECTIVES, "send", "pipeline"), help="the "
                   "collective, send (point to point) or pipeline (a pipeline's sends "
                   "between stages)")
    what = c.add_mutually_exclusive_group()
    what.add_argument("--array", metavar="SPEC", help="a sharded array, e.g. 'bf16[B_X, D]'")
    what.add_argument("--bytes", metavar="EXPR", help="a byte count, e.g. '2*P'")
    c.add_argument("--axes", required=True, metavar="AXES", help="mesh axes, e.g. X or XY")
    c.add_argument("--mesh", required=True, metavar="SPEC", help="mesh, e.g. 'X=8,Y=4'")
    chip_options(c)
    c.add_argument("--topology", metavar="NAME", help="the chip's topology (default: its "
                   "first; see 'symroof chip NAME')")
    c.add_argument("--dim", metavar="NAME", help="the dimension a ReduceScatter or AllToAll "
                   "splits")
    c.add_argument("--algorithm", default="ring", metavar="NAME",
                   help="ring (default), tree (NCCL's double binary tree), nvls or sharp (an "
                        "AllReduce reduced in the switch)")
    c.add_argument("--solve", metavar="SYMBOL", help="the size below which it is "
                   "latency-bound, in SYMBOL: a size of --bytes or --array, or an axis "
                   "size (--mesh X=N)")
    c.add_argument("--total", action="store_true", help="an alltoall's --bytes V is the total "
                   "over the group's devices (each holds V/n); default: what each device "
                   "holds")
    route = c.add_argument_group("send (point to point)")
    route.add_argument("--from", dest="src", metavar="COORDS", help="the sending chip's "
                       "coordinates on --axes, e.g. 0,0")
    route.add_argument("--to", dest="dst", metavar="COORDS", help="the receiving chip's "
                       "coordinates on --axes, e.g. 3,1")
    route.add_argument("--hops", metavar="N|AXIS=N,...", help="hops away instead of "
                       "coordinates: a number on one axis, or per axis, e.g. 'X=3,Y=1' "
                       "(default 1)")
    pipe = c.add_argument_group("pipeline (sends between stages)")
    pipe.add_argument("--microbatches", metavar="N", help="the microbatches a batch is split "
                      "into")
    pipe.add_argument("--stages", metavar="N", help="the pipeline's stages (default: the "
                      "axis size)")
    c.add_argument("--with", dest="also", action="append", metavar="KIND[:BYTES[:AXES]]",
                   help="another collective issued together with this one (repeatable); "
                        "--choices concurrent=... says whether they run at once")
    c.add_argument("--between", metavar="TERM,TERM", help="with --solve: where two terms "
                   "meet instead (a link such as nvlink or ib, latency, bandwidth)")
    c.add_argument("--subs", metavar="VALUES", help="sizes, e.g. 'B=1024,D=8192'")
    choices_option(c, "the collective")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    exact_option(c)
    timeout_option(c)
    c.set_defaults(run=run_collective)


def run_collective(args: argparse.Namespace) -> int:
    return bounded(args.timeout, lambda: _collective(args))


def _collective(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    if args.kind != "pipeline":
        for flag, given in (("microbatches", args.microbatches), ("stages", args.stages)):
            if given is not None:
                raise InputError(f"--{flag} is for pipeline (sends between stages), not for "
                                 f"{args.kind}", f"--{flag}")
    if args.kind in ("send", "pipeline"):
        if args.also:
            raise InputError(f"--with issues collectives together, not a {args.kind}",
                             "--with")
        return _send(args)
    for flag, given in (("from", args.src), ("to", args.dst), ("hops", args.hops)):
        if given is not None:
            raise InputError(f"--{flag} is for send (point to point), not for {args.kind}",
                             f"--{flag}")
    if args.also:
        return _together(args)
    from ..commands.collective import CollectiveRequest, collective_of
    result = collective_of(CollectiveRequest(
        kind=args.kind, mesh=args.mesh, axes=args.axes, array=args.array, nbytes=args.bytes,
        chip=args.chip, catalog=args.catalog, overrides=overrides(args.set),
        topology=args.topology, dim=args.dim, subs=args.subs, solve=args.solve,
        algorithm=args.algorithm, choices=args.choices, between=args.between,
        total=args.total))
    if args.json:
        emit(result.to_json())
        return 0
    from ..render.collective import collective_lines
    print("\n".join(collective_lines(result)))
    return 0


def _send(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    takes = ("--bytes, --axes, --from and --to or --hops" if args.kind == "send" else
             "--bytes, --axes, --microbatches and --stages")
    for flag, given in (("array", args.array), ("dim", args.dim), ("solve", args.solve),
                        ("between", args.between), ("choices", args.choices),
                        ("total", args.total or None),
                        ("algorithm", None if args.algorithm == "ring" else args.algorithm)):
        if given is not None:
            raise InputError(f"--{flag} is for a collective; {args.kind} takes {takes}",
                             f"--{flag}")
    if args.bytes is None:
        raise InputError(f"{args.kind} moves --bytes EXPR", "--bytes")
    if args.kind == "pipeline" and args.microbatches is None:
        raise InputError("a pipeline splits its batch into --microbatches N", "--microbatches")
    from ..commands.collective import SendRequest, send_of
    result = send_of(SendRequest(
        mesh=args.mesh, axes=args.axes, nbytes=args.bytes, chip=args.chip,
        catalog=args.catalog, overrides=overrides(args.set), topology=args.topology,
        src=args.src, dst=args.dst, hops=args.hops, subs=args.subs,
        microbatches=args.microbatches, stages=args.stages))
    if args.json:
        emit(result.to_json())
        return 0
    from ..core.printer import si, text
    t, m = result.transfer, result.mesh
    used = m.resolve(t.axis)
    route = f", from ({args.src}) to ({args.dst})" if args.src is not None else ""
    what = "send"
    if args.kind == "pipeline":
        what = "pipeline sends"
        route = f", {args.microbatches} microbatches" + (
            f", {args.stages} stages" if args.stages is not None else "")
    rows = [("bytes", si(result.value(t.nbytes), "B")),
            ("hops" if args.kind == "send" else "sends", text(result.value(t.hops))),
            ("bandwidth", si(result.value(t.bandwidth), "B/s") + (
                f" (a link of each of {len(used)} axes at once)" if len(used) > 1 else "")),
            ("bandwidth time", si(result.value(t.bandwidth_time), "s")),
            ("latency time", si(result.value(t.latency_time), "s")),
            ("time", si(result.value(t.time), "s"))]
    print(f"{what} over {t.axis} on {m.chip.name} (mesh {m.spec}{route})")
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"  {k:<{width}}  {v}" for k, v in rows))
    return 0


def _together(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    for flag, given in (("array", args.array), ("dim", args.dim), ("solve", args.solve),
                        ("between", args.between), ("total", args.total or None),
                        ("algorithm", None if args.algorithm == "ring" else args.algorithm)):
        if given is not None:
            raise InputError(f"--{flag} is for one collective; collectives issued together "
                             "take --bytes, --axes, --with and --choices", f"--{flag}")
    if args.bytes is None:
        raise InputError("collectives issued together move --bytes EXPR (each --with "
                         "KIND:BYTES its own)", "--bytes")
    from ..commands.collective import TogetherRequest, together_of
    result = together_of(TogetherRequest(
        (args.kind, *args.also), mesh=args.mesh, axes=args.axes, nbytes=args.bytes,
        chip=args.chip, catalog=args.catalog, overrides=overrides(args.set),
        topology=args.topology, choices=args.choices, subs=args.subs))
    if args.json:
        emit(result.to_json())
        return 0
    from ..core.choices import OPTIONS
    from ..core.printer import si
    t, m = result.together, result.mesh
    rows = [*((c.title, si(result.value(c.time), "s")) for c in t.collectives),
            *((f"on {link}", si(result.value(v), "s")) for link, v in t.per_link.items()),
            ("bandwidth time", si(result.value(t.bandwidth_time), "s")),
            ("latency time", si(result.value(t.latency_time), "s")),
            ("time", si(result.value(t.time), "s")),
            ("choices", t.choices.describe()),
            ("concurrent", f"{t.choices.concurrent}: "
                           f"{OPTIONS['concurrent'][t.choices.concurrent]}")]
    print(f"{len(t.collectives)} collectives issued together on {m.chip.name} (mesh {m.spec})")
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"  {k:<{width}}  {v}" for k, v in rows))
    return 0
