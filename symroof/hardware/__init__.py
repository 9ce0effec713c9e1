"""The hardware catalogue: chips with a source for every figure (``chips.toml``), links that
carry their direction convention, and the topologies meshes map onto.

>>> from symroof.hardware.catalog import chip
>>> v5e = chip("tpu-v5e", hbm="B1")
>>> v5e.peak("bf16"), v5e.bandwidth("hbm"), v5e.ridge("bf16")
(197000000000000, 820000000000, 9850/41)
"""

# the chip a verb runs on when no --chip names one (the book's chip)
DEFAULT_CHIP = "tpu-v5e"
