"""The verdict cache: the verdicts of a derivation unit, kept with everything its build read.

>>> import tempfile
>>> cache = VerdictCache(Path(tempfile.mkdtemp()))
>>> cache.lookup(Path("derivations/rooflines_ru.py"), 30) is None
True

Only the parent process writes entries. An entry holds the unit's verdict rows and its
dependencies, which always include the unit's own files (an entry that lacks them is
ignored): every file the build imported or opened (its helpers, sibling modules, modules on
PYTHONPATH, data files, the catalogue), each with a digest. The slot of an entry is keyed
by the unit, the timeout, the environment
that steers imports and symroof (``PYTHONPATH``, ``SYMROOF_*``, ``sys.path``), symroof's own
code and data and the Python version. An entry is current when every dependency still has
its digest: files of the Python installation (the standard library, SymPy, NumPy) by size
and modification time, every other file by a SHA-256 of its bytes. Checking an entry
imports nothing, so a fully cached run never imports SymPy. Stored as JSON (never pickle),
written atomically; an entry of the wrong shape is ignored; ERROR and TIMEOUT are not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sealed import Hint

_PACKAGE = Path(__file__).resolve().parent.parent
_ROW_KEYS = {"id": str, "derivation": str, "verdict": str, "derived": str, "detail": str,
             "stated": str}
_UNCACHED = ("ERROR", "TIMEOUT")


class VerdictCache:
    """Verdict rows of whole units, checked against what their builds read."""

    VERSION = 4

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_cache_folder()
        self._base: str | None = None
        self._digests: dict[str, str | None] = {}

    def slot(self, unit: Path, timeout: float) -> Path:
        """The entry file of a unit run under ``timeout``."""
        h = hashlib.sha256(self.base().encode())
        h.update(f"|{unit.resolve()}|{timeout!r}|{environment()!r}".encode())
        return self.folder / f"{h.hexdigest()}.json"

    def forget(self) -> None:
        """Drop the digests remembered so far (a run remembers them across its units)."""
        self._digests.clear()

    def lookup(self, unit: Path, timeout: float) -> list[dict[str, Any]] | None:
        """The unit's verdict rows when its entry is current; None otherwise."""
        try:
            entry = json.loads(self.slot(unit, timeout).read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not _well_formed(entry):
            return None
        if not own_files(unit) <= {path for path, _ in entry["deps"]}:
            return None  # an entry that does not name the unit's own files is not its own
        if any(self.digest(path) != digest for path, digest in entry["deps"]):
            return None
        if any(os.environ.get(name) != value for name, value in entry.get("env", [])):
            return None  # a variable the build read has changed
        return [{**r, "cached": True} for r in entry["claims"]]

    def hint(self, unit: Path, timeout: float) -> Hint | None:
        """What the unit's last entry, current or not, says of its run: the modules its
        worker imported and its seconds (None without an entry that says so)."""
        from .sealed import Hint
        try:
            entry = json.loads(self.slot(unit, timeout).read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict):
            return None
        imported, seconds = entry.get("imported"), entry.get("seconds")
        if not (isinstance(imported, list) and all(isinstance(m, str) for m in imported)
                and isinstance(seconds, (int, float)) and 0 <= seconds < 1e6):
            return None
        return Hint(tuple(imported), float(seconds))

    def store(self, unit: Path, timeout: float, rows: list[dict[str, Any]],
              files: Iterable[str], hint: Hint | None = None,
              env: Iterable[str] = ()) -> None:
        """Keep ``rows`` with the digests of ``files`` (what the build read), the values of
        the environment variables ``env`` it read, and the ``hint`` for its next run."""
        if not rows or any(r.get("verdict") in _UNCACHED for r in rows):
            return
        deps = []
        installation = _installation()
        for path in sorted(set(files) | own_files(unit)):
            if _inside(path, _PACKAGE):
                continue  # symroof itself is in the base key
            if not any(_inside(path, root) for root in installation):
                self._digests.pop(path, None)  # read afresh: the build may have changed it
            digest = self.digest(path)
            if digest is None:
                return  # a dependency that cannot be read: do not cache
            deps.append([path, digest])
        entry: dict[str, Any] = {"version": self.VERSION, "claims": rows, "deps": deps,
                                 "env": [[k, os.environ.get(k)] for k in sorted(set(env))]}
        if hint is not None:
            entry.update(imported=list(hint.imported), seconds=hint.seconds)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(entry, handle, ensure_ascii=False)
                os.replace(tmp, self.slot(unit, timeout))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a cache that cannot be written is only slower

    def digest(self, path: str) -> str | None:
        """``stat:SIZE:MTIME`` for files of the Python installation, ``sha256:HEX`` for the
        rest; None when the file cannot be read (a dependency that vanished)."""
        if path not in self._digests:
            self._digests[path] = _digest(path)
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


def _digest(path: str) -> str | None:
    try:
        if any(_inside(path, root) for root in _installation()):
            st = os.stat(path)
            return f"stat:{st.st_size}:{st.st_mtime_ns}"
        with open(path, "rb") as handle:
            return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
    except (OSError, ValueError):
        return None


def _well_formed(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("version") != VerdictCache.VERSION:
        return False
    claims, deps = entry.get("claims"), entry.get("deps")
    if not isinstance(claims, list) or not claims or not isinstance(deps, list):
        return False
    for dep in deps:
        if not (isinstance(dep, list) and len(dep) == 2
                and all(isinstance(x, str) for x in dep)):
            return False
    env = entry.get("env", [])
    if not isinstance(env, list) or not all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
            and (e[1] is None or isinstance(e[1], str)) for e in env):
        return False
    return all(_row_ok(r) for r in claims)


def _row_ok(row: Any) -> bool:
    if not isinstance(row, Mapping):
        return False
    from .runner import VERDICTS
    return (all(isinstance(row.get(k), t) for k, t in _ROW_KEYS.items())
            and row["verdict"] in VERDICTS and row["verdict"] not in _UNCACHED)
