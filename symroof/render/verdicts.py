"""The verdict table of ``symroof verify``: one line per claim through the table writer,
then the summary. Imports no SymPy, so a fully cached run prints without loading it.

>>> line = VerdictLine("OK", "c", "240", "9850/41", "")
>>> verdict_lines([line], 1)[0].split()
['verdict', 'claim', 'stated', 'derived']
>>> verdict_lines([line], 1)[1].split()
['OK', 'c', '240', '9850/41', '≈', '240.24']
>>> verdict_lines([line], 1)[-1]
'1 claim in 1 derivation: 1 OK'

A derived exact fraction is shown with its decimal beside it, as the write-ups show it
(``readable``); the JSON keeps the exact form alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..claims.runner import VERDICTS
from ..core import tables as tb
from ..core.decimals import decimal_text

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


# a derived value that is an exact fraction, alone, after a relation's symbol, or before a unit
_FRACTION = re.compile(r"(?P<head>(?:\S+ (?:[<>]=?|=) )?)(?P<p>-?\d+)/(?P<q>\d+)"
                       r"(?P<unit>(?: [^\s(][^(]*)?)")
_NUMBER = re.compile(r"\d+(?:[.,](\d+))?")
_STATED_FRACTION = re.compile(r"\d\s*/\s*\d")


def _terminating(x: Fraction) -> str | None:
    """The decimal of ``x`` when it ends within six significant digits (21/4: 5.25)."""
    q = x.denominator
    twos = fives = 0
    while q % 2 == 0:
        q, twos = q // 2, twos + 1
    while q % 5 == 0:
        q, fives = q // 5, fives + 1
    if q != 1:
        return None
    places = max(twos, fives)
    text = f"{float(x):.{places}f}"
    return text if len(text.replace("-", "").replace(".", "").lstrip("0")) <= 6 else None


def readable(derived: str, stated: str) -> str:
    """``derived`` with the decimal of an exact fraction beside it, as the write-ups show
    it: the readable form's decimal (``core.printer.approx``), with one digit more than
    the stated number prints where that shows fewer; a fraction whose decimal ends within
    six digits is given as that decimal.

    >>> readable("1000/989 ms", "1.01 ms"), readable("B > 78800/9", "D > 8755")
    ('1000/989 ≈ 1.011 ms', 'B > 78800/9 ≈ 8755.6')
    >>> readable("T > 119/4500000", "T > 26.4 us"), readable("1/2", "1/2")
    ('T > 119/4500000 ≈ 2.6444e-5', '1/2')
    >>> readable("42/5 us", "8.4 us"), readable("3737232/78125 GB", "82.301 GB")
    ('42/5 = 8.4 us', '3737232/78125 ≈ 47.8366 GB')
    """
    m = _FRACTION.fullmatch(derived)
    if m is None or _STATED_FRACTION.search(stated) or int(m["q"]) == 0:
        return derived
    x = Fraction(int(m["p"]), int(m["q"]))
    if x.denominator == 1:
        return derived
    exact = _terminating(x)
    if exact is not None:
        return f"{m['head']}{m['p']}/{m['q']} = {exact}{m['unit']}"
    value = float(x)
    decimal = decimal_text(value)
    shown = _NUMBER.search(stated)
    places = len(shown.group(1) or "") + 1 if shown else 0
    if 1e-4 <= abs(value) < 1e7 and "e" not in decimal and \
            places > len(decimal.partition(".")[2]):
        decimal = f"{value:.{places}f}"
    return f"{m['head']}{m['p']}/{m['q']} ≈ {decimal}{m['unit']}"


def verdict_lines(verdicts: Sequence[ClaimVerdict | VerdictLine], derivations: int,
                  color: bool = False, only: set[str] | None = None) -> list[str]:
    """A table of verdicts, one line per claim, then the summary."""
    lines_of = [v if isinstance(v, VerdictLine) else VerdictLine.of(v) for v in verdicts]
    shown = [v for v in lines_of if only is None or v.verdict in only]
    rows = tuple((tb.cell(tb.text(v.verdict)), tb.cell(tb.text(v.id)),
                  tb.cell(tb.text(tb.cut(v.stated, 28))),
                  tb.cell(tb.text(tb.cut(readable(v.derived, v.stated), 48) + (
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
