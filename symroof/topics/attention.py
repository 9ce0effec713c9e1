"""Attention's HBM traffic from its loop structure (standard and tiled, FlashAttention).

>>> N, d, M = sizes("N d M")
>>> standard = standard_attention(N, d)
>>> standard.total, theta(standard.total)
(4*N**2 + 4*N*d, N**2 + N*d)
>>> tiled = tiled_attention(N, d, M)
>>> tiled.theta
N*d + N**2*d**2/M
>>> reduction(standard, tiled)
M/d**2

Traffic is counted in elements moved between HBM and on-chip memory. Standard attention
runs three kernels and writes the N x N scores and probabilities to HBM. The tiled
algorithm (FlashAttention, Dao et al. 2022, Algorithm 1) keeps a K/V tile in SRAM while
it sweeps every Q/O tile, so K and V cross once and Q, O and the softmax statistics once per
K/V tile. Its exact count keeps the floors and ceilings of the block sizes; its Theta form
replaces them by their arguments and absorbs terms under ``d >= 1``.

The online softmax that makes the tiling possible is ``symroof.topics.online_softmax``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import exact
from ..core.sizes import sizes  # noqa: F401  (used by the doctests)
from ..core.steps import Step
from ..engine.asymptotics import (
    expansion,
    theta,  # noqa: F401  (used by the doctests)
)
from ..engine.equations import positive_root

#: Where the block sizes come from: Algorithm 1, line 1 of Dao et al. (2022).
ALGORITHM_1 = "Dao et al. (2022), FlashAttention, Algorithm 1, line 1"
ROUNDINGS = ("ceil", "floor")


@dataclass(frozen=True)
class Transfer:
    """``rows`` x ``width`` elements of ``array`` read or written once per visit of
    ``where`` (a kernel, or the ``outer`` / ``inner`` loop of the tiled algorithm)."""

    array: str
    direction: str
    rows: sp.Expr
    width: sp.Expr
    where: str

    @property
    def elements(self) -> sp.Expr:
        return self.rows * self.width


@dataclass(frozen=True)
class StandardAttention:
    """Three kernels: S = Q K^T, A = softmax(S), O = A V, each through HBM."""

    N: sp.Expr
    d: sp.Expr
    transfers: tuple[Transfer, ...]

    @property
    def total(self) -> sp.Expr:
        return sp.expand(sum((t.elements for t in self.transfers), sp.Integer(0)))

    def kernel(self, number: int) -> sp.Expr:
        """Elements moved by kernel 1, 2 or 3."""
        found = [t.elements for t in self.transfers if t.where == f"kernel {number}"]
        if not found:
            raise InputError(f"standard attention has kernels 1 to 3, not {number}")
        return sp.expand(sp.Add(*found))

    def elements(self, array: str, direction: str) -> sp.Expr:
        """Elements of one array read or written (``"S"``, ``"write"``)."""
        return sp.Add(*(t.elements for t in self.transfers
                        if t.array == array and t.direction == direction))

    @property
    def extra_memory(self) -> sp.Expr:
        """HBM held beyond Q, K, V and O: the scores S and probabilities A."""
        return self.N**2 + self.N**2


@dataclass(frozen=True)
class TiledAttention:
    """FlashAttention's loops: outer over T_c K/V tiles, inner over T_r Q/O tiles."""

    N: sp.Expr
    d: sp.Expr
    M: sp.Expr
    rounding: str
    B_c: sp.Expr
    B_r: sp.Expr
    T_c: sp.Expr
    T_r: sp.Expr
    transfers: tuple[Transfer, ...]
    steps: tuple[Step, ...] = field(default=(), compare=False)

    def loop_total(self, where: str, tiles: sp.Expr | None = None) -> sp.Expr:
        """Elements moved by one loop's transfers over the whole run: the tiles of a loop
        cover the N rows once (the last tile may be partial), and the inner loop runs once
        per outer tile. ``tiles`` replaces T_c (e.g. by a symbol)."""
        per_sweep = sp.Add(*(self.N * t.width for t in self.transfers if t.where == where))
        if where == "outer":
            return sp.expand(per_sweep)
        if where == "inner":
            return sp.expand((self.T_c if tiles is None else tiles) * per_sweep)
        raise InputError(f"the tiled algorithm has loops 'outer' and 'inner', not {where!r}")

    @property
    def total(self) -> sp.Expr:
        """Exact elements moved, with the floors and ceilings of the block sizes."""
        return self.loop_total("outer") + self.loop_total("inner")

    @property
    def relaxed_B_c(self) -> sp.Expr:
        """B_c with its floor or ceiling replaced by the argument: M / (4 d)."""
        return self.M / (4 * self.d)

    @property
    def relaxed_T_c(self) -> sp.Expr:
        """T_c with floor and ceiling replaced by their arguments: N / (M / (4 d))."""
        return sp.cancel(self.N / self.relaxed_B_c)

    @property
    def relaxed(self) -> sp.Expr:
        """The total with T_c relaxed: within a factor of 2 of the exact one when the
        arguments of the floors and ceilings are at least 1."""
        return sp.expand(self.loop_total("outer") + self.loop_total("inner", self.relaxed_T_c))

    @property
    def theta(self) -> sp.Expr:
        """Theta of the traffic, for head dimensions d >= 1."""
        return absorb(self.relaxed, (self.d,))

    @property
    def extra_memory(self) -> sp.Expr:
        """HBM held beyond Q, K, V and O: the statistics l and m, one of each per row."""
        return 2 * self.N


def standard_attention(N: sp.Expr, d: sp.Expr) -> StandardAttention:
    """The kernels of standard attention and what each moves, in elements."""
    n, h = exact(N), exact(d)
    transfers = (
        Transfer("Q", "read", n, h, "kernel 1"), Transfer("K", "read", n, h, "kernel 1"),
        Transfer("S", "write", n, n, "kernel 1"),
        Transfer("S", "read", n, n, "kernel 2"), Transfer("A", "write", n, n, "kernel 2"),
        Transfer("A", "read", n, n, "kernel 3"), Transfer("V", "read", n, h, "kernel 3"),
        Transfer("O", "write", n, h, "kernel 3"),
    )
    return StandardAttention(n, h, transfers)


def block_sizes(M: sp.Expr, d: sp.Expr, rounding: str = "ceil") -> tuple[sp.Expr, sp.Expr]:
    """(B_c, B_r) = (round(M / 4d), min(round(M / 4d), d)); Algorithm 1 rounds up
    (``ceil``), a variant that must fit in SRAM rounds down (``floor``).

    >>> M, d = sizes("M d")
    >>> block_sizes(M, d)
    (ceiling(M/(4*d)), Min(d, ceiling(M/(4*d))))
    """
    if rounding not in ROUNDINGS:
        raise InputError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    f = sp.ceiling if rounding == "ceil" else sp.floor
    b_c = f(exact(M) / (4 * exact(d)))
    return b_c, sp.Min(b_c, exact(d))


def tiled_attention(N: sp.Expr, d: sp.Expr, M: sp.Expr, rounding: str = "ceil",
                    ) -> TiledAttention:
    """FlashAttention's transfers from its loop structure (Algorithm 1): per outer tile,
    load K_j and V_j; per inner tile, read Q_i, O_i, l_i, m_i and write O_i, l_i, m_i."""
    n, h, m = exact(N), exact(d), exact(M)
    b_c, b_r = block_sizes(m, h, rounding)
    if b_c.is_number and b_c < 1:
        raise DerivationError(f"no K/V block fits: M = {m} < 4 d = {4 * h}")
    t_c, t_r = sp.ceiling(n / b_c), sp.ceiling(n / b_r)
    one = sp.Integer(1)
    transfers = (
        Transfer("K", "read", b_c, h, "outer"), Transfer("V", "read", b_c, h, "outer"),
        Transfer("Q", "read", b_r, h, "inner"), Transfer("O", "read", b_r, h, "inner"),
        Transfer("l", "read", b_r, one, "inner"), Transfer("m", "read", b_r, one, "inner"),
        Transfer("O", "write", b_r, h, "inner"), Transfer("l", "write", b_r, one, "inner"),
        Transfer("m", "write", b_r, one, "inner"),
    )
    steps = (
        Step("define", "block sizes", None, sp.Tuple(b_c, b_r), f"{ALGORITHM_1} ({rounding})"),
        Step("define", "tile counts", None, sp.Tuple(t_c, t_r), "ceil(N / B)"),
    )
    return TiledAttention(n, h, m, rounding, b_c, b_r, t_c, t_r, transfers, steps)


def count_tiled(N: int, d: int, M: int, rounding: str = "ceil") -> int:
    """Elements moved by running the loops of ``tiled_attention`` on integers, tile by
    tile (a check of the symbolic count)."""
    if rounding not in ROUNDINGS:
        raise InputError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    b_c = -(-M // (4 * d)) if rounding == "ceil" else M // (4 * d)
    if b_c < 1:
        raise DerivationError(f"no K/V block fits: M = {M} < 4 d = {4 * d}")
    b_r = min(b_c, d)
    moved = 0
    for j in range(0, N, b_c):
        moved += 2 * min(b_c, N - j) * d                 # K_j, V_j
        for i in range(0, N, b_r):
            rows = min(b_r, N - i)
            moved += rows * d + rows * d + 2 * rows      # read Q_i, O_i, l_i, m_i
            moved += rows * d + 2 * rows                 # write O_i, l_i, m_i
    return moved


def absorb(expr: sp.Expr, at_least_one: Iterable[sp.Symbol] = ()) -> sp.Expr:
    """The Theta class of a positive expression when the symbols ``at_least_one`` are
    >= 1: coefficients drop, and a term drops when another term exceeds it by a product of
    those symbols (``N**2*d/M`` <= ``N**2*d**2/M`` for d >= 1).

    >>> N, d, M = sizes("N d M")
    >>> absorb(M / (d * (3*d + 4)), [d])
    M/d**2
    """
    big = tuple(at_least_one)
    num, den = sp.fraction(sp.together(exact(expr)))
    top, bottom = _absorb_sum(num, big), _absorb_sum(den, big)
    if len(sp.Add.make_args(bottom)) == 1:
        return sp.expand(top / bottom)
    return top / bottom


def _absorb_sum(expr: sp.Expr, big: Sequence[sp.Symbol]) -> sp.Expr:
    terms = list(dict.fromkeys(t.as_coeff_Mul()[1] for t in sp.Add.make_args(sp.expand(expr))))
    kept = [t for t in terms if not any(u != t and _at_most(t, u, big) for u in terms)]
    return sp.Add(*kept)


def _at_most(small: sp.Expr, large: sp.Expr, big: Sequence[sp.Symbol]) -> bool:
    """small / large is a product of non-positive powers of symbols that are >= 1."""
    ratio = sp.powsimp(small / large)
    if ratio.is_number:
        return bool(ratio <= 1)
    powers = sp.Mul.make_args(ratio)
    for p in powers:
        base, exp = p.as_base_exp()
        if p.is_number:
            continue
        if base not in big or not exp.is_number or exp > 0:
            return False
    return True


def reduction(standard: StandardAttention, tiled: TiledAttention) -> sp.Expr:
    """Theta of HBM_standard / HBM_tiled as N -> oo (the leading term of the exact ratio
    with T_c relaxed, then absorbed for d >= 1)."""
    lead = expansion(standard.total / tiled.relaxed, "N->oo").leading
    return absorb(lead, (tiled.d,))


def dominance_condition(large: sp.Expr, small: sp.Expr, solve_for: sp.Symbol) -> sp.Rel:
    """The condition on ``solve_for`` under which ``large >= small`` (both positive and
    monotone in it), e.g. N**2 d**2 / M >= N d  <=>  M <= N d.

    >>> N, d, M = sizes("N d M")
    >>> dominance_condition(N**2*d**2/M, N*d, M)
    M <= N*d
    """
    root = positive_root(sp.Eq(large, small), solve_for)
    slope = sp.diff(sp.log(large) - sp.log(small), solve_for)
    probe = slope.subs(solve_for, root)
    if probe.is_negative:
        return sp.Le(solve_for, root)
    if probe.is_positive:
        return sp.Ge(solve_for, root)
    raise DerivationError(f"cannot tell the direction of {large} >= {small} in {solve_for}")


def score_bytes(N: sp.Expr, bytes_per_element: sp.Expr) -> sp.Expr:
    """Bytes of one N x N score matrix (what kernel 1 of standard attention writes)."""
    return standard_attention(N, sp.Integer(1)).elements("S", "write") * bytes_per_element

