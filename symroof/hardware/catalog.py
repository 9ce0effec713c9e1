"""The chip catalogue: peak rates, bandwidths and capacities, each with its source.

>>> v5e = chip("tpu-v5e")
>>> v5e.peak("bf16")
197000000000000
>>> v5e.bandwidth("hbm"), chip("tpu-v5e", hbm="B1").bandwidth("hbm")
(810000000000, 820000000000)

Figures are flattened to keys: ``mxu.bf16`` (peak of the matrix unit in bf16),
``vpu.fp32`` (vector unit), ``hbm`` (a memory level's bandwidth), ``hbm.capacity``,
``ici`` / ``nvlink`` / ``pcie`` / ``dcn`` (a link's bandwidth, in the convention its
``direction`` states; ``chip.link(name)`` gives both ``one_way`` and ``bidirectional``),
``ici.latency`` (seconds per hop, where a source gives one). Where sources disagree a
figure keeps its alternatives; ``chip(name, hbm="B1")`` picks one by label, and
``chip(name, hbm="810 GB/s")`` sets a value for one run.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.choices import Choices
from ..core.errors import InputError, expect
from ..core.sizes import DTYPES, canonical_dtype
from ..core.units import (
    BANDWIDTH,
    CAPACITY,
    COMPUTE,
    INTENSITY,
    TIME,
    Dimension,
    parse_quantity,
    records,
)
from .links import Link, convention, latency_symbol, parse_link_value, split_per
from .micro import MICRO_KEYS, micro_peak, micro_specs, micro_value, micro_vector_peak
from .topology import Topology, build_topologies

UNITS_OF_COMPUTE = ("mxu", "vpu")
# the notes of figures a text states rounded (``Chip.with_figures``: ``ridge``, ``pod.KEY``)
ROUNDED = ("the ridge as a text rounds it", "a pod's total as a text rounds it")
COMMAND_LINE = "set on the command line"
DIRECTIONS = ("one-way", "bidirectional")
PER = ("link", "chip", "host", "node")


@dataclass(frozen=True)
class Figure:
    """One number of a chip, as its source states it."""

    value: sp.Expr
    text: str
    source: str
    label: str = "default"
    note: str = ""
    alternatives: tuple[Figure, ...] = ()
    direction: str = ""
    per: str = ""  # a link figure counted per link, chip, host or node (else the link's)

    def pick(self, label: str) -> Figure:
        """This figure with the alternative ``label`` made the value in force."""
        for alt in self.alternatives:
            if alt.label == label:
                others = tuple(a for a in (self, *self.alternatives) if a is not alt)
                return replace(alt, alternatives=tuple(replace(o, alternatives=()) for o in others))
        known = ", ".join(a.label for a in self.alternatives) or "none"
        raise InputError(f"no alternative labelled {label!r} (alternatives: {known})")


@dataclass(frozen=True)
class LinkInfo:
    """How a link's bandwidth is counted."""

    direction: str
    per: str = "link"
    count: int | None = None
    note: str = ""


@dataclass(frozen=True, repr=False)
class Chip(tb.RichView):
    """A chip: figures by key, link conventions, and the sources the figures cite."""

    name: str
    title: str
    vendor: str
    figures: Mapping[str, Figure]
    links: Mapping[str, LinkInfo] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    topologies: Mapping[str, Topology] = field(default_factory=dict)

    def _view(self) -> tuple[str, tb.Table]:
        rows = tuple((tb.cell(tb.code(k)), tb.cell(tb.text(f.text)), tb.cell(tb.math(f.value)),
                      tb.cell(tb.text(f.source + ("" if f.label == "default"
                                                  else f", {f.label}"))))
                     for k, f in sorted(self.figures.items()))
        return (f"{self.name}: {self.title}",
                tb.Table((tb.Column("figure"), tb.Column("as printed"), tb.Column("value"),
                          tb.Column("source")), rows))

    def figure(self, key: str) -> Figure:
        """The figure under ``key`` (``mxu.bf16``, ``hbm``, ``hbm.capacity``, ``ici``)."""
        resolved = self.resolve(key)
        return self.figures[resolved]

    def resolve(self, key: str) -> str:
        """The full key for a short one: ``bf16`` means ``mxu.bf16``."""
        if key in self.figures:
            return key
        if key in DTYPES and f"mxu.{key}" in self.figures:
            return f"mxu.{key}"
        raise InputError(f"chip {self.name!r} has no figure {key!r} "
                         f"(keys: {', '.join(sorted(self.figures))})")

    def peak(self, dtype: str = "bf16", compute: str = "mxu",
             choices: Choices | None = None) -> sp.Expr:
        """Peak dense operations per second of the compute unit ``compute`` in ``dtype``
        (under ``choices.peak == "sparse"``, the 2:4-sparse figure NVIDIA's spec sheets
        print: twice the dense one; other vendors print none)."""
        if choices is not None and choices.peak == "sparse":
            if self.vendor != "NVIDIA":
                raise InputError(f"chip {self.name!r} has no sparse peak (the 2:4-sparse "
                                 "figure is NVIDIA's)")
            return 2 * self.peak(dtype, compute)
        dtype = canonical_dtype(dtype)
        key = f"{compute}.{dtype}"
        if key not in self.figures:
            have = ", ".join(k for k in sorted(self.figures) if k.startswith(f"{compute}."))
            raise InputError(f"chip {self.name!r} has no {compute} peak for {dtype} "
                             f"(it has: {have or 'none'})")
        return self.figures[key].value

    def edition(self, label: str) -> Chip:
        """The chip with every figure that has an alternative labelled ``label`` (another
        edition of the table, such as ``B1``) taking it.

        >>> chip("tpu-v5e").edition("B1").bandwidth()
        820000000000
        """
        picked = {k: f.pick(label) for k, f in self.figures.items()
                  if any(a.label == label for a in f.alternatives)}
        if not picked:
            raise InputError(f"chip {self.name!r} has no figure from {label!r}")
        return replace(self, figures={**self.figures, **picked})

    def under(self, choices: Choices) -> Chip:
        """The chip as ``choices`` take it: another edition's figures when one is named."""
        return self.edition(choices.edition) if choices.edition else self

    def micro_peak(self, dtype: str = "bf16") -> sp.Expr:
        """The tensor-core peak the microarchitecture figures give (``symroof.hardware.micro``).

        >>> chip("a100-40gb").micro_peak()
        311869440000000
        """
        return micro_peak({k: f.value for k, f in self.figures.items()},
                          canonical_dtype(dtype), self.name)

    def micro_vector_peak(self) -> sp.Expr:
        """The fp32 vector peak the microarchitecture figures give (a multiply-add counted
        as two FLOPs).

        >>> chip("h100-sxm").micro_vector_peak(), chip("tpu-v5p").micro_vector_peak()
        (66908160000000, 14336000000000)
        """
        return micro_vector_peak({k: f.value for k, f in self.figures.items()}, self.name)

    def cores(self) -> tuple[sp.Expr, str] | None:
        """The chip's cores and what they are: a GPU's SMs or a TPU's TensorCores; None
        where the catalogue gives no count.

        >>> chip("tpu-v5p").cores(), chip("h100-sxm").cores()
        ((2, 'TensorCores'), (132, 'SMs'))
        """
        for key, kind in (("micro.sms", "SMs"), ("micro.tensorcores", "TensorCores")):
            if key in self.figures:
                return self.figures[key].value, kind
        return None

    def bandwidth(self, name: str = "hbm") -> sp.Expr:
        """Bytes per second of a memory level, or of a link one way (``link(name).one_way``,
        counted per what its source counts: link, chip, host or node)."""
        if name not in self.figures or "." in name:
            raise InputError(f"chip {self.name!r} has no bandwidth {name!r} "
                             f"(it has: {', '.join(self.bandwidth_names()) or 'none'})")
        if name in self.links:
            return self.link(name).one_way
        return self.figures[name].value

    def link(self, name: str) -> Link:
        """A link with its convention and per-hop latency.

        >>> chip("tpu-v5p").link("ici").bidirectional
        180000000000
        """
        if name not in self.links:
            raise InputError(f"chip {self.name!r} has no link {name!r} "
                             f"(links: {', '.join(sorted(self.links)) or 'none'})")
        info, fig = self.links[name], self.figures[name]
        lat = self.figures.get(f"{name}.latency")
        return Link(name, fig.value, fig.direction or info.direction, fig.per or info.per,
                    fig.source,
                    lat.value if lat else latency_symbol(name), lat.source if lat else "",
                    info.count, info.note)

    def topology(self, name: str | None = None) -> Topology:
        """The chip's topology ``name``, or its first (default) one."""
        if not self.topologies:
            raise InputError(f"chip {self.name!r} has no topology in the catalogue")
        if name is None:
            return next(iter(self.topologies.values()))
        if name not in self.topologies:
            raise InputError(f"chip {self.name!r} has no topology {name!r} "
                             f"(topologies: {', '.join(self.topologies)})")
        return self.topologies[name]

    def capacity(self, name: str = "hbm") -> sp.Expr:
        """Bytes of a memory level."""
        return self.figure(f"{name}.capacity").value

    def bandwidth_names(self) -> list[str]:
        return sorted(k for k in self.figures if "." not in k)

    def ridge(self, dtype: str = "bf16", over: str = "hbm", compute: str = "mxu", *,
              both_ways: bool = False) -> sp.Expr:
        """Critical intensity: peak / bandwidth, in FLOP per byte. Over a link the
        bandwidth is one chip's: a host's or node's figure is shared by the chips behind
        it (the default topology's chips per host), and ``both_ways`` takes the
        bidirectional figure instead of the one-way one (the book's alpha = C / W).

        >>> chip("tpu-v5e", hbm="B1").ridge()
        9850/41
        >>> chip("h100-sxm").ridge(over="ib"), chip("h100-sxm").ridge(over="ib", both_ways=True)
        (19788, 9894)
        """
        if over not in self.links:
            if both_ways:
                raise InputError(f"{over!r} is a memory level, not a link: it has no second "
                                 "direction", "both_ways")
            return self.peak(dtype, compute) / self.bandwidth(over)
        return self.peak(dtype, compute) / self.link_per_chip(over, both_ways=both_ways)

    def link_per_node(self, name: str, *, both_ways: bool = False) -> sp.Expr:
        """The bytes per second over link ``name`` of all the chips behind one host or
        node of the default topology, one way (or ``both_ways``): a node's aggregate.

        >>> chip("h100-sxm").link_per_node("nvlink"), chip("h100-sxm").link_per_node("ib")
        (3600000000000, 400000000000)
        """
        topo = next(iter(self.topologies.values()), None)
        chips = topo.chips_per_host if topo is not None else 1
        return self.link_per_chip(name, both_ways=both_ways) * chips

    @records(BANDWIDTH)
    def link_per_switch(self, name: str, *, both_ways: bool = False) -> sp.Expr:
        """The bytes per second one switch of the default topology's switch domain carries
        over link ``name``, one way (or ``both_ways``): every chip's figure over the domain,
        shared by its switches (each chip's links spread over them).

        >>> chip("h100-sxm").link_per_switch("nvlink")    # 8 x 450 GB/s over 4 NVSwitches
        900000000000
        """
        topo = next(iter(self.topologies.values()), None)
        if topo is None or topo.kind != "switch" or topo.link != name:
            raise InputError(f"{self.name}'s {name} runs through no switch domain of the "
                             f"catalogue", f"link_per_switch {name}")
        if not topo.switches:
            raise InputError(f"{topo.name} does not count its switches (no source)",
                             f"link_per_switch {name}")
        return self.link_per_chip(name, both_ways=both_ways) * topo.size / topo.switches

    def link_per_chip(self, name: str, *, both_ways: bool = False) -> sp.Expr:
        """One chip's bytes per second over link ``name``, one way (or ``both_ways``): a
        host's or node's figure divided among the chips behind it.

        >>> chip("h100-sxm").link_per_chip("ib"), chip("tpu-v5e").link_per_chip("dcn")
        (50000000000, 3125000000)
        """
        ln = self.link(name)
        figure = ln.bidirectional if both_ways else ln.one_way
        topo = next(iter(self.topologies.values()), None)
        if ln.per in ("host", "node") and topo is not None and topo.chips_per_host > 1:
            return figure / topo.chips_per_host
        return figure

    def with_figures(self, overrides: Mapping[str, str],
                     source: str = COMMAND_LINE) -> Chip:
        """A copy with figures set for one run: a value with unit, a bare number, or the
        label of a listed alternative. A link's value must state its convention
        (``"1.8e11 B/s bidi"``, ``"45 GB/s one-way"``); ``LINK.latency`` takes a time.

        >>> chip("tpu-v5e").with_figures({"hbm": "8.2e11"}).bandwidth()
        820000000000

        A text's own round figures: ``ridge`` (or ``ridge.DTYPE``) states the ridge a text
        rounded (240 FLOP/byte), the HBM bandwidth taken as the peak over it;
        ``pod.KEY`` a pod's rounded total of a peak, a memory bandwidth or a capacity,
        each chip taking its share of the default topology's chips.

        >>> chip("tpu-v5e").with_figures({"ridge": "240"}).ridge()
        240
        >>> chip("tpu-v5e").with_figures({"pod.mxu.bf16": "5e16"}).peak()
        195312500000000
        """
        ridges = {k: v for k, v in overrides.items() if k.partition(".")[0] == "ridge"}
        pods = {k: v for k, v in overrides.items() if k.startswith("pod.")}
        for key in pods:
            if key[len("pod."):] in overrides:
                raise InputError(f"{key[len('pod.'):]} is given twice (as itself and as a "
                                 "pod's total)", f"set {key}" if source == COMMAND_LINE
                                 else key)
        overrides = {k: v for k, v in overrides.items() if k not in ridges and k not in pods}
        figures = dict(self.figures)
        for key, text in overrides.items():
            where = f"set {key}" if source == COMMAND_LINE else key
            named = _symbolic(text)
            if key.startswith("micro."):
                if key[len("micro."):] not in MICRO_KEYS:
                    raise InputError(f"no microarchitecture field {key!r} (fields: "
                                     f"{', '.join('micro.' + k for k in MICRO_KEYS)})", where)
                value = named if named is not None else micro_value(key, text, where)
                figures[key] = Figure(value, text, source, "override")
                continue
            if key.endswith(".latency") and key[:-len(".latency")] in self.links:
                value = named if named is not None else parse_quantity(text, TIME, where=where,
                                                                       zero=True)
                figures[key] = Figure(value, text, source, "override")
                continue
            try:
                full = self.resolve(key)
            except InputError as exc:
                raise InputError(exc.message, where) from None
            old = figures[full]
            labels = {a.label for a in old.alternatives}
            if text in labels:
                figures[full] = old.pick(text)
                continue
            if named is not None and not _like_label(text, labels):  # a text's letter: C
                figures[full] = Figure(named, text, source, "override",
                                       alternatives=(replace(old, alternatives=()),
                                                     *old.alternatives),
                                       direction=old.direction, per=old.per)
                continue
            if labels and not text.lstrip("+-")[:1].isdigit() and not text.startswith("."):
                raise InputError(f"{text!r} is neither a value nor the label of an "
                                 f"alternative (labels: {', '.join(sorted(labels))})", where)
            direction = per = ""
            if full in self.links:
                text_, per = split_per(text, where)
                value, direction = parse_link_value(text_, where=where)
            else:
                value = parse_quantity(text, _dimension(full), where=where)
            figures[full] = Figure(value, text, source, "override",
                                   alternatives=(replace(old, alternatives=()),
                                                 *old.alternatives), direction=direction,
                                   per=per)
        out = replace(self, figures=figures)
        for key, text in pods.items():
            out = out._pod_share(key, text, source)
        for key, text in ridges.items():
            out = out._round_ridge(key, text, source)
        return out

    def rounded(self) -> tuple[str, ...]:
        """The figures set as a text rounds them (``ridge``, ``pod.KEY``), one line each, for
        the assumptions of what uses the chip.

        >>> chip("tpu-v5e", ridge="240").rounded()[0].split(" = ")[1]
        '8.208e11 (the ridge as a text rounds it)'
        >>> chip("tpu-v5e").rounded()
        ()
        """
        from ..core.printer import approx
        return tuple(f"{k}: {f.text} = {approx(f.value, 4)} ({f.note})"
                     for k, f in sorted(self.figures.items())
                     if f.label == "override" and f.note in ROUNDED and f.value.is_number)

    def _pod_share(self, key: str, text: str, source: str) -> Chip:
        """The chip with figure ``pod.KEY``'s total shared by the default topology's chips."""
        where = f"set {key}" if source == COMMAND_LINE else key
        try:
            full = self.resolve(key[len("pod."):])
        except InputError as exc:
            raise InputError(exc.message, where) from None
        if full in self.links or full.endswith(".latency") or full.startswith("micro."):
            raise InputError(f"a pod's total is of a peak, a memory bandwidth or a capacity, "
                             f"not {full!r}", where)
        if not self.topologies:
            raise InputError(f"chip {self.name!r} has no topology in the catalogue: a pod's "
                             "total has no chips to share it", where)
        topo = next(iter(self.topologies.values()))
        named = _symbolic(text)
        total = named if named is not None else parse_quantity(text, _dimension(full),
                                                               where=where)
        old = self.figures[full]
        share = Figure(total / topo.size, f"{text} over the {topo.size} chips of {topo.name}",
                       source, "override", note=ROUNDED[1],
                       alternatives=(replace(old, alternatives=()), *old.alternatives))
        return replace(self, figures={**self.figures, full: share})

    def _round_ridge(self, key: str, text: str, source: str) -> Chip:
        """The chip whose HBM bandwidth is its peak over the ridge a text rounded."""
        where = f"set {key}" if source == COMMAND_LINE else key
        dtype = key.partition(".")[2] or "bf16"
        if dtype not in DTYPES:
            raise InputError(f"a ridge is stated per dtype (ridge, ridge.DTYPE: "
                             f"{', '.join(DTYPES)}), got {key!r}", where)
        if "hbm" not in self.figures:
            raise InputError(f"chip {self.name!r} has no HBM bandwidth for a ridge to set",
                             where)
        try:
            peak = self.peak(dtype)
        except InputError as exc:
            raise InputError(exc.message, where) from None
        named = _symbolic(text)
        ridge = named if named is not None else parse_quantity(text, INTENSITY, where=where)
        old = self.figures["hbm"]
        taken = Figure(peak / ridge, f"the {dtype} peak over the ridge {text} FLOP/byte",
                       source, "override", note=ROUNDED[0],
                       alternatives=(replace(old, alternatives=()), *old.alternatives))
        return replace(self, figures={**self.figures, "hbm": taken})


@dataclass(frozen=True)
class Catalog:
    """Chips by name, and the sources their figures cite."""

    chips: Mapping[str, Chip]
    sources: Mapping[str, str]
    path: str
    topologies: Mapping[str, Topology] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Chip:
        try:
            return self.chips[name]
        except KeyError:
            near = [c for c in self.chips if name.lower() in c or c in name.lower()]
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise InputError(f"unknown chip {name!r}{hint}; known: "
                             f"{', '.join(sorted(self.chips))}") from None


def chip(name: str, *, catalog: Catalog | None = None, **overrides: str) -> Chip:
    """A chip from the bundled catalogue (or ``catalog``), with optional figure overrides.

    >>> chip("h100-sxm").ridge()
    19788/67
    """
    expect(name, str, "a chip name such as 'tpu-v5e'", "chip")
    overrides = {k: repr(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                 for k, v in overrides.items()}
    for key, value in overrides.items():
        expect(value, str, "a figure such as '8.1e11 B/s' (or a number)", f"chip {key}=")
    found = (catalog or load_catalog(os.environ.get("SYMROOF_CATALOG") or None))[name]
    return found.with_figures(overrides, "set in a derivation") if overrides else found


def chip_with(name: str, catalog: str | None = None,
              overrides: Mapping[str, str] | None = None) -> Chip:
    """Chip ``name`` of the catalogue file ``catalog`` (the bundled one when None), with
    figures set for one run (``{"hbm": "8.2e11"}``, located at ``set KEY``).

    >>> chip_with("tpu-v5e", overrides={"hbm": "B1"}).bandwidth()
    820000000000
    """
    try:
        found = chip(name, catalog=load_catalog(catalog))
    except InputError as exc:
        raise InputError(exc.message, exc.where or "chip") from None
    return found.with_figures(overrides) if overrides else found


MAX_CATALOG_BYTES = 1 << 20
_CHIP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")


_LEVEL = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@lru_cache(maxsize=8)
def load_catalog(path: str | None = None) -> Catalog:
    """Load a catalogue TOML file; the bundled one when ``path`` is None.

    >>> load_catalog()["tpu-v5e"].title
    'Google TPU v5e'
    """
    if path is None:
        text = resources.files("symroof.hardware").joinpath("chips.toml").read_text("utf-8")
        where = "symroof/hardware/chips.toml"
    else:
        file = Path(path)
        where = str(path)
        if not file.exists():
            raise InputError("no such catalogue file", where)
        if not file.is_file():
            raise InputError("not a regular file", where)
        size = file.stat().st_size
        if size > MAX_CATALOG_BYTES:
            raise InputError(f"the catalogue is {size} bytes; the limit is "
                             f"{MAX_CATALOG_BYTES}", where)
        try:
            text = file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", where) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", where) from None
    return _build_catalog(data, where)


def _build_catalog(data: dict[str, Any], where: str) -> Catalog:
    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise InputError("[sources] must map keys to strings", where)
    chips_data = data.get("chips")
    if not isinstance(chips_data, dict) or not chips_data:
        raise InputError("no [chips.NAME] tables", where)
    for name in chips_data:
        if not _CHIP_NAME.match(name):
            raise InputError(f"chip name {name!r} must be letters, digits and . _ - +", where)
    chips = {name: _build_chip(name, body, sources, f"{where}: chips.{name}")
             for name, body in chips_data.items()}
    topologies = build_topologies(data.get("topologies", {}), chips, sources, where)
    for name, found in chips.items():
        own = {t.name: t for t in topologies.values() if name in t.chips}
        if own:
            chips[name] = replace(found, topologies=own)
    return Catalog(chips, sources, where, topologies)


def _build_chip(name: str, body: Any, sources: dict[str, str], where: str) -> Chip:
    table = _table(body, where)
    figures: dict[str, Figure] = {}
    for unit, per_dtype in _table(table.get("peak", {}), f"{where}.peak").items():
        if unit not in UNITS_OF_COMPUTE:
            raise InputError(f"unknown compute unit {unit!r} (use {', '.join(UNITS_OF_COMPUTE)})",
                             f"{where}.peak")
        for dtype, spec in _table(per_dtype, f"{where}.peak.{unit}").items():
            if dtype not in DTYPES:
                raise InputError(f"unknown dtype {dtype!r}", f"{where}.peak.{unit}")
            figures[f"{unit}.{dtype}"] = _figure(spec, COMPUTE, sources,
                                                 f"{where}.peak.{unit}.{dtype}")
    for level, spec in _table(table.get("memory", {}), f"{where}.memory").items():
        if not _LEVEL.fullmatch(level):
            raise InputError(f"a memory level is a plain name (letters, digits, _ and -), "
                             f"got {level!r}", f"{where}.memory")
        spec = _table(spec, f"{where}.memory.{level}")
        if "bandwidth" in spec:
            figures[level] = _figure(spec["bandwidth"], BANDWIDTH, sources,
                                     f"{where}.memory.{level}.bandwidth")
        if "capacity" in spec:
            figures[f"{level}.capacity"] = _figure(spec["capacity"], CAPACITY, sources,
                                                   f"{where}.memory.{level}.capacity")
    for full, spec, at in micro_specs(_table(table.get("micro", {}), f"{where}.micro"),
                                      f"{where}.micro"):
        figures[full] = _figure(spec, COMPUTE, sources, at, parse=partial(micro_value, full))
    links: dict[str, LinkInfo] = {}
    for link, spec in _table(table.get("links", {}), f"{where}.links").items():
        at = f"{where}.links.{link}"
        spec = _table(spec, at)
        if link in figures:
            raise InputError(f"a link cannot take the name {link!r} of a memory level", at)
        if "bandwidth" not in spec:
            raise InputError("missing 'bandwidth'", at)
        figures[link] = _figure(spec["bandwidth"], BANDWIDTH, sources, f"{at}.bandwidth")
        if "latency" in spec:
            figures[f"{link}.latency"] = _figure(spec["latency"], TIME, sources,
                                                 f"{at}.latency")
        if "direction" not in spec:
            raise InputError(f"missing 'direction' (one of {', '.join(DIRECTIONS)}): every "
                             f"link bandwidth states its convention", at)
        direction = spec["direction"]
        if direction not in DIRECTIONS:
            raise InputError(f"direction must be one of {', '.join(DIRECTIONS)}, "
                             f"got {direction!r}", at)
        if spec.get("per", "link") not in PER:
            raise InputError(f"per must be one of {', '.join(PER)}, got {spec.get('per')!r}",
                             at)
        count = spec.get("count")
        if count is not None and (not isinstance(count, int) or isinstance(count, bool)
                                  or count <= 0):
            raise InputError(f"count must be a positive integer, got {count!r}", at)
        links[link] = LinkInfo(direction, str(spec.get("per", "link")), count,
                               str(spec.get("note", "")))
    if not figures:
        raise InputError("a chip needs at least one figure", where)
    return Chip(name, str(table.get("title", name)), str(table.get("vendor", "")), figures,
                links, sources)


def _figure(spec: Any, dimension: Dimension, sources: dict[str, str], where: str,
            label: str = "default",
            parse: Callable[[str, str], sp.Expr] | None = None) -> Figure:
    spec = _table(spec, where)
    for key in ("value", "source"):
        if key not in spec:
            raise InputError(f"missing {key!r}", where)
        if not isinstance(spec[key], str):
            raise InputError(f"{key!r} must be a string, got {type(spec[key]).__name__}", where)
    if spec["source"] not in sources:
        raise InputError(f"source {spec['source']!r} is not in [sources]", where)
    alternatives = []
    raw_alts = spec.get("alternatives", [])
    if not isinstance(raw_alts, list):
        raise InputError("'alternatives' must be a list", where)
    for i, alt in enumerate(raw_alts):
        at = f"{where}.alternatives[{i}]"
        alt_label = _table(alt, at).get("label")
        if not isinstance(alt_label, str) or not alt_label:
            raise InputError("missing 'label'", at)
        alternatives.append(_figure(alt, dimension, sources, at, alt_label, parse))
    labels = [a.label for a in alternatives]
    if len(set(labels)) != len(labels):
        raise InputError("alternative labels must be unique", where)
    value = parse(spec["value"], f"{where}.value") if parse else \
        parse_quantity(spec["value"], dimension, where=f"{where}.value")
    direction = convention(str(spec["direction"]), where=where) if "direction" in spec else ""
    per = str(spec.get("per", ""))
    if per and per not in PER:
        raise InputError(f"'per' must be one of {', '.join(PER)}, got {per!r}", where)
    return Figure(value, spec["value"], spec["source"], label, str(spec.get("note", "")),
                  tuple(alternatives), direction, per)


_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\Z")


def _like_label(text: str, labels: set[str]) -> bool:
    """Whether a name reads as a mistyped label of an alternative (``B9`` beside ``B1``),
    not as a letter of a text: letters then digits, the letters a label's.

    >>> _like_label("B9", {"B1"}), _like_label("C", {"B1"}), _like_label("W1", {"B1"})
    (True, False, False)
    """
    found = re.fullmatch(r"([A-Za-z]+)[0-9]+", text.strip())
    return found is not None and any(re.match(rf"{found.group(1)}[0-9]", label)
                                     for label in labels)


def _symbolic(text: str) -> sp.Symbol | None:
    """The positive symbol a figure is set to (``"C"``, ``"W_hbm"``), or None for a value.

    >>> _symbolic("W_hbm"), _symbolic("8.1e11 B/s")
    (W_hbm, None)
    """
    found = _NAME.match(text)
    if found is None:
        return None
    from ..core.parse import symbol
    return symbol(found.group(1))


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected a table, got {type(value).__name__}", where)
    return value


def _dimension(key: str) -> Dimension:
    if key.endswith(".latency"):
        return TIME
    if key.endswith(".capacity"):
        return CAPACITY
    if key.split(".")[0] in UNITS_OF_COMPUTE:
        return COMPUTE
    return BANDWIDTH
