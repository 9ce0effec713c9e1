"""What the verbs share: one-line errors, --set and --chip options, JSON output.

>>> overrides(["hbm=B1", "bf16=9.1e14"])
{'hbm': 'B1', 'bf16': '9.1e14'}
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from ..hardware import DEFAULT_CHIP


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"symroof: error: {message} (see {self.prog} --help)\n")


def chip_options(p: argparse.ArgumentParser, with_name: bool = True) -> None:
    if with_name:
        p.add_argument("--chip", default=DEFAULT_CHIP, metavar="NAME",
                       help=f"chip from the catalogue (default {DEFAULT_CHIP}; see "
                            "'symroof chips')")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a figure for this run: hbm=8.1e11, hbm='810 GB/s', "
                        "bf16=9.1e14, or an alternative's label (hbm=B1)")
    p.add_argument("--catalog", metavar="FILE", help="a catalogue TOML file of your own")


def defaulted_chip(chip: str | None) -> str:
    """Said after the chip's name when no --chip chose it.

    >>> defaulted_chip(None), defaulted_chip("h100-sxm")
    (' (the default chip; --chip NAME for another)', '')
    """
    return " (the default chip; --chip NAME for another)" if chip is None else ""


def kernel_options(p: argparse.ArgumentParser, attention_default: str) -> None:
    """How a model step's kernels run: ``--attention``, ``--causal``, ``--activations``."""
    p.add_argument("--attention", choices=("flash", "materialised"),
                   help="the attention kernel: flash keeps the scores on chip (only the softmax "
                        "statistics stored for training), materialised writes them to HBM "
                        f"(default: {attention_default})")
    p.add_argument("--causal", action="store_true",
                   help="count prefill's attention FLOPs for the causal part, T (T + 1) / 2 of "
                        "the T^2 pairs (default: dense, as PaLM's MFU counts them)")
    p.add_argument("--activations", default="hbm", choices=("hbm", "on-chip"),
                   help="activations between kernels through HBM (default) or kept on chip "
                        "(L2/VMEM): HBM then moves the weights and the KV cache alone")


def choices_option(p: Any, scope: str) -> None:
    """``--choices``: the named modelling choices a text makes, for ``scope`` (what they
    cost), on a parser or an argument group."""
    p.add_argument("--choices", metavar="CHOICES",
                   help=f"{scope}: cost the collectives as a text does: 'book' (the leading "
                        "term in the axis size, no latency) or FIELD=VALUE pairs, e.g. "
                        "'collectives=leading,latency=off,link_alpha=one_way' (default: exact)")


def exact_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--exact", action="store_true",
                   help="text views: each time, byte count and rate as its exact form beside "
                        "its decimal (--json always has both)")


def overrides(pairs: list[str]) -> dict[str, str]:
    from ..core.errors import InputError
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", "--set")
        if key.strip() in out:
            raise InputError(f"{key.strip()!r} is given twice", "--set")
        out[key.strip()] = value.strip()
    return out


def emit(data: Any) -> None:
    """Strict JSON on stdout: a NaN or an infinity is written as null."""
    print(json.dumps(_strict(data), indent=2, ensure_ascii=False, allow_nan=False))


def _strict(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _strict(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_strict(v) for v in data]
    return data


def color() -> bool:
    """Colour on a terminal, unless NO_COLOR is set (https://no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


STEPS = {"parse": "parsing the formulas", "asymptotics": "the expansion in the regime",
         "thresholds": "solving for the threshold", "rooflines": "the roofline",
         "ops": "building the op", "optimize": "solving the optimum",
         "commands/optimize": "evaluating the optimum", "printer": "printing the results",
         "catalog": "reading the catalogue", "mesh": "building the mesh",
         "sharding": "reading the array", "collectives": "costing the collective"}


def timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                   help="limit of the whole derivation (default 30)")


def bounded(seconds: float, run: Callable[[], int]) -> int:
    """``run()`` within ``seconds``; past them, an error naming the step that ran out."""
    import traceback

    from ..claims.runner import check_timeout
    from ..core.errors import DerivationError
    from ..core.timelimits import TimeLimit, time_limit
    check_timeout(seconds)
    try:
        with time_limit(seconds):
            return run()
    except TimeLimit as exc:
        step = "the derivation"
        for frame in traceback.extract_tb(exc.__traceback__):
            path = frame.filename.replace("\\", "/")
            name = path.rsplit("/", 1)[-1].removesuffix(".py")
            folder = path.rsplit("/", 2)[-2] if path.count("/") > 1 else ""
            if frame.name == "<module>" or "importlib" in path:
                step = "loading the modules"  # an import under way, whatever step asked
            elif "/symroof/" in path and (f"{folder}/{name}" in STEPS or name in STEPS):
                step = STEPS.get(f"{folder}/{name}", STEPS.get(name, step))
        raise DerivationError(f"no result within {seconds:g} s ({step} ran out of time)",
                              "--timeout") from None


def count(text: str) -> int:
    """A positive whole number of a flag (an argparse type), below 10**18."""
    if len(text.strip()) > 18:  # more tokens or chips than any model or system holds
        raise argparse.ArgumentTypeError(f"expected a whole number below 10**18, got "
                                         f"{text[:20]!r}... ({len(text)} characters)")
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value
