"""``symroof verify`` against ``import sympy``: cold, after editing one file, fully cached;
and the time per claim over generated derivation files of 10, 100 and 1000 claims."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import tempfile
from pathlib import Path

from common import (
    PYTHON,
    REPO,
    Row,
    describe,
    interleave,
    median,
    num,
    run,
    say,
    symroof_command,
    timed,
)

EDITED = "scaling/claims.py"  # the file edited before each "one file changed" run


def bench_verify(repeats: int) -> list[Row]:
    """Four sides in rotation, each a fresh process: ``verify --no-cache`` (every file
    built), ``verify`` after appending a comment to one file (that file rebuilt, the others
    from the verdict cache), ``verify`` with nothing changed, and ``import sympy``. The
    derivations are a copy in a temporary folder with a cache of its own. symroof is
    byte-compiled first, as an installed copy is (and as SymPy, the baseline, is): without
    it, a machine that sets ``PYTHONDONTWRITEBYTECODE`` compiles symroof from source in
    every run."""
    compileall.compile_dir(REPO / "symroof", quiet=1)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        say("  symroof byte-compiled first (this machine sets PYTHONDONTWRITEBYTECODE)")
    with tempfile.TemporaryDirectory(prefix="symroof-bench-") as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "derivations", root / "derivations",
                        ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "SYMROOF_CACHE_DIR": str(root / "cache")}
        verify = [*symroof_command(), "verify", str(root / "derivations")]
        edits = iter(range(10**6))

        if not (root / "derivations" / EDITED).is_file():
            raise RuntimeError(f"derivations/{EDITED} is not there to edit")

        def edit() -> None:
            with open(root / "derivations" / EDITED, "a", encoding="utf-8") as f:
                f.write(f"# edited for a benchmark run {next(edits)}\n")

        summary = json.loads(run([*verify, "--json", "--no-cache"], (0, 1), env).stdout)
        run(verify, (0, 1), env)  # fills the cache
        sides = [timed([*verify, "--no-cache"], (0, 1), env),
                 timed(verify, (0, 1), env, before=edit),
                 timed(verify, (0, 1), env),
                 timed([PYTHON, "-c", "import sympy"])]
        cold, edited, cached, sympy = interleave(sides, repeats)
    claims = len(summary["claims"])
    say(f"  {claims} claims in the bundled derivations; each side a fresh process, in rotation")
    for label, xs in (("verify --no-cache (cold)", cold),
                      (f"verify after editing {EDITED}", edited),
                      ("verify, every file cached", cached),
                      ("python -c 'import sympy'", sympy)):
        say(describe(label, xs))
    base = median(sympy)
    rows = []
    for label, xs, target in (("verify --no-cache (cold)", cold, 3.0),
                              ("verify, one file edited", edited, 2.0),
                              ("verify, all cached", cached, 0.5)):
        ratio = median(xs) / base
        rows.append(Row(label, num(median(xs)), f"import sympy {num(base)}", f"{ratio:.2f}x",
                        f"<= {target:g}x", ratio <= target))
    return rows


def claims_file(n: int) -> str:
    """A derivation module of ``n`` claims, each the intensity of a matmul of its own
    width, stated as the formula a reader would derive by hand."""
    lines = ['"""A generated derivation for benchmarks/run.py: one matmul claim per width."""',
             "", "from symroof import chip, einsum, roofline",
             "from symroof.claims.model import Derivation, Source", "", "",
             "def build() -> Derivation:",
             '    src = Source("generated", chapter="0", section="", seed="none", '
             'language="en")',
             f'    d = Derivation.begin("generated-{n}", "{n} generated claims", src)',
             '    v5e = chip("tpu-v5e")']
    for i in range(1, n + 1):
        lines += [f"    d.claim('width_{i}', kind='expr', section='widths',",
                  f"            quote='I = {i} B D / ({i} B + {i} D + B D)',",
                  f"            statement='The intensity of a matmul of output width {i}.',",
                  f"            stated='{i}*B*D/(B*D + {i}*B + {i}*D)',",
                  f"            derive=lambda: roofline(einsum('B D, D F -> B F', "
                  f"dims={{'F': {i}}}), v5e).intensity)"]
    lines.append("    return d.build()")
    return "\n".join(lines) + "\n"


def bench_claims(sizes: tuple[int, ...], repeats: int) -> list[Row]:
    """``verify --no-cache --json`` on one generated file of each size, in rotation."""
    with tempfile.TemporaryDirectory(prefix="symroof-claims-") as tmp:
        files = []
        for n in sizes:
            path = Path(tmp) / f"generated_{n}.py"
            path.write_text(claims_file(n), encoding="utf-8")
            files.append(path)
        commands = [[*symroof_command(), "verify", "--no-cache", "--json", str(f)]
                    for f in files]
        for c in commands:  # every claim must hold, or the timing means nothing
            data = json.loads(run(c, (0,)).stdout)
            verdicts = {v["verdict"] for v in data["claims"]}
            if verdicts != {"OK"}:
                raise RuntimeError(f"generated claims did not all hold: {verdicts}")
        times = interleave([timed(c) for c in commands], repeats)
    say("  one generated file per size (verify --no-cache, a fresh process each)")
    rows = []
    for n, xs in zip(sizes, times, strict=True):
        say(describe(f"{n} claims", xs))
    first, last = median(times[0]), median(times[-1])
    marginal = (last - first) / (sizes[-1] - sizes[0])
    for n, xs in zip(sizes, times, strict=True):
        rows.append(Row(f"verify a file of {n} claims", num(median(xs)),
                        f"{num(median(xs) / n)} per claim", "", "", None))
    say(f"  each claim beyond the first {sizes[0]}: {num(marginal)} "
        f"(from {sizes[0]} to {sizes[-1]} claims)")
    rows.append(Row(f"claims {sizes[0]} -> {sizes[-1]}: time per added claim", num(marginal),
                    "", "", "", None))
    return rows
