"""Meshes: named logical axes mapped onto a chip's topology.

>>> m = mesh("X=8,Y=4", "tpu-v5e")
>>> x = m.axis("X")
>>> x.size, x.kind, x.link.name, x.wraps, x.bandwidth, x.latency
(8, 'torus', 'ici', False, 45000000000, 1/1000000)
>>> mesh("X=16", "tpu-v5e").axis("X").wraps
True
>>> g = mesh("node=2,gpu=8", "h100-sxm")
>>> [(a.name, a.kind, a.link.name, a.bandwidth) for a in g.axes.values()]
[('node', 'scale-out', 'ib', 50000000000), ('gpu', 'switch', 'nvlink', 450000000000)]

On a torus the axes take its dimensions in order (``X`` the first, ``Y`` the second); an
axis wraps around only where the topology says, and an axis larger than its dimension
spans the next ones too (``X=256`` on a 16x16 pod: two rings gathering at once). On a GPU
system the last axes fill the NVLink switch domain and the first ones go over the
scale-out network; an axis larger
than what is left of the domain is hierarchical (its ``parts``: inside the domain, then
across it). ``NAME=SIZE@LINK`` puts an axis on a named link (``pod=2@dcn``). A size may
be a symbol (``X=N``); where a symbol's fit cannot be checked, the mesh records the
assumption (a line without wraparound, unless the mesh says ``X=N:wraps``). ``bandwidth``
is one-way bytes per second per chip on the axis (per link on a torus ring); ``latency`` is
seconds per hop, a sourced number or ``alpha_<link>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from math import prod

import sympy as sp

from ..core import tables as tb
from ..core.choices import Choices
from ..core.errors import InputError
from ..core.parse import exact, parse_assignments, parse_expr, size_name
from ..hardware.catalog import Chip, chip
from ..hardware.links import Link
from ..hardware.topology import Topology

AXIS_KINDS = ("ring", "torus", "switch", "scale-out")
MAX_CHIPS = 10**7


@dataclass(frozen=True)
class Axis:
    """One mesh axis: its size and the network its collectives run on.

    ``kind`` is ``torus`` (a ring along a torus dimension), ``ring`` (a ring of any
    link), ``switch`` (all-to-all at full per-chip bandwidth) or ``scale-out`` (a
    switched network past the pod or node). ``wraps`` says whether a ring closes;
    ``bidirectional`` whether a ring's collectives use both directions. A hierarchical axis
    lists its ``parts``, outermost first.
    """

    name: str
    size: sp.Expr
    kind: str
    link: Link
    bandwidth: sp.Expr
    latency: sp.Expr
    wraps: bool = False
    bidirectional: bool = True
    parts: tuple[Axis, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", exact(self.size))
        if self.kind not in AXIS_KINDS:
            raise InputError(f"axis kind must be one of {', '.join(AXIS_KINDS)}, got {self.kind!r}",
                             f"axis {self.name}")

    @property
    def ring(self) -> bool:
        return self.kind in ("ring", "torus")

    def stages(self) -> tuple[Axis, ...]:
        """The networks a collective over this axis crosses, outermost first."""
        return self.parts or (self,)

    def describe(self) -> str:
        """``X=8: torus ring over ici, no wraparound, 4.5e10 B/s one way, 1e-6 s per hop``."""
        if self.parts:
            return f"{self.name}={self.size}: " + "; then ".join(
                f"{p.size} chips, " + p.describe().split(": ", 1)[1] for p in self.parts)
        shape = {"torus": "ring on the torus", "ring": "ring", "switch": "switch",
                 "scale-out": "scale-out network"}[self.kind]
        wrap = (", wraps around" if self.wraps else ", no wraparound") if self.ring else ""
        way = "" if self.bidirectional or not self.ring else ", one direction"
        return (f"{self.name}={self.size}: {shape} over {self.link.name}{wrap}{way}, "
                f"{sp.sstr(self.bandwidth)} B/s one way per chip, latency "
                f"{sp.sstr(self.latency)} s per hop")


@dataclass(frozen=True, repr=False)
class Mesh(tb.RichView):
    """Named axes over the chips of one topology. ``assumptions`` says what could not be
    checked (a symbolic size assumed to fit)."""

    chip: Chip
    axes: Mapping[str, Axis]
    topology: Topology | None = None
    assumptions: tuple[str, ...] = ()
    spec: str = field(default="", compare=False)

    def _view(self) -> tuple[str, tb.Table]:
        rows = tuple((tb.cell(tb.code(a.name)), tb.cell(tb.math(a.size)),
                      tb.cell(tb.text(a.describe().split(": ", 1)[1])))
                     for a in self.axes.values())
        title = f"mesh {self.spec or ', '.join(self.axes)} on {self.chip.name}"
        return title, tb.Table((tb.Column("axis"), tb.Column("size"),
                                tb.Column("network")), rows)

    def axis(self, name: str) -> Axis:
        """The axis ``name``; an input error names the mesh's axes otherwise."""
        if name not in self.axes:
            raise InputError(f"unknown mesh axis {name!r} (axes: {', '.join(self.axes)})",
                             self.spec or None)
        return self.axes[name]

    @property
    def devices(self) -> sp.Expr:
        """Chips in the mesh: the product of the axis sizes."""
        return sp.Mul(*(a.size for a in self.axes.values()))

    def resolve(self, axes: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """Axis names from ``"X"``, ``"XY"``, ``"X,Y"`` or a list.

        >>> mesh("X=8,Y=4", "tpu-v5e").resolve("XY")
        ('X', 'Y')
        """
        if isinstance(axes, str):
            text = axes.strip()
            names = [p.strip() for p in text.split(",")] if "," in text else \
                [text] if text in self.axes else split_axes(text, tuple(self.axes)) or [text]
        else:
            names = list(axes)
        if not names or any(not n for n in names):
            raise InputError(f"no axes in {axes!r} (axes: {', '.join(self.axes)})")
        for n in names:
            self.axis(n)
        if len(set(names)) != len(names):
            raise InputError(f"an axis appears twice in {axes!r}")
        return tuple(names)

    def under(self, choices: Choices) -> Mesh:
        """The mesh on the chip as ``choices`` take it: another edition of the chip table
        gives its links' figures (bandwidth and hop latency), the axes stay as they are.

        >>> from symroof.core.choices import Choices
        >>> m = mesh("X=8", "tpu-v5e")
        >>> m.axis("X").bandwidth, m.under(Choices(edition="GC-v5e")).axis("X").bandwidth
        (45000000000, 50000000000)
        """
        if not choices.edition:
            return self
        the_chip = self.chip.under(choices)
        return replace(self, chip=the_chip, axes={
            n: _on_chip(a, the_chip, self.topology) for n, a in self.axes.items()})

    def with_axis(self, name: str, **changes: object) -> Mesh:
        """A copy with one axis changed (``wraps=True``, ``bidirectional=False``)."""
        axes = dict(self.axes)
        axes[name] = replace(self.axis(name), **changes)  # type: ignore[arg-type]
        return replace(self, axes=axes)


def split_axes(text: str, known: tuple[str, ...]) -> list[str]:
    """``"XY"`` into ``["X", "Y"]`` by the mesh's axis names, longest first; [] if it
    does not split."""
    out: list[str] = []
    rest = text
    while rest:
        match = next((k for k in sorted(known, key=len, reverse=True) if rest.startswith(k)),
                     None)
        if match is None:
            return []
        out.append(match)
        rest = rest[len(match):]
    return out


def mesh(spec: str | Mapping[str, int | str | sp.Expr], on: Chip | str, *,
         topology: str | None = None) -> Mesh:
    """A mesh from ``"X=8,Y=4"`` (or ``{"X": 8, "Y": 4}``) on a chip (or chip name).

    >>> mesh("X=N", "tpu-v5e").axis("X").size
    N
    """
    where = f"mesh {spec!r}" if isinstance(spec, str) else "mesh"
    if isinstance(spec, str) and any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in spec):
        raise InputError("a control character (a newline, a tab, an escape) is not allowed",
                         where)
    the_chip = chip(on) if isinstance(on, str) else on
    if isinstance(spec, str):
        pairs = {size_name(k, where): v for k, v in parse_assignments(spec, where=where).items()}
    elif isinstance(spec, Mapping):
        pairs = {size_name(k, where): str(v) for k, v in spec.items()}
    else:
        raise InputError(f"expected a mesh such as 'X=8,Y=4' or {{'X': 8}}, got "
                         f"{type(spec).__name__}", where)
    if not pairs:
        raise InputError("a mesh needs at least one axis, e.g. 'X=8,Y=4'", where)
    sizes: dict[str, tuple[sp.Expr, str | None]] = {}
    closed: set[str] = set()
    for name, raw in pairs.items():
        raw, colon, flag = raw.partition(":")
        if colon:
            if flag.strip() != "wraps":
                raise InputError(f"axis {name}: unknown mark {flag.strip()!r} after ':' (the "
                                 f"one mark is 'wraps': {name}=N:wraps)", where)
            closed.add(name)
        size_text, at, link = raw.partition("@")
        size = parse_expr(size_text, where=f"{where}: axis {name}")
        if size.free_symbols and not size.is_Symbol:
            raise InputError(f"axis {name} has size {size_text!r}: give a whole number or "
                             f"one symbol", where)
        if size.is_Integer and size > MAX_CHIPS:
            raise InputError(f"axis {name} has size {size_text!r}: more chips than any "
                             f"system holds (at most {MAX_CHIPS})", where)
        if size.is_number and (not size.is_Integer or size < 1):
            raise InputError(f"axis {name} has size {size_text!r}: a mesh axis needs a "
                             f"whole number of chips, at least 1", where)
        sizes[name] = (size, link.strip() if at else None)
    chips = prod(int(size) for size, _ in sizes.values() if size.is_Integer)
    if chips > MAX_CHIPS:
        raise InputError(f"{chips:.3g} chips in all: more chips than any system holds (at "
                         f"most {MAX_CHIPS})", where)
    topo = the_chip.topology(topology)
    builder = _torus if topo.kind == "torus" else _switch
    axes, notes = builder(the_chip, topo, sizes, where)
    notes = [*_closed(axes, closed, topo, notes, where), *the_chip.rounded()]
    ordered = {name: axes[name] for name in pairs}
    return Mesh(the_chip, ordered, topo, tuple(notes), spec if isinstance(spec, str) else "")


def _closed(axes: dict[str, Axis], closed: set[str], topo: Topology, notes: list[str],
            where: str) -> list[str]:
    """Axes the user says wrap (``X=N:wraps``): a symbolic ring closes, as asked; a
    numeric one must close on the topology already."""
    for name in sorted(closed):
        axis = axes[name]
        if not axis.ring:
            raise InputError(f"axis {name} is not a ring of the torus: it cannot wrap", where)
        if axis.size.is_Integer:
            if not axis.wraps:
                raise InputError(f"axis {name}={axis.size} does not wrap on {topo.name}: a "
                                 f"ring closes over a whole dimension", where)
            continue
        axes[name] = replace(axis, wraps=True)
        notes = [f"{name} = {axis.size} is assumed to be a whole dimension of {topo.name} "
                 f"with wraparound (as the mesh says)" if n.startswith(f"{name} = ") else n
                 for n in notes]
    return notes


def _link_axis(the_chip: Chip, topo: Topology, name: str, size: sp.Expr, link_name: str,
               kind: str, where: str) -> Axis:
    try:
        link = the_chip.link(link_name)
    except InputError as exc:
        raise InputError(exc.message, where) from None
    return Axis(name, size, kind, link, _per_chip(link, kind, topo), link.latency)


def _per_chip(link: Link, kind: str, topo: Topology | None) -> sp.Expr:
    """One chip's one-way bytes per second over ``link`` on an axis of ``kind``."""
    if kind in ("ring", "torus") or link.per == "chip":
        return link.one_way
    if link.per == "link":
        return link.one_way * (link.count or 1)
    # per host or node: the chips behind it share it
    return link.one_way / (topo.chips_per_host if topo is not None else 1)


def _on_chip(axis: Axis, the_chip: Chip, topo: Topology | None) -> Axis:
    """``axis`` with its link's figures (and its parts') as ``the_chip`` gives them."""
    link = the_chip.link(axis.link.name)
    return replace(axis, link=link, bandwidth=_per_chip(link, axis.kind, topo),
                   latency=link.latency,
                   parts=tuple(_on_chip(p, the_chip, topo) for p in axis.parts))


def _explicit(the_chip: Chip, topo: Topology, name: str, size: sp.Expr, link: str,
              where: str) -> Axis:
    kind = "switch" if (link == topo.link and topo.kind == "switch") else "scale-out"
    if link == topo.link and topo.kind == "torus":
        kind = "ring"
    return _link_axis(the_chip, topo, name, size, link, kind, where)


def _torus(the_chip: Chip, topo: Topology, sizes: Mapping[str, tuple[sp.Expr, str | None]],
           where: str) -> tuple[dict[str, Axis], list[str]]:
    axes: dict[str, Axis] = {}
    notes: list[str] = []
    dim = 0
    for name, (size, link) in sizes.items():
        if link is not None:
            axes[name] = _explicit(the_chip, topo, name, size, link, where)
            continue
        if size == 1:  # a one-chip axis takes no dimension
            axes[name] = _link_axis(the_chip, topo, name, size, topo.link, "torus", where)
            continue
        if dim >= len(topo.shape):
            raise InputError(f"the mesh has more ICI axes than the {topo.name} torus has "
                             f"dimensions ({len(topo.shape)}); put an axis on the scale-out "
                             f"network with {name}={size}@{topo.scale_out or 'dcn'}", where)
        if size.is_Integer and int(size) > topo.shape[dim]:
            axes[name], dim = _spanning(the_chip, topo, name, int(size), dim, where)
            continue
        if not size.is_Integer:
            notes.append(f"{name} = {size} is assumed to fit dimension {dim + 1} of "
                         f"{topo.name} ({topo.shape[dim]} chips) without wraparound")
        axis = _link_axis(the_chip, topo, name, size, topo.link, "torus", where)
        axes[name] = replace(axis, wraps=topo.wraps(size, dim))
        dim += 1
    return axes, notes


def _spanning(the_chip: Chip, topo: Topology, name: str, size: int, dim: int,
              where: str) -> tuple[Axis, int]:
    """An axis laid over several torus dimensions: one ring per dimension, gathered at once."""
    parts: list[Axis] = []
    rest = size
    while rest > 1:
        if dim >= len(topo.shape) or rest % min(rest, topo.shape[dim]):
            shape = "x".join(map(str, topo.shape))
            raise InputError(f"axis {name}={size} does not fit what is left of the "
                             f"{topo.name} torus ({shape}): the mesh is larger than the "
                             f"topology", where)
        take = min(rest, topo.shape[dim])
        ring = _link_axis(the_chip, topo, name, sp.Integer(take), topo.link, "torus", where)
        parts.append(replace(ring, wraps=topo.wraps(take, dim)))
        rest //= take
        dim += 1
    return replace(parts[0], size=sp.Integer(size), parts=tuple(parts)), dim


def _switch(the_chip: Chip, topo: Topology, sizes: Mapping[str, tuple[sp.Expr, str | None]],
            where: str) -> tuple[dict[str, Axis], list[str]]:
    axes: dict[str, Axis] = {}
    notes: list[str] = []
    total = prod(int(s) for s, link in sizes.values() if s.is_Integer and link is None)
    if topo.scale_out is None and total > topo.size:
        raise InputError(f"the mesh has {total} chips but the {topo.name} topology holds "
                         f"{topo.size} and the catalogue gives no scale-out network for it: "
                         f"the mesh is larger than the topology", where)
    room = topo.size
    for name, (size, link) in reversed(list(sizes.items())):
        if link is not None:
            axes[name] = _explicit(the_chip, topo, name, size, link, where)
            continue
        if not size.is_Integer:
            kind = "switch" if room > 1 else "scale-out"
            notes.append(f"{name} = {size} is assumed to fit " + (
                f"the {topo.size}-chip {topo.link} domain" if room > 1 else
                f"the {topo.scale_out} network"))
            room = 1
            axes[name] = _on(the_chip, topo, name, size, kind, where)
            continue
        n = int(size)
        if n <= room:
            axes[name] = _link_axis(the_chip, topo, name, size, topo.link, "switch", where)
            room //= n
        elif room > 1 and n % room == 0:
            inner = _link_axis(the_chip, topo, name, room, topo.link, "switch", where)
            outer = _on(the_chip, topo, name, sp.Integer(n // room), "scale-out", where)
            axes[name] = replace(outer, size=size, parts=(outer, inner))
            room = 1
        else:
            room = 1
            axes[name] = _on(the_chip, topo, name, size, "scale-out", where)
    return axes, notes


def _on(the_chip: Chip, topo: Topology, name: str, size: sp.Expr, kind: str,
        where: str) -> Axis:
    if kind == "scale-out":
        if topo.scale_out is None:
            raise InputError(f"axis {name}={size} does not fit the {topo.size}-chip "
                             f"{topo.link} domain of {topo.name}, and the catalogue gives no "
                             f"scale-out network for it: the mesh is larger than the topology",
                             where)
        return _link_axis(the_chip, topo, name, size, topo.scale_out, kind, where)
    return _link_axis(the_chip, topo, name, size, topo.link, kind, where)
