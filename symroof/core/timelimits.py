"""Time limits for SymPy calls that may not finish.

>>> with time_limit(5):
...     pass

SIGALRM interrupts pure-Python work (most of SymPy) on the main thread; elsewhere the block
runs unbounded. :class:`TimeLimit` is a ``BaseException``, so the ``except Exception`` of
the code it interrupts does not swallow it, and it is raised again every quarter second
until the block ends, in case that code catches everything.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class TimeLimit(BaseException):
    """Raised inside a block that ran past its limit."""


_DEADLINES: list[float] = []  # the deadlines of the limits in force, outermost first


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with :class:`TimeLimit` after ``seconds``. Limits nest: an inner
    limit never extends an outer one (the earliest deadline holds), and on leaving it the
    outer limit is armed again for the time it has left."""
    usable = (seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    deadline = time.monotonic() + seconds
    if _DEADLINES:
        deadline = min(deadline, _DEADLINES[-1])

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    _DEADLINES.append(deadline)
    _arm(deadline)
    try:
        yield
    finally:
        _DEADLINES.pop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if _DEADLINES:
            _arm(_DEADLINES[-1])


def _arm(deadline: float) -> None:
    left = max(deadline - time.monotonic(), 0.001)
    signal.setitimer(signal.ITIMER_REAL, left, max(min(left, 0.25), 0.01))
