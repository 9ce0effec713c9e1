"""Names the command line offers as choices, in a module that imports nothing heavy (its
``--help`` imports no SymPy).

>>> COLLECTIVES[:3]
('allgather', 'reducescatter', 'allreduce')
"""

from __future__ import annotations

# the collectives, by their canonical names (symroof.parallel.collectives.canonical_kind)
COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall", "permute")
