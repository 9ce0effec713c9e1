"""derive --serial (terms that do not overlap add to T_lower) and collective --between (where
two of its terms meet); a bad term is named."""

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


def test_collective_between_two_of_its_terms(capsys: pytest.CaptureFixture[str]) -> None:
    # 16 H100s = 2 nodes of 8: an AllGather of V sends 7V/8 over NVLink (450e9 B/s one way)
    # and V/16 over IB; with 2 us per NVLink hop (7 hops) and 5 us per IB hop (1 hop) the
    # latency is 19 us, equal to the NVLink term at V = 19e-6 x 8 x 450e9 / 7 = 68400000/7
    args = ["collective", "allgather", "--bytes", "V", "--axes", "X", "--mesh", "X=16",
            "--chip", "h100-sxm", "--set", "nvlink.latency=2 us", "--set", "ib.latency=5 us",
            "--between", "nvlink,latency", "--solve", "V"]
    assert main([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["between"]
    assert (got["terms"], got["direction"]) == (["nvlink", "latency"], ">")
    assert sp.Rational(got["exact"]) == sp.Rational(68400000, 7)
    assert main(args) == 0
    assert "T_nvlink > T_latency when      V > 68400000/7" in capsys.readouterr().out
    assert main(args[:-2]) == 2
    assert "--between: --between needs --solve SYMBOL" in capsys.readouterr().err
    assert main([*args[:-4], "--between", "ici,latency", "--solve", "V"]) == 2
    assert "--between: no term 'ici' in the roofline" in capsys.readouterr().err


def test_model_between_two_terms_of_a_step(capsys: pytest.CaptureFixture[str]) -> None:
    from symroof.models import model
    from symroof.plans.device_step import device_step
    args = ["model", "llama-2-7b", "--prefill", "--tokens", "16", "--chip", "h100-sxm",
            "--between", "math,hbm"]
    assert main([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["between"]
    assert (got["terms"], got["direction"]) == (["compute", "hbm"], ">")
    root = sp.Rational(got["exact"])
    # the step's own terms balance at the root, and compute is the larger past it
    step = device_step(model("llama-2-7b"), "prefill", None, {}, batch=None, context=16,
                       chip=chip("h100-sxm"))
    b = next(s for s in step.terms["compute"].free_symbols if s.name == "B")
    compute, hbm = step.terms["compute"], step.terms["hbm"]
    assert sp.simplify(compute.subs(b, root) - hbm.subs(b, root)) == 0
    past = sp.floor(root) + 1
    assert compute.subs(b, past) > hbm.subs(b, past) and \
        compute.subs(b, past - 1) < hbm.subs(b, past - 1)
    assert main(args) == 0
    assert f"T_compute > T_hbm when B > {got['exact']}" in capsys.readouterr().out
    # a link names the collective's term; a term the step lacks, or no step, is refused
    assert main(["model", "llama-2-7b", "--decode", "--context", "64", "--between",
                 "math,ib"]) == 2
    assert "--between: no term 'ib' in the step (terms: math, hbm)" in capsys.readouterr().err
    # llama-2-7b tensor parallel over 8 H100s: its AllReduces grow with B as the compute does
    # (at bandwidth only); their per-hop latency puts the crossing below B = 0
    assert main([*args[:-2], "--mesh", "X=8", "--between", "nvlink,math", "--set",
                 "nvlink.latency=0"]) == 2
    assert "T_tp over X (nvlink) = T_compute do not cross as B varies" in \
        capsys.readouterr().err
    assert main([*args[:-2], "--mesh", "X=8", "--between", "nvlink,math"]) == 2
    assert "which is not positive: the terms never cross" in capsys.readouterr().err
    assert main(["model", "llama-2-7b", "--between", "math,hbm"]) == 2
    assert "--between: --between solves a step for its batch" in capsys.readouterr().err
