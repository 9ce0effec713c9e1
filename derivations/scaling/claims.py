"""The scaling-law section of the Russian appendix (seed 002): the Chinchilla loss, C = 6ND,
the Lagrangian, N*(C) and D*(C), Kaplan, and tokens per parameter per published fit."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from symroof import (
    LAMBDA,
    ConstantSet,
    Optimum,
    Step,
    combine_powers,
    constant_set,
    dtype_bytes,
    einsum,
    lagrange,
    positive_root,
    sizes,
)
from symroof.claims import Chapter, DerivationBuilder, definition, law, measured, within

N, D, C, C0, A, B, E, alpha, beta, lam = sizes("N D C C_0 A B E alpha beta lam")

def _titled(steps: tuple[Step, ...], prefix: str) -> list[Step]:
    return [Step(s.kind, f"{prefix}: {s.title}", s.input, s.output, s.justification)
            for s in steps]

def _with_exponents(form: sp.Expr, s: ConstantSet) -> sp.Expr:
    """The form with the set's exponents substituted exactly (coefficients stay symbolic)."""
    return form.subs({alpha: s.values["alpha"], beta: s.values["beta"]})

def _tokens_per_parameter(d: DerivationBuilder, reducible: sp.Expr, sets: list[ConstantSet],
                          kaplan: ConstantSet, budgets: list[sp.Expr]) -> None:
    """D*/N* at Chinchilla's compute under every constant set: recorded steps and notes.

    The text prints no such number (it says only "about 20"), so these are a reference
    table, not claims."""
    rows: list[str] = []
    for s in sets:
        opt = _optimum(reducible, s)
        for c in budgets:
            at = {**s.subs(), C: c}
            n, dd = (opt.solution[x].evalf(30, subs=at) for x in (N, D))
            d.step("evaluate", f"{s.name}: N*, D*, D*/N* at C = {sp.Float(c, 3)}", None,
                   (n, dd, dd / n), f"{s.title}; {s.where}")
            rows.append(f"{s.name} at C = {sp.Float(c, 3)}: N* = {sp.Float(n, 4)}, "
                        f"D* = {sp.Float(dd, 4)}, D*/N* = {sp.Float(dd / n, 3)}")
    Nc, Dc, aN, aD = sizes("N_c D_c alpha_N alpha_D")
    values = kaplan.subs()
    inner = ((Nc / N) ** (aN / aD) + Dc / D).subs({aN: values[aN], aD: values[aD]})
    opt = lagrange(inner, kaplan.budget, [N, D])
    for c in budgets:
        at = {**values, C: c}
        n, dd = (opt.solution[x].evalf(30, subs=at) for x in (N, D))
        d.step("evaluate", f"{kaplan.name}: N*, D*, D*/N* at C = {sp.Float(c, 3)}", None,
               (n, dd, dd / n), f"{kaplan.title}; {kaplan.where}; converged L(N, D), not "
               "Kaplan's early-stopped frontier")
        rows.append(f"{kaplan.name} (non-embedding N, converged L(N, D)) at C = "
                    f"{sp.Float(c, 3)}: N* = {sp.Float(n, 4)}, D* = {sp.Float(dd, 4)}, "
                    f"D*/N* = {sp.Float(dd / n, 3)}")
    d.note("Tokens per parameter at Chinchilla's compute (reference, not printed in the text, "
           "which says only 'about 20'): " + "; ".join(rows))

def _optimum(reducible: sp.Expr, s: ConstantSet) -> Optimum:
    return lagrange(_with_exponents(reducible, s), s.budget, [N, D])

def claims(ch: Chapter) -> None:
    h22, h22u = constant_set("hoffmann2022"), constant_set("hoffmann2022-unrounded")
    b24, k20 = constant_set("besiroglu2024"), constant_set("kaplan2020")
    form = h22.form
    irreducible = sp.limit(sp.limit(form, N, sp.oo), D, sp.oo)
    reducible = sp.expand(form - irreducible)
    ch.step("limit", "irreducible loss: the loss surface as N, D -> oo", form, irreducible,
           "alpha, beta > 0")
    fwd = einsum("D K, K M -> D M", name="Y = X W")
    grad_w = einsum("D K, D M -> K M", name="dW = X^T dY")
    grad_x = einsum("D M, K M -> D K", name="dX = dY W^T")
    K, M = sizes("K M")
    def per_parameter(flops: sp.Expr) -> sp.Expr:
        """FLOPs of the layers, written with N = K M parameters (linear in K M)."""
        return sp.expand(flops.subs(M, N / K))
    forward = ch.step("evaluate", "forward FLOPs: one GEMM per weight", fwd.flops,
                     per_parameter(fwd.flops), "2 FLOPs per weight per token, N = K M")
    backward = ch.step("evaluate", "backward FLOPs: weight and input gradients", grad_w.flops
                      + grad_x.flops, per_parameter(grad_w.flops + grad_x.flops),
                      "two GEMMs of the forward GEMM's size")
    training = ch.step("evaluate", "training FLOPs", None, forward + backward, "forward + backward")
    ch.step("compare", "the budget of the constant set", h22.budget, sp.Eq(training, C),
           "the same constraint")
    budget = h22.budget.subs(C, C0)
    opt = lagrange(reducible, budget, [N, D])
    ch.steps.extend(_titled(opt.steps, "Chinchilla form"))
    with_e = lagrange(form, budget, [N, D])
    ch.step("compare", "E shifts the loss, not the optimum", with_e.solution, opt.solution,
           "the irreducible term has no N or D")
    def named(expr: sp.Expr) -> sp.Expr:
        """The multiplier under the name the stated formulas can spell (``lam``)."""
        return sp.sympify(expr).subs(LAMBDA, lam)
    cond_n, cond_d = (named(c.lhs) for c in opt.conditions)
    marginal_n = -N * sp.diff(reducible, N)   # loss decrease per relative increase of N
    marginal_d = -D * sp.diff(reducible, D)
    d_of_n = ch.step("solve", "the optimality condition for D", opt.balance,
                    positive_root(opt.balance, D), "D > 0")
    c_of_n = ch.step("substitute", "D(N) into the budget", opt.constraint.lhs,
                    opt.constraint.lhs.subs(D, d_of_n), "C = 6 N D")
    n_star, d_star = (opt.solution[x].subs(C0, C) for x in (N, D))
    ch.step("simplify", "6 N* D* is the budget", None, combine_powers(6 * n_star * d_star), "C")
    printed_fit = lagrange(_with_exponents(reducible, h22), h22.budget, [N, D])
    paper_fit = lagrange(_with_exponents(reducible, h22u), h22u.budget, [N, D])
    ch.steps.extend(_titled(printed_fit.steps, "alpha = 0.34, beta = 0.28"))
    ch.steps.extend(_titled(paper_fit.steps, "unrounded [H22] fit"))
    a_printed, b_printed = printed_fit.exponent(N, C), printed_fit.exponent(D, C)
    a_paper, b_paper = paper_fit.exponent(N, C), paper_fit.exponent(D, C)
    slow = (sp.Rational(1, 100), sp.Rational(1, 4))  # 1% to 25% more D*/N* per tenfold C
    chinchilla_n, chinchilla_d = 70 * 10**9, sp.Rational(14, 10) * 10**12
    gpt3_n, gpt3_d = 175 * 10**9, 300 * 10**9
    _tokens_per_parameter(ch, reducible, [h22, h22u, b24], k20,
                          [6 * chinchilla_n * chinchilla_d, sp.Rational(576, 100) * 10**23])
    k_values = k20.subs()
    Nc, Dc, aN, aD = sizes("N_c D_c alpha_N alpha_D")
    def loss_exponent(var: sp.Symbol, other_scale: sp.Symbol) -> Callable[[], sp.Expr]:
        """-d log L / d log var of Kaplan's L(N, D) when the other resource is unlimited."""
        def derive() -> sp.Expr:
            one = sp.powdenest(k20.form.subs(other_scale, 0), force=True)
            log_one = sp.expand_log(sp.log(one), force=True)
            return sp.cancel(-var * sp.diff(log_one, var)).subs(k_values)
        return derive
    text_kaplan = lagrange(reducible.subs({alpha: sp.Rational(57, 1000),
                                           beta: sp.Rational(28, 100)}), sp.Eq(6 * N * D, C),
                           [N, D])
    ch.steps.extend(_titled(text_kaplan.steps, "the text's Kaplan alpha = 0.057, beta = 0.28"))
    inner = (Nc / N) ** (aN / aD) + Dc / D
    kaplan_fit = lagrange(inner.subs({aN: k_values[aN], aD: k_values[aD]}), k20.budget, [N, D])
    ch.steps.extend(_titled(kaplan_fit.steps, "Kaplan's joint L(N, D) fit, inner power-law sum"))
    ch.step("evaluate", "Kaplan's joint fit: N* exponent", None, kaplan_fit.exponent(N, C),
           "d log N* / d log C of the converged L(N, D); Kaplan's 0.73 is instead their "
           "compute-efficient frontier with early stopping (Eq. 6.1)")
    per_token = forward.subs(D, 1)  # inference: the forward pass, per token
    weight_bytes = N * dtype_bytes("bf16")
    ch.add(
        scaling_loss_form=form,
        scaling_irreducible_e=irreducible,
        scaling_capacity_term=form.as_independent(N, as_Add=True)[1],
        scaling_data_term=form.as_independent(D, as_Add=True)[1],
        scaling_n_without_embeddings=measured(),
        scaling_compute_6nd=training,
        scaling_compute_forward_2nd=forward,
        scaling_compute_backward_4nd=backward,
        scaling_reducible_loss=reducible,
        scaling_same_optimum_without_e=law(
            sp.expand(with_e.solution[N] - opt.solution[N]).subs(E, 1) == 0),
        scaling_constraint=opt.constraint.lhs - opt.constraint.rhs,
        scaling_lagrangian=named(opt.lagrangian),
        scaling_stationarity_n=cond_n,
        scaling_stationarity_d=cond_d,
        scaling_stationarity_lambda=sp.diff(opt.lagrangian, LAMBDA),
        scaling_condition_1_times_n=sp.expand(-N * cond_n),
        scaling_condition_2_times_d=sp.expand(-D * cond_d),
        scaling_optimality_condition=opt.balance,
        scaling_optimality_marginal=law(
            combine_powers((marginal_n / marginal_d).subs(opt.solution)) == 1),
        scaling_d_of_n=d_of_n,
        scaling_c_of_n=c_of_n,
        scaling_n_star=n_star,
        scaling_n_star_exponent=opt.exponent(N, C0),
        scaling_d_star=d_star,
        scaling_d_star_exponent=opt.exponent(D, C0),
        scaling_hoffmann_runs=measured(),
        scaling_hoffmann_alpha=h22u.values["alpha"],
        scaling_hoffmann_beta=h22u.values["beta"],
        scaling_exponent_a_045=a_printed,
        scaling_exponent_b_055=b_printed,
        scaling_exponents_close_to_paper=within(abs(a_printed - a_paper), 0, sp.Rational(1, 100)),
        scaling_n_star_c045=a_printed,
        scaling_d_star_c055=b_printed,
        scaling_approaches_1_2=measured(),
        scaling_dn_grows_slowly=within(b_printed - a_printed, *slow),
        scaling_dn_grows_slowly_unrounded=within(b_paper - a_paper, *slow),
        scaling_tokens_per_param_heuristic=chinchilla_d / chinchilla_n,
        scaling_kaplan_alpha=loss_exponent(N, Dc)(),
        scaling_kaplan_beta=loss_exponent(D, Nc)(),
        scaling_kaplan_n_exponent_from_alpha_beta=text_kaplan.exponent(N, C),
        scaling_kaplan_d_exponent_from_alpha_beta=text_kaplan.exponent(D, C),
        scaling_kaplan_exponents_reported=measured(),
        scaling_gpt3_tokens_per_param=sp.Rational(gpt3_d, gpt3_n),
        scaling_kaplan_methodology=measured(),
        scaling_approaches_1_2_kaplan_section=measured(),
        scaling_approach3_a=a_paper,
        scaling_approach3_b=b_paper,
        scaling_chinchilla_tokens_per_param=chinchilla_d / chinchilla_n,
        scaling_chinchilla_beats_gpt3=measured(),
        # a ratio of one product at two typed parameter counts: the engine's factor (2 FLOPs,
        # the bytes of a weight) cancels, so the value is 175e9 / 70e9 and cannot fail
        scaling_inference_compute_2_5x=definition(
            per_token.subs(N, gpt3_n) / per_token.subs(N, chinchilla_n)),
        scaling_weight_memory_2_5x=definition(
            weight_bytes.subs(N, gpt3_n) / weight_bytes.subs(N, chinchilla_n)),
    )
