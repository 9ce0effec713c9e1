"""Run claims and give verdicts: load derivation files, time each claim, bound it.

>>> from symroof.claims.model import Derivation, Source
>>> d = Derivation.begin("t", "t", Source("book"))
>>> _ = d.claim("half", stated="0.5", statement="s", quote="q", derive=lambda: 1 / 2)
>>> [str(v.verdict) for v in verify([d.build()]).verdicts]
['OK']

Verdicts (:class:`symroof.claims.rules.Verdict`): OK, ROUNDING (truncation or rounding
only), DEFINITION, ERRATUM (a mismatch the derivation marks as known), UNVERIFIABLE (a
measurement, or an input chosen to fit), INCONSISTENT (the text prints another value
elsewhere), MISMATCH, STALE (an erratum mark on a claim that holds), ERROR, TIMEOUT.
MISMATCH, INCONSISTENT, STALE, ERROR and TIMEOUT fail a run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core import tables as tb
from ..core.errors import InputError, SymroofError
from ..core.resources import bundled
from ..core.timelimits import TimeLimit, time_limit
from .model import Claim, Derivation, Law
from .rules import FAILING, RULES, Judgement, judge, mark
from .rules import Verdict as V

VERDICTS = tuple(V)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim."""

    claim: Claim
    derivation: str
    verdict: V
    derived: str
    derived_value: float | None
    rel_error: float | None
    detail: str
    seconds: float
    cached: bool = False
    # the derived SymPy object, for write-ups (not in JSON; None when taken from the cache)
    value: Any = field(default=None, compare=False, repr=False)

    def to_json(self, timing: bool = True) -> dict[str, Any]:
        c = self.claim
        return {
            "id": c.id,
            "derivation": self.derivation,
            "source": {"book": c.source.book, "chapter": c.source.chapter,
                       "section": c.source.section, "seed": c.source.seed,
                       "language": c.source.language},
            "statement": c.statement,
            "quote": c.quote,
            "kind": c.kind,
            "stated": c.stated,
            "derived": self.derived,
            "derived_value": self.derived_value,
            "verdict": str(self.verdict),
            "rel_error": self.rel_error,
            "assumptions": list(c.assumptions) + ([c.assumed] if c.assumed else []),
            "conflicts": [k.to_json() for k in c.conflicts],
            "detail": self.detail,
            "erratum": None if c.erratum is None else {"why": c.erratum.why,
                                                       "right": c.erratum.right},
            "seconds": round(self.seconds, 4) if timing else None,
            "cached": self.cached if timing else None,
        }


@dataclass(frozen=True, repr=False)
class Verification(tb.RichView):
    """Every verdict of a run, in derivation and claim order."""

    derivations: tuple[Derivation, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def summary(self) -> dict[str, int]:
        return summary_of({"verdict": v.verdict} for v in self.verdicts)

    @property
    def failed(self) -> bool:
        return any(v.verdict in FAILING for v in self.verdicts)

    def to_json(self, timing: bool = True) -> dict[str, Any]:
        return {"claims": [v.to_json(timing) for v in self.verdicts], "summary": self.summary}

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.summary.items())
        return f"<Verification: {len(self.verdicts)} claims: {counts}>"

    def _view(self) -> tuple[str, tb.Table]:
        def derived(v: Verdict) -> tuple[tb.Part, ...]:
            if v.value is None or isinstance(v.value, str):
                return tb.cell(tb.text(v.derived))
            return tb.cell(tb.math(v.value))
        rows = tuple((tb.cell(tb.text(v.verdict)), tb.cell(tb.code(v.claim.id)),
                      tb.cell(tb.text(v.claim.stated)), derived(v)) for v in self.verdicts)
        counts = ", ".join(f"{n} {k}" for k, n in self.summary.items())
        table = tb.Table((tb.Column("verdict"), tb.Column("claim"), tb.Column("stated"),
                          tb.Column("derived")), rows)
        return f"{len(self.verdicts)} claims in {len(self.derivations)} derivations: " \
            f"{counts}", table


def _derive(claim: Claim) -> Any:
    """The claim's derived value (None for a measurement), as ``judge`` takes it."""
    if claim.kind == "measurement":
        return None
    return claim.derive() if claim.derive is not None else claim.value


def run_claim(claim: Claim, derivation: str, timeout: float = 30) -> Verdict:
    """One claim, bounded by ``timeout`` seconds; errors become ERROR, never a crash."""
    start = time.perf_counter()
    derived: Any = None
    try:
        with time_limit(timeout):
            derived = _derive(claim)
            j = judge(claim) if claim.kind == "measurement" else \
                RULES[claim.kind](claim, derived, f"claim {claim.id!r}")
    except TimeLimit:
        j = Judgement(V.TIMEOUT, "", None, None, f"no result within {timeout:g} s")
    except SymroofError as exc:
        j = Judgement(V.ERROR, "", None, None, str(exc))
    except Exception as exc:  # a derivation's own bug: report it, go on with the run
        j = Judgement(V.ERROR, "", None, None, f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    j = mark(claim, j)
    if j.verdict in (V.ERROR, V.TIMEOUT) or isinstance(derived, Law):
        derived = None  # a law's verdict says what it shows
    value = derived.inequality if hasattr(derived, "inequality") else derived
    return Verdict(claim, derivation, j.verdict, j.derived, j.derived_value, j.rel_error,
                   j.detail, seconds, value=value)


def verify(derivations: Sequence[Derivation], timeout: float = 30,
           progress: Callable[[int, int, Verdict], None] | None = None,
           cache: VerdictCache | None = None) -> Verification:
    """Run every claim of every derivation (or take its verdicts from ``cache`` when the
    derivation's file, its helpers, symroof and SymPy are all unchanged)."""
    total = sum(len(d.claims) for d in derivations)
    verdicts: list[Verdict] = []
    for d in derivations:
        key = cache.key(d, timeout) if cache is not None else None
        known = cache.get(key, d) if cache is not None and key else None
        if known is not None:
            for v in known:
                verdicts.append(v)
                if progress:
                    progress(len(verdicts), total, v)
            continue
        fresh = []
        for claim in d.claims:
            v = run_claim(claim, d.id, timeout)
            fresh.append(v)
            verdicts.append(v)
            if progress:
                progress(len(verdicts), total, v)
        if cache is not None and key:
            cache.put(key, fresh)
    return Verification(tuple(derivations), tuple(verdicts))


class VerdictCache:
    """Verdicts of whole derivation files, keyed by a hash of everything they depend on:
    the file, the helper modules beside it, symroof's own code and data, and the versions
    of SymPy, NumPy and Python. A hit skips the claims' SymPy work; any change misses.

    Stored as JSON (never pickle), written atomically; ERROR and TIMEOUT are not kept.
    """

    VERSION = 1

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_cache_folder()
        self._base: str | None = None

    def key(self, d: Derivation, timeout: float) -> str | None:
        return self.key_for(Path(d.origin), timeout) if d.origin else None

    def key_for(self, file: Path, timeout: float) -> str | None:
        """The key of a derivation file's verdicts; None when it cannot be read."""
        try:
            h = hashlib.sha256(self.base().encode())
            h.update(f"{timeout!r}|".encode())
            h.update(file.read_bytes())
            if file.suffix == ".toml":  # a chapter table: claims.py and every table count
                for other in sorted([*file.parent.glob("*.toml"), file.parent / "claims.py"]):
                    h.update(other.name.encode() + other.read_bytes())
            for helper in sorted(file.parent.glob("_*.py")):
                h.update(helper.name.encode() + helper.read_bytes())
        except OSError:
            return None
        return h.hexdigest()

    def base(self) -> str:
        if self._base is None:
            import numpy
            import sympy
            h = hashlib.sha256(f"{self.VERSION}|{sympy.__version__}|{numpy.__version__}|"
                               f"{sys.version}".encode())
            package = Path(__file__).resolve().parent
            for path in sorted(package.rglob("*")):
                if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                    h.update(str(path.relative_to(package)).encode() + path.read_bytes())
            self._base = h.hexdigest()
        return self._base

    def rows(self, key: str | None) -> dict[str, Any] | None:
        """The stored entry: ``{"derivation": id, "claims": [verdict JSON, ...]}``."""
        if key is None:
            return None
        try:
            entry = json.loads((self.folder / f"{key}.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(entry, dict) and isinstance(entry.get("claims"), list)
        return entry if ok else None

    def get(self, key: str | None, d: Derivation) -> list[Verdict] | None:
        entry = self.rows(key)
        if entry is None or entry.get("derivation") != d.id:
            return None
        rows = entry["claims"]
        if [r.get("id") for r in rows] != [c.id for c in d.claims]:
            return None
        return [Verdict(c, d.id, V(r["verdict"]), r["derived"], r["derived_value"],
                        r["rel_error"], r["detail"], r["seconds"], cached=True)
                for c, r in zip(d.claims, rows, strict=True)]

    def put(self, key: str, verdicts: list[Verdict]) -> None:
        if not verdicts or any(v.verdict in (V.ERROR, V.TIMEOUT) for v in verdicts):
            return
        entry = {"derivation": verdicts[0].derivation,
                 "claims": [v.to_json(timing=True) for v in verdicts]}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(tmp, self.folder / f"{key}.json")
        except OSError:
            pass  # a cache that cannot be written is only slower


def cached_rows(paths: Iterable[str], cache: VerdictCache, timeout: float,
                ) -> tuple[int, list[dict[str, Any]]] | None:
    """Every verdict of the derivation files from the cache, without building them; None
    unless every file hits. Returns (derivation count, verdict JSON rows)."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    files = derivation_files(paths)
    for file in files:
        entry = cache.rows(cache.key_for(file, timeout))
        if entry is None or entry["derivation"] in seen:
            return None
        seen.add(entry["derivation"])
        rows += [{**r, "cached": True} for r in entry["claims"]]
    return len(files), rows


def summary_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Verdict counts, in the order of VERDICTS."""
    counts = {v: 0 for v in VERDICTS}
    for r in rows:
        counts[r["verdict"]] += 1
    return {k: n for k, n in counts.items() if n}


def default_cache_folder() -> Path:
    """``$SYMROOF_CACHE_DIR``, else ``$XDG_CACHE_HOME/symroof``, else ``~/.cache/symroof``."""
    if os.environ.get("SYMROOF_CACHE_DIR"):
        return Path(os.environ["SYMROOF_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "symroof"


def derivation_files(paths: Iterable[str]) -> list[Path]:
    """The derivation units named by ``paths``: modules (``*.py``) and the translation
    tables (``*.toml``) of chapter folders (folders with a ``claims.py``), given as files
    or found in folders."""
    files: list[Path] = []
    given = list(paths) or [str(bundled("derivations"))]
    for raw in given:
        path = Path(raw)
        if path.is_dir():
            if (path / "claims.py").is_file():
                files += sorted(path.glob("*.toml"))
                continue
            found = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
            for sub in sorted(p for p in path.iterdir() if (p / "claims.py").is_file()):
                found += sorted(sub.glob("*.toml"))
            if not found:
                raise InputError("no derivation modules (*.py) in this folder", raw)
            files += found
        elif path.is_file():
            if path.suffix == ".toml" and (path.parent / "claims.py").is_file():
                files.append(path)
                continue
            if path.suffix != ".py":
                raise InputError("a derivation file must be a Python module (.py)", raw)
            files.append(path)
        else:
            named = bundled_named(raw)
            if named is None:
                bare = not any(c in raw for c in "/\\.")
                raise InputError("no such file or folder" + (
                    " (nor a bundled derivation of that name)" if bare else ""), raw)
            files += named
    return files


def bundled_named(name: str) -> list[Path] | None:
    """The units of a bundled derivation given by name: a chapter folder (``rooflines``),
    one translation (``rooflines-zh``, its derivation id) or a module's stem."""
    import tomllib
    folder = bundled("derivations")
    if "/" in name or "\\" in name or not name:
        return None
    if (folder / name / "claims.py").is_file():
        return sorted((folder / name).glob("*.toml"))
    if (folder / f"{name}.py").is_file():
        return [folder / f"{name}.py"]
    for table in sorted(folder.glob("*/*.toml")):
        try:
            meta = tomllib.loads(table.read_text("utf-8")).get("chapter", {})
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if meta.get("id") == name:
            return [table]
    return None


def load_derivations(paths: Iterable[str] = ()) -> list[Derivation]:
    """Import each derivation module and call its ``build()``; build each chapter folder
    (``symroof.claims.chapter.build_chapter``) once for the tables named."""
    out: list[Derivation] = []
    seen: dict[str, Path] = {}
    chapters: dict[Path, list[Derivation]] = {}
    for file in derivation_files(paths):
        if file.suffix == ".toml":
            folder = file.parent
            if folder not in chapters:
                chapters[folder] = load_chapter(folder)
            d = next(x for x in chapters[folder] if Path(x.origin) == file)
        else:
            d = load_file(file)
        if d.id in seen:
            raise InputError(f"derivation id {d.id!r} is also used by {seen[d.id]}", str(file))
        seen[d.id] = file
        out.append(d)
    return out


def load_chapter(folder: Path) -> list[Derivation]:
    """Every translation of a chapter folder; errors name the file."""
    from .chapter import build_chapter
    file = folder / "claims.py"
    try:
        return build_chapter(folder)
    except SymroofError:
        raise
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", f"{exc.filename}:{exc.lineno}") from None
    except Exception as exc:
        raise InputError(f"the derivation raised {type(exc).__name__}: {exc}",
                         _located(file, None, exc)) from None


def load_file(file: Path) -> Derivation:
    where = str(file)
    name = f"symroof_derivation_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InputError("cannot load as a Python module", where)
    module = importlib.util.module_from_spec(spec)
    folder = str(file.resolve().parent)
    try:
        sys.modules[name] = module
        sys.path.insert(0, folder)  # shared helpers beside the module (``_chapter1.py``)
        spec.loader.exec_module(module)
        build = getattr(module, "build", None)
        if not callable(build):
            raise InputError("defines no build() function", where)
        result = build()
    except SymroofError as exc:
        raise InputError(exc.message, _located(file, exc.where)) from None
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", f"{where}:{exc.lineno}") from None
    except Exception as exc:
        raise InputError(f"the derivation raised {type(exc).__name__}: {exc}",
                         _located(file, None, exc)) from None
    finally:
        sys.modules.pop(name, None)
        if folder in sys.path:
            sys.path.remove(folder)
    if not isinstance(result, Derivation):
        raise InputError(f"build() returned {type(result).__name__}, not a Derivation", where)
    return replace(result, origin=str(file))


def _located(file: Path, inner: str | None, exc: BaseException | None = None) -> str:
    line = None
    tb = exc.__traceback__ if exc else sys.exc_info()[2]
    for frame in traceback.extract_tb(tb):
        if Path(frame.filename).resolve() == file.resolve():
            line = frame.lineno
    place = f"{file}:{line}" if line else str(file)
    return f"{place}: {inner}" if inner else place
