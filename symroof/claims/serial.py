"""Derived values as exact text between a worker and the judge, read back by a whitelist.

>>> import sympy as sp
>>> B = sp.Symbol("B", positive=True)
>>> sent = dump(2*B + sp.floor(B/100))
>>> sent["srepr"][:50]
"Add(Mul(Integer(2), Symbol('B', positive=True)), f"
>>> load(sent) == 2*B + sp.floor(B/100)
True
>>> load({"srepr": "__import__('os')"})
Traceback (most recent call last):
...
symroof.core.errors.InputError: the derived value: '__import__' is not a SymPy constructor ...

A worker sends a claim's derived value as :func:`dump` makes it: SymPy's ``srepr`` of a
number, expression or relation, a law's outcome, or a label's text. The judge reads it with
:func:`load`, which walks Python's ``ast`` of the text and builds only the SymPy classes of
``CONSTRUCTORS`` from literals: no name lookup, no attribute, no call of anything else, so
nothing a derivation defines or patches reaches the judge's process.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, fields
from typing import Any

import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair

from ..core.choices import Choices, Tried
from ..core.errors import InputError
from .model import Law

MAX_TEXT = 1_000_000
MAX_DEPTH = 200
MAX_POWER = 10_000  # |exponent| of an integer power of a number the reader builds

CONSTRUCTORS: dict[str, Any] = {c.__name__: c for c in (
    sp.Integer, sp.Rational, sp.Float, sp.Symbol, sp.Add, sp.Mul, sp.Pow, sp.exp, sp.log,
    sp.Min, sp.Max, sp.Abs, sp.floor, sp.ceiling, sp.sign, sp.Mod, sp.frac, sp.Piecewise,
    ExprCondPair, sp.Equality, sp.Unequality, sp.StrictLessThan, sp.LessThan,
    sp.StrictGreaterThan, sp.GreaterThan, sp.And, sp.Or, sp.Not, sp.Tuple, sp.sin, sp.cos,
    sp.tan, sp.atan, sp.tanh, sp.Heaviside, sp.LambertW, sp.gamma, sp.binomial,
    sp.factorial, sp.harmonic, sp.erf)}
CONSTANTS: dict[str, Any] = {"pi": sp.pi, "E": sp.E, "oo": sp.oo, "zoo": sp.zoo,
                             "nan": sp.nan, "I": sp.I, "true": sp.true, "false": sp.false,
                             "EulerGamma": sp.EulerGamma}
_ASSUMPTIONS = frozenset({"positive", "negative", "nonnegative", "nonpositive", "integer",
                          "real", "finite", "nonzero", "zero", "rational", "even", "odd",
                          "prime", "commutative", "extended_real", "extended_positive",
                          "extended_nonnegative", "complex", "imaginary"})


MAX_ALTERNATIVES = 256  # values under other modelling choices, sent beside the exact one


def dump(value: Any) -> dict[str, Any]:
    """A derived value as the judge receives it (JSON-ready). A value tried under modelling
    choices (:class:`~symroof.core.choices.Tried`) is sent with each alternative's choices
    as plain fields and its value as text."""
    if isinstance(value, Tried):
        return {"tried": {"value": dump(value.value), "choices": asdict(value.choices),
                          "alternatives": [[asdict(c), dump(v)]
                                           for c, v in value.alternatives]}}
    if isinstance(value, Law):
        return {"law": bool(value.holds), "meaning": str(value.meaning),
                "shown": str(value.shown)}
    if isinstance(value, str):
        return {"label": value}
    if hasattr(value, "inequality"):
        value = value.inequality
    if isinstance(value, bool) or value is None:
        raise InputError(f"the derived value {value!r} is not a number, expression, "
                         "relation, law or label")
    expr = sp.sympify(value, strict=True)
    if not isinstance(expr, sp.Basic):
        raise InputError(f"the derived value is a {type(value).__name__}")
    return {"srepr": sp.srepr(expr)}


def load(data: Any) -> Any:
    """A derived value sent by :func:`dump`, built by the whitelist reader."""
    where = "the derived value"
    if not isinstance(data, dict):
        raise InputError("not a derived value", where)
    if set(data) == {"label"} and isinstance(data["label"], str):
        return data["label"]
    if set(data) == {"tried"}:
        return _tried(data["tried"], where)
    if set(data) == {"law", "meaning", "shown"} and isinstance(data["law"], bool):
        return Law(data["law"], str(data["meaning"]), str(data["shown"]))
    text = data.get("srepr") if set(data) == {"srepr"} else None
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise InputError("not a derived value (or one past the reader's size)", where)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise InputError("unreadable text", where) from None
    return _Reader(where).build(tree.body, 0)


def _tried(data: Any, where: str) -> Tried:
    """A value with its alternatives; each alternative's choices built by :class:`Choices`,
    which refuses an unknown field or value."""
    if not isinstance(data, dict) or set(data) != {"value", "choices", "alternatives"} \
            or not isinstance(data["alternatives"], list) \
            or len(data["alternatives"]) > MAX_ALTERNATIVES:
        raise InputError("not a value under modelling choices", where)
    alternatives = []
    for pair in data["alternatives"]:
        if not isinstance(pair, list) or len(pair) != 2:
            raise InputError("not a value under modelling choices", where)
        alternatives.append((_choices(pair[0], where), load(pair[1])))
    value = load(data["value"])
    if isinstance(value, Tried):
        raise InputError("a value under choices inside another", where)
    return Tried(value, _choices(data["choices"], where), tuple(alternatives))


def _choices(data: Any, where: str) -> Choices:
    names = {f.name for f in fields(Choices)}
    if not isinstance(data, dict) or not set(data) <= names or not all(
            v is None or (isinstance(v, str) and len(v) <= 200)
            or (isinstance(v, int) and not isinstance(v, bool)) for v in data.values()):
        raise InputError("not a set of modelling choices", where)
    return Choices(**data)


class _Reader:
    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, why: str) -> InputError:
        return InputError(why, self.where)

    def build(self, node: ast.AST, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail("nested too deeply")
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            raise self.fail(f"{node.id!r} is not a constant the judge reads")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.build(node.operand, depth + 1)
            if not (isinstance(inner, int | sp.Expr) and not isinstance(inner, bool)):
                raise self.fail("a minus sign before something that is not a number")
            return -inner
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | str):
                raise self.fail(f"the literal {node.value!r}")
            return node.value
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise self.fail(f"{type(node).__name__} is not a part of a SymPy expression")
        name = node.func.id
        if name not in CONSTRUCTORS:
            raise self.fail(f"{name!r} is not a SymPy constructor the judge reads")
        args = [self.build(a, depth + 1) for a in node.args]
        kwargs = {str(k.arg): self._keyword(name, k) for k in node.keywords}
        return self._make(name, args, kwargs)

    def _keyword(self, name: str, k: ast.keyword) -> Any:
        ok = (name == "Symbol" and k.arg in _ASSUMPTIONS) or (name == "Float" and
                                                               k.arg == "precision")
        if not ok or not isinstance(k.value, ast.Constant):
            raise self.fail(f"{name}({k.arg}=...) is not read")
        value = k.value.value
        if name == "Symbol" and not isinstance(value, bool):
            raise self.fail(f"Symbol assumption {k.arg} must be True or False")
        if name == "Float" and not (isinstance(value, int) and 1 <= value <= 4000):
            raise self.fail("Float precision out of range")
        return value

    def _make(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if name in ("Symbol", "Float"):
            if len(args) != 1 or not isinstance(args[0], str):
                raise self.fail(f"{name} takes one string")
            if name == "Symbol" and not args[0].isidentifier():
                raise self.fail(f"the symbol name {args[0]!r}")
        elif any(isinstance(a, str) for a in args):
            raise self.fail(f"{name} of a string")
        if name in ("Integer", "Rational") and not all(type(a) is int for a in args):
            raise self.fail(f"{name} takes integers")
        if name == "Pow" and len(args) == 2 and all(getattr(a, "is_number", False)
                                                    for a in args):
            base, power = args
            if power.is_Integer and abs(int(power)) > MAX_POWER and base not in (0, 1, -1):
                raise self.fail("a power past the reader's limits")
        try:
            return CONSTRUCTORS[name](*args, **kwargs)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise self.fail(f"{name}: {exc}") from None
