"""The worker side of a sealed run: one forked process builds one derivation unit and derives
its claims, sending each claim's derived value to the parent, which judges it.

>>> encode({"t": "start", "i": 0})
b'{"t":"start","i":0}\\n'

The worker's standard streams go to the null device (nothing it prints reaches the
parent's output or a disk), SIGINT is left to the parent, and it always ends with
``os._exit`` so that no ``sys.exit``, ``atexit`` handler or buffered output of the
derivation escapes. It closes every descriptor but its pipe and enters the walls of
:mod:`symroof.claims.sandbox` before it imports the derivation. Messages (JSON lines):
``built`` (every derivation's claims, as verdict rows without verdicts, and the facts a
judgement needs), ``start`` and ``value`` (the derived value as exact text,
:mod:`symroof.claims.judge`) per claim, ``deps`` (each file it opened, with its digest taken
when it was opened, and those of the modules it imported itself, which the parent may
preload next time; the parent adds the files of the modules the worker started with; the
environment variables it read; the symbolic links it read; and ``uncached``, the reason its
verdicts must not be kept when it read through a channel the tracker cannot follow),
``done``; ``fail`` with ``kind``
``input`` (bad input, exit 2), ``error`` (an ERROR of the run) or ``interrupt`` (loading
the unit raised KeyboardInterrupt: the run ends as interrupted, exit 130; one claim's
derivation raising it is that claim's ERROR).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..core.errors import SymroofError

if TYPE_CHECKING:
    from .sandbox import Walls


def encode(message: dict[str, Any]) -> bytes:
    """One message as a strict JSON line (no NaN or Infinity)."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            + "\n").encode("utf-8")


def serve(unit: Path, first: int, timeout: float, fd: int, walls: Walls | None = None,
          ) -> NoReturn:
    """Build ``unit``, judge its claims from number ``first`` on, report over ``fd``, exit."""
    try:
        inherited = set(sys.modules)
        opened = seal(walls, keep=fd)
        _work(unit, first, timeout, fd, opened, inherited)
    except BaseException as exc:  # the worker's own last resort: report, never raise
        with contextlib.suppress(BaseException):
            send(fd, {"t": "fail", "kind": "error",
                       "message": f"{unit}: the worker failed: {type(exc).__name__}: {exc}"})
    finally:
        os._exit(0)


def _work(unit: Path, first: int, timeout: float, fd: int, opened: dict[str, str | None],
          inherited: set[str]) -> None:
    from .judge import claim_row, derived_message, facts_of
    from .loader import UnitError, load_unit
    try:
        derivations = load_unit(unit)
    except UnitError as exc:
        send(fd, {"t": "fail", "kind": "error", "message": str(exc)})
        return
    except KeyboardInterrupt:  # raised by the derivation itself: the run ends, exit 130
        send(fd, {"t": "fail", "kind": "interrupt", "message": f"{unit}: interrupted"})
        return
    except SymroofError as exc:
        send(fd, {"t": "fail", "kind": "input", "message": str(exc)})
        return
    send(fd, {"t": "built", "derivations": [
        {"id": d.id, "claims": [claim_row(c, d.id) for c in d.claims],
         "facts": [facts_of(c) for c in d.claims]} for d in derivations]})
    k = 0
    for d in derivations:
        for claim in d.claims:
            if k >= first:
                send(fd, {"t": "start", "i": k})
                try:
                    sent = derived_message(claim, timeout)
                except BaseException as exc:  # KeyboardInterrupt and the like, raised by it
                    sent = {"failed": "ERROR", "detail": f"{type(exc).__name__}: {exc}"}
                send(fd, {"t": "value", "i": k, **sent})
            k += 1
    imported = sorted(set(sys.modules) - inherited)
    # the files of the modules it imported itself and of those it opened: the parent adds
    # those of the modules the worker started with (module_files), read once for all
    from .cache import file_digest
    files = {f: d for f, d in opened.items() if _real_file(f)}
    for f in module_files(imported) - set(files):  # loaded from a .pyc: digested now
        files[f] = file_digest(f)
        with contextlib.suppress(OSError):
            if os.stat(f).st_mtime_ns >= STARTED[0] and not UNTRACKED:
                UNTRACKED.append(f"{f} changed while the unit ran")
    send(fd, {"t": "deps", "files": sorted([f, d] for f, d in files.items()),
               "imported": imported, "env": sorted(ENVIRONMENT),
               "links": sorted([k, v] for k, v in LINKS.items()),
               "uncached": UNTRACKED[0] if UNTRACKED else ""})
    send(fd, {"t": "done"})


ENVIRONMENT: set[str] = set()  # the variables read here, by any of os.environ's faces
LINKS: dict[str, str | None] = {}  # the symbolic links read with os.readlink, and targets
UNTRACKED: list[str] = []  # the channels read past the tracker (native code, a process)
STARTED = [time.time_ns()]  # when the worker began (set again in seal)
# audit events of reads the tracker cannot follow: native code (ctypes) may call getenv or
# fopen, a process reads what it likes
_UNTRACKED_EVENTS = {"ctypes.dlopen": "loaded a native library with ctypes",
                     "ctypes.dlsym": "called native code through ctypes",
                     "subprocess.Popen": "started a process", "os.system": "started a process",
                     "os.exec": "started a program", "os.posix_spawn": "started a process",
                     "os.spawn": "started a process", "os.fork": "forked"}


class _Watched(type(os.environ)):  # type: ignore[misc]
    """``os.environ`` recording the names read: by key, or all of them when listed."""

    def __getitem__(self, key: str) -> str:
        if isinstance(key, str):
            ENVIRONMENT.add(key)
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        keys = list(super().__iter__())
        ENVIRONMENT.update(keys)
        return iter(keys)

    def __repr__(self) -> str:
        ENVIRONMENT.update(self.keys())
        return super().__repr__()


class _WatchedData(dict):
    """The environment's raw bytes table (``posix.environ``, ``os.environ._data``,
    ``os.environb``) recording the names read."""

    def _saw(self, key: object) -> None:
        if isinstance(key, bytes | str):
            ENVIRONMENT.add(os.fsdecode(key))

    def _all(self) -> None:
        ENVIRONMENT.update(os.fsdecode(k) for k in dict.keys(self))

    def __getitem__(self, key: Any) -> Any:
        self._saw(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._saw(key)
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        self._saw(key)
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[Any]:
        self._all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def copy(self) -> dict[Any, Any]:
        self._all()
        return dict(dict.items(self))

    def __repr__(self) -> str:
        self._all()
        return dict.__repr__(self)


def _watch_environment() -> None:
    """Every face of the environment records the names read: ``os.environ``,
    ``os.environb``, their shared table ``posix.environ``; ``os.readlink`` records links."""
    import posix
    data = _WatchedData(os.environ._data)  # type: ignore[attr-defined]
    os.environ._data = data  # type: ignore[attr-defined]
    os.environ.__class__ = _Watched
    if hasattr(os, "environb"):
        os.environb._data = data  # type: ignore[attr-defined]
        os.environb.__class__ = _Watched
    posix.environ = data
    readlink = os.readlink

    def watched_readlink(path: Any, *args: Any, **kwargs: Any) -> Any:
        target = None
        try:
            target = readlink(path, *args, **kwargs)
            return target
        finally:
            if isinstance(path, str | bytes | os.PathLike) and not args and not kwargs:
                LINKS[os.path.abspath(os.fsdecode(path))] = \
                    None if target is None else os.fsdecode(target)
    os.readlink = watched_readlink


def seal(walls: Walls | None = None, keep: int | None = None) -> dict[str, str | None]:
    """Standard streams to the null device, SIGINT to the parent, every descriptor but
    ``keep`` closed (when given), the ``walls`` entered (for a write-up's worker, built
    here), and a
    record of every file opened (with its digest then) and every environment variable read
    from here on."""
    STARTED[0] = time.time_ns()
    os.setsid()  # its own process group: the parent kills whatever it starts
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        if stream != null:
            os.dup2(null, stream)
    if null > 2:  # with a standard stream closed, the null device took its number
        os.close(null)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    if keep is not None:
        _close_all_but(keep, -1 if walls is None else walls.fd)
    if walls is None:
        from .cache import default_cache_folder
        from .sandbox import Walls
        walls = Walls.build(default_cache_folder())
    if walls is not None:
        walls.enter()
    from .cache import file_digest
    opened: dict[str, str | None] = {}
    busy: list[int] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy:
            return  # the digest's own open
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            path = os.path.abspath(os.fsdecode(args[0]))
            if path.startswith("/proc/") and path.endswith("/environ"):
                ENVIRONMENT.update(os.environ)  # the whole environment, read as a file
            if path not in opened and _real_file(path):
                busy.append(1)
                try:
                    opened[path] = file_digest(path)
                finally:
                    busy.clear()
        elif event in _UNTRACKED_EVENTS and not UNTRACKED:
            UNTRACKED.append(_UNTRACKED_EVENTS[event])
    sys.addaudithook(hook)
    _watch_environment()
    parent = os.getppid()

    def watch() -> None:  # a worker never outlives the run that started it
        while os.getppid() == parent:
            time.sleep(0.25)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()
    return opened


def _close_all_but(*keep: int) -> None:
    """Close every descriptor above the standard streams but ``keep`` (the parent's pipes to
    other workers, its saved streams: nothing a derivation may write to)."""
    try:
        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


_FILES: dict[str, str | None] = {}  # a module's source file, once read


def module_files(names: Iterable[str]) -> set[str]:
    """The real files (no cache, no device) of the modules ``names`` that are loaded.

    >>> module_files(["json", "sys"]) == {sys.modules["json"].__file__}
    True
    """
    out = set()
    for name in names:
        if name not in _FILES:
            path = getattr(sys.modules.get(name), "__file__", None)
            path = os.path.abspath(path) if isinstance(path, str) else None
            _FILES[name] = path if path is not None and _real_file(path) else None
        found = _FILES[name]
        if found is not None:
            out.add(found)
    return out


def _real_file(path: str) -> bool:
    return ("__pycache__" not in path and not path.startswith(("/dev/", "/proc/", "/sys/"))
            and os.path.isfile(path))


def send(fd: int, message: dict[str, Any]) -> None:
    data = memoryview(encode(message))
    while data:
        data = data[os.write(fd, data):]
