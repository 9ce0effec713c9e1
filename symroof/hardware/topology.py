"""Topologies of the catalogue: TPU tori and GPU switch domains, with a scale-out network.

>>> from symroof.hardware.catalog import chip
>>> pod = chip("tpu-v5e").topology()
>>> pod.name, pod.kind, pod.shape, pod.link, pod.scale_out, pod.chips_per_host
('tpu-v5e-pod', 'torus', (16, 16), 'ici', 'dcn', 8)
>>> pod.wraps(16, 0), pod.wraps(8, 0)
(True, False)
>>> node = chip("h100-sxm").topology()
>>> node.kind, node.shape, node.link, node.scale_out
('switch', (8,), 'nvlink', 'ib')

A torus has one ICI ring per dimension; an axis wraps around only where the source says
(v5e/v6e: on axes that span a whole dimension of 16; v4/v5p: on multiples of 4, the full
cubes). A switch domain (NVSwitch: 8 GPUs, or 72 in an NVL72) gives every GPU its full
NVLink bandwidth to every other; past the domain, the scale-out network (InfiniBand, DCN)
takes over. Topologies are data in ``chips.toml`` under ``[topologies.NAME]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact

if TYPE_CHECKING:
    from .catalog import Chip

TOPOLOGY_KINDS = ("torus", "switch")
WRAPAROUND = ("full", "multiple", "none")


@dataclass(frozen=True)
class Topology:
    """How the chips of one system are wired, as its source describes it."""

    name: str
    title: str
    chips: tuple[str, ...]
    kind: str
    shape: tuple[int, ...]
    link: str
    source: str
    wraparound: str = "none"
    wrap_multiple: int = 0
    host: tuple[int, ...] = ()
    scale_out: str | None = None
    note: str = ""
    switches: int = 0  # the switches of a switch domain, where the source counts them

    @property
    def size(self) -> int:
        """Chips in one pod or switch domain."""
        return prod(self.shape)

    @property
    def chips_per_host(self) -> int:
        """Chips behind one host (or node): what a per-host figure is shared by."""
        return prod(self.host) if self.host else 1

    def wraps(self, size: sp.Expr | int, dim: int) -> bool:
        """Whether a ring of ``size`` chips along torus dimension ``dim`` wraps around
        (False for a size that is still a symbol: the conservative choice)."""
        n = exact(size)
        if self.kind != "torus" or not n.is_Integer or int(n) < 2:
            return False
        if self.wraparound == "full":
            return int(n) == self.shape[dim]
        if self.wraparound == "multiple":
            return int(n) % self.wrap_multiple == 0
        return False

    def describe(self) -> str:
        """One line: ``tpu-v5e-pod: torus 16x16 over ici, ...``."""
        shape = "x".join(map(str, self.shape))
        wrap = {"full": "wraps on full axes", "none": "no wraparound",
                "multiple": f"wraps on multiples of {self.wrap_multiple}"}[self.wraparound] \
            if self.kind == "torus" else "full bandwidth between any two chips"
        out = f"{self.name}: {self.kind} {shape} over {self.link} ({wrap})"
        if self.switches:
            out += f" on {self.switches} switches"
        if self.host:
            out += f", {self.chips_per_host} chips per host"
        if self.scale_out:
            out += f", then {self.scale_out}"
        return out + f"; source {self.source}"


def build_topologies(data: Any, chips: Mapping[str, Chip], sources: Mapping[str, str],
                     where: str) -> dict[str, Topology]:
    """Read the ``[topologies.NAME]`` tables, checking every chip, link and source."""
    if not isinstance(data, dict):
        raise InputError("[topologies] must be a table", where)
    return {name: _topology(name, body, chips, sources, f"{where}: topologies.{name}")
            for name, body in data.items()}


def _topology(name: str, body: Any, chips: Mapping[str, Chip], sources: Mapping[str, str],
              at: str) -> Topology:
    if not isinstance(body, dict):
        raise InputError("expected a table", at)
    for key in ("chips", "kind", "shape", "link", "source"):
        if key not in body:
            raise InputError(f"missing {key!r}", at)
    kind = body["kind"]
    if kind not in TOPOLOGY_KINDS:
        raise InputError(f"kind must be one of {', '.join(TOPOLOGY_KINDS)}, got {kind!r}", at)
    shape = _ints(body["shape"], f"{at}.shape")
    host = _ints(body.get("host", []), f"{at}.host", allow_empty=True)
    wrap = body.get("wraparound", "none")
    if wrap not in WRAPAROUND:
        raise InputError(f"wraparound must be one of {', '.join(WRAPAROUND)}, got {wrap!r}",
                         at)
    multiple = body.get("wrap_multiple", 0)
    if wrap == "multiple" and (not isinstance(multiple, int) or multiple < 2):
        raise InputError("wraparound 'multiple' needs wrap_multiple, an integer >= 2", at)
    if body["source"] not in sources:
        raise InputError(f"source {body['source']!r} is not in [sources]", at)
    names = body["chips"]
    if not isinstance(names, list) or not names:
        raise InputError("'chips' must be a non-empty list of chip names", at)
    for c in names:
        if c not in chips:
            raise InputError(f"unknown chip {c!r}", f"{at}.chips")
        for link in (body["link"], body.get("scale_out")):
            if link is not None and link not in chips[c].links:
                raise InputError(f"chip {c!r} has no link {link!r}", at)
    switches = body.get("switches", 0)
    if not isinstance(switches, int) or isinstance(switches, bool) or switches < 0 or \
            (switches and kind != "switch"):
        raise InputError(f"switches is a positive whole number, for a switch domain; got "
                         f"{switches!r}", at)
    return Topology(name, str(body.get("title", name)), tuple(names), kind, shape,
                    str(body["link"]), str(body["source"]), wrap, int(multiple), host,
                    body.get("scale_out"), str(body.get("note", "")), switches)


def _ints(value: Any, at: str, allow_empty: bool = False) -> tuple[int, ...]:
    if not isinstance(value, list) or (not value and not allow_empty) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
        raise InputError(f"expected a list of positive integers, got {value!r}", at)
    return tuple(value)
