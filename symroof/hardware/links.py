"""Links that carry their convention: one-way or bidirectional, per link, chip, host or node.

>>> from symroof.hardware.catalog import chip
>>> ici = chip("tpu-v5e").link("ici")
>>> ici.one_way, ici.bidirectional, ici.direction, ici.per
(45000000000, 90000000000, 'one-way', 'link')
>>> ici.latency
1/1000000
>>> chip("h100-sxm", nvlink="NV-H100").link("nvlink").one_way
450000000000

A formula asks for the figure it needs (``link.one_way``, ``link.bidirectional``); nobody
multiplies by 2 by hand. A bandwidth given for a link must say which convention it is in:
``parse_link_value("1.8e11 B/s bidi")`` is 1.8e11 bidirectional, a bare ``"1.8e11"`` is an
input error that names the conventions. Where no source gives a per-hop latency, the link's
latency is the named symbol ``alpha_<link>`` (a user can set ``<link>.latency``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.errors import InputError
from ..core.units import BANDWIDTH, parse_quantity

DIRECTIONS = ("one-way", "bidirectional")
PER = ("link", "chip", "host", "node")
SPELLINGS = {"one-way": "one-way", "oneway": "one-way", "one_way": "one-way",
             "uni": "one-way", "unidirectional": "one-way", "per-direction": "one-way",
             "bidi": "bidirectional", "bidirectional": "bidirectional", "both": "bidirectional"}


@dataclass(frozen=True)
class Link:
    """One link of a chip: its figure as the source states it, and how it is counted.

    ``value`` is in the ``direction`` convention, counted ``per`` link, chip, host or
    node; ``count`` is how many such links a chip has, where the source says.
    ``latency`` is seconds per hop: a sourced number, or the symbol ``alpha_<name>``.
    """

    name: str
    value: sp.Expr
    direction: str
    per: str
    source: str
    latency: sp.Expr
    latency_source: str = ""
    count: int | None = None
    note: str = ""

    @property
    def one_way(self) -> sp.Expr:
        """Bytes per second in one direction."""
        return self.value if self.direction == "one-way" else self.value / 2

    @property
    def bidirectional(self) -> sp.Expr:
        """Bytes per second of both directions summed."""
        return self.value * 2 if self.direction == "one-way" else self.value

    @property
    def per_link(self) -> sp.Expr | None:
        """One link's one-way rate: the figure itself when counted per link, a chip's
        figure over its ``count`` links; None where the source gives no count.

        >>> from symroof.hardware.catalog import chip
        >>> chip("h100-sxm").link("nvlink").per_link   # 450 GB/s over 18 links
        25000000000
        """
        if self.per == "link":
            return self.one_way
        if self.per == "chip" and self.count:
            return self.one_way / self.count
        return None

    @property
    def latency_known(self) -> bool:
        """Whether a source (or the user) gave the per-hop latency."""
        return bool(self.latency_source)

    def describe(self) -> str:
        """``4.5e10 B/s one-way per link`` and where the latency comes from.

        >>> from symroof.hardware.catalog import chip
        >>> chip("h100-sxm").link("nvlink").describe()  # doctest: +NORMALIZE_WHITESPACE
        'nvlink: 450000000000 B/s one-way per chip (18 links);
         latency 3/5000000 s per hop (NCCL-TUNE)'
        """
        count = f" ({self.count} links)" if self.count else ""
        lat = (f"latency {sp.sstr(self.latency)} s per hop ({self.latency_source})"
               if self.latency_known else f"latency {self.latency} (no source gives one)")
        return f"{self.name}: {sp.sstr(self.value)} B/s {self.direction} per {self.per}" \
               f"{count}; {lat}"


def latency_symbol(link: str) -> sp.Symbol:
    """The named per-hop latency of a link no source gives one for.

    >>> latency_symbol("nvlink")
    alpha_nvlink
    """
    return sp.Symbol(f"alpha_{link}", positive=True)


def parse_link_value(text: str, *, where: str | None = None) -> tuple[sp.Expr, str]:
    """A link bandwidth with its convention: ``"1.8e11 B/s bidi"`` -> (value, direction).

    >>> parse_link_value("1.8e11 B/s bidi")
    (180000000000, 'bidirectional')
    >>> parse_link_value("45 GB/s one-way")
    (45000000000, 'one-way')
    """
    words = text.split()
    if not words or words[-1].lower() not in SPELLINGS:
        raise InputError(f"a link bandwidth must state its convention, one-way or "
                         f"bidirectional (e.g. '{text.strip() or '4.5e10 B/s'} one-way' or "
                         f"'... bidi'); got {text!r}", where)
    direction = SPELLINGS[words[-1].lower()]
    value = parse_quantity(" ".join(words[:-1]), BANDWIDTH, where=where)
    return value, direction


def convention(text: str, *, where: str | None = None) -> str:
    """The canonical name of a direction convention (``bidi`` -> ``bidirectional``)."""
    key = text.strip().lower()
    if key not in SPELLINGS:
        raise InputError(f"direction must be one of {', '.join(DIRECTIONS)}, got {text!r}",
                         where)
    return SPELLINGS[key]


def split_per(text: str, where: str) -> tuple[str, str]:
    """A link bandwidth's trailing ``per chip`` (``link``, ``host``, ``node``), split off.

    >>> split_per("3.125e9 B/s one-way per chip", "set dcn")
    ('3.125e9 B/s one-way', 'chip')
    """
    words = text.split()
    if len(words) >= 2 and words[-2].lower() == "per":
        if words[-1].lower() not in PER:
            raise InputError(f"a link is counted per {', '.join(PER)}; got "
                             f"'per {words[-1]}'", where)
        return " ".join(words[:-2]), words[-1].lower()
    return text, ""
