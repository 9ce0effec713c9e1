"""``symroof plan`` from the command line: the JSON contract, text and Markdown, MFU, the
search, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sympy as sp

from symroof.core.parse import parse_expr
from tests.conftest import run_cli

TRAIN = ["plan", "llama-2-7b", "--train", "--mesh", "X=16,Y=16", "--strategy",
         "fsdp=X,tp=Y,sp", "--chip", "tpu-v5e", "--batch", "256", "--context", "4096",
         "--recompute", "full"]
SERVE = ["plan", "llama-2-7b", "--serve", "--mesh", "X=8", "--strategy", "tp=X", "--chip",
         "h100-sxm", "--batch", "64", "--context", "2048"]
MEMORY = {"weights", "gradients", "optimizer", "activations", "activations_outside_layers",
          "kv_cache", "total"}


def plan_json(*args: str) -> dict[str, object]:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_training_json_has_the_contract_fields() -> None:
    out = plan_json(*TRAIN)
    assert set(out["memory"]) == MEMORY  # type: ignore[arg-type]
    for key in ("terms", "t_lower", "t_upper", "bound", "critical_batch"):
        assert key in out
    terms = out["terms"]
    assert isinstance(terms, dict) and {"compute", "hbm", "tp over Y (ici)",
                                        "fsdp over X (ici)"} <= set(terms)
    lower, upper = sp.Rational(str(out["t_lower"])), sp.Rational(str(out["t_upper"]))
    assert lower <= upper <= 2 * lower * len(terms)
    # per tensor-parallel chip: 32 layers of (4 D^2 + 3 D F) / 16 weights and 2 D norm
    # weights (replicated), the embedding and the head (V D each) / 16, the final norm D;
    # ZeRO-3 then splits them over the 16 FSDP chips, 2 bytes of weights and 12 of state each
    d, f, v = 4096, 11008, 32000
    per_chip = 32 * ((4 * d * d + 3 * d * f) // 16 + 2 * d) + 2 * v * d // 16 + d
    memory = out["memory"]
    assert isinstance(memory, dict) and memory["kv_cache"] == "0"
    assert sp.Integer(memory["weights"]) == 2 * per_chip // 16
    assert sp.Integer(memory["optimizer"]) == 12 * per_chip // 16


def test_serving_json_adds_latency_and_throughput() -> None:
    out = plan_json(*SERVE)
    assert set(out["memory"]) == {"weights", "kv_cache", "total"}  # type: ignore[arg-type]
    decode = out["decode"]
    assert isinstance(decode, dict)
    latency = sp.Rational(str(decode["latency"]))
    assert sp.Rational(str(decode["throughput"])) == 64 / latency
    assert decode["bound"] == "hbm"
    critical = out["critical_batch"]
    assert isinstance(critical, dict) and critical["integer"] is None
    assert critical["reason"].startswith("never compute-bound: hbm grows with B")
    assert out["memory"]["kv_cache"] == str(64 * 2048 * 524_288 // 8)  # type: ignore[index]


def test_text_names_every_collective_per_layer_and_per_step() -> None:
    done = run_cli(*TRAIN)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("llama-2-7b training on tpu-v5e, mesh X=16,Y=16 (256 chips), "
                        "fsdp=X,tp=Y,sp")
    rows = [x.split() for x in lines if x.startswith("tp ")]
    # Megatron with sequence parallelism: per layer 2 AllGathers and 2 ReduceScatters in each
    # phase, 32 layers per step
    layer = [r for r in rows if "layer" in r]
    phase = [next(w for w in r if w in ("forward", "backward")) for r in layer]
    for r, p in zip(layer, phase, strict=True):
        assert r[r.index(p) + 1:r.index(p) + 3] == ["1", "32"]
    assert sorted((r[1], p) for r, p in zip(layer, phase, strict=False)) == sorted(
        [("allgather", "forward")] * 2 + [("allgather", "backward")] * 2
        + [("reducescatter", "forward")] * 2 + [("reducescatter", "backward")] * 2)
    assert any(x.startswith("T_lower") for x in lines)


def test_markdown_is_tables() -> None:
    done = run_cli(*SERVE, "--format", "md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## llama-2-7b serving on h100-sxm")
    assert "| term | time |" in done.stdout


def test_mfu_prints_palms_definition() -> None:
    out = run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=16", "--strategy", "fsdp=X",
                  "--chip", "tpu-v5e", "--batch", "16", "--context", "2048", "--mfu", "5e4",
                  "--json")
    assert out.returncode == 0, out.stderr
    mfu = json.loads(out.stdout)["mfu"]
    # 5e4 tokens/s x (6 x 6,607,343,616 + 12 x 32 layers x 32 heads x 128 x 2048) /
    # (16 chips x 1.97e14): N without the untied input embedding (32,000 x 4,096), which
    # is looked up, not multiplied
    per_token = 6 * 6_607_343_616 + 12 * 32 * 32 * 128 * 2048
    assert sp.Rational(mfu["value"]) == sp.Rational(5 * 10**4 * per_token, 16 * 197 * 10**12)
    assert "6 N + 12 L H Q T" in mfu["definition"]
    over = run_cli("plan", "llama-2-7b", "--train", "--mesh", "X=16", "--strategy", "fsdp=X",
                   "--chip", "tpu-v5e", "--batch", "16", "--context", "2048", "--mfu", "1e5")
    assert over.returncode == 2
    assert "--mfu: 100000 tokens/s is an MFU of 135.99%, above the peak of 16 chips" \
        in over.stderr


def test_search_reports_its_progress_and_its_choice() -> None:
    done = run_cli("plan", "gpt2", "--train", "--search", "16", "--chip", "h100-sxm",
                   "--batch", "64", "--context", "1024", "--progress", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    search = out["search"]
    assert search["searched"] >= search["feasible"] > 0
    assert search["ranking"][0]["strategy"] == out["strategy"]
    assert "searched" in done.stderr and done.stderr.rstrip().endswith(
        f"{search['searched']}/{search['searched']} plans")


@pytest.mark.parametrize(("args", "message"), [
    (["--train", "--mesh", "X=8,Y=4", "--strategy", "fsdp=X"],
     "--strategy: mesh axis 'Y' has no strategy (replicate over it with dp=Y)"),
    (["--train", "--mesh", "X=8", "--strategy", "mp=X"], "--strategy: unknown strategy 'mp'"),
    (["--train", "--mesh", "X=8", "--strategy", "dp=X", "--batch", "12"],
     "--batch: a batch of 12 sequences does not split into 8 replicas x 1 microbatches"),
    (["--train", "--search", "16", "--mesh", "X=16"],
     "--strategy: a plan beside a search needs both --mesh and --strategy"),
    (["--train", "--search", "16", "--strategy", "dp=X"],
     "--mesh: a plan beside a search needs both --mesh and --strategy"),
    (["--train", "--mesh", "X=8"], "--strategy: a plan needs --mesh and --strategy"),
    (["--serve", "--mesh", "X=8", "--strategy", "fsdp=X"],
     "--strategy: zero3 shards training state"),
    (["--serve", "--mesh", "X=8", "--strategy", "tp=X", "--mfu", "1e5"],
     "--mfu: MFU is for a training throughput"),
    (["--serve", "--mesh", "X=8", "--strategy", "tp=X", "--latency-target", "20 GB"],
     "--latency-target"),
    (["--train", "--mesh", "X=8", "--strategy", "dp=X", "--efficiency", "compute=2"],
     "--efficiency: compute: an efficiency is a fraction in (0, 1], got '2'"),
    (["--train", "--mesh", "X=8", "--strategy", "pp=X", "--batch", "8",
      "--microbatches", "0"], "expected a positive whole number, got '0'"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = run_cli("plan", "llama-2-7b", "--chip", "h100-sxm", *args)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert message in done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_laws_cover_a_torus_and_a_scale_out_network_per_chip() -> None:
    out = plan_json("plan", "llama-2-7b", "--train", "--laws", "--context", "4096")
    laws = {(x["chip"], x.get("kind")): x for x in out["laws"]}  # type: ignore[union-attr]
    v5e, h100 = laws["tpu-v5e", "dp"], laws["h100-sxm", "fsdp"]
    assert "torus" in v5e["axis"] and "scale-out" in h100["axis"]
    c, w = sp.symbols("C W", positive=True)
    law = parse_expr(v5e["expression"])
    assert sp.Rational(v5e["value"]) == law.subs({c: 197 * 10**12, w: 45 * 10**9})
    # a DGX A100 node's 200 GB/s of InfiniBand is shared by its 8 GPUs
    a100 = laws["a100-80gb", "fsdp"]
    assert "scale-out" in a100["axis"] and sp.Rational(a100["bandwidth"]) == 25 * 10**9
    assert sp.cancel(parse_expr(a100["value"]) - parse_expr(a100["expression"]).subs(
        {c: 312 * 10**12, w: 25 * 10**9})) == 0  # the vendor's dense bf16
    assert laws["h100-pcie", None]["note"] == "chip 'h100-pcie' has no topology in the catalogue"


@pytest.mark.slow
def test_the_worked_example_prints_what_examples_holds() -> None:
    from tests.conftest import ROOT
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "plans.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "examples" / "plans.out").read_text("utf-8")
