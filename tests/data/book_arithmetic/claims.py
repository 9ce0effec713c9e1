"""A test chapter in a book's style: the arithmetic texts do that symroof says natively
(issue 36). Every value comes from the engine; the stated values are in en.toml."""

from symroof import backward, chip, mesh, sizes
from symroof.claims import Chapter
from symroof.core.choices import BOOK, Choices
from symroof.engine.asymptotics import parse_regime
from symroof.engine.ops import einsum, op
from symroof.engine.rooflines import roofline
from symroof.engine.thresholds import threshold
from symroof.models import (
    PETAFLOP_DAY,
    book_decode_time,
    book_prefill_time,
    chips_for_batch,
    critical_batch,
    decode_time_of,
    flop_budget,
    flops_utilisation,
    inference_memory,
    largest_model,
    layer_ops,
    max_batch,
    min_chips,
    model,
    model_flops_utilisation,
    prefill_decode_balance,
    queries_per_second,
    tokens_evicted_per_step,
    training_flops_of,
    training_memory,
    with_round_params,
    zero3_weights,
)
from symroof.parallel import (
    per_chip,
    pipeline_sends,
    send,
    sharded,
    sharded_matmul,
    together,
    weight_stationary,
)
from symroof.parallel.collectives import collective
from symroof.parallel.mlp import mlp_step
from symroof.plans.mfu import mfu_of
from symroof.plans.serving import step_on


def claims(ch: Chapter) -> None:
    v5e = chip("tpu-v5e")
    # item 7: a pure-FLOP op (derive --flops alone), comm bytes counted both ways
    pure = ch.roofline(op("2e12 FLOPs", 2 * 10**12, 0), v5e)
    both = ch.roofline(op("a both-ways exchange", 0, 0, comms={"ici": 9 * 10**9}), v5e,
                       bandwidths={"ici": v5e.link("ici").bidirectional})
    # item 7 and item 8: an AllGather solved for its axis size, the side proven
    line = mesh("X=N", v5e)
    ag = ch.collective("allgather", 10**6, "X", line)
    meet = ch.between(ag.roofline(), "bandwidth", "latency", "N")
    a2a = ch.collective("alltoall", 8 * 10**6, "X", mesh("X=8", v5e), total=True)
    # item 3: hardware as a text states it
    lettered = chip("tpu-v5e", **{"mxu.bf16": "C", "hbm": "W_hbm"})
    h100 = chip("h100-sxm", bf16="B1")  # the book's 9.89e14 FLOP/s (the default: NVIDIA's 989.4)
    per_call = ch.collective("allgather", 10**6, "X", mesh("X=8", v5e))
    no_hops = ch.collective("allgather", 10**6, "X",
                            mesh("X=8", chip("tpu-v5e", **{"ici.latency": "0"})))
    ch.add(symbolic_ridge=lettered.ridge(),
           ib_ridge_both_ways=h100.ridge(over="ib", both_ways=True),
           h100_vector_peak=h100.micro_vector_peak(),
           per_message_time=ch.with_choices(per_call, latency="per_message"),
           zero_latency_time=no_hops.time,
           nvlink_per_link=h100.link("nvlink").per_link,
           nvlink_per_node=h100.link_per_node("nvlink"),
           nvlink_per_switch=h100.link_per_switch("nvlink"))
    # item 2: serving arithmetic in a book's form, a model given by two numbers
    p, kv = ch.given("params", "70e9"), ch.given("kv_bytes_per_token", "320e3")
    step = decode_time_of(p, kv, h100, 32, 2048, chips=8)
    ch.add(decode_step=step,
           decode_floor=decode_time_of(p, kv, h100, 32, 2048, chips=8, traffic="weights"),
           qps_per_chip=queries_per_second(32, step, 512, chips=8),
           prefill_per_decode=prefill_decode_balance(ch.given("prefill_time", "0.5"), step,
                                                     512, 32, prefill_chips=8,
                                                     decode_chips=8),
           evicted_per_step=tokens_evicted_per_step(32, ch.given("generate", 512),
                                                    prompt=ch.given("prompt", 2048)))
    # item 5: training budgets and their inverses
    ch.add(pf_days=training_flops_of(p, ch.given("tokens", "1.4e12")) / PETAFLOP_DAY,
           budget=flop_budget(ch.given("chip_hours", 1000), h100, "0.5"),
           chips_allowed=chips_for_batch(ch.given("global_batch", "4e6"),
                                         h100.ridge(over="ib")),
           largest=largest_model(h100.capacity("hbm"), 16),
           mfu=model_flops_utilisation(ch.given("tokens_per_second", 3000),
                                       training_flops_of(ch.given("small", "7e9"), 1),
                                       h100.peak()))
    # item 5: optimizer presets, bytes per part by dtype name, checkpoint policies, HFU
    llama = model("llama-2-7b")
    ch.add(adam_bf16_total=training_memory(llama, optimizer="adam-bf16").total,
           adam_8bit_total=training_memory(llama, optimizer="adam-8bit").total,
           sgd_momentum_state=training_memory(llama, optimizer="sgd-momentum")
           .parts["optimizer state"],
           dtype_parts=training_memory(llama, weights="bf16", gradients="fp32",
                                       state="fp32+fp32+fp32").bytes_per_param,
           matmul_checkpoints=training_memory(llama, batch=1, context=4096,
                                              recompute="matmuls").parts["activations"],
           k_tensor_checkpoints=training_memory(llama, batch=1, context=4096,
                                                recompute="k_tensors_of_D", tensors=4)
           .parts["activations"],
           plan_hfu=mfu_of(llama, 4096, ch.given("plan_tokens_per_second", 20000), 8,
                           h100.peak(), "full").hfu,
           zero3_peak_weights=zero3_weights(llama, 8, live_layers=2).total,
           zero_r_checkpoints=training_memory(llama, batch=32, context=1024,
                                              recompute="full", partitioned=16)
           .parts["activations"],
           hfu=flops_utilisation(ch.given("tokens_per_second", 3000), ch.given("small", "7e9"),
                                 h100.peak(), recompute="full").hfu)
    # item 4: layouts and transfers
    grid = mesh("X=4,Y=4", v5e)
    wide = mesh("X=8,Y=4", v5e)
    mm = sharded_matmul("bf16[4096, 8192_X]", "bf16[8192_X, 8192]", mesh("X=8", v5e))
    ch.add(route_time=send(ch.given("route_bytes", "9e8"), "XY", grid, src=(0, 0),
                           dst=(3, 1)).time,
           total_bytes=sharded("bf16[3072_X, 8192]", wide).total_bytes,
           total_flops=mm.total_flops,
           batch_per_chip=per_chip(ch.given("global_batch", "4e6"),
                                   mesh("X=16,Y=16", v5e)),
           backward_flops=sum(o.flops for o in backward("B D, D F -> B F"))
           .subs(dict(zip(sizes("B D F"), (4096, 8192, 8192), strict=True))),
           tp_limit=ch.between(mlp_step(mesh("X=Y", h100), tp="X", choices=BOOK)
                               .phase("forward").roofline(), "math", "nvlink", "Y")
           .exact.subs(sizes("F")[0], ch.given("ffn", 28672)),
           book_matmul_latency=ch.with_choices(mm, of="latency_time", collectives="leading",
                                               latency="off"))
    # item 1: the text's own round figure, taken by every count under sizes=nominal
    seventy = with_round_params(model("llama-3-70b"), ch.given("round_params", "70e9"))

    def weights_read(choices: Choices) -> object:
        return book_decode_time(seventy, h100, 1, 0, choices)

    ch.add(round_decode=ch.with_choices(weights_read, sizes="nominal"),
           round_prefill=ch.with_choices(
               lambda c: book_prefill_time(seventy, h100, 1, 2048, c), sizes="nominal"))
    # item 1: the round figures reach memory, the largest batch and the fewest chips; a
    # bundled config's round size (70B for the card's 70.6B)
    stated = with_round_params(model("llama-3-70b"), ch.given("round_params", "70e9"),
                               kv_bytes_per_token=ch.given("kv_bytes_per_token", "320e3"))
    ch.add(round_kv_cache=ch.with_choices(
               lambda c: inference_memory(stated, batch=32, context=2048, choices=c)
               .parts["kv cache"], sizes="nominal"),
           round_max_batch=ch.with_choices(
               lambda c: max_batch(stated, h100, context=2048, chips=8, choices=c).integer,
               sizes="nominal"),
           round_min_chips=ch.with_choices(
               lambda c: min_chips(model("llama-3-70b"), h100, context=0, choices=c).exact,
               sizes="nominal"))
    ch.add(pure_flops_time=pure.t_math, both_ways_time=both.t_comms["ici"],
           axis_size=meet.exact,
           axis_side=ch.holds(meet.direction == "<", "latency-bound above the size"),
           alltoall_total=a2a.bandwidth_time)
    # item 4: weight-stationary inference, 1-D against 2-D, on a TPU v5p (the text's V/W)
    v5p = chip("tpu-v5p")
    cube = mesh("X=4,Y=8,Z=8", v5p)
    mlp = {"batch": ch.given("tokens_in_flight", 128), "d_model": ch.given("d_model", 8192),
           "d_ff": ch.given("d_ff", 32768)}
    one_d = weight_stationary(cube, f="XYZ", **mlp)
    two_d = weight_stationary(cube, d="X", f="YZ", **mlp)
    sized = mesh("X=X:wraps,Y=Y:wraps,Z=Z:wraps", v5p)
    ch.add(ws_1d_comms=ch.with_choices(one_d, of="comm_time", collectives="leading",
                                       latency="off"),
           ws_2d_comms=ch.with_choices(two_d, of="comm_time", collectives="leading",
                                       latency="off"),
           ws_crossover=weight_stationary(sized, d="X", f="YZ", **mlp, choices=BOOK)
           .chips_to_beat(weight_stationary(sized, f="XYZ", **mlp, choices=BOOK)))
    # item 4: the GPU book's rules across nodes: a second node's effect on a data-parallel
    # AllReduce (the levels work at once, the slowest sets the time), the per-GPU batch data
    # parallelism needs across many nodes and across two, a pipeline's sends over the leaf
    two_nodes = mesh("node=2,gpu=8", h100)
    grads = ch.collective("allreduce", ch.given("gradient_bytes", "1e9"), "node,gpu",
                          two_nodes)

    def per_gpu_batch(on: object, link: str, choices: Choices) -> object:
        step = mlp_step(on, fsdp="nodegpu", choices=choices)
        return ch.between(step.phase("backward").roofline(), "math", link, "B").exact / \
            step.chips

    tp16 = mlp_step(two_nodes, tp="nodegpu", choices=Choices(latency="off"))
    ch.add(tp_two_nodes=ch.between(tp16.phase("forward").roofline(), "math", "ib", "F").exact)
    ch.add(dp_second_node=ch.with_choices(grads, levels="slowest", latency="off"),
           dp_batch_nodes=per_gpu_batch(mesh("node=N,gpu=8", h100), "ib", BOOK),
           dp_batch_two_nodes=per_gpu_batch(two_nodes, "ib", Choices(latency="off")),
           dp_batch_two_nodes_nvlink=per_gpu_batch(two_nodes, "nvlink",
                                                   Choices(latency="off")),
           pipeline_leaf=pipeline_sends(ch.given("stage_bytes", "2*4096*8192"), "node",
                                        mesh("node=16,gpu=8", h100),
                                        ch.given("microbatches", 8)).bandwidth_time)
    # item 4: a mixture of experts at a large batch reads every expert's weights; one token
    # reads its top-k's
    mixtral = model("mixtral-8x7b")

    def expert_bytes(choices: Choices) -> object:
        step = layer_ops(mixtral, "decode", batch=1, context=1, experts=choices.experts)
        return sum(o.bytes() for b in step.blocks for o in b.ops
                   if o.name.startswith("experts"))

    ch.add(moe_every_expert=ch.with_choices(expert_bytes, experts="all"),
           moe_one_token=expert_bytes(Choices()))
    # item 4: two collectives overlapped on one link share it: their bytes add
    ring = mesh("X=16", v5e)
    layer = ch.given("weight_bytes", "2*8192*32768")
    gather = collective("allgather", layer, "X", ring)
    scatter = collective("reducescatter", layer, "X", ring)
    ch.add(overlapped_on_a_link=ch.with_choices(
        lambda c: together(gather, scatter, choices=c).time, concurrent="shared",
        latency="off"))
    # item 3: dtype bytes as a letter, as a text writes "b bytes per parameter"
    lettered_mm = einsum("B D, D F -> B F", "b bytes", compute="bf16")
    ch.add(lettered_bytes_batch=threshold(roofline(lettered_mm, lettered), sizes("B")[0],
                                          regime=parse_regime("B<<D,F")).asymptotic)
    # item 2: the weights-only floorline a text draws under a decode step, as a choice
    # (traffic=weights) the step roofline and its critical batch take
    ch.add(floorline_step=ch.with_choices(
               lambda c: step_on(llama, "decode", v5e, batch=1, context=1, choices=c)[0]
               .terms["hbm"], traffic="weights"),
           floorline_critical_batch=ch.with_choices(
               lambda c: critical_batch(llama, v5e, context=1, choices=c).value,
               traffic="weights"))
    # item 1: a ridge the text rounded (240) and a pod's rounded total, stated once on the
    # chip, taken by every concept on it
    rounded = chip("tpu-v5e", ridge=ch.given("round_ridge", "240"))
    pod = chip("tpu-v5e", **{"pod.mxu.bf16": ch.given("pod_peak", "5e16")})
    ch.add(round_ridge_batch=threshold(roofline(einsum("B D, D F -> B F", "bf16"), rounded),
                                       sizes("B")[0], regime=parse_regime("B<<D,F"))
           .asymptotic,
           pod_day_flops=flop_budget(256 * 24, pod))
