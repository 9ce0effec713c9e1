"""Fixes found while writing later chapters' claims: each what a user met, then the fix."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from symroof.claims.chapter import build_chapter
from symroof.claims.consistency import agree
from symroof.claims.model import Claim, Source
from symroof.claims.rules import Verdict
from symroof.claims.runner import run_claim, verify
from symroof.core.errors import InputError
from symroof.parallel import all_gather, mesh, reduce_scatter, sharded
from tests.conftest import ROOT, run_cli

B = sp.Symbol("B", positive=True)


def _relation(stated: str, bound: sp.Expr, language: str) -> Claim:
    return Claim("r", Source("book", language=language), "s", "q", stated, kind="relation",
                 value=sp.StrictGreaterThan(B, bound))


def test_a_stated_relation_reads_the_language_s_separators_and_decimal_comma() -> None:
    assert run_claim(_relation("B > 12,500", sp.Integer(12500), "en"), "d").verdict == \
        Verdict.OK
    assert run_claim(_relation("B > 19 500", sp.Integer(19500), "ru"), "d").verdict == \
        Verdict.OK
    assert run_claim(_relation("B > 120,1", sp.Rational(1201, 10), "ru"), "d").verdict == \
        Verdict.OK
    wrong = run_claim(_relation("B > 120,1", sp.Rational(1211, 10), "ru"), "d")
    assert wrong.verdict == Verdict.MISMATCH and wrong.detail == "derived 121.1, stated 120.1"
    assert agree("B > 19 500", "B > 19500", "ru") and not agree("B > 19 500", "B > 19600", "ru")


def test_a_number_may_repeat_in_a_sharded_array() -> None:
    m = mesh("X=8,Y=4", "tpu-v5e")
    a = sharded("bf16[8192_X, 8192_Y]", m)
    assert a.text == "bf16[8192_X, 8192_Y]" and a.device_shape == (1024, 2048)
    assert all_gather(a, "X", m).result.text == "bf16[8192, 8192_Y]"
    assert reduce_scatter("bf16[8192, 8192]", "X", m).result.text == "bf16[8192, 8192_X]"
    assert sharded("int8[4096_XY, 8192]", m).device_bytes == 4096 * 8192 // 32


def test_a_catalogue_toml_beside_claims_py_is_data_not_a_translation(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "data" / "views_chips.toml", tmp_path / "chips.toml")
    (tmp_path / "claims.py").write_text(textwrap.dedent('''
        from pathlib import Path
        from symroof import chip
        from symroof.hardware.catalog import load_catalog

        def claims(ch):
            demo = chip("demo", catalog=load_catalog(str(Path(__file__).parent / "chips.toml")))
            ch.add(ridge=demo.ridge("bf16"))
        '''), "utf-8")
    (tmp_path / "en.toml").write_text(textwrap.dedent('''
        [chapter]
        id = "cat-en"
        title = "t"
        book = "b"
        ["S".ridge]
        quote = "100"
        stated = "100"
        '''), "utf-8")
    [d] = build_chapter(tmp_path)
    assert [str(v.verdict) for v in verify([d]).verdicts] == ["OK"]
    # a table of claims without [chapter] is still reported, not skipped
    (tmp_path / "ru.toml").write_text('["S".ridge]\nquote = "100"\nstated = "100"\n', "utf-8")
    with pytest.raises(InputError, match=r"ru\.toml: needs a \[chapter\] table"):
        build_chapter(tmp_path)


def test_context_zero_on_the_command_line_is_the_count_without_attention() -> None:
    from symroof.models import flops_per_token, model
    got = run_cli("model", "llama-2-7b", "--context", "0", "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["flops_per_token"] == str(flops_per_token(model("llama-2-7b"), 0))
    for args, message in ((("--context", "-1"), "--context: must be a whole number >= 0, got -1"),
                          (("--decode", "--batch", "8", "--context", "0", "--chip", "h100-sxm"),
                           "--context: a step attends at least one position, got 0"),
                          (("--fit", "--chip", "a100-80gb", "--context", "0"),
                           "--context: --fit needs a positive context (0 attends nothing)")):
        bad = run_cli("model", "llama-2-7b", *args)
        assert bad.returncode == 2 and bad.stderr.strip() == f"symroof: error: {message}"


def test_a_symbolic_axis_says_it_is_a_line_unless_the_mesh_says_it_wraps() -> None:
    line = mesh("X=N", "tpu-v5e")
    assert not line.axis("X").wraps
    assert line.assumptions == ("X = N is assumed to fit dimension 1 of tpu-v5e-pod (16 "
                                "chips) without wraparound",)
    ring = mesh("X=N:wraps", "tpu-v5e")
    assert ring.axis("X").wraps
    ag = all_gather("bf16[B_X, D]", "X", ring)
    n = ring.axis("X").size
    assert ag.hops == sp.floor(n / 2) and ag.bandwidth_time.has(n)
    assert "with wraparound (as the mesh says)" in ring.assumptions[0]
    assert mesh("X=16:wraps", "tpu-v5e").axis("X").wraps
    with pytest.raises(InputError, match=r"axis X=8 does not wrap on tpu-v5e-pod"):
        mesh("X=8:wraps", "tpu-v5e")
    with pytest.raises(InputError, match=r"axis X: unknown mark 'wrap' after ':'"):
        mesh("X=8:wrap", "tpu-v5e")


def test_a_per_chip_dcn_figure_is_not_divided_among_the_host_s_chips() -> None:
    from symroof import chip
    host = mesh("pod=2@dcn,X=16", "tpu-v5e").axis("pod")
    # B2: 2.5e10 B/s per host of 8 chips; B2L: 3.125e9 B/s per chip (chips.toml)
    assert host.bandwidth == sp.Rational(25 * 10**9, 8)
    b2l = mesh("pod=2@dcn,X=16", chip("tpu-v5e", dcn="B2L")).axis("pod")
    assert b2l.link.per == "chip" and b2l.bandwidth == sp.Rational(3125 * 10**6)
    v5p = mesh("pod=2@dcn,X=16", chip("tpu-v5p", dcn="GC-v5p")).axis("pod")
    assert v5p.bandwidth == sp.Rational(625 * 10**7)
    said = chip("tpu-v5e", dcn="6.25e9 B/s one-way per chip")
    assert mesh("pod=2@dcn,X=16", said).axis("pod").bandwidth == 625 * 10**7
    with pytest.raises(InputError, match=r"set dcn: a link is counted per link, chip, host, "
                                         r"node; got 'per rack'"):
        chip("tpu-v5e").with_figures({"dcn": "6.25e9 B/s one-way per rack"})


def test_solving_for_an_axis_size_leaves_out_the_one_chip_root() -> None:
    m = mesh("X=N", "tpu-v5e")
    t = all_gather("bf16[B_X, D]", "X", m).threshold("N")
    b, d = (next(s for s in t.exact.free_symbols if s.name == n) for n in ("B", "D"))
    # (N-1)/N * 2BD / 4.5e10 = (N-1) * 1e-6 s: besides N = 1 (no time on either side),
    # N = 2BD / 45000
    assert t.exact == b * d / 22500


def test_optimize_at_a_point_where_coefficients_are_left_says_which() -> None:
    base = ("optimize", "--minimize", "A/N**alpha + B/D**beta", "--subject-to", "6*N*D = C",
            "--values", "alpha=0.34,beta=0.28")
    bad = run_cli(*base, "--at", "C=5.76e23")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "symroof: error: --at: the optimum still depends on A, B: give A, B too "
        "(--at C=...,A=...) or with --values")
    got = run_cli(*base, "--at", "C=5.76e23,A=406.4,B=410.7", "--json")
    assert got.returncode == 0, got.stderr
    at = json.loads(got.stdout)["at_value"]
    n, d = at["N*"], at["D*"]
    assert 6 * n * d == pytest.approx(5.76e23, rel=1e-12)
    assert at["objective"] == pytest.approx(406.4 / n ** 0.34 + 410.7 / d ** 0.28, rel=1e-12)


def test_the_derived_column_shows_one_digit_more_than_the_stated() -> None:
    got = run_claim(Claim("t", Source("book"), "s", "q", "2.4 ms",
                          value=sp.Rational(499062469, 200000000000)), "d")
    # 2.4 ms is 2.495 ms cut off at its last digit: a truncation (issue 35's one rule)
    assert got.derived == "2.50 ms" and got.detail == "truncated: 2.49531 ms printed as 2.4 ms"
    small = run_claim(Claim("u", Source("book"), "s", "q", "0.01 us",
                            value=sp.Rational(1, 98500000) + sp.Rational(1, 7 * 10**16)), "d")
    assert small.derived == "0.0102 us"  # at least three significant digits
