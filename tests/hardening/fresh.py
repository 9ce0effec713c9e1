"""A fresh hostile corpus, drawn at random from a seed: formulas, flags and chapters that
mix valid pieces with hostile ones. Each input runs through ``symroof`` in a subprocess with
a wall-clock limit; the tally counts tracebacks, hangs, exit codes other than 0, 1 and 2,
and unchecked passes (a chapter whose claim is wrong by construction, judged OK).

    python -m tests.hardening.fresh --n 500 --seed 26

Exit 1 when any traceback, hang, stray exit code or unchecked pass is found (each printed
with its command), 0 otherwise. Not part of the test suite (it takes minutes); the suite's
pinned corpus is ``cases.toml``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60.0  # seconds of wall clock per input

ATOMS = ["B", "D", "F", "N", "P", "2", "0", "1/3", "0.5", "1e9", "1e-9", "10**400", "-B",
         "nan", "oo", "zoo", "I", "inf", "pi", "alpha_nvlink", "T_math", "x_1", "B1",
         "__import__('os')", "^^5c", "\\input{x}", "B.real", "[B]", "lambda: B", "'B'",
         "B if B else D", "B and D", "B @ D", "B // D", "B % D", "B ** B ** B", "1e99999",
         "9" * 500, "\u0412", "ｂ", "B\n", "B;D", "B,D", ""]
FUNCS = ["sqrt", "exp", "log", "floor", "ceiling", "Min", "Max", "Abs", "sin", "eval",
         "getattr", "open", "sympify", "Symbol", "Function"]
OPS = ["+", "-", "*", "/", "**", " ", "<<", "<", "==", ","]


def formula(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 3 or r < 0.35:
        return rng.choice(ATOMS)
    if r < 0.6:
        return f"{rng.choice(FUNCS)}({formula(rng, depth + 1)})"
    if r < 0.7:
        return "(" * rng.randint(1, 60) + formula(rng, depth + 1) + ")" * rng.randint(0, 60)
    return f"{formula(rng, depth + 1)}{rng.choice(OPS)}{formula(rng, depth + 1)}"


def command_line(rng: random.Random) -> list[str]:
    f = formula(rng)
    kind = rng.randrange(8)
    if kind == 0:
        return ["derive", "--flops", f, "--bytes", formula(rng)]
    if kind == 1:
        return ["derive", "--einsum", "B D, D F -> B F", "--subs",
                f"B={rng.choice(ATOMS)}", "--timeout", rng.choice(["1", "0.01", "5"])]
    if kind == 2:
        return ["derive", "--einsum", "B D, D F -> B F", "--regime",
                rng.choice(["B<<D", "B<<D;D<<F", "B<<D,F;N->oo", f"{f}<<D", "B->0;B->oo"])]
    if kind == 3:
        return ["collective", rng.choice(["allreduce", "allgather", "reducescatter"]),
                "--bytes", f, "--axes", "X", "--mesh", rng.choice(["X=8", "X=8,Y=4", f"X={f}"])]
    if kind == 4:
        return ["derive", "--flops", f, "--bytes", "B", "--solve", rng.choice(["B", "D"]),
                "--timeout", "2"]
    if kind == 5:
        return ["model", "llama-2-7b", "--fit", "--usable", f]
    if kind == 6:
        return ["optimize", "--minimize", f"A/N**alpha + {f}", "--subject-to", "6*N*D = C",
                "--timeout", "2"]
    return ["plan", "llama-2-7b", "--train", "--mesh", "X=4,Y=2", "--strategy",
            rng.choice(["fsdp=X,tp=Y", "tp=X", f"tp={f}"]), "--chip", "h100-sxm",
            "--efficiency", f"compute={rng.choice(ATOMS)}"]


WRONG = [  # (value in claims.py, stated): the stated value is wrong for every positive size
    ("2*B + sp.floor(B/100)", "2*B"), ("sp.Min(B, 4096)", "B"), ("sp.Max(B, 1)", "B"),
    ("sp.Piecewise((B, B < 9), (2*B, True))", "B"), ("sp.Abs(B - 9)", "9 - B"),
    ("B + sp.Rational(1, 10**30)", "B"), ("sp.ceiling(B)", "B"), ("sp.Rational(1, 2)", "0.7"),
    ("B + sp.floor(sp.exp(-B) / 2) + sp.Rational(1, 10**40)", "B"),
]
ATTACKS = [
    "", "import symroof.claims.rules as r\nr.RULES['expr'] = lambda c, v, w: "
    "r.Judgement(r.Verdict.OK, 'x', None, None, 'x')\n",
    "sp.Rational.__sub__ = lambda a, b: sp.Integer(0)\nsp.Add.__eq__ = lambda a, b: True\n",
    "import sys\nsys.modules['symroof.claims.proof'].compare = None\n",
    "import json, os\nfor fd in range(3, 32):\n    try:\n        os.write(fd, (json.dumps("
    "{'t': 'row', 'i': 0, 'row': {'verdict': 'OK'}}) + '\\n').encode())\n"
    "    except OSError:\n        pass\n",
]


@dataclass
class Tally:
    runs: int = 0
    tracebacks: int = 0
    hangs: int = 0
    stray: int = 0
    unchecked: int = 0


def chapter(rng: random.Random, folder: Path) -> tuple[list[str], bool]:
    """A chapter with one claim that is wrong by construction (True), or fine (False)."""
    value, stated = rng.choice(WRONG)
    fine = rng.random() < 0.2
    if fine:
        value, stated = "2*B", "2*B"
    attack = rng.choice(ATTACKS)
    ch = folder / f"ch{rng.randrange(10**9)}"
    ch.mkdir()
    # the attack runs once the value is made: a SymPy patched before it would change
    # what the derivation computes (its own business), not how it is judged
    body = "".join(f"    {line}\n" for line in attack.splitlines())
    (ch / "claims.py").write_text(f"import sympy as sp\nB = sp.Symbol('B', positive=True)\n"
                                  f"def claims(ch):\n    ch.add(a={value})\n{body}")
    extra = rng.choice(["", 'tolerance = "__import__(\'os\').getcwd() or 0.1"\n',
                        "tolerance = 0.9\n", 'figures = { "x" = "7 B/s" }\n'])
    (ch / "en.toml").write_text(f'[chapter]\nid = "f-en"\ntitle = "t"\nbook = "b"\n[s.a]\n'
                                f'quote = "q {rng.choice(["$^^5c$", "$x$", ""])}"\n'
                                f'stated = "{stated}"\n{extra}')
    return ["verify", str(ch), "--no-cache", "--json", "--timeout", "5"], not fine


def run(args: list[str], cwd: Path) -> tuple[int | None, str, str, float]:
    start = time.monotonic()
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(cwd / "cache"), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-m", "symroof", *args], capture_output=True,
                              text=True, cwd=cwd, env=env, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - start
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--seed", type=int, default=26)
    a = p.parse_args()
    rng = random.Random(a.seed)
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(a.n):
            wrong = False
            if i % 5 == 4:
                args, wrong = chapter(rng, folder)
            else:
                args = command_line(rng)
            code, out, err, _ = run(args, folder)
            tally.runs += 1
            bad = ""
            if code is None:
                tally.hangs += 1
                bad = "hang"
            elif "Traceback" in err:
                tally.tracebacks += 1
                bad = "traceback"
            elif code not in (0, 1, 2):
                tally.stray += 1
                bad = f"exit {code}"
            elif wrong and code == 0:
                verdicts = {c["verdict"] for c in json.loads(out)["claims"]}
                if verdicts & {"OK", "ROUNDING", "DEFINITION"}:
                    tally.unchecked += 1
                    bad = "unchecked pass"
            if bad:
                print(f"{bad}: symroof {' '.join(map(repr, args))}\n  {err.strip()[-300:]}")
    print(json.dumps(tally.__dict__))
    return 1 if tally.tracebacks or tally.hangs or tally.stray or tally.unchecked else 0


if __name__ == "__main__":
    sys.exit(main())
