"""The exception family: every message names the culprit (file, line, formula, symbol).

>>> str(InputError("unknown chip 'tpu-v9'", where="chip"))
"chip: unknown chip 'tpu-v9'"
"""

from __future__ import annotations


class SymroofError(Exception):
    """Base of every error symroof raises on purpose.

    ``where`` names the place (a file and line, a command-line option, a claim id);
    the message says what was wrong there.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)

    def at(self, where: str) -> SymroofError:
        """The same error, located at ``where`` (prefixed to any place it already names)."""
        inner = f"{where}: {self.where}" if self.where else where
        return type(self)(self.message, where=inner)


class InputError(SymroofError):
    """Bad input: a formula, a unit, a name, a file. The command line exits 2."""


class DerivationError(SymroofError):
    """The engine cannot derive what was asked (no threshold exists, a solve failed)."""


def expect(value: object, kind: type | tuple[type, ...], what: str, where: str) -> None:
    """An InputError naming the argument unless ``value`` is a ``kind`` (never a bool where
    a number is expected).

    >>> expect("B D, D F -> B F", str, "an einsum spec", "einsum")
    >>> expect(None, str, "an einsum spec", "einsum")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: einsum: expected an einsum spec, got NoneType None
    """
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(f"expected {what}, got {type(value).__name__} {value!r:.40}", where)
