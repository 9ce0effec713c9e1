"""Model configs from Hugging Face ``config.json`` files, and the bundled configs.

>>> cfg = model("meta-llama/Llama-2-7b-hf")
>>> cfg.name, cfg.layers, cfg.kv_heads, cfg.source["repo"]
('llama-2-7b', 32, 32, 'meta-llama/Llama-2-7b-hf')
>>> from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})
Traceback (most recent call last):
...
symroof.core.errors.InputError: config.json: missing field 'num_hidden_layers' (model_type llama)

A reader per ``model_type`` maps the fields of Transformers' config classes onto
``ModelConfig``, with the defaults those classes use when a field is absent (Llama's
``num_key_value_heads`` defaults to the head count, ``head_dim`` to hidden/heads). The
bundled configs (``symroof/models/configs/*.toml``) hold the fields of each model's
published ``config.json`` that symroof reads, with the repository they come from, and go
through the same readers.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import InputError, expect
from ..core.escape import printable
from .config import MLA, ModelConfig, MoE

Reader = Callable[["_Fields", str], ModelConfig]


class _Fields:
    """A config.json's fields, read with errors that name the field and the file."""

    def __init__(self, data: Mapping[str, Any], where: str, kind: str) -> None:
        self.data, self.where, self.kind = data, where, kind

    def get(self, key: str, default: Any = None) -> Any:
        """A field's value; ``null`` means the default, as Transformers reads it."""
        value = self.data.get(key)
        return default if value is None else value

    def whole(self, key: str, default: int | None = None) -> int:
        value = self.get(key, default)
        if value is None:
            raise InputError(f"missing field {key!r} (model_type {self.kind})", self.where)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"field {key!r} must be a whole number >= 0, got {value!r}",
                             self.where)
        if value >= 10**15:  # no model has a size near it; its counts would pass every limit
            raise InputError(f"field {key!r} must be below 10**15, got a number of "
                             f"{len(str(value))} digits", self.where)
        return value

    def optional(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.whole(key)

    def number(self, key: str, default: float) -> float:
        value = self.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputError(f"field {key!r} must be a number, got {value!r}", self.where)
        return float(value)

    def probability(self, key: str, default: float) -> float:
        """A dropout probability: a number from 0 to 1."""
        value = self.number(key, default)
        if not 0 <= value <= 1:  # NaN too
            raise InputError(f"field {key!r} must be a probability from 0 to 1, got "
                             f"{self.get(key, default)!r}", self.where)
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise InputError(f"field {key!r} must be true or false, got {value!r}", self.where)
        return value


def _llama_like(f: _Fields, name: str, *, qkv_bias: bool | None = None,
                moe: MoE | None = None, tied_default: bool = False) -> ModelConfig:
    hidden, heads = f.whole("hidden_size"), f.whole("num_attention_heads")
    if heads == 0 or (hidden % heads and f.data.get("head_dim") is None):
        raise InputError(f"hidden_size {hidden} is not a multiple of num_attention_heads "
                         f"{heads}; give head_dim", f.where)
    bias = f.bool("attention_bias", False) if qkv_bias is None else qkv_bias
    window = f.optional("sliding_window") if f.data.get("use_sliding_window", True) else None
    return ModelConfig(
        name, layers=f.whole("num_hidden_layers"), d_model=hidden,
        d_ff=f.whole("intermediate_size"), heads=heads,
        kv_heads=f.whole("num_key_value_heads", heads),
        head_dim=f.whole("head_dim", hidden // heads), vocab=f.whole("vocab_size"), mlp="gated",
        tied_embeddings=f.bool("tie_word_embeddings", tied_default), norm="rmsnorm",
        qkv_bias=bias, out_bias=bias if qkv_bias is None else False,
        mlp_bias=f.bool("mlp_bias", False), positions="rope", moe=moe, sliding_window=window,
        dropout=f.probability("attention_dropout", 0) > 0,
        context_length=f.whole("max_position_embeddings", 0))


def _llama(f: _Fields, name: str) -> ModelConfig:
    return _llama_like(f, name)


def _qwen2(f: _Fields, name: str) -> ModelConfig:
    return _llama_like(f, name, qkv_bias=True)


def _mixtral(f: _Fields, name: str) -> ModelConfig:
    moe = MoE(experts=f.whole("num_local_experts"), top_k=f.whole("num_experts_per_tok"),
              d_ff=f.whole("intermediate_size"))
    return _llama_like(f, name, moe=moe)


def _qwen2_moe(f: _Fields, name: str) -> ModelConfig:
    step = f.whole("decoder_sparse_step", 1)
    only = f.get("mlp_only_layers", [])
    if not isinstance(only, list) or not all(type(x) is int for x in only):
        raise InputError(f"field 'mlp_only_layers' must be a list of layer numbers, got "
                         f"{only!r:.60}", f.where)
    layers = f.whole("num_hidden_layers")
    if step != 1 or (only and list(only) != list(range(len(only)))):
        raise InputError("only MoE layers from the first dense ones on are modelled: "
                         "decoder_sparse_step must be 1 and mlp_only_layers a leading run",
                         f.where)
    shared = f.whole("shared_expert_intermediate_size", 0)
    moe = MoE(experts=f.whole("num_experts"), top_k=f.whole("num_experts_per_tok"),
              d_ff=f.whole("moe_intermediate_size"), shared=1 if shared else 0,
              shared_d_ff=shared, shared_gate=bool(shared), dense_layers=min(len(only), layers))
    return _llama_like(f, name, qkv_bias=True, moe=moe)


def _gpt2(f: _Fields, name: str) -> ModelConfig:
    hidden, heads = f.whole("n_embd"), f.whole("n_head")
    if heads == 0 or hidden % heads:
        raise InputError(f"n_embd {hidden} is not a multiple of n_head {heads}", f.where)
    return ModelConfig(
        name, layers=f.whole("n_layer"), d_model=hidden,
        d_ff=4 * hidden if f.data.get("n_inner") is None else f.whole("n_inner"),
        heads=heads, kv_heads=heads, head_dim=hidden // heads, vocab=f.whole("vocab_size"),
        mlp="plain", tied_embeddings=True, norm="layernorm", qkv_bias=True, out_bias=True,
        mlp_bias=True, positions="learned", max_positions=f.whole("n_positions"),
        dropout=any([f.probability(k, 0.1) > 0 for k in ("resid_pdrop", "attn_pdrop",
                                                           "embd_pdrop")]),
        context_length=f.whole("n_positions"))


def _deepseek_v2(f: _Fields, name: str) -> ModelConfig:
    if f.whole("moe_layer_freq", 1) != 1:
        raise InputError("only moe_layer_freq 1 is modelled (every layer after the dense "
                         "ones is a MoE layer)", f.where)
    if f.bool("attention_bias", False):
        raise InputError("attention biases of latent attention are not modelled "
                         "(attention_bias must be false)", f.where)
    heads, rope, nope = (f.whole("num_attention_heads"), f.whole("qk_rope_head_dim"),
                         f.whole("qk_nope_head_dim"))
    mla = MLA(kv_rank=f.whole("kv_lora_rank"), rope_dim=rope, nope_dim=nope,
              v_dim=f.whole("v_head_dim"), q_rank=f.optional("q_lora_rank") or 0)
    experts = f.whole("n_routed_experts")
    moe = None
    if experts:
        shared = f.whole("n_shared_experts", 0)
        width = f.whole("moe_intermediate_size")
        moe = MoE(experts=experts, top_k=f.whole("num_experts_per_tok"), d_ff=width,
                  shared=shared, shared_d_ff=width if shared else 0,
                  dense_layers=min(f.whole("first_k_dense_replace", 0),
                                   f.whole("num_hidden_layers")))
    return ModelConfig(
        name, layers=f.whole("num_hidden_layers"), d_model=f.whole("hidden_size"),
        d_ff=f.whole("intermediate_size"), heads=heads, kv_heads=heads, head_dim=nope + rope,
        vocab=f.whole("vocab_size"), mlp="gated",
        tied_embeddings=f.bool("tie_word_embeddings", False), norm="rmsnorm",
        positions="rope", moe=moe, mla=mla,
        context_length=f.whole("max_position_embeddings", 0))


READERS: dict[str, Reader] = {"llama": _llama, "mistral": _llama, "qwen2": _qwen2,
                              "mixtral": _mixtral, "qwen2_moe": _qwen2_moe, "gpt2": _gpt2,
                              "deepseek_v2": _deepseek_v2,
                              # V3's layers are V2's (latent attention, shared and routed
                              # experts); its router's sigmoid scores and their correction
                              # bias (E numbers a MoE layer) are not counted
                              "deepseek_v3": _deepseek_v2}


def from_hf(data: Mapping[str, Any], *, name: str | None = None, where: str = "config.json",
            source: Mapping[str, str] | None = None,
            aliases: tuple[str, ...] = ()) -> ModelConfig:
    """A ``ModelConfig`` from the fields of a Hugging Face ``config.json``."""
    if not isinstance(data, Mapping):
        raise InputError("a config must be a JSON object", where)
    kind = data.get("model_type")
    if kind is None:
        raise InputError("missing field 'model_type'", where)
    if not isinstance(kind, str):
        raise InputError(f"field 'model_type' must be a string, got {kind!r:.60}", where)
    if kind not in READERS:
        raise InputError(f"model_type {kind!r} is not modelled (known: "
                         f"{', '.join(sorted(READERS))})", where)
    label = " ".join(printable(name or str(data.get("_name_or_path") or kind)).split())
    try:
        cfg = READERS[kind](_Fields(data, where, str(kind)), label)
    except InputError as exc:
        if (exc.where or "").startswith(where):
            raise
        raise exc.at(where) from None
    return replace(cfg, source=dict(source or {}), aliases=aliases)


def load_config(path: str | Path) -> ModelConfig:
    """A config from a ``config.json`` file (or a bundled-style TOML file)."""
    file = Path(path)
    where = str(path)
    if not file.is_file():
        raise InputError("no such config file", where)
    try:
        text = file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", where) from None
    if file.suffix == ".toml":
        return _from_toml(text, where)
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Refused as exc:
        raise InputError(str(exc), where) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}", where) from None
    except ValueError:  # an integer past Python's 4300-digit limit
        raise InputError("a number with more than 4300 digits", where) from None
    except RecursionError:
        raise InputError("not a config this reads: nested too deeply", where) from None
    return from_hf(data, name=file.parent.name if file.name == "config.json" and
                   file.parent.name else file.stem, where=where, source={"file": where})


class _Refused(ValueError):
    """What strict JSON reading refuses (a repeated key, NaN, Infinity)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (Python's reader keeps the last).

    >>> _unique_keys([("a", 1), ("a", 2)])
    Traceback (most recent call last):
    ...
    symroof.models.hf._Refused: the key 'a' is given twice in one object
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _from_toml(text: str, where: str) -> ModelConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", where) from None
    for key in ("name", "config", "source"):
        if key not in data:
            raise InputError(f"missing table or key {key!r}", where)
    if not isinstance(data["source"], dict) or not isinstance(data["config"], dict):
        raise InputError("source and config are tables", where)
    source = {k: str(v) for k, v in data["source"].items()}
    aliases = data.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InputError(f"aliases must be a list of names, got {aliases!r:.60}", where)
    return from_hf(data["config"], name=str(data["name"]), where=where, source=source,
                   aliases=tuple(aliases))


@lru_cache(maxsize=1)
def bundled() -> dict[str, ModelConfig]:
    """The bundled configs by name."""
    folder = resources.files("symroof.models").joinpath("configs")
    out: dict[str, ModelConfig] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            cfg = _from_toml(entry.read_text("utf-8"), f"symroof/models/configs/{entry.name}")
            out[cfg.name] = cfg
    return out


def model(name: str) -> ModelConfig:
    """A bundled config by name or Hugging Face id, or a config file by path.

    >>> model("gpt2-xl").d_model
    1600
    """
    expect(name, str, "a model name such as 'llama-2-7b'", "model")
    configs = bundled()
    if name in configs:
        return configs[name]
    for cfg in configs.values():
        if name in cfg.aliases or name.lower() in (a.lower() for a in cfg.aliases):
            return cfg
    if name.endswith((".json", ".toml")) or ("/" in name and Path(name).exists()):
        return load_config(name)
    near = [n for n in configs if name.lower() in n or n in name.lower()]
    hint = f" (did you mean {', '.join(near)}?)" if near else ""
    raise InputError(f"unknown model {name!r}{hint}; bundled: {', '.join(configs)}; "
                     "or give a config.json path")
