"""Time limits for SymPy calls that may not finish.

>>> with time_limit(5):
...     pass
>>> with time_limit(5, cpu=True):  # the process's CPU time: the same on a busy machine
...     pass

SIGALRM (SIGPROF for a limit in CPU time) interrupts pure-Python work (most of SymPy) on the
main thread; elsewhere the block runs unbounded. :class:`TimeLimit` is a ``BaseException``,
so the ``except Exception`` of the code it interrupts does not swallow it, and it is raised
again every quarter second until the block ends, in case that code catches everything.

A limit on work that only computes (``sympy.solve``) counts CPU time, so the answer does not
depend on how busy the machine is; a limit on code that may wait (a derivation that sleeps)
counts the wall clock.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


class TimeLimit(BaseException):
    """Raised inside a block that ran past its limit."""


@dataclass(frozen=True)
class _Clock:
    """One kind of limit: the clock it reads, the timer that counts it and its signal."""
    now: Callable[[], float]
    timer: int
    signal: int
    deadlines: list[float]  # the deadlines of the limits in force, outermost first


_WALL = _Clock(time.monotonic, getattr(signal, "ITIMER_REAL", 0),
               getattr(signal, "SIGALRM", 0), [])
_CPU = _Clock(time.process_time, getattr(signal, "ITIMER_PROF", 0),
              getattr(signal, "SIGPROF", 0), [])


@contextmanager
def time_limit(seconds: float, *, cpu: bool = False) -> Iterator[None]:
    """Interrupt the block with :class:`TimeLimit` after ``seconds`` (of the process's CPU
    time with ``cpu``, else of the wall clock). Limits of one kind nest: an inner limit
    never extends an outer one (the earliest deadline holds), and on leaving it the outer
    limit is armed again for the time it has left. A wall-clock limit and a CPU-time limit
    run side by side, each on its own timer."""
    usable = (seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    clock = _CPU if cpu else _WALL
    deadline = clock.now() + seconds
    if clock.deadlines:
        deadline = min(deadline, clock.deadlines[-1])

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimit

    previous = signal.signal(clock.signal, expire)
    clock.deadlines.append(deadline)
    _arm(clock, deadline)
    try:
        yield
    finally:
        clock.deadlines.pop()
        signal.setitimer(clock.timer, 0)
        signal.signal(clock.signal, previous)
        if clock.deadlines:
            _arm(clock, clock.deadlines[-1])


def _arm(clock: _Clock, deadline: float) -> None:
    left = max(deadline - clock.now(), 0.001)
    signal.setitimer(clock.timer, left, max(min(left, 0.25), 0.01))
