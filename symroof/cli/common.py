"""What the verbs share: one-line errors, --set and --chip options, JSON output."""

from __future__ import annotations

import argparse
import json
from typing import Any


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"symroof: error: {message} (see {self.prog} --help)\n")


def chip_options(p: argparse.ArgumentParser, with_name: bool = True) -> None:
    if with_name:
        p.add_argument("--chip", default="tpu-v5e", metavar="NAME",
                       help="chip from the catalogue (default tpu-v5e; see 'symroof chips')")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a figure for this run: hbm=8.1e11, hbm='810 GB/s', "
                        "bf16=9.1e14, or an alternative's label (hbm=B1)")
    p.add_argument("--catalog", metavar="FILE", help="a catalogue TOML file of your own")


def overrides(pairs: list[str]) -> dict[str, str]:
    from ..core.errors import InputError
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", "--set")
        out[key.strip()] = value.strip()
    return out


def emit(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))
