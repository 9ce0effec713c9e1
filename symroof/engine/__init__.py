"""The engine: ops and their costs, rooflines over named terms, thresholds, asymptotic
expansions, optima, sweeps, and the cost algebra that stays polynomial in the number of ops.
It never imports a topic model.

>>> from symroof.engine.ops import einsum
>>> from symroof.engine.rooflines import roofline
>>> from symroof.engine.thresholds import threshold
>>> from symroof.hardware.catalog import chip
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> threshold(rl, "B", regime="B<<D,F").asymptotic
9850/41
"""
