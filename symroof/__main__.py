"""``python -m symroof`` runs the command line."""

from .cli.main import console

console()
