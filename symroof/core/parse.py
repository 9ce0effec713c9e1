"""Safe formula parsing: Python's ``ast`` with a whitelist, built into exact SymPy.

>>> parse_expr("B*D*F / (B*D + D*F + B*F)")
B*D*F/(B*D + B*F + D*F)
>>> parse_expr("0.34")
17/50

Strings from the command line or from data files never reach ``eval`` or ``sympify``:
only numbers, names, the arithmetic operators and a few named functions are accepted.
Every name becomes a positive symbol. Decimal literals become exact rationals.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
import unicodedata
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from .errors import InputError

MAX_LENGTH = 2000
MAX_DEPTH = 40
MAX_EXPONENT = 1000
MAX_DIGITS = 400

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# names SymPy or a reader would take for a number, never a size
NOT_SIZES = frozenset({"nan", "NaN", "inf", "Inf", "infinity", "Infinity", "zoo"})
# names the engine gives its own symbols, which a size of the user's must not take: a link's
# per-hop latency alpha_<link>, a term's time T_<term>, the expansion variable of a regime
ENGINE_PREFIXES = {"alpha_": "the per-hop latency of a link (alpha_<link>)",
                   "T_": "the time of a roofline term (T_<term>)"}
ENGINE_NAMES = {"epsilon": "the expansion variable of a regime"}

FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {
    "sqrt": sp.sqrt,
    "exp": sp.exp,
    "log": sp.log,
    "ln": sp.log,
    "Max": sp.Max,
    "max": sp.Max,
    "Min": sp.Min,
    "min": sp.Min,
    "floor": sp.floor,
    "ceil": sp.ceiling,
    "ceiling": sp.ceiling,
    "Abs": sp.Abs,
    "abs": sp.Abs,
}
CONSTANTS: dict[str, sp.Expr] = {"pi": sp.pi, "oo": sp.oo}
_ARITY = {"sqrt": 1, "exp": 1, "log": (1, 2), "ln": 1, "floor": 1, "ceil": 1, "ceiling": 1,
          "Abs": 1, "abs": 1}


def symbol(name: str) -> sp.Symbol:
    """The positive symbol every formula uses for ``name``.

    >>> symbol("B").is_positive
    True
    """
    return sp.Symbol(name, positive=True)


def engine_name(name: str) -> str | None:
    """What the engine means by ``name`` when it is one of its own symbols, else None.

    >>> engine_name("alpha_nvlink"), engine_name("B")
    ('the per-hop latency of a link (alpha_<link>)', None)
    """
    if name in ENGINE_NAMES:
        return ENGINE_NAMES[name]
    return next((what for prefix, what in ENGINE_PREFIXES.items()
                 if name.startswith(prefix)), None)


def user_sizes(expr: sp.Basic, where: str | None = None) -> sp.Basic:
    """``expr``, when none of its symbols takes a name of the engine's own symbols.

    >>> user_sizes(parse_expr("2*P"))
    2*P
    >>> user_sizes(parse_expr("alpha_ici*P"), "bytes")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: bytes: the name 'alpha_ici' is the engine's own, ...
    """
    for s in sorted(expr.free_symbols, key=str):
        what = engine_name(str(s))
        if what is not None:
            raise InputError(f"the name {str(s)!r} is the engine's own, {what}; give the "
                             "size another name", where)
    return expr


def size_name(name: object, where: str | None = None) -> str:
    """``name`` when a formula would read it as a size: letters, digits and '_' from a letter
    on, and no constant, function or keyword (:func:`user_sizes` also keeps the names of the
    engine's own symbols).

    >>> size_name("d_model")
    'd_model'
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"{name!r:.60} is not a name (letters, digits and '_', from a letter "
                         "on)", where)
    if keyword.iskeyword(name):
        raise InputError(f"{name!r} is a Python keyword, which a formula cannot use as a name",
                         where)
    if name in NOT_SIZES or name in CONSTANTS or name in FUNCTIONS:
        raise InputError(f"the name {name!r} is not a size", where)
    return name


def parse_expr(text: str, *, where: str | None = None,
               symbols: dict[str, sp.Expr] | None = None) -> sp.Expr:
    """Parse an arithmetic formula into an exact SymPy expression.

    >>> parse_expr("2*N - 1")
    2*N - 1

    ``symbols`` maps names to the objects to use instead of new positive symbols.
    Raises InputError naming the formula and the offending part. A formula without
    ``symbols`` is parsed once (a chapter reads the same stated values several times).
    """
    if not symbols and isinstance(text, str):
        try:
            return _parse_plain(text)
        except InputError as exc:
            raise exc.at(where) if where else exc from None
    tree = _parse(text, where)
    return _Builder(text, where, symbols or {}).build(tree.body)


@lru_cache(maxsize=4096)
def _parse_plain(text: str) -> sp.Expr:
    return _Builder(text, None, {}).build(_parse(text, None).body)


def parse_relation(text: str, *, where: str | None = None,
                   symbols: dict[str, sp.Expr] | None = None) -> sp.Rel:
    """Parse ``lhs = rhs`` (or ``<``, ``<=``, ``>``, ``>=``) into a SymPy relation.

    >>> parse_relation("6*N*D = C")
    Eq(6*D*N, C)
    >>> parse_relation("B > 240")
    B > 240
    """
    stripped = text.strip()
    match = re.fullmatch(r"(.+?)(==|=|<=|>=|<|>)(.+)", stripped)
    if not match or "=" in match.group(3).replace("<=", "").replace(">=", ""):
        raise InputError(f"expected one relation like 'lhs = rhs' or 'B > 240' in {text!r}",
                         where)
    lhs = parse_expr(match.group(1), where=where, symbols=symbols)
    rhs = parse_expr(match.group(3), where=where, symbols=symbols)
    op = {"==": "==", "=": "=="}.get(match.group(2), match.group(2))
    return sp.Rel(lhs, rhs, op, evaluate=False)


def parse_assignments(text: str, *, where: str | None = None) -> dict[str, str]:
    """Split ``"D=8192, F=32768"`` into ``{"D": "8192", "F": "32768"}`` (values unparsed).

    >>> parse_assignments("D=8192, F=32768")
    {'D': '8192', 'F': '32768'}
    """
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not value.strip():
            raise InputError(f"expected NAME=VALUE, got {part!r}", where)
        if not _NAME.match(name):
            raise InputError(f"{name!r} is not a valid name", where)
        if name in out:
            raise InputError(f"{name!r} is given twice", where)
        out[name] = value.strip()
    return out


def parse_number(text: str, *, where: str | None = None) -> sp.Rational:
    """An exact rational from a decimal or fraction literal.

    >>> parse_number("1.97e14")
    197000000000000
    >>> parse_number("9850/41")
    9850/41
    """
    value = parse_expr(text, where=where)
    if not value.is_Rational:
        raise InputError(f"expected a number, got {text!r}", where)
    return value


def exact(value: object, where: str | None = None) -> sp.Expr:
    """A value given to the library as SymPy: text through :func:`parse_expr` (never
    ``sympify``), numbers and SymPy objects as they are; anything else is an InputError.

    >>> exact("2*B + 1"), exact(3), exact(sp.Rational(1, 2))
    (2*B + 1, 3, 1/2)
    >>> exact("__import__('os')")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: ...
    """
    if isinstance(value, str):
        return parse_expr(value, where=where)
    if isinstance(value, bool):
        raise InputError(f"expected a number or formula, got {value!r}", where)
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    try:
        out = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError):
        raise InputError(f"expected a number or formula, got {type(value).__name__} "
                         f"{value!r:.60}", where) from None
    return out


def exact_number(value: object, where: str | None = None) -> sp.Rational:
    """A value that must be an exact number: a decimal or fraction as text, an int, a float
    (read exactly as its shortest decimal), or a SymPy rational.

    >>> exact_number("1/50"), exact_number(0.02), exact_number(2)
    (1/50, 1/50, 2)
    """
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"expected a finite number, got {value!r}", where)
        value = repr(value)
    out = parse_number(value, where=where) if isinstance(value, str) else exact(value, where)
    if not out.is_Rational:
        raise InputError(f"expected a number, got {value!r:.60}", where)
    return out


def _parse(text: str, where: str | None) -> ast.Expression:
    if not isinstance(text, str) or not text.strip():
        raise InputError("empty formula", where)
    if len(text) > MAX_LENGTH:
        raise InputError(f"formula is {len(text)} characters long; the limit is {MAX_LENGTH}",
                         where)
    for ch in text:
        if ord(ch) > 127 and unicodedata.normalize("NFKC", ch) != ch:
            raise InputError(f"the look-alike character {ch!r} (U+{ord(ch):04X}) is not "
                             f"allowed in formula {text.strip()!r}", where)
    source = text.strip().replace("^", "**")
    try:
        return ast.parse(source, mode="eval")
    except SyntaxError as exc:
        column = f" at column {exc.offset}" if exc.offset else ""
        raise InputError(f"malformed formula {text!r}{column}", where) from None
    except (ValueError, RecursionError, MemoryError):
        raise InputError(f"malformed formula {text!r}", where) from None


class _Builder:
    """One method per accepted node type; anything else is refused by name."""

    def __init__(self, text: str, where: str | None, symbols: dict[str, sp.Expr]) -> None:
        self.text = text.strip().replace("^", "**")
        self.where = where
        self.symbols = symbols

    def fail(self, what: str) -> InputError:
        return InputError(f"{what} in formula {self.text!r}", self.where)

    def build(self, node: ast.AST, depth: int = 0) -> sp.Expr:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise self.fail(f"{_describe(node)} is not allowed")
        result: sp.Expr = method(node, depth + 1)
        return result

    def visit_Constant(self, node: ast.Constant, depth: int) -> sp.Expr:
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise self.fail(f"the literal {node.value!r} is not a number")
        literal = ast.get_source_segment(self.text, node) or repr(node.value)
        digits = literal.lower().replace("_", "")
        if len(digits) > MAX_DIGITS:
            raise self.fail("a number with too many digits")
        _, _, exponent = digits.partition("e")
        if exponent and abs(int(exponent)) > MAX_EXPONENT:
            raise self.fail(f"the exponent of {literal} is beyond {MAX_EXPONENT}")
        try:
            fraction = Fraction(digits)
        except ValueError:
            raise self.fail(f"the number {literal!r} cannot be read") from None
        return sp.Rational(fraction.numerator, fraction.denominator)

    def visit_Name(self, node: ast.Name, depth: int) -> sp.Expr:
        name = node.id
        if name in self.symbols:
            return self.symbols[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            raise self.fail(f"the function {name!r} is used without arguments")
        if not _NAME.match(name):
            raise self.fail(f"the name {name!r} is not allowed")
        if name in NOT_SIZES:
            raise self.fail(f"the name {name!r} is not a size")
        return symbol(name)

    def visit_UnaryOp(self, node: ast.UnaryOp, depth: int) -> sp.Expr:
        if isinstance(node.operand, ast.UnaryOp):
            raise self.fail("a double sign (--, +-) is not allowed")
        operand = self.build(node.operand, depth)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise self.fail(f"the operator {type(node.op).__name__} is not allowed")

    def visit_BinOp(self, node: ast.BinOp, depth: int) -> sp.Expr:
        chain = []  # a flat sum or product nests to the left: not deeper, only longer
        while isinstance(node.left, ast.BinOp):
            chain.append(node)
            node = node.left
        value = self._apply(node.op, self.build(node.left, depth),
                            self.build(node.right, depth))
        for outer in reversed(chain):
            value = self._apply(outer.op, value, self.build(outer.right, depth))
        return value

    def _apply(self, op: ast.operator, left: sp.Expr, right: sp.Expr) -> sp.Expr:
        if isinstance(op, ast.Add):
            return self.bounded(left + right)
        if isinstance(op, ast.Sub):
            return self.bounded(left - right)
        if isinstance(op, ast.Mult):
            return self.bounded(left * right)
        if isinstance(op, ast.Div | ast.FloorDiv):
            if right == 0:
                raise self.fail("division by zero")
            quotient = self.bounded(left / right)
            return sp.floor(quotient) if isinstance(op, ast.FloorDiv) else quotient
        if isinstance(op, ast.Pow):
            if right.is_Number and abs(right) > MAX_EXPONENT:
                raise self.fail(f"the exponent {right} is beyond {MAX_EXPONENT}")
            if left.is_Rational and right.is_Number and _digits(left) * abs(right) > MAX_DIGITS:
                digits = int(_digits(left) * abs(right))
                raise self.fail(f"a power with about {digits} digits (limit {MAX_DIGITS})")
            if left == 0 and right.is_Number and right.is_negative:
                raise self.fail("division by zero")
            return self.bounded(sp.Pow(left, right))
        raise self.fail(f"the operator {type(op).__name__} is not allowed")

    def bounded(self, value: sp.Expr) -> sp.Expr:
        """``value``, unless a number in it is beyond 10**MAX_EXPONENT (or below its
        inverse): such numbers take long to compute and cannot be printed."""
        if too_large(value):
            raise self.fail(f"a number beyond 10**{MAX_EXPONENT}")
        return value

    def visit_Call(self, node: ast.Call, depth: int) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            raise self.fail(f"calling {_describe(node.func)} is not allowed")
        if node.func.id not in FUNCTIONS:
            name = node.func.id
            raise self.fail(f"the function {name!r} is not allowed (allowed: "
                            f"{', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise self.fail(f"keyword arguments to {node.func.id!r} are not allowed")
        args = [self.build(arg, depth) for arg in node.args]
        arity = _ARITY.get(node.func.id)
        allowed = arity if isinstance(arity, tuple) else (arity,) if arity else None
        if (allowed and len(args) not in allowed) or not args:
            raise self.fail(f"{node.func.id!r} takes {arity or 'at least one'} argument(s), "
                            f"got {len(args)}")
        return FUNCTIONS[node.func.id](*args)


def too_large(value: sp.Basic) -> bool:
    """Whether a rational in ``value`` has more than MAX_EXPONENT + 1 digits.

    >>> too_large(parse_expr("B*10**400")), too_large(parse_expr("1e1000")**2)
    (False, True)
    """
    atoms = [value] if isinstance(value, sp.Rational) else value.atoms(sp.Rational)
    return any(_digits(a) > MAX_EXPONENT + 1 for a in atoms)


def _digits(value: sp.Rational) -> float:
    return max(math.log10(abs(value.p) or 1), math.log10(value.q))


def _describe(node: ast.AST) -> str:
    kinds = {
        "Attribute": "attribute access", "Lambda": "lambda", "ListComp": "a comprehension",
        "SetComp": "a comprehension", "DictComp": "a comprehension",
        "GeneratorExp": "a comprehension", "Subscript": "subscripting", "List": "a list",
        "Tuple": "a tuple", "Dict": "a dict", "Set": "a set", "Compare": "a comparison",
        "BoolOp": "a boolean operator", "IfExp": "a conditional", "NamedExpr": "assignment",
        "JoinedStr": "a string", "Starred": "unpacking", "Await": "await", "Yield": "yield",
    }
    return kinds.get(type(node).__name__, type(node).__name__)


# --- printed numbers: how a text writes a number, as one table (docs/numbers.md) ---------
# The stated values of a chapter's tables are read with these tables only
# (:func:`symroof.claims.stated.read`); a notation not listed is refused by name.

NUMBERS_DOC = "docs/numbers.md"
#: full-width forms a CJK text prints, normalised (the verdict shows the ASCII form)
FULL_WIDTH: dict[str, str] = {**{chr(0xFF10 + i): str(i) for i in range(10)},
                              "．": ".", "，": ",", "－": "-", "＋": "+", "％": "%",
                              "　": " "}
#: signs a text prints for minus before a number
MINUS_SIGNS: dict[str, str] = {"\u2212": "-", "\u2013": "-"}
#: spaces a text may group digits with (Russian; the figure space of typeset tables)
SEPARATOR_SPACES = " \u00a0\u202f\u2009\u2007"
#: superscript digits of an exponent (10⁸, 10⁻³)
SUPERSCRIPTS: dict[str, str] = {**dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789", strict=True)),
                                "⁻": "-", "⁺": "+"}
#: marks and words that say a number is approximate, before it (longest first when read)
APPROX_BEFORE: tuple[str, ...] = (
    "~", "≈", "≃", "∼", "〜", "～", "≅",
    "approximately", "approx.", "approx", "about", "around", "roughly", "circa", "ca.",
    "nearly", "almost",
    "приблизительно", "примерно", "порядка", "около", "почти", "прибл.", "ок.",
    "约为", "大约", "大概", "将近", "差不多", "约", "近")
#: ... and after it
APPROX_AFTER: tuple[str, ...] = ("or so", "左右", "上下")
#: multiplier words: the power of ten they stand for
MULTIPLIERS: dict[str, int] = {
    "thousand": 3, "million": 6, "billion": 9, "trillion": 12,
    "тыс.": 3, "тыс": 3, "тысяча": 3, "тысячи": 3, "тысяч": 3,
    "млн.": 6, "млн": 6, "миллион": 6, "миллиона": 6, "миллионов": 6,
    "млрд.": 9, "млрд": 9, "миллиард": 9, "миллиарда": 9, "миллиардов": 9,
    "трлн.": 12, "трлн": 12, "триллион": 12, "триллиона": 12, "триллионов": 12,
    "千": 3, "万": 4, "亿": 8, "万亿": 12}
#: a count's suffix right after its digits (52B parameters, 70B, 1.4T tokens)
COUNT_SUFFIXES: dict[str, int] = {"K": 3, "M": 6, "B": 9, "T": 12}
#: nouns after a number that make it a count (so a B after it is a billion, never bytes)
COUNT_NOUNS: tuple[str, ...] = (
    "parameters", "params", "tokens", "weights", "layers", "GPUs", "chips",
    "параметров", "параметра", "токенов", "токена", "参数", "个参数", "词元", "个词元")
#: fractions of one written as words or signs
FRACTIONS: dict[str, sp.Rational] = {
    "%": sp.Rational(1, 100), "‰": sp.Rational(1, 1000), "percent": sp.Rational(1, 100),
    "per cent": sp.Rational(1, 100), "процент": sp.Rational(1, 100),
    "процента": sp.Rational(1, 100), "процентов": sp.Rational(1, 100)}
#: units as the texts spell them -> the units module's spelling
UNIT_WORDS: dict[str, str] = {
    "ТБ/с": "TB/s", "ГБ/с": "GB/s", "МБ/с": "MB/s", "ГБ": "GB", "МБ": "MB", "КБ": "kB",
    "ТБ": "TB", "мс": "ms", "мкс": "us", "нс": "ns", "с": "s", "байт": "B", "μs": "us",
    "毫秒": "ms", "微秒": "us", "纳秒": "ns", "秒": "s", "字节": "B"}
#: the plus-minus signs of an explicit precision (243 ± 1)
PLUS_MINUS = ("±", "+/-", "+-")


def printed_digits(text: str, where: str | None = None) -> str:
    """``text`` with full-width characters, minus signs and superscript exponents in their
    ASCII form; a digit of any other script is an InputError naming it (``2৪3`` would be
    read as 243 while it looks like 283).

    >>> printed_digits("２４３"), printed_digits("−1.5"), printed_digits("2.4×10⁸")
    ('243', '-1.5', '2.4×10^8')
    >>> printed_digits("2৪3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: the digit '৪' (U+09EA BENGALI DIGIT FOUR) ...
    """
    out = []
    superscript = False
    for ch in text:
        if ch in FULL_WIDTH:
            out.append(FULL_WIDTH[ch])
        elif ch in MINUS_SIGNS:
            out.append(MINUS_SIGNS[ch])
        elif ch in SUPERSCRIPTS:
            out.append(("" if superscript else "^") + SUPERSCRIPTS[ch])
            superscript = True
            continue
        elif ch.isdigit() and not ch.isascii():
            name = unicodedata.name(ch, "a digit")
            raise InputError(f"the digit {ch!r} (U+{ord(ch):04X} {name}) is of another "
                             "script: only ASCII and full-width digits are read (see "
                             f"{NUMBERS_DOC})", where)
        else:
            out.append(ch)
        superscript = False
    return "".join(out)
#: small numbers a text writes as words ("one pass", "один проход", "一次")
NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "twice": 2,
    "ноль": 0, "один": 1, "одна": 1, "одно": 1, "два": 2, "две": 2, "три": 3, "четыре": 4,
    "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9, "десять": 10, "вдвое": 2,
    "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
    "十": 10}
