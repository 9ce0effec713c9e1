"""A training plan's checkpoint policies beyond none, selective and full (issue 36, item 5):
the outputs of the weight matmuls kept (``matmuls``) and a text's k tensors of D per layer
(``k_tensors_of_D=K``), on the command line (``--recompute`` and ``--choices
checkpoints=``), their activations and reruns worked out by hand."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.choices import Choices
from symroof.core.errors import InputError
from symroof.models import activation_bytes_under, model, training_memory
from symroof.models.memory import checkpoint_policy
from symroof.parallel import mesh
from symroof.plans.mfu import rerun_flops_per_token
from symroof.plans.options import StepOptions
from symroof.plans.strategy import parse_strategy
from symroof.plans.training import Plan, train

# Llama 2 7B: D 4096, F 11008 (gated), 32 layers of 32 heads of 128, no GQA
D, F, L = 4096, 11008, 32
T = 4096


def _plan(recompute: str) -> Plan:
    # 8 sequences over 8 data-parallel H100s: one sequence of 4096 tokens per device
    return train(model("llama-2-7b"), mesh("X=8", "h100-sxm"), parse_strategy("dp=X"), batch=8,
                 context=T, options=StepOptions(recompute=recompute))


def test_the_matmuls_outputs_kept_by_hand() -> None:
    # Q, K, V (3 D), the output projection (D), gate and up (2 F), down (D), bf16, per
    # token and layer, for the device's 4096 tokens
    plan = _plan("matmuls")
    assert plan.memory["activations"] == 2 * (3 * D + D + 2 * F + D) * L * T
    # one answer: training_memory's and the Choices' count of the same policy
    assert plan.memory["activations"] == training_memory(
        model("llama-2-7b"), batch=1, context=T, recompute="matmuls").parts["activations"]
    assert activation_bytes_under(model("llama-2-7b"), T, Choices(checkpoints="matmuls")) \
        * T == plan.memory["activations"]


@settings(max_examples=6, deadline=None)
@given(k=st.integers(1, 16))
def test_k_tensors_of_d_kept_by_hand(k: int) -> None:
    plan = _plan(f"k_tensors_of_D={k}")
    assert plan.memory["activations"] == k * D * 2 * L * T
    # the forward rerun in full: the FLOPs of full recomputation
    assert plan.extra["flops"] == _plan("full").extra["flops"]


def test_the_matmuls_policy_reruns_what_it_did_not_keep() -> None:
    # against selective (the attention core rerun), it also reruns the norms: 2 FLOPs per
    # element of each of the 2 L + 1 RMSNorms over the device's 4096 tokens of D
    extra = sp.sympify(_plan("matmuls").extra["flops"]) - \
        sp.sympify(_plan("selective").extra["flops"])
    assert extra == (2 * L + 1) * 2 * T * D
    # HFU counts the attention core's rerun as PaLM does (norms left out): selective's
    args = (6 * 10**9, L, 32, 128, T)
    assert rerun_flops_per_token(*args, "matmuls") == rerun_flops_per_token(*args, "selective")
    assert rerun_flops_per_token(*args, "k_tensors_of_D=2") == \
        rerun_flops_per_token(*args, "full")


@pytest.mark.parametrize("policy", ["matmuls", "k_tensors_of_D=4"])
def test_the_command_line_says_the_policy_both_ways(policy: str) -> None:
    base = ["plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "dp=X", "--chip",
            "h100-sxm", "--batch", "8", "--context", str(T)]
    outs = []
    for extra in (["--recompute", policy], ["--choices", f"checkpoints={policy}"]):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main([*base, *extra]) == 0
        outs.append(out.getvalue())
    assert outs[0] == outs[1]
    kept = _plan(policy).memory["activations"]
    assert re.search(rf"^activations +{kept} ", outs[0], re.M)


def test_policy_refusals_name_the_policy() -> None:
    with pytest.raises(InputError, match=r"unknown recomputation policy 'bogus' \(known: "
                                         r"none, selective, full, matmuls, k_tensors_of_D=K\)"):
        checkpoint_policy("bogus")
    with pytest.raises(InputError, match="k_tensors_of_D takes its k"):
        checkpoint_policy("k_tensors_of_D")
    with pytest.raises(InputError, match="k_tensors_of_D takes its k"):
        checkpoint_policy("matmuls=2")
    with pytest.raises(InputError, match="at least 1, got '0'"):
        checkpoint_policy("k_tensors_of_D=0")


@settings(max_examples=4, deadline=None)
@given(tp=st.sampled_from([2, 4, 8]), policy=st.sampled_from(["full", "matmuls",
                                                               "k_tensors_of_D=2"]))
def test_zero_r_partitions_the_checkpoints_over_the_tensor_axes(tp: int, policy: str) -> None:
    # ZeRO-R's Pa (tp=X,pa): the D-wide checkpoints every tensor rank held whole are split
    # over the tp ranks, and each layer's are all-gathered for the backward
    cfg, m = model("llama-2-7b"), mesh(f"X={tp}", "h100-sxm")
    plain = train(cfg, m, parse_strategy("tp=X"), batch=8, context=T,
                  options=StepOptions(recompute=policy))
    pa = train(cfg, m, parse_strategy("tp=X,pa"), batch=8, context=T,
               options=StepOptions(recompute=policy))
    mode, k = checkpoint_policy(policy)
    # the D-wide parts per token and layer, bf16: the layer input (full), the output
    # projection's and down's outputs (matmuls), the k tensors (k_tensors_of_D)
    wide = {"full": 2 * D, "matmuls": 2 * (D + D), "k_tensors_of_D": 2 * D * (k or 0)}[mode]
    held = plain.memory["activations"] - pa.memory["activations"]
    assert held == wide * L * 8 * T * (tp - 1) // tp
    gathers = [u for u in pa.uses if "ZeRO-R" in u[0].what]
    assert len(gathers) == 1
    use, _, _, size = gathers[0]
    assert size == wide * 8 * T and use.collective == "allgather" and use.phase == "backward"
    assert not [u for u in plain.uses if "ZeRO-R" in u[0].what]


def test_zero_r_refusals_name_the_flag() -> None:
    with pytest.raises(InputError, match=r"'pa' \(partitioned activations\) needs tp=AXES"):
        parse_strategy("dp=X,pa")
    with pytest.raises(InputError, match="give sp or pa"):
        parse_strategy("tp=X,sp,pa")
    with pytest.raises(InputError, match="write ',pa', not 'pa=X'"):
        parse_strategy("tp=Y,pa=X")
    assert str(parse_strategy("tp=X,pa")) == "tp=X,pa"
