"""Text from tables, quotes and API arguments never reaches sympify, eval or TeX unchecked."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import sympy as sp

from symroof import chip, einsum, op, roofline
from symroof.claims.chapter import law, within
from symroof.claims.model import Derivation, Source
from symroof.core.errors import InputError
from symroof.core.escape import html_escape, md_escape, tex_escape
from symroof.core.parse import exact, exact_number
from symroof.render.pdf import LatexFailed, compile_pdf
from symroof.render.quotes import quote_markup, segments
from tests.conftest import require_tool

CODE = "__import__('os').system('touch PWNED') or B"


@pytest.mark.parametrize("call", [
    lambda: op("f", CODE, "B"),
    lambda: roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e")).at({"B": CODE}),
    lambda: within(1, CODE, 2),
    lambda: Derivation.begin("t", "t", Source("b")).claim(
        "a", stated="1", statement="s", quote="q", derive=lambda: 1, tolerance=CODE),
    lambda: Derivation.begin("t", "t", Source("b")).claim(
        "a", stated="x", statement="s", quote="q", derive=lambda: 1, kind="qualitative",
        within=(CODE, 2), meaning="m"),
    lambda: exact(CODE),
])
def test_code_in_a_string_argument_is_refused(call, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="a boolean operator is not allowed"):
        call()
    assert not (tmp_path / "PWNED").exists()


def test_exact_reads_numbers_exactly_and_refuses_what_is_not_one() -> None:
    assert exact_number(0.02) == sp.Rational(1, 50) and exact_number("9850/41") == \
        sp.Rational(9850, 41)
    for bad in (True, float("nan"), "B", object()):
        with pytest.raises(InputError):
            exact_number(bad)


@pytest.mark.parametrize("condition", [sp.nan, 1, sp.Integer(0), sp.Symbol("x") > 1, None])
def test_a_law_needs_true_or_false(condition: object) -> None:
    with pytest.raises(InputError, match="a law's condition must be True or False"):
        law(condition)


@pytest.mark.parametrize("math", [r"^^5cthe^^5cnumexpr 6*7000+1^^5crelax ^^5cjobname",
                                  r"x^^0a", r"\text{^^5cinput}", "x\x01y", r"\catcode`\^^M=9"])
def test_tex_notation_for_hidden_characters_is_never_math(math: str) -> None:
    kinds = [k for k, _ in segments(f"q ${math}$ r")]
    assert kinds == ["text"]
    assert "^^" not in quote_markup(f"q ${math}$ r", "tex")


def test_control_characters_never_reach_an_output() -> None:
    text = "a\x1b[31mb\x07c\u202ed"
    for out in (tex_escape(text), md_escape(text), html_escape(text)):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


def test_pdflatex_is_bounded_and_its_timeout_is_one_error() -> None:
    require_tool("pdflatex")
    loop = "\\documentclass{article}\\begin{document}\\def\\x{\\x}\\x\\end{document}\n"
    with pytest.raises(LatexFailed, match="pdflatex ran past the time limit of 1 s"):
        compile_pdf(loop, "loop.tex", timeout=1)



def test_an_inner_time_limit_never_extends_an_outer_one() -> None:
    from symroof.core.timelimits import TimeLimit, time_limit
    start = time.monotonic()
    with pytest.raises(TimeLimit), time_limit(0.3):
        with time_limit(600):
            pass
        while True:  # the outer limit, armed again, still stops this
            pass
    assert time.monotonic() - start < 300  # far below the inner limit, whatever the load


def test_a_cpu_time_limit_counts_only_work_and_nests_with_a_wall_clock_one() -> None:
    """A limit in CPU time is not spent by waiting (so a busy machine does not spend it),
    and it stops work inside a wall-clock limit, which it does not disturb."""
    from symroof.core.timelimits import TimeLimit, time_limit
    with time_limit(0.2, cpu=True):
        time.sleep(0.5)  # waiting costs no CPU time: no TimeLimit
    start = time.process_time()
    with pytest.raises(TimeLimit), time_limit(600), time_limit(0.2, cpu=True):
        while True:
            pass
    assert 0.15 < time.process_time() - start < 300


@pytest.mark.parametrize(("call", "message"), [
    (lambda: einsum(None, "bf16"), "einsum: expected an einsum spec"),
    (lambda: chip(5), "chip: expected a chip name such as 'tpu-v5e', got int 5"),
    (lambda: roofline(einsum("B D, D F -> B F", "bf16"), 5), "roofline: expected a Chip"),
    (lambda: roofline(None, chip("tpu-v5e")), "roofline: expected an Op"),
])
def test_public_entry_points_name_a_wrong_argument(call, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        call()


def test_a_chip_takes_a_number_or_its_name_where_the_api_expects_one() -> None:
    assert chip("tpu-v5e", hbm=8.1e11).bandwidth("hbm") == 810 * 10**9
    rl = roofline(einsum("B D, D F -> B F", "bf16"), "tpu-v5e")
    assert rl.ridge == sp.Rational(19700, 81)


def _api():  # the public names the out-of-range calls below use, imported late
    import symroof
    from symroof import models
    return symroof, models


@pytest.mark.parametrize(("call", "message"), [
    (lambda s, m: s.op("f", -s.sizes("B")[0], s.sizes("B")[0]),
     "op 'f': flops: '-B' is never positive (-B); it must be positive"),
    (lambda s, m: s.op("f", 1, {"hbm": -5}), "op 'f': bytes hbm: '-5' must be positive"),
    (lambda s, m: s.op("f", "alpha_ici*B", "B"), "op 'f': flops: the name 'alpha_ici' is the "
                                                 "engine's own"),
    (lambda s, m: m.flops_per_token(m.model("llama-2-7b"), -1024),
     "context: must be a whole number >= 0, got -1024"),
    (lambda s, m: m.flops_per_token(m.model("llama-2-7b"), 1024.5),
     "context: must be a whole number >= 0 or a SymPy size, got 1024.5"),
    (lambda s, m: m.flops_per_token(m.model("llama-2-7b"), "T"),
     "context: must be a whole number >= 0 or a SymPy size, got 'T'"),
    (lambda s, m: m.min_chips(m.model("llama-2-7b"), s.chip("tpu-v5e"), batch=-1, context=1024),
     "batch: must be a positive whole number, got -1"),
    (lambda s, m: s.expansion(s.parse_expr("B/(B + D)"), "B<<D;D<<B"),
     "the ordering has a cycle: B << D << B"),
    (lambda s, m: m.MLA(kv_rank=512, rope_dim=64, nope_dim=128, v_dim=128, q_rank=True),
     "mla.q_rank: must be a whole number >= 0, got True"),
    (lambda s, m: s.sizes("B 1D"), "sizes: '1D' is not a name"),
    (lambda s, m: s.sizes("B pi"), "sizes: the name 'pi' is not a size"),
    (lambda s, m: s.mesh({"1X": 4}, "tpu-v5e"), "mesh: '1X' is not a name"),
    (lambda s, m: s.mesh({"X": 10**4, "Y": 10**4}, "h100-sxm"),
     "mesh: 1e+08 chips in all: more chips than any system holds"),
    (lambda s, m: s.roots(s.sizes("B")[0] ** 10**6 - 1, s.sizes("B")[0]),
     "the equation has degree 1e+06 in B; roots of a degree beyond 1000 are not attempted"),
])
def test_the_library_refuses_what_the_command_line_refuses(call, message: str) -> None:
    from symroof.core.errors import SymroofError
    start = time.process_time()
    with pytest.raises(SymroofError, match=re.escape(message)):
        call(*_api())
    assert time.process_time() - start < 5  # refused at once, never attempted (CPU time)


def test_a_time_limit_spent_importing_names_the_import(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from symroof.cli.common import bounded
    from symroof.core.errors import DerivationError
    (tmp_path / "symroof_probe_slow_import.py").write_text("while True:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DerivationError, match=re.escape(
            "no result within 0.2 s (loading the modules ran out of time)")):
        bounded(0.2, lambda: importlib.import_module("symroof_probe_slow_import"))


def test_without_landlock_verify_says_so_and_keeps_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    from symroof.claims import sandbox
    from symroof.claims.cache import VerdictCache
    from symroof.claims.runner import run_units
    unit = tmp_path / "half.py"
    unit.write_text("from symroof.claims.model import Derivation, Source\ndef build():\n"
                    "    d = Derivation.begin('half', 't', Source('b'))\n"
                    "    d.claim('c', stated='0.5', statement='s', quote='q', derive=lambda: "
                    "__import__('sympy').Rational(1, 2))\n    return d.build()\n")
    monkeypatch.setattr(sandbox, "abi", lambda: 0)
    cache = VerdictCache(tmp_path / "cache")
    for _ in range(2):
        rows = run_units([unit], cache=cache).rows
        assert [(r["verdict"], r["cached"]) for r in rows] == [("OK", False)]
        assert capsys.readouterr().err == (
            "symroof: note: this system cannot wall the derivations off the cache (no "
            "Landlock): verifying without it\n")
    assert not (tmp_path / "cache").exists()


def test_an_entry_holds_derived_values_and_a_table_edit_is_judged_afresh(tmp_path: Path) -> None:
    if __import__("symroof.claims.sandbox", fromlist=["abi"]).abi() < 1:
        pytest.skip("the cache needs Landlock")
    from symroof.claims.cache import VerdictCache
    from symroof.claims.runner import run_units
    ch = tmp_path / "ch"
    ch.mkdir()
    (ch / "claims.py").write_text(
        "from symroof import chip, einsum\ndef claims(ch):\n"
        "    ch.add(a=ch.roofline(einsum('B D, D F -> B F', 'bf16'), chip('tpu-v5e')).ridge)\n")
    table = '[chapter]\nid = "h-en"\ntitle = "h"\nbook = "b"\n[s.a]\nquote = "q"\n' \
            'stated = "{}"\n'
    (ch / "en.toml").write_text(table.format("243.2"))  # 19700/81
    cache = VerdictCache(tmp_path / "cache")
    got = [[(r["verdict"], r["cached"]) for r in run_units([ch], cache=cache).rows]
           for _ in range(2)]
    assert got == [[("OK", False)], [("OK", True)]]
    entry = json.loads(json.loads(next((tmp_path / "cache").glob("*.json")).read_text())
                       ["entry"])
    assert "verdict" not in json.dumps(entry["values"])  # derived values, no verdict
    (ch / "en.toml").write_text(table.format("300"))
    rows = run_units([ch], cache=cache).rows
    assert [(r["verdict"], r["cached"]) for r in rows] == [("MISMATCH", False)]
