"""The verdict table of ``symroof verify``: one line per claim through the table writer,
then the summary. Imports no SymPy, so a fully cached run prints without loading it.

>>> line = VerdictLine("OK", "c", "240", "9850/41", "")
>>> verdict_lines([line], 1)[-1]
'1 claim in 1 derivation: 1 OK'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..claims.runner import VERDICTS
from ..core import tables as tb

if TYPE_CHECKING:
    from ..claims.runner import ClaimVerdict

COLORS = {"OK": "32", "ROUNDING": "36", "APPROX": "36", "SIMPLIFIED": "36", "DEFINITION": "2",
          "MEASURED": "36",
          "ERRATUM": "33", "UNVERIFIABLE": "2", "INCONSISTENT": "31;1", "NOT PROVEN": "35;1",
          "MISMATCH": "31;1", "STALE": "31;1", "ERROR": "31;1", "TIMEOUT": "31;1"}


@dataclass(frozen=True)
class VerdictLine:
    """What the verdict table shows of one verdict: from a ClaimVerdict, or from the cached
    record of one when ``verify`` built nothing."""

    verdict: str
    id: str
    stated: str
    derived: str
    detail: str
    assumes: tuple[str, ...] = ()  # inputs the text does not give, shown beside the verdict

    @staticmethod
    def of(v: ClaimVerdict) -> VerdictLine:
        return VerdictLine(v.verdict, v.claim.id, v.claim.stated, v.derived, v.detail,
                           v.claim.assumptions)

    @staticmethod
    def of_record(r: Mapping[str, Any]) -> VerdictLine:
        assumes = tuple(a for a in r.get("assumptions") or () if a not in r["detail"])
        return VerdictLine(r["verdict"], r["id"], r["stated"], r["derived"], r["detail"],
                           assumes)


def verdict_lines(verdicts: Sequence[ClaimVerdict | VerdictLine], derivations: int,
                  color: bool = False, only: set[str] | None = None) -> list[str]:
    """A table of verdicts, one line per claim, then the summary."""
    lines_of = [v if isinstance(v, VerdictLine) else VerdictLine.of(v) for v in verdicts]
    shown = [v for v in lines_of if only is None or v.verdict in only]
    rows = tuple((tb.cell(tb.text(v.verdict)), tb.cell(tb.text(v.id)),
                  tb.cell(tb.text(tb.cut(v.stated, 28))),
                  tb.cell(tb.text(tb.cut(v.derived, 40) + (
                      f"  ({v.detail})" if v.verdict != "OK" and v.detail else "") + "".join(
                      f"  (assumes {a})" for a in v.assumes))))
                 for v in shown)
    table = tb.Table((tb.Column("verdict"), tb.Column("claim"), tb.Column("stated"),
                      tb.Column("derived")), rows)
    lines = table.render("text", max_width=10_000).splitlines()
    if color:
        lines = [lines[0], *(f"\033[{COLORS.get(v.verdict, '0')}m{line[:len(v.verdict)]}"
                             f"\033[0m{line[len(v.verdict):]}"
                             for v, line in zip(shown, lines[1:], strict=True))]
    tally: dict[str, int] = {}
    for v in lines_of:
        tally[v.verdict] = tally.get(v.verdict, 0) + 1
    counts = ", ".join(f"{tally[k]} {k}" for k in VERDICTS if k in tally)
    return [*lines, "", f"{tb.counted(len(lines_of), 'claim')} in "
                        f"{tb.counted(derivations, 'derivation')}: {counts}"]
