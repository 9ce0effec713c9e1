"""Named calibrations: achieved fractions of peak per op class, each with its source, and
at most one fitted on a published run.

>>> c = calibration("megatron-a100")
>>> c.fractions["nvlink"], c.fitted.run, c.fitted.mode, c.conventions.name
(2/3, 'megatron-gpt-22b', 'full', 'megatron-lm')
>>> round(float(c.fractions["compute"]), 4)
0.7704

A calibration names the conventions it was fitted under (``conventions``, a framework's
choices: ``plans.conventions``); its efficiency brings them along. A fitted fraction is
solved exactly from the published time of its run, the run planned as ``plan --train``
plans it (``plans.training.train``) under those conventions and the other fractions
(``fit_fraction``); the file names the run and the reason it was chosen, and every result
made with the calibration prints both. A bundled file stores the solved fraction beside
the run and mode (``fit.value``, exact), so loading plans nothing; a test solves the fit
again and finds that value (``refit``). A file without a stored value is solved as it
loads.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.parse import parse_expr
from .conventions import Conventions, conventions
from .efficiency import Efficiency, parse_fractions
from .options import StepOptions
from .published import Run, published


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
    conventions: Conventions | None = None

    def efficiency(self) -> Efficiency:
        return Efficiency(dict(self.fractions), label=f"{self.name} ({self.title})",
                          notes=tuple(self.describe()), conventions=self.conventions)

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


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None


def _load(data: dict[str, Any], where: str) -> Calibration:
    """A calibration from its file's table; its fitted fraction the stored ``fit.value``,
    else solved now (``fit_fraction``)."""
    try:
        known = _resources()
        for k in data["fractions"]:
            if k not in known:
                raise InputError(f"unknown resource {k!r} (known: {', '.join(sorted(known))})",
                                 f"{where}: fractions")
        fractions = {k: _fraction(v["value"], f"{where}: fractions.{k}")
                     for k, v in data["fractions"].items()}
        sources = {k: str(v["source"]) for k, v in data["fractions"].items()}
        try:
            conv = conventions(str(data["conventions"])) if "conventions" in data else None
        except InputError as exc:
            raise InputError(exc.message, f"{where}: conventions") from None
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
            fractions[f["resource"]] = _fraction(f["value"], f"{where}: fit.value") \
                if "value" in f else fit_fraction(run, time.value, f["resource"],
                                                  Efficiency(dict(fractions)), conv)
            sources[f["resource"]] = (f"fitted on {paper.title}, {time.source} "
                                      f"({float(time.value):g} s): {f['why']}")
            fit = Fit(f["resource"], f["published"], f["run"], f["mode"], time.value,
                      time.source, str(f["why"]))
        return Calibration(str(data["name"]), str(data["title"]), fractions, sources, fit,
                           conv)
    except KeyError as exc:
        raise InputError(f"missing key {exc.args[0]!r}", where) from None


def refit(name: str) -> Expr:
    """The fitted fraction of calibration ``name`` (a bundled name or a ``.toml`` path)
    solved again from its published row (``fit_fraction``), whatever value the file
    stores: what its ``fit.value`` must hold."""
    text, where = _text(name)
    data = _parse(text, where)
    if "fit" not in data:
        raise InputError("the calibration fits no fraction", where)
    data["fit"].pop("value", None)
    cal = _load(data, where)
    assert cal.fitted is not None
    return cal.fractions[cal.fitted.resource]


def fit_fraction(run: Run, published: Expr, resource: str, efficiency: Efficiency,
                 conv: Conventions | None = None) -> Expr:
    """The fraction of ``resource``'s peak at which ``run``, planned as ``plan --train``
    plans it under ``conv`` and the other fractions of ``efficiency``, takes ``published``
    seconds (its ``predicted`` time): ``solve_fraction`` of the plan's time with the
    fraction a symbol."""
    from ..hardware.catalog import chip
    from ..models import model
    from ..parallel.mesh import mesh
    from .strategy import parse_strategy
    from .training import train
    f = sp.Symbol("f", positive=True)
    o = run.options()
    choices = conv.choices if conv is not None else {}
    plan = train(model(o["model"]), mesh(o["mesh"], chip(o["chip"])), parse_strategy(o["strategy"]),
                 batch=o["batch"], context=o["context"],
                 optimizer=choices.get("optimizer", "adam-mixed"), conventions=conv,
                 options=StepOptions(overlap=choices.get("overlap", "phase"),
                                     efficiency=Efficiency({**efficiency.fractions, resource: f}),
                                     recompute=o["recompute"], microbatch=o["microbatch"],
                                     interleave=o["interleave"]))
    assert plan.predicted is not None
    return solve_fraction(plan.predicted, f, sp.nsimplify(published),
                          f"{run.name} ({run.mode})")


def solve_fraction(time: Expr, f: sp.Symbol, target: Expr, where: str = "fit") -> Expr:
    """The fraction ``f`` in (0, 1] at which ``time`` equals ``target``, exact. ``time`` is
    a sum and maximum of terms each linear in 1/f or free of it, so it grows with 1/f,
    piecewise linearly: the piece holding the root is found numerically, then solved
    exactly on it.

    >>> f = sp.Symbol("f", positive=True)
    >>> solve_fraction(sp.Max(3 / f, 4) + 1, f, sp.Integer(7))
    1/2
    """
    x = sp.Symbol("x", positive=True)  # 1/f
    t = time.subs(f, 1 / x)
    at = sp.lambdify(x, t, "math")
    if at(1.0) > float(target):
        raise InputError(f"the run takes {at(1.0):.4g} s at every fraction 1, not under the "
                         f"published {float(target):g} s", where)
    lo, hi = 1.0, 2.0
    while at(hi) < float(target):
        lo, hi = hi, 2 * hi
        if hi > 2**40:
            raise InputError("no fraction reaches the published time", where)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid) < float(target) else (lo, mid)
    near = (lo + hi) / 2

    def winner(*args: Expr) -> Expr:
        return max(args, key=lambda a: float(a.subs(x, near)))

    piece = sp.expand(t.replace(sp.Max, winner))
    root = sp.solve(piece - target, x)
    if len(root) != 1:
        raise InputError(f"the fit has {len(root)} solutions on its piece", where)
    return sp.nsimplify(1 / root[0])


def _is_file(path: Path | Traversable) -> bool:
    try:
        return bool(path.is_file())
    except OSError:  # a name too long for a file name, say
        return False


def _text(name: str) -> tuple[str, str]:
    """A calibration's file text and the name its errors give: a bundled calibration by
    name, or a file by path (``.toml``)."""
    if name.endswith(".toml"):
        file = Path(name)
        if not _is_file(file):
            raise InputError("no such calibration file", name)
        return file.read_text("utf-8"), name
    from ..core.resources import data_text
    if name not in known():
        raise InputError(f"unknown calibration {name!r} (known: {', '.join(known())}; or a "
                         ".toml file)")
    return data_text("symroof.plans", "calibrations", name, "calibration")


@cache
def calibration(name: str) -> Calibration:
    """A bundled calibration by name, or a calibration file by path (``.toml``)."""
    text, where = _text(name)
    return _load(_parse(text, where), where)


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
    """The bundled calibrations' names."""
    from ..core.resources import data_names
    return data_names("symroof.plans", "calibrations")

