"""symroof claims new: scaffold a chapter folder (claims.py with a worked claim, and its table).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "rooflines"
>>> sorted(p.name for p in scaffold(folder, "ru", "All About Rooflines", "A book"))
['claims.py', 'ru.toml']
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from .common import emit

LANGUAGE = re.compile(r"[a-z]{2,3}\Z")
CLAIMS = '''"""{title}: what the chapter derives, once (each translation: a table beside it)."""

from __future__ import annotations

from symroof import chip, einsum, sizes
from symroof.claims import Chapter, equals


def claims(ch: Chapter) -> None:
    # Derive with the engine through ch (ch.roofline, ch.threshold, ch.expansion, ...), then
    # add every claim once by id, as a value or a law (law, equals, within). A worked
    # example to replace with the text's own claims: a bf16 matmul on an H100 SXM. Sizes
    # are positive symbols: compare with symroof.sizes("B"), not sympy.Symbol("B").
    (B,) = sizes("B")
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("h100-sxm"))
    deep = ch.threshold(rl, "B", regime="B<<D,F")
    ch.add(ridge=rl.ridge,
           critical_batch=B > deep.asymptotic,
           small_batch=equals(ch.expansion(rl.intensity, "B<<D,F").leading, B,
                              "intensity tends to B"))
'''
TABLE = '''[chapter]
id = "{id}"
title = "{title}"
book = "{book}"
language = "{lang}"
prefix = "{lang}_"

# One table per claim, under its section, keyed by the id claims.py adds: the text's words
# (quote), the value it prints (stated, as the text writes it) and an English sentence the
# write-ups show for the claim (statement).
'''
EXAMPLE_ROWS = '''# The worked example's three claims:

["A worked example".ridge]
quote = "the ridge of a bf16 matmul on an H100 sits near 295 FLOPs per byte"
stated = "≈ 295"
statement = "The ridge point of an H100 SXM in bf16, in FLOPs per byte of HBM traffic."

["A worked example".critical_batch]
quote = "with B much smaller than D and F, the matmul is compute-bound above B = 295"
stated = "B > 295"
statement = "A bf16 matmul with B << D, F is compute-bound on an H100 SXM above this batch."

["A worked example".small_batch]
quote = "the intensity tends to B"
stated = "tends to B"
statement = "For B << D, F the matmul's arithmetic intensity tends to B."
'''


def register(verbs: Any) -> None:
    v = verbs.add_parser(
        "claims", help="scaffold a chapter of claims",
        description="Chapters are folders: a language-free claims.py and one table per "
                    "translation (ru.toml, zh.toml, ...). 'new' creates the folder, or adds a "
                    "table for another language to an existing one.",
        epilog="examples:\n  symroof claims new derivations/rooflines --lang ru\n"
               "  symroof claims new derivations/rooflines --lang zh --title \"ch. 1\"\n"
               "  symroof claims new mytext --from mytext.md --lang en",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = v.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = sub.add_parser("new", help="create a chapter folder with an empty table")
    new.add_argument("chapter", metavar="CHAPTER", help="the chapter folder to create")
    new.add_argument("--lang", required=True,
                     help="the translation's language: en, ru or zh (the languages whose "
                          "numbers the judge reads)")
    new.add_argument("--title", help="the chapter's title (default: the folder name)")
    new.add_argument("--book", default="", help="the book it is from")
    new.add_argument("--from", dest="text", metavar="TEXT",
                     help="a text (Markdown or plain) to scaffold from: a table row per "
                          "printed number, relation and formula, and a claims.py stub per row "
                          "with the engine call where the text names a chip, a model or a "
                          "collective (see docs/scaffold.md)")
    new.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(run=run_claims)


def run_claims(args: argparse.Namespace) -> int:
    from ..core.errors import InputError
    if not args.chapter.strip():
        raise InputError("empty path", "CHAPTER")
    folder = Path(args.chapter)
    if args.text is not None:
        if not args.text.strip():
            raise InputError("empty path", "--from")
        made = scaffold_from(folder, Path(args.text), args.lang, args.title or folder.name,
                             args.book)
    else:
        made = scaffold(folder, args.lang, args.title or folder.name, args.book)
    if args.json:
        emit({"folder": str(folder), "files": [str(p) for p in made]})
    else:
        for p in made:
            print(f"wrote {p}")
    return 0


def scaffold(folder: Path, lang: str, title: str, book: str) -> list[Path]:
    """Create ``folder/claims.py`` with a worked example (unless there) and
    ``folder/LANG.toml``: with the example's rows beside a new claims.py, else empty."""
    from ..core.errors import InputError
    from ..render.files import write
    from ..render.report import LANGUAGES
    if not LANGUAGE.match(lang):
        raise InputError(f"a language is two or three lower-case letters, got {lang!r}",
                         "--lang")
    if lang not in LANGUAGES:
        raise InputError(f"the judge reads numbers in {', '.join(LANGUAGES)}, not {lang!r}",
                         "--lang")
    for what, text in (("CHAPTER", str(folder)), ("--title", title), ("--book", book)):
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
            raise InputError("a control character (a newline, a tab, an escape) is not "
                             "allowed", what)
    if len(folder.name.encode()) > 200:
        raise InputError("the folder name is longer than 200 bytes", str(folder))
    if folder.exists() and not folder.is_dir():
        raise InputError("exists and is not a folder", str(folder))
    table = folder / f"{lang}.toml"
    if table.exists():
        raise InputError("this translation's table already exists", str(table))
    name = re.sub(r"[^a-z0-9_.-]+", "-", folder.name.lower()).strip("-") or "chapter"
    files = []
    code = folder / "claims.py"
    fresh = not code.exists()
    if fresh:
        files.append((code, CLAIMS.format(title=title.replace('"', "'"))))
    quote = {"id": f"{name}-{lang}", "title": title, "book": book, "lang": lang}
    header = TABLE.format(**{k: v.replace("\\", "\\\\").replace('"', '\\"')
                             for k, v in quote.items()})
    # the worked example's rows go with the worked claims.py; a table for an existing
    # claims.py starts empty, and verify names every claim it still lacks
    files.append((table, header + "\n" + EXAMPLE_ROWS if fresh else header))
    # all or nothing, with the umask's permissions (0644 under umask 022)
    write({path.name: text for path, text in files}, folder)
    return [p for p, _ in files]


def scaffold_from(folder: Path, text: Path, lang: str, title: str, book: str) -> list[Path]:
    """Create ``folder`` with a table of every value ``text`` prints and a claims.py stub
    per row (:mod:`symroof.claims.scaffold`); the folder must not hold a chapter yet."""
    from ..claims.scaffold import scaffold_text
    from ..core.errors import InputError
    from ..render.files import write
    if not text.is_file():  # a folder, a device or a FIFO is no text (and would block)
        raise InputError("is not a regular file" if text.exists() else
                         "cannot read: No such file or directory", str(text))
    try:
        data = text.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", str(text)) from None
    if len(data) > 2**20:
        raise InputError("a text of more than 1 MiB", str(text))
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", str(text)) from None
    if (folder / "claims.py").exists() or (folder / f"{lang}.toml").exists():
        raise InputError("already holds a chapter (claims.py or the table); scaffold into a "
                         "new folder", str(folder))
    if folder.exists() and not folder.is_dir():
        raise InputError("exists and is not a folder", str(folder))
    name = re.sub(r"[^a-z0-9_.-]+", "-", folder.name.lower()).strip("-") or "chapter"
    table, code, _ = scaffold_text(source, lang, f"{name}-{lang}", title,
                                   book or str(text.name))
    write({f"{lang}.toml": table, "claims.py": code}, folder)
    return [folder / f"{lang}.toml", folder / "claims.py"]
