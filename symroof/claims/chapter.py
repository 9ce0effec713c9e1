"""Chapters in the v2 form: one language-free ``claims.py``, one table per translation.

>>> import pathlib, tempfile, textwrap
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "claims.py").write_text(textwrap.dedent('''
...     import sympy as sp
...     def claims(ch):
...         ch.add(half=sp.Rational(1, 2), speed=ch.given("rate", 2) / 10**3)
... '''))
>>> _ = (folder / "en.toml").write_text(textwrap.dedent('''
...     [chapter]
...     id = "demo-en"
...     title = "Demo"
...     book = "A book"
...     [inputs]
...     rate = 3
...     ["Section one".half]
...     quote = "one half"
...     stated = "0.5"
...     ["Section one".speed]
...     quote = "3 ms"
...     stated = "3 ms"
... '''))
>>> [(c.id, c.kind, c.source.section) for c in build_chapter(folder)[0].claims]
[('half', 'number', 'Section one'), ('speed', 'number', 'Section one')]

``claims.py`` defines ``claims(ch)``: it builds what the chapter derives with the engine
(through ``ch``, a :class:`DerivationBuilder`, so steps are recorded) and adds every claim
once, as a value or a law (``ch.add(ridge=rl.ridge, ...)``); no lambdas. Inputs that differ
between translations (an example's chip count, a figure a problem uses) are read with
``ch.given(name, default)`` from the table's ``[inputs]``. Each translation table
(``ru.toml``, ``zh.toml``) holds, per section, the claims it prints: the quote, the stated
value (with its unit), and optionally an English statement, an erratum (``erratum``,
``right``), measurement ``evidence``, the ``meaning`` of a law, the ``figures`` the passage
prints, the claims a summary ``sums_up``, and ``assumes``. A table key that claims.py does
not add, or a claim the table neither states nor lists under ``omits``, is an input error
naming the file and key. The kind of a claim follows from its value and stated value.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact_number, parse_expr
from .consistency import find_conflicts
from .model import Claim, Derivation, DerivationBuilder, Erratum, Law, Source, tolerance_of, truth
from .stated import read

_META = ("chapter", "inputs")
_ROW = {"quote", "stated", "statement", "erratum", "right", "evidence", "meaning", "figures",
        "sums_up", "assumes", "tolerance", "known"}


@dataclass(frozen=True)
class Measured:
    """A claim the engine cannot derive: a measurement, with its evidence."""

    evidence: str = ""


@dataclass(frozen=True)
class Defined:
    """A claim that restates a definition (kind ``definition``, counted apart)."""

    value: Any


@dataclass(frozen=True)
class Assumed:
    """A value that rests on an input the text does not give, chosen because it
    reproduces the stated value: the claim reads UNVERIFIABLE, with what it gives."""

    value: Any
    assumption: str


def measured(evidence: str = "") -> Measured:
    """Mark a claim as a measurement (evidence here or in the table's row)."""
    return Measured(evidence)


def definition(value: Any) -> Defined:
    """Mark a claim as restating a definition."""
    return Defined(value)


def assumed(value: Any, assumption: str) -> Assumed:
    """Mark a value as resting on an input chosen to reproduce the text."""
    return Assumed(value, assumption)


def law(condition: Any, meaning: str = "") -> Law:
    """A yes/no law (``sp.degree(x, B) == 1``); the table's ``meaning`` may say more."""
    return Law(truth(condition, "law()"), meaning)


def within(value: Any, lo: Any, hi: Any, meaning: str = "") -> Law:
    """The law ``lo <= value <= hi``, saying where the value lies.

    >>> within(sp.Rational(5, 3), sp.Rational(9, 5), 2).meaning
    '1.67 outside [1.8, 2]'
    """
    from ..core.printer import approx
    v, a, b = (_rational(x) for x in (value, lo, hi))
    holds = truth((a <= v) & (v <= b), "within()")
    where = f"{approx(v)} {'in' if holds else 'outside'} [{approx(a)}, {approx(b)}]"
    return Law(holds, f"{meaning}: {where}" if meaning else where, approx(v, 6))


def _rational(x: Any) -> Any:
    """``x`` as an exact number: rationals and SymPy's finite real numbers as they are, a
    float as its shortest decimal, text through the formula parser."""
    if isinstance(x, sp.Basic) and not isinstance(x, sp.Rational):
        value = sp.sympify(x, strict=True)
        if not (value.is_number and value.is_finite and value.is_extended_real):
            raise InputError(f"needs finite real numbers, got {value}", "within()")
        return sp.Rational(str(value)) if value.is_Float else value
    return exact_number(x, "within()")


@dataclass
class Chapter(DerivationBuilder):
    """The builder ``claims(ch)`` receives: engine steps as in any derivation, plus the
    translation's inputs and the claims it adds."""

    inputs: Mapping[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def given(self, name: str, default: Any) -> Any:
        """The translation's input ``name`` (its ``[inputs]`` table), else ``default``."""
        self.used.add(name)
        return self.inputs.get(name, default)

    def add(self, **values: Any) -> None:
        """Add claims by id: each a value, a law, or a mark (measured, definition, ...)."""
        for key, value in values.items():
            if key in self.values:
                raise InputError("claim id added twice", f"claims.py: {key}")
            self.values[key] = value


def build_chapter(folder: Path) -> list[Derivation]:
    """One Derivation per translation table of a chapter folder, in file-name order, with
    the consistency findings of each text and across the translations attached."""
    folder = Path(folder)
    tables = sorted(p for p in folder.glob("*.toml"))
    if not (folder / "claims.py").is_file():
        raise InputError("a chapter folder needs claims.py", str(folder))
    if not tables:
        raise InputError("a chapter folder needs a translation table (ru.toml, ...)",
                         str(folder))
    module = _load(folder / "claims.py")
    built = [_translation(module, table) for table in tables]
    return find_conflicts(built)


@contextmanager
def _on_path(folder: Path) -> Iterator[None]:
    entry = str(folder.resolve())
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        if entry in sys.path:
            sys.path.remove(entry)


def _load(file: Path) -> ModuleType:
    name = f"symroof_chapter_{file.parent.name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InputError("cannot load as a Python module", str(file))
    module = importlib.util.module_from_spec(spec)
    with _on_path(file.parent):
        spec.loader.exec_module(module)
    if not callable(getattr(module, "claims", None)):
        raise InputError("defines no claims(ch) function", str(file))
    return module


MAX_TABLE_BYTES = 8 * 2**20


def read_table(file: Path) -> dict[str, Any]:
    """A translation table: a regular file of at most ``MAX_TABLE_BYTES``, valid TOML (a
    device, a FIFO or a symlink to one is refused before anything is read)."""
    where = str(file)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO does not block the open
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError("a table must be a regular file", where)
            data = handle.read(MAX_TABLE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", where) from None
    if len(data) > MAX_TABLE_BYTES:
        raise InputError(f"a table is at most {MAX_TABLE_BYTES} bytes", where)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", where) from None


def _translation(module: ModuleType, file: Path) -> Derivation:
    table = read_table(file)
    meta = table.get("chapter")
    if not isinstance(meta, dict):
        raise InputError("needs a [chapter] table (id, title, book, language, ...)", str(file))
    for key in ("id", "title", "book"):
        if not isinstance(meta.get(key), str):
            raise InputError(f"[chapter] needs {key} = \"...\"", str(file))
    language = str(meta.get("language", file.stem))
    src = Source(meta["book"], str(meta.get("chapter", "")), "", str(meta.get("seed", "")),
                 language)
    inputs = table.get("inputs", {})
    ch = Chapter(meta["id"], meta["title"], src, inputs=inputs)
    with _on_path(file.parent):
        module.claims(ch)
    for name in sorted(set(inputs) - ch.used):
        raise InputError("an input claims.py never reads", f"{file}: [inputs] {name}")
    rows = rows_of(table, file)
    omits = set(_strings(meta.get("omits", []), f"{file}: [chapter] omits"))
    prefix = str(meta.get("prefix", ""))
    for key in rows:
        if key not in ch.values:
            raise InputError("a claim claims.py does not add", f"{file}: {key}")
    for key in ch.values:
        if key not in rows and key not in omits:
            raise InputError("a claim of claims.py this table neither states nor omits",
                             f"{file}: {key}")
    claims = tuple(_claim(prefix + key, replace(src, section=section), row, ch.values[key],
                          f"{file}: {key}", prefix)
                   for key, (section, row) in rows.items())
    ch.assumptions.extend(_strings(meta.get("assumptions", []), f"{file}: [chapter] assumptions"))
    ch.notes.extend(_strings(meta.get("notes", []), f"{file}: [chapter] notes"))
    d = ch.build()
    known = tuple(sorted((str(k), str(v)) for k, v in meta.get("known", {}).items()))
    return replace(d, claims=claims, origin=str(file), known=known)


def rows_of(table: Mapping[str, Any], file: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    rows: dict[str, tuple[str, dict[str, Any]]] = {}
    for section, entries in table.items():
        if section in _META:
            continue
        if not isinstance(entries, dict):
            raise InputError("a section is a table of claims", f"{file}: {section}")
        for key, row in entries.items():
            where = f"{file}: {key}"
            if not isinstance(row, dict) or "stated" not in row or "quote" not in row:
                raise InputError("a claim row needs quote and stated", where)
            unknown = sorted(set(row) - _ROW)
            if unknown:
                raise InputError(f"unknown field {unknown[0]!r} (fields: "
                                 f"{', '.join(sorted(_ROW))})", where)
            if key in rows:
                raise InputError("claim stated twice", where)
            rows[key] = (section, row)
    return rows


def _strings(value: Any, where: str) -> tuple[str, ...]:
    """A table's list of strings, or an InputError naming the key."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("expected a list of strings", where)
    return tuple(value)


def _claim(id: str, src: Source, row: Mapping[str, Any], value: Any, where: str,
           prefix: str) -> Claim:
    options: dict[str, Any] = {}
    figures = row.get("figures", {})
    if not isinstance(figures, dict):
        raise InputError("figures is a table: figure = \"value as printed\"", where)
    options["figures"] = tuple(sorted((str(k), str(v)) for k, v in figures.items()))
    options["sums_up"] = tuple(prefix + str(k) for k in row.get("sums_up", []))
    stated = str(row["stated"])
    if isinstance(value, Measured):
        kind, evidence = "measurement", row.get("evidence", value.evidence)
        if not evidence:
            raise InputError("a measurement needs its evidence", where)
        options["evidence"] = evidence
        value = None
    elif isinstance(value, Defined):
        kind, value = "definition", value.value
    else:
        if isinstance(value, Assumed):
            options["assumed"] = value.assumption
            value = value.value
        kind = kind_of(stated, value, src.language)
    if isinstance(value, Law) and row.get("meaning"):
        value = replace(value, meaning=f"{row['meaning']}: {value.meaning}"
                        if value.meaning else str(row["meaning"]))
    if "erratum" in row:
        options["erratum"] = Erratum(str(row["erratum"]), str(row.get("right", "")))
    if "tolerance" in row:
        options["tolerance"] = tolerance_of(row["tolerance"], f"{where}: tolerance")
    if "assumes" in row:
        assumes = row["assumes"]
        options["assumptions"] = (assumes,) if isinstance(assumes, str) \
            else _strings(assumes, f"{where}: assumes")
    return Claim(id, src, str(row.get("statement", "")), str(row["quote"]), stated,
                 None, kind, value=value, **options)


def kind_of(stated: str, value: Any, language: str = "en") -> str:
    """The kind a claim's stated value and value give it.

    >>> kind_of("240", 1), kind_of("B > 240", None), kind_of("2*B", None), kind_of("pcie", "x")
    ('number', 'relation', 'expr', 'label')
    """
    if isinstance(value, Law):
        return "qualitative"
    if isinstance(value, str):
        return "label"
    if read(stated, language) is not None:
        return "number"
    if any(op in stated for op in ("<", ">", "=")):
        return "relation"
    try:
        expr = parse_expr(stated)
    except InputError:
        return "qualitative"
    return "number" if expr.is_Rational else "expr"
