"""The command line's names for the parameters that errors name.

Below ``cli/`` an error names the parameter it is about: its place (``where="comm_bytes"``,
``"subs D"``, ``"matmul: LHS"``) and, in its message, other parameters in backquotes
(```between` needs `solve` SYMBOL``). :func:`flagged` writes those names as this table's
flags, once, where ``main`` prints the error, so the library never spells a flag.

>>> from symroof.core.errors import InputError
>>> str(flagged(InputError("`link` needs `comm_bytes`", "link")))
'--link: --link needs --comm-bytes'
>>> str(flagged(InputError("size D must be positive, got 0", "subs D")))
'--subs D: size D must be positive, got 0'
>>> str(flagged(InputError("must be positive", "nbytes"), "collective"))
'--bytes: must be positive'
"""

from __future__ import annotations

import re
from typing import TypeVar

from ..core.errors import SymroofError

# parameter -> flag, for every verb; a name missing here (a file, a claim id, a verb) is
# printed as it is
FLAGS: dict[str, str] = {name: "--" + name.replace("_", "-") for name in (
    # derive and collective
    "flops", "bytes", "comm_bytes", "link", "einsum", "dtypes", "out_dtype", "chip", "set",
    "catalog", "compute", "solve", "regime", "subs", "between", "serial", "mesh", "matmul",
    "scatter", "mlp", "phase", "choices", "topology", "array", "axes", "dim", "algorithm",
    "timeout", "comm_per", "total", "stationary", "hops",
    # optimize
    "minimize", "subject_to", "values", "constants", "at",
    # model and plan
    "fit", "dtype", "kv_dtype", "context", "tokens", "usable", "attention", "activations",
    "strategy", "batch", "microbatch", "efficiency", "price", "offload", "recompute", "search",
    "latency_target", "laws", "serve", "train", "causal", "interleave", "chunk", "piggyback",
    "overlap", "microbatches", "in_network", "generate", "mfu", "ttft", "tpot", "gamma",
    "acceptance", "rate",
    # speculate, report
    "draft", "cost_ratio", "lang", "out", "format")}

# the parameters a verb's flag spells another way
VERB_FLAGS: dict[str, dict[str, str]] = {
    "claims": {"text": "--from"},
    "collective": {"nbytes": "--bytes", "src": "--from", "dst": "--to", "with": "--with",
                   "stages": "--stages"},
    "optimize": {"variables": "--vars"},
    "plan": {"tokens_per_second": "--mfu", "optimizer": "--optimizer"},
    "speculate": {"alpha": "--acceptance", "gamma": "--draft-tokens"},
}

# a parameter at the start of a place: alone, before ': ', or before a word ('subs D')
_PLACE = re.compile(r"\A([a-z_]+)(?=\Z|: | [A-Za-z_])")
_NAMED = re.compile(r"`([a-z_]+)`")

E = TypeVar("E", bound=SymroofError)


def flagged(exc: E, verb: str | None = None) -> E:
    """``exc`` with the parameters of its place and message written as ``verb``'s flags."""
    flags = {**FLAGS, **VERB_FLAGS.get(verb or "", {})}
    where = exc.where
    if where is not None:
        where = _PLACE.sub(lambda m: flags.get(m.group(1), m.group(1)), where, count=1)
    message = _NAMED.sub(lambda m: flags.get(m.group(1), m.group()), exc.message)
    if where == exc.where and message == exc.message:
        return exc
    return type(exc)(message, where)
