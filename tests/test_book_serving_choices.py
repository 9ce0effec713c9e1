"""Laws of the choices a model's step takes besides its collectives (issue 36, round 4):
which experts a mixture of experts reads (``experts=``), through the serving plan's step,
``model --decode`` and ``plan --serve``."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof import chip, mesh
from symroof.cli.main import main
from symroof.core.choices import Choices
from symroof.models import model
from symroof.models.layers import Touched
from symroof.models.step_roofline import critical_batch, decode_intensity
from symroof.plans.options import StepOptions
from symroof.plans.serving import serve, step_on

MOE = ["mixtral-8x7b", "qwen1.5-moe-a2.7b"]  # key-value heads, gated experts, no bias


def _expected_expert_reads(name: str, read: str, batch: int) -> Fraction:
    """The routed experts' HBM reads of a decode step, from the config in fractions: the
    routed tokens' activations (M k of them, into D and into F_e) and the weights of E
    experts (``all``) or k (``top_k``), gate, up and down, in bf16."""
    cfg = model(name)
    assert cfg.moe is not None and cfg.mlp == "gated" and not cfg.mlp_bias
    D, Fe, E, k = cfg.d_model, cfg.moe.d_ff, cfg.moe.experts, cfg.moe.top_k
    layers = cfg.layers - cfg.moe.dense_layers
    experts = E if read == "all" else k
    activations = Fraction(batch * k * (D + Fe) * 2)
    weights = Fraction(experts * 3 * D * Fe * 2)
    return layers * (activations + weights)


def _expert_reads(step_ops: object) -> Fraction:
    total = Fraction(0)
    for b, o in step_ops.rows():  # type: ignore[attr-defined]
        if o.name.startswith("experts"):
            total += Fraction(str(b.count * o.reads["hbm"]))
    return total


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from(MOE), read=st.sampled_from(["all", "top_k"]),
       batch=st.integers(1, 4096), context=st.integers(1, 8192))
def test_the_step_reads_every_expert_or_one_tokens(name: str, read: str, batch: int,
                                                   context: int) -> None:
    # the serving plan's step (what model --decode and plan --serve show) reads every
    # expert's weights under experts=all and one token's top k under experts=top_k
    step, _ = step_on(model(name), "decode", chip("tpu-v5e"), batch=batch, context=context,
                      choices=Choices(experts=read))
    assert _expert_reads(step.roofline.step) == _expected_expert_reads(name, read, batch)
    assert any(n.startswith(f"experts={read}: ") and "leaves out the experts" in n
               for n in step.notes)


@settings(max_examples=4, deadline=None)
@given(batch=st.integers(1, 512), read=st.sampled_from(["all", "top_k"]))
def test_model_decode_takes_the_experts_read(batch: int, read: str) -> None:
    # the command line's step: its experts' rows read and write what the config says
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["model", "mixtral-8x7b", "--decode", "--context", "16", "--batch",
                   str(batch), "--chip", "tpu-v5e", "--choices", f"experts={read}", "--json"])
    assert rc == 0
    rows = {r["name"]: r for r in json.loads(out.getvalue())["layers"]}
    cfg = model("mixtral-8x7b")
    assert cfg.moe is not None
    D, Fe, k = cfg.d_model, cfg.moe.d_ff, cfg.moe.top_k
    writes = cfg.layers * batch * k * (2 * Fe + D) * 2
    got = sum(Fraction(rows[n]["bytes"]) * rows[n]["count"]
              for n in ("experts gate/up", "experts down"))
    assert got == _expected_expert_reads("mixtral-8x7b", read, batch) + writes


def test_the_critical_batch_of_every_expert_is_one_answer(
        capsys: pytest.CaptureFixture[str]) -> None:
    # model --decode's critical batch under experts=all is critical_batch's closed form
    relation = critical_batch(model("mixtral-8x7b"), chip("tpu-v5e"), context=1,
                              choices=Choices(experts="all")).relation
    assert main(["model", "mixtral-8x7b", "--decode", "--context", "1", "--chip",
                 "tpu-v5e", "--choices", "experts=all"]) == 0
    out = capsys.readouterr().out
    assert f"critical batch at context 1: first whole batch 981 ({relation} " in out
    assert ("experts=all: every expert's weights are read (a large batch touches them "
            "all) (leaves out the experts a batch leaves untouched)") in out
    # and its decode intensity is the step's reading every expert: B's FLOPs over bytes
    intensity = decode_intensity(model("mixtral-8x7b"), experts="all")[0]
    assert not intensity.atoms(Touched)
    assert f"decode intensity: {intensity}; as T -> oo: 4\n" in out


def test_plan_serve_takes_the_experts_read(capsys: pytest.CaptureFixture[str]) -> None:
    # plan --serve's decode step is serve's under the choice, said in the assumptions, and
    # the collectives' line names only what costs the collectives
    m = mesh("X=8", "tpu-v5e")
    plan = serve(model("mixtral-8x7b"), m, batch=64, context=2048,
                 options=StepOptions(choices=Choices(experts="top_k", latency="off")))
    touched = serve(model("mixtral-8x7b"), m, batch=64, context=2048,
                    options=StepOptions(choices=Choices(latency="off")))
    assert plan.decode.t_lower < touched.decode.t_lower
    assert main(["plan", "mixtral-8x7b", "--serve", "--mesh", "X=8", "--chip", "tpu-v5e",
                 "--batch", "64", "--context", "2048", "--choices",
                 "experts=top_k,latency=off"]) == 0
    out = capsys.readouterr().out
    assert "- experts=top_k: only the top-k experts' weights are read" in out
    assert "- collectives as a text costs them: latency=off (leaves out the hop latency)\n" \
        in out


@pytest.mark.parametrize(("argv", "message"), [
    (["model", "llama-2-7b", "--decode", "--context", "16", "--chip", "tpu-v5e",
      "--choices", "experts=all"], "experts=all: llama-2-7b has no mixture of experts"),
    (["model", "mixtral-8x7b", "--decode", "--context", "16", "--chip", "tpu-v5e",
      "--choices", "experts=some"], "unknown value 'some'"),
])
def test_the_experts_read_refused(argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def _json(argv: list[str]) -> dict[str, object]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "label"), [("h100-sxm", "B12-table"), ("tpu-v5e", "GC-v5e"),
                                             ("tpu-v5e", "B1")])
def test_a_command_line_step_under_an_edition_is_the_step_on_that_edition_s_chip(
        name: str, label: str, capsys: pytest.CaptureFixture[str]) -> None:
    # one question, one answer: model --decode --choices edition=L is device_step's step
    # under that choice, which is the step on the mesh built on that edition's chip, and
    # its book form is the book's on that chip; the edition is said
    from symroof.models.chosen import book_decode_time
    from symroof.plans.device_step import device_step
    on = chip(name).edition(label)
    step = device_step(model("llama-2-7b"), "decode", mesh("X=8", on), {"tp": ("X",)},
                       batch=64, context=2048)
    argv = ["model", "llama-2-7b", "--decode", "--context", "2048", "--batch", "64",
            "--mesh", "X=8", "--chip", name, "--choices", f"edition={label}"]
    got = _json(argv)
    assert got["step"]["t_lower"] == str(step.t_lower)  # type: ignore[index]
    assert got["step"]["t_upper"] == str(step.t_upper)  # type: ignore[index]
    assert got["book_decode_time"] == str(book_decode_time(
        model("llama-2-7b"), on, 64, 2048, Choices(edition=label), chips=8))
    assert main(argv) == 0
    assert f"edition={label}: the chip figures of that edition of the table\n" in \
        capsys.readouterr().out


@pytest.mark.parametrize(("name", "label"), [("h100-sxm", "B12-table"), ("tpu-v5e", "GC-v5e")])
def test_a_command_line_plan_under_an_edition_is_the_plan_on_that_edition_s_chip(
        name: str, label: str) -> None:
    # plan --serve and plan --train with --choices edition=L: serve's and train's plans
    # under that choice, the plans on that edition's chip, the edition in their assumptions
    # and not among the choices that cost the collectives
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    on = chip(name).edition(label)
    plan = serve(model("llama-2-7b"), mesh("X=8", on), batch=8, context=1024, generate=16)
    got = _json(["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--chip", name, "--batch",
                 "8", "--context", "1024", "--generate", "16", "--choices",
                 f"edition={label}"])
    assert plan.requests is not None
    assert got["requests"] == {k: str(v) for k, v in plan.requests.items()}
    assert got["decode"]["t_lower"] == str(plan.decode.t_lower)  # type: ignore[index]
    said = got["assumptions"]
    assert f"edition={label}: the chip figures of that edition of the table" in said  # type: ignore[operator]
    assert not any(a.startswith("collectives as a text") for a in said)  # type: ignore[attr-defined]
    trained = train(model("llama-2-7b"), mesh("X=8", on), parse_strategy("dp=X"), batch=8,
                    context=4096)
    got = _json(["plan", "llama-2-7b", "--train", "--mesh", "X=8", "--strategy", "dp=X",
                 "--chip", name, "--batch", "8", "--context", "4096", "--choices",
                 f"edition={label}"])
    assert (got["t_lower"], got["t_upper"]) == (str(trained.t_lower), str(trained.t_upper))
    assert f"edition={label}: the chip figures of that edition of the table" in \
        got["assumptions"]  # type: ignore[operator]


@pytest.mark.parametrize(("argv", "message"), [
    (["model", "llama-2-7b", "--decode", "--context", "16", "--chip", "tpu-v5e", "--choices",
      "edition=B12"], "--choices: edition=B12: the chip table has no figure of tpu-v5e from "
     "an edition 'B12' (its editions: B1, B2, B2-draft, B2-prose, B2L, GC-v5e, GC-v5e-rev)"),
    (["model", "llama-2-7b", "--fit", "--chip", "tpu-v5e", "--choices", "edition=B1"],
     "--choices: a fit of a model in memory takes the choices sizes; edition=B1 does not "
     "apply to it"),
])
def test_an_edition_the_command_line_cannot_take_is_refused(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
