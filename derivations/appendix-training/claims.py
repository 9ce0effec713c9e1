"""The training sections of the Russian appendix (seed 002): the chain rule, the memory of
training and the GPT-2 XL example, checkpointing, operator fusion."""

from __future__ import annotations

import sympy as sp

from symroof import (
    CAPACITY,
    chip,
    dtype_bytes,
    einsum,
    elementwise,
    fuse,
    matrix_derivative,
    parse_quantity,
    polynomial_through,
    positive_root,
    reverse_cost,
    roofline,
    sequence,
    sizes,
    standard_attention,
    theta,
    tiled_attention,
)
from symroof.claims import Chapter, definition, law, measured, within


def claims(ch: Chapter) -> None:
    x = sp.Symbol("x", real=True)
    u = sp.Symbol("u", real=True)
    f1, f2, f3 = sp.Function("f1"), sp.Function("f2"), sp.Function("f3")
    def local(f: sp.Function, at: sp.Expr) -> sp.Expr:
        return sp.diff(f(u), u).subs(u, at)
    P = sizes("P")[0]
    weights = sp.symbols("w1:6", positive=True)
    def linear_loss(p: int) -> sp.Expr:
        return sum((w * (i + 2) for i, w in enumerate(weights[:p])), sp.Integer(0))
    fwd = einsum("T D, D F -> T F", name="Y = X W")
    grad_w = einsum("T D, T F -> D F", name="dW = X^T dY")
    grad_x = einsum("T F, D F -> T D", name="dX = dY W^T")
    backward_flops = grad_w.flops + grad_x.flops
    h = sp.MatrixSymbol("h", 1, 3)
    xin = sp.MatrixSymbol("x", 1, 4)
    W1, W2 = sp.MatrixSymbol("W_1", 4, 3), sp.MatrixSymbol("W_2", 3, 2)
    dy, dh = sp.MatrixSymbol("dL_dy", 1, 2), sp.MatrixSymbol("dL_dh", 1, 3)
    through_y = sp.Trace(dy.T * (h * W2))
    through_h = sp.Trace(dh.T * (xin * W1))
    bf16, fp32 = dtype_bytes("bf16"), dtype_bytes("fp32")
    adam_moments = 2 * fp32
    optimizer = adam_moments + fp32
    B, S, NL, dm, H = sizes("B S N_L d H")
    act_elements = 12 * B * S * dm  # the text's per-layer convention
    activations = NL * act_elements * bf16
    with_scores = activations + NL * B * H * S**2 * bf16
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
    ch.step("evaluate", "model state per parameter: BF16 weights and gradients, FP32 master "
           "copy and two moments", None, bf16 + bf16 + optimizer, "bytes per parameter")
    ch.step("evaluate", "saved activations per token, all layers", None,
           sp.cancel(activations / (B * S)), "bytes per token (12 d BF16 elements per layer)")
    batch = sizes("B")[0]
    largest = positive_root(sp.Eq(state_b + act_bytes(batch), card), batch)
    ch.step("solve", "largest batch whose training memory fits the card", sp.Eq(
        state_b + act_bytes(batch), card), largest, "weights + gradients + optimizer + "
        "activations = 80 GiB")
    def fits(total: sp.Expr) -> str:
        return "fits" if total <= card else "overflows"
    Ls, k = sizes("L k")
    per_segment = Ls / k + k  # checkpoints kept, plus one segment's activations recomputed
    best = positive_root(sp.diff(per_segment, k), k)
    ch.step("solve", "segment count minimising stored activations", sp.Eq(
        sp.diff(per_segment, k), 0), best, "L/k checkpoints + k layers of one segment")
    a100 = chip("a100-80gb", hbm="NV-A100", fp16="NV-A100")
    Nb, kk = sizes("N k")
    relu = elementwise("ReLU", Nb / dtype_bytes("fp16"), "fp16")
    rl_relu = roofline(relu, a100, dtype="fp32")  # vector units, FP32 math (the catalogue's)
    def chain(count: int) -> list:
        return [elementwise(f"op{i}", Nb / dtype_bytes("fp16"), "fp16") for i in range(count)]
    def in_k(traffic: sp.Expr) -> sp.Expr:
        return polynomial_through([(c, traffic(c)) for c in range(1, 5)], kk)
    ch.step("simplify", "intensity of k unfused FP16 elementwise ops", None,
           in_k(lambda c: sp.cancel(sequence(*chain(c)).flops / sequence(*chain(c)).bytes())),
           "FLOPs / bytes, each op through HBM")
    ch.step("simplify", "intensity of the same k ops fused", None,
           in_k(lambda c: sp.cancel(fuse(*chain(c)).flops / fuse(*chain(c)).bytes())),
           "FLOPs / bytes, one read and one write")
    Sq, hd, Ms = sizes("S d M")
    std, tiled = standard_attention(Sq, hd), tiled_attention(Sq, hd, Ms)
    ch.add(
        chain_rule_three_layers=law(sp.expand(sp.diff(f3(f2(f1(x))), x) - local(f3, f2(f1(x)))
                                     * local(f2, f1(x)) * local(f1, x)).doit() == 0),
        passes_reverse=reverse_cost(linear_loss(5)).passes("reverse"),
        passes_forward=polynomial_through(
            [(p, reverse_cost(linear_loss(p)).passes("forward")) for p in range(2, 6)], P),
        train_step_multiple=within(sp.cancel((fwd.flops + backward_flops) / fwd.flops), 2, 3),
        backprop_grad_w2=str(matrix_derivative(through_y, W2)),
        backprop_grad_h=str(matrix_derivative(through_y, h)),
        backprop_grad_w1=str(matrix_derivative(through_h, W1)),
        backprop_backward_twice=sp.cancel(backward_flops / fwd.flops),
        mem_weights_half=definition(bf16),
        mem_weights_fp32=definition(fp32),
        mem_adam_moments=adam_moments,
        mem_adam_with_master=optimizer,
        mem_activation_order=theta(activations),
        mem_activation_scores_s2=law(sp.degree(with_scores, S) == 2),
        act_linear_in_batch=law(sp.degree(with_scores, B) == 1),
        act_at_least_linear_in_seq=within(sp.degree(activations, S), 1, 100),
        gpt2_weights_gb=weights_b,
        gpt2_grads_gb=grads_b,
        gpt2_optimizer_gb=optim_b,
        gpt2_state_gb=state_b,
        gpt2_state_fits=fits(state_b),
        gpt2_card_decimal_gb=card,
        gpt2_headroom_gb=headroom,
        gpt2_activations_b8_gb=act_bytes(8),
        gpt2_total_b8_gb=state_b + act_bytes(8),
        gpt2_b8_fits=fits(state_b + act_bytes(8)),
        gpt2_activations_b64_gb=act_bytes(64),
        gpt2_b64_overflows=fits(state_b + act_bytes(64)),
        gpt2_batch_threshold=within(sp.floor(largest), 8, 63),
        ckpt_sqrt_layers=theta(per_segment.subs(k, best)),
        ckpt_extra_compute=sp.cancel(fwd.flops / (fwd.flops + backward_flops)),
        fusion_elementwise_intensity=within(rl_relu.intensity, 0, 1),
        fusion_elementwise_bound=rl_relu.at({"N": 10**9}).bound(),
        fusion_unfused_traffic=in_k(lambda c: sequence(*chain(c)).bytes()),
        fusion_fused_traffic=in_k(lambda c: fuse(*chain(c)).bytes()),
        fusion_reduction_k=sp.cancel(
                in_k(lambda c: sequence(*chain(c)).bytes()) / in_k(lambda c: fuse(*chain(c))
                                                                   .bytes())),
        flash_memory_before=theta(std.extra_memory),
        flash_memory_after=theta(tiled.extra_memory),
        flash_traffic_before=theta(std.total, "S->oo"),
        flash_traffic_after=tiled.theta,
        flash_speedup=measured(),
        backprop_years=measured(),
    )
