"""Encodes the scaling-law section of the Russian appendix «Основы алгоритмов» (seed 002):
the Chinchilla loss surface, C = 6ND, the Lagrangian and its stationarity conditions, the
optimality condition, N*(C) and D*(C), the exponents for alpha = 0.34 and beta = 0.28, the
Kaplan comparison and the tokens per parameter under each published constant set.

Every optimum comes from ``symroof.optimize.lagrange`` (its steps are recorded), every
constant from ``symroof.scaling.constant_set``.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from symroof.claims.model import Derivation, DerivationBuilder, Erratum, Source
from symroof.core.sizes import dtype_bytes, sizes
from symroof.core.steps import Step
from symroof.engine.ops import einsum
from symroof.engine.optimize import LAMBDA, Optimum, lagrange
from symroof.models.scaling_laws import ConstantSet, constant_set

SEED = "002_1b672fc5051ea3f6"
BOOK = "ML-systems appendix «Основы алгоритмов» (Russian)"
TOP = "Вывод законов масштабирования Каплана и Chinchilla с оптимальным расходом вычислений"
LOSS = "Постановка параметрической поверхности потерь"
LAGRANGE = "Условная оптимизация методом множителей Лагранжа"
ANALYTIC = "Аналитический вывод оптимальных по вычислениям показателей"
EMPIRICAL = "Эмпирические показатели и правило D/N ≈ 20"
KAPLAN = "Масштабирование Каплана и Chinchilla"

H22 = "Hoffmann et al. 2022, Training Compute-Optimal Large Language Models, arXiv:2203.15556"
K20 = "Kaplan et al. 2020, Scaling Laws for Neural Language Models, arXiv:2001.08361"

N, D, C, C0, A, B, E, alpha, beta, lam = sizes("N D C C_0 A B E alpha beta lam")


def _titled(steps: tuple[Step, ...], prefix: str) -> list[Step]:
    return [Step(s.kind, f"{prefix}: {s.title}", s.input, s.output, s.justification)
            for s in steps]


def _with_exponents(form: sp.Expr, s: ConstantSet) -> sp.Expr:
    """The form with the set's exponents substituted exactly (coefficients stay symbolic)."""
    return form.subs({alpha: s.values["alpha"], beta: s.values["beta"]})


def build() -> Derivation:
    src = Source(BOOK, chapter="appendix", section=TOP, seed=SEED, language="ru")
    d = Derivation.begin("scaling-ru", "Appendix «Основы алгоритмов» (Russian): compute-optimal "
                         "scaling laws of Kaplan and Chinchilla", src)
    h22, h22u = constant_set("hoffmann2022"), constant_set("hoffmann2022-unrounded")
    b24, k20 = constant_set("besiroglu2024"), constant_set("kaplan2020")
    d.assume("The loss surface and the budget are the Chinchilla form of the constant set "
             f"'hoffmann2022' ({h22.source}, {h22.where}): L = {h22.form}, "
             f"{h22.budget.lhs} = {h22.budget.rhs}")
    d.assume("alpha = 0.34, beta = 0.28 are the constants as printed (set 'hoffmann2022'); the "
             "paper's unrounded fit is the set 'hoffmann2022-unrounded'")
    d.assume("Chinchilla: 70e9 parameters, 1.4e12 tokens; GPT-3: 175e9 parameters, 300e9 tokens "
             "(inputs the text gives)")
    d.assume("Chinchilla's compute for the tokens-per-parameter table: 6 N D of the text's "
             "70e9 x 1.4e12, and 5.76e23 FLOPs, the Gopher budget [H22] trained Chinchilla on "
             "(not printed in this text)")

    # ---------------------------------------------------------------- the loss surface
    form = h22.form
    irreducible = sp.limit(sp.limit(form, N, sp.oo), D, sp.oo)
    reducible = sp.expand(form - irreducible)
    d.step("limit", "irreducible loss: the loss surface as N, D -> oo", form, irreducible,
           "alpha, beta > 0")
    d.claim("scaling_loss_form", kind="expr", section=LOSS,
            quote="$$\\mathcal{L}(N,D)=E+\\frac{A}{N^{\\alpha }}+\\frac{B}{D^{\\beta }}$$",
            statement="The parametric loss is L(N, D) = E + A/N^alpha + B/D^beta (the Chinchilla "
                      "form, [H22] Eq. 2).",
            stated="E + A/N**alpha + B/D**beta", derive=lambda: form)
    d.claim("scaling_irreducible_e", kind="expr", section=LOSS,
            quote="$E$: неустранимая потеря, отражающая энтропию данных естественного языка.",
            statement="E is the irreducible loss: the loss as N and D grow without bound.",
            stated="E", derive=lambda: irreducible)
    d.claim("scaling_capacity_term", kind="expr", section=LOSS,
            quote="$\\frac{A}{N^{\\alpha }}$: потеря из-за узкого места емкости, возникающая "
                  "из-за конечного числа параметров $N$.",
            statement="The part of the loss that depends on N is A/N^alpha.",
            stated="A/N**alpha", derive=lambda: form.as_independent(N, as_Add=True)[1])
    d.claim("scaling_data_term", kind="expr", section=LOSS,
            quote="$\\frac{B}{D^{\\beta }}$: потеря из-за узкого места размера набора данных, "
                  "возникающая из-за конечного числа обучающих токенов $D$.",
            statement="The part of the loss that depends on D is B/D^beta.",
            stated="B/D**beta", derive=lambda: form.as_independent(D, as_Add=True)[1])
    d.claim("scaling_n_without_embeddings", kind="measurement", section=LOSS,
            quote="авторегрессионной трансформерной языковой модели, обученной с $N$ параметрами "
                  "без учета эмбеддингов на $D$ токенах",
            statement="N in L(N, D) counts parameters without embeddings.",
            stated="N excludes embeddings",
            evidence=f"{H22}: the Chinchilla fit counts all parameters, embeddings included; "
                     f"non-embedding N is the convention of {K20} (the engine's constant sets do "
                     "not record the convention, so it cannot be derived)",
            erratum=Erratum(why="the constants of this loss (A = 406.4, alpha = 0.34, ...) were "
                                "fitted by Hoffmann et al. with N = all parameters, embeddings "
                                "included; excluding embeddings is Kaplan's convention",
                            right="N counts all parameters, embeddings included"))

    # ---------------------------------------------------------------- C = 6 N D
    # one dense layer per token: a K x M weight (K M of the N parameters), D tokens
    fwd = einsum("D K, K M -> D M", name="Y = X W")
    grad_w = einsum("D K, D M -> K M", name="dW = X^T dY")
    grad_x = einsum("D M, K M -> D K", name="dX = dY W^T")
    K, M = sizes("K M")

    def per_parameter(flops: sp.Expr) -> sp.Expr:
        """FLOPs of the layers, written with N = K M parameters (linear in K M)."""
        return sp.expand(flops.subs(M, N / K))

    forward = d.step("evaluate", "forward FLOPs: one GEMM per weight", fwd.flops,
                     per_parameter(fwd.flops), "2 FLOPs per weight per token, N = K M")
    backward = d.step("evaluate", "backward FLOPs: weight and input gradients", grad_w.flops
                      + grad_x.flops, per_parameter(grad_w.flops + grad_x.flops),
                      "two GEMMs of the forward GEMM's size")
    training = d.step("evaluate", "training FLOPs", None, forward + backward, "forward + backward")
    d.step("compare", "the budget of the constant set", h22.budget, sp.Eq(training, C),
           "the same constraint")
    d.claim("scaling_compute_6nd", kind="expr", section=LAGRANGE,
            quote="$$C=6ND\\text{ FLOP}$$",
            statement="Training a transformer with N parameters on D tokens takes C = 6ND FLOPs.",
            stated="6*N*D", derive=lambda: training)
    d.claim("scaling_compute_forward_2nd", kind="expr", section=LAGRANGE,
            quote="где $2ND$ учитывает прямой проход, а $4ND$ — обратный.",
            statement="The forward pass accounts for 2ND of the FLOPs.",
            stated="2*N*D", derive=lambda: forward)
    d.claim("scaling_compute_backward_4nd", kind="expr", section=LAGRANGE,
            quote="где $2ND$ учитывает прямой проход, а $4ND$ — обратный.",
            statement="The backward pass accounts for 4ND of the FLOPs.",
            stated="4*N*D", derive=lambda: backward)

    # ---------------------------------------------------------------- the Lagrangian
    budget = h22.budget.subs(C, C0)
    opt = lagrange(reducible, budget, [N, D])
    d.steps.extend(_titled(opt.steps, "Chinchilla form"))
    with_e = lagrange(form, budget, [N, D])
    d.step("compare", "E shifts the loss, not the optimum", with_e.solution, opt.solution,
           "the irreducible term has no N or D")

    def named(expr: sp.Expr) -> sp.Expr:
        """The multiplier under the name the stated formulas can spell (``lam``)."""
        return sp.sympify(expr).subs(LAMBDA, lam)

    cond_n, cond_d = (named(c.lhs) for c in opt.conditions)
    d.claim("scaling_reducible_loss", kind="expr", section=LAGRANGE,
            quote="минимизировать устранимую потерю $\\hat{\\mathcal{L}}(N,D)=\\frac{A}{N^{\\alpha "
                  "}}+\\frac{B}{D^{\\beta }}$",
            statement="The reducible loss is the loss surface without its irreducible part E.",
            stated="A/N**alpha + B/D**beta", derive=lambda: reducible)
    d.claim("scaling_same_optimum_without_e", kind="qualitative", section=LAGRANGE,
            quote="При заданном бюджете обучения $C_0$ сформулируем задачу условной оптимизации: "
                  "минимизировать устранимую потерю",
            statement="Minimising the reducible loss gives the same optimum as minimising the "
                      "full loss: N* does not depend on E.",
            stated="минимизировать устранимую потерю", within=(0, 0),
            meaning="N*(C_0) of the full loss minus N*(C_0) of the reducible loss, simplified, "
                    "at E = 1",
            derive=lambda: sp.simplify(with_e.solution[N] - opt.solution[N]).subs(E, 1))
    d.claim("scaling_constraint", kind="expr", section=LAGRANGE,
            quote="\\text{при условии}g(N,D)=6ND-C_0=0$$",
            statement="The constraint is g(N, D) = 6ND - C_0 = 0.",
            stated="6*N*D - C_0", derive=lambda: opt.constraint.lhs - opt.constraint.rhs)
    d.claim("scaling_lagrangian", kind="expr", section=LAGRANGE,
            quote="$${\\mathcal{L}}_{\\text{Lagrange}}(N,D,\\lambda )=\\frac{A}{N^{\\alpha }}+"
                  "\\frac{B}{D^{\\beta }}+\\lambda (6ND-C_0)$$",
            statement="The Lagrangian is A/N^alpha + B/D^beta + lambda (6ND - C_0) "
                      "(lambda written lam).",
            stated="A/N**alpha + B/D**beta + lam*(6*N*D - C_0)",
            derive=lambda: named(opt.lagrangian))
    d.claim("scaling_stationarity_n", kind="expr", section=LAGRANGE,
            quote="\\frac{\\partial {\\mathcal{L}}_{\\text{Lagrange}}}{\\partial N}=-\\alpha "
                  "A{N}^{-\\alpha -1}+6\\lambda D=0",
            statement="Condition (1): dL/dN = -alpha A N^(-alpha-1) + 6 lambda D = 0.",
            stated="-alpha*A*N**(-alpha - 1) + 6*lam*D", derive=lambda: cond_n)
    d.claim("scaling_stationarity_d", kind="expr", section=LAGRANGE,
            quote="\\frac{\\partial {\\mathcal{L}}_{\\text{Lagrange}}}{\\partial D}=-\\beta "
                  "B{D}^{-\\beta -1}+6\\lambda N=0",
            statement="Condition (2): dL/dD = -beta B D^(-beta-1) + 6 lambda N = 0.",
            stated="-beta*B*D**(-beta - 1) + 6*lam*N", derive=lambda: cond_d)
    d.claim("scaling_stationarity_lambda", kind="expr", section=LAGRANGE,
            quote="\\frac{\\partial {\\mathcal{L}}_{\\text{Lagrange}}}{\\partial \\lambda }="
                  "6ND-C_0=0",
            statement="Condition (3): dL/dlambda = 6ND - C_0 = 0, the constraint itself.",
            stated="6*N*D - C_0", derive=lambda: sp.diff(opt.lagrangian, LAMBDA))
    d.claim("scaling_condition_1_times_n", kind="expr", section=LAGRANGE,
            quote="Умножим уравнение (1) на $N$, а уравнение (2) на $D$: $$\\alpha A{N}^{-\\alpha "
                  "}=6\\lambda ND$$",
            statement="(1) times N: alpha A N^-alpha = 6 lambda N D, encoded as left side minus "
                      "right side, which is -N dL/dN.",
            stated="alpha*A*N**(-alpha) - 6*lam*N*D", derive=lambda: sp.expand(-N * cond_n))
    d.claim("scaling_condition_2_times_d", kind="expr", section=LAGRANGE,
            quote="$$\\beta B{D}^{-\\beta }=6\\lambda ND$$",
            statement="(2) times D: beta B D^-beta = 6 lambda N D, encoded as left side minus "
                      "right side, which is -D dL/dD.",
            stated="beta*B*D**(-beta) - 6*lam*N*D", derive=lambda: sp.expand(-D * cond_d))
    d.claim("scaling_optimality_condition", kind="relation", section=LAGRANGE,
            quote="Приравнивая эти выражения, получаем фундаментальное условие оптимальности "
                  "степенного типа: $$\\alpha A{N}^{-\\alpha }=\\beta B{D}^{-\\beta }$$",
            statement="At the optimum alpha A N^-alpha = beta B D^-beta.",
            stated="alpha*A*N**(-alpha) = beta*B*D**(-beta)", derive=lambda: opt.balance)
    marginal_n = -N * sp.diff(reducible, N)   # loss decrease per relative increase of N
    marginal_d = -D * sp.diff(reducible, D)
    d.claim("scaling_optimality_marginal", kind="qualitative", section=LAGRANGE,
            quote="в точке оптимального по вычислениям распределения предельное снижение потерь "
                  "на относительный прирост числа параметров должно равняться предельному "
                  "снижению потерь на относительный прирост числа токенов набора данных",
            statement="At the optimum, -dL/dln N equals -dL/dln D.",
            stated="должно равняться", within=(1, 1),
            meaning="(-N dL/dN) / (-D dL/dD) at (N*, D*), simplified",
            derive=lambda: sp.simplify(sp.powsimp(sp.expand_power_base(
                (marginal_n / marginal_d).subs(opt.solution), force=True), force=True)))

    # ---------------------------------------------------------------- N*(C), D*(C)
    d_of_n = d.step("solve", "the optimality condition for D", opt.balance,
                    sp.solve(opt.balance, D, simplify=False, check=False)[0], "D > 0")
    c_of_n = d.step("substitute", "D(N) into the budget", opt.constraint.lhs,
                    opt.constraint.lhs.subs(D, d_of_n), "C = 6 N D")
    n_star, d_star = (opt.solution[x].subs(C0, C) for x in (N, D))
    d.step("simplify", "6 N* D* is the budget", None, sp.simplify(6 * n_star * d_star), "C")
    d.claim("scaling_d_of_n", kind="expr", section=ANALYTIC,
            quote="$$D^{\\beta }=\\left(\\frac{\\beta B}{\\alpha A}\\right)N^{\\alpha }⟹D={\\left("
                  "\\frac{\\beta B}{\\alpha A}\\right)}^{1/\\beta }{N}^{\\alpha /\\beta }$$",
            statement="On the optimal path D = (beta B / (alpha A))^(1/beta) N^(alpha/beta).",
            stated="(beta*B/(alpha*A))**(1/beta)*N**(alpha/beta)", derive=lambda: d_of_n)
    d.claim("scaling_c_of_n", kind="expr", section=ANALYTIC,
            quote="$$C=6N{\\left(\\frac{\\beta B}{\\alpha A}\\right)}^{1/\\beta }{N}^{\\alpha /"
                  "\\beta }=6{\\left(\\frac{\\beta B}{\\alpha A}\\right)}^{1/\\beta }{N}^{\\frac{"
                  "\\alpha +\\beta }{\\beta }}$$",
            statement="On the optimal path C = 6 (beta B / (alpha A))^(1/beta) "
                      "N^((alpha+beta)/beta).",
            stated="6*(beta*B/(alpha*A))**(1/beta)*N**((alpha + beta)/beta)",
            derive=lambda: c_of_n)
    d.claim("scaling_n_star", kind="expr", section=ANALYTIC,
            quote="$$N^{\\ast }(C)={\\left(\\frac{\\alpha A}{\\beta B}\\right)}^{\\frac{1}{\\alpha "
                  "+\\beta }}{\\left(\\frac{C}{6}\\right)}^{\\frac{\\beta }{\\alpha +\\beta }}",
            statement="N*(C) = (alpha A / (beta B))^(1/(alpha+beta)) (C/6)^(beta/(alpha+beta)).",
            stated="(alpha*A/(beta*B))**(1/(alpha + beta))*(C/6)**(beta/(alpha + beta))",
            derive=lambda: n_star)
    d.claim("scaling_n_star_exponent", kind="expr", section=ANALYTIC,
            quote="\\propto C^{\\frac{\\beta }{\\alpha +\\beta }}$$",
            statement="N* grows as C^(beta/(alpha+beta)).",
            stated="beta/(alpha + beta)", derive=lambda: opt.exponent(N, C0))
    d.claim("scaling_d_star", kind="expr", section=ANALYTIC,
            quote="$$D^{\\ast }(C)={\\left(\\frac{\\beta B}{\\alpha A}\\right)}^{\\frac{1}{\\alpha "
                  "+\\beta }}{\\left(\\frac{C}{6}\\right)}^{\\frac{\\alpha }{\\alpha +\\beta }}",
            statement="D*(C) = (beta B / (alpha A))^(1/(alpha+beta)) (C/6)^(alpha/(alpha+beta)).",
            stated="(beta*B/(alpha*A))**(1/(alpha + beta))*(C/6)**(alpha/(alpha + beta))",
            derive=lambda: d_star)
    d.claim("scaling_d_star_exponent", kind="expr", section=ANALYTIC,
            quote="\\propto C^{\\frac{\\alpha }{\\alpha +\\beta }}$$",
            statement="D* grows as C^(alpha/(alpha+beta)).",
            stated="alpha/(alpha + beta)", derive=lambda: opt.exponent(D, C0))

    # ---------------------------------------------------------------- alpha = 0.34, beta = 0.28
    printed_fit = lagrange(_with_exponents(reducible, h22), h22.budget, [N, D])
    paper_fit = lagrange(_with_exponents(reducible, h22u), h22u.budget, [N, D])
    d.steps.extend(_titled(printed_fit.steps, "alpha = 0.34, beta = 0.28"))
    d.steps.extend(_titled(paper_fit.steps, "unrounded [H22] fit"))
    a_printed, b_printed = printed_fit.exponent(N, C), printed_fit.exponent(D, C)
    a_paper, b_paper = paper_fit.exponent(N, C), paper_fit.exponent(D, C)
    runs_quote = ("Подгоняя параметрическую поверхность потерь под более чем 400 "
                  "экспериментальных запусков, Hoffmann et al. (2022) оценили $\\alpha \\approx "
                  "0,34$ и $\\beta \\approx 0,28$.")
    d.claim("scaling_hoffmann_runs", kind="measurement", section=EMPIRICAL, quote=runs_quote,
            statement="Hoffmann et al. fitted the loss surface to more than 400 training runs.",
            stated="more than 400",
            evidence=f"{H22}, abstract: over 400 language models, 70M to over 16B parameters, "
                     "5 to 500B tokens")
    d.claim("scaling_hoffmann_alpha", section=EMPIRICAL, quote=runs_quote,
            statement="Hoffmann et al.'s fit gives alpha about 0.34 (their unrounded alpha, "
                      "at the printed two decimals).",
            stated="0.34", derive=lambda: h22u.values["alpha"])
    d.claim("scaling_hoffmann_beta", section=EMPIRICAL, quote=runs_quote,
            statement="Hoffmann et al.'s fit gives beta about 0.28 (their unrounded beta, "
                      "at the printed two decimals).",
            stated="0.28", derive=lambda: h22u.values["beta"])
    exponents_quote = ("$$\\frac{\\beta }{\\alpha +\\beta }\\approx 0,45,\\frac{\\alpha }{\\alpha "
                       "+\\beta }\\approx 0,55$$")
    d.claim("scaling_exponent_a_045", section=EMPIRICAL, quote=exponents_quote,
            statement="With alpha = 0.34, beta = 0.28: beta/(alpha+beta) = 14/31, about 0.45.",
            stated="0.45", derive=lambda: a_printed)
    d.claim("scaling_exponent_b_055", section=EMPIRICAL, quote=exponents_quote,
            statement="With alpha = 0.34, beta = 0.28: alpha/(alpha+beta) = 17/31, about 0.55.",
            stated="0.55", derive=lambda: b_printed)
    d.claim("scaling_exponents_close_to_paper", kind="qualitative", section=EMPIRICAL,
            quote="Подстановка этих значений дает показатели, близкие к результату параметрической "
                  "модели в статье",
            statement="The exponents from the rounded alpha, beta are close to those of the "
                      "paper's parametric fit.",
            stated="близкие", within=(0, sp.Rational(1, 100)),
            meaning="|N-exponent from alpha = 0.34, beta = 0.28 minus N-exponent of the paper's "
                    "unrounded fit|: at most one unit of the second decimal the text prints",
            derive=lambda: abs(a_printed - a_paper))
    propto_quote = "$$N^{\\ast }(C)\\propto C^{0,45},D^{\\ast }(C)\\propto C^{0,55}$$"
    d.claim("scaling_n_star_c045", section=EMPIRICAL, quote=propto_quote,
            statement="The parametric model predicts N* proportional to C^0.45.",
            stated="0.45", derive=lambda: a_printed)
    d.claim("scaling_d_star_c055", section=EMPIRICAL, quote=propto_quote,
            statement="The parametric model predicts D* proportional to C^0.55.",
            stated="0.55", derive=lambda: b_printed)
    table2 = (f"{H22}, Table 2: Approach 1 (0.50, 0.50), Approach 2 (0.49, 0.51); empirical "
              "fits of IsoFLOP minima, not derivable from the parametric loss")
    d.claim("scaling_approaches_1_2", kind="measurement", section=EMPIRICAL,
            quote="Два прямых эмпирических подхода в статье дают почти сбалансированные "
                  "показатели $(0,50;0,50)$ и $(0,49;0,51)$",
            statement="Approaches 1 and 2 of Hoffmann et al. give (0.50, 0.50) and (0.49, 0.51).",
            stated="(0.50; 0.50), (0.49; 0.51)", evidence=table2)
    slowly_quote = ("Однако при параметрической подгонке отношение $D^{\\ast }/N^{\\ast }$ растет "
                    "медленно с вычислениями, а не остается строго постоянным.")
    slowly = ("d log(D*/N*) / d log C: positive (grows, not constant), at least 0.01 (2.3% more "
              "tokens per parameter per tenfold compute) and at most 1/4 (slowly: under 1.8x "
              "per tenfold compute)")
    d.claim("scaling_dn_grows_slowly", kind="qualitative", section=EMPIRICAL, quote=slowly_quote,
            statement="Under the parametric fit (alpha = 0.34, beta = 0.28) D*/N* grows slowly "
                      "with compute: as C^(3/31).",
            stated="растет медленно", within=(sp.Rational(1, 100), sp.Rational(1, 4)),
            meaning=slowly, derive=lambda: b_printed - a_printed)
    d.claim("scaling_dn_grows_slowly_unrounded", kind="qualitative", section=EMPIRICAL,
            quote=slowly_quote,
            statement="Under the paper's unrounded fit D*/N* also grows slowly with compute.",
            stated="растет медленно", within=(sp.Rational(1, 100), sp.Rational(1, 4)),
            meaning=slowly, derive=lambda: b_paper - a_paper)

    chinchilla_n, chinchilla_d = 70 * 10**9, sp.Rational(14, 10) * 10**12
    gpt3_n, gpt3_d = 175 * 10**9, 300 * 10**9
    d.claim("scaling_tokens_per_param_heuristic", section=EMPIRICAL,
            quote="В изученном режиме примерно 20 обучающих токенов на параметр — полезная "
                  "эвристика Chinchilla, а не универсальный инвариант.",
            statement="About 20 training tokens per parameter is Chinchilla's heuristic "
                      "(Chinchilla's own 1.4e12 tokens / 70e9 parameters; 'about 20' read at one "
                      "significant digit).",
            stated="2e1", derive=lambda: chinchilla_d / chinchilla_n)
    _tokens_per_parameter(d, reducible, [h22, h22u, b24], k20,
                          [6 * chinchilla_n * chinchilla_d, sp.Rational(576, 100) * 10**23])

    # ---------------------------------------------------------------- Kaplan vs Chinchilla
    k_values = k20.subs()
    Nc, Dc, aN, aD = sizes("N_c D_c alpha_N alpha_D")

    def loss_exponent(var: sp.Symbol, other_scale: sp.Symbol) -> Callable[[], sp.Expr]:
        """-d log L / d log var of Kaplan's L(N, D) when the other resource is unlimited."""
        def derive() -> sp.Expr:
            one = sp.powdenest(k20.form.subs(other_scale, 0), force=True)
            return sp.simplify(-var * sp.diff(sp.log(one), var)).subs(k_values)
        return derive

    text_kaplan = lagrange(reducible.subs({alpha: sp.Rational(57, 1000),
                                           beta: sp.Rational(28, 100)}), sp.Eq(6 * N * D, C),
                           [N, D])
    d.steps.extend(_titled(text_kaplan.steps, "the text's Kaplan alpha = 0.057, beta = 0.28"))
    # Kaplan's L = u^alpha_D is increasing in u = (N_c/N)^(alpha_N/alpha_D) + D_c/D, so both
    # have the same constrained minimum; u is a sum of power laws (the fast path applies)
    inner = (Nc / N) ** (aN / aD) + Dc / D
    kaplan_fit = lagrange(inner.subs({aN: k_values[aN], aD: k_values[aD]}), k20.budget, [N, D])
    d.steps.extend(_titled(kaplan_fit.steps, "Kaplan's joint L(N, D) fit, inner power-law sum"))
    d.step("evaluate", "Kaplan's joint fit: N* exponent", None, kaplan_fit.exponent(N, C),
           "d log N* / d log C of the converged L(N, D); Kaplan's 0.73 is instead their "
           "compute-efficient frontier with early stopping (Eq. 6.1)")
    kaplan_quote = ("Kaplan et al. (2020) оценили $\\alpha \\approx 0,057$ и $\\beta \\approx "
                    "0,28$, предсказав $N\\propto C^{0,73}$ и $D\\propto C^{0,27}$.")
    d.claim("scaling_kaplan_alpha", section=KAPLAN, quote=kaplan_quote,
            statement="Kaplan et al. estimated the parameter exponent alpha about 0.057.",
            stated="0.057", derive=loss_exponent(N, Dc),
            erratum=Erratum(why="Kaplan's loss falls as N^-alpha_N with alpha_N = 0.076 (Eq. "
                                "1.5, Table 2); 0.057 is Kaplan's exponent of loss in compute at "
                                "a fixed batch size, L(C) ~ C^-0.057, not an N exponent",
                            right="alpha_N about 0.076"))
    d.claim("scaling_kaplan_beta", section=KAPLAN, quote=kaplan_quote,
            statement="Kaplan et al. estimated the data exponent beta about 0.28.",
            stated="0.28", derive=loss_exponent(D, Nc),
            erratum=Erratum(why="Kaplan's data exponent is alpha_D = 0.095 alone and 0.103 in "
                                "the joint L(N, D) fit; 0.28 is Chinchilla's beta",
                            right="alpha_D about 0.1 (0.103 in the joint fit)"))
    d.claim("scaling_kaplan_n_exponent_from_alpha_beta", section=KAPLAN, quote=kaplan_quote,
            statement="With alpha = 0.057 and beta = 0.28 the section's optimum predicts "
                      "N* proportional to C^0.73.",
            stated="0.73", derive=lambda: text_kaplan.exponent(N, C),
            erratum=Erratum(why="the section's own beta/(alpha+beta) with alpha = 0.057, "
                                "beta = 0.28 is 280/337 = 0.83, not 0.73; Kaplan's 0.73 is an "
                                "empirical fit of their compute-efficient frontier (Eq. 6.1), "
                                "not a Lagrangian consequence of these exponents",
                            right="N* ~ C^0.83 for these alpha, beta (Kaplan's own joint fit "
                                  "gives C^0.575)"))
    d.claim("scaling_kaplan_d_exponent_from_alpha_beta", section=KAPLAN, quote=kaplan_quote,
            statement="With alpha = 0.057 and beta = 0.28 the section's optimum predicts "
                      "D* proportional to C^0.27.",
            stated="0.27", derive=lambda: text_kaplan.exponent(D, C),
            erratum=Erratum(why="alpha/(alpha+beta) with alpha = 0.057, beta = 0.28 is "
                                "57/337 = 0.17, not 0.27",
                            right="D* ~ C^0.17 for these alpha, beta"))
    d.claim("scaling_kaplan_exponents_reported", kind="measurement", section=KAPLAN,
            quote=kaplan_quote,
            statement="Kaplan et al. report N proportional to C^0.73 and D to C^0.27.",
            stated="0.73, 0.27",
            evidence=f"{K20}, Eq. 6.1 (N_opt ~ C_min^0.73, a power-law fit to the "
                     f"compute-efficient frontier of Fig. 14); {H22}, Table 2 lists Kaplan as "
                     "(0.73, 0.27)")
    d.claim("scaling_gpt3_tokens_per_param", section=KAPLAN,
            quote="GPT-3 с 175 млрд параметров обучили на 300 млрд токенов, что дает $D/N=1,71$",
            statement="GPT-3: 300e9 tokens / 175e9 parameters = 12/7, about 1.71.",
            stated="1.71", derive=lambda: sp.Rational(gpt3_d, gpt3_n))
    d.claim("scaling_kaplan_methodology", kind="measurement", section=KAPLAN,
            quote="Kaplan et al. (2020) использовали фиксированный бюджет токенов и расписание "
                  "скорости обучения для всех моделей. Hoffmann et al. (2022) подобрали "
                  "расписание под каждый горизонт обучения",
            statement="Kaplan et al. used one token budget and learning-rate schedule for all "
                      "models; Hoffmann et al. matched the schedule to each training horizon.",
            stated="fixed schedule vs matched schedule",
            evidence=f"{H22}, Section 2 (related work on Kaplan et al.'s setup)")
    three_quote = ("их три подхода дают пары показателей $(0,50;0,50)$, $(0,49;0,51)$ и "
                   "$(0,46;0,54)$")
    d.claim("scaling_approaches_1_2_kaplan_section", kind="measurement", section=KAPLAN,
            quote=three_quote,
            statement="Approaches 1 and 2 give (0.50, 0.50) and (0.49, 0.51).",
            stated="(0.50; 0.50), (0.49; 0.51)", evidence=table2)
    d.claim("scaling_approach3_a", section=KAPLAN, quote=three_quote,
            statement="Approach 3 (the parametric fit, unrounded constants) gives the N exponent "
                      "0.46.",
            stated="0.46", derive=lambda: a_paper)
    d.claim("scaling_approach3_b", section=KAPLAN, quote=three_quote,
            statement="Approach 3 (the parametric fit, unrounded constants) gives the D exponent "
                      "0.54.",
            stated="0.54", derive=lambda: b_paper)
    d.claim("scaling_chinchilla_tokens_per_param", section=KAPLAN,
            quote="Chinchilla (70 млрд параметров, обученных на 1,4 трлн токенов, $D/N=20$)",
            statement="Chinchilla: 1.4e12 tokens / 70e9 parameters = 20.",
            stated="20", derive=lambda: chinchilla_d / chinchilla_n)
    d.claim("scaling_chinchilla_beats_gpt3", kind="measurement", section=KAPLAN,
            quote="превзошла GPT-3 (175 млрд параметров, обученных на 300 млрд токенов) на "
                  "последующих бенчмарках",
            statement="Chinchilla outperformed GPT-3 on downstream benchmarks.",
            stated="outperformed",
            evidence=f"{H22}, abstract and Section 4 (benchmark results)")
    per_token = forward.subs(D, 1)  # inference: the forward pass, per token
    d.claim("scaling_inference_compute_2_5x", section=KAPLAN,
            quote="требуя при выводе в 2,5 раза меньше вычислений",
            statement="Per token, GPT-3's forward pass (2N FLOPs) costs 2.5x Chinchilla's.",
            stated="2.5",
            derive=lambda: per_token.subs(N, gpt3_n) / per_token.subs(N, chinchilla_n))
    weight_bytes = N * dtype_bytes("bf16")
    d.claim("scaling_weight_memory_2_5x", section=KAPLAN,
            quote="при той же точности — в 2,5 раза меньше памяти весов",
            statement="At the same precision (BF16 here; any one dtype gives the same ratio) "
                      "GPT-3's weights take 2.5x Chinchilla's memory.",
            stated="2.5",
            derive=lambda: weight_bytes.subs(N, gpt3_n) / weight_bytes.subs(N, chinchilla_n))
    return d.build()


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
