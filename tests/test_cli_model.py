"""symroof model from the command line: JSON fields, tables, capacity, outside configs, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli


def strict(text: str) -> Any:
    def reject(name: str) -> Any:
        raise ValueError(f"not strict JSON: {name}")
    return json.loads(text, parse_constant=reject)


def ok_json(*args: str) -> Any:
    done = run_cli("model", *args, "--json")
    assert done.returncode == 0, done.stderr
    return strict(done.stdout)


def test_counts_of_a_bundled_model() -> None:
    data = ok_json("llama-2-7b")
    assert (data["params"], data["params_active"], data["params_embedding"]) == \
        ("6738415616", "6738415616", "262144000")
    assert data["params_value"] == 6_738_415_616.0
    assert data["kv_bytes_per_token"] == str(2 * 32 * 32 * 128 * 2)
    assert data["flops_per_token"] == "524288*T + 13214687232"
    assert data["flops_per_token_value"] is None
    at = ok_json("meta-llama/Llama-2-7b-hf", "--context", "1024")
    assert at["flops_per_token"] == str(13_751_558_144)
    assert at["training_flops_per_token"] == str(3 * 13_751_558_144)


def test_kv_dtype_changes_the_cache_only() -> None:
    data = ok_json("llama-3-8b", "--kv-dtype", "int8")
    assert data["kv_bytes_per_token"] == str(2 * 32 * 8 * 128 * 1)
    assert data["params"] == ok_json("llama-3-8b")["params"]


@pytest.mark.parametrize("batch", ["1", "64"])
def test_decode_step_json(batch: str) -> None:
    data = ok_json("llama-2-7b", "--decode", "--batch", batch, "--context", "1024",
                   "--chip", "a100-80gb")
    assert {r["bound"] for r in data["layers"]} == {"hbm"}
    assert set(data["layers"][0]) >= {"name", "flops", "bytes", "intensity", "bound",
                                      "t_lower"}
    step = data["step"]
    assert set(step) >= {"flops", "bytes", "t_lower", "t_upper", "bound"}
    assert int(step["flops"]) == int(batch) * 13_751_558_144
    assert step["bound"] == "hbm"
    assert sum(int(r["flops"]) * r["count"] for r in data["layers"]) == int(step["flops"])
    assert data["critical_batch"]["integer"] is None
    assert data["critical_batch"]["reason"].startswith("never compute-bound: hbm grows")
    assert data["decode_intensity"]["limit_t_to_oo"] == "1"  # N / K: 32 query, 32 KV heads


def test_decode_critical_batch_at_a_short_context() -> None:
    data = ok_json("llama-2-7b", "--decode", "--context", "128", "--chip", "a100-80gb")
    found = data["critical_batch"]["integer"]

    def bound(b: int) -> str:
        return ok_json("llama-2-7b", "--decode", "--context", "128", "--chip", "a100-80gb",
                       "--batch", str(b))["step"]["bound"]
    assert (bound(found - 1), bound(found)) == ("hbm", "compute")
    assert data["critical_batch"]["relation"].startswith("B > ")


def test_prefill_table_in_markdown() -> None:
    done = run_cli("model", "mixtral-8x7b", "--prefill", "--tokens", "2048", "--chip",
                   "h100-sxm", "--format", "md")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| op | x | FLOPs | bytes | intensity | bound | T_lower |" in lines
    assert any(line.startswith("| experts gate/up | 32 |") and "| compute |" in line
               for line in lines)
    assert any(line.startswith("| **step** |") for line in lines)


@pytest.mark.slow
def test_fit_json() -> None:
    data = ok_json("llama-2-7b", "--fit", "--chip", "a100-80gb", "--context", "4096")
    assert data["memory"]["weights"] == str(2 * 6_738_415_616)
    assert data["memory"]["kv_cache"] == str(4096 * 524_288)
    assert data["max_batch"]["integer"] == 30
    assert data["max_batch"]["relation"] == "B <= 1015063/32768"
    assert data["min_chips"]["integer"] == 1
    big = ok_json("llama-3-70b", "--fit", "--chip", "a100-80gb", "--context", "8192")
    assert big["max_batch"]["integer"] is None and "weights alone" in big["max_batch"]["reason"]
    assert big["min_chips"]["integer"] == 2
    two = ok_json("llama-3-70b", "--fit", "--chip", "a100-80gb", "--context", "8192",
                  "--chips", "2")
    assert two["max_batch"]["integer"] >= 1


def test_text_output_names_the_parts() -> None:
    done = run_cli("model", "gpt2-xl")
    assert done.returncode == 0
    assert "parameters" in done.stdout and "1557611200" in done.stdout
    assert "learned positions 1024" in done.stdout


TINY = {"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 768,
        "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2,
        "vocab_size": 1000, "tie_word_embeddings": True}


def test_a_config_json_from_outside_the_bundle(tmp_path: Path) -> None:
    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY))
    data = ok_json(str(path))
    D, F, L, N, K, H, V = 256, 768, 3, 8, 2, 32, 1000
    # qwen2: q, k, v with biases, o without; gated MLP; two RMSNorms a layer and a final one
    layer = D * N * H + 2 * D * K * H + N * H * D + (N * H + 2 * K * H) + 3 * D * F + 2 * D
    assert data["params"] == str(V * D + L * layer + D)
    assert data["model"] == "tiny"


@pytest.mark.parametrize(("content", "message"), [
    ({**TINY, "model_type": "bert"}, "model_type 'bert' is not modelled"),
    ({k: v for k, v in TINY.items() if k != "hidden_size"}, "missing field 'hidden_size'"),
    ({**TINY, "num_key_value_heads": 3}, "not a multiple of kv_heads 3"),
    ({**TINY, "vocab_size": -5}, "field 'vocab_size' must be a whole number"),
    ([1, 2], "a config must be a JSON object"),
])
def test_bad_configs_are_one_line_and_exit_2(tmp_path: Path, content: Any,
                                             message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(content))
    done = run_cli("model", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["llama-9b"], "unknown model 'llama-9b'"),
    (["no/such/config.json"], "no such config file"),
    (["llama-2-7b", "--decode", "--chip", "a100-80gb"], "--context: give the positions"),
    (["llama-2-7b", "--decode", "--context", "0"], "--context: a step attends at least"),
    (["llama-2-7b", "--dtype", "fp12"], "unknown dtype 'fp12'"),
    (["llama-2-7b", "--fit", "--chip", "tpu-v9"], "unknown chip 'tpu-v9'"),
])
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = run_cli("model", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_invalid_json_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    done = run_cli("model", str(path))
    assert done.returncode == 2 and "not valid JSON" in done.stderr


@pytest.mark.slow
def test_decode_on_a_mesh_and_fit_over_its_chips() -> None:
    data = ok_json("llama-2-70b", "--decode", "--batch", "16", "--context", "1024", "--chip",
                   "h100-sxm", "--mesh", "X=8", "--set", "nvlink.latency=2 us")
    assert data["mesh"] == "X=8"
    whole = ok_json("llama-2-70b", "--decode", "--batch", "16", "--context", "1024",
                    "--chip", "h100-sxm")
    assert data["step"]["flops_value"] < whole["step"]["flops_value"] / 7
    assert data["step"]["terms_value"]["tp over X (nvlink)"] > 0
    fit = ok_json("llama-3-70b", "--fit", "--chip", "h100-sxm", "--mesh", "X=4",
                  "--context", "8192")
    assert fit["chips"] == 4 and fit["max_batch"]["integer"] >= 1
    done = run_cli("model", "gpt2-xl", "--decode", "--context", "8", "--mesh", "X=2",
                   "--chip", "h100-sxm")
    assert done.returncode == 2 and "tp=2 does not divide its 25 heads" in done.stderr


@pytest.mark.slow
def test_list_and_symbolic() -> None:
    listed = ok_json("--list")
    names = {m["name"] for m in listed["models"]}
    assert {"llama-2-7b", "llama-3-70b", "gpt2-xl", "mistral-7b", "mixtral-8x7b"} <= names
    data = ok_json("llama-2-7b", "--symbolic")
    assert data["symbolic"]["kv_bytes_per_token"] == "4*H*K*L"
    assert "4*H*L*N*T" in data["symbolic"]["flops_per_token"]
    md = run_cli("model", "llama-2-7b", "--format", "md")
    assert md.returncode == 0 and "| parameters | $6738415616$ |" in md.stdout.splitlines()


@pytest.mark.slow
def test_latent_attention_counts_and_its_decode_step() -> None:
    data = ok_json("deepseek-ai/DeepSeek-V2-Lite")
    assert data["kv_bytes_per_token"] == str(27 * (512 + 64) * 2)
    done = run_cli("model", "deepseek-v2-lite", "--decode", "--context", "64")
    assert done.returncode == 0, done.stderr
    assert "q absorb (MoE layer)" in done.stdout and "v absorb (MoE layer)" in done.stdout
    held = run_cli("model", "deepseek-v2-lite", "--decode", "--context", "64",
                   "--activations", "on-chip")
    assert held.returncode == 2
    assert "activations kept on chip are not modelled for latent attention" in held.stderr


def readme_models() -> list[tuple[str, list[str]]]:
    """The ``$ symroof model ...`` commands of the guide's page on models (docs/models.md)
    with the lines they print."""
    from tests.conftest import ROOT
    section = (ROOT / "docs" / "models.md").read_text("utf-8")
    out = []
    for block in section.split("```console\n")[1:]:
        lines = block.split("```", 1)[0].rstrip("\n").split("\n")
        out.append((lines[0].removeprefix("$ "), lines[1:]))
    return out


def test_the_models_page_has_three_worked_commands() -> None:
    assert len(readme_models()) == 3


@pytest.mark.slow
@pytest.mark.parametrize(("command", "shown"), readme_models(), ids=lambda x: str(x)[:50])
def test_the_models_page_shows_what_the_commands_print(command: str, shown: list[str]) -> None:
    import shlex
    args = shlex.split(command)
    assert args[:2] == ["symroof", "model"]
    done = run_cli(*args[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n").split("\n") == shown
