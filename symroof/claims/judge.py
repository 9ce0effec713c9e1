"""The judge of a sealed run, in the parent: a worker only derives; what it sends is read
here, checked against the chapter's own tables, and judged by this process's rules.

>>> import sympy as sp
>>> from symroof.claims.model import Claim, Source
>>> c = Claim("half", Source("b"), "s", "q", "0.5", value=sp.Rational(1, 2))
>>> sent = derived_message(c, 30)
>>> judged(claim_row(c, "d"), facts_of(c), sent, 30)["verdict"]
'OK'

A worker sends, per claim, the verdict row without a verdict (``claim_row``), the facts a
judgement needs that the row does not hold (:func:`facts_of`), and then the derived value
as exact text (:func:`derived_message`, :mod:`symroof.claims.serial`). :func:`judged`
builds the claim again from these, reads the value with the whitelist reader and applies
``RULES`` and ``MARKS`` of this process, bounded by the time limit. For a chapter the
parent reads the translation tables itself (:func:`table_facts`) and takes the stated
value, quote, tolerance, erratum and evidence from them, not from the worker; a claim the
worker reports that its table does not state is an error of the unit.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, SymroofError
from ..core.timelimits import TimeLimit, time_limit
from .restated import restated_folder
from .rows import _derive, _origin, claim_row, finite

if TYPE_CHECKING:
    from .model import Claim

__all__ = ["against_tables", "claim_row", "derived_message", "facts_of", "judged", "uncached"]


def facts_of(c: Claim) -> dict[str, Any]:
    """What a judgement needs of a claim besides its row (the worker's side)."""
    return {"tolerance": str(c.tolerance), "meaning": c.meaning, "assumed": c.assumed,
            "evidence": c.evidence, "assumptions": list(c.assumptions),
            "within": None if c.within is None else [str(x) for x in c.within],
            "restates": c.restates,
            "dimension": None if c.dimension is None else list(c.dimension),
            "rounded": [list(r) for r in c.rounded], "measured": list(c.measured),
            "follows": [list(f) for f in c.follows]}


def derived_message(c: Claim, timeout: float) -> dict[str, Any]:
    """The worker's side: derive the claim's value within ``timeout`` and send it as text
    (or the error or time-out that stopped it)."""
    from .serial import dump
    start = time.perf_counter()
    try:
        with time_limit(timeout):
            value = _derive(c)
            sent = None if c.kind == "measurement" else dump(value)
        out: dict[str, Any] = {"value": sent}
    except TimeLimit:
        out = {"failed": "TIMEOUT", "detail": f"no result within {timeout:g} s"}
    except SymroofError as exc:
        out = {"failed": "ERROR", "detail": str(exc)}
    except SystemExit as exc:
        out = {"failed": "ERROR", "detail": f"{_origin(exc)}called sys.exit({exc.code!r})"}
    except Exception as exc:  # a derivation's own bug: report it, go on with the run
        out = {"failed": "ERROR", "detail": f"{type(exc).__name__}: {exc}"}
    out["seconds"] = time.perf_counter() - start
    return out


def judged(row: dict[str, Any], facts: dict[str, Any], message: dict[str, Any],
           timeout: float) -> dict[str, Any]:
    """The verdict row of one claim, judged here from what its worker sent."""
    from .diagnosis import judged as compared
    from .rules import Judgement, judge, mark
    from .rules import Verdict as V
    from .serial import load
    seconds = message.get("seconds")
    seconds = float(seconds) if isinstance(seconds, int | float) and 0 <= seconds < 1e7 \
        else 0.0
    start = time.perf_counter()
    failed = message.get("failed")
    if failed is not None:
        verdict = "TIMEOUT" if failed == "TIMEOUT" else "ERROR"
        return {**row, "verdict": verdict, "detail": str(message.get("detail", ""))[:2000],
                "seconds": seconds}
    try:
        with time_limit(timeout):
            value = None if row["kind"] == "measurement" else load(message.get("value"))
            claim = _claim(row, facts, value)
            j = judge(claim) if claim.kind == "measurement" else \
                compared(claim, value, f"claim {claim.id!r}")
            j = mark(claim, j)
    except TimeLimit:
        j = Judgement(V.TIMEOUT, "", None, None, f"no judgement within {timeout:g} s")
    except SymroofError as exc:
        j = Judgement(V.ERROR, "", None, None, str(exc))
    except Exception as exc:  # a value SymPy cannot compare: an ERROR, never a pass
        j = Judgement(V.ERROR, "", None, None, f"{type(exc).__name__}: {exc}")
    return {**row, "derived": j.derived, "derived_value": finite(j.derived_value),
            "verdict": str(j.verdict), "rel_error": finite(j.rel_error), "detail": j.detail,
            "diagnosis": j.diagnosis,
            "seconds": seconds + time.perf_counter() - start,
            "samples": [dict(p) for p in j.samples]}


def _claim(row: dict[str, Any], facts: dict[str, Any], value: Any) -> Claim:
    from ..core.choices import Tried
    from ..core.parse import exact_number
    from .chapter import kind_of
    from .model import Claim, Conflict, Erratum, Source, tolerance_of
    src = Source(**{k: str(row["source"].get(k, "")) for k in
                    ("book", "chapter", "section", "seed", "language")})
    kind = str(row["kind"])
    if facts.get("table") and kind not in ("measurement", "definition"):
        kind = kind_of(str(row["stated"]),
                       value.value if isinstance(value, Tried) else value, src.language)
    within = facts.get("within")
    erratum = row.get("erratum")
    conflicts = tuple(Conflict(str(k["figure"]), tuple((str(v["value"]), tuple(v["claims"]))
                                                        for v in k["values"]),
                               str(k.get("text") or ""), str(k.get("known") or ""),
                               str(k.get("defined_by") or ""), str(k.get("defining") or ""),
                               tuple(str(i) for i in k.get("agreeing") or ()))
                      for k in row.get("conflicts", []))
    return Claim(
        str(row["id"]), src, str(row["statement"]), str(row["quote"]), str(row["stated"]),
        None, kind,
        within=None if within is None else (exact_number(within[0]), exact_number(within[1])),
        meaning=str(facts.get("meaning", "")),
        erratum=None if not erratum else Erratum(str(erratum["why"]),
                                                 str(erratum.get("right", ""))),
        tolerance=tolerance_of(facts.get("tolerance", "1/50"), f"claim {row['id']!r}"),
        evidence=str(facts.get("evidence", "")),
        value=value,
        assumed=str(facts.get("assumed", "")),
        assumptions=tuple(str(a) for a in facts.get("assumptions", [])),
        conflicts=conflicts, restates=str(facts.get("restates", "")),
        dimension=_dimension(facts.get("dimension")),
        measured=tuple(str(m) for m in facts.get("measured") or ()),
        rounded=tuple((str(r[0]), str(r[1]), str(r[2])) for r in facts.get("rounded") or []
                      if isinstance(r, list) and len(r) == 3),
        follows=tuple((str(f[0]), str(f[1]), str(f[2]), str(f[3]))
                      for f in facts.get("follows") or [] if isinstance(f, list) and len(f) == 4))


def _dimension(sent: Any) -> tuple[int, int, int] | None:
    """A dimension the worker sent: three small integers, else none (never trusted
    beyond its shape)."""
    if isinstance(sent, list) and len(sent) == 3 and \
            all(isinstance(x, int) and not isinstance(x, bool) and -4 <= x <= 4 for x in sent):
        return (sent[0], sent[1], sent[2])
    return None


def table_facts(unit: Path) -> dict[tuple[str, str], dict[str, Any]] | None:
    """What the tables of a chapter unit state, by (derivation id, claim id), read here
    (TOML only, no code); None for a unit that is a Python module."""
    from .chapter import _is_translation, rows_of
    from .tablefile import read_table
    if unit.is_dir():  # a chip catalogue beside claims.py is data, not a table
        tables = sorted(p for p in unit.glob("*.toml") if _is_translation(p))
    elif unit.suffix == ".toml":
        tables = [unit]
    else:
        return None
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for file in tables:
        table = read_table(file)
        meta = table.get("chapter")
        if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
            raise InputError("needs a [chapter] table (id, title, book, language, ...)",
                             str(file))
        prefix = str(meta.get("prefix", ""))
        for key, (_, row) in rows_of(table, file).items():
            out[(meta["id"], prefix + key)] = {**row, "__key__": key}
    return out


def apply_table(row: dict[str, Any], facts: dict[str, Any], stated: dict[str, Any],
                where: str) -> None:
    """Take what the table states over what the worker reported (in place)."""
    from .model import declared, tolerance_of
    from .stated import TOLERANCE
    said = str(stated["stated"])
    if "unit" in stated:  # the unit of a number the text prints bare
        language = str(row.get("source", {}).get("language", "en"))
        said = declared(said, stated["unit"], language, f"{where}: unit")
    row.update(stated=said, quote=str(stated["quote"]),
               statement=str(stated.get("statement", "")))
    facts["table"] = True
    if "erratum" in stated:
        row["erratum"] = {"why": str(stated["erratum"]), "right": str(stated.get("right", ""))}
    else:
        row["erratum"] = None
    facts["tolerance"] = str(tolerance_of(stated["tolerance"], f"{where}: tolerance")
                             if "tolerance" in stated else TOLERANCE)
    if "evidence" in stated:
        facts["evidence"] = str(stated["evidence"])


def uncached(unit: Path) -> bool:
    """Whether a chapter's tables say ``cache = false`` under ``[chapter]`` (a unit whose
    verdicts rest on what the cache cannot follow); a table that cannot be read is built
    afresh too (its worker says what is wrong)."""
    from .tablefile import read_table
    tables = sorted(unit.glob("*.toml")) if unit.is_dir() else \
        [unit] if unit.suffix == ".toml" else []
    try:
        return any(_meta(read_table(t)).get("cache", True) is not True for t in tables)
    except InputError:
        return True


def _meta(table: dict[str, Any]) -> dict[str, Any]:
    meta = table.get("chapter")
    return meta if isinstance(meta, dict) else {}


def against_tables(unit: Path, rows: list[dict[str, Any]],
                   facts: list[dict[str, Any]]) -> str:
    """For a chapter unit, take what its tables state over what the worker reported (in
    place); the error of a unit whose claims are not those of its tables, else ''."""
    tables = table_facts(unit)
    if tables is None:
        return ""
    reported = {(r["derivation"], r["id"]) for r in rows}
    unknown = sorted({f"{d}: {c}" for d, c in reported ^ set(tables)})
    if unknown:
        return (f"{unit}: the claims built are not those its tables state: "
                f"{', '.join(unknown[:3])}")
    plain = restated_folder(unit if unit.is_dir() else unit.parent)
    for row, fact in zip(rows, facts, strict=True):
        stated = tables[(row["derivation"], row["id"])]
        apply_table(row, fact, stated, f"{unit}: {row['id']}")
        why = plain.get(stated["__key__"])
        if why and row["kind"] not in ("measurement", "definition") and not fact["assumed"]:
            row["kind"] = "definition"
            fact["restates"] = f"no engine computation: {why}"
    return ""

