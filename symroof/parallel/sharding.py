"""Sharded arrays in the books' notation: ``bf16[B_X, D_Y]``.

>>> from symroof.parallel.mesh import mesh
>>> m = mesh("X=8,Y=4", "tpu-v5e")
>>> a = sharded("bf16[B_X, D_Y]", m)
>>> a.global_shape, a.device_shape, a.global_bytes, a.device_bytes, a.replication
((B, D), (B/8, D/4), 2*B*D, B*D/16, 1)
>>> sharded("fp32[B, D_X]", m).replication
4
>>> sharded("bf16[4096_XY, 8192]", m).device_shape
(128, 8192)
>>> sharded("bf16[8192_X, 8192]", m).text
'bf16[8192_X, 8192]'


A dimension's subscript names the mesh axes it is split over (``D_XY``: over X and Y, X
the major one); no subscript means replicated along every axis the array does not use.
Names are positive symbols, numbers are exact sizes (a number may repeat: ``[8192, 8192]``).
Errors point at the token: an unknown axis, an axis used twice, a number that does not
divide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core import tables as tb
from ..core.errors import InputError
from ..core.parse import CONSTANTS, MAX_DIGITS, NOT_SIZES, exact, symbol, user_sizes
from ..core.sizes import canonical_dtype, dtype_bytes
from ..core.units import CAPACITY, records
from .mesh import Mesh, split_axes

_ARRAY = re.compile(r"\s*([A-Za-z][A-Za-z0-9]*)\s*\[(.*)\]\s*\Z")
_DIM = re.compile(r"([A-Za-z][A-Za-z0-9_]*|[0-9]+(_[A-Za-z0-9]+)?)\Z")


@dataclass(frozen=True)
class Dim:
    """One dimension: its name, its global size, and the mesh axes it is split over."""

    name: str
    size: sp.Expr
    axes: tuple[str, ...] = ()

    def token(self) -> str:
        """The dimension as written: a repeated number's ``#k`` (its k-th use) left out."""
        return self.name.partition("#")[0] + (f"_{''.join(self.axes)}" if self.axes else "")


@dataclass(frozen=True, repr=False)
class ShardedArray(tb.RichView):
    """An array of ``dtype`` with ``dims`` laid out over ``mesh``."""

    dtype: str
    dims: tuple[Dim, ...]
    mesh: Mesh

    @property
    def text(self) -> str:
        """The array in the book notation: ``bf16[B_X, D_Y]``."""
        return f"{self.dtype}[{', '.join(d.token() for d in self.dims)}]"

    def __str__(self) -> str:
        return self.text

    def _view(self) -> tuple[str, tb.Table]:
        rows: list[tuple[str, Any]] = [
            ("global shape", ", ".join(sp.sstr(x) for x in self.global_shape)),
            ("per-device shape", ", ".join(sp.sstr(x) for x in self.device_shape)),
            ("global bytes", self.global_bytes), ("bytes per device", self.device_bytes),
            ("replication", self.replication)]
        return self.text, tb.key_values(rows)

    @property
    def global_shape(self) -> tuple[sp.Expr, ...]:
        return tuple(d.size for d in self.dims)

    @property
    def device_shape(self) -> tuple[sp.Expr, ...]:
        return tuple(d.size / self._split(d.axes) for d in self.dims)

    @property
    def used_axes(self) -> tuple[str, ...]:
        """The mesh axes some dimension is split over, in the order they appear."""
        return tuple(a for d in self.dims for a in d.axes)

    @property
    def global_bytes(self) -> sp.Expr:
        return sp.Mul(*self.global_shape) * dtype_bytes(self.dtype)

    @property
    def device_bytes(self) -> sp.Expr:
        return sp.Mul(*self.device_shape) * dtype_bytes(self.dtype)

    @property
    def total_bytes(self) -> sp.Expr:
        """Bytes held over all devices of the mesh: each device's shard, summed (the
        global bytes times the replication).

        >>> from symroof.parallel.mesh import mesh
        >>> sharded("bf16[B_X, D]", mesh("X=8,Y=4", "tpu-v5e")).total_bytes
        8*B*D
        """
        return sp.cancel(self.device_bytes * self.mesh.devices)

    @property
    def replication(self) -> sp.Expr:
        """How many devices hold each element: the sizes of the axes no dimension uses."""
        return sp.Mul(*(a.size for n, a in self.mesh.axes.items() if n not in self.used_axes))

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise InputError(f"{self.text} has no dimension {name!r} "
                         f"(dimensions: {', '.join(d.name for d in self.dims)})")

    def with_axes(self, name: str, axes: tuple[str, ...]) -> ShardedArray:
        """The same array with dimension ``name`` split over ``axes`` instead."""
        dims = tuple(Dim(d.name, d.size, axes) if d.name == name else d for d in self.dims)
        return ShardedArray(self.dtype, dims, self.mesh)

    def _split(self, axes: tuple[str, ...]) -> sp.Expr:
        return sp.Mul(*(self.mesh.axis(a).size for a in axes))


@records(global_bytes=CAPACITY, device_bytes=CAPACITY, total_bytes=CAPACITY)
def sharded(spec: str | ShardedArray, on: Mesh, *,
            dims: Mapping[str, sp.Expr | int] | None = None) -> ShardedArray:
    """Parse ``dtype[DIM_AXES, ...]`` over the mesh ``on``; ``dims`` gives sizes to names."""
    if isinstance(spec, ShardedArray):
        return spec
    where = f"array {spec!r}"
    match = _ARRAY.match(spec)
    if not match:
        raise InputError("expected DTYPE[DIM, DIM_AXES, ...], e.g. 'bf16[B_X, D_Y]'", where)
    dtype = canonical_dtype(match.group(1), where=where)
    body_at = match.start(2)
    out: list[Dim] = []
    seen: dict[str, str] = {}
    offset = body_at
    for raw in match.group(2).split(","):
        token = raw.strip()
        column = offset + (len(raw) - len(raw.lstrip())) + 1
        offset += len(raw) + 1
        at = f"{where}, token {token!r} at column {column}"
        if not token:
            raise InputError("empty dimension", at)
        if not _DIM.match(token):
            raise InputError("a dimension is a name or a whole number, with an optional "
                             "_AXES subscript", at)
        name, axes = _split_token(token, on, at)
        if name in NOT_SIZES or name in CONSTANTS:  # as formulas refuse them
            raise InputError(f"the name {name!r} is not a size", at)
        user_sizes(symbol(name), at)  # alpha_<link>, T_<term>: the engine's own symbols
        for a in axes:
            if a in seen:
                raise InputError(f"mesh axis {a!r} already splits dimension {seen[a]!r}: an "
                                 f"axis shards at most one dimension", at)
            seen[a] = name
        if name.isdigit() and len(name) > MAX_DIGITS:
            raise InputError(f"a dimension of {len(name)} digits is beyond the limits of a "
                             f"formula literal ({MAX_DIGITS} digits)", at)
        size = sp.Integer(int(name)) if name.isdigit() else \
            exact((dims or {}).get(name, symbol(name)))
        if any(d.name == name for d in out):
            if not name.isdigit():
                raise InputError(f"dimension {name!r} appears twice", at)
            name = f"{name}#{sum(d.name.partition('#')[0] == name for d in out) + 1}"
        if size.is_Integer and size < 1:
            raise InputError("a dimension needs at least one element", at)
        split = sp.Mul(*(on.axis(a).size for a in axes))
        if size.is_Integer and split.is_Integer and size % split != 0:
            raise InputError(f"{size} does not divide into {split} shards", at)
        out.append(Dim(name, size, axes))
    if not out:
        raise InputError("an array needs at least one dimension", where)
    return ShardedArray(dtype, tuple(out), on)


def _split_token(token: str, on: Mesh, at: str) -> tuple[str, tuple[str, ...]]:
    name, sep, sub = token.rpartition("_")
    if not sep:
        return token, ()
    known = tuple(on.axes)
    axes = [sub] if sub in on.axes else split_axes(sub, known)
    if axes and name:
        return name, tuple(axes)
    if sub.isupper() or not name or name.isdigit():
        bad = next((c for c in sub if c not in "".join(known)), sub)
        raise InputError(f"dimension {name or token!r} is sharded over unknown mesh axis "
                         f"{bad if len(sub) > 1 else sub!r} (mesh axes: {', '.join(known)})",
                         at)
    return token, ()


def per_chip(total: Any, on: Mesh) -> sp.Expr:
    """A total over the mesh (a global batch, a memory, FLOPs) as each chip's share.

    >>> from symroof.parallel.mesh import mesh
    >>> per_chip(4 * 10**6, mesh("X=16,Y=16", "tpu-v5e"))
    15625
    """
    value = exact(total)
    if value.is_positive is False:
        raise InputError(f"a total to share must be positive, got {total!r}", "per_chip")
    return sp.cancel(value / on.devices)
