"""Checks of the AD cost counter: run its backward program to get the gradient, and draw
random expression DAGs to test the bounds on.

>>> x, y = sizes("x y")
>>> value, grad = gradient(x / y, {x: 3, y: 2}, dps=15)
>>> value, grad[x], grad[y]
(1.50000000000000, 0.500000000000000, -0.750000000000000)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import mpmath
import sympy as sp

from ..core.errors import DerivationError, InputError
from ..core.sizes import sizes  # noqa: F401  (used by the doctests)
from .adcost import TEXT_KINDS, UNARY, Ref, ref_name, reverse_cost


def gradient(expr: sp.Expr, point: Mapping[sp.Symbol, Any], dps: int = 50,
             ) -> tuple[sp.Float, dict[sp.Symbol, sp.Float]]:
    """f and its gradient at ``point``, by running the forward tape and the backward
    program of ``reverse_cost`` in ``dps``-digit arithmetic.

    >>> x, y = sizes("x y")
    >>> value, grad = gradient(x / y, {x: 3, y: 2}, dps=15)
    >>> value, grad[x], grad[y]
    (1.50000000000000, 0.500000000000000, -0.750000000000000)
    """
    cost = reverse_cost(expr)
    t = cost.tape
    missing = [s for s in t.inputs if s not in point]
    if missing:
        raise InputError(f"no value for {missing[0]} in the point", f"gradient of {expr}")
    with mpmath.workdps(dps):
        env: dict[str, Any] = {}
        for s in t.inputs:
            env[f"x:{s}"] = _mp(point[s], dps)
            env[f"bar:x:{s}"] = mpmath.mpf(0)
        for i, node in enumerate(t.nodes):
            env[f"v{i}"] = _apply(node.op, [_value(r, env, dps) for r in node.args])
            env[f"bar:v{i}"] = mpmath.mpf(0)
        value = _value(t.output, env, dps)
        if t.output.kind != "const":
            env[f"bar:{ref_name(t.output)}"] = mpmath.mpf(1)
        for step in cost.program:
            args = [env[a] if isinstance(a, str) else _mp(a, dps) for a in step.args]
            env[step.dest] = _apply(step.op, args)
        return _float(value, dps), {s: _float(env[f"bar:x:{s}"], dps) for s in t.inputs}


def random_expression(rng: random.Random, symbols: Sequence[sp.Symbol], size: int,
                      kinds: Sequence[str] = TEXT_KINDS) -> sp.Expr:
    """A random expression of about ``size`` operations over ``symbols`` (for checks of
    the bounds); subexpressions are reused at random, so the result is a DAG."""
    if not symbols:
        raise InputError("random_expression needs at least one symbol")
    leaves: list[sp.Expr] = [*symbols, sp.Integer(2), sp.Rational(1, 3)]
    # draw the whole DAG first (the draws depend only on the pool's length), then build
    # only the nodes the result reaches: most of the pool is never used
    plan: list[tuple[str, int, int]] = []
    for _ in range(size):
        op = rng.choice(list(kinds))
        n = len(leaves) + len(plan)
        a = _draw(rng, n)
        b = _draw(rng, n) if op not in UNARY else -1
        plan.append((op, a, b))
    built: dict[int, sp.Expr] = dict(enumerate(leaves))

    def node(i: int) -> sp.Expr:
        if i not in built:
            op, a, b = plan[i - len(leaves)]
            x = node(a)
            if op in UNARY:
                built[i] = _unary(op, x)
            else:
                y = node(b)
                built[i] = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}[op]
        return built[i]

    return node(len(leaves) + len(plan) - 1) if plan else leaves[-1]


def _draw(rng: random.Random, n: int) -> int:
    """The index ``rng.choice`` picks from a sequence of length ``n`` (same draw)."""
    return rng.choice(range(n))


def _unary(op: str, a: sp.Expr) -> sp.Expr:
    # keep arguments of exp and log tame so values stay finite and logs real
    if op == "exp":
        return _call(sp.exp, a / (1 + a * a))
    if op == "log":
        return _call(sp.log, 1 + a * a)
    return {"sqrt": sp.sqrt(1 + a * a), "sin": sp.sin(a), "cos": sp.cos(a)}[op]


def _call(f: Any, arg: sp.Expr) -> sp.Expr:
    """``f(arg)``; evaluated only for a number (a symbolic argument here is a quotient or a
    sum of squares plus one, which exp and log leave as they are, after a costly look)."""
    return f(arg) if arg.is_number else f(arg, evaluate=False)


def _value(ref: Ref, env: Mapping[str, Any], dps: int) -> Any:
    if ref.kind == "const":
        return _mp(ref.value, dps)
    return env[ref_name(ref)]


def _float(value: Any, dps: int) -> sp.Float:
    return sp.Float(value, dps)


def _mp(value: Any, dps: int) -> Any:
    """A SymPy or Python number as an mpmath number (a few guard digits over ``dps``)."""
    return mpmath.mpf(sp.N(sp.sympify(value), dps + 10))


def _apply(op: str, args: list[Any]) -> Any:
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":
        return args[0] * args[1]
    if op == "div":
        return args[0] / args[1]
    funcs = {"exp": mpmath.exp, "log": mpmath.log, "sqrt": mpmath.sqrt, "sin": mpmath.sin,
             "cos": mpmath.cos}
    if op in funcs:
        return funcs[op](args[0])
    raise DerivationError(f"no evaluation rule for operation {op!r}")
