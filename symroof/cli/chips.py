"""symroof chips and symroof chip NAME: the catalogue.

>>> from symroof.cli.main import main
>>> main(["chips"])  # doctest: +ELLIPSIS
chip           bf16 peak    HBM B/s      HBM    ridge  title
a100-40gb        3.12e14    1.56e12     4e10   200.64  NVIDIA A100 40GB (SXM4)
...
0
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import chip_options, emit, overrides


def register(verbs: Any) -> None:
    c = verbs.add_parser("chips", help="list the chip catalogue",
                         description="List every chip of the catalogue with its headline "
                                     "figures.")
    c.add_argument("--catalog", metavar="FILE", help="a catalogue TOML file of your own")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=run_chips)

    one = verbs.add_parser("chip", help="show one chip with the source of every figure",
                           description="Show every figure of one chip, its alternatives and "
                                       "their sources.")
    one.add_argument("name", metavar="NAME", help="chip name, e.g. tpu-v5e")
    chip_options(one, with_name=False)
    one.add_argument("--json", action="store_true", help="machine-readable output")
    one.set_defaults(run=run_chip)


def run_chips(args: argparse.Namespace) -> int:
    from ..hardware.catalog import load_catalog
    from ..render.terminal import chip_json, chips_lines
    catalog = load_catalog(args.catalog)
    if args.json:
        emit({"catalog": catalog.path if args.catalog else "bundled",
               "chips": [chip_json(c, brief=True) for c in catalog.chips.values()]})
    else:
        print("\n".join(chips_lines(catalog)))
    return 0


def run_chip(args: argparse.Namespace) -> int:
    from ..hardware.catalog import load_catalog
    from ..render.terminal import chip_json, chip_lines
    found = load_catalog(args.catalog)[args.name].with_figures(overrides(args.set))
    if args.json:
        emit(chip_json(found))
    else:
        print("\n".join(chip_lines(found)))
    return 0
