"""What every benchmark shares: interleaved timing, medians, subprocesses, the table row."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON = sys.executable


class BenchError(Exception):
    """A benchmark could not run, or its two sides disagree."""


@dataclass(frozen=True)
class Row:
    """One line of the summary table."""

    name: str
    a: str
    b: str
    compared: str
    target: str
    met: bool | None  # None: measured, no target


def interleave(sides: Sequence[Callable[[], float]], repeats: int,
               warm_up: bool = True) -> list[list[float]]:
    """Time the sides in rotation (ABC ABC ...), after one untimed call of each.

    Each callable does its own set-up and returns the seconds of its timed part."""
    if warm_up:
        for side in sides:
            side()
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(repeats):
        for side, out in zip(sides, times, strict=True):
            out.append(side())
    return times


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def num(x: float, unit: str = "s") -> str:
    if unit == "s":
        if x >= 0.01:
            return f"{x:.3f} s"
        return f"{x * 1e3:.2f} ms" if x >= 1e-4 else f"{x * 1e6:.1f} us"
    return f"{x:.3g} {unit}"


def describe(label: str, xs: Sequence[float], unit: str = "s") -> str:
    return (f"    {label:<44} median {num(median(xs), unit)}  min {num(min(xs), unit)}  "
            f"max {num(max(xs), unit)}  (n={len(xs)})")


def say(text: str = "") -> None:
    print(text, flush=True)


def fresh() -> None:
    """Forget every result a timed run could reuse: SymPy's cache and symroof's remembered
    engine results (``symroof.core.memo``), so each run does the whole work."""
    from sympy.core.cache import clear_cache

    from symroof.core.memo import forget
    clear_cache()
    forget()


def symroof_command() -> list[str]:
    """``python -m symroof`` run in this checkout, so the code measured is the checkout's
    (an installed console script may run another copy)."""
    return [PYTHON, "-m", "symroof"]


def run(command: Sequence[str], ok: tuple[int, ...] = (0,), env: Mapping[str, str] | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(command), capture_output=True, text=True, cwd=REPO, check=False,
                          env=dict(env) if env is not None else None, timeout=timeout)
    if done.returncode not in ok:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {' | '.join(tail)}")
    return done


def timed(command: Sequence[str], ok: tuple[int, ...] = (0,),
          env: Mapping[str, str] | None = None,
          before: Callable[[], None] | None = None) -> Callable[[], float]:
    def call() -> float:
        if before is not None:
            before()
        start = time.perf_counter()
        run(command, ok, env)
        return time.perf_counter() - start
    return call


def table(rows: Sequence[Row]) -> str:
    head = ("benchmark", "symroof", "baseline", "compared", "target", "status")
    cells = [head, *((r.name, r.a, r.b, r.compared, r.target,
                      "-" if r.met is None else ("met" if r.met else "MISSED")) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in cells[1:]]
    return "\n".join(lines)
