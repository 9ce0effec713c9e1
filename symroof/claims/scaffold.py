"""A chapter scaffolded from a text: one table row per printed number, relation or formula.

>>> rows = rows_of_text('''# Rooflines
... The ridge of TPU v5e is about 240 FLOPs/byte. A step takes 1.01 ms.
... It is compute-bound once B > 240, and `2*B*D*F` FLOPs are done.''', "en")
>>> for r in rows:
...     print(r.key, repr(r.stated), r.section, r.call or "-")
ridge_01 'about 240 FLOPs/byte' Rooflines tpu_v5e.ridge("bf16")
time_02 '1.01 ms' Rooflines -
threshold_03 'B > 240' Rooflines -
formula_04 '2*B*D*F' Rooflines -
>>> [(r.stated, r.unit, r.concept) for r in rows_of_text("The step time, in ms: 22.0.", "en")]
[('22.0', 'ms', 'time')]
>>> for r in rows_of_text("With D = 8192 Llama 2 7B has 6.74B parameters.", "en"):
...     print(r.key, repr(r.stated), r.call)
input_01 '8192' definition(8192)
count_02 '6.74B parameters' params(llama_2_7b).total

``symroof claims new FOLDER --from TEXT.md --lang en`` writes what :func:`scaffold_text`
makes: the table (``LANG.toml``) with each row's section (the last Markdown heading), quote
(the sentence) and stated value (as the sentence prints it, read by the table of
:mod:`symroof.core.parse`; a number printed bare in a sentence that gives its unit, "in
ms" or "(ms)", or "240 FLOPs per byte", gets that ``unit``), and a ``claims.py`` that adds
every row as not derived yet (a ``measured`` value whose evidence says so, so that
``symroof verify`` runs at once and reads each row UNVERIFIABLE) with a comment naming the
concept that would derive it where it can be guessed (a ridge, an intensity, a time, bytes,
a bandwidth, a peak, FLOPs, a count, a threshold, a formula) and, where the text names a
catalogue chip, a bundled model or a collective, the engine call itself, commented, to
put in the stub's place. Digits inside such a name ("Llama 2 7B", "H100") are no value. An
input the text gives (``D = F = 8192``, "a batch of 128", "16 chips", "an AllReduce of
13.5 GB") is a row too, kept as a ``definition`` of what it prints (DEFINITION: it checks
nothing). A user replaces a stub with the engine's value; a row deleted from the table is
listed under ``omits`` of ``[chapter]``.
"""

from __future__ import annotations

import contextlib
import re
import textwrap
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..core.errors import InputError
from ..core.parse import parse_expr
from ..hardware.catalog import load_catalog
from ..models.hf import bundled
from .stated import bare_bound, read, refusal, with_unit

LANGUAGES = ("en", "ru", "zh")
#: what a stub's comment suggests for each guessed concept
CONCEPTS: dict[str, str] = {
    "ridge": "a roofline's ridge: rl = ch.roofline(einsum(...), chip(...)); rl.ridge",
    "intensity": "an op's arithmetic intensity: rl.at({...}).intensity",
    "time": "a time: rl.at({...}).t_lower (or a collective's .time)",
    "bytes": "bytes: an op's rl.op.bytes(), a model's inference_memory(...).parts[...]",
    "bandwidth": "a bandwidth: chip(...).bandwidth(\"hbm\")",
    "peak": "a peak: chip(...).peak(dtype)",
    "flops": "FLOPs: an op's rl.at({...}).op.flops, a model's flops_per_token(...)",
    "count": "a count: params(model(...)).total, a collective's .hops",
    "threshold": "a threshold: ch.threshold(rl, \"B\").inequality (exact) or, with "
                 "regime=\"B<<D,F\", its .asymptotic",
    "formula": "a formula the engine derives (an op's .flops, .bytes(), an intensity)",
    "ratio": "a ratio of two engine values",
    "number": "a number the engine derives",
    "input": "an input the text gives: kept as a definition (it checks nothing)",
}
_DIMENSIONS = {(-1, 1, 0): "ridge", (0, 0, 1): "time", (1, 0, 0): "bytes",
               (1, 0, -1): "bandwidth", (0, 1, -1): "peak", (0, 1, 0): "flops"}
_WORDS = (("threshold", ("critical batch", "critical size", "threshold", "порог", "阈值")),
          ("intensity", ("arithmetic intensity", "its intensity", "the intensity")),
          ("ridge", ("intensity", "ridge", "per byte", "/byte", "FLOPs/B", "FLOP/B",
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
# what an input looks like: a printed assignment (D = F = 8192), the size of a batch, a
# context, a mesh (a batch of 128, 16 chips), what a collective moves (an AllReduce of 13.5
# GB); a size after "below", "until"... is a threshold instead (memory-bound below a batch
# of 295)
_ASSIGNED = re.compile(r"\b([A-Za-z]\w*)\s*=\s*((?:[A-Za-z]\w*\s*=\s*)*)\Z")
_COLLECTIVE = re.compile(r"\b(all[\s-]?reduce|all[\s-]?gather|reduce[\s-]?scatter|"
                         r"all[\s-]?to[\s-]?all)\b", re.IGNORECASE)
_SIZE_OF = re.compile(r"\b(batch|context|sequence length|sequence|prompt|mesh|ring|row|"
                      r"group|slice|pod)(?:\s+size)?\s+of\s*\Z", re.IGNORECASE)
_BOUND_BEFORE = re.compile(r"\b(?:(?:below|above|until|beyond|under|over|past|up to|at most|"
                           r"at least)\s+(?:a|an|the)?\s*(?:batch|context|sequence length|"
                           r"sequence)(?:\s+size)?\s+of|below|above|until|beyond)\s*\Z",
                           re.IGNORECASE)
_MOVED = re.compile(r"(?:" + _COLLECTIVE.pattern + r")\s+of\s+(?:the\s+)?\Z|"
                    r"\b(?:gathers|reduces|scatters|sends)\s*\Z", re.IGNORECASE)
_DEVICES = re.compile(r"\s*(?:chips|GPUs|TPUs|devices|hosts|nodes|ways)\b", re.IGNORECASE)
_LINKS = (("nvlink", r"nvlink"), ("ici", r"\bici\b"), ("pcie", r"\bpcie\b"),
          ("dcn", r"\bdcn\b"), ("hbm", r"\bhbm\b"))
_DTYPE = re.compile(r"\b(bf16|fp16|fp8|int8|fp32|tf32|int4)\b", re.IGNORECASE)
_NEAR = 200  # how far from a value the words that say what it is are looked for
_RELATIONS = {">": "Gt", ">=": "Ge", "≥": "Ge", "<": "Lt", "<=": "Le", "≤": "Le"}
_REGIME = re.compile(r"much smaller|much less|<<|small batch", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    """One row of a scaffolded table: its key, section, quote, stated value, the concept a
    stub guesses for it and, where the text names enough (a chip, a model, a collective),
    the engine call that would derive it (``call``)."""

    key: str
    section: str
    quote: str
    stated: str
    concept: str
    unit: str = ""  # the unit the sentence gives a number it prints bare ("in ms: 22.0")
    call: str = ""  # the engine call a stub suggests ('' when the text names too little)


@dataclass(frozen=True)
class _Value:
    stated: str
    concept: str
    start: int
    end: int
    unit: str = ""
    sizes: tuple[tuple[str, str], ...] = ()  # an input's names (D = F = 8192: D and F)


@dataclass(frozen=True)
class _Scope:
    """What the text has named by the end of a sentence: the last chip, model and
    collective (its section), the sizes printed as inputs in the section, and whether the
    text has a matmul (the roofline ``rl`` the stubs use)."""

    chip: str = ""
    model: str = ""
    collective: str = ""
    rl_chip: str = ""  # the chip of the text's matmul (the roofline rl), '' when none
    rl_dtype: str = "bf16"
    regime: bool = False
    local: bool = False  # the section is about the matmul (names it or gives its sizes)
    sizes: tuple[tuple[str, str], ...] = ()
    chips: tuple[str, ...] = field(default=())
    models: tuple[str, ...] = field(default=())


@lru_cache(maxsize=1)
def _names() -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """(kind, name, pattern) for each catalogue chip and bundled model, longest first: the
    name as a text prints it, parts apart or joined ("Llama 2 7B", "TPU v5e", "H100 SXM5")."""
    def pattern(name: str, tail: str) -> str:
        parts = [r"[\s-]?".join(re.escape(x) for x in re.findall(r"[a-z]+|[\d.]+|[^a-z\d.]+", p))
                 for p in name.split("-")]
        return r"(?<![\w.])" + r"[\s-]*".join(parts) + tail + r"(?![\w])"
    out = []
    for name in load_catalog().chips:
        out.append(("chip", name, pattern(name, r"\d*")))
        if name.startswith("tpu-"):
            out.append(("chip", name, pattern(name[4:], "")))
    out += [("model", name, pattern(name, "")) for name in bundled()]
    out.sort(key=lambda k: -len(k[2]))
    return tuple((kind, name, re.compile(p, re.IGNORECASE)) for kind, name, p in out)


def _mentions(quote: str) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, name) of each chip or model a sentence names, in reading order."""
    found: list[tuple[int, int, str, str]] = []
    for kind, name, pat in _names():
        for m in pat.finditer(quote):
            if not any(a < m.end() and m.start() < b for a, b, _, _ in found):
                found.append((m.start(), m.end(), kind, name))
    return sorted(found)


def _var(name: str) -> str:
    """The Python name a claims.py gives a chip or a model (h100-sxm: h100_sxm)."""
    return re.sub(r"\W", "_", name)


def rows_of_text(text: str, language: str) -> list[Row]:
    """Every printed number, relation and formula of ``text`` (Markdown or plain), once per
    sentence and value, in reading order."""
    if language not in LANGUAGES:
        raise InputError(f"a text is read in {', '.join(LANGUAGES)}, got {language!r}",
                         "lang")
    section = "Text"
    scope = _matmul(text, _Scope(regime=bool(_REGIME.search(text))))
    found: list[tuple[str, str, _Value, str]] = []
    for line_block in _blocks(text):
        heading = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*\Z", line_block)
        if heading:
            section = heading.group(1).strip() or section
            scope = replace(scope, chip="", collective="", local=False)
            continue
        for sentence in _SENTENCE.split(line_block):
            quote = " ".join(sentence.split())
            if not quote:
                continue
            scope = _named(scope, quote)
            values = _values(quote, language)
            units = _declared_units(quote, [v.stated for v in values], language)
            for value, unit in zip(values, units, strict=True):
                if unit and not value.unit:
                    value = replace(value, unit=unit)
                    if read(value.stated, language) is not None:  # a number, not a bound
                        value = replace(value, concept=_concept(
                            with_unit(value.stated, unit, language), quote, language))
                found.append((section, quote, value, ""))
                if value.concept == "input":
                    scope = replace(scope, sizes=scope.sizes + value.sizes, local=scope.local
                                    or any(k in ("B", "D", "F", "batch") for k, _ in value.sizes))
            clauses = [quote[(values[i - 1].end if i else 0):v.end]
                       for i, v in enumerate(values)]
            found[len(found) - len(values):] = [
                (sec, q, v, _guess(v, q, clause, scope, language))
                for (sec, q, v, _), clause in zip(found[len(found) - len(values):], clauses,
                                                  strict=True)]
    rows = []
    for i, (sec, quote, v, call) in enumerate(found, 1):
        rows.append(Row(f"{v.concept}_{i:02d}", sec, quote, v.stated, v.concept, v.unit,
                        call))
    return rows


def _matmul(text: str, scope: _Scope) -> _Scope:
    """``scope`` with the chip and dtype of the text's first matmul (the chip named last
    before it, else the first named after it)."""
    last = ""
    after = False
    for block in _blocks(text):
        for sentence in _SENTENCE.split(block):
            names = [n for _, _, k, n in _mentions(sentence) if k == "chip"]
            if after and names:
                return replace(scope, rl_chip=names[0])
            last = names[-1] if names else last
            if not after and re.search(r"mat(?:rix )?mul", sentence, re.IGNORECASE):
                dtype = _DTYPE.search(sentence)
                scope = replace(scope, rl_dtype=dtype.group(1).lower() if dtype else "bf16")
                if last:
                    return replace(scope, rl_chip=last)
                after = True
    return scope


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


_WORD_COUNTS = {"two": 2, "four": 4, "eight": 8, "sixteen": 16, "thirty-two": 32,
                "sixty-four": 64}
_CHIPS_COUNTED = re.compile(r"\b(" + "|".join(_WORD_COUNTS) + r"|\d+)\s+(?:[\w-]+\s+)?"
                            r"(?:chips|GPUs|TPUs|devices|[A-Z]+\d+[a-z]?s)\b", re.IGNORECASE)


def _named(scope: _Scope, quote: str) -> _Scope:
    """``scope`` after a sentence: the last chip, model and collective it names, and how
    many chips it counts ("Eight H100s", "16 chips")."""
    for _, _, kind, name in _mentions(quote):
        if kind == "chip":
            scope = replace(scope, chip=name, chips=scope.chips + (name,) * (
                name not in scope.chips))
        else:
            scope = replace(scope, model=name, models=scope.models + (name,) * (
                name not in scope.models))
    for m in _COLLECTIVE.finditer(quote):
        scope = replace(scope, collective=re.sub(r"[\s-]", "", m.group(1).lower()))
    verb = re.search(r"\b(gathers|scatters)\b", quote, re.IGNORECASE)
    if verb:
        scope = replace(scope, collective="allgather" if verb.group(1).lower() == "gathers"
                        else "reducescatter")
    if re.search(r"mat(?:rix )?mul", quote, re.IGNORECASE):
        scope = replace(scope, local=True)
    counted = _CHIPS_COUNTED.search(quote)
    if counted:
        n = counted.group(1).lower()
        scope = replace(scope, sizes=(*scope.sizes, ("chips", str(_WORD_COUNTS.get(n, n)))))
    return scope


def _values(quote: str, language: str) -> list[_Value]:
    """Each value a sentence prints, in reading order (digits inside a chip's or a model's
    name are none)."""
    out: list[_Value] = []
    taken: list[tuple[int, int]] = [(a, b) for a, b, _, _ in _mentions(quote)]
    for m in _CODE.finditer(quote):
        formula = (m.group(1) or m.group(2)).strip()
        try:
            expr = parse_expr(formula)
        except InputError:
            continue
        if expr.free_symbols:
            out.append(_Value(formula, "formula", *m.span()))
            taken.append(m.span())
    for m in _RELATION.finditer(quote):
        if any(a <= m.start() < b for a, b in taken):
            continue
        stated = quote[m.start():m.end()].strip().rstrip(",. ")
        out.append(_Value(stated, "threshold", *m.span()))
        taken.append(m.span())
    for m in _NUMBER.finditer(quote):
        if any(a <= m.start() < b for a, b in taken) or \
                re.match(r"[A-Za-z0-9_.]", quote[m.start() - 1:m.start()]):
            continue  # digits inside a name (v5e, H100) or a number already read
        number = _readable(m.group(0), language)
        if number is None:
            continue
        start = quote.find(number, m.start())
        near = quote[max(0, start - _NEAR):start + len(number) + _NEAR]
        value = _Value(number, _concept(number, near, language), start, start + len(number))
        per = re.match(r"\s+per\s+(byte|token|second)\b", quote[value.end:])
        got = read(number, language)
        typed = re.match(r"\s+(?:bf16|fp16|fp8|int8|fp32|tf32)\s+([^\s,;]+?)[.,;]?(?:\s|\Z)",
                         quote[value.end:])
        if typed and got is not None and not got.unit and not got.count:
            with contextlib.suppress(InputError):  # 1.97e14 bf16 FLOP/s: the unit after the dtype
                value = _Value(number, _concept(with_unit(number, typed.group(1), language),
                                                near, language), start, value.end,
                               typed.group(1))
        if per and got is not None and got.unit and number.endswith(got.unit):
            bare = number[:-len(got.unit)].strip()
            unit = f"{got.unit}/{per.group(1)}"
            with contextlib.suppress(InputError):
                value = _Value(bare, _concept(with_unit(bare, unit, language), near,
                                              language), start, value.end + per.end(), unit)
        out.append(_given(value, quote, language))
        taken.append(m.span())
    return sorted(out, key=lambda v: v.start)


def _given(value: _Value, quote: str, language: str) -> _Value:
    """``value`` as an input when its sentence gives it (D = F = 8192, a batch of 128, 16
    chips, an AllReduce of 13.5 GB), as a threshold after "below a batch of"."""
    before = quote[max(0, value.start - _NEAR):value.start]  # the patterns end at the value
    if value.concept == "ridge" and re.search(r"intensity", before, re.IGNORECASE) and \
            not re.search(r"ridge|critical", before, re.IGNORECASE):
        value = replace(value, concept="intensity")
    if re.match(r"\s*hops\b", quote[value.end:]):
        return replace(value, concept="count")
    assigned = _ASSIGNED.search(before)
    number = _literal(value.stated, language)
    if assigned:
        names = [assigned.group(1), *re.findall(r"[A-Za-z]\w*", assigned.group(2))]
        return replace(value, concept="input", sizes=tuple((n, number) for n in names))
    if _BOUND_BEFORE.search(before):
        return replace(value, concept="threshold")
    size = _SIZE_OF.search(before)
    if size:
        return replace(value, concept="input", sizes=((size.group(1).lower(), number),))
    if _MOVED.search(before):
        moved = "weights" if re.match(r"[^.;]{0,40}\bweights\b", quote[value.end:]) else number
        return replace(value, concept="input", sizes=(("moved", moved),))
    if re.match(r"[\d.,\s]+" + _DEVICES.pattern.removeprefix(r"\s*"), quote[value.start:]):
        return replace(value, concept="input", sizes=(("chips", number),))
    return value


def _literal(stated: str, language: str) -> str:
    """The exact value of a stated number in base units as a Python literal, '' when it is
    not a whole number (or not a number)."""
    try:
        got = read(stated, language)
    except InputError:
        return ""
    if got is None or not got.value.is_integer:
        return ""
    return str(int(got.value))


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
    sentence (a count of tokens in a sentence about a critical batch is a threshold, a
    FLOP/B value in one about an op's intensity is that intensity)."""
    got = read(stated, language)
    lowered = quote.lower()
    words = {concept: any(w.lower() in lowered for w in ws) for concept, ws in _WORDS}
    if got is not None and (got.count or (got.as_count is not None and words["count"])):
        return "threshold" if words["threshold"] else "count"  # 6.74B 参数: a count
    dims = None if got is None else got.dims
    if dims == (-1, 1, 0) and words["intensity"] and \
            not re.search(r"ridge|critical", lowered):
        return "intensity"
    if dims is not None and dims in _DIMENSIONS:
        return _DIMENSIONS[dims]
    if dims == (0, 0, 0):
        return "ratio"
    for concept, _ in _WORDS:
        if words[concept]:
            return concept
    return "number"


def _guess(value: _Value, quote: str, clause: str, scope: _Scope, language: str) -> str:
    """The engine call that would derive ``value`` where the text names enough for it (a
    chip, a model, a collective, the text's matmul), '' otherwise; ``clause`` is the part of
    the sentence since the value before (the math takes 17.4 us, memory 41.3 us)."""
    low = quote[max(0, value.start - _NEAR):value.end + _NEAR].lower()  # the words near it
    main = scope.chip or scope.rl_chip or (scope.chips[0] if scope.chips else "")
    c = _var(main) if main else ""
    m = _var(scope.model) if scope.model else ""
    got = _DTYPE.search(low)
    dtype = got.group(1).lower() if got else "bf16"
    sizes = dict(scope.sizes)
    rl = "rl" if scope.rl_chip else ""
    dims = {("B" if k == "batch" else k): v for k, v in scope.sizes
            if k in ("B", "D", "F", "batch")}
    at = f"rl.at({{{', '.join(f'{k!r}: {v}' for k, v in dims.items())}}})" \
        if rl and dims else rl
    at = at.replace("'", '"')
    kind = value.concept
    if kind == "input":
        number = _literal(value.stated, language)
        return f"definition({number})" if number else ""
    if kind in ("peak", "bandwidth", "ridge") and c:
        link = next((name for name, pat in _LINKS if re.search(pat, low)), "hbm")
        if kind == "ridge" and rl and main == scope.rl_chip:
            return "rl.ridge"
        return {"peak": f'{c}.peak("{dtype}")', "bandwidth": f'{c}.bandwidth("{link}")',
                "ridge": f'{c}.ridge("{dtype}")'}[kind]
    if kind == "flops" and m and re.search(r"per token", low) and \
            not re.match(r"\s*per param", quote[value.end:]):
        context = dict(scope.sizes).get("context", "CONTEXT")
        which = "training_flops_per_token" if re.search(r"train", low) else "flops_per_token"
        return f"{which}({m}, context={context})"
    if kind in ("intensity", "flops") and rl:
        return f"{at}.intensity" if kind == "intensity" else f"{at}.op.flops"
    if kind == "count" and m and re.search(r"param|параметр|参数", low):
        return f"params({m}).total"
    if kind == "count" and re.search(r"\bhops\b", low) and scope.collective and c:
        return _collective(scope, c, m) + ".hops"
    if kind == "bytes":
        return _bytes(low, c, m, sizes, at)
    if kind == "time":
        if scope.collective and c:
            part = "latency_time" if "latency" in low else \
                "bandwidth_time" if "bandwidth" in low else "time"
            return f"{_collective(scope, c, m)}.{part}"
        if m and c and "weight" in low:
            return f'inference_memory({m}).parts["weights"] / {c}.bandwidth("hbm")'
        if rl and scope.local:
            part = "t_math" if "math" in clause.lower() else \
                't_comms["hbm"]' if re.search(r"memory|reading|hbm", clause.lower()) else \
                "t_lower"
            return f"{at}.{part}"
    if kind == "threshold" and rl:
        symbol = re.match(r"\s*([A-Za-z]\w*)\s*(>=|<=|[<>≤≥])", value.stated)
        if symbol:
            name, op = symbol.group(1), _RELATIONS[symbol.group(2)]
            if scope.regime and name == "B":
                return f"sp.{op}(th.symbol, th.asymptotic)"
            exact = f'ch.threshold(rl, "{name}").inequality'
            return exact if op == "Gt" else f"sp.{op}(*{exact}.args)"
        fixed = {k: v for k, v in dims.items() if k != "B"}
        if "exact" in low and fixed:
            at = f"rl.at({{{', '.join(f'{k!r}: {v}' for k, v in fixed.items())}}})"
            return f'ch.threshold({at.replace(chr(39), chr(34))}, "B").exact'
        return "th.asymptotic" if scope.regime else 'ch.threshold(rl, "B").exact'
    if kind == "formula" and rl:
        if re.search(r"flop|floating-point|operations", low):
            return "rl.op.flops"
        if "byte" in low:
            return "rl.op.bytes()"
        if "intensity" in low:
            return "rl.intensity"
    return ""


def _collective(scope: _Scope, c: str, m: str) -> str:
    """The collective the section names, with what it moves and over how many chips where
    the text gave them (BYTES and N where it did not)."""
    sizes = dict(scope.sizes)
    moved = sizes.get("moved", "BYTES")
    if moved == "weights":
        moved = f'inference_memory({m}).parts["weights"]' if m else "BYTES"
    return f'ch.collective("{scope.collective}", {moved}, "X", ' \
        f'mesh("X={sizes.get("chips", "N")}", {c}))'


_CACHE = re.compile(r"cache|кэш|缓存")
_WEIGHTS = re.compile(r"weight|вес|权重")
_PER_TOKEN = re.compile(r"per token|each token|keys and values|на токен|каждый токен|"
                        r"每个词元|每个 ?token|每词元")


def _bytes(low: str, c: str, m: str, sizes: dict[str, str], at: str) -> str:
    """The engine call for bytes: a model's KV cache (per token, or at the sentence's batch
    and context), its weights, a chip's memory, an op's bytes (the words in en, ru, zh)."""
    cache, weight = _CACHE.search(low), _WEIGHTS.search(low)
    if m and cache and _PER_TOKEN.search(low):
        return f"kv_bytes_per_token({m})"
    if m and cache and "batch" in sizes and "context" in sizes:
        memory = f'inference_memory({m}, batch={sizes["batch"]}, context={sizes["context"]})'
        return f"{memory}.total" if weight else f'{memory}.parts["kv cache"]'
    if m and weight and not cache:
        shared = re.search(r"per chip|each chip|per device", low) and "chips" in sizes
        return f'inference_memory({m}).parts["weights"]' + \
            (f' / {sizes["chips"]}' if shared else "")
    if c and re.search(r"\bholds\b|capacity|\bhbm\b", low) and \
            not re.search(r"weight|cache|model|param", low):
        return f'{c}.capacity("hbm")'
    if at and re.search(r"\bmoves\b|\breads\b|\bwrites\b", low):
        return f"{at}.op.bytes()"
    return ""


def scaffold_text(text: str, language: str, chapter_id: str, title: str,
                  book: str) -> tuple[str, str, list[Row]]:
    """(table text, claims.py text, rows) for a chapter scaffolded from ``text``."""
    rows = rows_of_text(text, language)
    if not rows:
        raise InputError("the text prints no number, relation or formula to check", "text")
    return _table(rows, language, chapter_id, title, book), \
        _claims(rows, title, _matmul(text, _Scope(regime=bool(_REGIME.search(text))))), rows


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


#: where each name a stub may call comes from
_IMPORTS = (("sympy", "sp", "import sympy as sp"),
            ("symroof", "chip", ""), ("symroof", "einsum", ""), ("symroof", "mesh", ""),
            ("symroof.claims", "Chapter", ""), ("symroof.claims", "definition", ""),
            ("symroof.claims", "measured", ""),
            ("symroof.models", "flops_per_token", ""),
            ("symroof.models", "inference_memory", ""),
            ("symroof.models", "kv_bytes_per_token", ""),
            ("symroof.models", "model", ""), ("symroof.models", "params", ""),
            ("symroof.models", "training_flops_per_token", ""))


_COLLECTIVE_CALL = re.compile(r'ch\.collective\("\w+", .*?, mesh\("[^"]*", \w+\)\)')


def _claims(rows: list[Row], title: str, scope: _Scope) -> str:
    chips = list(dict.fromkeys([*(scope.rl_chip,) * bool(scope.rl_chip),
                                *_named_in(rows, "chip")]))
    models = list(dict.fromkeys(_named_in(rows, "model")))
    made: dict[str, str] = {}  # each collective once, by a name of its own
    for r in rows:
        for call in _COLLECTIVE_CALL.findall(r.call):
            if re.search(r"\bBYTES\b|X=N\b|\bCONTEXT\b", call):
                continue  # what it moves or over how many chips is the user's to say
            kind = call.split('"')[1]
            made.setdefault(call, kind if kind not in made.values() else f"{kind}_{len(made)}")
    rows = [replace(r, call=_COLLECTIVE_CALL.sub(lambda m: made.get(m.group(0), m.group(0)),
                                                 r.call)) for r in rows]
    calls = " ".join([*(r.call for r in rows), *made])
    setup = [f"    {_var(n)} = chip({_toml(n)})" for n in chips if _var(n) in calls]
    setup += [f"    {_var(n)} = model({_toml(n)})" for n in models if _var(n) in calls]
    if scope.rl_chip and re.search(r"\b(rl|th)\b", calls):
        setup.append(f"    rl = ch.roofline(einsum(\"B D, D F -> B F\", "
                     f"{_toml(scope.rl_dtype)}), {_var(scope.rl_chip)})")
    if re.search(r"\bth\.", calls):
        setup.append('    th = ch.threshold(rl, "B", regime="B<<D,F")')
    for call, name in made.items():
        line = f"    {name} = {call}"
        setup.append(line if len(line) <= 100 else
                     f"    {name} = ch.collective(\n        {call.removeprefix('ch.collective(')}")
    body = []
    for r in rows:
        quote = r.quote if len(r.quote) <= 70 else r.quote[:67] + "..."
        what = CONCEPTS[r.concept] if not r.call or r.concept == "input" else \
            CONCEPTS[r.concept].split(":")[0]
        body += textwrap.wrap(f"{r.stated}: {what}", 100, initial_indent="        # ",
                              subsequent_indent="        #     ", break_long_words=False,
                              break_on_hyphens=False)
        body.append(f"        #   \u201c{quote}\u201d")
        if r.concept == "input" and r.call:
            body.append(f"        {r.key}={r.call},")
            continue
        if r.call:
            body.append(f"        #   {r.key}={r.call},")
        body.append(f"        {r.key}=measured({_toml('not derived yet: ' + r.concept)}),")
    code = "\n".join([*setup, *body])
    used = [(mod, name, line) for mod, name, line in _IMPORTS
            if name in ("Chapter", "measured") or re.search(rf"\b{name}\b", code)]
    imports = [line for _, _, line in used if line]
    for mod in ("symroof", "symroof.claims", "symroof.models"):
        names = [n for m_, n, line in used if m_ == mod and not line]
        if names:
            imports.append(f"from {mod} import {', '.join(names)}")
    if imports and imports[0].startswith("import sympy"):
        imports.insert(1, "")
    doc = textwrap.wrap(f"{title.replace(chr(34), chr(39))}: what the chapter derives, "
                        "scaffolded from the text (each stub: not derived yet).", 96)
    head = ['"""' + "\n".join(doc) + '"""', "",
            "from __future__ import annotations", "", *imports, "", "",
            "def claims(ch: Chapter) -> None:",
            *setup,
            "    # replace each stub with the engine's value; the comment guesses the concept",
            "    # and, where the text names a chip, a model or a collective, the engine call",
            "    ch.add("]
    return "\n".join([*head, *body, "    )", ""])


def _named_in(rows: list[Row], kind: str) -> list[str]:
    """The chips (or models) the rows' quotes name, in reading order."""
    return [name for quote in dict.fromkeys(r.quote for r in rows)
            for _, _, k, name in _mentions(quote) if k == kind]


__all__ = ["CONCEPTS", "Row", "rows_of_text", "scaffold_text"]
