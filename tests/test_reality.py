"""Megatron-LM's conventions, the published runs of Korthikanti et al. 2022 (arXiv 2205.05198)
and the comparison of symroof's figures with theirs."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import sympy as sp

from symroof.commands.reality import compare, mean_abs_error, plan_of
from symroof.core.errors import InputError
from symroof.hardware.catalog import chip
from symroof.models import model
from symroof.plans.calibration import calibration, parse_efficiency
from symroof.plans.options import StepOptions
from symroof.plans.published import GIB, published
from tests.conftest import ROOT

# Table 3 of the paper: heads a, hidden h, layers L
SIZES = {"megatron-gpt-22b": (64, 6144, 48), "megatron-gpt-175b": (96, 12288, 96),
         "megatron-gpt-530b": (128, 20480, 105), "megatron-gpt-1t": (160, 25600, 128)}
S = 2048


@pytest.fixture(scope="module")
def rows() -> list:
    return compare("korthikanti2022", "megatron-a100")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``symroof ARGS`` in this process: its exit code, what it printed and its errors (a
    calibration is fitted once for every command of a test, as in one session of a user's
    Python)."""
    from symroof.cli.main import main
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _plan(name: str, mode: str, t: int = 8, b: int = 1, efficiency: str | None = None):
    from symroof.hardware.catalog import chip
    from symroof.parallel.mesh import mesh
    from symroof.plans.calibration import calibration
    from symroof.plans.published import MODES
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    recompute, seq = MODES[mode]
    conv = calibration(efficiency).conventions if efficiency else None
    return train(model(name), mesh(f"X={t}", chip("a100-80gb")),
                 parse_strategy("tp=X" + (",sp" if seq and t > 1 else "")), batch=b, context=S,
                 optimizer="adam-megatron", conventions=conv,
                 options=StepOptions(recompute=recompute))


@pytest.mark.parametrize("name", sorted(SIZES))
@pytest.mark.parametrize("t", [1, 8])
def test_activations_per_layer_are_the_papers_table_2(name: str, t: int) -> None:
    # section 4.2: s b h (10 + 24/t + 5 a s/(h t)) with tensor parallelism alone, the whole
    # layer split by t with sequence parallelism, 34 s b h/t with selective recomputation
    # on top, s b h (10 + 24/t) with selective alone, 2 s b h with full recomputation; the
    # plan's activations are L layers' worth
    a, h, layers = SIZES[name]
    b = 2
    sbh = sp.Integer(S * b * h)
    expected = {
        "none": sbh * (10 + sp.Rational(24, t) + sp.Rational(5 * a * S, h * t)),
        "sequence": sbh * (34 + sp.Rational(5 * a * S, h)) / t,
        "selective": sbh * (10 + sp.Rational(24, t)),
        "sequence+selective": 34 * sbh / t,
        "full": 2 * sbh,
    }
    for mode, value in expected.items():
        if t == 1 and "sequence" in mode:
            continue
        assert _plan(name, mode, t, b).memory["activations"] == layers * value, mode


def test_figure_1_activations_exact_and_the_states_above_its_convention(rows: list) -> None:
    # Figure 1's activations are the plan's layers' to the byte (interleaving's 1 + (p - 1)/
    # (p v) on the 175B and 530B runs included): its bars are Equation 5, which section 4.3
    # keeps for the rest of the paper; the plan adds the activations outside the layers the
    # section counts, on the first stage (the larger account) the embedding's dropout mask,
    # s b h / t a microbatch (whole on every rank without sequence parallelism) for p of them
    # (interleaved: 2 p, Megatron-LM's schedule), and without a pipeline the final norm's and
    # the head's inputs and the fp32 logits too, 4 s b h/t (1 + v/h). Its bars count 18
    # bytes over 12 h^2 per layer, the plan every parameter the first stage holds
    # (embeddings, biases, norms) too
    pub = published("korthikanti2022")
    assert len(rows) == len(pub.figures)
    memory = [(r, pub.run(f.run, f.mode)) for r, f in zip(rows, pub.figures, strict=True)
              if r.kind == "memory"]
    assert len(memory) == 16
    v = 51200  # section 6: the vocabulary of every run
    for r, run in memory:
        if "activations" in r.source:
            h, t, p, m = SIZES[run.model][1], run.tensor, run.pipeline, run.microbatches
            sbh = run.sequence * run.micro_batch * h
            split = t if run.sequence_parallel else 1
            outside = sp.Rational(sbh, split) + sp.Rational(4 * sbh, split) \
                + sp.Rational(4 * sbh * v, t * h) if p == 1 else \
                sp.Rational(sbh * (min(p, m) if run.interleave == 1 else min(2 * p, m)), split)
            assert r.predicted - r.published == outside, r.source
        else:
            assert r.published < r.predicted < sp.Rational(112, 100) * r.published, r.source


def test_tensor_collectives_per_layer_under_megatrons_conventions() -> None:
    # sequence parallelism: an AllGather and a ReduceScatter for each AllReduce, and the
    # backward gathers the column-parallel inputs again; full recomputation reruns the
    # forward's collectives
    def per_layer(mode: str) -> dict[str, sp.Expr]:
        out: dict[str, sp.Expr] = {}
        for u, *_ in _plan("megatron-gpt-22b", mode, efficiency="megatron-a100").uses:
            if u.kind == "tp" and u.scope == "layer":
                out[u.collective] = out.get(u.collective, 0) + u.per_step / 48
        return out
    assert per_layer("none") == {"allreduce": 4}
    assert per_layer("full") == {"allreduce": 6}
    assert per_layer("sequence+selective") == {"allgather": 6, "reducescatter": 4}


def test_one_row_calibrated_and_it_reproduces_its_published_time(rows: list) -> None:
    calibrated = [r for r in rows if r.calibrated]
    assert len(calibrated) == 1
    assert calibrated[0].predicted == calibrated[0].published == sp.Rational("1.42")
    cal = calibration("megatron-a100")
    assert cal.fitted is not None and cal.fitted.run == "megatron-gpt-22b"
    assert cal.fractions["nvlink"] == sp.Rational(2, 3)
    # the A100-SXM4-80GB's measured copy, 1.61 TB/s, over the catalogue's figure for it
    assert cal.fractions["hbm"] * chip("a100-80gb").bandwidth("hbm") == sp.Rational("1.61e12")
    assert cal.conventions is not None and cal.conventions.choices["overlap"] == "op"


def test_every_bound_holds(rows: list) -> None:
    for r in (r for r in rows if r.kind == "time"):
        lower, upper = r.bound
        assert lower <= upper and lower <= r.published, r.source
        assert lower <= r.predicted, r.source


def test_the_time_rows_meet_the_goal_the_worst_bound_by_compute(rows: list) -> None:
    # measured: 2.87% over the seven rows not calibrated (the goal: 3.5%); the worst is 175B
    # (present work), its step bound by compute at the fraction fitted on 22B
    assert mean_abs_error(rows, "time") <= sp.Rational(35, 1000)
    worst = max((r for r in rows if r.kind == "time"), key=lambda r: abs(r.error))
    assert worst.source == "Table 5, 175B, present work" and worst.error < 0
    assert worst.binding == "compute"


def test_efficiency_by_name_and_bad_calibrations(tmp_path: Path) -> None:
    e = parse_efficiency("megatron-a100")
    assert e.of("nvlink") == sp.Rational(2, 3) and "fitted on" in e.describe()
    with pytest.raises(InputError, match=r"^efficiency: unknown calibration 'nope'"):
        parse_efficiency("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ntitle = "x"\n[fractions.hbm]\nvalue = "3/2"\nsource = "s"\n')
    with pytest.raises(InputError, match=r"bad.toml: fractions.hbm: a fraction of peak is in "
                       r"\(0, 1\], got '3/2'"):
        calibration(str(bad))
    both = tmp_path / "both.toml"
    both.write_text('name = "x"\ntitle = "x"\n[fractions.compute]\nvalue = "1/2"\n'
                    'source = "s"\n[fit]\nresource = "compute"\npublished = '
                    '"korthikanti2022"\nrun = "megatron-gpt-22b"\nmode = "full"\nwhy = "w"\n')
    with pytest.raises(InputError, match="'compute' is both fixed and fitted"):
        calibration(str(both))


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(InputError, match="unknown mode 'partial'"):
        published("korthikanti2022").run("megatron-gpt-22b", "partial")


def test_reality_json_rows(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("reality", ROOT / "benchmarks" / "reality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert module.main(["--json"]) == 0
    data = json.loads(out.getvalue())
    assert len(data["rows"]) == 24
    assert set(data["rows"][0]) >= {"source", "what", "published", "predicted", "bound",
                                     "error", "calibrated"}
    kinds = {("time" in r["what"]) + 2 * ("memory" in r["what"]) for r in data["rows"]}
    assert kinds == {1, 2}
    assert sum(r["calibrated"] for r in data["rows"]) == 1
    # each row carries the command that gives its prediction: plan --train's predicted time
    for row in [r for r in data["rows"] if "22B" in r["source"] and "Table 5" in r["source"]]:
        assert row["command"].startswith("symroof plan megatron-gpt-22b --train ")
        code, out, err = cli(capsys, *row["command"].split()[1:], "--json")
        assert code == 0, err
        plan = json.loads(out)
        assert plan["predicted_value"] == row["predicted"]
        assert sp.Rational(plan["predicted"]) == sp.Rational(row["predicted_exact"])


@pytest.mark.slow
def test_the_committed_plot_is_what_the_benchmark_draws(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location("reality", ROOT / "benchmarks" / "reality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import contextlib
    import io
    drawn = tmp_path / "reality.svg"
    # what `--svg` draws, without the table it also prints (whose searches the plot does
    # not show: the table's rows are test_reality_json_rows' and the docs page's)
    with contextlib.redirect_stdout(io.StringIO()):
        module._svg(module._rows()[0], str(drawn))
    assert drawn.read_bytes() == (ROOT / "benchmarks" / "reality.svg").read_bytes()
    assert "](benchmarks/reality.svg)" in (ROOT / "docs" / "reality.md").read_text("utf-8")


def test_interleaved_bubble_is_p_minus_1_over_v_m() -> None:
    from symroof.plans.pipeline import bubble_over_ideal, interleaved_cost, pipeline_cost
    p, m, v = sp.symbols("p m v", positive=True, integer=True)
    tf, tb = sp.symbols("t_f t_b", positive=True)
    assert sp.simplify(bubble_over_ideal(p, m, v) - (p - 1) / (v * m)) == 0
    assert sp.expand(interleaved_cost(p, m, 1, tf, tb).makespan
                     - pipeline_cost(p, m, tf, tb).makespan) == 0
    # the 175B run: 8 stages, 64 microbatches, 3 chunks per GPU: 64 + 7/3 slots
    assert sp.cancel(interleaved_cost(8, 64, 3, tf, tb).makespan / (tf + tb)) \
        == 64 + sp.Rational(7, 3)


def test_megatron_optimizer_is_18_bytes_per_parameter() -> None:
    from symroof.models.memory import training_memory
    assert training_memory(model("megatron-gpt-22b"), optimizer="adam-megatron") \
        .bytes_per_param == 18


# ---------------------------------------------------------------- gradient accumulation, MFU


def test_zero2_with_gradient_accumulation_runs_at_the_compute_bound_with_mfu_100() -> None:
    # issue: LLaMA-2-7B on 256 H100, 1024 x 4096 tokens, ZeRO-2 with microbatches of one
    # sequence fits (68.34 GB) and runs at the compute bound; its MFU is the model's FLOPs
    # at the bf16 peak over the step, which adds the norms on the vector unit and the
    # optimizer step
    from symroof.parallel.mesh import mesh
    from symroof.plans.mfu import model_params, palm_flops_per_token
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    cfg = model("llama-2-7b")
    plan = train(cfg, mesh("X=256", "h100-sxm"), parse_strategy("zero2=X"), batch=1024,
                 context=4096, options=StepOptions(microbatch=1))
    assert plan.extra["microbatches"] == 4 and plan.fits and plan.bound == "compute"
    assert plan.t_lower == plan.terms["compute"].time + plan.terms["optimizer step"].time
    palm = palm_flops_per_token(model_params(cfg), cfg.layers, cfg.heads, cfg.head_dim, 4096)
    # the bf16 peak: NVIDIA's dense 989.4 TFLOP/s
    assert plan.extra["mfu"] == 1024 * 4096 * palm / (256 * 9894 * 10**11 * plan.t_lower)
    assert 0.99 < plan.extra["mfu"] < 1
    whole = train(cfg, mesh("X=256", "h100-sxm"), parse_strategy("zero2=X"), batch=1024,
                  context=4096)
    assert not whole.fits  # four sequences' activations at once do not
    assert plan.memory["activations"] * 4 == whole.memory["activations"]
    with pytest.raises(InputError, match="^microbatch: a batch of 1024 sequences does not "
                       "split into 256 replicas x microbatches of 3"):
        train(cfg, mesh("X=256", "h100-sxm"), parse_strategy("zero2=X"), batch=1024, context=4096,
              options=StepOptions(microbatch=3))


def test_palm_flops_are_the_training_flops_the_model_does() -> None:
    from symroof.models.counts import training_flops_per_token
    from symroof.models.hf import bundled
    from symroof.plans.mfu import model_params, palm_flops_per_token
    T = sp.Symbol("T", positive=True)
    for name, cfg in bundled().items():
        if cfg.mla is not None:
            continue
        palm = palm_flops_per_token(model_params(cfg), cfg.layers, cfg.heads, cfg.head_dim, T)
        assert sp.expand(palm - training_flops_per_token(cfg, T)) == 0, name


def test_search_finds_sharded_states_with_gradient_accumulation_on_256_h100() -> None:
    # at the compute bound the optimizer step decides: FSDP shards the weights it writes;
    # among the plans that tie, the rings over three axes pay the fewest hop latencies
    from symroof.hardware.catalog import chip
    from symroof.plans.search import search
    found = search(model("llama-2-7b"), chip("h100-sxm"), 256, batch=1024, context=4096)
    assert found.best.strategy == "fsdp=X+Y+Z" and found.best.microbatches > 1
    plan = found.plan
    assert plan.bound == "compute"
    assert plan.t_lower == plan.terms["compute"].time + plan.terms["optimizer step"].time
    assert round(found.best.t_lower, 4) == 0.7641  # 0.7645 at the book's 9.89e14 FLOP/s
    assert found.searched > 10_000


# ---------------------------------------------------------------- search over the cluster


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIZES))
def test_plan_search_over_the_papers_cluster_is_set_beside_the_papers_configuration(
        name: str) -> None:
    # symroof plan --search over the paper's GPUs, with the paper's own configuration (Table
    # 3, sequence parallel + selective) set beside it, both costed by the generic plan
    # under the same calibration and its conventions (overlap op: both rank by their
    # predicted time); the paper's configuration (one sequence a microbatch, its stages
    # interleaved over 3 chunks for 175B and 530B) is one the search tries, timed there as
    # the plan given, so the search's choice is no slower
    from symroof.commands.plan import PlanRequest
    run = published("korthikanti2022").run(name, "sequence+selective")
    spec, strategy, micro = run.as_plan()
    result = PlanRequest(**run.options(), search=run.gpus,
                         efficiency="megatron-a100").run()
    given, search = result.given, result.search
    assert given is not None and search is not None
    assert (given.mesh, given.devices, given.batch) == (spec, run.gpus, run.global_batch)
    assert given.extra["microbatches"] == micro and given.extra["recompute"] == "selective"
    assert given.fits and search.plan.fits and search.plan.devices == run.gpus
    assert search.plan.overlap == given.overlap == "op"
    assert search.plan.predicted is not None and given.predicted is not None
    from symroof.plans.strategy import parse_strategy
    paper = (spec, str(parse_strategy(strategy)), micro, run.options().get("interleave", 1),
             "selective")
    searched = [c for c in search.every
                if (c.spec, c.strategy, c.microbatches, c.chunks, c.recompute) == paper]
    assert len(searched) == 1 and given.extra["chunks"] == paper[3]
    assert searched[0].predicted == pytest.approx(float(given.predicted), rel=1e-9)
    ratio = search.plan.predicted / given.predicted
    assert ratio <= 1
    from symroof.core.printer import approx
    from symroof.render.plan_views import lines
    text = "\n".join(lines(result))
    assert ("the chosen plan ties with the given one (predicted)" if ratio == 1 else
            f"the chosen plan is {approx((1 - ratio) * 100)}% faster than the given one "
            "(predicted)") in text


def test_a_given_plan_that_does_not_fit_is_said_so() -> None:
    # 22B on 8 A100s, tensor parallel without sequence parallelism or recomputation: the
    # baseline of Figure 1, 45.56 + 59.25 GiB, over the 80 GB of an A100
    from symroof.commands.plan import PlanRequest
    from symroof.render.plan_views import lines
    result = PlanRequest(model="megatron-gpt-22b", mode="train", chip="a100-80gb", mesh="X=8",
                         strategy="tp=X", search=8, batch=4, context=S, microbatches=1,
                         optimizer="adam-megatron").run()
    assert result.given is not None and result.search is not None
    assert not result.given.fits and result.search.plan.fits
    assert result.given.memory["activations"] == sp.Rational("59.25") * GIB
    assert "; the given plan does not fit in memory" in "\n".join(lines(result))
    assert result.to_json()["search"]["given"]["fits"] is False


@pytest.mark.slow
def test_a_plan_set_beside_a_search_is_printed_with_the_choice() -> None:
    from tests.conftest import run_cli
    args = ("plan", "megatron-gpt-22b", "--train", "--search", "8", "--mesh", "X=8",
            "--strategy", "tp=X,sp", "--microbatches", "1", "--chip", "a100-80gb", "--batch",
            "4", "--context", "2048", "--recompute", "selective", "--optimizer",
            "adam-megatron", "--efficiency", "megatron-a100")
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    from tests.test_json_vocabulary import walk
    found: list[str] = []
    walk(data, "$", found)
    assert not found, found
    given = data["search"]["given"]
    assert (given["mesh"], given["strategy"], given["microbatches"], given["chunks"],
            given["choices"]) == ("X=8", "tp=X,sp", 1, 1, {"recompute": "selective"})
    # both are bound by compute on 8 GPUs; the two rank by their predicted time (the
    # calibration's overlap op, under which the tensor-parallel collectives wait for the
    # compute); the chosen one pipelines stages of tensor parallelism over fewer ranks, one
    # sequence a microbatch, each stage interleaved one layer a chunk: its tensor-parallel
    # collectives take less time than the given plan's over 8
    assert sp.Rational(given["chosen_over_given"]) < 1
    assert sp.Rational(data["predicted"]) < sp.Rational(given["predicted"])
    best = data["search"]["ranking"][0]
    sizes = dict(axis.split("=") for axis in best["mesh"].split(","))
    pipeline = next(k[3:] for k in best["strategy"].split(",") if k.startswith("pp="))
    stages = math.prod(int(sizes[a]) for a in pipeline.split("+"))
    assert best["microbatches"] == 4 and stages > 1 and stages * best["chunks"] == 48
    alone = json.loads(run_cli(*(a for a in args if a not in ("--search", "8")),
                               "--json").stdout)

    def tensor(plan: dict) -> sp.Rational:  # type: ignore[type-arg]
        return sum((sp.Rational(v) for k, v in plan["terms"].items()
                    if k.startswith("tp over")), sp.S.Zero)
    assert tensor(data) < tensor(alone)
    text = run_cli(*args)
    assert text.returncode == 0, text.stderr
    assert "the given plan beside the search's choice:" in text.stdout


def test_search_over_recomputation_policies_is_no_slower_than_any_one() -> None:
    from symroof.hardware.catalog import chip
    from symroof.plans.search import search
    cfg, h100 = model("llama-2-13b"), chip("h100-sxm")
    each = {r: search(cfg, h100, 16, batch=32, context=4096, recompute=r)
            for r in ("none", "selective", "full")}
    every = search(cfg, h100, 16, batch=32, context=4096, recompute="any")
    assert every.searched == sum(s.searched for s in each.values())
    assert every.best.t_lower == min(s.best.t_lower for s in each.values())
    assert every.plan.t_lower == each[every.best.recompute].plan.t_lower


def test_the_generic_plan_agrees_with_figure_1_under_megatrons_choices() -> None:
    from tests.conftest import run_cli
    out = run_cli("plan", "megatron-gpt-22b", "--train", "--mesh", "X=8", "--strategy",
                  "tp=X,sp", "--chip", "a100-80gb", "--batch", "4", "--context", "2048",
                  "--recompute", "selective", "--optimizer", "adam-megatron",
                  "--efficiency", "megatron-a100", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    memory = {k: sp.Integer(v) for k, v in data["memory"].items()}
    # Figure 1, 22B, sequence parallel + selective: 9.5625 GiB of activations
    assert memory["activations"] == sp.Rational("9.5625") * GIB
    assert memory["gradients"] == 2 * memory["weights"]  # fp32 gradients, fp16 weights
    assert any("calibration megatron-a100" in a for a in data["assumptions"])


@pytest.mark.parametrize("name", ["gpt2", "llama-2-7b", "megatron-gpt-175b"])
def test_flash_attention_keeps_the_softmax_statistics_not_the_scores(name: str) -> None:
    from symroof.models.memory import activation_bytes
    cfg = model(name)
    flash = activation_bytes(cfg, context=4096, attention="flash").per_layer
    selective = activation_bytes(cfg, "selective", context=4096).per_layer
    assert flash == selective + 4 * cfg.heads  # one fp32 log-sum-exp per head and token
    with pytest.raises(InputError, match="^attention: attention must be one of "
                       "materialised, flash, got 'fused'"):
        activation_bytes(cfg, attention="fused")


def test_a_calibration_names_only_known_resources(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text('name = "x"\ntitle = "x"\n[fractions.nvlnk]\nvalue = "1/2"\nsource = "s"\n')
    with pytest.raises(InputError, match=r"typo.toml: fractions: unknown resource 'nvlnk' "
                       r"\(known: compute, dcn, hbm, .*nvlink"):
        calibration(str(bad))
    good = tmp_path / "mine.toml"
    good.write_text('name = "mine"\ntitle = "t"\n[fractions.compute]\nvalue = "0.5"\n'
                    'source = "a measurement"\n')
    e = parse_efficiency(str(good))
    assert e.of("compute") == sp.Rational(1, 2) and "a measurement" in e.describe()


def test_the_papers_infiniband_per_gpu_is_the_catalogues_node_figure_over_its_gpus() -> None:
    from symroof.hardware.catalog import chip
    paper = published("korthikanti2022")
    a100 = chip(paper.chip)
    assert a100.topology().scale_out == "ib"
    assert paper.ib_per_gpu == a100.bandwidth("ib") / a100.topology().chips_per_host \
        == 25 * 10**9  # 200 Gb/s HDR, one adapter per GPU


# ---------------------------------------------------------------- Megatron-LM's conventions


def test_a_calibration_brings_the_conventions_it_was_fitted_under(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the command, and the same with the optimizer left out: one prediction, 1.42 s,
    # under Megatron-LM's conventions, which the assumptions name; a flag given on the
    # command line overrides its choice and says so
    args = ("plan", "megatron-gpt-22b", "--train", "--mesh", "X=8", "--strategy", "tp=X",
            "--chip", "a100-80gb", "--batch", "4", "--context", "2048", "--microbatch", "4",
            "--recompute", "full", "--efficiency", "megatron-a100", "--json")
    alone = json.loads(cli(capsys, *args)[1])
    given = json.loads(cli(capsys, *args, "--optimizer", "adam-megatron")[1])
    assert alone["predicted"] == given["predicted"]
    assert sp.Rational(alone["predicted"]) == sp.Rational("1.42")
    assert alone["overlap"] == "op"
    said = [a for a in alone["assumptions"] if a.startswith("conventions megatron-lm")]
    assert len(said) == 1 and "overlap op: Megatron-LM runs each tensor-parallel" in said[0]
    assert "optimizer adam-megatron: fp16 weights" in said[0]
    phase = json.loads(cli(capsys, *args, "--overlap", "phase")[1])
    assert phase["overlap"] == "phase" and phase["predicted"] == phase["t_lower"]
    assert any("overlap phase (set by the user)" in a for a in phase["assumptions"])


def test_a_calibration_names_known_conventions(tmp_path: Path) -> None:
    bad = tmp_path / "conv.toml"
    bad.write_text('name = "x"\ntitle = "x"\nconventions = "deepspeed"\n'
                   '[fractions.compute]\nvalue = "1/2"\nsource = "s"\n')
    with pytest.raises(InputError, match=r"conv.toml: conventions: unknown conventions "
                       r"'deepspeed' \(known: megatron-lm\)"):
        calibration(str(bad))


def test_the_fit_solves_the_plans_time_for_its_fraction() -> None:
    # the fraction fitted, put back into the plan, gives the published time exactly
    from symroof.plans.calibration import solve_fraction
    cal = calibration("megatron-a100")
    run = published("korthikanti2022").run("megatron-gpt-22b", "full")
    assert plan_of(run, "megatron-a100").predicted == sp.Rational("1.42")
    f = sp.Symbol("f", positive=True)
    assert solve_fraction(sp.Max(2 / f, 3) + sp.Max(1 / f, sp.Rational(1, 2)), f,
                          sp.Integer(6)) == sp.Rational(1, 2)
    with pytest.raises(InputError, match="not under the published 1 s"):
        solve_fraction(2 / f, f, sp.Integer(1))
    assert cal.fractions["compute"] < 1


def test_the_stored_fit_is_the_fit_solved_again() -> None:
    # the fitted fraction megatron-a100.toml stores (fit.value) is derived, never typed:
    # the fit solved again from its published row (Table 5, 22B, full) finds exactly it
    from symroof.plans.calibration import refit
    stored = calibration("megatron-a100").fractions["compute"]
    solved = refit("megatron-a100")
    assert solved == stored, (f'store value = "{solved}" under [fit] in symroof/plans/'
                              f"calibrations/megatron-a100.toml (it holds {stored})")


def test_a_stored_fit_loads_without_planning(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    import symroof.plans.calibration as c

    def planned(*args: object, **kwargs: object) -> None:
        raise AssertionError("planned the run")
    monkeypatch.setattr(c, "fit_fraction", planned)
    text, where = c._text("megatron-a100")
    cal = c._load(c._parse(text, where), where)
    assert cal.fitted is not None and (cal.fitted.run, cal.fitted.mode) == (
        "megatron-gpt-22b", "full")
    assert cal.fractions["compute"] == calibration("megatron-a100").fractions["compute"]
    # a file without the stored value is solved as it loads; a stored value out of (0, 1]
    # is refused by name
    head, fit = text.split("\n[fit]\n")
    lines = [head, "[fit]", *(x for x in fit.splitlines() if not x.startswith("value ="))]
    unsolved = tmp_path / "unsolved.toml"
    unsolved.write_text("\n".join(lines) + "\n")
    with pytest.raises(AssertionError, match="planned the run"):
        c.calibration(str(unsolved))
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(lines) + '\nvalue = "3/2"\n')
    with pytest.raises(InputError, match=r"bad.toml: fit.value: a fraction of peak is in "
                       r"\(0, 1\], got '3/2'"):
        c.calibration(str(bad))
