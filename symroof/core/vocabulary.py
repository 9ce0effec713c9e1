"""The one JSON vocabulary of every verb: exact values, maps of them, steps, critical sizes.

>>> import sympy as sp
>>> exact("ridge", sp.Rational(9850, 41))
{'ridge': '9850/41', 'ridge_value': 240.2439024390244}
>>> exact_map("terms", {"hbm": sp.Rational(1, 4)})
{'terms': {'hbm': '1/4'}, 'terms_value': {'hbm': 0.25}}
>>> critical_json(None, None, None, "sequences", "never compute-bound")["relation"] is None
True

Rules (docs/json.md lists the keys): an exact value ``x`` is a string (its SymPy
text) with ``x_value`` beside it, a float or null when it is not a number; a map of exact
values ``x`` has ``x_value``, the same keys with floats; keys are snake_case; a missing
value is null, never "none"; every step carries ``flops``, ``bytes``, ``terms``,
``t_lower``, ``t_upper`` and ``bound``; a critical size is one object
``{relation, value, value_value, integer, unit, reason}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from .printer import number_value, text

GLOSSARY = {
    "x / x_value": "an exact value as text, and its float (null when not a number)",
    "flops": "floating-point operations of the step, per device",
    "bytes": "bytes the step moves to and from memory, per device",
    "terms": "named times of the step in seconds: compute, hbm, one per collective",
    "t_lower": "a lower bound on the step's time: with the overlap the verb states, or with "
               "each op's compute under its own memory traffic where it states none",
    "t_upper": "the step's time with nothing overlapping",
    "latency": "a step's time under its overlap rule, the time its text prints: t_lower, or "
               "t_upper under overlap none",
    "overlap": "the rule latency (a step's) or predicted (a training plan's) is under: op, "
               "phase or none",
    "bound": "the largest term's name, or undetermined while sizes are symbolic",
    "critical_batch": "{relation, value, value_value, integer, unit, reason}: the size "
                      "above which the step is compute-bound, or why there is none",
    "kv_cache": "bytes of the KV cache per device",
    "devices": "chips in the mesh, an integer",
    "collectives": "a step's collectives, one object each: the collective, the parallelism "
                   "kind it serves, its bytes (NCCL's size), how often per step, its time",
    "requests": "serving: time to first token, time per output token, request latency, tokens "
                "per second per request, requests per second (and per chip)",
    "stages": "a pipelined serving step's stages (first, middle, last), each its count, time "
              "under the overlap rule, send (the last's: a decode step's sampled tokens back "
              "to the first) and period; slowest_stage names the one whose period sets the "
              "throughput",
    "chunked_prefill": "serving with a chunked prefill (`chunk`): the chunks (tokens, "
                       "cached positions, each step's latency) and the prefill's time to "
                       "the first token; with a "
                       "pipeline, flow (pipelined: each chunk enters a stage once it has "
                       "left the stage before and the chunk before it has left that one; "
                       "serial: one after another), time_serial (the chunks' steps summed) "
                       "and each chunk's left (when it leaves the last stage)",
}


def exact(name: str, value: Any) -> dict[str, Any]:
    """``{name: text, name_value: float | None}``; both null for a missing value."""
    if value is None:
        return {name: None, f"{name}_value": None}
    expr = sp.sympify(value)
    return {name: text(expr), f"{name}_value": number_value(expr)}


def exact_map(name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: {key: text}, name_value: {key: float | None}}``."""
    pairs = {k: exact("v", v) for k, v in values.items()}
    return {name: {k: p["v"] for k, p in pairs.items()},
            f"{name}_value": {k: p["v_value"] for k, p in pairs.items()}}


def step_json(flops: Any, moved: Any, terms: Mapping[str, Any], t_lower: Any, t_upper: Any,
              bound: str) -> dict[str, Any]:
    """A step's fields, as every verb writes them."""
    return {**exact("flops", flops), **exact("bytes", moved), **exact_map("terms", terms),
            **exact("t_lower", t_lower), **exact("t_upper", t_upper), "bound": bound}


def critical_json(relation: str | None, value: Any, integer: int | None, unit: str,
                  reason: str = "") -> dict[str, Any]:
    """The one critical-size object."""
    return {"relation": relation, **exact("value", value), "integer": integer, "unit": unit,
            "reason": reason or None}
