"""A translation table read as data: a regular file of bounded size, TOML, no code.

>>> import pathlib, tempfile
>>> f = pathlib.Path(tempfile.mkdtemp()) / "en.toml"
>>> _ = f.write_text('[chapter]\\nid = "x"\\n')
>>> read_table(f)["chapter"]["id"]
'x'

Imports no SymPy: the parent of a fully cached run reads a chapter's ``cache`` setting here.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from ..core.errors import InputError

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
