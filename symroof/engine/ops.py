"""Operations and their costs: FLOPs, bytes per memory level, bytes per network link.

>>> from symroof import sizes
>>> mm = einsum("B D, D F -> B F", "bf16")
>>> mm.flops, mm.bytes()
(2*B*D*F, 2*B*D + 2*B*F + 2*D*F)
>>> chain = [elementwise(f"op{i}", sizes("N")[0], "bf16") for i in range(3)]
>>> sequence(*chain).bytes(), fuse(*chain).bytes()
(12*N, 4*N)

An einsum spec names each dimension (``"B D, B D F -> B F"``); a contraction costs
2 x the product of all dimensions (one multiply and one add each), a spec without a
contracted dimension costs one operation per output element. Bytes are operand sizes
times their dtype's bytes (reads) plus the output's (writes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from itertools import pairwise
from operator import mul
from typing import Any

import sympy as sp

from ..core.errors import InputError, expect
from ..core.parse import exact, size_name, symbol, user_sizes
from ..core.printer import text
from ..core.sizes import by_bytes, canonical_dtype, dtype_bytes
from ..core.tables import RichView, Table, key_values
from .algebra import substitute

Cost = Mapping[str, sp.Expr]
_DIM = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, repr=False)
class Op(RichView):
    """An operation's costs. ``reads``/``writes`` map memory levels (``hbm``, ``vmem``) to
    bytes; ``comms`` maps links (``ici``, ``nvlink``) to bytes sent; ``dtype`` and ``compute``
    pick the chip's peak rate."""

    name: str
    flops: sp.Expr
    reads: Cost = field(default_factory=dict)
    writes: Cost = field(default_factory=dict)
    comms: Cost = field(default_factory=dict)
    dtype: str = "bf16"
    compute: str = "mxu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "flops", exact(self.flops))
        for name in ("reads", "writes", "comms"):
            object.__setattr__(self, name, {k: exact(v) for k, v in
                                            sorted(getattr(self, name).items())})
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))

    def _view(self) -> tuple[str, Table]:
        rows: list[tuple[str, Any]] = [("FLOPs", self.flops)]
        rows += [(f"bytes at {level}", self.bytes(level)) for level in self.levels]
        rows += [(f"bytes over {link}", sent) for link, sent in self.comms.items()]
        return f"{self.name} ({self.compute} {self.dtype})", key_values(rows)

    def bytes(self, level: str = "hbm") -> sp.Expr:
        """Bytes moved at a memory level: reads plus writes."""
        return exact(self.reads.get(level, 0) + self.writes.get(level, 0))

    @property
    def levels(self) -> list[str]:
        """Memory levels this op moves bytes at."""
        return sorted(set(self.reads) | set(self.writes))

    def then(self, other: Op, name: str | None = None) -> Op:
        """Run ``self`` then ``other``: every cost adds."""
        return Op(name or f"{self.name}; {other.name}", self.flops + other.flops,
                  _add(self.reads, other.reads), _add(self.writes, other.writes),
                  _add(self.comms, other.comms), self.dtype, self.compute)

    def repeat(self, times: sp.Expr | int, name: str | None = None) -> Op:
        """Run ``self`` ``times`` times: every cost scales."""
        k = exact(times)
        return Op(name or f"{k} x {self.name}", k * self.flops, _scale(self.reads, k),
                  _scale(self.writes, k), _scale(self.comms, k), self.dtype, self.compute)

    def renamed(self, name: str) -> Op:
        return replace(self, name=name)

    def subs(self, values: Mapping[sp.Symbol, sp.Expr]) -> Op:
        """Costs with sizes substituted."""
        def sub(cost: Cost) -> dict[str, sp.Expr]:
            return {k: substitute(v, values) for k, v in cost.items()}
        return replace(self, flops=substitute(self.flops, values), reads=sub(self.reads),
                       writes=sub(self.writes), comms=sub(self.comms))


def positive(expr: sp.Expr, text_: str, where: str) -> sp.Expr:
    """``expr`` when it can be positive for positive sizes: a number that is not, a formula
    that never is, one that is not real or not finite, or one naming a size as the engine
    names its own symbols (``alpha_<link>``, ``T_<term>``, ``epsilon``) is an InputError.

    >>> from symroof.core.parse import parse_expr
    >>> positive(parse_expr("2*P"), "2*P", "bytes")
    2*P
    """
    user_sizes(expr, where)
    simple = sp.simplify(expr) if expr.has(sp.log, sp.exp) else expr  # a hidden 0 or 0/0
    if simple is not expr and simple == 0:
        raise InputError(f"{text_!r} is 0; it must be positive", where)
    if simple.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise InputError(f"{text_!r} is not finite ({text(simple)}); it must be positive", where)
    if expr.is_number and not expr.is_positive:
        raise InputError(f"{text_!r} must be positive", where)
    if expr.is_positive is False or expr.is_extended_real is False:
        what = "not real" if expr.is_extended_real is False else "never positive"
        raise InputError(f"{text_!r} is {what} ({text(expr)}); it must be positive", where)
    return expr


def op(name: str, flops: sp.Expr | int, bytes: sp.Expr | int | Cost = 0, *,
       writes: sp.Expr | int | Cost = 0, comms: Cost | None = None,
       dtype: str = "bf16", compute: str = "mxu") -> Op:
    """An op by hand; a bare ``bytes`` or ``writes`` is HBM traffic.

    >>> from symroof import sizes
    >>> B, D, F = sizes("B D F")
    >>> op("shard", B*D*F, comms={"ici": 2*B*F}).comms
    {'ici': 2*B*F}
    """
    where = f"op {name!r}"

    def checked(value: Any, what: str) -> sp.Expr:  # 0 (an op without it), or positive
        e = exact(value, f"{where}: {what}")
        return e if e == 0 else positive(e, str(value), f"{where}: {what}")

    def cost(value: sp.Expr | int | Cost, what: str) -> dict[str, sp.Expr]:
        if isinstance(value, Mapping):
            return {k: checked(v, f"{what} {k}") for k, v in value.items()}
        e = checked(value, what)
        return {"hbm": e} if e != 0 else {}
    return Op(name, checked(flops, "flops"), cost(bytes, "bytes"), cost(writes, "writes"),
              cost(comms or {}, "comms"), dtype, compute)


def einsum(spec: str, dtypes: str | Sequence[str] = "bf16", out: str | None = None, *,
           name: str | None = None, compute: str | None = None,
           dims: Mapping[str, sp.Expr] | None = None) -> Op:
    """An op from an einsum spec and dtypes (one for all operands, or one each).

    >>> w8a16 = einsum("B D, D F -> B F", ["bf16", "int8"], out="bf16")
    >>> w8a16.bytes()
    2*B*D + 2*B*F + D*F

    The output dtype defaults to the first operand's, and so does the compute dtype that
    picks the chip's peak. ``dims`` maps dimension names to expressions (default: positive
    symbols of the same names).
    """
    operands, output, where = _spec(spec, "einsum")
    kinds = [dtypes] * len(operands) if isinstance(dtypes, str) else list(dtypes)
    if len(kinds) != len(operands):
        raise InputError(f"{len(operands)} operands but {len(kinds)} dtypes", where)
    every = sorted({d for dims_ in operands for d in dims_})
    missing = [d for d in output if d not in every]
    if missing:
        raise InputError(f"output dimension {missing[0]!r} is in no operand", where)
    symbols = {d: (dims or {}).get(d, sp.Symbol(d, positive=True)) for d in every}

    def size(ds: Iterable[str]) -> sp.Expr:
        return reduce(mul, (symbols[d] for d in ds), sp.Integer(1))

    contracted = [d for d in every if d not in output]
    flops = 2 * size(every) if contracted else size(output)
    out_dtype = out or kinds[0]
    reads = sum((size(ds) * dtype_bytes(k, where=where) for ds, k in zip(operands, kinds,
                                                                         strict=True)),
                sp.Integer(0))
    writes = size(output) * dtype_bytes(out_dtype, where=where)
    if compute is None and by_bytes(kinds[0]):
        raise InputError(f"the dtype {kinds[0].strip()!r} is given by its bytes and names no "
                         f"peak: say the compute dtype (compute='bf16')", where)
    return Op(name or spec, flops, {"hbm": reads}, {"hbm": writes}, {},
              compute or kinds[0])


def elementwise(name: str, elements: sp.Expr, dtype: str = "bf16",
                flops_per_element: sp.Expr | int = 1) -> Op:
    """An elementwise op over ``elements`` values: reads them once and writes them once.

    >>> from symroof import sizes
    >>> (N,) = sizes("N")
    >>> relu = elementwise("relu", N, "bf16")
    >>> relu.flops, relu.bytes()
    (N, 4*N)
    """
    size = exact(elements) * dtype_bytes(dtype)
    return Op(name, exact(flops_per_element) * elements, {"hbm": size}, {"hbm": size},
              {}, dtype, "vpu")


def sequence(*ops: Op, name: str | None = None) -> Op:
    """Ops run one after another, each through memory: their costs add.

    >>> from symroof import sizes
    >>> (N,) = sizes("N")
    >>> relu = elementwise("relu", N, "bf16")
    >>> sequence(relu, relu).bytes()
    8*N
    """
    if not ops:
        raise InputError("sequence of no ops")
    first = ops[0]
    if len(ops) == 1:
        return first.renamed(name) if name else first
    # one sum per cost, not one per op: adding n terms one at a time costs n^2
    return Op(name or "; ".join(o.name for o in ops), sp.Add(*(o.flops for o in ops)),
              _total(o.reads for o in ops), _total(o.writes for o in ops),
              _total(o.comms for o in ops), first.dtype, first.compute)


def fuse(*ops: Op, name: str | None = None) -> Op:
    """A chain fused into one kernel: each op's output is the next op's input and never
    reaches memory. The reads are the first op's plus every later op's other inputs (what
    it reads beyond the previous output, such as V after QK^T); the writes are the last
    op's; FLOPs and comms add. A chain whose op reads less than the previous op wrote is
    refused: its intermediate cannot be the next op's input.

    >>> from symroof import sizes
    >>> (N,) = sizes("N")
    >>> relu = elementwise("relu", N, "bf16")
    >>> fuse(relu, relu).bytes()
    4*N
    """
    if not ops:
        raise InputError("fusion of no ops")
    total = sequence(*ops)
    reads = dict(ops[0].reads)
    for prev, nxt in pairwise(ops):
        for level in sorted(set(nxt.reads) | set(prev.writes)):
            extra = sp.expand(nxt.reads.get(level, 0) - prev.writes.get(level, 0))
            if extra.is_negative:
                raise InputError(f"cannot fuse {prev.name!r} into {nxt.name!r}: it reads "
                                 f"less from {level} than {prev.name!r} writes")
            if extra != 0:
                reads[level] = exact(reads.get(level, 0) + extra)
    return replace(total, name=name or "fused(" + ", ".join(o.name for o in ops) + ")",
                   reads=reads, writes=dict(ops[-1].writes))


def backward_specs(spec: str) -> tuple[str, ...]:
    """The einsum specs of the backward pass of ``spec``, one per operand: the gradient of
    operand i is the output's gradient contracted with the other operands, back onto
    operand i's dimensions.

    >>> backward_specs("B D, D F -> B F")
    ('B F, D F -> B D', 'B D, B F -> D F')
    """
    operands, output, where = _spec(spec, "backward")
    out: list[str] = []
    for i, dims_ in enumerate(operands):
        others = [o for j, o in enumerate(operands) if j != i]
        inputs = [output, *others] if i == 0 else [*others[:i], output, *others[i:]]
        seen = {d for ds in inputs for d in ds}
        lone = [d for d in dims_ if d not in seen]
        if lone:
            raise InputError(f"dimension {lone[0]} of operand {i + 1} is in no other array "
                             f"nor the output: its gradient is a broadcast, not an einsum",
                             where)
        out.append(", ".join(" ".join(ds) for ds in inputs if ds) + " -> " + " ".join(dims_))
    return tuple(out)


def backward(spec: str, dtypes: str | Sequence[str] = "bf16") -> tuple[Op, ...]:
    """The backward pass of ``spec`` as ops, one per operand's gradient (dtypes as the
    forward's, the output's gradient in the first operand's dtype).

    >>> [op.flops for op in backward("B D, D F -> B F")]
    [2*B*D*F, 2*B*D*F]
    """
    specs = backward_specs(spec)
    kinds = [dtypes] * len(specs) if isinstance(dtypes, str) else list(dtypes)
    if len(kinds) != len(specs):
        raise InputError(f"{len(specs)} operands but {len(kinds)} dtypes", f"einsum {spec!r}")
    ops = []
    for i, grad in enumerate(specs):
        others = [k for j, k in enumerate(kinds) if j != i]
        ins = [kinds[0], *others] if i == 0 else [*others[:i], kinds[0], *others[i:]]
        ops.append(einsum(grad, ins if grad.count(",") + 1 == len(ins) else kinds[0],
                          out=kinds[i], name=f"d{i + 1} of {spec}: {grad}"))
    return tuple(ops)


def _spec(spec: str, name: str) -> tuple[list[list[str]], list[str], str]:
    """An einsum spec's operands' and output's dimension names, and the place errors name.

    >>> _spec("B D, D F -> B F", "einsum")[:2]
    ([['B', 'D'], ['D', 'F']], ['B', 'F'])
    """
    expect(spec, str, "an einsum spec such as 'B D, D F -> B F'", name)
    where = f"einsum {spec!r}"
    lhs, arrow, rhs = spec.partition("->")
    if not arrow:
        raise InputError("expected 'operands -> output'", where)
    return ([_dims(part, where) for part in lhs.split(",")],
            _dims(rhs, where, allow_empty=True), where)


def _dims(part: str, where: str, allow_empty: bool = False) -> list[str]:
    names = part.replace("[", " ").replace("]", " ").split()
    if not names and not allow_empty:
        raise InputError("an operand has no dimensions", where)
    for n in names:
        if not _DIM.match(n):
            raise InputError(f"bad dimension name {n!r}", where)
        user_sizes(symbol(size_name(n, where)), where)  # not pi, oo, nan, T_math, alpha_ici
    if len(set(names)) != len(names):
        raise InputError(f"a dimension repeats in {part.strip()!r}", where)
    return names


def _add(a: Cost, b: Cost) -> dict[str, sp.Expr]:
    return {k: exact(a.get(k, 0) + b.get(k, 0)) for k in sorted(set(a) | set(b))}


def _total(costs: Iterable[Cost]) -> dict[str, sp.Expr]:
    terms: dict[str, list[sp.Expr]] = {}
    for cost in costs:
        for k, v in cost.items():
            terms.setdefault(k, []).append(v)
    return {k: sp.Add(*terms[k]) for k in sorted(terms)}


def _scale(a: Cost, k: sp.Expr) -> dict[str, sp.Expr]:
    return {key: k * v for key, v in a.items()}
