"""Write a render to disk all at once, or compare it with what is there (``--check``).

>>> import tempfile, pathlib
>>> from symroof.render.files import write, stale
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> write({"a.md": "x\\n"}, out), stale({"a.md": "x\\n", "b.md": "y"}, out)
(['a.md'], ['b.md'])
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from ..core.errors import InputError


def write(files: Mapping[str, str | bytes], out: Path) -> list[str]:
    """Write every file, all or nothing: each is staged as a temporary beside its target,
    then all are renamed into place with Ctrl-C and SIGTERM deferred, so an interrupted or
    failed run leaves every previous file (and no temporary, and no folder it made) or
    every new one. Files stay inside ``out`` and follow the umask."""
    if not str(out) or not str(out).strip():
        raise InputError("the output folder is empty", "out")
    root = out.resolve()
    for rel in files:
        if Path(rel).is_absolute() or not (root / rel).resolve().is_relative_to(root):
            raise InputError(f"{rel!r} would be written outside the output folder", str(out))
    made: list[Path] = []  # the folders this write creates, removed again if it fails
    try:
        _mkdirs(out, made)
    except OSError as exc:
        _remove(made)
        raise InputError(f"cannot create the output folder: {exc.strerror}", str(out)) \
            from None
    if not os.access(out, os.W_OK):
        _remove(made)
        raise InputError("the output folder is not writable", str(out))
    mode = 0o666 & ~_umask()
    staged: list[tuple[Path, Path]] = []
    try:
        with _signals_deferred() as swapping:
            for rel, content in files.items():
                target = out / rel
                _mkdirs(target.parent, made)
                fd, tmp = tempfile.mkstemp(prefix=".symroof-", dir=target.parent)
                staged.append((Path(tmp), target))
                with os.fdopen(fd, "wb") as handle:
                    os.fchmod(handle.fileno(), mode)
                    handle.write(content.encode("utf-8") if isinstance(content, str)
                                 else content)
            swapping()
            for tmp_path, target in staged:
                os.replace(tmp_path, target)
    except OSError as exc:
        for tmp_path, _ in staged:
            tmp_path.unlink(missing_ok=True)
        _remove(made)
        raise InputError(f"cannot write: {exc.strerror}", str(out)) from None
    finally:
        for tmp_path, _ in staged:
            tmp_path.unlink(missing_ok=True)
    return list(files)


def _mkdirs(folder: Path, made: list[Path]) -> None:
    """Create ``folder`` and its missing parents, noting each one created in ``made``."""
    missing = []
    for f in (folder, *folder.parents):
        if f.is_dir():
            break
        missing.append(f)
    for f in reversed(missing):
        try:
            f.mkdir()
        except FileExistsError:
            if not f.is_dir():
                raise
            continue
        made.append(f)


def _remove(made: list[Path]) -> None:
    """Remove the folders a failed write created (each empty by then), deepest first."""
    for f in reversed(made):
        with suppress(OSError):
            f.rmdir()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def _signals_deferred() -> Iterator[Callable[[], None]]:
    """While files are staged, Ctrl-C or SIGTERM stops the write (the temporaries are
    removed); once ``swapping()`` is called, they wait until every file is in place. Python
    runs signal handlers in the main thread whichever thread the signal reached, so this
    holds with other threads (numpy's, matplotlib's) running."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    pending: list[int] = []
    state = {"swapping": False}

    def handler(signum: int, frame: object) -> None:
        if state["swapping"]:
            pending.append(signum)
        else:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: state.update(swapping=True)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    if pending:
        raise KeyboardInterrupt


def stale(files: Mapping[str, str | bytes], out: Path) -> list[str]:
    """Files under ``out`` that differ from a fresh render (missing ones included)."""
    differing = []
    for rel, content in files.items():
        target = out / rel
        data = content.encode("utf-8") if isinstance(content, str) else content
        if not target.is_file() or target.read_bytes() != data:
            differing.append(rel)
    return differing
