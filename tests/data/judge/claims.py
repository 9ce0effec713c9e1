"""The judge's rows (issue 35): one claim per kind of reading the judge must get right."""

from __future__ import annotations

import sympy as sp

from symroof import chip, einsum, mesh
from symroof.claims import Chapter, quantity, real
from symroof.models import (
    book_decode_time,
    decode_time_of,
    inference_memory,
    kv_bytes_per_sequence,
    model,
    params,
    training_memory,
)
from symroof.parallel import all_gather, all_reduce, reduce_scatter, sharded_matmul
from symroof.plans.cost import cost_of, parse_price
from symroof.plans.device_step import device_step
from symroof.plans.queueing import queue
from symroof.plans.serving import serve
from symroof.plans.serving_offload import offload_serving
from symroof.plans.speculative_plan import speculative_step


def claims(ch: Chapter) -> None:
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
    count = params(model("llama-2-7b")).total
    prose = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
    (m1,) = real("m1")
    gather = all_gather("bf16[4096_X, 8192]", "X", mesh("X=8", "h100-sxm"))
    ring = ch.collective("allgather", 10**6, "X", mesh("X=8", chip("tpu-v5e")))
    sized = ch.collective("allgather", "M", "X", mesh("X=8", chip("tpu-v5e")))
    wrapped = ch.collective("allgather", 10**6, "X", mesh("X=16", chip("tpu-v5e")))
    step = decode_time_of("7e9", "1e5", chip("h100-sxm"), 8, 1000)
    product = sharded_matmul("bf16[4096, 8192_X]", "bf16[8192_X, 8192]",
                             mesh("X=8", chip("tpu-v5e")))
    # a figure the text prints, defined with its unit, and a step computed from it and an
    # engine result: each has a dimension of its own
    printed_peak = ch.define("the peak the text uses", "C", "1.9e14 FLOP/s")
    work = rl.at({"B": 4096, "D": 8192, "F": 8192}).op.flops
    at_printed_peak = ch.step("evaluate", "the matmul's time at the printed peak",
                              (work, printed_peak), work / printed_peak)
    far = all_gather("bf16[8192_X, 64]", "X", mesh("X=2@dcn,Y=16", chip("tpu-v5e")))
    decode = device_step(model("llama-2-7b"), "decode", mesh("X=8", "h100-sxm"),
                         {"tp": ("X",)}, batch=64, context=2048)
    alone = device_step(model("llama-2-7b"), "decode", None, {}, batch=8, context=4096,
                        chip=chip("h100-sxm"))
    # a serving plan and what is made from it: a queue of its requests, its KV cache in host
    # memory, its cost per token, a speculative decode on the same mesh
    served = serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), batch=64, context=2048)
    waiting = queue(served.requests, "5")
    offloaded = offload_serving(served, ("kv",), chip("h100-sxm"), layers=32)
    priced = cost_of(parse_price("2 USD/h"), chips=8, seconds=served.decode.latency,
                     tokens=64, what="decode step")
    drafted = speculative_step(model("llama-2-70b"), model("llama-2-7b"),
                               mesh("X=8", "h100-sxm"), {"tp": ("X",)}, batch=16,
                               context=2048, gamma=4, acceptance="0.8")
    # a hand calculation's collectives: an AllReduce as its bytes over the link bandwidth
    # (V/W, the ring's 2(n-1)/n dropped), a ReduceScatter as its leading term V/W
    reduced = all_reduce("bf16[4096, 8192]", "X", mesh("X=8", "h100-sxm"))
    scattered = reduce_scatter("bf16[4096, 8192]", "X", mesh("X=16", chip("tpu-v5e")))
    # a wrong figure carried forward: a KV cache stated twice too large and the memory
    # total made from it (the helper's total of its parts); a matmul's FLOPs stated as
    # multiply-adds and its time, a step of the chapter computed from them
    served8 = inference_memory(model("llama-2-7b"), batch=8, context=4096)
    at_peak = ch.step("evaluate", "the matmul's time at the peak", (work, rl.peak),
                      work / rl.peak)
    ch.add(
        # one reading of a printed number
        ridge_full_width=rl.ridge,
        ridge_leading_dot=rl.ridge,
        peak_truncated=rl.peak,
        params_count_suffix=quantity(count, "count"),
        ridge_in_a_relation=sp.Symbol("B", positive=True) > rl.ridge,
        ridge_approx_word=rl.ridge,
        # quantities
        ridge_in_seconds=rl.ridge,
        # a relation's bound printed with a unit: read in it, checked against the dimension
        # of the value it is compared with
        relation_bound_in_ms=sp.Symbol("B", positive=True) > rl.ridge,
        relation_bound_in_us=sp.Symbol("T", positive=True) > ring.time,
        relation_bound_declared=sp.Symbol("T", positive=True) > ring.time,
        # a bound printed as a formula followed by a unit: read in it, its dimension checked
        relation_formula_bound_in_us=sp.Symbol("T", positive=True) > sized.time,
        relation_formula_bound_in_gb=sp.Symbol("T", positive=True) > sized.time,
        bandwidth_as_capacity=rl.peak / rl.ridge,
        # quantities of a recorded collective and of a model helper, no quantity() said
        collective_time=ring.time,
        collective_time_in_bytes=ring.time,
        collective_bytes=ring.bytes_per_device,
        decode_step_in_flops=step,
        params_in_bytes=count,
        gather_bytes_in_seconds=gather.bytes_per_device,
        defined_peak_as_bandwidth=printed_peak,
        step_time_in_bytes=at_printed_peak,
        # a number printed bare: read in the unit its row declares, a count as it is
        collective_time_bare=ring.time,
        params_bare=count,
        # truth fixes
        ridge_book_table=rl.ridge,
        ridge_prose=prose.ridge,
        summary_of_the_relation=prose.ridge,
        shifted_logit=m1,
        restated_caches=len(["K", "V"]),
        # diagnosis of a plain value
        ridge_doubled=rl.ridge,
        peak_prefix_slip=rl.peak,
        ridge_inverted=rl.ridge,
        allgather_latency_off=ch.with_choices(gather, latency="off"),
        # a plain collective time, not marked: the named choices are tried on it all the same
        plain_collective_leading=wrapped.time,
        plain_collective_no_latency=wrapped.time,
        plain_collective_one_way=wrapped.time,
        # plain values of what the chapter did not record: a collective called directly, a
        # collective's chip table in another edition, a sharded matmul, a plan, a count
        plain_gather_no_latency=gather.time,
        plain_collective_edition=wrapped.time,
        plain_matmul_leading=product.roofline().t_lower,
        plain_step_no_latency=decode.t_lower,
        plain_params_nominal=count,
        # over DCN, whose hop latency has no figure: the plain value is a formula
        plain_dcn_no_latency=far.time,
        # plain values of model helpers that take no choices of their own: a decode time
        # (the weights alone, a chip table's other edition), serving and training memory
        # (nominal sizes, Megatron's 18 bytes per parameter), and a plan's step under the
        # chip table's other edition (the book's 3.4 TB/s for an H100)
        plain_decode_weights_only=step,
        plain_decode_edition=step,
        plain_serving_memory_nominal=inference_memory(model("llama-2-7b"), batch=1,
                                                      context=4096).total,
        plain_training_memory_nominal=training_memory(model("llama-2-7b")).total,
        plain_training_memory_megatron=training_memory(model("llama-2-7b")).total,
        plain_step_edition=decode.t_lower,
        # plain values of the serving plans made from a plan: the step's choices they pass
        # down and the chip table's editions of its chip, and their dimension (a cost is a
        # number of the price's currency)
        plain_queue_wait_no_latency=waiting.wait,
        plain_offload_rate_leading=offloaded.requests["requests_per_s"],
        plain_speculative_edition=drafted.time_per_output_token,
        plain_cost_no_latency=priced.per_million_tokens,
        queue_wait_in_bytes=waiting.wait,
        cost_in_seconds=priced.per_million_tokens,
        bandwidth_gib=rl.peak / rl.ridge,
        time_from_rounded_peak=rl.at({"B": 4096, "D": 8192, "F": 8192}).t_math,
        # a hand calculation that drops a ring's factor: a slip for an AllReduce (V/W is
        # wrong by 2(n-1)/n), the leading term for a ReduceScatter (V/W drops (n-1)/n)
        plain_allreduce_v_over_w=reduced.time,
        plain_reduce_scatter_v_over_w=scattered.time,
        # a wrong figure carried forward into a sum and into a quotient; a claim the wrong
        # figure does not make is not told so
        kv_cache_doubled=served8.parts["kv cache"],
        memory_from_the_doubled_cache=served8.total,
        matmul_flops_halved=work,
        time_from_the_halved_flops=at_peak,
        time_halved_alone=rl.at({"B": 2048, "D": 8192, "F": 8192}).t_math,
        # what a text counts of a serving memory (the weights alone) and the KV cache's
        # dtype (one byte an element): named choices of the serving memory helpers
        plain_serving_memory_weights_only=served8.total,
        plain_serving_memory_fp8_kv=served8.total,
        plain_kv_sequence_fp8=kv_bytes_per_sequence(model("llama-2-7b"), 4096),
        # and of a serving plan: its memory per chip counting the weights alone, a request's
        # latency with the KV cache in fp8 (as the plan's kv_dtype= gives it)
        plain_serve_memory_weights_only=served.memory["total"],
        plain_serve_request_fp8_kv=served.requests["request_latency"],
        # what a text counts of a training memory: the weights, gradients and optimizer
        # state, without the activations
        plain_training_memory_states=training_memory(model("llama-2-7b"), batch=8,
                                                     context=4096).total,
        # and of a decode time: its KV reads in one byte an element
        plain_decode_fp8_kv=step,
        # and of a model's decode step: its KV cache in one byte an element
        plain_device_step_fp8_kv=alone.t_lower,
        # and of a book's decode step and a speculative decode: the same choice, as
        # book_decode_time(..., kv_dtype=) and StepOptions(kv_dtype=) give them
        plain_book_decode_fp8_kv=book_decode_time(model("llama-2-7b"), chip("h100-sxm"), 8,
                                                  4096),
        plain_speculative_fp8_kv=drafted.time_per_output_token,
        # KV bytes a text gives already in fp8 read as that, and a cache already in fp8 not
        # read in fp8 again
        decode_fp8_bytes_given=decode_time_of("7e9", "5e4", chip("h100-sxm"), 8, 1000,
                                              kv_bytes_dtype="fp8"),
        book_decode_fp8_kv_not_halved_again=book_decode_time(
            model("llama-2-7b"), chip("h100-sxm"), 8, 4096, kv_dtype="fp8"),
        # the catalogue's default is the vendor's figure
        a100_bf16_peak=chip("a100-80gb").peak("bf16"),
        ridge_other_edition=rl.ridge,
    )
