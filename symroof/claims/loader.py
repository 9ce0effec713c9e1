"""Find and load derivation units: a ``.py`` file defining ``build() -> Derivation``, or a
folder holding ``claims.py`` (a chapter, built by ``symroof.claims.chapter.build_chapter``).

>>> [u.name for u in derivation_units(["rooflines"])]
['rooflines']

Files named ``_*.py`` are helpers, not units. Finding units imports nothing (no SymPy);
loading one runs its code in this process, which the sealed runner does in a worker.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InputError, SymroofError
from ..core.resources import bundled

if TYPE_CHECKING:
    from .model import Derivation


class UnitError(SymroofError):
    """A unit that ran but gave no derivation to check (it exited, or defines no build()):
    an ERROR verdict of the run (exit 1), not bad input."""


def derivation_units(paths: Iterable[str]) -> list[Path]:
    """The units named by ``paths``: files, chapter folders, folders of units, or the name of
    a bundled unit (``rooflines_ru``, ``rooflines-ru``). Default: every bundled unit."""
    units: list[Path] = []
    given = list(paths) or [str(bundled("derivations"))]
    for raw in given:
        if not raw:
            raise InputError("empty path", "PATH")
        path = Path(raw)
        if path.is_file() and path.suffix == ".toml" and is_chapter(path.parent):
            units.append(path)  # one translation table of a chapter
            continue
        if path.is_dir():
            if is_chapter(path):
                units.append(path)
                continue
            found = sorted([p for p in path.glob("*.py") if not p.name.startswith("_")]
                           + [p for p in path.iterdir() if is_chapter(p)])
            if not found:
                raise InputError("no derivation units (*.py, or folders with claims.py) "
                                 "in this folder", raw)
            units += found
        elif path.is_file():
            if path.suffix != ".py":
                raise InputError("a derivation file must be a Python module (.py)", raw)
            units.append(path)
        elif path.exists():
            raise InputError("not a regular file or folder", raw)
        else:
            units.append(_bundled_unit(raw))
    return units


def is_chapter(path: Path) -> bool:
    """A folder holding ``claims.py`` is one unit (claims v2)."""
    return path.is_dir() and (path / "claims.py").is_file()


def _bundled_unit(name: str) -> Path:
    import tomllib
    plain = name.replace("-", "_")
    if not plain.isidentifier():
        raise InputError("no such file or folder", name)
    folder = bundled("derivations")
    for candidate in (folder / name, folder / f"{plain}.py", folder / plain):
        if candidate.is_file() or is_chapter(candidate):
            return candidate
    for table in sorted(folder.glob("*/*.toml")):  # a translation by its derivation id
        try:
            meta = tomllib.loads(table.read_text("utf-8")).get("chapter", {})
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if isinstance(meta, dict) and meta.get("id") == name and is_chapter(table.parent):
            return table
    raise InputError("no such file or folder (nor a bundled derivation of that name)", name)


def load_derivations(paths: Iterable[str] = ()) -> list[Derivation]:
    """Import every unit named by ``paths`` in this process and build its derivations."""
    out: list[Derivation] = []
    seen: dict[str, Path] = {}
    for unit in derivation_units(paths):
        for d in load_unit(unit):
            if d.id in seen:
                raise InputError(f"derivation id {d.id!r} is also used by {seen[d.id]}",
                                 str(unit))
            seen[d.id] = unit
            out.append(d)
    return out


def load_unit(unit: Path) -> list[Derivation]:
    """The derivations of one unit. Errors name the file and line: InputError for a unit that
    raises or is malformed, UnitError for one that exits or defines no derivation."""
    if unit.is_dir():
        return _load_chapter(unit)
    if unit.suffix == ".toml":  # one table: its chapter is built whole (for consistency)
        return [d for d in _load_chapter(unit.parent)
                if Path(d.origin).resolve() == unit.resolve()]
    return [_load_file(unit)]


def _load_chapter(folder: Path) -> list[Derivation]:
    try:
        chapter = importlib.import_module("symroof.claims.chapter")
    except ImportError:
        raise InputError("a chapter folder (claims.py) needs symroof.claims.chapter, which "
                         "this version does not have", str(folder)) from None
    from .model import Derivation
    built = _guarded(folder / "claims.py", lambda: chapter.build_chapter(folder))
    if not isinstance(built, list) or not built:
        raise UnitError("the chapter defines no derivation", str(folder))
    for d in built:
        if not isinstance(d, Derivation):
            raise InputError(f"build_chapter gave {type(d).__name__}, not a Derivation",
                             str(folder))
    return [d if d.origin else replace(d, origin=str(folder)) for d in built]


def _load_file(file: Path) -> Derivation:
    from .model import Derivation
    where = str(file)
    name = f"symroof_derivation_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InputError("cannot load as a Python module", where)
    module = importlib.util.module_from_spec(spec)
    folder = str(file.resolve().parent)
    loader = spec.loader

    def run() -> object:
        loader.exec_module(module)
        build = getattr(module, "build", None)
        if not callable(build):
            raise UnitError("defines no build() function", where)
        return build()
    try:
        sys.modules[name] = module
        sys.path.insert(0, folder)  # shared helpers beside the module (``_chapter1.py``)
        result = _guarded(file, run)
    finally:
        sys.modules.pop(name, None)
        if folder in sys.path:
            sys.path.remove(folder)
    if result is None:
        raise UnitError("build() returned None, not a Derivation", where)
    if not isinstance(result, Derivation):
        raise InputError(f"build() returned {type(result).__name__}, not a Derivation", where)
    return replace(result, origin=str(file))


def _guarded(file: Path, run: object) -> object:
    """Call ``run()``; every way it can fail becomes a one-line error naming ``file``."""
    assert callable(run)
    try:
        return run()
    except UnitError:
        raise
    except SymroofError as exc:
        if _in_table(exc.where, file):  # the table is at fault, not claims.py
            raise InputError(exc.message, exc.where) from None
        raise InputError(exc.message, located(file, exc.where)) from None
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", f"{exc.filename or file}:{exc.lineno}",
                         ) from None
    except SystemExit as exc:
        raise UnitError(f"called sys.exit({exc.code!r}) while loading",
                        located(file, None, exc)) from None
    except KeyboardInterrupt:
        raise  # an interruption, not bad input: the run ends with it (exit 130)
    except MemoryError:  # a failure of the run (exit 1), not bad input
        raise UnitError("the derivation ran out of memory (MemoryError)",
                        located(file, None, sys.exc_info()[1])) from None
    except (Exception, GeneratorExit) as exc:
        raise InputError(f"the derivation raised {type(exc).__name__}: {exc}",
                         located(file, None, exc)) from None


def _in_table(where: str | None, file: Path) -> bool:
    """Whether an error's place names a table of the unit's folder (``ch/en.toml: a``)."""
    head = (where or "").split(": ", 1)[0]
    return head.endswith(".toml") and Path(head).resolve().parent == file.resolve().parent


def located(file: Path, inner: str | None, exc: BaseException | None = None) -> str:
    """``file:line`` of the deepest frame of ``exc`` in the unit (the file itself, else a
    helper beside it), followed by ``inner``."""
    line = None
    tb = exc.__traceback__ if exc else sys.exc_info()[2]
    home = file.resolve()
    folder = home.parent
    helper = None
    for frame in traceback.extract_tb(tb):
        here = Path(frame.filename).resolve()
        if here == home:
            line = frame.lineno
        elif here.parent == folder:
            helper = f"{frame.filename}:{frame.lineno}"
    place = f"{file}:{line}" if line else (helper or str(file))
    return f"{place}: {inner}" if inner else place
