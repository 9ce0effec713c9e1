"""Regimes and asymptotic forms: leading term and first correction by scaling.

>>> from symroof import sizes
>>> B, D, F = sizes("B D F")
>>> x = expansion(B*D*F / (B*D + D*F + B*F), "B<<D,F")
>>> x.leading, x.correction
(B, -B**2*(D + F)/(D*F))

A regime such as ``B<<D,F`` scales the large side, D -> D/eps and F -> F/eps, and expands
in eps: iterated limits would depend on their order. ``N->oo`` scales N up; ``x->0``
scales x down. Clauses join with ``;``: ``B<<D,F; N->oo``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.memo import memo
from ..core.parse import exact, symbol
from ..core.steps import Step
from .algebra import cancel, is_rational_function, ordered_symbols
from .sparse import Sparse, to_expr, to_sparse

EPS = sp.Symbol("epsilon", positive=True)
_NAMES = r"[A-Za-z][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z][A-Za-z0-9_]*)*"


@dataclass(frozen=True)
class Regime:
    """Symbols that grow (``large``) and that shrink (``small``) as the regime deepens."""

    text: str
    large: tuple[sp.Symbol, ...]
    small: tuple[sp.Symbol, ...]
    named: tuple[sp.Symbol, ...] = ()

    def scaling(self, eps: sp.Expr = EPS, like: sp.Basic | None = None,
                ) -> dict[sp.Symbol, sp.Expr]:
        """The substitution that takes an expression eps-deep into the regime.

        Symbols are matched by name against ``like``'s, so a size declared integer is
        scaled like the positive symbol the regime names."""
        names = {s.name: s for s in like.free_symbols} if like is not None else {}

        def own(s: sp.Symbol) -> sp.Symbol:
            return names.get(s.name, s)
        out: dict[sp.Symbol, sp.Expr] = {own(s): own(s) / eps for s in self.large}
        out.update({own(s): own(s) * eps for s in self.small})
        return out

    def point(self, base: dict[sp.Symbol, sp.Expr], depth: sp.Expr) -> dict[sp.Symbol, sp.Expr]:
        """``base`` values moved ``depth`` deep (large ones times depth, small ones divided)."""
        out = dict(base)
        for s in self.large:
            out[s] = exact(base[s]) * depth
        for s in self.small:
            out[s] = exact(base[s]) / depth
        return out

    def __str__(self) -> str:
        return self.text


def parse_regime(text: str, *, where: str | None = "regime") -> Regime:
    """Parse ``B<<D,F``, ``D,F->oo``, ``x->0``, ``D>>B``, joined by ``;``.

    >>> parse_regime("B<<D,F; N->oo").large
    (D, F, N)
    """
    large: list[sp.Symbol] = []
    small: list[sp.Symbol] = []
    named = [symbol(n) for n in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)
             if n not in ("oo", "inf", "infinity", "and")]
    parts = [c.strip() for c in re.split(r";|\band\b", text)]
    clauses = [c for c in parts if c]
    if not clauses:
        raise InputError("empty regime", where)
    if len(clauses) != len(parts):
        raise InputError(f"an empty clause in {text!r}", where)
    smaller: dict[str, set[str]] = {}  # name -> the names it is much smaller than
    for clause in clauses:
        if m := re.fullmatch(rf"({_NAMES})\s*(<<|>>)\s*({_NAMES})", clause):
            sides = [[n.strip() for n in m.group(k).split(",")] for k in (1, 3)]
            for n in sides[0] + sides[1]:
                if n in ("oo", "inf", "infinity", "nan", "zoo"):
                    raise InputError(f"{n!r} is not a size in {clause!r} (write 'D->oo' for "
                                     "a size that grows)", where)
            if set(sides[0]) & set(sides[1]):
                raise InputError(f"{sorted(set(sides[0]) & set(sides[1]))[0]} cannot be much "
                                 f"smaller than itself in {clause!r}", where)
            for side in sides:
                if len(set(side)) != len(side):
                    raise InputError(f"a size named twice in {clause!r}", where)
            lo, hi = sides if m.group(2) == "<<" else sides[::-1]
            for a in lo:
                smaller.setdefault(a, set()).update(hi)
            large += _symbols(m.group(3) if m.group(2) == "<<" else m.group(1))
        elif m := re.fullmatch(rf"({_NAMES})\s*->\s*(oo|inf|infinity)", clause):
            large += _symbols(m.group(1))
        elif m := re.fullmatch(rf"({_NAMES})\s*->\s*0", clause):
            small += _symbols(m.group(1))
        else:
            raise InputError(f"cannot read the regime clause {clause!r} (write it like "
                             f"'B<<D,F', 'N->oo' or 'x->0')", where)
    cycle = _cycle(smaller)
    if cycle:
        raise InputError(f"the ordering has a cycle: {' << '.join(cycle)}", where)
    both = set(large) & set(small)
    if both:
        raise InputError(f"{sorted(map(str, both))[0]} both grows and shrinks in {text!r}", where)
    return Regime(text.strip(), tuple(dict.fromkeys(large)), tuple(dict.fromkeys(small)),
                  tuple(dict.fromkeys(named)))


def _cycle(smaller: dict[str, set[str]]) -> list[str]:
    """A chain a << b << ... << a of the ordering, or [] when it has none.

    >>> _cycle({"B": {"D"}, "D": {"F"}, "F": {"B"}})
    ['B', 'D', 'F', 'B']
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        path.append(n)
        for m in sorted(smaller.get(n, ())):
            if state.get(m) == 1:
                return [*path[path.index(m):], m]
            if m not in state and (found := visit(m)):
                return found
        path.pop()
        state[n] = 2
        return []

    for n in sorted(smaller):
        if n not in state and (found := visit(n)):
            return found
    return []


def _symbols(names: str) -> list[sp.Symbol]:
    return [symbol(n.strip()) for n in names.split(",")]


@dataclass(frozen=True)
class Expansion:
    """``expr ~ leading + correction`` in a regime; ``order`` is leading's power of eps."""

    expr: sp.Expr
    regime: Regime
    leading: sp.Expr
    correction: sp.Expr
    order: sp.Expr
    steps: tuple[Step, ...]

    def _repr_latex_(self) -> str:
        from ..core.printer import latex
        corr = self.correction
        sign, magnitude = ("-", -corr) if corr.could_extract_minus_sign() else ("+", corr)
        return (f"${latex(self.expr)} = {latex(self.leading)} {sign} {latex(magnitude)} + "
                f"\\ldots \\quad ({self.regime.text})$")

    def _repr_markdown_(self) -> str:
        return self._repr_latex_()


@memo
def expansion(expr: sp.Expr, regime: Regime | str) -> Expansion:
    """Leading term and first correction of ``expr`` deep in ``regime``.

    >>> from symroof import sizes
    >>> B, D, F = sizes("B D F")
    >>> x = expansion(B*D*F/(B*D + B*F + D*F), "B<<D,F")
    >>> x.leading, x.correction
    (B, -B**2*(D + F)/(D*F))
    """
    reg = parse_regime(regime) if isinstance(regime, str) else regime
    scaling = reg.scaling(like=exact(expr))
    e = exact(expr)
    rational = is_rational_function(e)
    scaled = e.xreplace(scaling) if rational else e.subs(scaling)  # no bound symbols in it
    terms = _graded_terms(e, scaling) if rational else None
    if terms is None:
        terms = _rational_terms(scaled)
    if terms is None:
        try:
            terms = _series_terms(scaled, expr, reg)
        except (sp.PoleError, NotImplementedError, ValueError, TypeError) as exc:
            raise DerivationError(f"no expansion of {expr} in the regime {reg.text}: "
                                  f"SymPy's series fails ({type(exc).__name__})") from None
    (p, lead), (_, corr) = terms
    lead, corr = cancel(lead), sp.factor_terms(cancel(corr))
    steps = (
        Step("substitute", "scale into the regime", expr, scaled,
             f"{reg.text}: " + ", ".join(f"{k} -> {v}" for k, v in scaling.items())),
        Step("series", "expand in epsilon; keep the leading term and the first correction",
             scaled, lead * EPS**p + corr * EPS ** (p + 1), reg.text),
        Step("limit", "leading term (epsilon -> 1 restores the sizes)", expr, lead, reg.text),
    )
    return Expansion(exact(expr), reg, lead, corr, p, steps)


def leading(expr: sp.Expr, regime: Regime | str) -> sp.Expr:
    """Just the leading term: ``leading(I, "B<<D,F")``.

    >>> from symroof import sizes
    >>> (N,) = sizes("N")
    >>> leading((2*N - 1)/(4*N + 2), "N->oo")
    1/2
    """
    return expansion(expr, regime).leading


def _graded_terms(expr: sp.Expr, scaling: dict[sp.Symbol, sp.Expr],
                  ) -> tuple[tuple[sp.Expr, sp.Expr], ...] | None:
    """Leading and next coefficient for a rational function of the sizes, read off its
    numerator and denominator term by term: a term's power of eps is the sum of its
    exponents of the small sizes less those of the large ones (no substitution, no
    ``Poly`` in eps). None for anything else."""
    if not is_rational_function(expr):
        return None
    num, den = expr.as_numer_denom()
    gens = ordered_symbols(num.free_symbols | den.free_symbols)
    index = {g: i for i, g in enumerate(gens)}
    weight = {index[s]: (1 if v == s * EPS else -1) for s, v in scaling.items() if s in index}
    top, bottom = to_sparse(num, index), to_sparse(den, index)
    if not top or not bottom:
        return None

    def lowest(poly: Sparse) -> tuple[int, sp.Expr, sp.Expr]:
        graded: dict[int, Sparse] = {}
        for m, c in poly.items():
            graded.setdefault(sum(weight.get(v, 0) * e for v, e in m), {})[m] = c
        low = min(graded)
        return low, to_expr(graded[low], gens), to_expr(graded.get(low + 1, {}), gens)

    (p, a0, a1), (q, b0, b1) = lowest(top), lowest(bottom)
    return (p - q, a0 / b0), (p - q + 1, (a1 * b0 - a0 * b1) / b0**2)


def _rational_terms(scaled: sp.Expr) -> tuple[tuple[sp.Expr, sp.Expr], ...] | None:
    """Leading and next coefficient for a rational function of eps, exactly and fast."""
    num, den = scaled.as_numer_denom()
    try:
        pn, pd = sp.Poly(num, EPS), sp.Poly(den, EPS)
    except sp.PolynomialError:
        return None
    if not (pn.free_symbols_in_domain.isdisjoint({EPS}) and pd.free_symbols_in_domain
            .isdisjoint({EPS})):
        return None
    a, b = _low_terms(pn), _low_terms(pd)
    if a is None or b is None:
        return None
    (p, a0, a1), (q, b0, b1) = a, b
    return (p - q, a0 / b0), (p - q + 1, (a1 * b0 - a0 * b1) / b0**2)


def _low_terms(poly: sp.Poly) -> tuple[int, sp.Expr, sp.Expr] | None:
    coeffs = dict(zip((m[0] for m in poly.monoms()), poly.coeffs(), strict=True))
    if not coeffs:
        return None
    low = min(coeffs)
    return low, coeffs[low], coeffs.get(low + 1, sp.Integer(0))


def _series_terms(scaled: sp.Expr, expr: sp.Expr,
                  reg: Regime) -> tuple[tuple[sp.Expr, sp.Expr], ...]:
    try:
        lead_term = sp.powsimp(scaled.as_leading_term(EPS))
        coeff, p = lead_term.as_coeff_exponent(EPS)
        rest = sp.powsimp(sp.expand(scaled - lead_term))
        corr, q = (rest.as_leading_term(EPS).as_coeff_exponent(EPS) if rest != 0
                   else (sp.Integer(0), p + 1))
    except (NotImplementedError, ValueError, TypeError) as exc:
        raise DerivationError(f"cannot expand {expr} in the regime {reg.text}: {exc}") from None
    if coeff.has(EPS) or corr.has(EPS):
        raise DerivationError(f"the leading term of {expr} in the regime {reg.text} is not a "
                              f"power of the scale")
    if corr != 0 and sp.cancel(q - p - 1) != 0:
        # the first correction is of another order than 1: keep its own power
        return (p, coeff), (q, corr)
    return (p, coeff), (p + 1, corr)


def theta(expr: sp.Expr, regime: Regime | str | None = None) -> sp.Expr:
    """The Theta class of a sum: the terms no other term dominates, coefficients dropped.

    >>> from symroof import sizes
    >>> N, d, M = sizes("N d M")
    >>> theta(4*N*d + 2*N**2*d**2/M)
    N*d + N**2*d**2/M
    >>> theta(N**2 + N*d, "d<<N")
    N**2
    """
    reg = parse_regime(regime) if isinstance(regime, str) else regime
    terms = [t.as_coeff_Mul()[1] for t in sp.Add.make_args(sp.expand(expr))]
    terms = list(dict.fromkeys(terms))
    if reg is None:  # with no regime no term dominates another
        return sp.Add(*terms)
    kept = []
    for t in terms:
        dominated = any(_dominates(other, t, reg) for other in terms if other != t)
        if not dominated:
            kept.append(t)
    return sp.Add(*kept)


def _dominates(big: sp.Expr, small: sp.Expr, reg: Regime) -> bool:
    """True when small / big -> 0 deep in the regime (constants lose to anything growing)."""
    power = _eps_power(small, big, reg)
    if power is not None:
        return bool(power.is_positive)
    ratio = sp.powsimp(small / big)
    if ratio.is_number:
        return False
    scaled = sp.powsimp(sp.expand_power_base(ratio.subs(reg.scaling(like=ratio)), force=True))
    coeff, power = scaled.as_coeff_exponent(EPS)
    return bool(not coeff.has(EPS) and power.is_positive)


def _eps_power(small: sp.Expr, big: sp.Expr, reg: Regime) -> sp.Expr | None:
    """The power of eps in small / big deep in the regime, read off the exponents when both
    are products of powers of symbols (0 for a constant ratio); None otherwise."""
    powers = [*small.as_powers_dict().items(), *((b, -k) for b, k in
                                                   big.as_powers_dict().items())]
    if not all(isinstance(b, sp.Symbol) and b.name != EPS.name for b, _ in powers):
        return None
    grows = {s.name for s in reg.large}
    shrinks = {s.name for s in reg.small}
    scaled = grows | shrinks | {b.name for b, _ in powers} | {EPS.name}
    if any(s.name in scaled for _, k in powers for s in k.free_symbols):
        return None  # an exponent the scaling would reach: the general route
    return sp.Add(*(-k if b.name in grows else k for b, k in powers
                    if b.name in grows or b.name in shrinks))

