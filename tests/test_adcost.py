"""Reverse-mode AD cost: exact counts derived by hand, and the Baur–Strassen bounds
(backward <= 4 W(f), total <= 5 W(f)) over random expression DAGs."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.core.sizes import sizes
from symroof.core.timelimits import TimeLimit, time_limit
from symroof.topics.adcost import (
    ADJOINT,
    OPERATIONS,
    TEXT_KINDS,
    operation_cost,
    recipe_bounds,
    reverse_cost,
    tape,
)
from symroof.topics.adcost_checks import gradient
from tests.conftest import examples

x, y, z = sizes("x y z")


@pytest.mark.parametrize(("expr", "forward", "backward"), [
    # the text's table: add/sub 2, mul 4, div 4, exp 2, log 2 backward operations
    (x + y, 1, 2), (x - y, 1, 2), (x * y, 1, 4), (x / y, 1, 4),
    (sp.exp(x), 1, 2), (sp.log(x), 1, 2),
    # constant operands need no adjoint: 3x -> t = bar*3, xbar += t
    (3 * x, 1, 2), (x + 1, 1, 1), (x / 2, 1, 2), (x - 1, 1, 1), (1 - x, 1, 1),
    # numbers fold into one constant operand: sqrt(2)/2 * x is one mul, x + y - 3 two ops
    (x / sp.sqrt(2), 1, 2), (x + y - 3, 2, 3),
    # 2/x: t = bar/x, u = t*out, xbar -= u
    (2 / x, 1, 3),
    # powers: x*x (both updates go to xbar), then x^3 = (x*x)*x, x^4 = (x*x)*(x*x)
    (x**2, 1, 4), (x**3, 2, 8), (x**4, 2, 8),
    # 1/x^2 = 1 / (x*x): mul (4) + div with a constant numerator (3)
    (x**-2, 2, 7),
    # -x - y = (0 - x) - y: the first sub has one variable operand
    (-x - y, 2, 3),
    # x^y = exp(y * log x): exp 2 + mul 4 + log 2
    (x**y, 3, 8),
    # x*y shared by both terms is one node: mul, exp, add
    (x * y + sp.exp(x * y), 3, 8),
    (sp.sin(x), 1, 3), (sp.sqrt(x), 1, 3),
    (x, 0, 0), (sp.Integer(7), 0, 0),
])
def test_exact_counts(expr: sp.Expr, forward: int, backward: int) -> None:
    c = reverse_cost(expr)
    assert (c.forward, c.backward) == (forward, backward)
    assert c.total == forward + backward


def test_counts_by_kind() -> None:
    assert dict(reverse_cost(x * y).backward_by_kind) == {"add": 2, "mul": 2}
    assert dict(reverse_cost(x / y).backward_by_kind) == {"add": 1, "div": 1, "mul": 1, "sub": 1}
    c = reverse_cost(x * y + sp.exp(x))
    assert dict(c.forward_by_kind) == {"add": 1, "exp": 1, "mul": 1}
    assert dict(c.backward_by_kind) == {"add": 5, "mul": 3}


def test_shared_subexpression_is_one_node() -> None:
    shared = sp.exp(x * y) * (x * y)
    t = tape(shared)
    assert [n.op for n in t.nodes] == ["mul", "exp", "mul"]
    assert t.work == 3


def test_recipe_table() -> None:
    assert {k: operation_cost(k) for k in TEXT_KINDS} == {
        "add": (1, 2), "sub": (1, 2), "mul": (1, 4), "div": (1, 4), "exp": (1, 2),
        "log": (1, 2)}
    assert operation_cost("div", "a") == (1, 2)
    assert operation_cost("div", "b") == (1, 3)
    assert recipe_bounds() == (4, 5)
    assert set(ADJOINT) == set(OPERATIONS)


def test_passes() -> None:
    c = reverse_cost(x * y + z)
    assert c.passes("reverse") == 1
    assert c.passes("forward") == 3
    with pytest.raises(InputError, match="unknown AD mode 'sideways'"):
        c.passes("sideways")


def test_unknown_operation_names_the_culprit() -> None:
    culprit = r"expression tan\(x\): no elementary-operation cost for tan"
    with pytest.raises(InputError, match=culprit):
        reverse_cost(x + sp.tan(x))
    with pytest.raises(InputError, match="no cost for operation 'pow'"):
        operation_cost("pow")


def close(a: sp.Expr, b: sp.Expr) -> bool:
    return bool(abs(a - b) <= sp.Float("1e-25"))


def test_gradient_exact_values() -> None:
    value, grad = gradient(x / y, {x: 3, y: 2}, dps=30)
    assert close(value, sp.Rational(3, 2))
    assert close(grad[x], sp.Rational(1, 2))
    assert close(grad[y], sp.Rational(-3, 4))
    value, grad = gradient(x * y + sp.exp(x * y), {x: 0, y: 5}, dps=30)
    assert close(value, 1)
    assert close(grad[x], 10)  # y + y exp(xy) at x = 0
    assert close(grad[y], 0)
    with pytest.raises(InputError, match="no value for y"):
        gradient(x * y, {x: 1})


# ---------------------------------------------------------------- random DAGs

SYMBOLS = (x, y, z)
LEAVES = st.sampled_from([x, y, z, sp.Integer(2), sp.Rational(1, 3)])


def _binary(op: str, a: sp.Expr, b: sp.Expr) -> sp.Expr:
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


def _extend(children: st.SearchStrategy[sp.Expr]) -> st.SearchStrategy[sp.Expr]:
    binary = st.builds(_binary, st.sampled_from(["add", "sub", "mul", "div"]), children, children)
    unary = st.builds(lambda f, a: f(a), st.sampled_from([sp.exp, sp.log]), children)
    # the same child used twice: a DAG, not a tree
    shared = st.builds(lambda op, a: _binary(op, a, sp.exp(a) if op == "add" else a * a + a),
                       st.sampled_from(["add", "sub", "mul", "div"]), children)
    return st.one_of(binary, unary, shared)


EXPRESSIONS = st.recursive(LEAVES, _extend, max_leaves=24)


@settings(max_examples=examples(300))
@given(EXPRESSIONS)
def test_baur_strassen_bounds(expr: sp.Expr) -> None:
    c = reverse_cost(expr)
    assume(c.forward > 0)
    assert c.backward <= 4 * c.forward
    assert c.total <= 5 * c.forward
    # every node is charged exactly its recipe for its variable operands
    expected = sum(operation_cost(n.op, "".join(name for name, r in zip("ab", n.args,
                                                                         strict=False)
                                               if r.variable))[1]
                   for n in c.tape.nodes)
    assert c.backward == expected


def _tame(f: sp.Function, a: sp.Expr) -> sp.Expr:
    # arguments that keep exp finite and log real at positive points; left unevaluated, as
    # log's own evaluation asks the sign of a large argument and can take minutes over it
    return (sp.exp(a / (1 + a * a), evaluate=False) if f == sp.exp else
            sp.log(1 + a * a, evaluate=False))


def _extend_tame(children: st.SearchStrategy[sp.Expr]) -> st.SearchStrategy[sp.Expr]:
    binary = st.builds(_binary, st.sampled_from(["add", "sub", "mul"]), children, children)
    unary = st.builds(_tame, st.sampled_from([sp.exp, sp.log]), children)
    ratio = st.builds(lambda a, b: a / (1 + b * b), children, children)
    return st.one_of(binary, unary, ratio)


@settings(max_examples=examples(60))
@given(st.recursive(LEAVES, _extend_tame, max_leaves=10))
def test_backward_program_computes_the_gradient(expr: sp.Expr) -> None:
    c = reverse_cost(expr)
    assume(c.forward > 0)
    point = {x: sp.Rational(7, 5), y: sp.Rational(3, 4), z: sp.Rational(11, 7)}
    value, grad = gradient(expr, point, dps=40)
    assert abs(value - sp.N(expr.subs(point), 40)) <= sp.Float("1e-30") * max(1, abs(value))
    try:  # the reference: SymPy's own derivative, which some nested exps take minutes over
        with time_limit(20, cpu=True):
            reference = {s: sp.N(sp.diff(expr, s).subs(point), 40) for s in c.tape.inputs}
    except TimeLimit:
        reject()  # no reference to compare with: not a counterexample
    for s in c.tape.inputs:
        exact = reference[s]
        assert abs(grad[s] - exact) <= sp.Float("1e-30") * max(1, abs(exact)), s
