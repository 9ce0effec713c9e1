"""Claims that cannot fail: values a chapter's ``claims.py`` adds without any computation.

>>> found = restated('''
... gpus = 2048
... def claims(ch):
...     n = ch.given("n", 8)
...     ch.add(a=gpus, b=n * 2, c=rl.ridge, d=sp.Rational(1, 2), e=definition(3),
...            f=sp.sympify("2*B"), g=max(gpus, 4), h=len([1, 2, 3]))
... ''')
>>> for key, why in found.items():
...     print(key, why)
a restates 2048, written in claims.py
b restates the input n, times 2
d restates 1/2, written in claims.py
f restates sympify('2*B'), written in claims.py
g restates max(2048, 4), written in claims.py
h restates len([1, 2, 3]), written in claims.py

A claim whose value is a literal of ``claims.py``, an input of the table read back with
``ch.given``, a name bound to one of these, or arithmetic on them (a sum of parts the text
states) checks nothing the engine derives: it is reported as a DEFINITION, with what it
restates. The source is read as text (Python's ``ast``), never run, so the parent of a sealed
run decides this itself. Marked values (``definition``, ``assumed``, ``measured``) are left
as they are.
"""

from __future__ import annotations

import ast
from fractions import Fraction

_NUMBERS = frozenset({"Integer", "Rational", "Float", "S", "int", "float", "Fraction"})
# calls that compute nothing the engine derives from what they are given: a literal read
# back as SymPy (sympify, parse_expr), the largest of literals, the length of a literal list
_PLAIN = frozenset({"sympify", "parse_expr", "exact", "exact_number", "Symbol", "symbol",
                    "max", "min", "Max", "Min", "len", "abs", "Abs", "round", "sum",
                    "sorted", "list", "tuple"})
_MARKS = frozenset({"definition", "assumed", "measured"})


def restated(source: str) -> dict[str, str]:
    """``{claim key: what it restates}`` for the ``ch.add(key=value)`` calls of ``source``
    whose value involves no computation."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With
                      | ast.NamedExpr | ast.comprehension):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [getattr(node, "target", None)]
            for t in targets:
                if isinstance(t, ast.Tuple | ast.List) and isinstance(node, ast.Assign) \
                        and isinstance(node.value, ast.Tuple | ast.List) \
                        and len(node.value.elts) == len(t.elts):  # a, b = 70e9, 1.4e12
                    for name, element in zip(t.elts, node.value.elts, strict=True):
                        if isinstance(name, ast.Name):
                            bound.setdefault(name.id, []).append(element)
                    continue
                if isinstance(t, ast.Tuple | ast.List):
                    for name in t.elts:
                        if isinstance(name, ast.Name):
                            bound.setdefault(name.id, []).append(ast.Name("<computed>"))
                    continue
                if isinstance(t, ast.Name):
                    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) \
                        and node.value is not None else None
                    bound.setdefault(t.id, []).append(value if value is not None
                                                      else ast.Name("<computed>"))
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add"):
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                why = _Reading(bound).restates(kw.value, 0)
                if why is not None:
                    out[kw.arg] = why
    return out


class _Reading:
    def __init__(self, bound: dict[str, list[ast.expr]]) -> None:
        self.bound = bound

    def restates(self, e: ast.expr, depth: int) -> str | None:
        """What ``e`` restates, or None when it computes something (or cannot be told)."""
        if depth > 20:
            return None
        if isinstance(e, ast.Constant) and isinstance(e.value, int | float | str) \
                and not isinstance(e.value, bool):
            return f"restates {e.value!r}, written in claims.py" if isinstance(e.value, str) \
                else f"restates {_number(e.value)}, written in claims.py"
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
            inner = self.restates(e.operand, depth + 1)
            return inner
        if isinstance(e, ast.Name):
            values = self.bound.get(e.id)
            if not values or len(values) != 1:
                return None
            return self.restates(values[0], depth + 1)
        if isinstance(e, ast.BinOp):
            left = self.restates(e.left, depth + 1)
            right = self.restates(e.right, depth + 1)
            if left is None or right is None:
                return None
            if "the input" not in left + right:  # literals of claims.py: as written there
                return f"restates {ast.unparse(e)}, written in claims.py"
            op = {ast.Add: "plus", ast.Sub: "minus", ast.Mult: "times", ast.Div: "over",
                  ast.Pow: "to the power"}.get(type(e.op), "with")
            return f"{left.removesuffix(', written in claims.py')}, {op} " \
                f"{_plain(right)}"
        if isinstance(e, ast.Call):
            name = e.func.attr if isinstance(e.func, ast.Attribute) else \
                e.func.id if isinstance(e.func, ast.Name) else ""
            if name == "given" and e.args and isinstance(e.args[0], ast.Constant) \
                    and isinstance(e.args[0].value, str):
                return f"restates the input {e.args[0].value}"
            passed = _passed(e, name)
            if passed is not None:  # a step, a definition or a quantity returns its value
                return self.restates(passed, depth + 1)
            if name == "parse_quantity" and e.args and isinstance(e.args[0], ast.Constant) \
                    and isinstance(e.args[0].value, str):  # a printed figure read back
                return f"restates {e.args[0].value!r}, written in claims.py"
            if name in _NUMBERS and e.args and not e.keywords:
                parts = [self.restates(a, depth + 1) for a in e.args]
                if all(isinstance(a, ast.Constant) for a in e.args) and \
                        all(isinstance(a.value, int) for a in e.args):  # type: ignore[attr-defined]
                    ints = [a.value for a in e.args]  # type: ignore[attr-defined]
                    value = Fraction(*ints) if len(ints) <= 2 and ints[-1] != 0 else None
                    if value is not None:
                        return f"restates {_number(value)}, written in claims.py"
                if all(p is not None for p in parts) and len(parts) == 1:
                    return parts[0]
                if len(parts) == 2 and parts[0] is not None and parts[1] is not None and \
                        "the input" in parts[0] + parts[1]:  # Rational(tokens, gpus)
                    return f"{parts[0].removesuffix(', written in claims.py')}, over " \
                        f"{_plain(parts[1])}"
                if all(p is not None for p in parts):
                    return f"restates {ast.unparse(e)}, written in claims.py"
            if name in _PLAIN and e.args and not e.keywords:
                parts = [self.restates(a, depth + 1) for a in e.args]
                if all(p is not None for p in parts):
                    said = ", ".join(_plain(p) for p in parts if p is not None)
                    return f"restates {name}({said}), written in claims.py"
        if isinstance(e, ast.List | ast.Tuple | ast.Set) and e.elts:
            parts = [self.restates(x, depth + 1) for x in e.elts]
            if all(p is not None for p in parts):
                return f"restates [{', '.join(_plain(p) for p in parts if p is not None)}]"
        return None


# calls that return one of their arguments as it is (its position, its keyword): a chapter's
# own step (its output) and definition (its value), a value said to be in a unit
_PASSED = {"step": (3, "output"), "define": (2, "value"), "quantity": (0, "value")}


def _passed(e: ast.Call, name: str) -> ast.expr | None:
    """The argument a call of ``_PASSED`` returns, or None."""
    if name not in _PASSED:
        return None
    at, keyword = _PASSED[name]
    if len(e.args) > at:
        return e.args[at]
    return next((kw.value for kw in e.keywords if kw.arg == keyword), None)


def _number(x: object) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    return repr(x)


def _plain(why: str) -> str:
    return why.removeprefix("restates ").removesuffix(", written in claims.py")
