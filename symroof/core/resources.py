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


def data_names(package: str, *folder: str) -> list[str]:
    """The names of the ``.toml`` files in a data folder of ``package``, sorted.

    >>> "megatron-lm" in data_names("symroof.plans", "frameworks")
    True
    """
    from importlib import resources
    here = resources.files(package).joinpath(*folder)
    return sorted(e.name.removesuffix(".toml") for e in here.iterdir()
                  if e.name.endswith(".toml"))


def data_text(package: str, folder: str, name: str, what: str) -> tuple[str, str]:
    """The text of the data file ``NAME.toml`` in ``folder`` of ``package`` and the place
    its errors name; an unknown name is an InputError that lists the known ones.

    >>> data_text("symroof.plans", "frameworks", "nope", "conventions")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: unknown conventions 'nope' (known: megatron-lm)
    """
    from importlib import resources
    entry = resources.files(package).joinpath(folder, f"{name}.toml")
    try:
        found = entry.is_file()
    except OSError:  # a name too long for a file name, say
        found = False
    if not found:
        raise InputError(f"unknown {what} {name!r} (known: "
                         f"{', '.join(data_names(package, folder))})")
    return entry.read_text("utf-8"), f"{package.replace('.', '/')}/{folder}/{name}.toml"
