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
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class TimeLimit(BaseException):
    """Raised inside a block that ran past its limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with :class:`TimeLimit` after ``seconds``."""
    usable = (seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, min(seconds, 0.25))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
