"""What a write-up page shows, as strings ready for a template: tables from the one table
writer, math from the one printer, user text escaped for the output.

>>> from symroof.claims.runner import load_derivations, verify
>>> from tests.conftest import ROOT
>>> result = verify(load_derivations([str(ROOT / "tests" / "data" / "small.py")]))
>>> words = strings()["en"]
>>> page = derivation_page(result.derivations[0], list(result.verdicts), words, "md")
>>> page["claims_table"].splitlines()[0]
'| # | Claim | Stated | Derived | Verdict |'

Nothing here derives: every value shown is a verdict's derived object or a step's output.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import sympy as sp

from ..claims.model import Claim, Derivation
from ..claims.runner import VERDICTS, ClaimVerdict, Verification
from ..claims.stated import UNIT_WORDS, Stated, read
from ..core.choices import Tried
from ..core.errors import SymroofError
from ..core.escape import escape, html_escape
from ..core.parse import parse_expr, parse_relation
from ..core.printer import Shown, latex_value, shown
from ..core.resources import bundled
from ..core.tables import BR, Column, Part, Table, cell, code, link, math, small, text
from .quotes import quote_markup

INLINE = 48  # characters a step's math may show inline; longer ones get a line of their own


@lru_cache(maxsize=1)
def strings() -> dict[str, dict[str, Any]]:
    """The words of the write-ups per language (``templates/strings.toml``)."""
    with open(bundled("templates") / "strings.toml", "rb") as handle:
        return tomllib.load(handle)


def stated_part(c: Claim) -> Part:
    """The stated value: formulas and relations as math, numbers and words as printed."""
    try:
        if c.kind == "expr":
            return math(parse_expr(c.stated))
        if c.kind == "relation":
            return math(_oriented(parse_relation(c.stated)))
    except SymroofError:
        pass
    return text(c.stated)


def _oriented(rel: sp.Basic) -> sp.Basic:
    """A relation with its symbol side first (``B > 240``, not ``240 < B``)."""
    if isinstance(rel, sp.Rel) and rel.lhs.is_number and not rel.rhs.is_number:
        return rel.reversed
    return rel


def derived_parts(v: ClaimVerdict, words: Mapping[str, Any]) -> tuple[Part, ...]:
    """The derived value through the readable-form rule, in the stated value's unit; a
    decimal that stands in for a long exact form says where the exact one is."""
    if v.value is None:
        return cell(text(v.derived)) if v.derived else ()
    if isinstance(v.value, str):
        return cell(text(v.value))
    unit = _stated_unit(v.claim)
    raw = v.value.value if isinstance(v.value, Tried) else v.value  # its exact model's value
    try:
        value = sp.sympify(raw)
        s = shown(_oriented(value / unit.scale if unit else value))
    except (sp.SympifyError, TypeError):
        return cell(text(v.derived))
    s = one_digit_more(s, value, _stated_number(v.claim))
    after = (text(f" {UNIT_WORDS.get(unit.unit, unit.unit)}"),) if unit else ()
    return cell(math(s), *after) if s.exact else \
        cell(math(s), *after, BR, small(words["exact_in_json"]))


def _stated_number(c: Claim) -> Stated | None:
    if c.kind not in ("number", "definition"):
        return None
    return read(c.stated, c.source.language)


def one_digit_more(s: Shown, value: Any, p: Stated | None) -> Shown:
    """The decimal of a derived number with one digit more than its stated number prints,
    where the readable form shows fewer: 2.4953 ms beside a stated 2.4 ms reads 2.50, not
    2.5.

    >>> from symroof.claims.stated import stated
    >>> one_digit_more(shown(sp.Rational(24953, 10000)), sp.Rational(24953, 10000),
    ...                stated("2.4")).text
    '24953/10000 ≈ 2.50'
    """
    if p is None or " ≈ " not in s.text or not getattr(value, "is_number", False):
        return s
    places = -sp.log(2 * p.half_unit / p.scale, 10)
    if not places.is_Integer or places < 0:
        return s
    number = float(sp.N(value / p.scale, 30))
    exact, _, shown_ = s.text.rpartition(" ≈ ")
    now = len(shown_.partition(".")[2]) if re.fullmatch(r"-?\d+(\.\d+)?", shown_) else None
    if now is None or now > int(places) or not 1e-4 <= abs(number) < 1e7:
        return s
    return Shown(s.latex, f"{exact} ≈ {number:.{int(places) + 1}f}", s.exact)


def _stated_unit(c: Claim) -> Stated | None:
    """The stated number, when it carries a unit (``1.01 ms``, ``13.9%``)."""
    if c.kind not in ("number", "definition"):
        return None
    got = read(c.stated, c.source.language)
    return got if got is not None and got.unit else None


def verdict_parts(v: ClaimVerdict, words: Mapping[str, Any]) -> tuple[Part, ...]:
    c = v.claim
    word = words["verdicts"][v.verdict]
    if v.verdict == "OK" or not v.detail:
        return cell(text(word), *_assumes(c, words))
    detail = c.evidence if v.verdict == "UNVERIFIABLE" and not c.assumed else \
        _erratum_why(v) if v.verdict == "ERRATUM" and c.erratum else v.detail
    return cell(text(word + ":"), small(detail), *_assumes(c, words))


def _erratum_why(v: ClaimVerdict) -> str:
    """Why the text is wrong, and the slip a diagnosis names, if one does."""
    if v.claim.erratum is None:
        return v.detail  # a MISMATCH's detail names the slip already
    why = v.claim.erratum.why
    return f"{why}; {v.diagnosis['said']}" if v.diagnosis and v.diagnosis.get("said") else why


def _assumes(c: Claim, words: Mapping[str, Any]) -> tuple[Part, ...]:
    """The inputs a claim assumes, shown beside its verdict."""
    return tuple(p for a in c.assumptions for p in (BR, small(f"{words['assumes']}: {a}")))


def claims_table(verdicts: Sequence[ClaimVerdict], words: Mapping[str, Any]) -> Table:
    columns = (Column("#", align="r"), Column(words["claim"], 0.33),
               Column(words["stated"], 0.2), Column(words["derived"], 0.24),
               Column(words["verdict"], 0.18))
    rows = tuple((cell(text(str(i))), cell(text(v.claim.statement), code(v.claim.id)),
                  cell(stated_part(v.claim)), derived_parts(v, words), verdict_parts(v, words))
                 for i, v in enumerate(verdicts, 1))
    return Table(columns, rows)


def _step_math(input: Any, output: Any, kind: str, fmt: str) -> tuple[list[str], bool]:
    """The LaTeX lines of a step (input, then output) and whether every value is exact."""
    values = [output] if input is None or (kind in ("define", "evaluate", "solve")
                                           and output is not None) else [input, output]
    values = [x for x in values if x is not None]
    exact = all(_exact(x) for x in values)
    lines = [latex_value(x, fmt) for x in values]
    if len(lines) == 2:
        lines[1] = r"\longrightarrow\; " + lines[1]
    return lines, exact


def _exact(value: Any) -> bool:
    if isinstance(value, Mapping):
        return all(_exact(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_exact(v) for v in value)
    if value is None or isinstance(value, str | bool):
        return True
    try:
        return shown(value).exact
    except (sp.SympifyError, TypeError):
        return True


def step_markup(lines: list[str], fmt: str) -> str:
    """A step's math: inline when short; else on lines of its own, scaled to fit in PDF."""
    if not lines:
        return ""
    joined = r" \;".join(lines)
    if fmt == "md":
        return "$" + joined.replace("|", r"\vert ") + "$"
    if fmt == "html":
        return f'<span class="tex">{html_escape(joined)}</span>'
    if _visible(joined) <= INLINE:
        return f"${joined}$"
    return "".join(r"\\" + r"\fit{$\displaystyle " + x + "$}" for x in lines)


def _visible(latex: str) -> int:
    """About how many characters a formula shows: layout commands and braces count for
    nothing, other commands (a Greek letter, an arrow) for one."""
    bare = re.sub(r"\\(mathrm|frac|left|right|quad|;|,)", "", latex)
    return len(re.sub(r"[{}\s]", "", re.sub(r"\\[A-Za-z]+", "x", bare)))


def derivation_page(d: Derivation, verdicts: list[ClaimVerdict], words: Mapping[str, Any],
                    fmt: str) -> dict[str, Any]:
    """Everything a derivation template shows, in ``fmt``."""
    steps = []
    for s in d.steps:
        lines, exact = _step_math(s.input, s.output, s.kind, fmt)
        steps.append({"kind": words["kinds"].get(s.kind, s.kind),
                      "title": escape(s.title, fmt), "math": step_markup(lines, fmt),
                      "why": escape(s.justification, fmt),
                      "note": "" if exact else escape(words["decimal_note"], fmt)})
    quotes = [{"id": escape(v.claim.id, fmt) if fmt != "md" else v.claim.id,
               "section": escape(v.claim.source.section, fmt),
               "quote": quote_markup(v.claim.quote, fmt),
               "erratum": None if v.claim.erratum is None else {
                   "why": escape(v.claim.erratum.why, fmt),
                   "right": escape(v.claim.erratum.right, fmt)}} for v in verdicts]
    return {
        "title": escape(d.title, fmt), "id": d.id, "source": escape(d.source.cite(), fmt),
        "language": d.source.language,
        "assumptions": [escape(a, fmt) for a in d.assumptions],
        "notes": [escape(n, fmt) for n in d.notes], "steps": steps, "quotes": quotes,
        "claims_table": claims_table(verdicts, words).render(fmt),
        "counts": counts_line(verdicts, words), "s": words, "fmt": fmt,
    }


def counts(verdicts: Iterable[ClaimVerdict]) -> dict[str, int]:
    tally = {k: 0 for k in VERDICTS}
    for v in verdicts:
        tally[v.verdict] += 1
    return {k: n for k, n in tally.items() if n}


def counts_line(verdicts: Iterable[ClaimVerdict], words: Mapping[str, Any]) -> str:
    return ", ".join(f"{n} {words['verdicts'][k]}" for k, n in counts(verdicts).items())


def index_page(verification: Verification, words: Mapping[str, Any], fmt: str,
               suffix: str) -> dict[str, Any]:
    """The index: one row per derivation, then the errata with their derived values."""
    by: dict[str, list[ClaimVerdict]] = {}
    for v in verification.verdicts:
        by.setdefault(v.derivation, []).append(v)
    rows = []
    errata = []
    for d in verification.derivations:
        mine = by.get(d.id, [])
        rows.append((cell(link(d.title, f"{d.id}.{suffix}"), code(d.id)),
                     cell(text(str(len(mine)))), cell(text(counts_line(mine, words)))))
        for v in mine:
            if v.verdict in ("ERRATUM", "MISMATCH", "STALE"):
                c = v.claim
                why = _erratum_why(v)
                errata.append((cell(link(c.id, f"{d.id}.{suffix}"), BR,
                                    small(c.source.section)),
                               cell(stated_part(c)), derived_parts(v, words),
                               cell(text(why))))
    index = Table((Column(words["derivation"], 0.55), Column(words["claims_count"], align="r"),
                   Column(words["verdict"], 0.3)), tuple(rows))
    diagnosed = [(cell(link(v.claim.id, f"{v.derivation}.{suffix}"), BR,
                       small(v.claim.source.section)), cell(stated_part(v.claim)),
                  cell(text(words["verdicts"][v.verdict])),
                  cell(text(str(v.diagnosis.get("said") or v.diagnosis["choice"])), BR,
                       small(str(v.diagnosis["choice"]))))
                 for v in verification.verdicts if v.diagnosis]
    diagnoses_table = Table((Column(words["claim"], 0.24), Column(words["stated"], 0.16),
                             Column(words["verdict"], 0.16), Column(words["diagnosis"], 0.44)),
                            tuple(diagnosed))
    errata_table = Table((Column(words["claim"], 0.24), Column(words["stated"], 0.16),
                          Column(words["derived"], 0.22), Column(words["why"], 0.38)),
                         tuple(errata))
    conflicts: list[tuple[tuple[Part, ...], ...]] = []
    for d in verification.derivations:
        for k in d.conflicts:
            row = (cell(text(k.figure)), cell(text(k.text)),
                   cell(*(p for i, (value, ids) in enumerate(k.values)
                          for p in ((BR,) if i else ()) + (text(f"{value}: "),
                                                            small(", ".join(ids))))),
                   cell(text(k.known or (f"{k.defined_by}: {k.defining}" if k.defined_by
                                         else "-"))))
            if row not in conflicts:
                conflicts.append(row)
    conflicts_table = Table((Column(words["figure"], 0.26), Column(words["derivation"], 0.14),
                             Column(words["printed_values"], 0.38),
                             Column(words["known"], 0.22)), tuple(conflicts))
    total = counts(verification.verdicts)
    return {"index_table": index.render(fmt),
            "conflicts_table": conflicts_table.render(fmt) if conflicts else "",
            "errata_table": errata_table.render(fmt) if errata else "", "s": words,
            "diagnoses_table": diagnoses_table.render(fmt) if diagnosed else "",
            "total": ", ".join(f"{n} {words['verdicts'][k]}" for k, n in total.items()),
            "n_claims": len(verification.verdicts), "fmt": fmt}
