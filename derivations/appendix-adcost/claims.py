"""The Baur–Strassen section of the Russian appendix (seed 002): reverse-mode AD costs per
operation (counted by ``symroof.topics.adcost``), the bounds, 6P per token, forward mode."""

from __future__ import annotations

import random

import sympy as sp

from symroof import (
    TEXT_KINDS,
    einsum,
    gradient,
    random_expression,
    recipe_bounds,
    reverse_cost,
    sizes,
    symbol,
    theta,
)
from symroof.claims import Chapter, measured, within


def sample(count: int, seed: int = 0) -> list[sp.Expr]:
    """Random expressions over 1 to 12 inputs, of 1 to 25 operations (text's kinds)."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        names = sp.symbols(f"x1:{rng.randint(1, 12) + 1}", positive=True)
        e = random_expression(rng, names, rng.randint(1, 25), TEXT_KINDS)
        if reverse_cost(e).forward > 0:  # not a constant or a bare input
            out.append(e)
    return out

def worst_gradient_error(exprs: list[sp.Expr]) -> sp.Float:
    """Largest relative error of the backward program's gradient against SymPy's diff
    (50-digit arithmetic, at a fixed point)."""
    worst = sp.Float(0)
    for e in exprs:
        point = {s: sp.Rational(3 + i, 4 + 2 * i) for i, s in
                 enumerate(sorted(e.free_symbols, key=str))}
        _, grad = gradient(e, point, dps=50)
        for s, g in grad.items():
            exact = sp.diff(e, s).evalf(50, subs=point)
            worst = max(worst, abs(g - exact) / max(1, abs(exact)))
    return worst

def claims(ch: Chapter) -> None:
    x, y = sizes("x y")
    W, C = symbol("W"), symbol("C")
    work_bwd, work_rev = symbol("Work_Backward"), symbol("Work_Reverse")
    worst_bwd, worst_total = recipe_bounds()
    exprs = sample(40)
    ratios = [sp.Rational(c.total, c.forward) for c in map(reverse_cost, exprs)]
    ch.step("evaluate", "largest (forward + backward) / W(f) over 40 random expressions",
           None, max(ratios), "symroof.adcost on expressions with 1 to 12 inputs")
    def cost(e: sp.Expr) -> tuple[int, int]:
        c = reverse_cost(e)
        return c.backward, c.total
    P = symbol("P")
    T, D, F = sizes("T D F")
    fwd = einsum("T D, D F -> T F", name="Y = X W")
    bwd = [einsum("T D, T F -> D F", name="dL/dW = X^T dL/dY"),
           einsum("T F, D F -> T D", name="dL/dX = dL/dY W^T")]
    def per_token(flops: sp.Expr) -> sp.Expr:
        # P = D F weights; one token: T = 1
        return sp.expand((flops / T).subs(D, P / F))
    forward_work = per_token(fwd.flops)
    backward_work = per_token(sum((o.flops for o in bwd), sp.Integer(0)))
    forward_mode = P * forward_work  # P sweeps, each a forward pass of W = 2P
    ch.add(
        bs_constant_c=sp.Le(C, worst_total),
        bs_independent_of_inputs=within(max(worst_total, *ratios), 1, 5),
        bs_backward_bound=sp.Le(work_bwd, worst_bwd * W),
        bs_adjoints_exact=within(worst_gradient_error(exprs[:8]), 0, sp.Rational(1, 10**40)),
        bs_add_backward=cost(x + y)[0],
        bs_sub_backward=cost(x - y)[0],
        bs_add_total=cost(x + y)[1],
        bs_mul_backward=cost(x * y)[0],
        bs_mul_total=cost(x * y)[1],
        bs_div_backward=cost(x / y)[0],
        bs_div_total=cost(x / y)[1],
        bs_exp_backward=cost(sp.exp(x))[0],
        bs_log_backward=cost(sp.log(x))[0],
        bs_per_operation_at_most_4=sp.Le(work_bwd, worst_bwd * W),
        bs_total_bound=sp.Le(work_rev, worst_total * W),
        bs_year=measured(),
        dense_forward_2p=forward_work,
        dense_backward_4p=backward_work,
        dense_training_6p=forward_work + backward_work,
        dense_backward_ratio=sp.cancel(backward_work / forward_work),
        fwdmode_order=theta(forward_mode),
        fwdmode_175b=forward_mode.subs(P, 175 * 10**9),
        fwdmode_factor_p=sp.cancel(forward_mode / forward_work),
    )
