"""Processes of a sealed run: a worker's exit status in words, its process group killed,
the processes its descendants leave behind adopted and killed, pipe ends kept off the
standard streams' numbers, SIGINT and SIGTERM remembered as an interrupt.

>>> how(0)
'exited with code 0'
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Set
from contextlib import contextmanager, suppress


def how(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by signal {name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


def reap(pid: int, kill: bool = False) -> int:
    """The worker's exit status, once it has ended (``kill``: after its last message it is
    ended, for the pipe it closed may still be held open); the processes it started are
    killed."""
    if kill:
        kill_group(pid)
    _, status = os.waitpid(pid, 0)
    kill_group(pid)
    return status


def kill(pid: int) -> None:
    """SIGKILL to a worker and its process group, then its status collected."""
    kill_group(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def kill_group(pid: int) -> None:
    """SIGKILL to the process group a worker leads (it starts its own session)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def above_standard(fd: int) -> int:
    """``fd``, moved above 2 when it took a standard stream's number (a run started with
    stdin closed): the worker points 0-2 at the null device."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def fork_worker(serve: Callable[[int], object]) -> tuple[int, int]:
    """A child that runs ``serve(write_fd)`` (it ends itself with ``os._exit``), forked with
    the parent's buffers flushed; the parent's (pid, read end of the pipe)."""
    read, write = (above_standard(fd) for fd in os.pipe())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        serve(write)
        os._exit(1)  # a serve that returned: never run the parent's code in the child
    os.close(write)
    return pid, read


@contextmanager
def interrupts_remembered() -> Iterator[Callable[[], None]]:
    """Ctrl-C (SIGINT) and SIGTERM stop the run, so the workers are killed, never left
    running; the signal is remembered as well as raised, and the check this yields raises
    it again: a library that swallows the KeyboardInterrupt (mpmath has bare ``except:``
    clauses) cannot lose it.

    >>> with interrupts_remembered() as check:
    ...     check()  # nothing arrived: returns
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    arrived: list[int] = []

    def stop(signum: int, frame: object) -> None:
        arrived.append(signum)
        raise KeyboardInterrupt

    def check() -> None:
        if arrived:
            raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield check
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _subreaper(on: bool) -> None:
    with suppress(OSError, AttributeError):  # Linux only: elsewhere orphans go to init
        ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)  # CHILD_SUBREAPER


def children() -> set[int]:
    """The pids of this process's children (from /proc; empty where there is none)."""
    me, out = str(os.getpid()), set()
    with suppress(OSError):
        for entry in filter(str.isdigit, os.listdir("/proc")):
            with suppress(OSError, IndexError), open(f"/proc/{entry}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[1] == me:  # the field after state
                    out.add(int(entry))
    return out


@contextmanager
def adopting_orphans() -> Iterator[None]:
    """Processes a worker's descendants leave behind (a new session, a double fork) become
    this process's children instead of init's while the run lasts, and are killed at its end;
    children this process had before are left alone."""
    before: Set[int] = children()
    _subreaper(True)
    try:
        yield
    finally:
        for _ in range(8):  # a killed orphan's own children are adopted in turn
            left = children() - before
            for pid in left:
                with suppress(ProcessLookupError, ChildProcessError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            if not left:
                break
        _subreaper(False)
