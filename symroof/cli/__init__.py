"""The command line: ``symroof VERB ...``; SymPy is imported only by the verbs that need it.

>>> main(["chip", "tpu-v5e", "--json"]) == 0  # doctest: +ELLIPSIS
{...}
True
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
