"""Arithmetic on measured numbers (issue 36, item 6): a step time and a transfer a text
measured, and what it computes from them; the stated values are in en.toml."""

from __future__ import annotations

from symroof import chip
from symroof.claims import Chapter, measured


def claims(ch: Chapter) -> None:
    step = measured("22.0 ms")
    moved = measured("1.2 GB")
    h100 = chip("h100-sxm")
    ch.add(
        # the measured number itself, and arithmetic on it
        step_time=step,
        tokens_per_second=32 / step,
        achieved_bandwidth=moved / step,
        # measured against the engine's figure: the share of HBM bandwidth reached
        hbm_share=moved / step / h100.bandwidth("hbm"),
        # a slip in the arithmetic stays a MISMATCH, and says it is on data
        two_steps=2 * step,
        # a unit of another dimension than the measured numbers give
        bandwidth_in_seconds=moved / step,
        # an evidence text that is not a number: a measurement, as before
        profile=measured("a profile of 12 runs"),
    )
