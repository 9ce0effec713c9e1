"""Published serving measurements against symroof: each row's bound (at peak, the catalogue's
link latencies counted) and its forecast under a serving calibration, and the error.

>>> rows = compare("trtllm-a100")
>>> fitted = [r for r in rows if r.calibrated]
>>> len(fitted), abs(float(fitted[0].error)) < 1e-6
(1, True)
>>> all(r.bound_holds for r in rows)
True

A serving calibration (``calibrations/serving/NAME.toml``) is a table of achieved fractions
of peak per resource (``compute``, ``hbm``, a link), the shape of the training
calibration's: each fraction has its source, and at most one is fitted, on one published
row (``published/serving/NAME.toml``) that the file names with the reason it was chosen;
every other row is a prediction. A row is a time to the first token (the prefill of
``batch`` prompts, T_lower) or output tokens per second per GPU of a static batch: its
prompts prefilled, then ``output`` decode steps, each op's time linear in the context, so
the steps are summed as ``output`` times the mean of the first (context = input) and the
last (input + output) step.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.parse import parse_expr
from ..core.printer import si
from ..core.quant import matmul_input, rest_dtype
from ..core.units import BANDWIDTH, TIME, parse_quantity
from ..models import model
from ..models.layers import DEFAULT_KERNEL, Kernel
from ..parallel.mesh import mesh
from .device_step import device_step
from .efficiency import PEAK, CallLatency, Efficiency
from .options import StepOptions

FIRST, RATE = "time to first token", "output tokens/s per GPU"
FIT_BITS = 10**6  # a fitted fraction is kept to six decimals


@dataclass(frozen=True)
class Row:
    """One published serving figure: ``what`` (``FIRST`` in seconds or ``RATE``) of ``model``
    on ``tp`` GPUs, ``batch`` prompts of ``input`` tokens generating ``output``."""

    model: str
    tp: int
    batch: int
    input: int
    output: int
    what: str
    published: Expr
    where: str


@dataclass(frozen=True)
class Compared:
    """A row against symroof: ``bound`` at peak, ``predicted`` under the calibration,
    ``error`` = predicted / published - 1; ``calibrated`` marks the fitted row."""

    source: str
    what: str
    published: Expr
    predicted: Expr
    bound: Expr
    error: Expr
    calibrated: bool

    @property
    def bound_holds(self) -> bool:
        """A time's bound is at most the measurement, a rate's at least."""
        return bool(self.bound <= self.published if self.what == FIRST
                    else self.bound >= self.published)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "what": self.what,
                "published": float(self.published), "predicted": float(self.predicted),
                "bound": float(self.bound), "error": float(self.error),
                "calibrated": self.calibrated, "bound_holds": self.bound_holds}


@dataclass(frozen=True)
class ServingCalibration:
    """Fractions of peak by resource with their sources; ``fitted`` names the resource
    fitted on row ``row`` of ``published`` (and why)."""

    name: str
    title: str
    chip: str
    published: str
    fractions: dict[str, Expr]
    sources: dict[str, str]
    fitted: str | None
    row: int | None
    why: str
    overlap: str = "op"
    overlap_why: str = ""
    calls: dict[str, tuple[CallLatency, ...]] = field(default_factory=dict)

    def efficiency(self) -> Efficiency:
        notes = [f"{k} at {sp.sstr(v)} of peak ({self.sources[k]})"
                 for k, v in self.fractions.items()]
        notes += [f"{k} collectives under {c.protocol}: {si(c.per_call, 's')} a call and "
                  f"{si(c.per_hop, 's')} a hop" + (f" at {si(c.bandwidth, 'B/s')}"
                                                   if c.bandwidth is not None else "")
                  + f" ({c.source})" for k, cs in self.calls.items() for c in cs]
        return Efficiency(dict(self.fractions), label=f"{self.name} ({self.title})",
                          notes=tuple(notes), overlap=self.overlap, calls=dict(self.calls))


def _toml(folder: str, name: str) -> dict[str, Any]:
    path = resources.files("symroof.plans").joinpath(folder, f"{name}.toml")
    if not path.is_file():
        raise InputError(f"no {folder.replace('/', ' ')} file named {name!r}", "calibration")
    with path.open("rb") as fh:
        return tomllib.load(fh)


@cache
def published_rows(name: str) -> tuple[dict[str, Any], tuple[Row, ...]]:
    """The header and rows of ``published/serving/NAME.toml``."""
    data = _toml("published/serving", name)
    rows = []
    for i, r in enumerate(data["rows"]):
        where = f"{name} row {i}"
        value = (parse_quantity(r["published"], TIME, where=where) if r["what"] == FIRST
                 else parse_expr(r["published"]))
        rows.append(Row(r["model"], r["tp"], r["batch"], r["input"], r["output"], r["what"],
                        value, r["where"]))
    return data, tuple(rows)


def figure(row: Row, chip: str, dtype: str, efficiency: Efficiency = PEAK,
           kv_dtype: str | None = None, kernel: Kernel = DEFAULT_KERNEL) -> Expr:
    """symroof's figure for ``row`` under ``efficiency``: seconds or tokens/s per GPU, the
    weights in ``dtype`` (a scheme: ``fp8-w8a8``), the KV cache in ``kv_dtype`` and the
    kernels as ``kernel`` says (a published file's ``attention``: the engine's kernel)."""
    m = mesh(f"X={row.tp}", chip)
    axes = {"tp": ("X",)} if row.tp > 1 else {}
    cfg = model(row.model)

    def step(phase: str, context: int) -> Expr:
        return device_step(cfg, phase, m, axes, batch=row.batch, context=context,
                           options=StepOptions(dtype=dtype, kv_dtype=kv_dtype, kernel=kernel,
                                               efficiency=efficiency)).latency
    first = step("prefill", row.input)
    if row.what == FIRST:
        return first
    if row.what != RATE:
        raise InputError(f"unknown serving figure {row.what!r}", "published")
    steps = row.output * (step("decode", row.input) + step("decode", row.input + row.output))
    return row.batch * row.output / (first + steps / 2) / row.tp


def engine_kernel(head: dict[str, Any]) -> Kernel:
    """The attention kernel a published file's engine ran (``attention``; flash when the
    file does not say)."""
    return Kernel(head.get("attention", DEFAULT_KERNEL.attention))


@cache
def serving_calibration(name: str) -> ServingCalibration:
    """The calibration ``calibrations/serving/NAME.toml``, its one fitted fraction the value
    the file stores (``fit.value``, solved by ``serving_refit``; a file without one is
    solved as it loads)."""
    data = _toml("calibrations/serving", name)
    fractions = {k: parse_expr(v["value"]) for k, v in data.get("fractions", {}).items()}
    sources = {k: v["source"] for k, v in data.get("fractions", {}).items()}
    fit = data.get("fit")
    overlap = data.get("overlap", "op")
    if overlap not in ("op", "none"):
        raise InputError(f"{name}: overlap is 'op' (each op's compute under its memory "
                         f"traffic) or 'none', got {overlap!r}", "calibration")
    rule: dict[str, Any] = {"overlap": overlap, "overlap_why": data.get("overlap_why", ""),
                            "calls": _calls(name, data.get("calls", {}))}
    if fit is None:
        return ServingCalibration(name, data["title"], data["chip"], data["published"],
                                  fractions, sources, None, None, "", **rule)
    head, rows = published_rows(data["published"])
    row = rows[fit["row"]]
    resource = fit["resource"]
    if "value" in fit:
        value = parse_expr(str(fit["value"]), where=f"{name}: fit.value")
        if not value.is_number or not 0 < value <= 1:
            raise InputError(f"{name}: fit.value: a fraction of peak is in (0, 1], got "
                             f"{fit['value']!r}", "calibration")
        fractions[resource] = value
    else:
        fractions[resource] = _solve(name, data, fractions, rule)
    sources[resource] = f"fitted on {head['title']}: {row.where}"
    return ServingCalibration(name, data["title"], data["chip"], data["published"],
                              fractions, sources, resource, fit["row"], fit["why"], **rule)


def serving_refit(name: str) -> Expr:
    """The fitted fraction of serving calibration ``name`` solved again from its published
    row, whatever value the file stores: what its ``fit.value`` must hold."""
    data = _toml("calibrations/serving", name)
    if "fit" not in data:
        raise InputError(f"{name}: the calibration fits no fraction", "calibration")
    fractions = {k: parse_expr(v["value"]) for k, v in data.get("fractions", {}).items()}
    rule = {"overlap": data.get("overlap", "op"), "calls": _calls(name, data.get("calls", {}))}
    return _solve(name, data, fractions, rule)


def _solve(name: str, data: dict[str, Any], fractions: dict[str, Expr],
           rule: dict[str, Any]) -> Expr:
    """The fraction of the fitted resource at which the fit's row takes its published
    value, the other fractions and the overlap rule as given: bisected, then kept to
    ``FIT_BITS``."""
    fit = data["fit"]
    head, rows = published_rows(data["published"])
    row = rows[fit["row"]]
    resource = fit["resource"]
    f = sp.Symbol("f", positive=True)
    trial = Efficiency({**fractions, resource: f}, overlap=rule["overlap"],
                       calls=rule["calls"])
    value = figure(row, data["chip"], head["dtype"], trial, head.get("kv_dtype"),
                   engine_kernel(head))
    fn = sp.lambdify(f, value - row.published, "math")
    lo, hi = 1e-3, 1.0
    if fn(lo) * fn(hi) > 0:
        raise InputError(f"{name}: no fraction of {resource} in (0, 1] reproduces row "
                         f"{fit['row']} ({row.where})", "calibration")
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fn(lo) * fn(mid) > 0 else (lo, mid)
    return sp.Rational(round(hi * FIT_BITS), FIT_BITS)


def _calls(name: str, table: dict[str, Any]) -> dict[str, tuple[CallLatency, ...]]:
    """A calibration's ``[[calls.LINK]]`` entries: a collective's ``per_call`` and
    ``per_hop`` times on that link under one ``protocol``, its ``bandwidth`` where it is
    not the link's calibrated one, each with its ``source``."""
    out = {}
    keys = {"protocol", "per_call", "per_hop", "source"}
    for link, specs in table.items():
        where = f"{name}: calls.{link}"
        protocols = []
        for spec in specs if isinstance(specs, list) else [specs]:
            if not isinstance(spec, dict) or not keys <= set(spec) <= keys | {"bandwidth"}:
                raise InputError(f"{where} takes protocol, per_call, per_hop, source and "
                                 f"an optional bandwidth", "calibration")
            bw = spec.get("bandwidth")
            protocols.append(CallLatency(
                spec["protocol"], parse_quantity(spec["per_call"], TIME, where=where),
                parse_quantity(spec["per_hop"], TIME, where=where), spec["source"],
                None if bw is None else parse_quantity(bw, BANDWIDTH, where=where)))
        out[link] = tuple(protocols)
    return out


def serving_calibrations() -> tuple[str, ...]:
    """The bundled serving calibrations' names."""
    from ..core.resources import data_names
    return tuple(data_names("symroof.plans", "calibrations", "serving"))


def serving_efficiency(name: str | None, chip: str, dtype: str = "bf16") -> Efficiency | None:
    """The fractions of serving calibration ``name`` for a plan on ``chip`` with weights in
    ``dtype`` (None when ``name`` is not a serving calibration); a calibration of another
    chip is refused, and so is one whose projections ran in another dtype (its compute
    fraction is of that dtype's peak).

    >>> serving_efficiency("trtllm-a100", "a100-80gb").of("nvlink")
    2/3
    >>> serving_efficiency("compute=0.5", "h100-sxm") is None
    True
    >>> serving_efficiency("trtllm-h100", "h100-sxm", "fp8-w8a8").of("nvlink")
    37/45
    """
    if not name or name.strip() not in serving_calibrations():
        return None
    cal = serving_calibration(name.strip())
    if cal.chip != chip:
        raise InputError(f"the serving calibration {cal.name} was measured on {cal.chip}, "
                         f"not {chip}", "efficiency")
    head, _ = published_rows(cal.published)
    ran, asked = matmul_input("bf16", head["dtype"]), matmul_input("bf16", dtype)
    if ran != asked:
        kv = head.get("kv_dtype") or rest_dtype(head["dtype"])
        raise InputError(f"the serving calibration {cal.name} was measured with the "
                         f"projections in {ran} (weights {head['dtype']}, KV cache {kv}), "
                         f"not {asked}: set it to {head['dtype']}", "dtype")
    return cal.efficiency()


def compare(name: str) -> list[Compared]:
    """Every row of the calibration's published table against symroof's bound and its
    forecast under the calibration."""
    cal = serving_calibration(name)
    head, rows = published_rows(cal.published)
    eff = cal.efficiency()
    out = []
    for i, row in enumerate(rows):
        kernel = engine_kernel(head)
        bound = figure(row, cal.chip, head["dtype"], kv_dtype=head.get("kv_dtype"),
                       kernel=kernel)
        predicted = figure(row, cal.chip, head["dtype"], eff, head.get("kv_dtype"), kernel)
        out.append(Compared(f"{head['engine']}: {row.where}", row.what, row.published,
                            predicted, bound, predicted / row.published - 1, i == cal.row))
    return out


def mean_abs_error(rows: list[Compared]) -> float:
    """The mean |error| over the rows not fitted."""
    errors = [abs(float(r.error)) for r in rows if not r.calibrated]
    return sum(errors) / len(errors)
