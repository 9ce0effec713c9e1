"""The command line: ``symroof VERB ...``; SymPy is imported only by the verbs that need it."""

from __future__ import annotations

from .main import main

__all__ = ["main"]
