"""The derivation cache: what a unit's worker derived, kept with everything its build read,
and judged again by the parent each time it is used.

>>> import tempfile
>>> cache = VerdictCache(Path(tempfile.mkdtemp()))
>>> cache.lookup(Path("derivations/rooflines_ru.py"), 30) is None
True

Only the parent process writes entries, and an entry never holds a verdict: it holds the
worker's ``built`` message (the claims, before the tables are applied) and each claim's
derived value as exact text, exactly as the worker sent them. On a hit the parent applies
the unit's tables as they are today and judges every value again (:mod:`.judge`), so an
entry cannot say OK for a table that states something else.

An entry is authenticated: an HMAC-SHA256 of its text and its slot, with a key kept in the
cache folder (``key``, mode 0600) that the parent reads before it forks; the workers never
reach the cache folder (:mod:`.sandbox`), and an entry without the right MAC is ignored.

An entry lists its dependencies: the unit's own files (an entry that lacks them is
ignored), every file the build imported or opened (its helpers, sibling modules, modules on
PYTHONPATH, data files, the catalogue), each with a digest; the environment variables it
read by any face of the environment, and the symbolic links it read. The slot is keyed by
the unit, the timeout, the environment that steers imports and symroof (``PYTHONPATH``,
``SYMROOF_*``, ``sys.path``), symroof's own code and data and the Python version. Digests:
files of the Python installation (the standard library, SymPy, NumPy) by size and
modification time, every other regular file by a SHA-256 of at most :data:`MAX_BYTES`
bytes (a device, a FIFO or a bigger file is never a dependency: its unit is not kept). A
file's digest is taken by the worker when the build opens it, and again by the parent
before it stores: a file that changed during the run is not stored. A run that ended with
an ERROR or a TIMEOUT, or that read past the tracker, deletes its unit's entry.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent
MAX_BYTES = 64 * 2**20  # a dependency bigger than this is not hashed: its unit is not kept


@dataclass(frozen=True)
class Hint:
    """What a unit's last run says: the modules its worker imported itself, and its time."""

    imported: tuple[str, ...]
    seconds: float


@dataclass(frozen=True)
class Derived:
    """What a worker sent of a unit that ran whole: its ``built`` message (as sent), each
    claim's ``value`` message, the files it opened with their digests then, the environment
    variables and symbolic links it read, and why it must not be kept ('' when it may)."""

    built: str
    values: tuple[Mapping[str, Any], ...]
    files: tuple[tuple[str, str | None], ...]
    env: tuple[str, ...] = ()
    links: tuple[tuple[str, str | None], ...] = ()
    untracked: str = ""


class VerdictCache:
    """Derived values of whole units, checked against what their builds read."""

    VERSION = 5

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_cache_folder()
        self._base: str | None = None
        self._key: bytes | None = None
        self._digests: dict[str, str | None] = {}

    def open(self) -> bool:
        """Read the key (made on first use), before any worker is forked; False when the
        folder or key cannot be used (the run then keeps nothing)."""
        if self._key is not None:
            return True
        path = self.folder / "key"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(secrets.token_bytes(32))
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    return False
                key = handle.read(64)
        except OSError:
            return False
        if len(key) != 32:
            return False
        self._key = key
        return True

    def slot(self, unit: Path, timeout: float) -> Path:
        """The entry file of a unit run under ``timeout``."""
        h = hashlib.sha256(self.base().encode())
        h.update(f"|{unit.resolve()}|{timeout!r}|{environment()!r}".encode())
        return self.folder / f"{h.hexdigest()}.json"

    def forget(self) -> None:
        """Drop the digests remembered so far (a run remembers them across its units)."""
        self._digests.clear()

    def _entry(self, unit: Path, timeout: float) -> dict[str, Any] | None:
        """The unit's entry when its MAC holds (the key read), else None."""
        if self._key is None:
            return None
        slot = self.slot(unit, timeout)
        try:
            outer = json.loads(slot.read_text("utf-8"))
            text, mac = outer["entry"], outer["mac"]
            if not (isinstance(text, str) and isinstance(mac, str)):
                return None
            if not hmac.compare_digest(mac, self._mac(slot, text)):
                return None
            entry = json.loads(text)
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            return None
        return entry if _well_formed(entry) else None

    def _mac(self, slot: Path, text: str) -> str:
        assert self._key is not None
        return hmac.new(self._key, f"{slot.name}\n{text}".encode(), "sha256").hexdigest()

    def lookup(self, unit: Path, timeout: float) -> list[dict[str, Any]] | None:
        """The unit's verdict rows, judged here from its entry's derived values against its
        tables as they are now, when its entry is current; None otherwise."""
        entry = self._entry(unit, timeout)
        if entry is None:
            return None
        if not own_files(unit) <= {path for path, _ in entry["deps"]}:
            return None  # an entry that does not name the unit's own files is not its own
        if any(self.digest(path) != digest for path, digest in entry["deps"]):
            return None
        if any(os.environ.get(name) != value for name, value in entry["env"]):
            return None  # a variable the build read has changed
        if any(_link(path) != target for path, target in entry["links"]):
            return None
        return _judged(unit, entry, timeout)

    def hint(self, unit: Path, timeout: float) -> Hint | None:
        """What the unit's last entry, current or not, says of its run: the modules its
        worker imported and its seconds (None without an entry that says so)."""
        entry = self._entry(unit, timeout)
        if entry is None:
            return None
        imported, seconds = entry.get("imported"), entry.get("seconds")
        if not (isinstance(imported, list) and all(isinstance(m, str) for m in imported)
                and isinstance(seconds, int | float) and 0 <= seconds < 1e6):
            return None
        return Hint(tuple(imported), float(seconds))

    def discard(self, unit: Path, timeout: float) -> None:
        """Delete the unit's entry (its run failed, timed out, or cannot be kept)."""
        with suppress(OSError):
            self.slot(unit, timeout).unlink()

    def store(self, unit: Path, timeout: float, derived: Derived, files: Iterable[str] = (),
              before: Mapping[str, str | None] | None = None, hint: Hint | None = None,
              ) -> bool:
        """Keep what the worker ``derived`` with the digests of what it read (and of
        ``files``: the modules it was forked with, a catalogue); ``before``: the unit's own
        files' digests taken before its worker was forked. Nothing is kept (and the old
        entry goes) when a file changed during the run or cannot be digested, or the build
        read past the tracker. Whether it was kept."""
        if self._key is None:
            return False
        if derived.untracked or not self._store(unit, timeout, derived, files, before or {},
                                                hint):
            self.discard(unit, timeout)
            return False
        return True

    def _store(self, unit: Path, timeout: float, derived: Derived, files: Iterable[str],
               before: Mapping[str, str | None], hint: Hint | None) -> bool:
        seen = dict(derived.files)
        deps = []
        installation = _installation()
        for path in sorted(set(seen) | set(files) | own_files(unit)):
            if _inside(path, _PACKAGE):
                continue  # symroof itself is in the base key
            if not any(_inside(path, root) for root in installation):
                self._digests.pop(path, None)  # read afresh: the build may have changed it
            digest = self.digest(path)
            if digest is None:
                return False  # not a regular file, too big, or gone: do not cache
            if seen.get(path, digest) != digest or before.get(path, digest) != digest:
                return False  # changed while the unit ran
            deps.append([path, digest])
        if any(_link(path) != target for path, target in derived.links):
            return False
        links = [[path, target] for path, target in derived.links]
        entry: dict[str, Any] = {
            "version": self.VERSION, "built": derived.built, "values": list(derived.values),
            "deps": deps, "env": [[k, os.environ.get(k)] for k in sorted(set(derived.env))],
            "links": links}
        if hint is not None:
            entry.update(imported=list(hint.imported), seconds=hint.seconds)
        slot = self.slot(unit, timeout)
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"entry": text, "mac": self._mac(slot, text)}, handle)
                os.replace(tmp, slot)
            except BaseException:
                os.unlink(tmp)
                raise
        except (OSError, ValueError):
            return False  # a cache that cannot be written is only slower
        return True

    def digest(self, path: str) -> str | None:
        """:func:`file_digest`, remembered for the run."""
        if path not in self._digests:
            self._digests[path] = file_digest(path)
        return self._digests[path]

    def base(self) -> str:
        """A hash of symroof's code and data, the cache format and the Python version."""
        if self._base is None:
            h = hashlib.sha256(f"{self.VERSION}|{sys.version}|{sys.executable}".encode())
            for path in sorted(_PACKAGE.rglob("*")):
                if path.suffix in (".py", ".toml", ".j2") and "__pycache__" not in path.parts:
                    h.update(str(path.relative_to(_PACKAGE)).encode() + path.read_bytes())
            self._base = h.hexdigest()
        return self._base


def _judged(unit: Path, entry: Mapping[str, Any], timeout: float,
            ) -> list[dict[str, Any]] | None:
    """The rows of a unit judged here from an entry: its tables read now, every value
    judged again; None when the entry no longer fits the tables."""
    from ..core.errors import InputError
    from .judge import against_tables, judged
    try:
        built = json.loads(entry["built"])
        meta = [c for d in built["derivations"] for c in d["claims"]]
        facts = [f for d in built["derivations"] for f in d["facts"]]
        values = entry["values"]
        if not (len(meta) == len(facts) == len(values)) or not meta:
            return None
        if against_tables(unit, meta, facts):
            return None
        return [{**judged(m, f, v, timeout), "cached": True}
                for m, f, v in zip(meta, facts, values, strict=True)]
    except (InputError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # the worker says what is wrong when it builds the unit afresh


def own_files(unit: Path) -> set[str]:
    """The files that make a unit, which every entry of it lists: a module; a chapter's
    ``claims.py`` and tables (of a table unit, that table and its ``claims.py``).

    >>> own_files(Path("no/such.py")) == {str(Path("no/such.py").resolve())}
    True
    """
    unit = unit.resolve()
    if unit.is_dir():
        return {str(unit / "claims.py"), *(str(p) for p in unit.glob("*.toml"))}
    if unit.suffix == ".toml":
        return {str(unit), str(unit.parent / "claims.py")}
    return {str(unit)}


def environment() -> tuple[tuple[str, str], ...]:
    """What steers imports and symroof besides files: PYTHONPATH, SYMROOF_* (but the cache
    folder), and the import path."""
    env = tuple(sorted((k, v) for k, v in os.environ.items()
                       if (k == "PYTHONPATH" or k.startswith("SYMROOF_"))
                       and k != "SYMROOF_CACHE_DIR"))
    return (*env, ("sys.path", os.pathsep.join(os.path.abspath(p) for p in sys.path)))


def default_cache_folder() -> Path:
    """``$SYMROOF_CACHE_DIR``, else ``$XDG_CACHE_HOME/symroof``, else ``~/.cache/symroof``."""
    if os.environ.get("SYMROOF_CACHE_DIR"):
        return Path(os.environ["SYMROOF_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "symroof"


@lru_cache(maxsize=1)
def _installation() -> tuple[str, ...]:
    roots = {str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return tuple(r for r in roots if r != os.sep)


def _inside(path: str, folder: Path | str) -> bool:
    return path.startswith(str(folder).rstrip(os.sep) + os.sep)


def file_digest(path: str) -> str | None:
    """``stat:SIZE:MTIME`` for files of the Python installation, ``sha256:HEX`` for the rest;
    None for what is not a regular file (a device, a FIFO, a folder: checked on the opened
    file, whatever the path points at later), a file past :data:`MAX_BYTES`, or one that
    cannot be read.

    >>> file_digest("/dev/zero") is None
    True
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        if any(_inside(path, root) for root in _installation()):
            return f"stat:{st.st_size}:{st.st_mtime_ns}"
        h = hashlib.sha256()
        left = MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
        if left <= 0:
            return None  # it grew past the bound while being read
        return "sha256:" + h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except (OSError, ValueError):
        return None


def _pairs(value: Any, nullable: bool) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
        and (isinstance(p[1], str) or (nullable and p[1] is None)) for p in value)


def _well_formed(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("version") != VerdictCache.VERSION:
        return False
    values = entry.get("values")
    return (isinstance(entry.get("built"), str) and isinstance(values, list)
            and all(isinstance(v, dict) for v in values) and _pairs(entry.get("deps"), False)
            and _pairs(entry.get("env"), True) and _pairs(entry.get("links"), True))

