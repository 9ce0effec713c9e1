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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import InputError


def write(files: Mapping[str, str | bytes], out: Path) -> list[str]:
    """Write every file atomically (a temporary file, then a rename), after all of them
    rendered: an interrupted run leaves the previous files whole."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder: {exc.strerror}", str(out)) \
            from None
    if not os.access(out, os.W_OK):
        raise InputError("the output folder is not writable", str(out))
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, content in files.items():
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".symroof-", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            staged.append((Path(tmp), target))
        with _signals_held():
            for tmp_path, target in staged:
                os.replace(tmp_path, target)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", str(out)) from None
    finally:
        for tmp_path, _ in staged:
            if tmp_path.exists():
                tmp_path.unlink()
    return list(files)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while files are swapped in, so an interrupted run leaves
    either every previous file or every new one."""
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stale(files: Mapping[str, str | bytes], out: Path) -> list[str]:
    """Files under ``out`` that differ from a fresh render (missing ones included)."""
    differing = []
    for rel, content in files.items():
        target = out / rel
        data = content.encode("utf-8") if isinstance(content, str) else content
        if not target.is_file() or target.read_bytes() != data:
            differing.append(rel)
    return differing
