"""The inputs of the hostile corpus (benchmarks/hostile.py): hostile values, and generators of
command lines, chapter folders, catalogues and model configs built from them with a seeded
random source. A case is data: its arguments and files name the run's folder as ``{tmp}``."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One hostile input: a command line after ``symroof``, the files written first, and what
    a right outcome may be (``expect``: "any", or "not-ok" for a claim whose work did not run
    or whose stated value is wrong by construction, or "tex" for a quote rendered to TeX)."""

    surface: str
    args: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    expect: str = "any"
    tag: str = ""  # a grandchild's marker, looked for among the processes after the run
    note: str = ""
    extra: tuple[str, ...] = field(default=())  # a second command (report) after the first


NUMBERS = [
    "",
    " ",
    "-0",
    "0",
    "-1",
    "-1e-9",
    "1e309",
    "1e-320",
    "1e-7",
    "4.9e-324",
    "1e999999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "0x10",
    "0b11",
    "0o7",
    "1_000",
    "１２",
    "٣",
    "1/0",
    "0/0",
    "10**10**10",
    "9" * 4400,
    "1" + "0" * 5000,
    "1e",
    "e5",
    "--5",
    "+-1",
    "1,5",
    "2,4e2",
    "1.2.3",
    "1e1e1",
    "½",
    "𝟏",
    "1\u00a0000",
    "\ufeff8",
    "8\u200b",
    "8\x1b[31m",
    "8\n9",
    "8\r",
    "\t8",
    "8\u202e",
    "True",
    "None",
    "[1]",
    "{1: 2}",
    "'8'",
    "8j",
    "1+0j",
    "I",
    "oo",
    "-oo",
    "zoo",
    "pi",
    "E",
    "B",
    "x",
    "2**64",
    "2**-64",
    "1" * 400,
    "0." + "0" * 500 + "1",
    "1e1000",
    "1e-1000",
    "-1e1000",
    "3.0",
    "8.5",
    "1/3",
    "sqrt(2)",
    "log(0)",
    "exp(1000)",
    "exp(-1000)",
    "1e9 FLOP/s",
    "1 GB/s",
]
UNITS = [
    "1 XB/s",
    "1 GB/s/s",
    "-1 GB/s",
    "0 GB/s",
    "nan GB/s",
    "1e9 FLOP",
    "1 GiB/s",
    "1 Гб/с",
    "1GB/s",
    "1 gb/s",
    "1 GB / s",
    "GB/s",
    "1 GB/s 2 GB/s",
    "1 TB/s\n",
    "1e400 TB/s",
    "1e-400 TB/s",
    "1 us",
    "1 ms",
    "-1 us",
    "1 µs",
    "1 μs",
    "2.5 USD/h",
    "-2.5 USD/h",
    "2.5 EUR/h",
    "1 USD/year",
    "1e300 USD/h",
    "20ms",
    "20 ms",
    "-20ms",
    "0ms",
    "20 parsecs",
    "1 B/s",
    "1 bit/s",
    "1 FLOP/s",
    "1 OP/s",
    "1e12 FLOP/s/chip",
]
CODE = [
    "__import__('os').system('true')",
    "__import__('os')",
    "().__class__.__bases__[0]",
    "B.__class__",
    "__builtins__",
    "exec('1')",
    "eval('1')",
    "getattr(B, 'x')",
    "lambda: 1",
    "(lambda x: x)(B)",
    "B[0]",
    "B.subs",
    "B if B else 1",
    "B and D",
    "not B",
    "B @ D",
    "(B := 1)",
    "B ** B ** B ** B",
    "Symbol('x')",
    "sympify('1')",
    "S(1)",
    "Integer(1)",
    "__class__",
    "_B",
    "__B__",
    "B.__dict__",
    "open('/etc/passwd')",
    "globals()",
    "f'{B}'",
    "b'1'",
    "B; import os",
    "B # x",
    "B\\",
    "B,D",
    "B=D",
    "B==D",
    "B<D",
    "{B}",
    "[B]",
    "*B",
    "**B",
    "B..D",
    "B++",
    "(" * 300 + "B" + ")" * 300,
    "+".join(["B"] * 3000),
    "B" * 5000,
    "Б",
    "β*B",
    "B\u0301",
    "ℬ",
    "B\x00"[:-1] + "\x07",
    "Piecewise((B, B < 1), (D, True))",
    "Lambda(B, B)",
    "Function('f')(B)",
    "Subs(B, B, 1)",
    "Integral(B, B)",
    "Sum(B, (B, 1, 10**9))",
    "factorial(10**9)",
    "B!",
    "binomial(B, 10**9)",
    "Max(B, D)",
    "floor(B)",
    "Abs(B)",
    "re(B)",
    "conjugate(B)",
    "DiracDelta(B)",
    "\\frac{B}{D}",
    "$B$",
    "B\u2212D",
    "B\u00d7D",
    "B·D",
    "B÷D",
    "B mod D",
    "B % D",
    "B // D",
    "B ^ D",
    "B & D",
    "B | D",
    "~B",
    "B >> 1",
    "-B",
    "B - 2*B",
    "0*B",
    "B/0",
    "B/(B-B)",
    "sqrt(-B)",
    "log(-B)",
    "B**-1",
    "B**0.5",
    "B**(1/10**9)",
    "B**(10**9)",
    "exp(B**10)",
]
TEXT = [
    "",
    " ",
    "\x1b[31mred",
    "a\nb",
    "a\rb",
    "\x07",
    "\u202eevil",
    "\ufeff",
    "𝔘𝔫𝔦",
    "名字",
    "Ω" * 1000,
    "a" * 100_000,
    "../../x",
    "/etc/passwd",
    "~",
    "-x",
    "--help",
    "con",
    "a b",
    "a/b",
    "a\\b",
    ".",
    "..",
    "*",
    "?",
    "$(true)",
    "`true`",
    "%s%n",
    "{tmp}",
]
NAMES = ["tpu-v5e", "h100-sxm", "a100-80gb"]


def pick(rng: random.Random, *pools: list[str]) -> str:
    return rng.choice(rng.choice(pools))


# ---- the command line, verb by verb: a valid base with one slot hostile -------------------


def _derive(rng: random.Random) -> tuple[str, ...]:
    base = {"--flops": "2*B*D*F", "--bytes": "2*B*D + 2*D*F", "--timeout": "10"}
    slot, pools = rng.choice(
        [
            ("--flops", (CODE, NUMBERS)),
            ("--bytes", (CODE, NUMBERS)),
            ("--subs", (["B=" + v for v in NUMBERS], ["D=" + v for v in CODE])),
            (
                "--set",
                (
                    ["hbm=" + v for v in NUMBERS + UNITS],
                    ["nvlink.latency=" + v for v in UNITS],
                    ["bf16=" + v for v in UNITS],
                    [v + "=1e12" for v in CODE[:20]],
                ),
            ),
            ("--timeout", (NUMBERS,)),
            ("--solve", (CODE, ["B", "F", "T_math", "alpha_ici"])),
            (
                "--regime",
                (
                    ["B<<" + v for v in CODE],
                    ["B->" + v for v in NUMBERS],
                    ["B<<D;D<<F;F<<B", "B<<D,,F", "B<<", "<<B", "B->oo;B->0"],
                ),
            ),
            ("--chip", (TEXT, CODE[:30])),
            ("--dtype", (TEXT, NUMBERS[:20])),
            (
                "--einsum",
                (["B D, D F -> " + v for v in CODE[:40]], [v + " D, D F -> B F" for v in TEXT]),
            ),
            ("--mesh", (["X=" + v for v in NUMBERS], [v + "=8" for v in CODE[:40]])),
            ("--link", (TEXT, ["hbm", "vmem", "X", "alpha", "ici,ici"])),
            ("--between", (["math," + v for v in TEXT], ["hbm,hbm", "math", ",", "math,math,ici"])),
            ("--comm-bytes", (CODE, NUMBERS)),
            ("--format", (TEXT,)),
            ("--out-dtype", (TEXT, ["bf16 ", "BF16", "int4"])),
            ("--dtypes", (["bf16," + v for v in TEXT], ["bf16,bf16,bf16", ",", "int8,"])),
        ]
    )
    base[slot] = pick(rng, *pools)
    if slot in ("--einsum", "--dtypes", "--out-dtype"):
        base.pop("--flops")
        base.pop("--bytes")
        base.setdefault("--einsum", "B D, D F -> B F")
    if slot in ("--link", "--comm-bytes"):
        base.setdefault("--comm-bytes", "2*B*F")
    if slot in ("--link", "--mesh"):
        base["--chip"] = "h100-sxm"
        base.setdefault("--mesh", "X=8")
        base.setdefault("--link", "X")
        base.setdefault("--comm-bytes", "2*B*F")
    args = ["derive"]
    for k, v in base.items():
        args += [k, v]
    return tuple(args)


def _collective(rng: random.Random) -> tuple[str, ...]:
    op = rng.choice(["allreduce", "allgather", "reducescatter", "alltoall"])
    base = {"--bytes": "2*P", "--axes": "X", "--mesh": "X=8", "--chip": "h100-sxm"}
    slot, pools = rng.choice(
        [
            ("--bytes", (CODE, NUMBERS)),
            ("--axes", (TEXT, ["XX", "Y", "XYZW", "x"])),
            ("--mesh", (["X=" + v for v in NUMBERS], ["X=8," + v for v in CODE[:30]])),
            (
                "--array",
                (
                    ["bf16[B_X, " + v + "]" for v in CODE[:50]],
                    ["bf16[" + v + "_X]" for v in NUMBERS],
                ),
            ),
            ("--subs", (["P=" + v for v in NUMBERS],)),
            ("--solve", (CODE[:30], ["P", "X"])),
            ("--dim", (TEXT, CODE[:20])),
            ("--algorithm", (TEXT, ["nvls", "sharp", "RING"])),
            ("--set", (["nvlink=" + v for v in UNITS + NUMBERS],)),
            ("--topology", (TEXT,)),
            ("op", (TEXT, ["all-reduce", "ALLREDUCE", "broadcast"])),
        ]
    )
    if slot == "op":
        op = pick(rng, *pools)
    elif slot == "--array":
        base.pop("--bytes")
        base["--array"] = pick(rng, *pools)
    else:
        base[slot] = pick(rng, *pools)
    if slot == "--dim":
        op = "reducescatter"
        base.pop("--bytes")
        base["--array"] = "bf16[B, F]"
    args = ["collective", op]
    for k, v in base.items():
        args += [k, v]
    return tuple(args)


def _optimize(rng: random.Random) -> tuple[str, ...]:
    base = {
        "--minimize": "A/N**alpha + B/D**beta",
        "--subject-to": "6*N*D = C",
        "--values": "alpha=0.34,beta=0.28",
        "--timeout": "10",
    }
    slot, pools = rng.choice(
        [
            ("--minimize", (CODE,)),
            ("--subject-to", (["6*N*D = " + v for v in CODE[:60]], CODE[:30])),
            ("--values", (["alpha=" + v for v in NUMBERS], ["beta=" + v for v in CODE[:40]])),
            ("--vars", (TEXT, ["N", "N,N", "N,D,C", "alpha,beta"])),
            ("--timeout", (NUMBERS,)),
            ("--at", (["C=" + v for v in NUMBERS],)),
            ("--constants", (TEXT,)),
            ("--method", (TEXT,)),
        ]
    )
    base[slot] = pick(rng, *pools)
    if slot == "--at":
        base = {"--constants": "hoffmann2022", "--at": base["--at"], "--timeout": "10"}
    args = ["optimize"]
    for k, v in base.items():
        args += [k, v]
    return tuple(args)


def _chips(rng: random.Random) -> tuple[str, ...]:
    return rng.choice(
        [
            ("chip", pick(rng, TEXT, CODE[:20])),
            (
                "chip",
                rng.choice(NAMES),
                "--set",
                pick(rng, ["hbm=" + v for v in NUMBERS + UNITS], [v + "=1" for v in TEXT]),
            ),
            ("chips", "--catalog", "{tmp}/" + rng.choice(["none.toml", "", "."])),
            ("chip", rng.choice(NAMES), "--json", "--set", "hbm=" + rng.choice(UNITS)),
        ]
    )


def _model(rng: random.Random) -> tuple[str, ...]:
    name = rng.choice(["llama-2-7b", "mixtral-8x7b", "gpt2"])
    slot, pools, mode = rng.choice(
        [
            ("name", (TEXT, CODE[:20]), "--decode"),
            ("--batch", (NUMBERS, CODE[:20]), "--decode"),
            ("--context", (NUMBERS,), "--decode"),
            ("--tokens", (NUMBERS,), "--prefill"),
            ("--dtype", (TEXT, ["fp8", "int4", "BF16"]), "--fit"),
            ("--kv-dtype", (TEXT,), "--decode"),
            ("--chips", (NUMBERS,), "--fit"),
            ("--mesh", (["X=" + v for v in NUMBERS],), "--fit"),
            ("--usable", (NUMBERS, CODE[:20]), "--fit"),
            ("--chip", (TEXT,), "--decode"),
            (
                "--set",
                (["hbm=" + v for v in UNITS], ["hbm=" + v for v in NUMBERS[:30]]),
                "--decode",
            ),
            ("--format", (TEXT,), "--decode"),
        ]
    )
    value = pick(rng, *pools)
    if slot == "name":
        return ("model", value, mode)
    return ("model", name, mode, slot, value)


def _plan(rng: random.Random) -> tuple[str, ...]:
    serve = rng.random() < 0.3
    base = {
        "--mesh": "X=8",
        "--strategy": "tp=X" if serve else "fsdp=X",
        "--chip": "h100-sxm",
        "--batch": "8",
        "--context": "512",
    }
    slot, pools = rng.choice(
        [
            ("--batch", (NUMBERS,)),
            ("--context", (NUMBERS,)),
            ("--microbatches", (NUMBERS,)),
            ("--microbatch", (NUMBERS,)),
            ("--mfu", (NUMBERS, UNITS)),
            ("--price", (UNITS, NUMBERS)),
            ("--efficiency", (["compute=" + v for v in NUMBERS], [v + "=0.5" for v in TEXT])),
            ("--mesh", (["X=" + v for v in NUMBERS],)),
            ("--strategy", ([v + "=X" for v in TEXT], ["tp=X,tp=X", "dp=Y", "tp=" + "X" * 50])),
            ("--offload", (TEXT, ["optimizer,optimizer", "weights,"])),
            ("--latency-target", (UNITS, NUMBERS)),
            ("--generate", (NUMBERS,)),
            ("--search", (["0", "-8", "1", "3", "7", "nan", "1e9", "x", "8.5", "2**10"],)),
            ("--set", (["h100-sxm." + v + "=1" for v in TEXT], ["hbm=" + v for v in UNITS])),
        ]
    )
    base[slot] = pick(rng, *pools)
    if slot == "--latency-target":
        serve = True
    if slot == "--search":
        base.pop("--mesh")
        base.pop("--strategy")
    args = ["plan", "llama-2-7b", "--serve" if serve else "--train"]
    for k, v in base.items():
        args += [k, v]
    return tuple(args)


def _speculate(rng: random.Random) -> tuple[str, ...]:
    base = {"--acceptance": "0.8", "--cost-ratio": "0.05"}
    slot, pools = rng.choice(
        [
            ("--acceptance", (NUMBERS, CODE[:20])),
            ("--cost-ratio", (NUMBERS,)),
            ("--draft-tokens", (NUMBERS,)),
            ("--draft", (TEXT,)),
        ]
    )
    base[slot] = pick(rng, *pools)
    if slot == "--draft":
        base.pop("--cost-ratio")
        base["--target"] = "llama-2-70b"
    args = ["speculate"]
    for k, v in base.items():
        args += [k, v]
    return tuple(args)


def _claims_new(rng: random.Random) -> tuple[str, ...]:
    slot = rng.choice(["path", "--lang", "--title"])
    args = ["claims", "new", "{tmp}/ch", "--lang", "ru"]
    if slot == "path":
        args[2] = "{tmp}/" + rng.choice(TEXT)
    elif slot == "--lang":
        args[4] = rng.choice([*TEXT, "RU", "en-US", "xx"])
    else:
        args += ["--title", pick(rng, TEXT, CODE[:20])]
    return tuple(args)


def _verify_flags(rng: random.Random) -> tuple[str, ...]:
    slot = rng.choice(["--timeout", "--jobs", "--only", "path", "--catalog", "--lang", "--format"])
    if slot == "path":
        return ("verify", "{tmp}/" + rng.choice(TEXT), "--no-cache")
    if slot == "--catalog":
        return ("verify", "{tmp}/ch", "--catalog", "{tmp}/" + rng.choice(TEXT))
    if slot == "--lang":
        return ("report", "{tmp}/ch", "--out", "{tmp}/out", "--lang", rng.choice(TEXT))
    if slot == "--format":
        return (
            "report",
            "{tmp}/ch",
            "--out",
            "{tmp}/out",
            "--format",
            pick(rng, TEXT, ["md,md", "md,", "pdf,xx"]),
        )
    value = (
        rng.choice(NUMBERS)
        if slot != "--only"
        else pick(rng, TEXT, ["OK,OK", "ok", "NOT PROVEN", ","])
    )
    return ("verify", "{tmp}/ch", "--no-cache", slot, value)


FLAG_SURFACES: dict[str, Callable[[random.Random], tuple[str, ...]]] = {
    "derive": _derive,
    "collective": _collective,
    "optimize": _optimize,
    "chips": _chips,
    "model": _model,
    "plan": _plan,
    "speculate": _speculate,
    "claims": _claims_new,
    "verify-flags": _verify_flags,
}
