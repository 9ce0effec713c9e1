"""Critical batches as laws: data parallel and FSDP on a TPU torus axis and on a GPU
scale-out network, exact in the peak C and the one-way link bandwidth W, and their value
on every chip of the catalogue.

>>> from symroof.models import model
>>> law = critical_law(model("llama-2-7b"), "tpu-v5e", "dp", context=4096)
>>> law.axis, law.expression
('X=16 on the ici torus (wraps around)', 4935363*C/(12001696*W))
>>> round(float(law.value))
1800
>>> law.book, law.expression / law.book  # the book's V/W drops a ring's (n - 1)/n
(1645121*C/(3750530*W), 15/16)

The law comes from the plan itself (``symroof.plans.training.train``) on a one-axis mesh
whose axis bandwidth is the symbol W and whose chip peak is the symbol C, with the
latency term set aside: the batch per chip (in tokens) above which the strategy's
gradient reductions and weight gathers hide under the compute of their phase. On a torus
the axis spans a whole dimension, so it wraps; on a GPU system it runs over the scale-out
network with N GPUs (a symbol), each with its share of its node's bandwidth. Each law
comes in two forms: ``expression``, exact, and ``book``, the same plan under the book's
choices (``core.choices.BOOK``: the leading term in the axis size, no latency), so on a
scale-out network the (N - 1)/N of a ring goes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.choices import BOOK
from ..core.errors import InputError
from ..core.parse import symbol
from ..hardware.catalog import Chip, load_catalog
from ..models.config import ModelConfig
from ..parallel.mesh import mesh
from .options import StepOptions
from .strategy import parse_strategy
from .train_step import matrix_rate
from .training import B_GLOBAL, train

C, W = sp.symbols("C W", positive=True)
N_GPUS = symbol("N")  # as the mesh parser makes it


@dataclass(frozen=True)
class CriticalLaw:
    """A critical batch per chip: its expression in C and W (exact, and the book's form),
    and its value on a chip."""

    kind: str
    chip: str
    axis: str
    expression: sp.Expr
    value: sp.Expr
    limit: sp.Expr
    peak: sp.Expr
    bandwidth: sp.Expr
    term: str
    book: sp.Expr
    book_value: sp.Expr


def critical_law(cfg: ModelConfig, chip: Chip | str, kind: str, *, context: int,
                 symbolic: bool = False) -> CriticalLaw:
    """The critical batch per chip of ``kind`` (``dp`` or ``fsdp``) on ``chip``'s ICI torus
    or scale-out network, for ``cfg`` at ``context`` tokens per sequence."""
    if kind not in ("dp", "fsdp"):
        raise InputError(f"a critical-batch law is for dp or fsdp, got {kind!r}")
    the_chip = load_catalog()[chip] if isinstance(chip, str) else chip
    topo = the_chip.topology()
    if topo.kind == "torus":
        spec = f"X={topo.shape[0]}"
        m = mesh(spec, the_chip)
        where = f"{spec} on the {topo.link} torus" + (" (wraps around)" if m.axis("X").wraps
                                                    else "")
    else:
        if topo.scale_out is None:
            raise InputError(f"chip {the_chip.name!r} has no scale-out network in the "
                             f"catalogue")
        m = mesh(f"X={N_GPUS}@{topo.scale_out}", the_chip)
        where = f"X=N over the {topo.scale_out} scale-out network"
    axis = m.axis("X")
    law_mesh = m.with_axis("X", bandwidth=W, latency=sp.S.Zero)
    plan = train(cfg, law_mesh, parse_strategy(f"{kind}=X"), batch=B_GLOBAL,
                 context=context, peak=C, symbolic=symbolic)
    name = next((k for k in plan.critical_terms if k.startswith(kind)), None)
    if name is None:  # pragma: no cover - a data kind always sends its gradients
        raise InputError(f"{kind} sends nothing on this mesh")
    expr = sp.factor(plan.critical_terms[name])
    book_plan = train(cfg, law_mesh, parse_strategy(f"{kind}=X"), batch=B_GLOBAL, context=context,
                      peak=C, symbolic=symbolic, options=StepOptions(choices=BOOK))
    book = sp.factor(book_plan.critical_terms[name])
    at = {C: matrix_rate(the_chip), W: axis.bandwidth}
    value = expr.subs(at)
    limit = sp.limit(value, N_GPUS, sp.oo) if value.has(N_GPUS) else value
    return CriticalLaw(kind, the_chip.name, where, expr, value, limit, at[C], at[W], name,
                       book, book.subs(at))


def law_table(cfg: ModelConfig, *, context: int) -> list[CriticalLaw | tuple[str, str]]:
    """The laws of dp and fsdp for every chip of the bundled catalogue that has a
    topology with a torus or a scale-out network; (chip, why not) for the others."""
    out: list[CriticalLaw | tuple[str, str]] = []
    for name, c in sorted(load_catalog().chips.items()):
        for kind in ("dp", "fsdp"):
            try:
                out.append(critical_law(cfg, c, kind, context=context))
            except InputError as exc:
                out.append((name, exc.message))
                break
    return out
