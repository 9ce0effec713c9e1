"""Named calibrations: achieved fractions of peak per op class, each with its source, and
at most one fitted on a published run.

>>> c = calibration("megatron-a100")
>>> c.fractions["nvlink"], c.fitted.run, c.fitted.mode
(2/3, 'megatron-gpt-22b', 'full')
>>> round(float(c.fractions["compute"]), 4)
0.7167

A fitted fraction is solved exactly from the published time of its run (the time is
a + b/f in it), the other fractions taken as given; the file names the run and the reason
it was chosen, and every result made with the calibration prints both.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from sympy import Expr

from ..core.errors import InputError
from ..core.parse import parse_expr
from .efficiency import Efficiency, parse_fractions
from .megatron import fit_fraction
from .published import published


@dataclass(frozen=True)
class Fit:
    """The one fraction fitted on a published run: ``resource`` on (``run``, ``mode``) of
    ``paper``, which measured ``value`` seconds."""

    resource: str
    paper: str
    run: str
    mode: str
    value: Expr
    source: str
    why: str


@dataclass(frozen=True)
class Calibration:
    """Fractions of peak by resource (``compute``, ``hbm``, a link), their sources, the fit."""

    name: str
    title: str
    fractions: dict[str, Expr]
    sources: dict[str, str]
    fitted: Fit | None

    def efficiency(self) -> Efficiency:
        return Efficiency(dict(self.fractions), label=f"{self.name} ({self.title})",
                          notes=tuple(self.describe()))

    def describe(self) -> list[str]:
        """One line per fraction: value and source (or the row it was fitted on)."""
        out = []
        for k, v in self.fractions.items():
            out.append(f"{k} at {float(v):.4f} of peak: {self.sources[k]}")
        return out


def _resources() -> set[str]:
    """What a fraction may name: compute, hbm and every link of the catalogue."""
    from ..hardware.catalog import load_catalog
    return {"compute", "hbm"} | {name for c in load_catalog().chips.values() for name in c.links}


def _fraction(text: object, where: str) -> Expr:
    value = parse_expr(str(text), where=where)
    if not value.is_number or not (0 < value <= 1):
        raise InputError(f"a fraction of peak is in (0, 1], got {text!r}", where)
    return value


def _load(text: str, where: str) -> Calibration:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None
    try:
        known = _resources()
        for k in data["fractions"]:
            if k not in known:
                raise InputError(f"unknown resource {k!r} (known: {', '.join(sorted(known))})",
                                 f"{where}: fractions")
        fractions = {k: _fraction(v["value"], f"{where}: fractions.{k}")
                     for k, v in data["fractions"].items()}
        sources = {k: str(v["source"]) for k, v in data["fractions"].items()}
        fit = None
        if "fit" in data:
            f = data["fit"]
            paper = published(f["published"])
            time = next((x for x in paper.figures if x.what == "time" and x.run == f["run"]
                         and x.mode == f["mode"]), None)
            if time is None:
                raise InputError(f"no published time for {f['run']} {f['mode']}",
                                 f"{where}: fit")
            if f["resource"] in fractions:
                raise InputError(f"{f['resource']!r} is both fixed and fitted", f"{where}: fit")
            run = paper.run(f["run"], f["mode"])
            fractions[f["resource"]] = fit_fraction(run, time.value, f["resource"],
                                                    Efficiency(dict(fractions)))
            sources[f["resource"]] = (f"fitted on {paper.title}, {time.source} "
                                      f"({float(time.value):g} s): {f['why']}")
            fit = Fit(f["resource"], f["published"], f["run"], f["mode"], time.value,
                      time.source, str(f["why"]))
        return Calibration(str(data["name"]), str(data["title"]), fractions, sources, fit)
    except KeyError as exc:
        raise InputError(f"missing key {exc.args[0]!r}", where) from None


def _is_file(path: Path | Traversable) -> bool:
    try:
        return bool(path.is_file())
    except OSError:  # a name too long for a file name, say
        return False


@cache
def calibration(name: str) -> Calibration:
    """A bundled calibration by name, or a calibration file by path (``.toml``)."""
    if name.endswith(".toml"):
        file = Path(name)
        if not _is_file(file):
            raise InputError("no such calibration file", name)
        return _load(file.read_text("utf-8"), name)
    folder = resources.files("symroof.plans").joinpath("calibrations")
    entry = folder.joinpath(f"{name}.toml")
    if not _is_file(entry):
        known = sorted(e.name.removesuffix(".toml") for e in folder.iterdir()
                       if e.name.endswith(".toml"))
        raise InputError(f"unknown calibration {name!r} (known: {', '.join(known)}; or a "
                         ".toml file)")
    return _load(entry.read_text("utf-8"), f"symroof/plans/calibrations/{name}.toml")


def parse_efficiency(spec: str | None, where: str = "efficiency") -> Efficiency:
    """An efficiency as the command line gives it: ``"compute=0.6,ici=0.8"``
    (``efficiency.parse_fractions``), or a name without ``=`` (or a ``.toml`` path), a
    calibration.

    >>> parse_efficiency("megatron-a100").label
    'megatron-a100 (Megatron-LM on A100 80 GB (Selene, DGX A100))'
    >>> parse_efficiency("compute=1/2").of("compute")
    1/2
    """
    if spec is not None and spec.strip() and "=" not in spec:
        try:
            return calibration(spec.strip()).efficiency()
        except InputError as exc:
            raise InputError(exc.message, where) from None
    return parse_fractions(spec, where)


def known() -> list[str]:
    folder = resources.files("symroof.plans").joinpath("calibrations")
    return sorted(e.name.removesuffix(".toml") for e in folder.iterdir()
                  if e.name.endswith(".toml"))

