"""Where the bundled derivations and templates are, in a checkout and after ``pip install``.

>>> bundled("derivations").is_dir()
True
"""

from __future__ import annotations

from pathlib import Path

from .errors import InputError

_PACKAGE = Path(__file__).resolve().parent.parent


def bundled(name: str) -> Path:
    """The folder ``name`` (``derivations`` or ``templates``): inside the installed package,
    or at the top of a source checkout."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise InputError(f"the bundled folder {name!r} is missing from this installation")
