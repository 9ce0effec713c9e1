"""Rendering: write-ups (Markdown, LaTeX and PDF, HTML), figures and terminal views. It lays
out what was derived and never derives.

>>> from symroof.claims.runner import verify
>>> from symroof.claims.loader import load_derivations
>>> from symroof.render.report import render
>>> rendered = render(verify(load_derivations(["rooflines-ru"])), ["md"])
>>> [name for name in sorted(rendered.files) if name.endswith('.md')]
['index.md', 'rooflines-ru.md']

``pages`` lays out one derivation, ``report`` renders them all with the index, ``pdf``
compiles LaTeX, ``files`` writes atomically and compares for ``--check``, ``html`` adds
KaTeX, ``plots`` and ``regimes`` draw the figures, ``terminal`` the command-line views.
"""
