"""Transformer models: configs, their exact counts, layer ops, step rooflines, memory and capacity.

The transformer API, exact and symbolic:

>>> from symroof import chip
>>> from symroof.models import (model, params, attention_flops, flops_per_token,
...     training_flops_per_token, kv_bytes_per_token, activation_bytes, training_memory,
...     inference_memory, layer_ops,
...     step_roofline, critical_batch, decode_intensity, max_batch, max_context, min_chips)
>>> cfg = model("llama-2-7b")             # bundled name, Hugging Face id, or config.json path
>>> p = params(cfg)
>>> p.total, p.active, p.embedding
(6738415616, 6738415616, 262144000)
>>> params(model("mixtral-8x7b")).active
12879925248
>>> flops_per_token(cfg, context=1024)                 # forward, 2 per weight + attention
13751558144
>>> training_flops_per_token(cfg, 1024, recompute="full") == 4 * flops_per_token(cfg, 1024)
True
>>> attention_flops(cfg, symbolic=True)                # in the config's letters, T the context
4*H*L*N*T
>>> kv_bytes_per_token(cfg, "bf16")                    # 2 L K H x 2 bytes
524288
>>> activation_bytes(model("gpt2"), "none", context=1024).per_layer    # 34 D + 5 N T
87552
>>> training_memory(cfg).bytes_per_param              # mixed-precision Adam: 2 + 2 + 12
16
>>> inference_memory(cfg, batch=1, context=4096).parts["kv cache"]
2147483648
>>> step = layer_ops(cfg, "decode", batch=1, context=1024)   # blocks of einsum ops
>>> [(b.name, b.count, len(b.ops)) for b in step.blocks]
[('layer', 32, 7), ('head', 1, 3)]
>>> step_roofline(step, chip("a100-80gb")).bound()
'hbm'
>>> critical_batch(cfg, chip("a100-80gb"), context=128).integer
954
>>> decode_intensity(cfg)[1]          # as T grows: N / K, the KV-cache read dominating
1
>>> max_batch(cfg, chip("a100-80gb"), context=4096).integer
30
>>> from symroof.models import shard                  # one of 8 tensor-parallel chips
>>> shard(model("llama-2-70b"), 8).heads
8
>>> min_chips(model("llama-2-70b"), chip("a100-80gb"), context=4096).integer
2

Every count takes ``symbolic=True`` for its form in the letters of ``ModelConfig``
(L, D, F, N, K, H, V, P, E, k, F_e, E_s, F_s, L_d; C, R, Q, H_v for latent attention) and
context T, batch B. Latent attention (DeepSeek's MLA) has counts (parameters, FLOPs and KV
bytes per token, memory) but no layer ops yet.
"""

from ..core.lazy import lazy
from .step_roofline import step_roofline as step_roofline  # the function (symroof.core.lazy)

# each submodule and the public names it defines
__all__, __getattr__, __dir__ = lazy(__name__, {
    "capacity": "Fit max_batch max_context min_chips",
    "config": "MLA MoE ModelConfig",
    "chosen": ("OPTIMIZER_BYTES OPTIMIZER_PRESETS PETAFLOP_DAY TRAFFIC Utilisation "
               "activation_bytes_under book_decode_time book_prefill_time chips_for_batch "
               "decode_time_of "
               "flop_budget flops_under flops_utilisation largest_model model_flops_utilisation "
               "optimizer_bytes params_under prefill_decode_balance "
               "queries_per_second tokens_evicted_per_step training_flops_of "
               "training_min_chips"),
    "counts": ("Flops Params Summary attention_flops flops_per_token forward_flops "
               "kv_bytes_per_sequence kv_bytes_per_token multiplied_params params "
               "training_flops_per_token"),
    "hf": "bundled from_hf load_config model",
    "layers": "ACTIVATIONS ATTENTION Block DEFAULT_KERNEL Kernel StepOps layer_ops",
    "nominal": ("kv_bytes_under nominal_kv_bytes nominal_params positive_number round_figures "
                "with_round_params"),
    "memory": ("Activations CHECKPOINTS Memory OPTIMIZERS activation_bytes checkpointed_bytes "
               "inference_memory plan_states training_memory zero3_weights"),
    "step_roofline": "StepRoofline critical_batch critical_of decode_intensity step_roofline",
    "tensor_parallel": "MEGATRON check_degrees shard",
})
