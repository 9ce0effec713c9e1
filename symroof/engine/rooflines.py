"""Rooflines: an op's times on a chip, its bounds, intensity and attainable rate.

>>> from symroof import einsum, chip
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> rl.intensity
B*D*F/(B*D + B*F + D*F)
>>> rl.ridge
9850/41
>>> rl.at({"B": 512, "D": 8192, "F": 32768}).bound()
'compute'

T_math = FLOPs / peak; T_x = bytes at x / bandwidth of x for each memory level and link;
T_lower = max of them (perfect overlap), T_upper = their sum (no overlap). Intensity and
ridge are taken against the primary resource: HBM when the op touches it, else its first
memory level, else its first link.

Named terms: ``terms`` maps ``compute``, each memory level and link, and any ``extra``
time terms (a collective's ``latency``) to times. Terms overlap unless named in
``serial``: T_lower = max(overlapping terms) + sum(serial terms), T_upper = sum of all.

>>> from symroof import chip, sizes
>>> from symroof.engine.ops import op
>>> N, = sizes("N")
>>> rl = roofline(op("send", 0, comms={"ici": N}), chip("tpu-v5e"),
...               extra={"latency": sp.Rational(1, 10**6)}, serial=("latency",))
>>> rl.terms
{'compute': 0, 'ici': N/45000000000, 'latency': 1/1000000}
>>> rl.t_lower
N/45000000000 + 1/1000000
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import sympy as sp

from ..core.errors import InputError, expect
from ..core.memo import memo
from ..core.parse import exact, symbol
from ..core.sizes import canonical_dtype
from ..core.steps import Step
from ..core.tables import RichView, Table, key_values
from ..core.units import COMPUTE as RATE
from ..core.units import FLOPS, INTENSITY, TIME, Dimension, records
from ..hardware.catalog import Chip
from .algebra import cancel, substitute
from .ops import Op
from .sweeps import at_fixed

COMPUTE = "compute"
# what a roofline at concrete sizes gives, with its dimension (a chapter's values know it)
AT_SIZES: dict[str, Dimension] = {
    "peak": RATE, "ridge": INTENSITY, "intensity": INTENSITY, "t_math": TIME,
    "t_lower": TIME, "t_upper": TIME, "attainable": RATE, "t_comms": TIME, "op.flops": FLOPS}


@dataclass(frozen=True, repr=False)
class Roofline(RichView):
    """The roofline of ``op`` on ``chip``; every field is an exact SymPy expression."""

    op: Op
    chip: Chip
    peak: sp.Expr
    bandwidths: Mapping[str, sp.Expr]
    t_math: sp.Expr
    t_comms: Mapping[str, sp.Expr]
    primary: str
    intensity: sp.Expr
    ridge: sp.Expr
    steps: tuple[Step, ...]
    extra: Mapping[str, sp.Expr] = field(default_factory=dict)
    serial: tuple[str, ...] = ()
    compute: str = ""  # the compute unit and dtype whose peak is used (the op's unless given)
    dtype: str = ""

    @property
    def terms(self) -> dict[str, sp.Expr]:
        """Every named time term: ``compute``, each memory level and link, the extras."""
        return {COMPUTE: self.t_math, **self.t_comms, **self.extra}

    @cached_property
    def t_lower(self) -> sp.Expr:
        """The overlapped time: the Max of the terms that overlap, plus the serial ones
        (computed once per roofline: a Max of symbolic terms compares them pairwise)."""
        terms = self.terms
        overlapping = [t for k, t in terms.items() if k not in self.serial]
        most = sp.Max(*overlapping) if overlapping else sp.S.Zero  # every term serial: a sum
        return most + sp.Add(*(terms[k] for k in self.serial if k in terms))

    @cached_property
    def t_upper(self) -> sp.Expr:
        return sp.Add(*self.terms.values())

    @cached_property
    def attainable(self) -> sp.Expr:
        """Attainable FLOP/s = min(peak, intensity x bandwidth of the primary resource)
        (computed once per roofline, as ``t_lower``: a chapter's dimensions read it for
        every claim)."""
        return sp.Min(self.peak, self.intensity * self.bandwidths[self.primary])

    @records(AT_SIZES)
    def at(self, values: Mapping[str | sp.Symbol, sp.Expr | int]) -> Roofline:
        """The same roofline at concrete sizes (names or symbols to numbers)."""
        subs = size_values(values)
        return replace(
            self, op=self.op.subs(subs), t_math=substitute(self.t_math, subs),
            t_comms={k: substitute(v, subs) for k, v in self.t_comms.items()},
            extra={k: substitute(v, subs) for k, v in self.extra.items()},
            intensity=substitute(self.intensity, subs),
            steps=(*self.steps, Step("substitute", "sizes", None, dict(subs), "given")))

    def sweep(self, name: str | sp.Symbol, values: Any,
              fixed: Mapping[str | sp.Symbol, sp.Expr | int] | None = None) -> Any:
        """Attainable FLOP/s, min(peak, intensity x primary bandwidth), at every one of
        ``values`` (a NumPy array) of the size ``name``, the other sizes ``fixed``: the
        intensity is compiled once with ``lambdify`` (and cached: another sweep of the same
        roofline and fixed sizes compiles nothing) and evaluated vectorised.

        >>> import numpy as np
        >>> from symroof import chip, einsum
        >>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
        >>> rl.sweep("B", np.array([1.0, 4096.0]), {"D": 8192, "F": 32768}).round(-6).tolist()
        [809876000000.0, 197000000000000.0]
        """
        import numpy as np
        f = at_fixed(self.intensity, name, fixed)
        peak, bandwidth = self.peak, self.bandwidths[self.primary]
        if not (peak.is_number and bandwidth.is_number):
            raise InputError(f"the chip's peak and {self.primary} bandwidth must be numbers")
        x = np.asarray(values, dtype=np.float64)
        rate = np.multiply(np.broadcast_to(f(x), x.shape), float(bandwidth))
        return np.minimum(rate, float(peak), out=rate)

    def bound(self) -> str:
        """``compute``, the name of the binding memory level or link, or ``undetermined``
        while sizes are symbolic."""
        return binding(self.terms)

    def _view(self) -> tuple[str, Table]:
        rows: list[tuple[str, Any]] = [
            ("FLOPs", self.op.flops), (f"peak ({self.compute or self.op.compute} "
                                       f"{self.dtype or self.op.dtype}), FLOP/s", self.peak),
            *((f"{k} bandwidth, B/s", v) for k, v in self.bandwidths.items()),
            (f"intensity against {self.primary}, FLOP/byte", self.intensity),
            ("critical intensity, FLOP/byte", self.ridge), ("T_math, s", self.t_math),
            *((f"T_{k}, s", v) for k, v in self.t_comms.items()), ("bound", self.bound())]
        return f"{self.op.name} on {self.chip.name}", key_values(rows)

    def condition(self) -> sp.Rel:
        """When the op is compute-bound against the primary resource: intensity > ridge."""
        return sp.StrictGreaterThan(self.intensity, self.ridge, evaluate=False)


@memo
def roofline(op: Op, chip: Chip, *, dtype: str | None = None,
             compute: str | None = None,
             primary: str | None = None, bandwidths: Mapping[str, sp.Expr] | None = None,
             extra: Mapping[str, sp.Expr] | None = None,
             serial: tuple[str, ...] = ()) -> Roofline:
    """The roofline of ``op`` on ``chip`` (peak from the op's dtype and compute unit
    unless given).

    ``bandwidths`` replaces the chip's figure for some resources (a mesh axis's per-chip
    share of a link); ``extra`` adds named time terms; ``serial`` names the terms that do
    not overlap the others.

    >>> from symroof import chip, einsum
    >>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
    >>> rl.intensity, rl.ridge
    (B*D*F/(B*D + B*F + D*F), 9850/41)
    """
    expect(op, Op, "an Op (einsum(...), op(...))", "roofline")
    if isinstance(chip, str):
        from ..hardware.catalog import chip as named
        chip = named(chip)
    expect(chip, Chip, "a Chip (chip('tpu-v5e')) or a chip name", "roofline")
    peak = chip.peak(dtype or op.dtype, compute or op.compute)
    resources = [*op.levels, *(k for k in op.comms if k not in op.levels)]
    if not resources:
        if op.flops == 0:
            raise InputError(f"op {op.name!r} does no work: give FLOPs, bytes or comm bytes")
        resources = ["hbm"]  # a pure-FLOP op: no bytes, compute-bound at any size
    given = dict(bandwidths or {})
    for k in op.comms:
        if k not in given and k in chip.figures and f"{k}.capacity" in chip.figures:
            raise InputError(f"{k} is a memory level, not a link: its bytes are the op's "
                             "reads and writes", f"op {op.name!r}: comm bytes")
    bandwidths = {r: given[r] if r in given else chip.bandwidth(r) for r in resources}
    t_math = op.flops / peak
    t_comms = {r: _moved(op, r) / bandwidths[r] for r in resources}
    main = primary or ("hbm" if "hbm" in op.levels else resources[0])
    if main not in bandwidths:
        raise InputError(f"op {op.name!r} moves no bytes over {main!r}")
    moved = _moved(op, main)
    intensity = sp.oo if moved == 0 else cancel(op.flops / moved)
    ridge = peak / bandwidths[main]
    steps = (
        Step("define", "compute time", None,
             sp.Eq(symbol("T_math"), _over(op.flops, peak), evaluate=False),
             f"FLOPs / peak ({chip.name} {compute or op.compute} {dtype or op.dtype})"),
        *(Step("define", f"time on {r}", None,
               sp.Eq(symbol(f"T_{r}"), _over(_moved(op, r), bandwidths[r]), evaluate=False),
               f"bytes / {r} bandwidth")
          for r in t_comms),
        Step("simplify", f"arithmetic intensity against {main}", op.flops / moved, intensity,
             "FLOPs / bytes"),
        Step("evaluate", "critical intensity", None, ridge, f"peak / {main} bandwidth"),
    )
    bare = Roofline(op, chip, peak, bandwidths, t_math, t_comms, main, intensity, ridge, steps,
                    {}, (), compute or op.compute, canonical_dtype(dtype or op.dtype))
    return with_terms(bare, extra, serial)


def with_terms(rl: Roofline, extra: Mapping[str, sp.Expr] | None,
               serial: tuple[str, ...] = ()) -> Roofline:
    """``rl`` (a roofline with no extra terms) with ``extra`` named time terms added,
    ``serial`` naming the terms that do not overlap the others: what ``roofline`` returns
    when given them, at the cost of no other work (one op timed under several collective
    costs builds its roofline once).

    >>> from symroof import chip, einsum
    >>> op = einsum("B D, D F -> B F", "bf16")
    >>> bare = roofline(op, chip("tpu-v5e"))
    >>> t = {"tp": sp.Rational(1, 10**6)}
    >>> with_terms(bare, t, ("tp",)).t_lower == roofline(op, chip("tpu-v5e"), extra=t,
    ...                                                  serial=("tp",)).t_lower
    True
    """
    added = {k: exact(v) for k, v in (extra or {}).items()}
    clash = [k for k in added if k == COMPUTE or k in rl.t_comms]
    unknown = [k for k in serial if k != COMPUTE and k not in rl.t_comms and k not in added]
    if clash or unknown:
        raise InputError(f"term {(clash or unknown)[0]!r} is " +
                         ("already a term of the roofline" if clash else "not a term"))
    if not added and not serial:
        return rl
    steps = rl.steps + tuple(Step("define", f"time term {k}", None,
                                  sp.Eq(symbol(f"T_{k}"), t, evaluate=False), "given")
                             for k, t in added.items())
    return replace(rl, steps=steps, extra=added, serial=tuple(serial))


def binding(terms: Mapping[str, sp.Expr]) -> str:
    """The name of the largest of ``terms`` (``compute`` on a tie), or ``undetermined`` while
    one is not a number: the one rule for a bound.

    >>> binding({"compute": sp.Integer(2), "hbm": sp.Integer(2)})
    'compute'
    >>> binding({"compute": sp.Symbol("N", positive=True), "hbm": sp.S.Zero})
    'compute'
    """
    moving = {k: t for k, t in terms.items() if t != 0}  # a zero term never binds
    if len(moving) == 1:
        return next(iter(moving))
    if not all(t.is_number for t in terms.values()):
        return "undetermined"
    return max(terms, key=lambda k: (terms[k], k == COMPUTE))


def _over(amount: sp.Expr, rate: sp.Expr) -> sp.Expr:
    """``amount / rate`` as a step shows it: the text's own figures (2 B D F over the peak),
    not a factor folded into the rate (B D F over half the peak)."""
    if amount == 0 or rate == 1:
        return cancel(amount / rate)
    return sp.Mul(amount, sp.Pow(rate, -1, evaluate=False), evaluate=False)


def _moved(op: Op, resource: str) -> sp.Expr:
    """Bytes ``op`` moves at a memory level or over a link (0 for a pure-FLOP op)."""
    return op.bytes(resource) if resource in op.levels else \
        sp.sympify(op.comms.get(resource, 0))


def size_values(values: Mapping[str | sp.Symbol, sp.Expr | int]) -> dict[sp.Symbol, sp.Expr]:
    """Names or symbols mapped to SymPy values: ``{"D": 8192}`` -> ``{D: 8192}``."""
    return {(symbol(k) if isinstance(k, str) else k): exact(v) for k, v in values.items()}
