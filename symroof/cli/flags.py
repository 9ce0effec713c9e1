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
"""

from __future__ import annotations

import re
from typing import TypeVar

from ..core.errors import SymroofError

# parameter -> flag; a name missing here (a file, a claim id, a verb) is printed as it is
FLAGS: dict[str, str] = {
    # derive and collective
    "flops": "--flops", "bytes": "--bytes", "nbytes": "--bytes", "comm_bytes": "--comm-bytes",
    "link": "--link", "einsum": "--einsum", "dtypes": "--dtypes", "out_dtype": "--out-dtype",
    "chip": "--chip", "set": "--set", "catalog": "--catalog", "compute": "--compute",
    "solve": "--solve", "regime": "--regime", "subs": "--subs", "between": "--between",
    "serial": "--serial", "matmul": "--matmul", "scatter": "--scatter", "mlp": "--mlp",
    "phase": "--phase", "choices": "--choices", "topology": "--topology", "array": "--array",
    "axes": "--axes", "dim": "--dim", "algorithm": "--algorithm", "timeout": "--timeout",
    # optimize
    "minimize": "--minimize", "subject_to": "--subject-to", "variables": "--vars",
    "values": "--values", "constants": "--constants", "at": "--at",
    # model and plan
    "fit": "--fit", "dtype": "--dtype", "kv_dtype": "--kv-dtype", "context": "--context",
    "tokens": "--tokens", "usable": "--usable", "attention": "--attention",
    "activations": "--activations", "strategy": "--strategy", "batch": "--batch",
    "microbatch": "--microbatch", "efficiency": "--efficiency", "price": "--price",
    "offload": "--offload", "tokens_per_second": "--mfu",
    # speculate
    "acceptance": "--acceptance", "cost_ratio": "--cost-ratio",
    "draft_tokens": "--draft-tokens", "draft": "--draft",
    # report
    "lang": "--lang", "out": "--out", "format": "--format",
}

# a parameter at the start of a place: alone, before ': ', or before a word ('subs D')
_PLACE = re.compile(r"\A([a-z_]+)(?=\Z|: | [A-Za-z_])")
_NAMED = re.compile(r"`([a-z_]+)`")

E = TypeVar("E", bound=SymroofError)


def flagged(exc: E) -> E:
    """``exc`` with the parameters of its place and message written as flags."""
    where = exc.where
    if where is not None:
        where = _PLACE.sub(lambda m: FLAGS.get(m.group(1), m.group(1)), where, count=1)
    message = _NAMED.sub(lambda m: FLAGS.get(m.group(1), m.group()), exc.message)
    if where == exc.where and message == exc.message:
        return exc
    return type(exc)(message, where)
