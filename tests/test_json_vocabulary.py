"""Every verb's --json speaks the one vocabulary of ``symroof.core.vocabulary`` (the glossary
of docs/json.md): an exact ``x`` as text beside ``x_value``, snake_case keys, null not "none",
one critical-batch object, and every step with its six fields."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from symroof.core.vocabulary import GLOSSARY
from tests.conftest import ROOT, run_cli

# maps whose keys are names a user or a table gives (term labels, figures, substitutions)
LABELS = {"terms", "terms_value", "t_comms", "t_comms_value", "values", "bytes_per_link",
          "phases", "figures", "bound_by_phase", "params_parts", "source", "assumptions",
          "symbolic", "constants", "at", "solution", "solution_value", "config", "exponents",
          "exponents_value"}
STEP = {"flops", "bytes", "terms", "t_lower", "t_upper", "bound"}
CRITICAL = {"relation", "value", "value_value", "integer", "unit", "reason"}
SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")

VERBS = [
    ["derive", "--einsum", "B D, D F -> B F", "--dtypes", "bf16", "--chip", "tpu-v5e",
     "--solve", "B"],
    ["collective", "allreduce", "--bytes", "1e9", "--axes", "X", "--mesh", "X=8", "--chip",
     "h100-sxm"],
    ["collective", "send", "--bytes", "9e8", "--axes", "XY", "--mesh", "X=4,Y=4", "--chip",
     "tpu-v5e", "--from", "0,0", "--to", "3,1"],
    ["model", "llama-2-7b"],
    ["model", "--list"],
    ["model", "llama-2-7b", "--decode", "--context", "128", "--chip", "a100-80gb"],
    ["model", "llama-2-7b", "--prefill", "--tokens", "512", "--mesh", "X=8", "--chip",
     "h100-sxm"],
    ["model", "llama-3-70b", "--fit", "--chip", "h100-sxm", "--context", "8192"],
    ["plan", "llama-2-7b", "--train", "--mesh", "X=16,Y=16", "--strategy", "fsdp=X,tp=Y",
     "--chip", "tpu-v5e", "--batch", "256", "--context", "4096"],
    ["plan", "mixtral-8x7b", "--serve", "--mesh", "X=8", "--strategy", "ep=X", "--chip",
     "h100-sxm", "--batch", "64"],
    ["plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2", "--strategy", "pp=X,tp=Y",
     "--chip", "h100-sxm", "--batch", "16"],
    ["plan", "llama-2-7b", "--serve", "--mesh", "X=4,Y=2", "--strategy", "pp=X,tp=Y",
     "--chip", "h100-sxm", "--batch", "16", "--context", "1024", "--chunk", "256"],
    ["plan", "llama-2-7b", "--train", "--laws", "--context", "4096"],
    ["plan", "llama-2-7b", "--serve", "--search", "2", "--chip", "h100-sxm", "--context",
     "1024", "--ttft", "1s", "--tpot", "20ms"],
    ["plan", "llama-2-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm", "--batch", "16",
     "--draft", "llama-2-7b", "--gamma", "4", "--acceptance", "0.8"],
    ["chips"],
    ["optimize", "--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D = C",
     "--vars", "N,D", "--values", "alpha=0.34,beta=0.28"],
]


def walk(node: Any, path: str, found: list[str]) -> None:
    if isinstance(node, list):
        for i, x in enumerate(node):
            walk(x, f"{path}[{i}]", found)
        return
    if isinstance(node, str):
        # a modelling choice's value names an option ("checkpoints": "none" is the policy
        # that recomputes nothing), never an absent value
        if node.strip().lower() == "none" and ".choices." not in path:
            found.append(f"{path}: the string {node!r} where null is meant")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        where = f"{path}.{key}"
        if not SNAKE.match(key):
            found.append(f"{where}: not a snake_case key")
        if key.endswith(("_values", "_float")):
            found.append(f"{where}: the one suffix is _value")
        if f"{key}_value" in node and not isinstance(value, dict):
            if not (value is None or isinstance(value, str)):
                found.append(f"{where}: an exact value is text, got {value!r}")
            twin = node[f"{key}_value"]
            if not (twin is None or isinstance(twin, float)):
                found.append(f"{where}_value: a float or null, got {twin!r}")
        if key == "critical_batch" and set(value) != CRITICAL:
            found.append(f"{where}: keys {sorted(value)}")
        if key in ("step", "prefill", "decode", "train") and isinstance(value, dict) \
                and not set(value) >= STEP:
            found.append(f"{where}: missing {sorted(STEP - set(value))}")
        if key == "devices" and not isinstance(value, int):
            found.append(f"{where}: a device count is an integer")
        if key not in LABELS:
            walk(value, where, found)
        else:
            for inner in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(inner, (dict, list)):
                    walk(inner, where, found)


@pytest.mark.parametrize("args", VERBS, ids=lambda a: " ".join(a[:3]))
def test_every_verb_speaks_the_glossary(args: list[str]) -> None:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    found: list[str] = []
    walk(json.loads(done.stdout), "$", found)
    assert not found, "\n".join(found)


def test_the_checker_sees_each_rule_broken() -> None:
    found: list[str] = []
    walk({"Bad Key": 1, "x": 3, "x_value": 3.0, "memory_values": {}, "r": "none",
          "critical_batch": {"relation": None}, "step": {"flops": "1"}, "devices": "8"},
         "$", found)
    assert len(found) == 7, found


def test_the_glossary_page_lists_the_vocabulary() -> None:
    glossary = (ROOT / "docs" / "json.md").read_text("utf-8")
    for key in GLOSSARY:
        assert f"`{key}`" in glossary, key
