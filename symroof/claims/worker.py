"""The worker side of a sealed run: one forked process builds one derivation unit and derives
its claims, sending each claim's derived value to the parent, which judges it.

>>> encode({"t": "start", "i": 0})
b'{"t":"start","i":0}\\n'

The worker's standard streams go to the null device (nothing it prints reaches the
parent's output or a disk), SIGINT is left to the parent, and it always ends with
``os._exit`` so that no ``sys.exit``, ``atexit`` handler or buffered output of the
derivation escapes. Messages (JSON lines): ``built`` (every derivation's claims, as verdict
rows without verdicts, and the facts a judgement needs), ``start`` and ``value`` (the derived
value as exact text, :mod:`symroof.claims.judge`) per claim, ``deps`` (the files it opened and
those of the modules it imported itself, which the parent may preload next time; the parent
adds the files of the modules the worker started with; and the environment variables it
read), ``done``; ``fail`` with ``kind``
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
from typing import Any, NoReturn

from ..core.errors import SymroofError


def encode(message: dict[str, Any]) -> bytes:
    """One message as a strict JSON line (no NaN or Infinity)."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            + "\n").encode("utf-8")


def serve(unit: Path, first: int, timeout: float, fd: int) -> NoReturn:
    """Build ``unit``, judge its claims from number ``first`` on, report over ``fd``, exit."""
    try:
        inherited = set(sys.modules)
        opened = seal()
        _work(unit, first, timeout, fd, opened, inherited)
    except BaseException as exc:  # the worker's own last resort: report, never raise
        with contextlib.suppress(BaseException):
            send(fd, {"t": "fail", "kind": "error",
                       "message": f"{unit}: the worker failed: {type(exc).__name__}: {exc}"})
    finally:
        os._exit(0)


def _work(unit: Path, first: int, timeout: float, fd: int, opened: set[str],
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
    files = {f for f in opened if _real_file(f)} | module_files(imported)
    send(fd, {"t": "deps", "files": sorted(files), "imported": imported,
               "env": sorted(ENVIRONMENT)})
    send(fd, {"t": "done"})


ENVIRONMENT: set[str] = set()  # the variables read from os.environ (or os.getenv) here


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


def seal() -> set[str]:
    """Standard streams to the null device, SIGINT to the parent, and a record of every file
    opened and every environment variable read from here on."""
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
    opened: set[str] = set()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            opened.add(os.path.abspath(os.fsdecode(args[0])))
    sys.addaudithook(hook)
    os.environ.__class__ = _Watched
    parent = os.getppid()

    def watch() -> None:  # a worker never outlives the run that started it
        while os.getppid() == parent:
            time.sleep(0.25)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()
    return opened


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
