"""A chapter scaffolded from a text: one table row per printed number, relation or formula.

>>> rows = rows_of_text('''# Rooflines
... The ridge of TPU v5e is about 240 FLOPs/byte. A step takes 1.01 ms.
... It is compute-bound once B > 240, and `2*B*D*F` FLOPs are done.''', "en")
>>> for r in rows:
...     print(r.key, repr(r.stated), r.section)
ridge_01 'about 240 FLOPs/byte' Rooflines
time_02 '1.01 ms' Rooflines
threshold_03 'B > 240' Rooflines
formula_04 '2*B*D*F' Rooflines
>>> [(r.stated, r.unit, r.concept) for r in rows_of_text("The step time, in ms: 22.0.", "en")]
[('22.0', 'ms', 'time')]

``symroof claims new FOLDER --from TEXT.md --lang en`` writes what :func:`scaffold_text`
makes: the table (``LANG.toml``) with each row's section (the last Markdown heading), quote
(the sentence) and stated value (as the sentence prints it, read by the table of
:mod:`symroof.core.parse`; a number printed bare in a sentence that gives its unit, "in
ms" or "(ms)", gets that ``unit``), and a ``claims.py`` that adds every row as not derived yet (a
``measured`` value whose evidence says so, so that ``symroof verify`` runs at once and
reads each row UNVERIFIABLE) with a comment naming the concept that would derive it where
it can be guessed (a ridge, a time, bytes, a bandwidth, a peak, a count, a threshold, a
formula). A user replaces a stub with the engine's value; a row deleted from the table is
listed under ``omits`` of ``[chapter]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import InputError
from ..core.parse import parse_expr
from .stated import bare_bound, read, refusal, with_unit

LANGUAGES = ("en", "ru", "zh")
#: what a stub's comment suggests for each guessed concept
CONCEPTS: dict[str, str] = {
    "ridge": "a roofline's ridge: rl = ch.roofline(einsum(...), chip(...)); rl.ridge",
    "time": "a time: rl.t_lower (or a collective's .time)",
    "bytes": "bytes: an op's bytes, a model's memory (inference_memory(...))",
    "bandwidth": "a bandwidth: chip(...).bandwidth(...)",
    "peak": "a peak: chip(...).peak(dtype)",
    "count": "a count: params(model(...)).total, flops_per_token(...)",
    "threshold": "a threshold: ch.threshold(rl, \"B\").inequality",
    "formula": "a formula the engine derives (an op's flops, bytes, intensity)",
    "ratio": "a ratio of two engine values",
    "number": "a number the engine derives",
}
_DIMENSIONS = {(-1, 1, 0): "ridge", (0, 0, 1): "time", (1, 0, 0): "bytes",
               (1, 0, -1): "bandwidth", (0, 1, -1): "peak", (0, 1, 0): "count"}
_WORDS = (("ridge", ("intensity", "ridge", "per byte", "/byte", "FLOPs/B", "FLOP/B",
                     "интенсивност", "强度")),
          ("count", ("parameters", "params", "tokens", "параметр", "токен", "参数")))
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-ZА-Я\d$`(\"«])|(?<=[。！？；])")
_NUMBER = re.compile(
    r"(?:(?:about|around|roughly|approximately|nearly|almost|circa|~|≈|примерно|около|"
    r"почти|порядка|约为|大约|约|将近)\s*)?"
    r"[-−]?(?:\d[\d\u00a0\u202f\u2009 ,.]*\d|\d)(?:\s*(?:[eE][-+]?\d+|[x×·]\s*10\^?-?\d+))?"
    r"(?:\s*(?:%|‰|[A-Za-zА-Яа-яµμ毫微纳秒万亿千]+(?:/[A-Za-zА-Яа-яµμ]+)?\.?)"
    r"(?:\s+[A-Za-zА-Яа-я]+)?)?")
_RELATION = re.compile(r"\b([A-Za-z]\w*)\s*(>=|<=|>|<|≥|≤)\s*(~|≈)?\s*"
                       r"(\d[\d\u00a0\u202f\u2009 ,.]*\d|\d)")
_CODE = re.compile(r"`([^`]+)`|\$([^$]+)\$")


@dataclass(frozen=True)
class Row:
    """One row of a scaffolded table: its key, section, quote, stated value and the
    concept a stub guesses for it."""

    key: str
    section: str
    quote: str
    stated: str
    concept: str
    unit: str = ""  # the unit the sentence gives a number it prints bare ("in ms: 22.0")


def rows_of_text(text: str, language: str) -> list[Row]:
    """Every printed number, relation and formula of ``text`` (Markdown or plain), once per
    sentence and value, in reading order."""
    if language not in LANGUAGES:
        raise InputError(f"a text is read in {', '.join(LANGUAGES)}, got {language!r}",
                         "lang")
    section = "Text"
    found: list[tuple[str, str, str, str, str]] = []
    for line_block in _blocks(text):
        heading = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*\Z", line_block)
        if heading:
            section = heading.group(1).strip() or section
            continue
        for sentence in _SENTENCE.split(line_block):
            quote = " ".join(sentence.split())
            if quote:
                values = _values(quote, language)
                units = _declared_units(quote, [s for s, _ in values], language)
                for (stated, concept), unit in zip(values, units, strict=True):
                    if unit and read(stated, language) is not None:  # a number, not a bound
                        concept = _concept(with_unit(stated, unit, language), quote,
                                           language)
                    found.append((section, quote, stated, concept, unit))
    rows = []
    for i, (sec, quote, stated, concept, unit) in enumerate(found, 1):
        rows.append(Row(f"{concept}_{i:02d}", sec, quote, stated, concept, unit))
    return rows


_DECLARING = re.compile(r"[(\[（]\s*(%|‰|[^()\[\]（）\s]{2,12})\s*[)\]）]"
                        r"|(?:^|\s)(?:in|в)\s+([^\s,.;:()]{2,12})")


def _declared_units(quote: str, stated: list[str], language: str) -> list[str]:
    """The unit a sentence gives each of its values (``stated``, in reading order): a unit
    in brackets (``time (ms)``) or after "in" ("in ms", "в мс") is the unit of the first
    number printed bare after it; '' for the others."""
    out = [""] * len(stated)
    starts = []
    at = 0
    for text in stated:
        at = max(quote.find(text, at), at)
        starts.append(at)
    for m in _DECLARING.finditer(quote):
        word = (m.group(1) or m.group(2)).strip()
        try:
            with_unit("1", word, language)
        except InputError:
            continue
        for i, text in enumerate(stated):
            if starts[i] >= m.end() and not out[i] and _bare(text, language):
                out[i] = word
                break
    return out


def _bare(stated: str, language: str) -> bool:
    """Whether a stated value is a number printed without a unit (nor a count's suffix),
    or a relation whose bound is one (``T > 26.4``)."""
    try:
        got = read(stated, language)
    except InputError:
        got = None
    if got is None:
        return bare_bound(stated, language) is not None
    return not got.unit and not got.count


def _blocks(text: str) -> list[str]:
    """Headings alone, paragraphs joined into one line (a sentence may wrap)."""
    out: list[str] = []
    para: list[str] = []
    for line in text.splitlines():
        if re.match(r"\s{0,3}#{1,6}\s", line) or not line.strip():
            if para:
                out.append(" ".join(para))
                para = []
            if line.strip():
                out.append(line)
            continue
        para.append(line.strip().lstrip("-*> ").strip())
    if para:
        out.append(" ".join(para))
    return out


def _values(quote: str, language: str) -> list[tuple[str, str]]:
    """(stated, concept) of each value a sentence prints."""
    out: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _CODE.finditer(quote):
        formula = (m.group(1) or m.group(2)).strip()
        try:
            expr = parse_expr(formula)
        except InputError:
            continue
        if expr.free_symbols:
            out.append((formula, "formula"))
            taken.append(m.span())
    for m in _RELATION.finditer(quote):
        if any(a <= m.start() < b for a, b in taken):
            continue
        stated = quote[m.start():m.end()].strip().rstrip(",. ")
        out.append((stated, "threshold"))
        taken.append(m.span())
    for m in _NUMBER.finditer(quote):
        if any(a <= m.start() < b for a, b in taken) or \
                re.match(r"[A-Za-z0-9_.]", quote[m.start() - 1:m.start()]):
            continue  # digits inside a name (v5e, H100) or a number already read
        number = _readable(m.group(0), language)
        if number is None:
            continue
        out.append((number, _concept(number, quote, language)))
        taken.append(m.span())
    order = {s: quote.find(s) for s, _ in out}
    return sorted(out, key=lambda sc: order[sc[0]])


def _readable(candidate: str, language: str) -> str | None:
    """The longest start of ``candidate`` the table of printed numbers reads (a unit word
    that is not a unit is dropped: "240 FLOPs/byte" is read as it is, "240 cycles" as 240)."""
    text = candidate.strip().rstrip(",.;:")
    while text:
        try:
            if read(text, language) is not None:
                return text
        except InputError:
            return None
        if refusal(text, language) is None and not re.search(r"\s", text):
            return None
        shorter = re.sub(r"\s*\S+\Z", "", text) if re.search(r"\s", text) else \
            re.sub(r"[^\d.,]+\Z", "", text)
        if shorter == text:
            return None
        text = shorter.rstrip(",.;:")
    return None


def _concept(stated: str, quote: str, language: str) -> str:
    """The concept a stub names for a stated number: by its unit, else by the words of its
    sentence."""
    got = read(stated, language)
    if got is not None and got.count:
        return "count"
    dims = None if got is None else got.dims
    if dims is not None and dims in _DIMENSIONS:
        return _DIMENSIONS[dims]
    if dims == (0, 0, 0):
        return "ratio"
    lowered = quote.lower()
    for concept, words in _WORDS:
        if any(w.lower() in lowered for w in words):
            return concept
    return "number"


def scaffold_text(text: str, language: str, chapter_id: str, title: str,
                  book: str) -> tuple[str, str, list[Row]]:
    """(table text, claims.py text, rows) for a chapter scaffolded from ``text``."""
    rows = rows_of_text(text, language)
    if not rows:
        raise InputError("the text prints no number, relation or formula to check", "text")
    return _table(rows, language, chapter_id, title, book), _claims(rows, title), rows


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _table(rows: list[Row], language: str, chapter_id: str, title: str, book: str) -> str:
    lines = ["[chapter]", f"id = {_toml(chapter_id)}", f"title = {_toml(title)}",
             f"book = {_toml(book)}", f"language = {_toml(language)}",
             "# a row deleted below: its id goes here, and claims.py may keep it",
             "omits = []", ""]
    for r in rows:
        lines += [f"[{_toml(r.section)}.{r.key}]", f"quote = {_toml(r.quote)}",
                  f"stated = {_toml(r.stated)}",
                  *([f"unit = {_toml(r.unit)}"] if r.unit else []), ""]
    return "\n".join(lines)


def _claims(rows: list[Row], title: str) -> str:
    head = [f'"""{title.replace(chr(34), chr(39))}: what the chapter derives, scaffolded from '
            'the text (each stub: not derived yet)."""', "",
            "from __future__ import annotations", "",
            "from symroof.claims import Chapter, measured", "", "",
            "def claims(ch: Chapter) -> None:",
            "    # replace each stub with the engine's value; the comment guesses the concept",
            "    ch.add("]
    body = []
    for r in rows:
        quote = r.quote if len(r.quote) <= 70 else r.quote[:67] + "..."
        body += [f"        # {r.stated}: {CONCEPTS[r.concept]}",
                 f"        #   \u201c{quote}\u201d",
                 f"        {r.key}=measured({_toml('not derived yet: ' + r.concept)}),"]
    return "\n".join([*head, *body, "    )", ""])


__all__ = ["CONCEPTS", "Row", "rows_of_text", "scaffold_text"]
