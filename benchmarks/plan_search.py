"""The plan search's speed: every mesh and strategy of 256 chips for LLaMA-2-7B, vectorised,
against the exact plan built one candidate at a time (``symroof.plans.training.train``).

Side A is ``symroof.plans.search.search`` on 256 chips (target: under 2 s), fresh each
time (its compiled formulas and collective costs are cleared before every timed run);
side B times the exact plan of 12 candidates spread over the ranking and scales to the
whole space. Both sides must agree on every sampled candidate's T_lower and memory
(``numpy.isclose``, rtol 1e-9), and the chosen plan must be no slower than any plan that fits.

    python3 benchmarks/plan_search.py          # on its own

It also times the search a user types, ``symroof plan llama-2-7b --train --search 256
--chip h100-sxm --batch 1024 --context 4096 --recompute any``: in process (target 1.5 s)
and as a command against ``python -c "import sympy"``, the two run in turns (target 2.5x),
with the modules the command imports before it does any work timed beside them (its floor).
The searches in process print their CPU time beside the wall time: on a machine others load,
the wall time grows with the load and the CPU time much less.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import fresh

from symroof.plans.options import StepOptions

CHIPS = ("h100-sxm", "tpu-v5p", "tpu-v5e")
MODEL, BATCH, CONTEXT, RECOMPUTE = "llama-2-7b", 256, 4096, "full"
SAMPLE = 12


class Disagree(Exception):
    """The two sides of the benchmark give different plans."""


def _search(chip_name: str) -> tuple[float, float, Any]:
    from symroof.hardware.catalog import chip
    from symroof.models import model
    from symroof.plans import search as module
    module._COMPILED.clear()
    fresh()
    start, cpu = time.perf_counter(), time.process_time()
    found = module.search(model(MODEL), chip(chip_name), 256, batch=BATCH, context=CONTEXT,
                          recompute=RECOMPUTE)
    return time.perf_counter() - start, time.process_time() - cpu, found


def _exact(chip_name: str, found: Any) -> float:
    """Seconds per exact plan, over a sample of the ranking; checks agreement."""
    import numpy as np

    from symroof.hardware.catalog import chip
    from symroof.models import model
    from symroof.parallel.mesh import mesh
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    cfg, c = model(MODEL), chip(chip_name)
    picks = found.every[:: max(1, len(found.every) // SAMPLE)][:SAMPLE]
    fresh()
    start = time.perf_counter()
    for choice in picks:
        plan = train(cfg, mesh(choice.spec, c), parse_strategy(choice.strategy), batch=BATCH,
                     context=CONTEXT,
                     options=StepOptions(recompute=RECOMPUTE, microbatches=choice.microbatches,
                                         interleave=choice.chunks))
        assert plan.predicted is not None  # the plan's forecast at the search's overlap
        if not (np.isclose(float(plan.t_lower), choice.t_lower, rtol=1e-9) and
                np.isclose(float(plan.predicted), choice.t_lower, rtol=1e-9) and
                np.isclose(float(plan.memory["total"]), choice.memory, rtol=1e-9)):
            raise Disagree(f"{choice.strategy} on {choice.spec}: search {choice.t_lower} s, "
                           f"exact {float(plan.t_lower)} s")
    return (time.perf_counter() - start) / len(picks)


def bench(repeats: int, say: Callable[[str], None] = print) -> tuple[str, str, str, str, str,
                                                                      bool]:
    """(name, median A, B, compared, target, met) for the benchmark table."""
    headline: tuple[str, str, str, str, str, bool] | None = None
    for chip_name in CHIPS:
        _search(chip_name)  # warm-up: imports, the catalogue, the model
        times, cpus, found = [], [], None
        for _ in range(repeats):
            seconds, cpu, found = _search(chip_name)
            times.append(seconds)
            cpus.append(cpu)
        assert found is not None
        best = found.best.t_lower
        if any(c.t_lower < best or c.memory > float(found.plan.capacity) for c in found.every):
            raise Disagree("the chosen plan is not the fastest that fits")
        per_plan = _exact(chip_name, found)
        median = statistics.median(times)
        say(f"  {chip_name}: {found.searched} plans ({found.feasible} fit) in median "
            f"{median:.3f} s (min {min(times):.3f}, max {max(times):.3f}, n={repeats}; CPU "
            f"{statistics.median(cpus):.3f} s); "
            f"the exact plan one at a time {per_plan * 1e3:.1f} ms each, "
            f"{per_plan * found.searched:.1f} s for all")
        say(f"    {found.explain()}")
        if headline is None:
            headline = (f"plan search, 256 chips ({chip_name})", f"{median:.3f} s",
                        f"{per_plan * found.searched:.1f} s", f"{found.searched} plans",
                        "A < 2 s", median < 2)
    assert headline is not None
    return headline


COMMAND = ["plan", "llama-2-7b", "--train", "--search", "256", "--chip", "h100-sxm",
           "--batch", "1024", "--context", "4096", "--recompute", "any"]


#: what the command imports before it searches (the command line, the plan request, the
#: search and the plan it prints), timed alone: the floor under the command's time
IMPORTS = ("import symroof.cli.main, symroof.cli.plan, symroof.commands.plan, "
           "symroof.plans.search, symroof.plans.training, symroof.render.plan_views")


def _in_process() -> tuple[float, float, int]:
    """Wall and CPU seconds of the search a user types, and the plans it searched."""
    from symroof.commands.plan import PlanRequest
    from symroof.plans import search as module
    module._COMPILED.clear()
    fresh()
    start, cpu = time.perf_counter(), time.process_time()
    out = PlanRequest(model="llama-2-7b", mode="train", chip="h100-sxm", search=256,
                      batch=1024, context=4096, recompute="any").run()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert out.search is not None
    return wall, cpu, out.search.searched


def _timed(argv: list[str]) -> float:
    import subprocess
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def bench_command(repeats: int, say: Callable[[str], None] = print) -> None:
    """The search a user types: in process, and as a command beside ``import sympy``."""
    import sys
    _in_process()  # warm-up
    inside, cpus, plans = zip(*(_in_process() for _ in range(repeats)), strict=True)
    # both sides read compiled bytecode, as an installed package does (pip compiles it at
    # install; SymPy's is compiled already): a checkout where PYTHONDONTWRITEBYTECODE is
    # set would compile every module of the package from source at each run
    import compileall

    import symroof
    compileall.compile_dir(str(Path(symroof.__file__).parent), quiet=1)
    command, sympy, imports = [], [], []
    for _ in range(repeats):  # in turns, so that all three see the same load
        command.append(_timed([sys.executable, "-m", "symroof", *COMMAND]))
        sympy.append(_timed([sys.executable, "-c", "import sympy"]))
        imports.append(_timed([sys.executable, "-c", IMPORTS]))
    a, b, c, d = (statistics.median(x) for x in (inside, command, sympy, imports))
    say(f"  symroof {' '.join(COMMAND)}")
    say(f"    in process: {plans[0]} plans in median {a:.3f} s (n={repeats}; target 1.5 s), CPU "
        f"{statistics.median(cpus):.3f} s (the wall time's share of a loaded machine aside)")
    say(f"    as a command: median {b:.3f} s against import sympy {c:.3f} s: {b / c:.2f}x "
        f"(target 2.5x); the modules it imports, before any work: {d:.3f} s, {d / c:.2f}x")


if __name__ == "__main__":
    print(bench(3))
    bench_command(5)
