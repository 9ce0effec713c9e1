"""Attention's HBM traffic from its loop structure, and the online-softmax recurrence.

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

The online softmax merges the statistics of two blocks (running max ``m``, normaliser
``d``, normalised output ``O``): ``online_softmax_recurrence`` derives the merge rules
from their definitions with SymPy sums of any length, and ``online_softmax`` runs them
with NumPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import symbol
from ..core.sizes import sizes  # noqa: F401  (used by the doctests)
from ..core.steps import Step
from ..engine.asymptotics import (
    expansion,
    theta,  # noqa: F401  (used by the doctests)
)

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
    n, h = sp.sympify(N), sp.sympify(d)
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
    b_c = f(sp.sympify(M) / (4 * sp.sympify(d)))
    return b_c, sp.Min(b_c, sp.sympify(d))


def tiled_attention(N: sp.Expr, d: sp.Expr, M: sp.Expr, rounding: str = "ceil",
                    ) -> TiledAttention:
    """FlashAttention's transfers from its loop structure (Algorithm 1): per outer tile,
    load K_j and V_j; per inner tile, read Q_i, O_i, l_i, m_i and write O_i, l_i, m_i."""
    n, h, m = sp.sympify(N), sp.sympify(d), sp.sympify(M)
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
    num, den = sp.fraction(sp.together(sp.sympify(expr)))
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
    roots = [r for r in sp.solve(sp.Eq(large, small), solve_for) if r.is_positive is not False]
    if len(roots) != 1:
        raise DerivationError(f"{large} = {small} has {len(roots)} positive roots in "
                              f"{solve_for}")
    root = roots[0]
    slope = sp.diff(sp.log(large) - sp.log(small), solve_for)
    probe = slope.subs(solve_for, root)
    if probe.is_negative:
        return sp.Le(solve_for, root)
    if probe.is_positive:
        return sp.Ge(solve_for, root)
    raise DerivationError(f"cannot tell the direction of {large} >= {small} in {solve_for}")


# ---------------------------------------------------------------- online softmax ----------

@dataclass(frozen=True)
class Recurrence:
    """The two-block merge rules of the online softmax, in block statistics
    (m1, m2, d1, d2, O1, U2 = sum_j exp(x2_j - m2) V2_j, and m_new, d_new), with the
    steps that derive them and the residual of each against its definition."""

    m_new: sp.Expr
    d_new: sp.Expr
    o_new: sp.Expr
    steps: tuple[Step, ...]
    residuals: Mapping[str, sp.Expr]

    @property
    def holds(self) -> bool:
        return all(r == 0 for r in self.residuals.values())


def online_softmax_recurrence(sizes_for_max: tuple[int, int] = (3, 2)) -> Recurrence:
    """Derive m_new, d_new and O_new for two blocks from their definitions.

    The normaliser and the output are derived for blocks of any lengths N1, N2 (SymPy
    sums): split the sum at the block boundary, rewrite exp(x - m_new) as
    exp(x - m_k) exp(m_k - m_new), pull the constant factor out, and recognise the block
    statistics. The max rule is checked on blocks of ``sizes_for_max`` symbolic entries.
    """
    j = sp.Symbol("j", integer=True, positive=True)
    n1, n2 = sp.symbols("N_1 N_2", integer=True, positive=True)
    x1, x2, v1, v2 = (sp.IndexedBase(n) for n in ("x1", "x2", "V1", "V2"))
    m, m1, m2 = sp.symbols("m_new m1 m2", real=True)
    d1, d2, d_new, o1, u2 = (symbol(n) for n in ("d1", "d2", "d_new", "O1", "U2"))
    blocks = ((x1, v1, m1, n1), (x2, v2, m2, n2))
    steps: list[Step] = []

    def rescaled(weight: Any, x: sp.IndexedBase, mk: sp.Symbol, nk: sp.Symbol) -> sp.Expr:
        summand = sp.exp(x[j] - m) * weight
        rewritten = sp.exp(x[j] - mk) * sp.exp(mk - m) * weight
        if _residual(summand - rewritten) != 0:
            raise DerivationError(f"cannot rescale {summand} to the block max {mk}")
        return sp.factor_terms(sp.Sum(rewritten, (j, 1, nk)))

    # the normaliser
    defined = sp.Add(*(sp.Sum(sp.exp(x[j] - m), (j, 1, nk)) for x, _, _, nk in blocks))
    split = sp.Add(*(rescaled(1, x, mk, nk) for x, _, mk, nk in blocks))
    local = {sp.Sum(sp.exp(x1[j] - m1), (j, 1, n1)): d1,
             sp.Sum(sp.exp(x2[j] - m2), (j, 1, n2)): d2}
    d_rule = split.xreplace(local)
    if d_rule.has(sp.Sum):
        raise DerivationError(f"block statistics not recognised in {split}")
    steps += [Step("define", "d_new over both blocks", None, defined, "definition"),
              Step("substitute", "rescale each block to its own max", defined, split,
                   "exp(x - m_new) = exp(x - m_k) exp(m_k - m_new)"),
              Step("substitute", "recognise d1 and d2", split, d_rule, "block definitions")]

    # the output (one coordinate of the value vectors)
    o_defined = sp.Add(*(sp.Sum(sp.exp(x[j] - m) * v[j], (j, 1, nk))
                         for x, v, _, nk in blocks)) / d_new
    o_split = sp.Add(*(rescaled(v[j], x, mk, nk) for x, v, mk, nk in blocks)) / d_new
    partial = {sp.Sum(sp.exp(x1[j] - m1) * v1[j], (j, 1, n1)): d1 * o1,
               sp.Sum(sp.exp(x2[j] - m2) * v2[j], (j, 1, n2)): u2}
    o_rule = o_split.xreplace(partial)
    if o_rule.has(sp.Sum):
        raise DerivationError(f"block outputs not recognised in {o_split}")
    steps += [Step("define", "O_new over both blocks", None, o_defined, "definition"),
              Step("substitute", "rescale each block to its own max", o_defined, o_split,
                   "exp(x - m_new) = exp(x - m_k) exp(m_k - m_new)"),
              Step("substitute", "recognise d1 O1 and U2", o_split, o_rule,
                   "O1 = (1/d1) sum exp(x1 - m1) V1")]

    # the max, on concrete block sizes
    e1 = sp.symbols(f"a1:{sizes_for_max[0] + 1}", real=True)
    e2 = sp.symbols(f"b1:{sizes_for_max[1] + 1}", real=True)
    whole, merged = sp.Max(*e1, *e2), sp.Max(sp.Max(*e1), sp.Max(*e2))
    m_rule = sp.Max(m1, m2)
    steps.append(Step("compare", "max over both blocks = max of the block maxima", whole,
                      merged, f"blocks of {sizes_for_max[0]} and {sizes_for_max[1]} entries"))

    # residuals: substitute the definitions back and compare with the direct ones
    back = {d1: sp.Sum(sp.exp(x1[j] - m1), (j, 1, n1)), d2: sp.Sum(sp.exp(x2[j] - m2), (j, 1, n2))}
    d_residual = _residual(d_rule.xreplace(back) - defined)
    o_back = {o1: sp.Sum(sp.exp(x1[j] - m1) * v1[j], (j, 1, n1)) / back[d1],
              u2: sp.Sum(sp.exp(x2[j] - m2) * v2[j], (j, 1, n2)), **back}
    o_residual = _residual(o_rule.xreplace(o_back) - o_defined)
    max_residual = sp.Integer(0) if whole == merged else sp.simplify(whole - merged)
    names = {m: symbol("m_new"), m1: symbol("m1"), m2: symbol("m2")}
    return Recurrence(m_rule.xreplace(names), d_rule.xreplace(names), o_rule.xreplace(names),
                      tuple(steps), {"m_new": max_residual, "d_new": d_residual,
                                     "O_new": o_residual})


def _residual(e: sp.Expr) -> sp.Expr:
    """``e`` reduced to 0 when it is 0 by splitting exp(a - b) = exp(a) exp(-b) and pulling
    constant factors out of sums (cheap); otherwise ``simplify``'s answer."""
    split = sp.factor_terms(sp.expand(e, power_exp=True))
    return split if split == 0 else sp.simplify(e)


def softmax_shift_residual() -> sp.Expr:
    """exp(s_i - c) / sum_k exp(s_k - c) - exp(s_i) / sum_k exp(s_k), simplified: 0 means
    subtracting any c (the row max) leaves the softmax unchanged."""
    i, k = sp.symbols("i k", integer=True, positive=True)
    n = sp.Symbol("N", integer=True, positive=True)
    s = sp.IndexedBase("s")
    c = sp.Symbol("c", real=True)
    shifted = sp.exp(s[i] - c) / sp.Sum(sp.exp(s[k] - c), (k, 1, n))
    plain = sp.exp(s[i]) / sp.Sum(sp.exp(s[k]), (k, 1, n))
    return sp.simplify(sp.factor_terms(sp.expand(shifted, power_exp=True)) - plain)


@dataclass(frozen=True, eq=False)
class BlockState:
    """Softmax statistics of the scores seen so far: max ``m``, normaliser
    ``d`` = sum exp(x - m), and the normalised output ``o`` = sum exp(x - m) V / d."""

    m: float
    d: float
    o: np.ndarray


def block_state(scores: np.ndarray, values: np.ndarray) -> BlockState:
    """The local statistics of one block of scores (shape (n,)) and values (n, d_v)."""
    x = np.asarray(scores, dtype=float)
    v = np.asarray(values, dtype=float)
    if x.ndim != 1 or v.ndim != 2 or v.shape[0] != x.shape[0] or x.size == 0:
        raise InputError(f"a block needs scores of shape (n,) and values of shape (n, d_v) "
                         f"with n >= 1, got {x.shape} and {v.shape}")
    m = float(x.max())
    w = np.exp(x - m)
    d = float(w.sum())
    return BlockState(m, d, (w @ v) / d)


def merge(first: BlockState, second: BlockState) -> BlockState:
    """The text's two-block recurrence: m_new = max(m1, m2),
    d_new = d1 exp(m1 - m_new) + d2 exp(m2 - m_new),
    O_new = d1 exp(m1 - m_new) / d_new O1 + exp(m2 - m_new) / d_new U2, U2 = d2 O2."""
    m_new = max(first.m, second.m)
    a = first.d * np.exp(first.m - m_new)
    b = second.d * np.exp(second.m - m_new)
    d_new = a + b
    return BlockState(m_new, d_new, a / d_new * first.o + np.exp(second.m - m_new) / d_new
                      * (second.d * second.o))


def online_softmax(scores: np.ndarray, values: np.ndarray, block: int) -> BlockState:
    """softmax(scores) @ values, one block of ``block`` scores at a time, merged with
    ``merge``: the scores are never exponentiated without subtracting a running max."""
    x = np.asarray(scores, dtype=float)
    if block < 1:
        raise InputError(f"block size must be at least 1, got {block}")
    state: BlockState | None = None
    for start in range(0, x.shape[0], block):
        part = block_state(x[start:start + block], np.asarray(values)[start:start + block])
        state = part if state is None else merge(state, part)
    if state is None:
        raise InputError("online_softmax of no scores")
    return state


def score_bytes(N: sp.Expr, bytes_per_element: sp.Expr) -> sp.Expr:
    """Bytes of one N x N score matrix (what kernel 1 of standard attention writes)."""
    return standard_attention(N, sp.Integer(1)).elements("S", "write") * bytes_per_element

