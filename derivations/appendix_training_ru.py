"""Encodes the training sections of the Russian appendix «Основы алгоритмов» (seed 002):
the chain rule and backpropagation, the memory of training and the GPT-2 XL example,
gradient checkpointing, operator fusion and FlashAttention's claim in the fusion section.
"""

from __future__ import annotations

import sympy as sp
from _appendix_ru import a100_vendor, source

from symroof.claims.model import Derivation, Erratum
from symroof.core.sizes import dtype_bytes, sizes
from symroof.core.units import CAPACITY, parse_quantity
from symroof.engine.asymptotics import theta
from symroof.engine.ops import einsum, elementwise, fuse, sequence
from symroof.engine.rooflines import roofline
from symroof.models.adcost import reverse_cost
from symroof.models.attention import standard_attention, tiled_attention

CHAIN = "Правило цепочки и автоматическое дифференцирование"
BACKWARD = "Обратный проход"
MEMORY = "Истинная стоимость памяти обучения"
GPT2 = "Разобранный пример: память обучения GPT-2 (1,5 млрд)"
EXPLOSION = "Взрыв активаций"
FUSION = "Слияние операторов"
GB = 10**9


def build() -> Derivation:
    d = Derivation.begin("appendix-ru-training", "Appendix «Основы алгоритмов» (Russian): "
                         "training mechanics, training memory and fusion", source())
    d.assume("GPT-2 XL: the text's nominal P = 1.5e9 parameters, 48 layers, d = 1600 are "
             "inputs (the released model has slightly more parameters)")
    d.assume("The '80 GB class' A100/H100 card is read as the text reads it: 80 GiB, which the "
             "text converts to 85.9 decimal GB (the catalogue lists the vendor's nominal 80 GB)")
    d.assume("Saved activations per layer: the text's convention of 12 B S d BF16 elements")

    # ---------------------------------------------------------------- chain rule, passes
    x = sp.Symbol("x", real=True)
    u = sp.Symbol("u", real=True)
    f1, f2, f3 = sp.Function("f1"), sp.Function("f2"), sp.Function("f3")

    def local(f: sp.Function, at: sp.Expr) -> sp.Expr:
        return sp.diff(f(u), u).subs(u, at)

    d.claim("chain_rule_three_layers", kind="qualitative", section=CHAIN,
            quote="$$\\frac{\\partial y}{\\partial x}=\\frac{\\partial f_3}{\\partial f_2}\\cdot "
                  "\\frac{\\partial f_2}{\\partial f_1}\\cdot \\frac{\\partial f_1}{\\partial x}$$",
            statement="dy/dx of y = f3(f2(f1(x))) is the product of the three local derivatives.",
            stated="произведение локальных производных", within=(0, 0),
            meaning="d/dx f3(f2(f1(x))) minus f3'(f2(f1(x))) f2'(f1(x)) f1'(x), simplified",
            derive=lambda: sp.simplify(sp.diff(f3(f2(f1(x))), x) - local(f3, f2(f1(x)))
                                       * local(f2, f1(x)) * local(f1, x)))
    P = sizes("P")[0]
    weights = sp.symbols("w1:6", positive=True)

    def linear_loss(p: int) -> sp.Expr:
        return sum((w * (i + 2) for i, w in enumerate(weights[:p])), sp.Integer(0))

    d.claim("passes_reverse", section=CHAIN,
            quote="начиная с выхода и двигаясь назад (обратный режим), требуется один проход "
                  "независимо от числа параметров",
            statement="Reverse mode needs one backward sweep for the gradient of a scalar loss.",
            stated="1", derive=lambda: reverse_cost(linear_loss(5)).passes("reverse"))
    d.claim("passes_forward", kind="expr", section=CHAIN,
            quote="понадобилось бы $P$ проходов — по одному на параметр",
            statement="Forward mode needs one sweep per parameter: P (fitted over P = 2..5).",
            stated="P", derive=lambda: sp.expand(sp.interpolate(
                [(p, reverse_cost(linear_loss(p)).passes("forward")) for p in range(2, 6)], P)))

    # dense layer, per token: Y = X W, dW = X^T dY, dX = dY W^T
    fwd = einsum("T D, D F -> T F", name="Y = X W")
    grad_w = einsum("T D, T F -> D F", name="dW = X^T dY")
    grad_x = einsum("T F, D F -> T D", name="dX = dY W^T")
    backward_flops = grad_w.flops + grad_x.flops
    d.claim("train_step_multiple", kind="qualitative", section=CHAIN,
            quote="обычно примерно в 2–3 раза дороже прямого прохода для плотных сетей",
            statement="A training step costs about 2-3x a forward pass for dense networks.",
            stated="2–3", within=(2, 3),
            meaning="(forward + backward FLOPs) / forward FLOPs of a dense layer "
                    "(einsum: one GEMM forward, two backward)",
            derive=lambda: sp.cancel((fwd.flops + backward_flops) / fwd.flops))

    # ---------------------------------------------------------------- backpropagation
    h = sp.MatrixSymbol("h", 1, 3)
    xin = sp.MatrixSymbol("x", 1, 4)
    W1, W2 = sp.MatrixSymbol("W_1", 4, 3), sp.MatrixSymbol("W_2", 3, 2)
    dy, dh = sp.MatrixSymbol("dL_dy", 1, 2), sp.MatrixSymbol("dL_dh", 1, 3)
    # first-order change of L through y = h W2 (resp. h = x W1): L ~ trace(dL_dy^T y)
    through_y = sp.Trace(dy.T * (h * W2))
    through_h = sp.Trace(dh.T * (xin * W1))
    d.claim("backprop_grad_w2", kind="label", section=BACKWARD,
            quote="$$\\frac{\\partial \\mathcal{L}}{\\partial W_2}=h^T\\cdot \\frac{\\partial "
                  "\\mathcal{L}}{\\partial y}",
            statement="With row vectors and y = h W2: dL/dW2 = h^T dL/dy (SymPy matrix calculus).",
            stated="h.T*dL_dy", derive=lambda: str(through_y.diff(W2)))
    d.claim("backprop_grad_h", kind="label", section=BACKWARD,
            quote="$$\\frac{\\partial \\mathcal{L}}{\\partial h}=\\frac{\\partial \\mathcal{L}}"
                  "{\\partial y}\\cdot W_2^T",
            statement="dL/dh = dL/dy W2^T.",
            stated="dL_dy*W_2.T", derive=lambda: str(through_y.diff(h)))
    d.claim("backprop_grad_w1", kind="label", section=BACKWARD,
            quote="$$\\frac{\\partial \\mathcal{L}}{\\partial W_1}=x^T\\cdot \\frac{\\partial "
                  "\\mathcal{L}}{\\partial h}$$",
            statement="With h = x W1: dL/dW1 = x^T dL/dh.",
            stated="x.T*dL_dh", derive=lambda: str(through_h.diff(W1)))
    d.claim("backprop_backward_twice", section=BACKWARD,
            quote="обратный проход стоит примерно в 2 раза больше прямого по вычислениям",
            statement="The backward pass costs about 2x the forward pass: two GEMMs per layer "
                      "(weight and input gradients) against one.",
            stated="2", derive=lambda: sp.cancel(backward_flops / fwd.flops))

    # ---------------------------------------------------------------- training memory
    bf16, fp32 = dtype_bytes("bf16"), dtype_bytes("fp32")
    adam_moments = 2 * fp32
    optimizer = adam_moments + fp32
    d.claim("mem_weights_half", section=MEMORY, unit="bytes",
            quote="Веса: 2 байта (FP16/BF16) или 4 байта (FP32).",
            statement="A weight takes 2 bytes in FP16/BF16.", stated="2",
            derive=lambda: bf16)
    d.claim("mem_weights_fp32", section=MEMORY, unit="bytes",
            quote="Веса: 2 байта (FP16/BF16) или 4 байта (FP32).",
            statement="A weight takes 4 bytes in FP32.", stated="4", derive=lambda: fp32)
    d.claim("mem_adam_moments", section=MEMORY, unit="bytes",
            quote="моменты Adam требуют 8 байт на параметр",
            statement="Adam's two FP32 moments take 8 bytes per parameter.", stated="8",
            derive=lambda: adam_moments)
    d.claim("mem_adam_with_master", section=MEMORY, unit="bytes",
            quote="мастер-копия в FP32 добавляет еще 4 байта, итого 8–12 байт на параметр",
            statement="With an FP32 master copy the optimizer state is 12 bytes per parameter.",
            stated="12", derive=lambda: optimizer)

    B, S, NL, dm, H = sizes("B S N_L d H")
    act_elements = 12 * B * S * dm  # the text's per-layer convention
    activations = NL * act_elements * bf16
    with_scores = activations + NL * B * H * S**2 * bf16
    d.claim("mem_activation_order", kind="expr", section=MEMORY,
            quote="масштабируется как $\\mathcal{O}(B\\times S\\times N_L\\times d)$",
            statement="Recompute-friendly activation memory is O(B S N_L d).",
            stated="B*S*N_L*d", derive=lambda: theta(activations))
    d.claim("mem_activation_scores_s2", kind="qualitative", section=MEMORY,
            quote="полная реализация внимания без пересчета дополнительно материализует тензоры "
                  "оценок внимания, которые масштабируются с $S^2$",
            statement="Materialised attention scores add a term that scales with S^2.",
            stated="масштабируются с S^2", within=(2, 2),
            meaning="polynomial degree in S of the activation memory with B x H x S^2 scores "
                    "per layer",
            derive=lambda: sp.degree(with_scores, S))
    d.claim("act_linear_in_batch", kind="qualitative", section=EXPLOSION,
            quote="активации растут линейно с размером батча",
            statement="Activations grow linearly with the batch size.",
            stated="линейно", within=(1, 1),
            meaning="polynomial degree in B of the activation memory",
            derive=lambda: sp.degree(with_scores, B))
    d.claim("act_at_least_linear_in_seq", kind="qualitative", section=EXPLOSION,
            quote="как минимум линейно с длиной последовательности",
            statement="Activations grow at least linearly with the sequence length.",
            stated="как минимум линейно", within=(1, 100),
            meaning="polynomial degree in S of the recompute-friendly activation memory "
                    "(at least 1)",
            derive=lambda: sp.degree(activations, S))

    # ---------------------------------------------------------------- GPT-2 XL example
    p_gpt2, layers, hidden, seq = sp.Rational(15, 10) * 10**9, 48, 1600, 1024
    card = parse_quantity("80 GiB", CAPACITY)
    weights_b = p_gpt2 * bf16
    grads_b = p_gpt2 * bf16
    optim_b = p_gpt2 * optimizer
    state_b = weights_b + grads_b + optim_b
    headroom = card - state_b
    at = {NL: layers, S: seq, dm: hidden}

    def act_bytes(batch: int | sp.Expr) -> sp.Expr:
        return activations.subs(at).subs(B, batch)

    d.step("evaluate", "model state per parameter: BF16 weights and gradients, FP32 master "
           "copy and two moments", None, bf16 + bf16 + optimizer, "bytes per parameter")
    d.step("evaluate", "saved activations per token, all layers", None,
           sp.cancel(activations / (B * S)), "bytes per token (12 d BF16 elements per layer)")
    batch = sizes("B")[0]
    largest = sp.solve(sp.Eq(state_b + act_bytes(batch), card), batch)[0]
    d.step("solve", "largest batch whose training memory fits the card", sp.Eq(
        state_b + act_bytes(batch), card), largest, "weights + gradients + optimizer + "
        "activations = 80 GiB")

    def fits(total: sp.Expr) -> str:
        return "fits" if total <= card else "overflows"

    d.claim("gpt2_weights_gb", section=GPT2, unit="GB",
            quote="Веса (BF16): $1,5\\times 10^9$ $\\times$ 2 байта = 3 ГБ",
            statement="BF16 weights of 1.5e9 parameters take 3 GB.", stated="3",
            derive=lambda: weights_b / GB)
    d.claim("gpt2_grads_gb", section=GPT2, unit="GB",
            quote="Градиенты (BF16): $1,5\\times 10^9$ $\\times$ 2 байта = 3 ГБ",
            statement="BF16 gradients take 3 GB.", stated="3", derive=lambda: grads_b / GB)
    d.claim("gpt2_optimizer_gb", section=GPT2, unit="GB",
            quote="Оптимизатор (мастер FP32 + моменты + дисперсия): $1,5\\times 10^9$ $\\times$ "
                  "12 байт = 18 ГБ",
            statement="The optimizer state (FP32 master + two moments, 12 B) takes 18 GB.",
            stated="18", derive=lambda: optim_b / GB)
    d.claim("gpt2_state_gb", section=GPT2, unit="GB",
            quote="Итого состояние модели: 24 ГБ",
            statement="The model state totals 24 GB.", stated="24", derive=lambda: state_b / GB)
    d.claim("gpt2_state_fits", kind="label", section=GPT2,
            quote="Итого состояние модели: 24 ГБ — помещается на ускорителе класса 80 ГБ "
                  "A100/H100",
            statement="The 24 GB model state fits on an 80 GiB card.",
            stated="fits", derive=lambda: fits(state_b))
    d.claim("gpt2_card_decimal_gb", section=GPT2, unit="GB",
            quote="(85,9 ГБ в десятичных единицах)",
            statement="The 80 GB class card is 80 GiB = 85.9 decimal GB (input: 80 GiB, the "
                      "text's reading).",
            stated="85.9", derive=lambda: card / GB)
    d.claim("gpt2_headroom_gb", section=GPT2, unit="GB",
            quote="но оставляет лишь 61,9 ГБ под активации",
            statement="After the model state, 61.9 GB are left for activations.",
            stated="61.9", derive=lambda: headroom / GB)
    d.claim("gpt2_activations_b8_gb", section=GPT2, unit="GB",
            quote="$$48\\times 12\\times 8\\times 1024\\times 1600\\times 2\\text{ байт }\\approx "
                  "15,1\\text{ ГБ}$$",
            statement="Activations at batch 8 and sequence 1024 take about 15.1 GB.",
            stated="15.1", derive=lambda: act_bytes(8) / GB)
    d.claim("gpt2_total_b8_gb", section=GPT2, unit="GB",
            quote="Системный вывод: около 39,1 ГБ при этом соглашении учета активаций",
            statement="Model state plus activations at batch 8 is about 39.1 GB.",
            stated="39.1", derive=lambda: (state_b + act_bytes(8)) / GB)
    d.claim("gpt2_b8_fits", kind="label", section=GPT2,
            quote="что помещается на одном ускорителе 85,9 ГБ",
            statement="Batch 8 fits on the card.", stated="fits",
            derive=lambda: fits(state_b + act_bytes(8)))
    d.claim("gpt2_activations_b64_gb", section=GPT2, unit="GB",
            quote="если увеличить батч до 64, активации вырастут примерно до 120,8 ГБ",
            statement="At batch 64 activations take about 120.8 GB.",
            stated="120.8", derive=lambda: act_bytes(64) / GB)
    d.claim("gpt2_b64_overflows", kind="label", section=GPT2,
            quote="что превышает оставшуюся емкость",
            statement="At batch 64 the activations exceed the remaining capacity.",
            stated="overflows", derive=lambda: fits(state_b + act_bytes(64)))
    d.claim("gpt2_batch_threshold", kind="qualitative", section=GPT2,
            quote="Это порог, за которым становится необходимой контрольная точка градиента или "
                  "другой метод экономии памяти",
            statement="Between batch 8 (fits) and 64 (does not) lies the threshold past which "
                      "checkpointing is needed; the largest batch that fits is derived.",
            stated="порог", within=(8, 63),
            meaning="largest whole batch whose model state plus activations fit in 80 GiB",
            derive=lambda: sp.floor(largest))

    # ---------------------------------------------------------------- checkpointing
    Ls, k = sizes("L k")
    per_segment = Ls / k + k  # checkpoints kept, plus one segment's activations recomputed
    best = next(r for r in sp.solve(sp.diff(per_segment, k), k) if r.is_positive)
    d.step("solve", "segment count minimising stored activations", sp.Eq(
        sp.diff(per_segment, k), 0), best, "L/k checkpoints + k layers of one segment")
    d.claim("ckpt_sqrt_layers", kind="expr", section="сноска 4 (Контрольная точка градиента)",
            quote="до порядка квадратного корня из числа слоев",
            statement="Checkpointing brings activation memory to the order of sqrt(L) layers.",
            stated="sqrt(L)", derive=lambda: theta(per_segment.subs(k, best)))
    d.claim("ckpt_extra_compute", section="сноска 4 (Контрольная точка градиента)",
            quote="ценой около 33 процентов дополнительных вычислений",
            statement="Recomputing the forward pass costs about 33% more compute (one forward "
                      "on top of forward + backward).",
            stated="33%", derive=lambda: sp.cancel(fwd.flops / (fwd.flops + backward_flops)))

    # ---------------------------------------------------------------- fusion
    a100 = a100_vendor()
    Nb, kk = sizes("N k")
    relu = elementwise("ReLU", Nb / dtype_bytes("fp16"), "fp16")
    rl_relu = roofline(relu, a100, dtype="fp32")  # vector units, FP32 math (the catalogue's)

    def chain(count: int) -> list:
        return [elementwise(f"op{i}", Nb / dtype_bytes("fp16"), "fp16") for i in range(count)]

    def in_k(traffic: sp.Expr) -> sp.Expr:
        return sp.expand(sp.interpolate([(c, traffic(c)) for c in range(1, 5)], kk))

    d.step("simplify", "intensity of k unfused FP16 elementwise ops", None,
           in_k(lambda c: sp.cancel(sequence(*chain(c)).flops / sequence(*chain(c)).bytes())),
           "FLOPs / bytes, each op through HBM")
    d.step("simplify", "intensity of the same k ops fused", None,
           in_k(lambda c: sp.cancel(fuse(*chain(c)).flops / fuse(*chain(c)).bytes())),
           "FLOPs / bytes, one read and one write")
    d.claim("fusion_elementwise_intensity", kind="qualitative", section=FUSION,
            quote="Поэтому арифметическая интенсивность несливаемых поэлементных операций "
                  "близка к нулю",
            statement="Unfused elementwise ops (1 FLOP per element, read and write) have an "
                      "intensity close to zero.",
            stated="близка к нулю", within=(0, 1),
            meaning="FLOPs per byte of an unfused FP16 elementwise op (1 FLOP per element, one "
                    "2-byte read and one 2-byte write); 'close to zero' read as under 1 "
                    "FLOP/byte, against critical intensities of order 10 to 10^2",
            derive=lambda: rl_relu.intensity)
    d.claim("fusion_elementwise_bound", kind="label", section=FUSION,
            quote="они глубоко ограничены памятью",
            statement="Elementwise ops are memory-bound (A100: FP32 vector peak 19.5 TFLOP/s, "
                      "HBM 2039 GB/s; a 1 GB tensor).",
            stated="hbm", derive=lambda: rl_relu.at({"N": GB}).bound())
    d.claim("fusion_unfused_traffic", kind="expr", section=FUSION,
            quote="слияние сокращает трафик памяти с $2kN$ байт (каждая операция читает и "
                  "записывает)",
            statement="k unfused elementwise ops on an N-byte tensor move 2kN bytes.",
            stated="2*k*N", derive=lambda: in_k(lambda c: sequence(*chain(c)).bytes()))
    d.claim("fusion_fused_traffic", kind="expr", section=FUSION,
            quote="до $2N$ байт (одно чтение, одна запись)",
            statement="Fused into one kernel they move 2N bytes.",
            stated="2*N", derive=lambda: in_k(lambda c: fuse(*chain(c)).bytes()))
    d.claim("fusion_reduction_k", kind="expr", section=FUSION,
            quote="сокращение в $k$ раз",
            statement="Fusion cuts traffic k-fold.",
            stated="k", derive=lambda: sp.cancel(
                in_k(lambda c: sequence(*chain(c)).bytes()) / in_k(lambda c: fuse(*chain(c))
                                                                   .bytes())))
    Sq, hd, Ms = sizes("S d M")
    std, tiled = standard_attention(Sq, hd), tiled_attention(Sq, hd, Ms)
    flash_quote = ("снижает трафик HBM и вспомогательную память внимания с $\\mathcal{O}(S^2)$ "
                   "до $\\mathcal{O}(S)$")
    d.claim("flash_memory_before", kind="expr", section=FUSION, quote=flash_quote,
            statement="Standard attention holds O(S^2) auxiliary memory (scores, probabilities).",
            stated="S**2", derive=lambda: theta(std.extra_memory))
    d.claim("flash_memory_after", kind="expr", section=FUSION, quote=flash_quote,
            statement="FlashAttention's auxiliary memory is O(S) (softmax statistics).",
            stated="S", derive=lambda: theta(tiled.extra_memory))
    d.claim("flash_traffic_before", kind="expr", section=FUSION, quote=flash_quote,
            statement="Standard attention's HBM traffic is O(S^2) for long sequences.",
            stated="S**2", derive=lambda: theta(std.total, "S->oo"))
    d.claim("flash_traffic_after", kind="expr", section=FUSION, quote=flash_quote,
            statement="FlashAttention's HBM traffic is O(S).",
            stated="S", derive=lambda: tiled.theta,
            erratum=Erratum(why="only the auxiliary memory drops to O(S); the traffic stays "
                                "quadratic in S, Theta(S d + S^2 d^2 / M), smaller by the factor "
                                "Theta(M / d^2) the appendix itself derives later",
                            right="Theta(S d + S^2 d^2 / M), a Theta(M/d^2) reduction"))
    d.claim("flash_speedup", kind="measurement", section=FUSION,
            quote="В исходной работе сообщается об ускорении реального времени до 3 раз на "
                  "оцениваемых нагрузках (Dao et al., 2022)",
            statement="FlashAttention gives up to 3x wall-clock speed-up on the evaluated "
                      "workloads.",
            stated="3", evidence="Dao et al. (2022): up to 3x on GPT-2 training against the "
                                 "HuggingFace baseline (measured wall-clock times)")
    d.claim("backprop_years", kind="measurement",
            section="сноска 3 (Обратное распространение)",
            quote="Вербос (Werbos, 1974) и Линнаинмаа (Linnainmaa, 1970) — для дифференцирования "
                  "в обратном режиме, а Румельхарт и соавторы (Rumelhart et al., 1986)",
            statement="Reverse-mode differentiation: Linnainmaa 1970, Werbos 1974; backprop for "
                      "neural networks: Rumelhart et al. 1986.",
            stated="1970; 1974; 1986", evidence="bibliography (Linnainmaa's 1970 master's thesis, "
                                                "Werbos's 1974 PhD thesis, Rumelhart, Hinton and "
                                                "Williams, Nature 1986)")
    return d.build()
