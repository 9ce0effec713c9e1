"""Verdict semantics and ``symroof verify``: printed precision, expressions, relations,
errata, exit codes, timeouts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sympy as sp

from symroof.claims.model import Derivation, Erratum, Source
from symroof.claims.rules import judge_expr, judge_number, judge_relation, printed
from symroof.claims.runner import run_claim, verify
from symroof.core.errors import InputError
from symroof.core.parse import symbol
from tests.conftest import run_cli

B, D, N = symbol("B"), symbol("D"), symbol("N")
TOL = sp.Rational(2, 100)


@pytest.mark.parametrize(("stated", "derived", "verdict"), [
    ("240", sp.Rational(9850, 41), "OK"),             # 240.24 is within 240 +/- 0.5
    ("240.24", sp.Rational(9850, 41), "OK"),
    ("240.2", sp.Rational(9850, 41), "OK"),
    ("8755", sp.Rational(78800, 9), "ROUNDING"),      # 8755.56 cut off, not rounded
    ("8756", sp.Rational(78800, 9), "OK"),
    ("9.89e14", sp.Rational(19790, 2) * 10**11, "ROUNDING"),  # a tie printed downwards
    ("9.90e14", sp.Rational(19790, 2) * 10**11, "OK"),
    ("1.61e12", 2 * 810 * 10**9, "MISMATCH"),          # an arithmetic slip, not rounding
    ("300", sp.Rational(20000, 67), "MISMATCH"),       # 298.51 is neither 300 +/- 0.5 nor cut
    ("13.9%", sp.Rational(64, 460), "OK"),
    ("9850/41", sp.Rational(9850, 41), "OK"),
    ("0.5", sp.Rational(1, 2), "OK"),
    ("2", sp.Rational(5, 2), "MISMATCH"),               # truncation, but 20% off
])
def test_printed_precision(stated: str, derived: sp.Expr, verdict: str) -> None:
    assert judge_number(stated, derived, TOL).verdict == verdict


def test_printed_reads_precision_from_the_digits() -> None:
    assert printed("240").half_unit == sp.Rational(1, 2)
    assert printed("8e3").half_unit == 500
    assert printed("1.01").half_unit == sp.Rational(1, 200)
    assert printed("9850/41").half_unit == 0
    with pytest.raises(InputError, match="cannot read the stated value 'B' as a number"):
        printed("B")


def test_relative_error_is_reported() -> None:
    j = judge_number("1.61e12", 1620 * 10**9, TOL)
    assert j.rel_error == pytest.approx(10 / 1610)
    assert j.detail == "derived 1.62e12, stated 1.61e12"


def test_equal_expressions_written_differently() -> None:
    assert judge_expr("(2*N - 1)/(4*N + 2)", (N - sp.Rational(1, 2)) / (2 * N + 1)).verdict == "OK"
    assert judge_expr("2*B*D/(B + D)", 2 / (1 / B + 1 / D)).verdict == "OK"
    alpha = symbol("alpha")
    assert judge_expr("(N**alpha)**2", N ** (2 * alpha)).verdict == "OK"
    assert judge_expr("max(B, D) + min(B, D)", B + D).verdict == "OK"
    wrong = judge_expr("(2*N - 1)/(4*N - 2)", (2 * N - 1) / (4 * N + 2))
    assert wrong.verdict == "MISMATCH" and "differs from" in wrong.detail


def test_relation_direction_and_bound() -> None:
    derived = sp.StrictGreaterThan(B, sp.Rational(9850, 41))
    assert judge_relation("B > 240", derived, TOL).verdict == "OK"
    assert judge_relation("B >= 240", derived, TOL).verdict == "OK"
    assert judge_relation("240 < B", derived, TOL).verdict == "OK"
    flipped = judge_relation("B < 240", derived, TOL)
    assert flipped.verdict == "MISMATCH" and flipped.detail == "direction >, stated <"
    assert judge_relation("B > 250", derived, TOL).verdict == "MISMATCH"
    assert judge_relation("D > 240", derived, TOL).verdict == "MISMATCH"


def _derivation(**claim: object) -> Derivation:
    d = Derivation.begin("t", "t", Source("book", "1", "s", "000", "ru"))
    d.claim("c", statement="s", quote="q", **claim)  # type: ignore[arg-type]
    return d.build()


def test_erratum_and_stale_erratum() -> None:
    marked = _derivation(stated="1.61e12", derive=lambda: 1620 * 10**9,
                         erratum=Erratum("2 x 8.1e11 is 1.62e12"))
    v = verify([marked]).verdicts[0]
    assert v.verdict == "ERRATUM" and not verify([marked]).failed
    stale = _derivation(stated="1.62e12", derive=lambda: 1620 * 10**9,
                        erratum=Erratum("no longer wrong"))
    result = verify([stale])
    assert result.verdicts[0].verdict == "STALE" and result.failed


def test_qualitative_label_and_measurement() -> None:
    q = _derivation(stated="nearly twice", kind="qualitative", within=(1.8, 2.2),
                    meaning="ratio of the thresholds", derive=lambda: sp.Rational(166, 100))
    assert verify([q]).verdicts[0].verdict == "MISMATCH"
    label = _derivation(stated="compute", kind="label", derive=lambda: "compute")
    assert verify([label]).verdicts[0].verdict == "OK"
    m = _derivation(stated="80%", kind="measurement", evidence="the authors' benchmarks")
    assert verify([m]).verdicts[0].verdict == "UNVERIFIABLE"
    with pytest.raises(InputError, match="a measurement needs its evidence"):
        _derivation(stated="80%", kind="measurement")


def test_a_claim_that_raises_is_an_error_and_the_run_goes_on() -> None:
    d = Derivation.begin("t", "t", Source("book"))
    d.claim("boom", stated="1", statement="s", quote="q", derive=lambda: 1 / 0)
    d.claim("fine", stated="1", statement="s", quote="q", derive=lambda: 1)
    verdicts = verify([d.build()]).verdicts
    assert [v.verdict for v in verdicts] == ["ERROR", "OK"]
    assert verdicts[0].detail == "ZeroDivisionError: division by zero"


def test_a_claim_that_hangs_times_out_and_the_run_goes_on() -> None:
    def forever() -> None:
        while True:
            pass
    d = Derivation.begin("t", "t", Source("book"))
    d.claim("hang", stated="1", statement="s", quote="q", derive=forever)
    d.claim("fine", stated="1", statement="s", quote="q", derive=lambda: 1)
    built = d.build()
    hang = run_claim(built.claims[0], "t", timeout=0.3)
    assert hang.verdict == "TIMEOUT" and hang.detail == "no result within 0.3 s"
    assert hang.seconds > 0.25  # no upper bound: a busy machine may stop it late
    # the next claim runs (with the default limit: a busy machine must not time it out)
    assert run_claim(built.claims[1], "t").verdict == "OK"


MODULE = '''
from symroof import chip, einsum
from symroof.claims.model import Derivation, Erratum, Source

def build():
    d = Derivation.begin("tmp", "tmp", Source("book", "1", "s", "000", "ru"))
    rl = d.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
    d.claim("ridge", stated="{stated}", statement="ridge", quote="q", derive=lambda: rl.ridge)
    return d.build()
'''


def write(tmp_path: Path, stated: str, name: str = "mod.py") -> Path:
    path = tmp_path / name
    path.write_text(MODULE.replace("{stated}", stated))
    return path


@pytest.mark.slow
def test_cli_exit_codes(tmp_path: Path) -> None:
    assert run_cli("verify", str(write(tmp_path, "240"))).returncode == 0
    bad = run_cli("verify", str(write(tmp_path, "250", "bad.py")))
    assert bad.returncode == 1 and "MISMATCH" in bad.stdout
    missing = run_cli("verify", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and missing.stderr.strip().endswith(
        "nope.py: no such file or folder")
    assert run_cli("verify", "--timeout", "0", str(tmp_path / "mod.py")).returncode == 2


def test_cli_names_the_file_and_line_of_a_derivation_that_raises(tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text("def build():\n    x = 1\n    return x / 0\n")
    done = run_cli("verify", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (f"symroof: error: {path}:3: the derivation raised "
                                   "ZeroDivisionError: division by zero")
    path.write_text("x = 1\n")
    done = run_cli("verify", str(path))
    assert done.returncode == 1 and "defines no build() function" in done.stdout


def test_cli_json_fields(tmp_path: Path) -> None:
    done = run_cli("verify", str(write(tmp_path, "240")), "--json")
    data = json.loads(done.stdout)
    (claim,) = data["claims"]
    assert set(claim) >= {"id", "derivation", "source", "statement", "stated", "derived",
                          "verdict", "rel_error", "erratum", "seconds"}
    assert claim["derived"] == "9850/41" and claim["verdict"] == "OK"
    assert data["summary"] == {"OK": 1}


def test_bundled_derivations_verify_clean() -> None:
    done = run_cli("verify", "--json", "--no-timing")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    data = json.loads(done.stdout)
    assert "ERROR" not in data["summary"] and "TIMEOUT" not in data["summary"]
    ids = {c["id"] for c in data["claims"]}
    assert len(ids) == len(data["claims"])
    chapter1 = [c for c in data["claims"] if c["derivation"].startswith("rooflines-")]
    assert len(chapter1) >= 70
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["zh_tiled_gemm_total_bytes"]["verdict"] == "ERRATUM"


def test_verdict_cache_hits_only_unchanged_files(tmp_path: Path) -> None:
    from symroof.claims.cache import VerdictCache
    from symroof.claims.runner import run_units
    cache = VerdictCache(tmp_path / "cache")
    path = write(tmp_path, "240")
    first = run_units([path], cache=cache).rows
    again = run_units([path], cache=cache).rows
    assert [r["cached"] for r in first] == [False]
    assert [r["cached"] for r in again] == [True]
    assert [(r["verdict"], r["derived"]) for r in again] == \
        [(r["verdict"], r["derived"]) for r in first]
    write(tmp_path, "250")  # the same file, another stated value: a miss, a fresh verdict
    changed = run_units([path], cache=cache).rows
    assert [(r["verdict"], r["cached"]) for r in changed] == [("MISMATCH", False)]


def test_errors_are_never_cached(tmp_path: Path) -> None:
    from symroof.claims.cache import VerdictCache
    from symroof.claims.runner import run_units
    path = tmp_path / "boom.py"
    path.write_text(MODULE.replace("derive=lambda: rl.ridge", "derive=lambda: 1 / 0")
                    .replace("{stated}", "1"))
    cache = VerdictCache(tmp_path / "cache")
    for _ in range(2):
        rows = run_units([path], cache=cache).rows
        assert [(r["verdict"], r["cached"]) for r in rows] == [("ERROR", False)]


@pytest.mark.slow
def test_cli_no_cache(tmp_path: Path) -> None:
    path = str(write(tmp_path, "240"))
    run_cli("verify", path)
    cached = json.loads(run_cli("verify", path, "--json").stdout)["claims"][0]["cached"]
    fresh = json.loads(run_cli("verify", path, "--json", "--no-cache").stdout)
    assert cached is True and fresh["claims"][0]["cached"] is False


@pytest.mark.slow
def test_cached_run_prints_what_a_fresh_run_prints(tmp_path: Path) -> None:
    env = {**os.environ, "SYMROOF_CACHE_DIR": str(tmp_path / "cache")}
    fresh = run_cli("verify", "--json", "--no-timing", "--no-cache", env=env)
    filling = run_cli("verify", env=env)  # an empty cache: a fresh run, which fills it
    cached = run_cli("verify", "--json", "--no-timing", env=env)
    assert cached.returncode == fresh.returncode == filling.returncode == 0
    assert cached.stdout == fresh.stdout
    table = run_cli("verify", env=env).stdout
    assert table.splitlines()[-1] == filling.stdout.splitlines()[-1]
