"""Answers that used to be wrong, and write-ups that are written all or nothing."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest
import sympy as sp

from symroof import einsum, fuse
from symroof.claims import rules
from symroof.claims.model import Derivation, Source
from symroof.claims.runner import FAILING, VERDICTS, verify
from symroof.core.errors import DerivationError, InputError
from symroof.core.parse import symbol
from symroof.core.printer import latex
from symroof.engine.optimize import lagrange
from symroof.render.files import write
from symroof.render.report import render
from tests.conftest import run_cli

B, D, S, T = (symbol(n) for n in ["B", "D", "S", "T"])


def test_the_sympy_free_verdict_names_are_the_rules_verdicts() -> None:
    assert tuple(str(v) for v in rules.Verdict) == VERDICTS
    assert {str(v) for v in rules.FAILING} == FAILING


def test_fusing_two_contractions_keeps_the_second_ops_other_input() -> None:
    scores = einsum("B T D, B S D -> B T S", "bf16")    # QK^T
    mix = einsum("B T S, B S D -> B T D", "bf16")       # PV: reads the scores and V
    fused = fuse(scores, mix)
    # Q and K (2*B*T*D + 2*B*S*D), then V (2*B*S*D); the scores never reach memory
    assert sp.expand(fused.reads["hbm"] - (2 * B * T * D + 4 * B * S * D)) == 0
    assert fused.writes == mix.writes


def test_a_fusion_whose_op_reads_less_than_the_last_wrote_is_refused() -> None:
    wide = einsum("B -> B", "bf16")      # writes 2*B bytes
    narrow = einsum("B -> B", "int8")    # reads B bytes: not the whole intermediate
    with pytest.raises(InputError, match="cannot fuse .* it reads less from hbm"):
        fuse(wide, narrow)


def test_a_less_than_threshold_gives_the_largest_integer() -> None:
    done = run_cli("derive", "--flops", "1e15*D", "--bytes", "B*D", "--solve", "B")
    lines = done.stdout.splitlines()
    assert any(line.split()[:2] == ["largest", "integer"] for line in lines), done.stdout
    assert not any("smallest integer" in line for line in lines)


def test_the_asymptotic_threshold_has_its_integer_in_json() -> None:
    done = run_cli("derive", "--einsum", "B D, D F -> B F", "--set", "hbm=B1", "--solve", "B",
                   "--regime", "B<<D,F", "--json")
    th = json.loads(done.stdout)["threshold"]
    assert th["asymptotic"] == "9850/41" and th["exact"] != th["asymptotic"]
    assert (th["integer"], th["integer_of"]) == (241, "asymptotic")  # 240.24 -> 241


@pytest.mark.parametrize(("name", "shown"), [("hbm", r"\mathrm{hbm}"), ("xhat", r"\mathrm{xhat}"),
                                             ("tdot", r"\mathrm{tdot}"), ("alpha", r"\alpha"),
                                             ("B", "B"), ("T_math", r"T_{\mathrm{math}}")])
def test_symbol_names_print_as_written(name: str, shown: str) -> None:
    assert latex(sp.Symbol(name)) == shown


def test_optimize_says_unsolved_when_solve_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import symroof.engine.optimize as opt
    monkeypatch.setattr(opt.sp, "solve", lambda *a, **k: [])
    N, C = symbol("N"), symbol("C")
    with pytest.raises(DerivationError, match="sympy.solve found no solution"):
        lagrange(N + D, sp.Eq(N * D, C), [N, D], method="general")


def test_a_derivation_without_steps_has_no_empty_list_in_latex() -> None:
    d = Derivation.begin("plain", "No steps", Source("b"))
    d.claim("c", stated="1", statement="s", quote="q", derive=lambda: 1)
    tex = render(verify([d.build()]), ["tex"], plots=False).files["plain.tex"]
    assert isinstance(tex, str) and "c" in tex
    assert "enumerate" not in tex


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write({"a.md": "a", "figures/b.svg": "b"}, tmp_path)
    finally:
        os.umask(old)
    assert {p.name: p.stat().st_mode & 0o777 for p in tmp_path.rglob("*.*")} == \
        {"a.md": 0o640, "b.svg": 0o640}


def test_a_failed_write_leaves_the_old_files_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("old")
    (tmp_path / "blocked").write_text("a file where a folder must go")
    with pytest.raises(InputError, match="cannot write"):
        write({"a.md": "new", "blocked/c.md": "c"}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "blocked"]
    assert (tmp_path / "a.md").read_text() == "old"


def test_write_refuses_a_path_outside_the_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="would be written outside the output folder"):
        write({"../evil.md": "x"}, tmp_path / "out")
    assert not (tmp_path / "evil.md").exists()


def test_a_signal_from_another_thread_waits_until_every_file_is_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"f{i}.md" for i in range(5)]
    for n in names:
        (tmp_path / n).write_text("old")
    real = os.replace
    sent: list[bool] = []

    def replace(src: str, dst: str) -> None:
        if not sent:  # mid-swap, SIGTERM arrives on a worker thread
            sent.append(True)
            t = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGTERM))
            t.start()
            t.join()
        real(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write({n: "new" for n in names}, tmp_path)
    assert {p.read_text() for p in tmp_path.iterdir()} == {"new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == names
