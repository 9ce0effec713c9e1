"""The walls around a verify worker (Linux Landlock): it reads every file but the cache
folder's, writes only under the temporary folder, and cannot signal, trace or open the
descriptors of a process outside its own run (the parent above all).

>>> walls = Walls.build(Path("no/such/cache/folder"))
>>> walls is None or walls.abi >= 1
True

The parent builds the rule set once, before forking (:meth:`Walls.build`); each worker
enters it (:meth:`Walls.enter`) before it imports the derivation, and whatever it starts
stays inside. A rule set holds, per folder or file, the rights granted beneath it, so the
hidden folder is left out by granting its siblings, and those of each folder above it, one
by one. Where the kernel has no Landlock, :meth:`Walls.build` gives None: ``verify`` says
so in one line and runs without the cache (a worker could otherwise write it).
"""

from __future__ import annotations

import ctypes
import os
import stat
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

_CREATE, _ADD, _RESTRICT = 444, 445, 446  # the same numbers on every Linux architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_NO_NEW_PRIVS, _DUMPABLE = 38, 4
# LANDLOCK_ACCESS_FS_*: execute, write, read a file, read a folder; remove a folder or a
# file; make a char device, folder, file, socket, FIFO, block device, symlink; refer
# (ABI 2), truncate (ABI 3), ioctl on devices (ABI 5)
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
              5: (1 << 16) - 1}
_FILE_ONLY = 1 | 2 | 4 | (1 << 14) | (1 << 15)
_READ = 1 | 4 | 8  # execute, read a file, list a folder
_SCOPE = 1 | 2  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL (ABI 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _BeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def abi() -> int:
    """The kernel's Landlock version (0: none, or not Linux)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "syscall") or os.uname().sysname != "Linux":
        return 0
    got = libc.syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(0, int(got))


def not_dumpable() -> int | None:
    """Make this process undumpable (no other process of the user can open its
    ``/proc/PID/fd`` or trace it); the previous setting, None where there is no prctl."""
    libc = _libc()
    if libc is None or not hasattr(libc, "prctl"):
        return None
    before = int(libc.prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
    if before < 0 or libc.prctl(_DUMPABLE, 0, 0, 0, 0) != 0:
        return None
    return before


def set_dumpable(value: int) -> None:
    libc = _libc()
    if libc is not None and hasattr(libc, "prctl"):
        libc.prctl(_DUMPABLE, value, 0, 0, 0)


@dataclass(frozen=True)
class Walls:
    """A Landlock rule set, open in this process, that hides ``hidden``."""

    fd: int
    abi: int
    hidden: Path

    @staticmethod
    def build(hidden: Path, readonly: Iterable[Path] = ()) -> Walls | None:
        """The rule set: read everywhere, write under the temporary folder and to devices,
        but nothing in ``hidden`` and no write in ``readonly`` (the units' own folders: a
        derivation never rewrites its tables while the parent reads them); signals and
        abstract sockets scoped where the kernel can (ABI 6). None without Landlock."""
        version = abi()
        libc = _libc()
        if version < 1 or libc is None:
            return None
        handled = _FS_BY_ABI[min(version, 5)]
        attr = _RulesetAttr(handled, 0, _SCOPE if version >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if version >= 6 else 8
        fd = int(libc.syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(size),
                              ctypes.c_uint32(0)))
        if fd < 0:
            return None
        hidden = Path(os.path.realpath(hidden))
        fixed = (hidden, *(Path(os.path.realpath(p)) for p in readonly))
        try:
            _grant(libc, fd, Path("/"), 8, (hidden,), whole=True)  # list any folder
            _grant(libc, fd, Path("/"), _READ, (hidden,))
            for folder in {tempfile.gettempdir(), "/dev/shm"}:
                _grant(libc, fd, Path(os.path.realpath(folder)), handled, fixed)
            _grant(libc, fd, Path("/dev"), _READ | 2 | (handled & ((1 << 14) | (1 << 15))),
                   fixed)
        except OSError:
            os.close(fd)
            return None
        os.set_inheritable(fd, False)
        return Walls(fd, version, hidden)

    def enter(self) -> None:
        """Put this process (a forked worker) and all it starts behind the walls, for good."""
        libc = _libc()
        ok = libc is not None and libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and \
            libc.syscall(_RESTRICT, ctypes.c_int(self.fd), ctypes.c_uint32(0)) == 0
        with suppress(OSError):
            os.close(self.fd)
        if not ok:
            raise OSError("the worker could not enter its Landlock domain")

    def close(self) -> None:
        with suppress(OSError):
            os.close(self.fd)


def _grant(libc: ctypes.CDLL, ruleset: int, path: Path, rights: int,
           avoid: tuple[Path, ...], whole: bool = False) -> None:
    """Grant ``rights`` beneath ``path``, but nothing in the folders ``avoid``: a folder
    above one is granted entry by entry (``whole``: the folder itself all the same, for
    listing)."""
    real = Path(os.path.realpath(path))
    if any(real == a or a in real.parents for a in avoid):
        return
    if not whole and any(real in a.parents for a in avoid):
        try:
            entries = os.listdir(real)
        except OSError:
            return
        for entry in entries:
            _grant(libc, ruleset, real / entry, rights, avoid)
        return
    try:
        fd = os.open(real, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        mode = os.fstat(fd).st_mode
        allowed = rights & (_FILE_ONLY if not stat.S_ISDIR(mode) else ~0)
        if allowed:
            rule = _BeneathAttr(allowed, fd)
            # a rule the kernel refuses only grants less
            libc.syscall(_ADD, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                         ctypes.c_uint32(0))
    finally:
        os.close(fd)
