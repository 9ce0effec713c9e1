"""Claims: what a text states next to what the engine derives, and the verdicts.

>>> from symroof.claims import Source, Derivation
>>> d = Derivation.begin("demo", "Demo", Source("A book"))
>>> d.claim("half", stated="0.5", statement="one half", quote="1/2", value=1 / 2).kind
'number'

The public face for a derivation author: the data model (``Derivation``, ``Source``,
``Erratum``, ``Law``), the chapter form (``Chapter``, ``build_chapter``) with its value
marks (``measured``, ``definition``, ``assumed``, ``law``, ``equals``, ``within``,
``quantity``, ``real``), and the verdicts (``Verdict``, ``verify``; ``load_derivations``
reads units by path or bundled name). Names load lazily: importing this package imports no
SymPy.
"""

from __future__ import annotations

from ..core.lazy import lazy_names

_EXPORTS = {
    **{name: "model" for name in ("Claim", "Conflict", "Derivation", "DerivationBuilder",
                                  "Erratum", "Law", "Source")},
    **{name: "chapter" for name in ("Chapter", "assumed", "build_chapter",
                                    "definition", "equals", "kind_of", "law", "measured",
                                    "quantity", "real",
                                    "within")},
    "Verdict": "rules",
    "stated": "stated",
    "Stated": "stated",
    "verify": "runner",
    "load_derivations": "runner",
    "find_conflicts": "consistency",
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
