"""Packages whose public names are imported on first use.

>>> getattr_, dir_ = lazy("symroof.core", {"InputError": "errors"})
>>> getattr_("InputError").__name__, dir_()
('InputError', ['InputError'])

A package lists each public name with the submodule that defines it; ``from package import
name`` then imports that submodule alone, so a derivation that needs one model does not pay
for the import of all of them. A name that is also its submodule's name (``mesh`` in
``parallel/mesh.py``) is imported by the package itself: loading the submodule would
otherwise leave the module under that name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, exports: Mapping[str, str],
         ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``'s ``exports`` (name ->
    submodule, relative to the package)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
