"""Encodes the Baur–Strassen section of the Russian appendix «Основы алгоритмов» (seed 002):
the per-operation cost of reverse-mode AD, the bounds backward <= 4 W(f) and
total <= 5 W(f), the dense-layer count 2P + 4P = 6P per token, and forward mode at
P = 175e9.

Operation counts come from ``symroof.adcost``, which builds the backward program of an
expression and counts its instructions; the dense-layer FLOPs come from einsum ops.
"""

from __future__ import annotations

import random

import sympy as sp
from _appendix_ru import source

from symroof.claims.model import Derivation
from symroof.core.parse import symbol
from symroof.core.sizes import sizes
from symroof.engine.asymptotics import theta
from symroof.engine.ops import einsum
from symroof.models.adcost import (
    TEXT_KINDS,
    recipe_bounds,
    reverse_cost,
)
from symroof.models.adcost_checks import gradient, random_expression

THEOREM = "Теорема сложности Баура–Штрассена"
PROOF = "Пошаговое доказательство распространения сопряженных величин по правилу цепочки"
LLM = "Почему можно обучать большие языковые модели на 175 млрд параметров"


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
            exact = sp.N(sp.diff(e, s).subs(point), 50)
            worst = max(worst, abs(g - exact) / max(1, abs(exact)))
    return worst


def build() -> Derivation:
    d = Derivation.begin("appendix-ru-adcost", "Appendix «Основы алгоритмов» (Russian): "
                         "Baur–Strassen bound on reverse-mode AD", source())
    d.assume("Each elementary operation (add, sub, mul, div, exp, log, ...) costs 1; the "
             "backward program follows the text's per-operation updates, with t = vbar/v_k "
             "shared by the two updates of a division")
    x, y = sizes("x y")
    W, C = symbol("W"), symbol("C")
    work_bwd, work_rev = symbol("Work_Backward"), symbol("Work_Reverse")
    worst_bwd, worst_total = recipe_bounds()
    # the bound is per operation, so it holds for any DAG and any number of inputs; a
    # sample illustrates it here, and tests/test_adcost.py checks it on hundreds per run
    exprs = sample(40)
    ratios = [sp.Rational(c.total, c.forward) for c in map(reverse_cost, exprs)]
    d.step("evaluate", "largest (forward + backward) / W(f) over 40 random expressions",
           None, max(ratios), "symroof.adcost on expressions with 1 to 12 inputs")

    def cost(e: sp.Expr) -> tuple[int, int]:
        c = reverse_cost(e)
        return c.backward, c.total

    d.claim("bs_constant_c", kind="relation", section=THEOREM,
            quote="где $C\\le 5$ — универсальная константа, не зависящая от входной размерности "
                  "$N$",
            statement="The constant C of Work_Reverse <= C W(f) is at most 5 (the largest "
                      "forward + backward count of one operation).",
            stated="C <= 5", derive=lambda: sp.Le(C, worst_total))
    d.claim("bs_independent_of_inputs", kind="qualitative", section=THEOREM,
            quote="$C\\le 5$ — универсальная константа, не зависящая от входной размерности $N$",
            statement="The ratio stays within 5 whatever the number of inputs.",
            stated="не зависящая от N", within=(1, 5),
            meaning="the largest (forward + backward) / W(f) of one operation, which bounds "
                    "every DAG whatever its number of inputs N (40 random expressions with 1 "
                    "to 12 inputs stay within it too)",
            derive=lambda: max(worst_total, *ratios))
    d.claim("bs_backward_bound", kind="relation", section=THEOREM,
            quote="один лишь обратный проход требует работы ${\\text{Work}}_{\\text{Backward}}"
                  "(\\nabla f)\\le 4\\cdot W(f)$",
            statement="The backward pass alone costs at most 4 W(f).",
            stated="Work_Backward <= 4*W", derive=lambda: sp.Le(work_bwd, worst_bwd * W))
    d.claim("bs_adjoints_exact", kind="qualitative", section=PROOF,
            quote="$${\\bar{v}}_k\\leftarrow {\\bar{v}}_k+{\\bar{v}}_j\\cdot \\frac{\\partial "
                  "v_j}{\\partial v_k}$$",
            statement="Sweeping the nodes in reverse order and accumulating adjoints gives the "
                      "gradient.",
            stated="сопряженные величины", within=(0, sp.Rational(1, 10**40)),
            meaning="largest relative error of the gradients computed by the backward program "
                    "against SymPy's diff, 8 random expressions, 50-digit arithmetic",
            derive=lambda: worst_gradient_error(exprs[:8]))
    add_q = "Стоимость: 2 сложения на обратном проходе на 1 прямую операцию."
    d.claim("bs_add_backward", section=PROOF,
            quote=add_q, statement="An add costs 2 backward operations.",
            stated="2", derive=lambda: cost(x + y)[0])
    d.claim("bs_sub_backward", section=PROOF,
            quote=add_q, statement="A sub costs 2 backward operations.",
            stated="2", derive=lambda: cost(x - y)[0])
    d.claim("bs_add_total", section=PROOF,
            quote="$\\text{Fwd}(1)+\\text{Bwd}(2)=3\\text{ операции}\\le 5\\cdot 1$",
            statement="An add costs 3 operations in total.",
            stated="3", derive=lambda: cost(x + y)[1])
    d.claim("bs_mul_backward", section=PROOF,
            quote="Стоимость: 2 умножения + 2 сложения = 4 операции на обратном проходе на 1 "
                  "прямую операцию.",
            statement="A mul costs 4 backward operations.",
            stated="4", derive=lambda: cost(x * y)[0])
    d.claim("bs_mul_total", section=PROOF,
            quote="Отношение работы: $\\text{Fwd}(1)+\\text{Bwd}(4)=5\\text{ операций}\\le 5\\cdot "
                  "1$.",
            statement="A mul costs 5 operations in total.",
            stated="5", derive=lambda: cost(x * y)[1])
    d.claim("bs_div_backward", section=PROOF,
            quote="Стоимость: 2 умножения/деления + 2 сложения = 4 операции на обратном проходе "
                  "на 1 прямую операцию.",
            statement="A div costs 4 backward operations (with t = vbar_j / v_k computed once "
                      "and shared; evaluated literally as printed the second update costs 3, "
                      "5 in all).",
            stated="4", derive=lambda: cost(x / y)[0])
    d.claim("bs_div_total", section=PROOF,
            quote="Отношение работы: $\\text{Fwd}(1)+\\text{Bwd}(4)=5\\text{ операций}\\le 5\\cdot "
                  "1$.",
            statement="A div costs 5 operations in total.",
            stated="5", derive=lambda: cost(x / y)[1])
    d.claim("bs_exp_backward", section=PROOF,
            quote="Для $v_j=\\exp (v_i)$ имеем ${\\varphi }^{\\prime }(v_i)=v_j$, что требует 1 "
                  "умножения + 1 сложения = 2 операции.",
            statement="exp costs 2 backward operations.",
            stated="2", derive=lambda: cost(sp.exp(x))[0])
    d.claim("bs_log_backward", section=PROOF,
            quote="Для $v_j=\\ln (v_i)$ имеем ${\\varphi }^{\\prime }(v_i)=1/v_i$, что требует 1 "
                  "деления + 1 сложения = 2 операции.",
            statement="log costs 2 backward operations.",
            stated="2", derive=lambda: cost(sp.log(x))[0])
    d.claim("bs_per_operation_at_most_4", kind="relation", section=PROOF,
            quote="каждая прямая операция порождает не более 4 обратных операций",
            statement="Every forward operation generates at most 4 backward operations.",
            stated="Work_Backward <= 4*W", derive=lambda: sp.Le(work_bwd, worst_bwd * W))
    d.claim("bs_total_bound", kind="relation", section=PROOF,
            quote="{\\text{Work}}_{\\text{Reverse}}(f,\\nabla f)=W(f)+{\\text{Work}}_{\\text{"
                  "Backward}}(\\nabla f)\\le 5\\cdot W(f)",
            statement="Forward plus backward work is at most 5 W(f).",
            stated="Work_Reverse <= 5*W", derive=lambda: sp.Le(work_rev, worst_total * W))
    d.claim("bs_year", kind="measurement", section="Теорема Баура–Штрассена о сложности AD в "
            "обратном режиме",
            quote="Баур и Штрассен доказали этот результат о сложности в 1983 году (Baur and "
                  "Strassen, 1983).",
            statement="Baur and Strassen proved the result in 1983.",
            stated="1983", evidence="bibliography: W. Baur, V. Strassen, The complexity of "
                                    "partial derivatives, Theoretical Computer Science 22 (1983) "
                                    "317-330 (their constant is 3, for multiplications and "
                                    "divisions only)")

    # ---------------------------------------------------------------- dense layers
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
    d.claim("dense_forward_2p", kind="expr", section=LLM,
            quote="Прямой проход: матричные умножения $Y=XW$ требуют $2P$ FLOP на токен.",
            statement="Forward: Y = X W costs 2P FLOPs per token.",
            stated="2*P", derive=lambda: forward_work)
    d.claim("dense_backward_4p", kind="expr", section=LLM,
            quote="итого $4P$ FLOP на токен",
            statement="Backward: weight and input gradients cost 2P + 2P = 4P FLOPs per token.",
            stated="4*P", derive=lambda: backward_work)
    d.claim("dense_training_6p", kind="expr", section=LLM,
            quote="$2P$ (прямой) $+4P$ (обратный) $=6P$ FLOP на токен",
            statement="Training costs 6P FLOPs per token.",
            stated="6*P", derive=lambda: forward_work + backward_work)
    d.claim("dense_backward_ratio", section=LLM,
            quote="Коэффициент вычислений обратного прохода равен ровно $\\frac{4P}{2P}=2$",
            statement="Backward / forward is exactly 2.",
            stated="2", derive=lambda: sp.cancel(backward_work / forward_work))
    forward_mode = P * forward_work  # P sweeps, each a forward pass of W = 2P
    d.claim("fwdmode_order", kind="expr", section=LLM,
            quote="${\\text{Work}}_{\\text{ForwardMode}}(\\nabla f)=\\mathcal{O}(P\\cdot W)="
                  "\\mathcal{O}(P^2)$",
            statement="Forward mode needs P passes of W = 2P: O(P^2).",
            stated="P**2", derive=lambda: theta(forward_mode))
    d.claim("fwdmode_175b", section=LLM, unit="FLOP per token",
            quote="около $2\\times (175\\times 10^9{)}^2\\approx 6,1\\times 10^{22}$ FLOP на токен",
            statement="At P = 175e9 forward mode costs about 6.1e22 FLOPs per token.",
            stated="6.1e22", derive=lambda: forward_mode.subs(P, 175 * 10**9))
    d.claim("fwdmode_factor_p", kind="expr", section=LLM,
            quote="в $P$ раз больше работы прямого прохода",
            statement="That is P times the work of a forward pass.",
            stated="P", derive=lambda: sp.cancel(forward_mode / forward_work))
    return d.build()
