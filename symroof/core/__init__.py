"""The bottom layer: errors, physical units, sizes and dtypes, the safe formula parser, steps,
time limits, the one printer and the table writer, results remembered by value, packages
imported on first use. It imports nothing above it.

>>> from symroof.core.parse import parse_expr
>>> from symroof.core.units import BANDWIDTH, parse_quantity
>>> parse_expr("2*B*D*F / 1.97e14"), parse_quantity("819 GB/s", BANDWIDTH)
(B*D*F/98500000000000, 819000000000)
"""
