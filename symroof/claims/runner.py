"""Run claims and give verdicts, each claim bounded by a time limit; sealed runs of whole
derivation units in worker processes.

>>> from symroof.claims.model import Derivation, Source
>>> d = Derivation.begin("t", "t", Source("book"))
>>> _ = d.claim("half", stated="0.5", statement="s", quote="q", derive=lambda: 1 / 2)
>>> [str(v.verdict) for v in verify([d.build()]).verdicts]
['OK']

Verdicts (:class:`symroof.claims.rules.Verdict`): OK, ROUNDING (truncation or rounding
only), APPROX (a marked approximation within 5%), SIMPLIFIED (what a named modelling choice
of the text gives, :mod:`symroof.claims.diagnosis`), DEFINITION, MEASURED (checked
arithmetic on numbers claims.py marks ``measured("22.0 ms")``), ERRATUM (a mismatch the
derivation marks as known), UNVERIFIABLE (a measurement, or an input chosen to fit),
INCONSISTENT (the text prints another value elsewhere), MISMATCH, STALE (an erratum mark
on a claim that holds), ERROR, TIMEOUT.
MISMATCH, STALE, ERROR and TIMEOUT fail a run.

``run_units`` is the sealed run of ``symroof verify``: each unit is imported, built and
judged in a forked worker (``symroof.claims.worker``) while this process only reads its
messages, so nothing a derivation does (exit, print, catch the time limit, loop forever,
kill itself) can make a run report success or reach the output. This module imports no
SymPy until a claim is judged, so a fully cached run never loads it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import tables as tb
from .rows import FAILING, VERDICTS, _derive, _origin, claim_row, finite

if TYPE_CHECKING:
    from .cache import VerdictCache
    from .model import Claim, Derivation
    from .rules import Judgement, Verdict



@dataclass(frozen=True)
class ClaimVerdict:
    """The outcome of one claim."""

    claim: Claim
    derivation: str
    verdict: Verdict
    derived: str
    derived_value: float | None
    rel_error: float | None
    detail: str
    seconds: float
    cached: bool = False
    diagnosis: dict[str, Any] | None = None  # the choice or slip that gives the stated value
    # the derived SymPy object, for write-ups (not in JSON; None when taken from the cache)
    value: Any = field(default=None, compare=False, repr=False)
    # NOT PROVEN: the points where stated and derived agreed, each ((size, value), ...)
    samples: tuple[tuple[tuple[str, str], ...], ...] = ()

    def to_json(self, timing: bool = True) -> dict[str, Any]:
        return {**claim_row(self.claim, self.derivation),
                "derived": self.derived,
                "derived_value": finite(self.derived_value),
                "verdict": str(self.verdict),
                "rel_error": finite(self.rel_error),
                "detail": self.detail,
                "diagnosis": self.diagnosis,
                "seconds": round(self.seconds, 4) if timing else None,
                "cached": self.cached if timing else None,
                "samples": [dict(p) for p in self.samples]}

    @staticmethod
    def from_row(claim: Claim, row: Mapping[str, Any]) -> ClaimVerdict:
        """A verdict from its JSON row (of a worker or the cache)."""
        from .rules import Verdict
        return ClaimVerdict(claim, row["derivation"], Verdict(row["verdict"]), row["derived"],
                       row["derived_value"], row["rel_error"], row["detail"],
                       row["seconds"] or 0.0, bool(row.get("cached")),
                       row.get("diagnosis"), samples=samples_of(row))


def samples_of(row: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], ...]:
    """A row's sample points, as a ClaimVerdict holds them (ill-formed ones dropped)."""
    got = row.get("samples")
    if not isinstance(got, list):
        return ()
    return tuple(tuple((str(k), str(v)) for k, v in p.items()) for p in got
                 if isinstance(p, dict))


@dataclass(frozen=True, repr=False)
class Verification(tb.RichView):
    """Every verdict of a run, in derivation and claim order."""

    derivations: tuple[Derivation, ...]
    verdicts: tuple[ClaimVerdict, ...]

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
        def derived(v: ClaimVerdict) -> tuple[tb.Part, ...]:
            if v.value is None or isinstance(v.value, str):
                return tb.cell(tb.text(v.derived))
            return tb.cell(tb.math(v.value))
        rows = tuple((tb.cell(tb.text(v.verdict)), tb.cell(tb.code(v.claim.id)),
                      tb.cell(tb.text(v.claim.stated)), derived(v)) for v in self.verdicts)
        counts = ", ".join(f"{n} {k}" for k, n in self.summary.items())
        table = tb.Table((tb.Column("verdict"), tb.Column("claim"), tb.Column("stated"),
                          tb.Column("derived")), rows)
        return f"{tb.counted(len(self.verdicts), 'claim')} in " \
            f"{tb.counted(len(self.derivations), 'derivation')}: {counts}", table


def judge(claim: Claim) -> Judgement:
    """Derive the claim's value and compare it with what the text states (the rules of
    :mod:`symroof.claims.rules`, then the approximate mark and the diagnosis of
    :mod:`symroof.claims.diagnosis`)."""
    from .diagnosis import judged
    from .rules import judge as compared
    if claim.kind == "measurement":
        return compared(claim)
    return judged(claim, _derive(claim), f"claim {claim.id!r}")


def run_claim(claim: Claim, derivation: str, timeout: float = 30) -> ClaimVerdict:
    """One claim, bounded by ``timeout`` seconds (on the main thread); errors become ERROR,
    never a crash. A claim that catches the time limit is stopped by ``run_units``."""
    from ..core.errors import SymroofError
    from ..core.timelimits import TimeLimit, time_limit
    from .diagnosis import judged
    from .rules import Judgement, Verdict, judge, mark
    start = time.perf_counter()
    derived: Any = None
    try:
        with time_limit(timeout):
            derived = _derive(claim)
            j = judge(claim) if claim.kind == "measurement" else \
                judged(claim, derived, f"claim {claim.id!r}")
    except TimeLimit:
        j = Judgement(Verdict.TIMEOUT, "", None, None, f"no result within {timeout:g} s")
    except SymroofError as exc:
        j = Judgement(Verdict.ERROR, "", None, None, str(exc))
    except SystemExit as exc:
        j = Judgement(Verdict.ERROR, "", None, None, f"{_origin(exc)}called sys.exit({exc.code!r})")
    except Exception as exc:  # a derivation's own bug: report it, go on with the run
        j = Judgement(Verdict.ERROR, "", None, None, f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    j = mark(claim, j)
    from .model import Law
    if j.verdict in (Verdict.ERROR, Verdict.TIMEOUT) or isinstance(derived, Law):
        derived = None  # a law's verdict says what it shows
    from ..core.choices import Tried
    if isinstance(derived, Tried):
        derived = derived.value
    value = derived.inequality if hasattr(derived, "inequality") else derived
    return ClaimVerdict(claim, derivation, j.verdict, j.derived, j.derived_value, j.rel_error,
                   j.detail, seconds, diagnosis=j.diagnosis, value=value, samples=j.samples)


def verify(derivations: Sequence[Derivation], timeout: float = 30,
           progress: Callable[[int, int, ClaimVerdict], None] | None = None) -> Verification:
    """Run every claim of derivations built in this process (no sealing, no cache)."""
    total = sum(len(d.claims) for d in derivations)
    verdicts: list[ClaimVerdict] = []
    for d in derivations:
        for claim in d.claims:
            verdicts.append(run_claim(claim, d.id, timeout))
            if progress:
                progress(len(verdicts), total, verdicts[-1])
    return Verification(tuple(derivations), tuple(verdicts))


def verification_of(derivations: Sequence[Derivation], rows: Iterable[Mapping[str, Any]],
                    ) -> Verification:
    """The verdicts of a sealed run, matched to derivations built in this process."""
    from ..core.errors import DerivationError
    by_key = {(r["derivation"], r["id"]): r for r in rows}
    verdicts = []
    for d in derivations:
        for c in d.claims:
            row = by_key.get((d.id, c.id))
            if row is None:
                raise DerivationError(f"claim {c.id!r} was not judged by the sealed run "
                                      "(its derivation builds differently each time)", d.id)
            verdicts.append(ClaimVerdict.from_row(c, row))
    return Verification(tuple(derivations), tuple(verdicts))


def summary_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Verdict counts, in the order of VERDICTS."""
    counts = dict.fromkeys(VERDICTS, 0)
    for r in rows:
        counts[r["verdict"]] += 1
    return {k: n for k, n in counts.items() if n}


MIN_TIMEOUT, MAX_TIMEOUT = 0.01, 1e6


def check_timeout(seconds: float, where: str = "timeout") -> float:
    """A usable time limit: finite, at least 10 ms (a timer that fires every microsecond
    starves the work it bounds) and at most 10**6 s (past that, no clock can hold it).

    >>> check_timeout(30)
    30
    """
    from ..core.errors import InputError
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"must be a positive number of seconds, got {seconds:g}", where)
    if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        raise InputError(f"must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds, "
                         f"got {seconds:g}", where)
    return seconds


@dataclass(frozen=True)
class Outcome:
    """Every verdict row of a sealed run, by unit (in the order given), then claim order."""

    rows: tuple[dict[str, Any], ...]
    derivations: int

    @property
    def failed(self) -> bool:
        return any(r["verdict"] in FAILING for r in self.rows)


def default_jobs() -> int:
    """Workers at once: one more than the cores. A unit's cost is known only from its
    last run, so a long unit can start last; with one worker more than the cores, the
    others share the cores with it instead of leaving one idle at the end.

    >>> default_jobs() >= 2
    True
    """
    return (os.cpu_count() or 1) + 1


def run_units(units: Sequence[Path], timeout: float = 30,
              cache: VerdictCache | None = None, jobs: int | None = None,
              progress: Callable[[int, dict[str, Any]], None] | None = None,
              extra_deps: Iterable[str] = ()) -> Outcome:
    """Judge every claim of ``units``, each unit in its own worker process (up to ``jobs``
    at once, by default :func:`default_jobs`); units whose cache entry is current are not
    built."""
    from .cache import default_cache_folder
    from .sandbox import Walls, abi
    from .sealed import Pool
    check_timeout(timeout)
    results: dict[int, list[dict[str, Any]]] = {}
    ids: dict[int, list[str]] = {}
    todo = []
    note = ("symroof: note: this system cannot wall the derivations off the cache "
            "(no Landlock): verifying without it")
    if cache is not None and abi() < 1:
        print(note, file=sys.stderr)
        cache = None
    walls: Walls | None = None  # built when a unit must run: a cached run forks nothing
    if cache is not None and not cache.open():
        cache = None  # a cache folder that cannot be used is only slower
    if cache is not None:
        cache.forget()
    from .judge import uncached
    kept = [cache is not None and not uncached(u) for u in units]
    try:
        for i, unit in enumerate(units):
            known = cache.lookup(unit, timeout) if cache is not None and kept[i] else None
            if known is not None:
                results[i] = known
                ids[i] = list(dict.fromkeys(r["derivation"] for r in known))
            else:
                todo.append(i)
        if todo:
            walls = Walls.build(cache.folder if cache is not None else default_cache_folder(),
                                {u if u.is_dir() else u.parent for u in units})
            if cache is not None and walls is None:  # the kernel refused the rule set
                print(note, file=sys.stderr)
                cache = None
            pool = Pool(timeout, jobs or default_jobs(), progress, walls)
            hints = [cache.hint(units[i], timeout) for i in todo] if cache is not None \
                else None
            for i, ran in pool.run([units[i] for i in todo], hints).items():
                results[todo[i]] = ran.rows
                ids[todo[i]] = ran.ids
                if cache is None or not kept[todo[i]]:
                    continue
                if ran.derived is None:  # failed, timed out, or stopped: nothing is kept
                    cache.discard(units[todo[i]], timeout)
                else:
                    cache.store(units[todo[i]], timeout, ran.derived,
                                [*ran.forked_with(), *extra_deps], ran.before, ran.hint)
    finally:
        if walls is not None:
            walls.close()
    rows = [r for i in range(len(units)) for r in results[i]]
    _check_ids(units, ids)
    failed = sum(1 for r in rows if r["kind"] == "unit")
    return Outcome(tuple(rows), sum(len(v) for v in ids.values()) + failed)


def _check_ids(units: Sequence[Path], ids: Mapping[int, list[str]]) -> None:
    from ..core.errors import InputError
    seen: dict[str, Path] = {}
    for i, unit in enumerate(units):
        for d in ids.get(i, []):
            if d in seen:
                raise InputError(f"derivation id {d!r} is also used by {seen[d]}", str(unit))
            seen[d] = unit


def load_derivations(paths: Iterable[str] = ()) -> list[Derivation]:
    """Build the derivations of ``paths`` in this process (see ``symroof.claims.loader``)."""
    from .loader import load_derivations as load
    return load(paths)
