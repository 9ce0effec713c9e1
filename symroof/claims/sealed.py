"""The parent side of a sealed run: fork one worker per unit, read its messages, enforce the
time limits by killing it, and resume the claims after a stopped one in a new worker.

>>> Pool(30, 2).grace
8.0

The worker cannot move its deadlines: each step (the import and build(), then each claim)
has a deadline fixed when it starts, and only the message that completes it (``built``, the
claim's ``value``) starts the next one; every job's deadline is checked on every pass of the
loop, whether its worker is writing or not. A message out of turn (a second ``start``, a
``value`` for another claim, a second ``built``), of an unknown kind, or a line longer than
:data:`MAX_LINE` is a protocol error: the unit is an ERROR and its worker is killed.

SymPy and the claims modules are imported here once, before the first fork, and what the
other units share while the first one runs, so every worker starts with them loaded. The
limit of a unit's import and build() is ``timeout``; so is each claim's. A worker past a
limit (plus ``grace``, for the worker's own alarm to act first) is killed with SIGKILL,
whatever the derivation catches: the claim it was on is TIMEOUT (the whole unit, if it was
still building), and the claims after it go on in a new worker.
"""

from __future__ import annotations

import gc
import json
import os
import re
import select
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from .cache import Derived, Hint, file_digest, own_files
from .judge import against_tables, judged
from .processes import adopting_orphans, fork_worker, how, interrupts_remembered, kill, reap
from .rows import unit_row

if TYPE_CHECKING:
    from .sandbox import Walls

MAX_LINE = 256 * 2**20  # a message longer than this is a flood: the worker is killed
_KINDS = frozenset({"built", "start", "value", "deps", "fail", "done"})

# what every worker needs: SymPy (with the modules its first sum imports), the claims
BASE = ("sympy", "sympy.tensor.tensor", "symroof.claims.model", "symroof.claims.rules",
        "symroof.claims.loader", "symroof.claims.worker", "symroof.claims.chapter",
        "symroof.claims.consistency")
# what two or more bundled derivations need besides, imported once when nothing better is
# known
PRELOAD = (*BASE, "numpy", "numpy.random", "symroof.engine.optimize", "symroof.topics.adcost",
           "symroof.topics.attention", "symroof.topics.scaling_laws")
# the packages whose modules a hint may name (a hint never imports a derivation's own code)
PRELOADABLE = ("sympy", "numpy", "mpmath", "symroof")


def preload(hints: list[Hint | None]) -> tuple[str, ...]:
    """The modules to import before forking: :data:`BASE`, and every public module of the
    :data:`PRELOADABLE` packages (no private or test module) that two or more units' hints
    name; :data:`PRELOAD` when a unit has no hint. A module only one unit needs is left to
    that unit's worker, which imports it on its own core.

    >>> h = Hint(("numpy", "numpy.random", "numpy._core", "sympy.tests", "helper"), 0.1)
    >>> preload([h, h, Hint(("mpmath",), 0.2)])  # doctest: +ELLIPSIS
    ('sympy', ..., 'numpy', 'numpy.random')
    """
    if not hints or any(h is None for h in hints):
        return PRELOAD
    counts = Counter(m for h in hints if h is not None for m in set(h.imported)
                     if m.split(".")[0] in PRELOADABLE and _MODULE.fullmatch(m))
    shared = sorted(m for m, n in counts.items() if n >= 2 and m not in BASE)
    return (*BASE, *shared)


_MODULE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.(?!tests?\b)[A-Za-z][A-Za-z0-9_]*)*")


@dataclass
class _Job:
    """One unit, over the workers it takes."""

    index: int
    unit: Path
    meta: list[dict[str, Any]] | None = None   # every claim's row, before its verdict
    facts: list[dict[str, Any]] = field(default_factory=list)  # what judging it needs
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    first: int = 0                              # the claim the current worker starts at
    workers: int = 0
    pid: int = 0
    fd: int = -1
    buffer: bytearray = field(default_factory=bytearray)  # a line not yet complete
    current: int | None = None
    deadline: float = 0.0
    deps: list[tuple[str, str | None]] | None = None  # files its worker read, digested then
    env: list[str] = field(default_factory=list)  # the environment variables it read
    links: list[tuple[str, str | None]] = field(default_factory=list)
    untracked: str = ""  # why its build must not be kept
    built: str = ""  # the built message, as sent
    values: dict[int, dict[str, Any]] = field(default_factory=dict)  # as sent
    before: dict[str, str | None] = field(default_factory=dict)  # own files before the fork
    has_built: bool = False  # the current worker sent its built message
    imported: list[str] = field(default_factory=list)
    inherited: tuple[str, ...] = ()  # the modules loaded when its worker was forked
    started: float = 0.0
    seconds: float = 0.0
    failure: tuple[str, str] | None = None
    done: bool = False
    final: list[dict[str, Any]] | None = None
    ids: list[str] = field(default_factory=list)  # the derivations it built


class Pool:
    """Workers for a list of units, up to ``jobs`` at once."""

    def __init__(self, timeout: float, jobs: int,
                 progress: Callable[[int, dict[str, Any]], None] | None = None,
                 walls: Walls | None = None) -> None:
        self.walls = walls
        self.timeout = timeout
        self.jobs = max(1, jobs)
        self.grace = 0.5 + timeout / 4
        self.progress = progress
        self.judged = 0

    def run(self, units: list[Path], hints: list[Hint | None] | None = None,
            ) -> dict[int, Ran]:
        """What each unit (by position) gave: its rows; for a unit that ran whole in one
        worker without ERROR or TIMEOUT, the files its build read and the hint for next time;
        the ids of its derivations. The units known to take longest start first."""
        hints = hints if hints is not None else [None] * len(units)
        _import(BASE)
        waiting = [_Job(i, u) for i, u in enumerate(units)]
        waiting.sort(key=lambda j: -_cost(j.unit, hints[j.index]))
        active: dict[int, _Job] = {}
        finished: list[_Job] = []
        from .sandbox import not_dumpable, set_dumpable
        dumpable = not_dumpable()  # no worker opens this process's descriptors
        with interrupts_remembered() as interrupted, adopting_orphans():
            try:
                # the longest unit starts at once; the parent imports what the others
                # share while it runs
                if waiting:
                    job = waiting.pop(0)
                    self._spawn(job)
                    active[job.fd] = job
                if waiting:
                    _import(preload(hints))
                while waiting or active:
                    interrupted()  # raised again if a library swallowed it
                    while waiting and len(active) < self.jobs:
                        job = waiting.pop(0)
                        self._spawn(job)
                        active[job.fd] = job
                    self._step(active, waiting, finished)
                interrupted()
            finally:
                for job in active.values():
                    kill(job.pid)
        if dumpable is not None:
            set_dumpable(dumpable)
        if any(j.failure and j.failure[0] == "interrupt" for j in finished):
            raise KeyboardInterrupt  # a derivation raised it: the run ends (exit 130)
        failures = sorted((j.index, j.failure[1]) for j in finished
                          if j.failure and j.failure[0] == "input")
        if failures:
            raise InputError(failures[0][1])
        out = {}
        for j in finished:
            assert j.final is not None
            clean = (j.deps is not None and j.workers == 1 and j.failure is None
                     and len(j.values) == len(j.final)
                     and all(r["verdict"] not in ("ERROR", "TIMEOUT") for r in j.final))
            derived = Derived(j.built, tuple(j.values[k] for k in range(len(j.final))),
                              tuple(j.deps or ()), tuple(j.env), tuple(j.links),
                              j.untracked) if clean else None
            out[j.index] = Ran(j.final, derived, j.inherited, j.ids,
                               Hint(tuple(j.imported), round(j.seconds, 3)), j.before)
        return out

    def _spawn(self, job: _Job) -> None:
        from .worker import serve
        if job.workers == 0:  # what the unit's own files hold before its code runs
            job.before = {f: file_digest(f) for f in sorted(own_files(job.unit))}
        pid, read = fork_worker(lambda write: serve(job.unit, job.first, self.timeout, write,
                                                    self.walls))
        job.pid, job.fd, job.buffer, job.current = pid, read, bytearray(), None
        job.inherited = tuple(sys.modules)
        job.deps, job.done, job.failure, job.has_built = None, False, None, False
        job.workers += 1
        job.deadline = time.monotonic() + self.timeout + self.grace  # import and build()
        job.started = time.monotonic()

    def _step(self, active: dict[int, _Job], waiting: list[_Job],
              finished: list[_Job]) -> None:
        now = time.monotonic()
        wait = max(0.0, min(j.deadline for j in active.values()) - now)
        ready, _, _ = select.select(list(active), [], [], wait)
        for fd in ready:
            job = active[fd]
            data = os.read(fd, 1 << 16)
            if data:
                lines = _lines(job.buffer, data)
                for line in lines:
                    if job.done or job.failure:
                        break
                    self._message(job, line)
                if len(job.buffer) > MAX_LINE and not job.failure:
                    job.failure = ("error", f"{job.unit}: the worker sent a message longer "
                                   f"than {MAX_LINE >> 20} MiB")
                if not (job.done or job.failure):
                    continue
            # at its end (or its last message: a process it started may hold the pipe),
            # the worker and everything in its process group go
            del active[fd]
            self._ended(job, reap(job.pid, kill=bool(data)), waiting, finished)
        now = time.monotonic()
        for fd, job in list(active.items()):  # every job, writing or not
            if job.deadline <= now:
                del active[fd]
                kill(job.pid)
                self._ended(job, None, waiting, finished)

    def _message(self, job: _Job, line: bytes) -> None:
        try:
            msg = json.loads(line)
            kind = msg["t"]
            if not isinstance(msg, dict) or kind not in _KINDS:
                raise ValueError(kind)
        except (ValueError, KeyError, TypeError):
            job.failure = ("error", f"{job.unit}: the worker sent a garbled message")
            return
        garbled = ("error", f"{job.unit}: the worker sent a message out of turn ({kind})")
        try:
            if kind == "built":
                if job.has_built:
                    job.failure = garbled
                    return
                job.has_built = True
                self._built(job, msg, line)
                self._next_step(job)
            elif kind == "start":
                if job.meta is None or job.current is not None or msg["i"] != _next(job):
                    job.failure = garbled
                    return
                job.current = msg["i"]
            elif kind == "value":
                i = msg["i"]
                if job.meta is None or type(i) is not int or i != job.current:
                    job.failure = garbled
                    return
                job.rows[i] = judged(job.meta[i], job.facts[i], msg, self.timeout)
                job.values[i] = msg
                job.current = None
                self.judged += 1
                if self.progress:
                    self.progress(self.judged, job.rows[i])
                self._next_step(job)
            elif kind == "deps":
                if job.meta is None or job.deps is not None:
                    job.failure = garbled
                    return
                job.deps = _pairs(msg["files"])
                job.env = [v for v in msg.get("env", []) if isinstance(v, str)]
                job.imported = [m for m in msg.get("imported", []) if isinstance(m, str)]
                job.links = _pairs(msg.get("links", []))
                job.untracked = str(msg.get("uncached", ""))
            elif kind == "fail":
                job.failure = (str(msg["kind"]), str(msg["message"]))
            elif kind == "done":
                job.done = True
        except (KeyError, TypeError, AttributeError, ValueError):  # a line of the wrong shape
            job.failure = ("error", f"{job.unit}: the worker sent a garbled message")

    def _next_step(self, job: _Job) -> None:
        """A step completed: the next one (a claim, or the worker's last messages) has the
        time limit from now."""
        job.deadline = time.monotonic() + self.timeout + self.grace

    def _built(self, job: _Job, msg: dict[str, Any], line: bytes) -> None:
        """The claims a worker built: the first time, checked against the unit's tables,
        read here; after a stop, the same claims again."""
        meta = [c for d in msg["derivations"] for c in d["claims"]]
        facts = [f for d in msg["derivations"] for f in d["facts"]]
        if job.meta is not None:
            if [(c["derivation"], c["id"]) for c in meta] != \
                    [(c["derivation"], c["id"]) for c in job.meta]:
                job.failure = ("error", f"{job.unit}: builds different claims each time")
            return
        if len(facts) != len(meta):
            job.failure = ("error", f"{job.unit}: the worker sent a garbled message")
            return
        try:
            wrong = against_tables(job.unit, meta, facts)
        except InputError as exc:
            job.failure = ("input", str(exc))
            return
        if wrong:
            job.failure = ("error", wrong)
            return
        job.meta, job.facts = meta, facts
        job.ids = [d["id"] for d in msg["derivations"]]
        job.built = line.decode("utf-8")

    def _ended(self, job: _Job, status: int | None, waiting: list[_Job],
               finished: list[_Job]) -> None:
        """A worker is gone: exited (``status``) or killed at its deadline (None)."""
        os.close(job.fd)
        job.seconds += time.monotonic() - job.started
        if job.failure is not None or job.meta is None:
            job.final = self._unit_failed(job, status)
            finished.append(job)
            return
        n = len(job.meta)
        stopped = job.current
        if stopped is None and not job.done:
            stopped = next((k for k in range(job.first, n) if k not in job.rows), None)
        if stopped is not None:
            row = dict(job.meta[stopped])
            if status is None:
                row.update(verdict="TIMEOUT", seconds=self.timeout,
                           detail=f"no result within {self.timeout:g} s (stopped)")
            else:
                row.update(verdict="ERROR", detail=f"the derivation's process "
                           f"{how(status)} during this claim")
            job.rows[stopped] = row
            job.first = stopped + 1
            if job.first < n:
                waiting.insert(0, job)
                return
        missing = [k for k in range(n) if k not in job.rows]
        for k in missing:  # a worker that said done without judging them: never success
            job.rows[k] = {**job.meta[k], "verdict": "ERROR",
                           "detail": "the worker ended without judging this claim"}
        job.final = [job.rows[k] for k in range(n)]
        finished.append(job)

    def _unit_failed(self, job: _Job, status: int | None) -> list[dict[str, Any]]:
        if job.failure is not None:
            kind, message = job.failure
            return [unit_row(job.unit, "ERROR", message)] if kind == "error" else []
        if status is None:
            return [unit_row(job.unit, "TIMEOUT", f"{job.unit}: import and build() ran past "
                             f"{self.timeout:g} s")]
        return [unit_row(job.unit, "ERROR", f"{job.unit}: the derivation's process "
                         f"{how(status)} while importing or building")]


@dataclass(frozen=True)
class Ran:
    """A unit's outcome: verdict rows, what its worker derived and read (None: not to be
    cached), the modules it was forked with, the ids of its derivations, the hint for its
    next run, and its own files' digests before it ran."""

    rows: list[dict[str, Any]]
    derived: Derived | None
    inherited: tuple[str, ...]
    ids: list[str]
    hint: Hint
    before: dict[str, str | None] = field(default_factory=dict)

    def forked_with(self) -> list[str]:
        """The files of the modules it was forked with (found only when asked: a run that
        caches nothing never looks them up)."""
        from .worker import module_files
        return sorted(module_files(self.inherited))


def _lines(buffer: bytearray, data: bytes) -> list[bytes]:
    r"""The lines ``data`` completes, ``buffer`` left holding the unfinished one. Only the new
    data is searched, and a long line grows in place: a flood without a newline costs
    linear time, not quadratic, until it passes :data:`MAX_LINE`.

    >>> b = bytearray(b'{"t"')
    >>> _lines(b, b':1}\n{"t":2}\n{'), b
    ([b'{"t":1}', b'{"t":2}'], bytearray(b'{'))
    """
    end = data.rfind(b"\n")
    if end < 0:
        buffer += data
        return []
    lines = (bytes(buffer) + data[:end]).split(b"\n")
    buffer[:] = data[end + 1:]
    return lines


def _next(job: _Job) -> int:
    """The claim the worker is to start next."""
    return next(k for k in range(job.first, len(job.meta or ()) + 1) if k not in job.rows)


def _pairs(value: Any) -> list[tuple[str, str | None]]:
    """``[name, text or null]`` pairs of a message (a list of another shape is garbled)."""
    if not isinstance(value, list):
        raise TypeError("not a list")
    out = []
    for p in value:
        if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                and (p[1] is None or isinstance(p[1], str))):
            raise TypeError("not a pair")
        out.append((p[0], p[1]))
    return out


def _import(names: tuple[str, ...]) -> None:
    """Import ``names`` (a hinted module that fails to import is skipped, its warnings kept
    quiet), and read the bundled chip catalogue, so that every worker starts with them."""
    import importlib
    import warnings
    # no collection while importing (it only walks SymPy's new objects, which all live
    # on); frozen after, so that no collection in the parent or a worker walks them again
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        for name in names:
            if name in PRELOAD:
                importlib.import_module(name)
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(name)
            except Exception:  # a hint only saves time: the worker imports what it needs
                pass
        if not os.environ.get("SYMROOF_CATALOG"):
            from ..hardware.catalog import load_catalog
            load_catalog(None)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


def _cost(unit: Path, hint: Hint | None) -> float:
    """The seconds a unit took last time; without a hint, its files' size as a stand-in
    (a millisecond per kilobyte), so that big chapters start first."""
    if hint is not None:
        return hint.seconds
    try:
        files = [unit] if unit.is_file() else [p for p in unit.iterdir() if p.is_file()]
        return sum(p.stat().st_size for p in files) / 1e6
    except OSError:
        return 0.0
