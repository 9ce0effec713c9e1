"""Notebook views: every object a derivation author meets shows itself in Jupyter as HTML,
LaTeX and Markdown from the one table writer; each view is pinned by a golden file."""

from __future__ import annotations

import os

import pytest
import sympy as sp

from symroof import einsum, roofline, threshold
from symroof.claims.runner import load_derivations, verify
from symroof.hardware.catalog import load_catalog
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden" / "views"


def objects() -> dict[str, object]:
    chip = load_catalog(str(ROOT / "tests" / "data" / "views_chips.toml"))["demo"]
    op = einsum("B D, D F -> B F", "bf16", name="matmul")
    rl = roofline(op, chip)
    result = verify(load_derivations([str(ROOT / "tests" / "data" / "small.py")]))
    d = result.derivations[0]
    return {"chip": chip, "op": op, "roofline": rl,
            "threshold": threshold(rl, "B", regime="B<<D,F"),
            "threshold_at": threshold(rl, "B").at({"D": 8192, "F": 32768}),
            "claim": d.claims[3], "derivation": d, "verification": result}


OBJECTS = objects()


@pytest.mark.parametrize("name", sorted(OBJECTS))
@pytest.mark.parametrize("kind", ["html", "latex", "markdown"])
def test_view_matches_its_golden(name: str, kind: str) -> None:
    got = getattr(OBJECTS[name], f"_repr_{kind}_")()
    golden = GOLDEN / f"{name}.{ {'html': 'html', 'latex': 'tex', 'markdown': 'md'}[kind] }"
    if os.environ.get("SYMROOF_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(got + "\n", encoding="utf-8")
    assert got + "\n" == golden.read_text(encoding="utf-8")


def test_html_views_are_tables_with_math_for_mathjax() -> None:
    html = OBJECTS["roofline"]._repr_html_()  # type: ignore[attr-defined]
    assert html.startswith('<div class="symroof"><strong>matmul on demo</strong>')
    assert "<td class=\"l\">$\\frac{B D F}{B D + B F + D F}$</td>" in html
    assert "<td class=\"l\">$100$</td>" in html  # the critical intensity, 1e14 / 1e12


def test_a_derivation_prints_in_one_line_and_shows_its_claims() -> None:
    d = OBJECTS["derivation"]
    assert repr(d) == "<Derivation 'small': 4 claims, 9 steps, 1 rooflines>"
    assert d._repr_html_().count("<tr>") == 1 + 4  # type: ignore[attr-defined]
    assert repr(OBJECTS["verification"]) == "<Verification: 4 claims: 3 OK, 1 ERRATUM>"


def test_latex_views_are_one_display_array() -> None:
    for name, obj in OBJECTS.items():
        tex = obj._repr_latex_()  # type: ignore[attr-defined]
        assert tex.startswith("$$\\begin{array}") and tex.endswith("\\end{array}$$"), name
        assert tex.count("\\begin{array}") == tex.count("\\end{array}") == 2, name


def test_a_long_exact_number_shows_as_a_decimal_in_a_view() -> None:
    from symroof.core.tables import key_values
    table = key_values([("big", sp.Integer(3) ** 100)])
    assert "5.1538 \\cdot 10^{47}" in table.render("md")
