"""Claims that cannot fail: values a chapter's ``claims.py`` adds without any computation.

>>> found = restated('''
... import sympy as sp
... from symroof import chip, einsum
... from symroof.claims import definition
... gpus = 2048
... def claims(ch):
...     n = ch.given("n", 8)
...     rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
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

A claim whose value is built only from what ``claims.py`` itself writes down (its literals,
the inputs of the table read back with ``ch.given``, formulas of symbols it names) checks
nothing the engine derives: it is reported as a DEFINITION, with what it restates. The rule
follows each value back to where it comes from (by construction, not by a list of claims):
through names and their every assignment (also a loop's target, a tuple unpacked, an item
appended), operators, containers, subscripts, comprehensions and their filters, a chapter's
own ``ch.step``/``ch.define``/``quantity`` (which return what they are given), the functions
``claims.py`` defines itself (their bodies read with the arguments they are given), Python's
builtins, ``math`` and ``fractions``, SymPy's constructors and conversions (``sympify``,
``Rational``, ``Max``...), and any SymPy or NumPy arithmetic on plain numbers. A value is a
computation, never caught, as soon as one of its sources is a call into the engine (any
``symroof`` function but ``parse_quantity`` and ``symbol``/``sizes``, a ``ch`` method other
than the pass-throughs: a concept, a roofline, the catalogue), a NumPy object, SymPy algebra
on symbols (``diff``, ``expand``, ``limit``...) or another library's function, unless the
engine's values all cancel in its arithmetic (``5 + 0 * rl.ridge``). What the reading cannot
follow (``eval``, a class of claims.py that never reaches the engine, an unknown name) and a
number read from the environment or a file restate what they are given, unless an engine
value is passed to them. The source is read as text (Python's ``ast``), never run, so the
parent of a sealed run decides this itself. Marked values (``definition``, ``assumed``,
``measured``) are left as they are.

>>> for key, why in restated('''
... import numpy as np
... block = {"Q": "B S D, D E -> B S E", "softmax": "B S T -> B S T"}
... def claims(ch):
...     def contracts(spec):
...         operands, output = spec.split("->")
...         return bool(set(operands.replace(",", " ").split()) - set(output.split()))
...     kept = [s for s in block.values() if contracts(s)]
...     ch.add(n=len(kept), shape=str(np.broadcast_shapes((3, 1), (1, 4))))
... ''').items():
...     print(key, why)
n restates len(kept), made in claims.py from its own literals (block) through its own contracts
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

_NUMBERS = frozenset({"Integer", "Rational", "Float", "S", "int", "float", "Fraction"})
# calls that compute nothing the engine derives from what they are given: a literal read
# back as SymPy (sympify, parse_expr), the largest of literals, the length of a literal list
_PLAIN = frozenset({"sympify", "parse_expr", "exact", "exact_number", "Symbol", "symbol",
                    "max", "min", "Max", "Min", "len", "abs", "Abs", "round", "sum",
                    "sorted", "list", "tuple"})

# Python's builtins that only rearrange or count what they are given
_BUILTINS = frozenset({
    "int", "float", "complex", "str", "bool", "bytes", "round", "abs", "max", "min", "sum",
    "len", "sorted", "list", "tuple", "set", "frozenset", "dict", "range", "enumerate", "zip",
    "reversed", "any", "all", "divmod", "pow", "repr", "format", "chr", "ord", "hex", "bin",
    "oct", "iter", "next", "map", "filter", "slice"})
# builtins that read a container without keeping it: a mutable literal passed to one of
# them is not filled by it
_READERS = frozenset({"len", "sum", "max", "min", "sorted", "list", "tuple", "set",
                      "frozenset", "str", "repr", "any", "all", "enumerate", "zip",
                      "reversed", "iter", "dict", "bool", "abs", "round", "int", "float"})
# modules whose every function is arithmetic on what it is given
_ARITHMETIC_MODULES = frozenset({"math", "fractions", "decimal", "operator", "cmath",
                                 "random", "statistics", "numbers"})
# SymPy's constructors and conversions: a formula written down, not a computation on one
_SYMPY_WRITTEN = frozenset({
    "sympify", "S", "Integer", "Rational", "Float", "Number", "Symbol", "symbols", "Dummy",
    "Wild", "Function", "IndexedBase", "Indexed", "Idx", "MatrixSymbol", "Matrix",
    "ImmutableMatrix", "Tuple", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality",
    "StrictGreaterThan", "StrictLessThan", "GreaterThan", "LessThan", "Add", "Mul", "Pow",
    "Max", "Min", "Abs", "sqrt", "root", "N", "nsimplify", "parse_expr", "Piecewise", "Interval",
    "FiniteSet", "And", "Or", "Not", "true", "false"})
# SymPy names that make a symbol
_SYMPY_SYMBOLS = frozenset({"Symbol", "symbols", "Dummy", "Wild", "Function", "IndexedBase",
                            "Idx", "MatrixSymbol"})
# methods of a SymPy formula that write it otherwise, not compute with it
_FORMULA_METHODS = frozenset({"subs", "xreplace", "evalf", "n", "doit"})
# NumPy's arithmetic on numbers (anything else of NumPy, its arrays' layout and
# broadcasting, is a computation of NumPy's)
_NUMPY_ARITHMETIC = frozenset({
    "prod", "product", "sum", "multiply", "add", "subtract", "divide", "true_divide",
    "floor_divide", "power", "sqrt", "cbrt", "square", "floor", "ceil", "round", "rint",
    "trunc", "max", "min", "amax", "amin", "maximum", "minimum", "abs", "absolute", "log",
    "log2", "log10", "exp", "exp2", "mean", "cumsum", "cumprod", "dot", "matmul", "int8",
    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "longdouble", "reciprocal", "negative", "sign"})
# the standard library's modules that rearrange what they are given
_TRANSFORM_MODULES = frozenset({"itertools", "functools", "collections", "types", "dataclasses",
                                "string", "textwrap", "re", "json", "copy", "typing", "enum",
                                "__future__"})
# what reaches around the reading (code run from text, any module by name) or brings a
# value from outside (the environment, a file): the value is what it reads, not the engine's
_ESCAPES = frozenset({"importlib", "builtins", "sys", "os", "posix", "nt", "inspect", "ctypes",
                      "pickle", "marshal", "runpy", "subprocess", "code", "codeop", "shelve",
                      "io", "pathlib", "glob", "shutil", "tempfile", "csv", "tomllib",
                      "configparser", "urllib", "socket"})
# symroof's own helpers that return what they are given: a symbol named, a figure as
# claims.py prints it read back, the chapter's marks of a law over values
_SYMROOF_WRITTEN = frozenset({"symbol", "sizes", "parse_quantity", "quantity", "law",
                              "within", "exact", "exact_number", "parse_expr"})
_SYMROOF_SYMBOLS = frozenset({"symbol", "sizes"})
# a chapter's own calls that return one of their arguments: (position, keyword)
_PASSED = {"step": (3, "output"), "define": (2, "value"), "quantity": (0, "value")}


def restated(source: str, siblings: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{claim key: what it restates}`` for the ``ch.add(key=value)`` calls of ``source``
    whose value involves no computation. ``siblings`` are the other modules of the
    derivation's folder (``{"_chapter1": source}``): their functions are read as its own."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    modules: dict[str, ast.Module] = {}
    for name, text in (siblings or {}).items():
        try:
            modules[name] = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
    reader = _Flow(tree, modules)
    bound: dict[str, list[ast.expr]] | None = None  # the short forms' reading, when needed
    out: dict[str, str] = {}
    for call, scope in reader.adds():
        for key, value in _keywords(call):
            try:
                state = reader.value(value, scope)
            except RecursionError:
                continue
            if state is None:  # an engine value in it: does it cancel?
                cancelled = _Cancels(reader).restates(value, scope)
                if cancelled:
                    out[key] = cancelled
                continue
            if not isinstance(state, _Plain):
                continue
            bound = _flat_bindings(tree) if bound is None else bound
            out[key] = _Reading(bound).restates(value, 0) or _told(value, state)
    return out


def restated_folder(folder: Path) -> dict[str, str]:
    """:func:`restated` of a derivation folder's ``claims.py``, its sibling modules read
    as its own (an unreadable file: nothing found)."""
    try:
        source = (folder / "claims.py").read_text("utf-8")
        siblings = {p.stem: p.read_text("utf-8") for p in sorted(folder.glob("*.py"))
                    if p.name != "claims.py"}
    except (OSError, UnicodeDecodeError):
        return {}
    return restated(source, siblings)


def _told(e: ast.expr, state: _Plain) -> str:
    """What a value the plain reading found restates, when the short forms do not say it."""
    said = f"restates {_short(ast.unparse(e))}, made in claims.py from its own literals"
    if state.names:
        said += f" ({', '.join(sorted(state.names)[:4])})"
    if state.inputs:
        said += f" and the input{'s' if len(state.inputs) > 1 else ''} " + \
            ", ".join(sorted(state.inputs))
    if state.through:
        said += f" through its own {', '.join(sorted(state.through)[:4])}"
    if state.unread:
        said += f"; nothing the engine derives reaches it ({', '.join(sorted(state.unread)[:3])}" \
            " read as what it is given)"
    return said


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class _Plain:
    """A value made only of what claims.py writes: ``symbolic`` when a symbol it names is in
    it; the literal tables (``names``), inputs and own functions it came through."""

    symbolic: bool = False
    names: frozenset[str] = frozenset()
    inputs: frozenset[str] = frozenset()
    through: frozenset[str] = frozenset()
    unread: frozenset[str] = frozenset()  # what the reading cannot follow (eval, a class)

    def but(self, **changes: object) -> _Plain:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Ref:
    """What a name stands for when it is no value: a module, an imported name, a function
    of claims.py (with its scope), a builtin, the chapter."""

    kind: str  # "module", "import", "function", "builtin", "chapter"
    target: str = ""
    node: ast.AST | None = None
    scope: _Scope | None = None


_State = _Plain | _Ref | None  # None: a computation (or what the reading cannot follow)
_CHAPTER = _Ref("chapter")
_BOTTOM = _Plain()  # a name read while its own binding is read: the other bindings decide


def _join(states: list[_State]) -> _State:
    if not states:
        return _Plain()
    # os.environ in a value (os itself when it is mixed): what it holds comes from outside
    states = [_Plain(unread=frozenset({s.target})) if isinstance(s, _Ref) and (
        s.kind == "import" or (s.kind == "module" and len(states) > 1)) and
        s.target.partition(".")[0].partition(":")[0] in _ESCAPES else s for s in states]
    if any(s is None or isinstance(s, _Ref) for s in states):
        only = {s for s in states}
        return states[0] if len(only) == 1 and isinstance(states[0], _Ref) else None
    plains = [s for s in states if isinstance(s, _Plain)]
    return _Plain(any(p.symbolic for p in plains),
                  frozenset().union(*(p.names for p in plains)),
                  frozenset().union(*(p.inputs for p in plains)),
                  frozenset().union(*(p.through for p in plains)),
                  frozenset().union(*(p.unread for p in plains)))


def _unread(what: str, *states: _State) -> _State:
    """What the reading cannot follow: no engine source is in sight, so it restates what it
    is given, unless one of ``states`` (its arguments) is a computation."""
    got = _join([_Plain(unread=frozenset({what})), *states])
    return got if isinstance(got, _Plain) else None


@dataclass(eq=False)
class _Scope:
    """A module's or a function's names: every binding each gets, read lazily."""

    node: ast.AST
    parent: _Scope | None
    module: str  # "" for claims.py, else the sibling's name
    params: dict[str, _State] = field(default_factory=dict)
    bindings: dict[str, list[tuple[str, ast.AST]]] = field(default_factory=dict)
    escaped: dict[str, list[ast.Call]] = field(default_factory=dict)
    outer: set[str] = field(default_factory=set)  # global / nonlocal names

    def bind(self, name: str, how: str, node: ast.AST) -> None:
        self.bindings.setdefault(name, []).append((how, node))


def _body_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's own body, not those of the functions and lambdas it defines
    (their names and default values are the scope's)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend(n.decorator_list)
            stack.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.Lambda):
            stack.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.ClassDef):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _targets(t: ast.AST) -> Iterator[ast.Name]:
    if isinstance(t, ast.Name):
        yield t
    elif isinstance(t, ast.Tuple | ast.List):
        for x in t.elts:
            yield from _targets(x.value if isinstance(x, ast.Starred) else x)


class _Flow:
    """Where each value of claims.py comes from (see the module's docstring)."""

    def __init__(self, tree: ast.Module, modules: Mapping[str, ast.Module]) -> None:
        self.modules = {"": tree, **modules}
        self.scopes: dict[tuple[str, int], _Scope] = {}
        self.bodies: dict[int, list[ast.AST]] = {}
        self.roots = {name: self._scope(m, None, name) for name, m in self.modules.items()}
        self.calls: dict[tuple[object, ...], _State] = {}
        self.reading: set[tuple[_Scope, str]] = set()
        self.known: dict[tuple[_Scope, str], _State] = {}
        self.cycles = 0  # how often a name or a call was met while being read
        # where each function is called by name, with the scope of the call
        self.sites: dict[str, list[tuple[ast.Call, _Scope]]] = {}
        for root in self.roots.values():
            self._build(root)

    def _nodes(self, node: ast.AST) -> list[ast.AST]:
        """:func:`_body_nodes`, once per scope."""
        if id(node) not in self.bodies:
            self.bodies[id(node)] = list(_body_nodes(node))
        return self.bodies[id(node)]

    def _build(self, scope: _Scope) -> None:
        for n in self._nodes(scope.node):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                self.sites.setdefault(n.func.id, []).append((n, scope))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                self._build(self._scope(n, scope, scope.module))

    # -- scopes ----------------------------------------------------------------------
    def _scope(self, node: ast.AST, parent: _Scope | None, module: str) -> _Scope:
        key = (module, id(node))
        if key in self.scopes:
            return self.scopes[key]
        scope = _Scope(node, parent, module)
        self.scopes[key] = scope
        for n in self._nodes(node):
            self._collect(n, scope)
        return scope

    def _collect(self, n: ast.AST, scope: _Scope) -> None:
        if isinstance(n, ast.Global | ast.Nonlocal):
            scope.outer.update(n.names)
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                self._assign(t, n.value, scope)
        elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and \
                n.value is not None:
            self._assign(n.target, n.value, scope)
        elif isinstance(n, ast.For | ast.AsyncFor):
            for name in _targets(n.target):
                scope.bind(name.id, "element", n.iter)
        elif isinstance(n, ast.With | ast.AsyncWith):
            for item in n.items:
                if item.optional_vars is not None:
                    for name in _targets(item.optional_vars):
                        scope.bind(name.id, "element", item.context_expr)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            scope.bind(n.name, "opaque", n)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if not isinstance(n, ast.Lambda):
                scope.bind(n.name, "function", n)
        elif isinstance(n, ast.ClassDef):
            scope.bind(n.name, "class", n)
        elif isinstance(n, ast.Import):
            for alias in n.names:
                scope.bind(alias.asname or alias.name.partition(".")[0], "module",
                           ast.Constant(alias.name if alias.asname else
                                        alias.name.partition(".")[0]))
        elif isinstance(n, ast.ImportFrom):
            if any(alias.name == "*" for alias in n.names):
                scope.bind("*", "module", ast.Constant(n.module or ""))
            for alias in n.names:
                scope.bind(alias.asname or alias.name, "import",
                           ast.Constant(f"{n.module or ''}:{alias.name}"))
        elif isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                # a container filled in place: lst.append(x), d.update(...), s.add(x)
                for a in [*n.args, *(k.value for k in n.keywords)]:
                    scope.bind(f.value.id, "filled", a)
            for a in [*n.args, *(k.value for k in n.keywords)]:
                if isinstance(a, ast.Name):
                    scope.escaped.setdefault(a.id, []).append(n)

    def _assign(self, target: ast.AST, value: ast.expr, scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id, "value", value)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts) \
                    and not any(isinstance(x, ast.Starred) for x in [*target.elts, *value.elts]):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._assign(t, v, scope)
            else:
                for name in _targets(target):
                    scope.bind(name.id, "element", value)
        elif isinstance(target, ast.Subscript | ast.Attribute | ast.Starred):
            base = target.value
            while isinstance(base, ast.Subscript | ast.Attribute | ast.Starred):
                base = base.value
            if isinstance(base, ast.Name):  # d[k] = v, obj.x = v: d and obj hold v
                scope.bind(base.id, "filled", value)
                if isinstance(target, ast.Subscript):
                    scope.bind(base.id, "filled", target.slice)

    def adds(self) -> Iterator[tuple[ast.Call, _Scope]]:
        """Every ``X.add(...)`` call of claims.py with the scope it is made in; the scope's
        parameter that ``add`` is called on is the chapter."""
        yield from self._adds(self.roots[""])

    def _adds(self, scope: _Scope) -> Iterator[tuple[ast.Call, _Scope]]:
        aliases = {name for name, kinds in scope.bindings.items()  # add = ch.add
                   if any(how == "value" and _adds_by(node) for how, node in kinds)}
        for n in self._nodes(scope.node):
            if isinstance(n, ast.Call) and (_adds_by(n.func) or (
                    isinstance(n.func, ast.Name) and n.func.id in aliases)):
                yield n, scope
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = self._scope(n, scope, scope.module)
                chapter = {c.value.id for c in self._nodes(n) if isinstance(c, ast.Attribute)
                           and c.attr in ("add", "given", "step", "define")
                           and isinstance(c.value, ast.Name)} | \
                    {c.args[0].id for c in self._nodes(n) if _adds_by(c)  # getattr(ch, "add")
                     and isinstance(c, ast.Call) and isinstance(c.args[0], ast.Name)}
                for p in _params(n.args):
                    inner.params[p] = _CHAPTER if p in chapter else None
                for call, at in self.sites.get(n.name, []):  # a helper given values
                    if not any(isinstance(a, ast.Starred) for a in call.args):
                        self._given(n, call, at, inner)
                yield from self._adds(inner)

    def _given(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, at: _Scope,
               inner: _Scope) -> None:
        """The parameters of a function that adds claims, from what its calls pass: the
        join over every call (a parameter any call leaves out stays a computation)."""
        positional = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        passed = dict(zip(positional, call.args, strict=False))
        passed.update({k.arg: k.value for k in call.keywords if k.arg})
        for p, was in list(inner.params.items()):
            if was is _CHAPTER:
                continue
            if p not in passed:
                inner.params[p] = None
                continue
            got = self.value(passed[p], at)
            first = id(call) == id(self.sites[fn.name][0][0])
            inner.params[p] = got if first else _join([was, got])

    # -- names -----------------------------------------------------------------------
    def name(self, name: str, scope: _Scope) -> _State:
        fills: list[tuple[ast.expr, _Scope]] = []
        s: _Scope | None = scope
        while s is not None:
            kinds = s.bindings.get(name, [])
            fills += [(node, s) for how, node in kinds if how == "filled"
                      and isinstance(node, ast.expr)]
            if name not in s.outer and (name in s.params or
                                        any(how != "filled" for how, _ in kinds)):
                base = self._bound(name, s)
                key = (s, f"{name} filled")
                if isinstance(base, _Plain) and fills and key not in self.reading:
                    self.reading.add(key)  # a container filled in place
                    try:
                        return _join([base, *(self.value(node, at) for node, at in fills)])
                    finally:
                        self.reading.discard(key)
                return base
            s = s.parent
        if name in __builtins__ if isinstance(__builtins__, dict) else \
                hasattr(__builtins__, name):
            return _Ref("builtin", name)
        if any("*" in root.bindings for root in self.roots.values()):
            return None  # a name a star import may bring: it cannot be told
        return _unread(f"the name {name}")

    def _bound(self, name: str, scope: _Scope) -> _State:
        key = (scope, name)
        if key in self.known:
            return self.known[key]
        if key in self.reading:
            self.cycles += 1
            return _BOTTOM
        self.reading.add(key)
        cycles = self.cycles
        try:
            got = self._read(name, scope)
            if self.cycles == cycles:  # not read halfway through a cycle: final
                self.known[key] = got
            return got
        finally:
            self.reading.discard(key)

    def _read(self, name: str, scope: _Scope) -> _State:
        """A name's state: the join of its every binding in ``scope``."""
        states: list[_State] = []
        mutable = False
        for how, node in scope.bindings.get(name, []):
            if how == "module":
                states.append(_Ref("module", node.value))  # type: ignore[attr-defined]
            elif how == "import":
                states.append(self._imported(node.value))  # type: ignore[attr-defined]
            elif how == "function":
                states.append(_Ref("function", name, node, scope))
            elif how == "opaque":
                states.append(_unread(f"the name {name}"))
            elif how == "class":
                assert isinstance(node, ast.ClassDef)
                states.append(self._class(node, scope))
            elif how == "filled":
                continue  # read by name(), when the name is a value
            elif how in ("value", "element"):
                assert isinstance(node, ast.expr)
                got = self.value(node, scope)
                if how == "element" and isinstance(got, _Ref):
                    got = None
                states.append(got)
                mutable = mutable or (how == "value" and _mutable(node))
        if name in scope.params:
            states.append(scope.params[name])
        state = _join(states)
        if isinstance(state, _Plain) and mutable and any(
                not self._reader(call, scope) for call in scope.escaped.get(name, [])):
            return None  # a list of literals handed to a call that may fill it
        written = scope.bindings.get(name, [])
        if isinstance(state, _Plain) and written and all(
                how == "value" and _literal(node) for how, node in written):
            state = state.but(names=state.names | {name})  # a literal (or a table) named
        return state

    def _imported(self, where: str) -> _State:
        module, _, name = where.partition(":")
        if module in self.modules and module:
            root = self.roots[module]
            if name in root.bindings:
                return self._bound(name, root)
        return _Ref("import", where)

    def _reader(self, call: ast.Call, scope: _Scope) -> bool:
        """Whether a call only reads a container it is given (a builtin such as len, the
        chapter's add or step)."""
        if isinstance(call.func, ast.Attribute):
            return self.value(call.func.value, scope) is _CHAPTER
        f = self.value(call.func, scope)
        return isinstance(f, _Ref) and f.kind == "builtin" and f.target in _READERS

    # -- values ----------------------------------------------------------------------
    def value(self, e: ast.AST, scope: _Scope) -> _State:
        if isinstance(e, ast.Constant):
            return _Plain()
        if isinstance(e, ast.Name):
            return self.name(e.id, scope)
        if isinstance(e, ast.Attribute):
            base = self.value(e.value, scope)
            if isinstance(base, _Ref) and base.kind == "module" and base.target in self.modules:
                return self._imported(f"{base.target}:{e.attr}")  # a sibling's name
            if isinstance(base, _Ref) and base.kind in ("module", "import"):
                return _Ref("import", f"{base.target}.{e.attr}".replace(":", "."))
            if isinstance(base, _Ref):  # ch.values, a function's attribute
                return _unread(f"{ast.unparse(e)}")
            return base
        if isinstance(e, ast.Subscript):
            return _join([self.value(e.value, scope), self.value(e.slice, scope)])
        if isinstance(e, ast.Slice):
            return _join([self.value(x, scope) for x in (e.lower, e.upper, e.step)
                          if x is not None])
        if isinstance(e, ast.Starred):
            return self.value(e.value, scope)
        if isinstance(e, ast.BinOp):
            return _join([self.value(e.left, scope), self.value(e.right, scope)])
        if isinstance(e, ast.UnaryOp):
            return _join([self.value(e.operand, scope)])
        if isinstance(e, ast.BoolOp):
            return _join([self.value(x, scope) for x in e.values])
        if isinstance(e, ast.Compare):
            return _join([self.value(x, scope) for x in [e.left, *e.comparators]])
        if isinstance(e, ast.IfExp):
            return _join([self.value(x, scope) for x in (e.test, e.body, e.orelse)])
        if isinstance(e, ast.List | ast.Tuple | ast.Set):
            return _join([self.value(x, scope) for x in e.elts])
        if isinstance(e, ast.Dict):
            return _join([self.value(x, scope) for x in [*e.keys, *e.values] if x is not None])
        if isinstance(e, ast.JoinedStr):
            return _join([self.value(x, scope) for x in e.values])
        if isinstance(e, ast.FormattedValue):
            return _join([self.value(e.value, scope)])
        if isinstance(e, ast.NamedExpr):
            return self.value(e.value, scope)
        if isinstance(e, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(e, scope)
        if isinstance(e, ast.Lambda):
            return _Ref("function", "<lambda>", e, scope)
        if isinstance(e, ast.Call):
            return self._call(e, scope)
        return _unread(type(e).__name__)

    def _comprehension(self, e: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       scope: _Scope) -> _State:
        inner = _Scope(e, scope, scope.module)
        parts: list[_State] = []
        for gen in e.generators:
            it = self.value(gen.iter, inner)
            parts.append(it if not isinstance(it, _Ref) else None)
            for name in _targets(gen.target):
                inner.params[name.id] = it if not isinstance(it, _Ref) else None
            parts += [self.value(cond, inner) for cond in gen.ifs]
        results = [e.key, e.value] if isinstance(e, ast.DictComp) else [e.elt]
        parts += [self.value(x, inner) for x in results]
        return _join(parts)

    def _call(self, e: ast.Call, scope: _Scope) -> _State:
        f = e.func
        args = [*e.args, *(k.value for k in e.keywords)]
        if isinstance(f, ast.Attribute):
            receiver = self.value(f.value, scope)
            if receiver is _CHAPTER:
                if f.attr == "given":
                    name = e.args[0].value if e.args and isinstance(e.args[0], ast.Constant) \
                        else "?"
                    return _Plain(inputs=frozenset({str(name)}))
                passed = _passed(e, f.attr)
                return self.value(passed, scope) if passed is not None and \
                    f.attr in ("step", "define") else None
            if isinstance(receiver, _Plain):  # a method of a value claims.py wrote
                if receiver.symbolic and f.attr not in _FORMULA_METHODS:
                    return None  # SymPy algebra on a formula: a computation
                return _join([receiver, *(self.value(a, scope) for a in args)])
            if receiver is None:
                return None
        callee = self.value(f, scope)
        if callee is None:
            return None
        if isinstance(callee, _Plain):  # a value called: a class of claims.py, say
            return _join([callee, *(self.value(a, scope) for a in args)])
        if callee.kind == "function":
            return self._own(callee, e, scope)
        if callee.kind == "builtin" and callee.target == "getattr" and len(e.args) == 2 and \
                isinstance(e.args[1], ast.Constant) and isinstance(e.args[1].value, str) \
                and e.args[1].value.isidentifier():  # getattr(sp, "Integer"): sp.Integer
            return self.value(ast.Attribute(e.args[0], e.args[1].value, ast.Load()), scope)
        states = [self.value(a, scope) for a in args]
        if any(isinstance(s, _Ref) and s.kind == "function" for s in states) and \
                callee.kind == "builtin" and callee.target in ("map", "filter"):
            fn = states[0]
            assert isinstance(fn, _Ref)
            rest = _join(states[1:])
            return _join([rest, self._apply(fn, [rest])]) if isinstance(rest, _Plain) else None
        if callee.kind == "import" and callee.target.startswith("symroof") and \
                callee.target.rpartition(".")[2].rpartition(":")[2] == "parse_quantity":
            states = states[:1]  # the figure as printed; then its dimension, a name
        values = _join(states)
        if not isinstance(values, _Plain):
            return None
        if callee.kind == "builtin":
            return values if callee.target in _BUILTINS else \
                _unread(f"{callee.target}(...)", values)
        if callee.kind != "import":
            return _unread(ast.unparse(f), values)
        module, _, name = callee.target.replace(":", ".").rpartition(".")
        top = module.partition(".")[0]
        if top in _ARITHMETIC_MODULES or top in _TRANSFORM_MODULES:
            return values
        if top in _ESCAPES:
            return _unread(f"{module}.{name}", values)
        if top == "sympy":
            if name in _SYMPY_SYMBOLS:
                return values.but(symbolic=True)
            if name in ("sympify", "parse_expr", "S") and e.args and \
                    isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str) \
                    and any(c.isalpha() for c in e.args[0].value):
                return values.but(symbolic=True)
            if name in _SYMPY_WRITTEN or not values.symbolic:
                return values  # written down, or arithmetic on numbers
            return None
        if top == "numpy":
            return values if name in _NUMPY_ARITHMETIC and not values.symbolic else None
        if top == "symroof":
            if name in _SYMROOF_SYMBOLS:
                return values.but(symbolic=True)
            if name in ("definition", "assumed", "measured"):
                return None  # marked: left as it is
            if name == "quantity" or name in _SYMROOF_WRITTEN:
                return values
            return None
        return None  # another library's computation

    def _class(self, node: ast.ClassDef, scope: _Scope) -> _State:
        """A class of claims.py: a computation when its body reaches for the engine (or any
        library), else it holds only what it is given."""
        inner = _Scope(node, scope, scope.module)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id != node.name:
                got = self.name(n.id, inner)
                if got is None or (isinstance(got, _Ref) and (
                        got.kind == "chapter" or (got.kind in ("module", "import") and
                                                  got.target.partition(".")[0].partition(":")[0]
                                                  not in _ARITHMETIC_MODULES | _TRANSFORM_MODULES
                                                  ))):
                    return None
        return _unread(f"its own class {node.name}")

    def _own(self, fn: _Ref, e: ast.Call, scope: _Scope) -> _State:
        """A function of claims.py called: its returns, read with the arguments given."""
        states: list[_State] = [self.value(a, scope) for a in e.args]
        if any(isinstance(a, ast.Starred) for a in e.args) or \
                any(k.arg is None for k in e.keywords):
            return None
        keywords = {k.arg: self.value(k.value, scope) for k in e.keywords if k.arg}
        return self._apply(fn, states, keywords)

    def _apply(self, fn: _Ref, states: list[_State],
               keywords: Mapping[str, _State] | None = None) -> _State:
        node = fn.node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) \
                or fn.scope is None:
            return _unread(fn.target, *states)
        keywords = keywords or {}
        key = (id(node), tuple(states), tuple(sorted(keywords.items(), key=lambda x: x[0])))
        if key in self.calls:
            if self.calls[key] is _BOTTOM:
                self.cycles += 1
            return self.calls[key]
        self.calls[key] = _BOTTOM  # a recursive call: the other returns decide
        cycles = self.cycles
        params = _params(node.args)
        defaults = node.args.defaults
        bound: dict[str, _State] = {}
        positional = [*node.args.posonlyargs, *node.args.args]
        for i, p in enumerate(positional):
            if i < len(states):
                bound[p.arg] = states[i]
            elif p.arg in keywords:
                bound[p.arg] = keywords[p.arg]
            elif i >= len(positional) - len(defaults):
                bound[p.arg] = self.value(defaults[i - len(positional) + len(defaults)],
                                          fn.scope)
            else:
                bound[p.arg] = None
        for p, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
            bound[p.arg] = keywords.get(p.arg, self.value(d, fn.scope) if d else None)
        if node.args.vararg is not None:  # *rest: what is passed beyond the named ones
            bound[node.args.vararg.arg] = _join(list(states[len(positional):]))
        if node.args.kwarg is not None:
            bound[node.args.kwarg.arg] = _join([v for k, v in keywords.items()
                                                if k not in bound])
        for name in params:
            bound.setdefault(name, None)
        inner = _Scope(node, fn.scope, fn.scope.module, params=bound)
        if isinstance(node, ast.Lambda):
            result = self.value(node.body, inner)
        else:
            built = self._scope(node, fn.scope, fn.scope.module)  # its names, read once
            inner.bindings, inner.escaped, inner.outer = built.bindings, built.escaped, \
                built.outer
            returns = [n for n in self._nodes(node) if isinstance(n, ast.Return | ast.Yield
                                                                 | ast.YieldFrom)]
            result = _join([self.value(r.value, inner) if r.value is not None else _Plain()
                            for r in returns])
        if isinstance(result, _Plain) and fn.target != "<lambda>":
            result = result.but(through=result.through | {fn.target})
        if self.cycles == cycles:
            self.calls[key] = result
        else:
            del self.calls[key]
        return result


class _Cancels:
    """Whether a value with engine sources is arithmetic in which they all cancel
    (``5 + 0 * rl.ridge``, ``2048 * r / r``): each engine value is an unknown, the rest is
    evaluated exactly (literals, inputs, names bound once, ``+ - * / **``, ``ch.step``), and
    the value restates what is left when no unknown is. Anything else (a method, ``subs`` of
    an unknown, a string) leaves the value a computation."""

    def __init__(self, flow: _Flow) -> None:
        self.flow = flow
        self.leaves: dict[int, tuple[Any, str]] = {}
        self.written: dict[int, Any] = {}
        self.sp: Any = None

    def restates(self, e: ast.expr, scope: _Scope) -> str | None:
        if not self._worth(e, scope, 0):
            return None
        import sympy as sp  # only for a value whose engine sources may cancel
        self.sp = sp
        try:
            value = self._exact(e, scope, 0)
        except (TypeError, ValueError, ZeroDivisionError, ArithmeticError, RecursionError):
            return None
        if value is None or not self.leaves:
            return None
        unknowns = {leaf for leaf, _ in self.leaves.values()}
        if value.free_symbols & unknowns or value.has(sp.nan, sp.zoo):
            return None
        gone = sorted({said for _, said in self.leaves.values()})
        shown = "" if value.free_symbols & set(self.written.values()) else f" (= {value})"
        return f"restates {_short(ast.unparse(e))}, made in claims.py from its own " \
            f"literals: the engine's {', '.join(gone[:3])} cancel{'s' if len(gone) == 1 else ''}" \
            f" in it{shown}"

    def _worth(self, e: ast.expr, scope: _Scope, depth: int) -> bool:
        """A quick look before SymPy: only arithmetic with a zero or with one engine value
        met twice can cancel."""
        seen: dict[int, int] = {}
        zero = False
        stack: list[tuple[ast.AST, _Scope, int]] = [(e, scope, depth)]
        while stack:
            n, at, d = stack.pop()
            if d > 40:
                return False
            if isinstance(n, ast.Constant) and n.value == 0 and not isinstance(n.value, bool):
                zero = True
            elif isinstance(n, ast.Name):
                bound = self._single(n.id, at)
                if bound is not None:
                    if self.flow.value(bound[0], bound[1]) is None:  # an engine value
                        seen[id(bound[0])] = seen.get(id(bound[0]), 0) + 1
                    stack.append((bound[0], bound[1], d + 1))
            elif isinstance(n, ast.BinOp | ast.UnaryOp):
                stack.extend((c, at, d + 1) for c in ast.iter_child_nodes(n)
                             if isinstance(c, ast.expr))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    n.func.attr in ("step", "define"):
                passed = _passed(n, n.func.attr)
                if passed is not None:
                    stack.append((passed, at, d + 1))
        return zero or any(count > 1 for count in seen.values())

    def _single(self, name: str, scope: _Scope) -> tuple[ast.expr, _Scope] | None:
        """The one value a name is bound to, and its scope (None: bound otherwise)."""
        s: _Scope | None = scope
        while s is not None:
            if name in s.params and name not in s.bindings:
                return None
            if name in s.bindings and name not in s.outer:
                # what a method call does to it (r.subs(...)) leaves the object one
                kinds = [k for k in s.bindings[name] if k[0] != "filled"]
                if len(kinds) == 1 and kinds[0][0] == "value" and \
                        isinstance(kinds[0][1], ast.expr):
                    return kinds[0][1], s
                return None
            s = s.parent
        return None

    def _exact(self, e: ast.expr, scope: _Scope, depth: int) -> Any:
        sp = self.sp
        if depth > 40:
            return None
        if isinstance(e, ast.Constant):
            if isinstance(e.value, bool) or not isinstance(e.value, int | float):
                return None
            return sp.Integer(e.value) if isinstance(e.value, int) else \
                sp.Rational(repr(e.value))
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
            inner = self._exact(e.operand, scope, depth + 1)
            return None if inner is None else (-inner if isinstance(e.op, ast.USub) else inner)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Sub | ast.Mult
                                                   | ast.Div | ast.Pow):
            left = self._exact(e.left, scope, depth + 1)
            right = self._exact(e.right, scope, depth + 1)
            if left is None or right is None:
                return None
            return {ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
                    ast.Mult: lambda: left * right, ast.Div: lambda: left / right,
                    ast.Pow: lambda: left ** right}[type(e.op)]()
        state = self.flow.value(e, scope)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
                self.flow.value(e.func.value, scope) is _CHAPTER:
            if e.func.attr == "given" and e.args and isinstance(e.args[0], ast.Constant):
                return sp.Symbol(f"input {e.args[0].value!s}")
            passed = _passed(e, e.func.attr)
            if passed is not None and e.func.attr in ("step", "define"):
                return self._exact(passed, scope, depth + 1)
        if isinstance(e, ast.Name):
            bound = self._single(e.id, scope)
            if bound is not None:
                return self._exact(bound[0], bound[1], depth + 1)
            return None
        if isinstance(e, ast.Call) and isinstance(state, _Plain) and not state.symbolic and \
                not e.keywords and 1 <= len(e.args) <= 2:  # sp.Integer(3), Rational(1, 2)
            callee = self.flow.value(e.func, scope)
            if isinstance(callee, _Ref) and callee.target.replace(":", ".") in (
                    "sympy.Integer", "sympy.Rational", "sympy.S", "sympy.sympify"):
                parts = [self._exact(a, scope, depth + 1) for a in e.args]
                if any(p is None for p in parts):
                    return None
                return parts[0] if len(parts) == 1 else parts[0] / parts[1]
        if isinstance(state, _Plain):  # what claims.py writes otherwise: a constant of its own
            if id(e) not in self.written:
                self.written[id(e)] = sp.Dummy(f"written{len(self.written)}")
            return self.written[id(e)]
        if state is None and isinstance(e, ast.Call | ast.Attribute | ast.Subscript):
            if id(e) not in self.leaves:  # an engine value: an unknown
                self.leaves[id(e)] = (sp.Dummy(f"engine{len(self.leaves)}"),
                                      _short(ast.unparse(e)))
            return self.leaves[id(e)][0]
        return None


def _adds_by(f: ast.AST) -> bool:
    """Whether ``f`` is a chapter's add: ``ch.add`` or ``getattr(ch, "add")``."""
    if isinstance(f, ast.Attribute):
        return f.attr == "add" and isinstance(f.value, ast.Name)
    return isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and \
        f.func.id == "getattr" and len(f.args) == 2 and isinstance(f.args[0], ast.Name) and \
        isinstance(f.args[1], ast.Constant) and f.args[1].value == "add"


def _keywords(call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
    """The claims an add call makes, ``**{"key": value}`` and ``**dict(key=value)`` spelled
    out (a mapping it cannot spell out is left alone)."""
    for kw in call.keywords:
        if kw.arg is not None:
            yield kw.arg, kw.value
        elif isinstance(kw.value, ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in kw.value.keys):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                assert isinstance(k, ast.Constant)
                yield str(k.value), v
        elif isinstance(kw.value, ast.Call) and isinstance(kw.value.func, ast.Name) and \
                kw.value.func.id == "dict" and not kw.value.args:
            yield from _keywords(kw.value)


def _params(args: ast.arguments) -> list[str]:
    out = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    out += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return out


def _literal(node: ast.AST) -> bool:
    """Whether a value is written with literals and operators only (``2048``, ``512 *
    4096``, a table of literals)."""
    return all(isinstance(n, ast.Constant | ast.List | ast.Tuple | ast.Set | ast.Dict
                          | ast.BinOp | ast.UnaryOp | ast.operator | ast.unaryop | ast.Load)
               for n in ast.walk(node))


def _mutable(node: ast.AST) -> bool:
    return isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp
                      | ast.SetComp) or (isinstance(node, ast.Call) and isinstance(
                          node.func, ast.Name) and node.func.id in ("list", "dict", "set"))


def _flat_bindings(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every name's assigned values, over the whole file: the short forms' reading."""
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
    return bound


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
                said = f"restates [{', '.join(_plain(p) for p in parts if p is not None)}]"
                return said if any("the input" in p for p in parts if p is not None) \
                    else f"{said}, written in claims.py"
        return None




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
