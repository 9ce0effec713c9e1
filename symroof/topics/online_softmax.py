"""The online softmax: two blocks' statistics merged exactly, derived and run.

>>> r = online_softmax_recurrence()
>>> r.holds, r.d_new
(True, d1*exp(m1 - m_new) + d2*exp(m2 - m_new))

The online softmax merges the statistics of two blocks (running max ``m``, normaliser
``d``, normalised output ``O``): ``online_softmax_recurrence`` derives the merge rules
from their definitions with SymPy sums of any length, and ``online_softmax`` runs them
with NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.parse import symbol
from ..core.steps import Step


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
    return _residual(sp.factor_terms(sp.expand(shifted, power_exp=True)) - plain)


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
