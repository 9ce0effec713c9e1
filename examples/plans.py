"""A worked example of plans: LLaMA-2-7B trained on a TPU v5p slice, served on an H100 node.

Run it from the repository root (``python3 examples/plans.py``); it prints what
``examples/plans.out`` holds (a test keeps the two equal). Each step is also one command:

    symroof plan llama-2-7b --train --mesh "X=4,Y=4,Z=4" --strategy "fsdp=X+Y,tp=Z" \\
        --chip tpu-v5p --batch 128 --context 4096 --recompute full --mfu 4e5
    symroof plan llama-2-7b --train --search 64 --chip tpu-v5p --batch 128 --context 4096 \\
        --recompute full
    symroof plan llama-2-7b --serve --mesh "X=8" --strategy "tp=X" --chip h100-sxm \\
        --batch 64 --context 2048 --latency-target 4ms
    symroof plan llama-2-7b --train --laws --context 4096
"""

from __future__ import annotations

from symroof.commands.plan import PlanRequest
from symroof.render.plan_views import lines

TRAIN = PlanRequest(model="llama-2-7b", mode="train", chip="tpu-v5p", mesh="X=4,Y=4,Z=4",
                    strategy="fsdp=X+Y,tp=Z", batch=128, context=4096, recompute="full",
                    mfu="4e5")
SEARCH = PlanRequest(model="llama-2-7b", mode="train", chip="tpu-v5p", search=64, batch=128,
                     context=4096, recompute="full")
LAWS = PlanRequest(model="llama-2-7b", mode="train", chip="tpu-v5p", context=4096, laws=True)
SERVE = PlanRequest(model="llama-2-7b", mode="serve", chip="h100-sxm", mesh="X=8",
                    strategy="tp=X", batch=64, context=2048, latency_target="4ms")


def main() -> None:
    print("\n".join(lines(TRAIN.run())))
    print()
    searched = SEARCH.run().search
    assert searched is not None
    print("\n".join(lines_of_search(searched)).rstrip())
    print()
    print("\n".join(lines(SERVE.run())))
    print()
    print("\n".join(lines(LAWS.run())))


def lines_of_search(found: object) -> list[str]:
    """The search's table and its explanation, without the chosen plan printed again."""
    from symroof.plans.result import Result
    return lines(Result("train", search=found))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
