"""Packages whose public names are imported on first use.

>>> names, getattr_, dir_ = lazy("symroof.core", {"errors": "InputError DerivationError"})
>>> names, getattr_("InputError").__name__
(['DerivationError', 'InputError'], 'InputError')

A package lists each submodule with the public names it defines; ``from package import
name`` then imports that submodule alone, so a derivation that needs one model does not pay
for the import of all of them. A name that is also its submodule's name (``mesh`` in
``parallel/mesh.py``) is imported by the package itself: loading the submodule would
otherwise leave the module under that name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

Face = tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]


def lazy(package: str, modules: Mapping[str, str]) -> Face:
    """``__all__``, ``__getattr__`` and ``__dir__`` for ``package``, whose ``modules`` (each
    relative to the package) define the space-separated public names."""
    return lazy_names(package, {name: module for module, names in modules.items()
                                for name in names.split()})


def lazy_names(package: str, exports: Mapping[str, str]) -> Face:
    """The same from a table of each public name and its submodule (relative to ``package``).

    >>> lazy_names("symroof.core", {"InputError": "errors"})[0]
    ['InputError']
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return sorted(exports), __getattr__, __dir__
