"""Shared inputs of the Russian ML-systems appendix «Основы алгоритмов» (seed 002)."""

from __future__ import annotations

from symroof.claims.model import Source
from symroof.hardware.catalog import Chip, chip

SEED = "002_1b672fc5051ea3f6"
BOOK = "ML-systems appendix «Основы алгоритмов» (Russian)"


def source(section: str = "") -> Source:
    """The appendix as a source; ``section`` is the original-language heading."""
    return Source(BOOK, chapter="appendix", section=section, seed=SEED, language="ru")


def a100_vendor() -> Chip:
    """A100 80GB SXM with the vendor's figures (312 TFLOP/s fp16, 2039 GB/s): the chip whose
    critical intensity is the text's 153.0 FLOP/byte."""
    return chip("a100-80gb", hbm="NV-A100", fp16="NV-A100")
