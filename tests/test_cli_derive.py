"""``symroof derive``, ``chips`` and ``chip`` from the command line: output, JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

MATMUL = ["derive", "--einsum", "B D, D F -> B F", "--dtypes", "bf16", "--chip", "tpu-v5e",
          "--set", "hbm=8.2e11", "--solve", "B", "--regime", "B<<D,F"]


def derive_json(*args: str) -> dict[str, object]:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_matmul_json_has_the_contract_fields() -> None:
    out = derive_json(*MATMUL)
    for key in ("flops", "bytes", "intensity", "intensity_leading", "ridge", "t_math",
                "t_comms", "t_lower", "t_upper", "bound", "threshold"):
        assert key in out
    assert out["intensity"] == "B*D*F/(B*D + B*F + D*F)"
    assert out["intensity_leading"] == "B"
    assert out["intensity_correction"] == "-B**2*(D + F)/(D*F)"
    assert out["ridge"] == "9850/41"
    th = out["threshold"]
    assert isinstance(th, dict)
    assert th["symbol"] == "B" and th["asymptotic"] == "9850/41"
    assert abs(th["asymptotic_value"] - 9850 / 41) < 1e-12


def test_matmul_at_given_sizes() -> None:
    th = derive_json(*MATMUL, "--subs", "D=8192,F=32768")["threshold"]
    assert isinstance(th, dict)
    assert th["exact"] == "161382400/647119" and th["integer"] == 250
    assert th["relation"] == "B > 161382400/647119"


def test_sharded_matmul_and_w8a16() -> None:
    th = derive_json("derive", "--flops", "B*D*F", "--comm-bytes", "2*B*F", "--link", "ici",
                     "--solve", "D")["threshold"]
    assert isinstance(th, dict) and th["exact"] == "78800/9" and th["integer"] == 8756
    w = derive_json("derive", "--einsum", "B D, D F -> B F", "--dtypes", "bf16,int8",
                    "--out-dtype", "bf16", "--set", "hbm=8.2e11", "--solve", "B",
                    "--subs", "D=4096,F=4096")["threshold"]
    assert isinstance(w, dict) and w["exact"] == "5043200/37059" and w["integer"] == 137


@pytest.mark.slow
def test_text_and_markdown_and_latex_formats() -> None:
    text = run_cli(*MATMUL).stdout
    assert "critical intensity  9850/41 ≈ 240.24 FLOP/byte" in text
    assert "threshold, B<<D,F   9850/41 ≈ 240.24" in text
    md = run_cli(*MATMUL, "--format", "md").stdout
    assert "| critical intensity | $\\frac{9850}{41} \\approx 240.24$ FLOP/byte |" in md
    tex = run_cli(*MATMUL, "--format", "tex").stdout
    assert tex.startswith("\\begin{tabular}") and "T\\_math" in tex


def test_dot_product_limit() -> None:
    out = derive_json("derive", "--flops", "2*N - 1", "--bytes", "4*N + 2", "--regime", "N->oo")
    assert out["intensity"] == "(2*N - 1)/(4*N + 2)" and out["intensity_leading"] == "1/2"


@pytest.mark.parametrize(("args", "message"), [
    (["--chip", "tpu-v9"], "--chip: unknown chip 'tpu-v9'"),
    (["--solve", "Q"], "--solve: unknown symbol 'Q': the formulas use B, D, F"),
    (["--flops", "2*B*", "--bytes", "B"], "--flops: malformed formula '2*B*'"),
    (["--set", "hbm=100 TFLOP/s"], "--set hbm: '100 TFLOP/s' is not a bandwidth"),
    (["--subs", "D=-4"], "--subs: size D must be positive, got -4"),
    (["--set", "nvlink=1"], "--set nvlink: chip 'tpu-v5e' has no figure 'nvlink'"),
    (["--flops", "__import__('os').system('id')", "--bytes", "1"],
     "--flops: calling attribute access is not allowed"),
    (["--regime", "B<D"], "--regime: cannot read the regime clause 'B<D'"),
    (["--catalog", "missing.toml"], "missing.toml: no such catalogue file"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], message: str) -> None:
    base = ["derive", "--einsum", "B D, D F -> B F"] if "--flops" not in args else ["derive"]
    done = run_cli(*base, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_hostile_formula_runs_nothing(tmp_path: Path) -> None:
    target = tmp_path / "ran"
    done = run_cli("derive", "--flops", f"__import__('os').system('touch {target}')",
                   "--bytes", "1")
    assert done.returncode == 2 and not target.exists()


def test_usage_errors_exit_2() -> None:
    assert run_cli().returncode == 2
    done = run_cli("derive", "--format", "pdf")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_help_does_not_import_sympy() -> None:
    code = ("import sys; from symroof.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'sympy' not in sys.modules, 'sympy imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "derive" in done.stdout


@pytest.mark.slow
def test_chips_and_chip() -> None:
    listing = run_cli("chips").stdout
    assert "tpu-v5e" in listing and "rtx-4080" in listing
    data = json.loads(run_cli("chip", "tpu-v5e", "--json").stdout)
    hbm = data["figures"]["hbm"]
    assert hbm["value"] == "810000000000"
    assert {a["label"] for a in hbm["alternatives"]} >= {"B1"}
    assert data["sources"][hbm["source"]]
    shown = run_cli("chip", "h100-sxm").stdout
    # NVIDIA's 989.4e12 FLOP/s over 3.35e12 B/s: 98940/335 = 19788/67
    assert "critical intensity (bf16 / hbm): 19788/67 ≈ 295.34" in shown
    assert run_cli("chip", "nope").returncode == 2
