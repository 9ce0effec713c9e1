"""derive --serial: terms that do not overlap add to T_lower; a bad term is named."""

from __future__ import annotations

import json

import pytest
import sympy as sp

from symroof import chip
from symroof.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["derive", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serial_terms_add_to_t_lower(capsys: pytest.CaptureFixture[str]) -> None:
    v5e = chip("tpu-v5e")
    # 6 FLOPs and 2 bytes, both serial: T_lower = 6/C + 2/W (and no overlapping term left)
    got = run(capsys, "--flops", "B*D*F", "--bytes", "B*D", "--serial", "math,hbm",
              "--subs", "B=1,D=2,F=3")
    assert got["serial"] == ["compute", "hbm"]
    assert sp.Rational(got["t_lower"]) == 6 / v5e.peak("bf16") + sp.Integer(2) / v5e.bandwidth()
    # a sharded matmul whose ici and latency terms run after it: max(math, hbm) + ici + latency
    got = run(capsys, "--mesh", "X=8", "--chip", "tpu-v5e", "--matmul",
              "bf16[B, D_X] x bf16[D_X, F]", "--serial", "ici,latency",
              "--subs", "B=512,D=8192,F=8192")
    t = {k: sp.Rational(v) for k, v in got["t_comms"].items()}
    math = sp.Rational(got["t_math"])
    latency = sp.Rational(7, 10**6) * 2  # an AllReduce over a line of 8: 2 x 7 hops of 1 us
    assert sp.Rational(got["t_lower"]) == sp.Max(math, t["hbm"]) + t["ici"] + latency


def test_serial_names_a_term_of_the_roofline(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "--flops", "B", "--bytes", "B", "--serial", "nvlink"]) == 2
    assert "--serial: no term 'nvlink' in the roofline (terms: math, hbm)" in \
        capsys.readouterr().err
    assert main(["derive", "--flops", "B", "--bytes", "B", "--serial", "hbm,hbm"]) == 2
    assert "--serial: term 'hbm' is named twice" in capsys.readouterr().err
