"""Reverse-mode AD cost: forward work W(f) and backward work of a SymPy expression DAG
(checked by running it: ``symroof.topics.adcost_checks``).

>>> x, y = sizes("x y")
>>> c = reverse_cost(x*y + sp.exp(x))
>>> c.forward, c.backward, c.total
(3, 8, 11)
>>> dict(c.backward_by_kind)
{'add': 5, 'mul': 3}

An expression becomes a tape of elementary operations, one node per distinct subexpression
(equal subtrees are one node: a DAG). Each node is an add, sub, mul, div or a unary function
(exp, log, sqrt, sin, cos) and costs 1 forward operation, so W(f) is the number of nodes.
Numbers and subexpressions free of inputs are constants of the program and cost nothing.

The backward sweep follows the per-operation accounting of Baur and Strassen's proof: the
adjoints start at 0 (the output's at 1) and every node pushes its adjoint to its operands
by the recipe in ``ADJOINT`` (kept as data), e.g. for ``v = a * b``::

    t = vbar * b;  abar = abar + t;  u = vbar * a;  bbar = bbar + u

An instruction is emitted only for operands that are variables (an input or a node);
a constant operand needs no adjoint. The backward work is the number of emitted
instructions, and the program they form computes the gradient (``gradient``), so the
count is of a program that is checked to be right, not of a formula.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..core.errors import InputError
from ..core.parse import exact
from ..core.sizes import sizes  # noqa: F401  (used by the doctests)

BINARY = ("add", "sub", "mul", "div")
UNARY = ("exp", "log", "sqrt", "sin", "cos")
OPERATIONS = BINARY + UNARY
#: The operations whose backward cost the text itemises (the rest are derived the same way).
TEXT_KINDS = ("add", "sub", "mul", "div", "exp", "log")

_UNARY_FUNCS: dict[type, str] = {sp.exp: "exp", sp.log: "log", sp.sin: "sin", sp.cos: "cos"}


@dataclass(frozen=True)
class Instr:
    """One backward instruction: ``dest = op(args)``; emitted when an operand in ``needs``
    is a variable. Names: ``a``/``b`` the operands' values, ``out`` the node's value,
    ``bar`` its adjoint, ``a_bar``/``b_bar`` the operands' adjoints, ``t``/``u`` temporaries;
    a SymPy number is a literal."""

    op: str
    dest: str
    args: tuple[str | sp.Expr, ...]
    needs: frozenset[str]


def _i(op: str, dest: str, args: tuple[str | sp.Expr, ...], needs: str) -> Instr:
    return Instr(op, dest, args, frozenset(needs))


#: The reverse-mode recipe of every elementary operation (the text's accounting for
#: add/sub, mul, div, exp and log; sqrt, sin and cos by the same rule).
ADJOINT: Mapping[str, tuple[Instr, ...]] = {
    "add": (_i("add", "a_bar", ("a_bar", "bar"), "a"),
            _i("add", "b_bar", ("b_bar", "bar"), "b")),
    "sub": (_i("add", "a_bar", ("a_bar", "bar"), "a"),
            _i("sub", "b_bar", ("b_bar", "bar"), "b")),
    "mul": (_i("mul", "t", ("bar", "b"), "a"), _i("add", "a_bar", ("a_bar", "t"), "a"),
            _i("mul", "u", ("bar", "a"), "b"), _i("add", "b_bar", ("b_bar", "u"), "b")),
    # d(a/b)/db = -out/b: t = bar/b is shared by both updates (the text's count of 4)
    "div": (_i("div", "t", ("bar", "b"), "ab"), _i("add", "a_bar", ("a_bar", "t"), "a"),
            _i("mul", "u", ("t", "out"), "b"), _i("sub", "b_bar", ("b_bar", "u"), "b")),
    "exp": (_i("mul", "t", ("bar", "out"), "a"), _i("add", "a_bar", ("a_bar", "t"), "a")),
    "log": (_i("div", "t", ("bar", "a"), "a"), _i("add", "a_bar", ("a_bar", "t"), "a")),
    "sqrt": (_i("div", "t", ("bar", "out"), "a"), _i("mul", "u", ("t", sp.Rational(1, 2)), "a"),
             _i("add", "a_bar", ("a_bar", "u"), "a")),
    "sin": (_i("cos", "t", ("a",), "a"), _i("mul", "u", ("bar", "t"), "a"),
            _i("add", "a_bar", ("a_bar", "u"), "a")),
    "cos": (_i("sin", "t", ("a",), "a"), _i("mul", "u", ("bar", "t"), "a"),
            _i("sub", "a_bar", ("a_bar", "u"), "a")),
}


@dataclass(frozen=True)
class Ref:
    """An operand: ``node`` (index into the tape), ``input`` (a symbol) or ``const``."""

    kind: str
    value: Any

    @property
    def variable(self) -> bool:
        return self.kind != "const"


@dataclass(frozen=True)
class Node:
    """One elementary operation of the forward program."""

    op: str
    args: tuple[Ref, ...]


@dataclass(frozen=True)
class Tape:
    """The forward program of an expression: its inputs, nodes in topological order and
    the output operand."""

    expr: sp.Expr
    inputs: tuple[sp.Symbol, ...]
    nodes: tuple[Node, ...]
    output: Ref

    @property
    def work(self) -> int:
        """W(f): one operation per node."""
        return len(self.nodes)

    def by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(n.op for n in self.nodes).items()))


@dataclass(frozen=True)
class BackwardOp:
    """One emitted backward instruction: ``dest = op(args)`` on named slots."""

    op: str
    dest: str
    args: tuple[str | sp.Expr, ...]


@dataclass(frozen=True)
class ReverseCost:
    """Forward and backward operation counts of reverse-mode AD on one expression."""

    tape: Tape
    program: tuple[BackwardOp, ...]

    @property
    def forward(self) -> int:
        return self.tape.work

    @property
    def backward(self) -> int:
        return len(self.program)

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def forward_by_kind(self) -> Mapping[str, int]:
        return self.tape.by_kind()

    @property
    def backward_by_kind(self) -> Mapping[str, int]:
        return dict(sorted(Counter(s.op for s in self.program).items()))

    def passes(self, mode: str) -> int:
        """Sweeps for the whole gradient of a scalar f: reverse 1, forward one per input."""
        if mode == "reverse":
            return 1
        if mode == "forward":
            return len(self.tape.inputs)
        raise InputError(f"unknown AD mode {mode!r} (modes: forward, reverse)")


def recipe_bounds() -> tuple[int, int]:
    """The largest backward count of one operation and the largest forward+backward: the
    constants of the theorem's per-operation argument (4 and 5).

    >>> recipe_bounds()
    (4, 5)
    """
    worst = max(len(ADJOINT[k]) for k in OPERATIONS)
    return worst, worst + 1


def operation_cost(op: str, variables: str = "ab") -> tuple[int, int]:
    """(forward, backward) operations of one ``op`` whose operands named in ``variables``
    are variables (``"a"``, ``"b"`` or ``"ab"``).

    >>> operation_cost("mul"), operation_cost("div", "b")
    ((1, 4), (1, 3))
    """
    if op not in ADJOINT:
        raise InputError(f"no cost for operation {op!r} (known: {', '.join(OPERATIONS)})")
    given = frozenset(variables)
    return 1, sum(1 for ins in ADJOINT[op] if ins.needs & given)


def tape(expr: sp.Expr) -> Tape:
    """Linearise ``expr`` into elementary operations, one node per distinct subexpression."""
    e = exact(expr)
    builder = _Tape()
    out = builder.visit(e)
    inputs = tuple(sorted(e.free_symbols, key=str))
    return Tape(e, inputs, tuple(builder.nodes), out)


def reverse_cost(expr: sp.Expr) -> ReverseCost:
    """Forward work W(f) and the backward program of reverse-mode AD on ``expr``."""
    t = tape(expr)
    program: list[BackwardOp] = []
    for index in reversed(range(len(t.nodes))):
        node = t.nodes[index]
        slots = _slots(index, node)
        variables = {name for name, ref in zip("ab", node.args, strict=False) if ref.variable}
        for ins in ADJOINT[node.op]:
            if ins.needs & variables:
                program.append(BackwardOp(ins.op, slots.get(ins.dest, f"{ins.dest}{index}"),
                                    tuple(_slot(a, slots, index) for a in ins.args)))
    return ReverseCost(t, tuple(program))


class _Tape:
    """Builds the tape; equal subexpressions map to one operand."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.seen: dict[sp.Basic, Ref] = {}
        self.made: dict[Node, Ref] = {}

    def emit(self, op: str, *args: Ref) -> Ref:
        if not any(r.variable for r in args):  # constant folding: no work at run time
            return Ref("const", _fold(op, [r.value for r in args]))
        node = Node(op, args)
        if node not in self.made:
            self.nodes.append(node)
            self.made[node] = Ref("node", len(self.nodes) - 1)
        return self.made[node]

    def visit(self, e: sp.Basic) -> Ref:
        if e in self.seen:
            return self.seen[e]
        ref = self._build(e)
        self.seen[e] = ref
        return ref

    def _build(self, e: sp.Basic) -> Ref:
        if e.is_number:
            return Ref("const", e)
        if isinstance(e, sp.Symbol):
            return Ref("input", e)
        if isinstance(e, sp.Add):
            return self._add(e)
        if isinstance(e, sp.Mul):
            return self._mul(e)
        if isinstance(e, sp.Pow):
            return self._pow(e.base, e.exp)
        if type(e) in _UNARY_FUNCS and len(e.args) == 1:
            return self.emit(_UNARY_FUNCS[type(e)], self.visit(e.args[0]))
        raise InputError(f"no elementary-operation cost for {type(e).__name__}",
                         f"expression {e}")

    def _add(self, e: sp.Add) -> Ref:
        constant = sp.Add(*(t for t in e.args if t.is_number))  # folded into one operand
        plus: list[sp.Expr] = []
        minus: list[sp.Expr] = []
        for term in (t for t in e.args if not t.is_number):
            coeff, _ = term.as_coeff_Mul()
            (minus if coeff.is_negative else plus).append(-term if coeff.is_negative else term)
        if plus:
            acc = self.visit(plus[0])
            for term in plus[1:]:
                acc = self.emit("add", acc, self.visit(term))
            if constant != 0:
                acc = self.emit("add" if constant.is_positive else "sub", acc,
                                Ref("const", abs(constant)))
        else:  # c - a - b ...: start from the constant (0 if none)
            acc = self.emit("sub", Ref("const", constant), self.visit(minus[0]))
            minus = minus[1:]
        for term in minus:
            acc = self.emit("sub", acc, self.visit(term))
        return acc

    def _mul(self, e: sp.Mul) -> Ref:
        coeff, factors = e.as_coeff_mul()
        coeff = coeff * sp.Mul(*(f for f in factors if f.is_number))  # folded into one operand
        num: list[Ref] = [] if coeff == 1 else [Ref("const", coeff)]
        den: list[Ref] = []
        for f in (f for f in factors if not f.is_number):
            if isinstance(f, sp.Pow) and f.exp.could_extract_minus_sign():
                den.append(self.visit(sp.Pow(f.base, -f.exp)))
            else:
                num.append(self.visit(f))
        top = self._product(num) if num else Ref("const", sp.Integer(1))
        return self.emit("div", top, self._product(den)) if den else top

    def _product(self, refs: list[Ref]) -> Ref:
        acc = refs[0]
        for r in refs[1:]:
            acc = self.emit("mul", acc, r)
        return acc

    def _pow(self, base: sp.Expr, exp: sp.Expr) -> Ref:
        if exp.could_extract_minus_sign():
            return self.emit("div", Ref("const", sp.Integer(1)), self.visit(sp.Pow(base, -exp)))
        if exp.is_Integer:
            n = int(exp)
            if n % 2 == 0:
                half = self.visit(sp.Pow(base, n // 2))
                return self.emit("mul", half, half)
            return self.emit("mul", self.visit(sp.Pow(base, n - 1)), self.visit(base))
        if exp == sp.Rational(1, 2):
            return self.emit("sqrt", self.visit(base))
        # b**e = exp(e * log(b)), built by hand: SymPy would fold it back into a power
        return self.emit("exp", self.emit("mul", self.visit(exp), self.visit(sp.log(base))))


def _fold(op: str, values: list[sp.Expr]) -> sp.Expr:
    if op in BINARY:
        a, b = values
        return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    funcs = {"exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "sin": sp.sin, "cos": sp.cos}
    return funcs[op](values[0])


def ref_name(ref: Ref) -> str:
    return f"v{ref.value}" if ref.kind == "node" else f"x:{ref.value}"


def _slots(index: int, node: Node) -> dict[str, str | sp.Expr]:
    """Slot names of node ``index``'s recipe: values and adjoints of its operands."""
    out: dict[str, str | sp.Expr] = {"out": f"v{index}", "bar": f"bar:v{index}"}
    for name, ref in zip("ab", node.args, strict=False):
        if ref.kind == "const":
            out[name] = ref.value
        else:
            out[name] = ref_name(ref)
            out[f"{name}_bar"] = f"bar:{ref_name(ref)}"
    return out


def _slot(arg: str | sp.Expr, slots: Mapping[str, str | sp.Expr], index: int) -> str | sp.Expr:
    if not isinstance(arg, str):
        return arg
    if arg in slots:
        return slots[arg]
    return f"{arg}{index}"


