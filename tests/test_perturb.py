"""Claims that cannot fail: every numeric input of a bundled chapter moves a derived value
when it is perturbed, and a value written without computation is a DEFINITION."""

from __future__ import annotations

import re
import shutil
import textwrap
import tomllib
from pathlib import Path

import pytest
import sympy as sp

from symroof.claims.chapter import build_chapter
from symroof.claims.restated import restated
from symroof.core.parse import parse_expr
from tests.conftest import ROOT
from tests.test_restated import AUDITED

CHAPTERS = sorted(p.parent for p in (ROOT / "derivations").glob("*/claims.py"))
GIVEN = re.compile(r"""given\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["']\s*,\s*([^)]*)\)""")


def inputs(folder: Path) -> list[tuple[str, str, object]]:
    """(table, input, value) for every input a translation reads: its [inputs] entry, else
    the default claims.py gives."""
    source = (folder / "claims.py").read_text("utf-8")
    defaults = {m.group(1): m.group(2).strip() for m in GIVEN.finditer(source)}
    out = []
    for table in sorted(folder.glob("*.toml")):
        given = tomllib.loads(table.read_text("utf-8")).get("inputs", {})
        for name, default in defaults.items():
            value = given.get(name, default.strip("'\""))
            out.append((table.name, name, value))
    return out


def perturbed(value: object) -> object:
    """The value moved by a seventh: a number, or the number of a figure with its unit."""
    if isinstance(value, int | float):
        return value + 1 if isinstance(value, int) else value * 8 / 7
    text = str(value)
    number, _, unit = text.partition(" ")
    moved = parse_expr(number) * sp.Rational(8, 7)
    return f"{sp.N(moved, 12)} {unit}".strip()


def values(folder: Path) -> dict[tuple[str, str], str]:
    return {(d.id, c.id): sp.srepr(c.value) if isinstance(c.value, sp.Basic) else repr(c.value)
            for d in build_chapter(folder) for c in d.claims}


CASES = [(f, t, n, v) for f in CHAPTERS for t, n, v in inputs(f)]


@pytest.mark.parametrize(("folder", "table", "name", "value"), CASES,
                         ids=[f"{f.name}-{t}-{n}" for f, t, n, _ in CASES])
def test_every_input_moves_a_derived_value(tmp_path: Path, folder: Path, table: str,
                                           name: str, value: object) -> None:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    before = values(copy)
    path = copy / table
    data = path.read_text("utf-8")
    moved = perturbed(value)
    line = f"{name} = {moved!r}".replace("'", '"')
    if re.search(rf"^{name} = .*$", data, re.M):
        data = re.sub(rf"^{name} = .*$", line, data, count=1, flags=re.M)
    elif "[inputs]" in data:
        data = data.replace("[inputs]", f"[inputs]\n{line}", 1)
    else:
        data = data.replace("\n[", f"\n[inputs]\n{line}\n\n[", 1)
    path.write_text(data, "utf-8")
    after = values(copy)
    changed = sorted(k for k in before if before[k] != after.get(k))
    assert changed, f"{table}: perturbing {name} ({value} -> {moved}) changes no claim"


def test_bundled_claims_restate_only_the_audited_values() -> None:
    # the audit lives in tests/test_restated.py; claims.py alone (no sibling module) finds
    # the same
    for folder in CHAPTERS:
        found = set(restated((folder / "claims.py").read_text("utf-8")))
        assert found == {key for name, key in AUDITED if name == folder.name}, folder.name


def test_a_restated_literal_or_input_is_a_definition(tmp_path: Path) -> None:
    ch = tmp_path / "ch"
    ch.mkdir()
    (ch / "claims.py").write_text(textwrap.dedent("""
        import sympy as sp
        LAYERS = 32
        def claims(ch):
            chips = ch.given("chips", 256)
            ch.add(layers=LAYERS, chips=chips, total=ch.given("a", 3) + ch.given("b", 4),
                   half=sp.Rational(1, 2) * sp.Integer(LAYERS) ** 0 + sp.sqrt(0))
    """))
    (ch / "en.toml").write_text(textwrap.dedent("""
        [chapter]
        id = "r-en"
        title = "R"
        book = "b"
        [inputs]
        chips = 512
        [s.layers]
        quote = "32 layers"
        stated = "32"
        [s.chips]
        quote = "512 chips"
        stated = "512"
        [s.total]
        quote = "7 in all"
        stated = "7"
        [s.half]
        quote = "a half (0.5)"
        stated = "0.5"
    """))
    (d,) = build_chapter(ch)
    kinds = {c.id: (c.kind, c.restates) for c in d.claims}
    assert kinds == {
        "layers": ("definition", "no engine computation: restates 32, written in claims.py"),
        "chips": ("definition", "no engine computation: restates the input chips"),
        "total": ("definition", "no engine computation: restates the input a, plus the input b"),
        # a square root of literals is arithmetic on them too
        "half": ("definition", "no engine computation: restates sp.Rational(1, 2) * "
                 "sp.Integer(LAYERS) ** 0 + sp.sqrt(0), made in claims.py from its own "
                 "literals (LAYERS)"),
    }


def test_a_step_or_definition_of_a_literal_restates_it() -> None:
    # a chapter's own step returns its output, a definition its value, quantity() its
    # value, parse_quantity the figure claims.py writes: a literal passed through them
    # restates that literal; a step computed from an engine result does not
    found = restated(textwrap.dedent("""
        import sympy as sp
        from symroof.core.units import COMPUTE, parse_quantity
        from symroof import chip, einsum
        from symroof.claims import quantity
        def claims(ch):
            tokens = ch.step("evaluate", "global batch", None, 512 * 4096, "given")
            local = ch.step("evaluate", "per GPU", tokens,
                            sp.Rational(tokens, ch.given("gpus", 2048)))
            sparse = ch.define("sparse rate", "P", parse_quantity("1.979e15 FLOP/s", COMPUTE))
            card = ch.define("card", "M", value=quantity(80 * 2**30, "B"))
            rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
            ridge = ch.step("evaluate", "ridge", rl.ridge, output=rl.ridge)
            ch.add(tokens=tokens, local=local, dense=sparse / 2, card=card, ridge=ridge,
                   half=ch.step("evaluate", "half", rl.peak, rl.peak / 2))
    """))
    assert found == {
        "tokens": "restates 512 * 4096, written in claims.py",
        "local": "restates 512 * 4096, over the input gpus",
        "dense": "restates sparse / 2, written in claims.py",
        "card": "restates 80 * 2 ** 30, written in claims.py"}
