"""``python -m symroof`` runs the command line."""

from .cli import main

raise SystemExit(main())
