"""The command line says what Python says (issue 36, item 7): one test per command, exact
values derived here by hand from the catalogue's figures (tpu-v5e: 1.97e14 FLOP/s bf16,
ICI 4.5e10 B/s one way per link, 1 us per hop; sources in chips.toml)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp

from symroof.cli.main import main
from symroof.commands.collective import CollectiveRequest, collective_of
from symroof.commands.derive import DeriveRequest, derive
from symroof.core.parse import parse_expr

PEAK = Fraction(197 * 10**12)       # tpu-v5e bf16, FLOP/s
ICI = Fraction(45 * 10**9)          # tpu-v5e ICI, B/s one way
HOP = Fraction(1, 10**6)            # tpu-v5e ICI latency per hop, s


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def same(text_: object, expected: sp.Expr) -> bool:
    assert isinstance(text_, str)
    return sp.simplify(parse_expr(text_) - expected) == 0


def test_derive_flops_alone_is_a_pure_flop_op(capsys: pytest.CaptureFixture[str]) -> None:
    out = cli_json(capsys, "derive", "--flops", "2*N", "--chip", "tpu-v5e")
    n = sp.Symbol("N", positive=True)
    assert same(out["t_math"], n * sp.Rational(2) / sp.Rational(PEAK.numerator))
    assert out["bound"] == "compute"
    code, text_, _ = cli(capsys, "derive", "--flops", "2*N", "--chip", "tpu-v5e")
    assert code == 0 and "bound               compute" in text_
    # the one answer: Python's request says the same
    assert derive(DeriveRequest(flops="2*N")).roofline.bound() == "compute"


def test_collective_solves_for_an_axis_size(capsys: pytest.CaptureFixture[str]) -> None:
    out = cli_json(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X",
                   "--mesh", "X=N", "--chip", "tpu-v5e", "--solve", "N")
    # a line of N chips: latency (N - 1) a, bandwidth (N - 1)/N V/W; they meet at N = V/(W a)
    v = sp.Symbol("V", positive=True)
    meet = v / sp.Rational(ICI * HOP)
    bound = out["latency_bound"]
    assert isinstance(bound, dict)
    assert same(bound["exact"], meet) and bound["relation"] == "N > V/45000"
    code, text_, _ = cli(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X",
                         "--mesh", "X=N", "--chip", "tpu-v5e", "--solve", "N")
    assert code == 0 and "latency-bound when             N > V/45000" in text_
    r = collective_of(CollectiveRequest(kind="allgather", mesh="X=N", axes="X", nbytes="V",
                                        solve="N"))
    assert r.threshold is not None and r.threshold.direction == "<"
    code, _, err = cli(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X",
                       "--mesh", "X=8", "--chip", "tpu-v5e", "--solve", "M")
    assert code == 2 and "unknown size 'M': the collective's bytes and axes use V" in err


def test_derive_mesh_states_its_topology_and_wraps(capsys: pytest.CaptureFixture[str],
                                                   ) -> None:
    args = ("derive", "--mesh", "X=16:wraps", "--chip", "tpu-v5e", "--matmul",
            "bf16[B, D_X] x bf16[D_X, F]")
    code, text_, _ = cli(capsys, *args)
    assert code == 0
    assert "  mesh                X=16:wraps on topology tpu-v5e-pod" in text_
    assert "X=16: ring on the torus over ici, wraps around" in text_
    out = cli_json(capsys, *args)
    assert {"label": "mesh", "text": "X=16:wraps on topology tpu-v5e-pod"} in \
        out["notes"]  # type: ignore[operator]
    # AllReduce of bf16[B, F] over a wrapped ring of 16: 2 (15/16) 2BF / (2W), 2 x 8 hops
    b, f = sp.symbols("B F", positive=True)
    terms = out["terms"]
    assert isinstance(terms, dict)
    assert same(terms["ici"], 2 * sp.Rational(15, 16) * 2 * b * f / (2 * sp.Rational(ICI)))
    assert same(terms["latency"], sp.Integer(16) * sp.Rational(HOP))


def test_alltoall_total_is_per_device_over_n(capsys: pytest.CaptureFixture[str]) -> None:
    total = cli_json(capsys, "collective", "alltoall", "--bytes", "V", "--total", "--axes",
                     "X", "--mesh", "X=8", "--chip", "tpu-v5e")
    each = cli_json(capsys, "collective", "alltoall", "--bytes", "V/8", "--axes", "X",
                    "--mesh", "X=8", "--chip", "tpu-v5e")
    v = sp.Symbol("V", positive=True)
    assert same(total["nbytes"], v / 8)
    assert total["time"] == each["time"]
    # a line of 8: floor(64/4) (V/8) / (8 W) = V / (4 W) on the busiest link
    assert same(total["bandwidth_time"], v / (4 * sp.Rational(ICI)))
    code, _, err = cli(capsys, "collective", "allgather", "--bytes", "V", "--total",
                       "--axes", "X", "--mesh", "X=8")
    assert code == 2
    assert err.strip().endswith("--total: --total says an alltoall's --bytes are the total "
                                "over its devices, not of the allgather")


def test_collective_help_names_total(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["collective", "--help"])
    out = capsys.readouterr().out
    assert "--total" in out and "total over the group's devices" in " ".join(out.split())


@pytest.mark.slow
def test_plan_laws_name_the_exact_and_the_book_form(capsys: pytest.CaptureFixture[str],
                                                    ) -> None:
    out = cli_json(capsys, "plan", "llama-2-7b", "--train", "--laws", "--context", "4096")
    laws = {(x["chip"], x.get("kind")): x for x in out["laws"]}  # type: ignore[attr-defined]
    n = sp.Symbol("N", positive=True)
    gpu = laws["h100-sxm", "dp"]
    exact, book = parse_expr(gpu["expression"]), parse_expr(gpu["book"])
    # the book drops a ring's (N - 1)/N, nothing else
    assert sp.simplify(exact - book * (n - 1) / n) == 0
    tpu = laws["tpu-v5e", "dp"]
    assert sp.simplify(parse_expr(tpu["expression"]) / parse_expr(tpu["book"])) == \
        sp.Rational(15, 16)
    code, text_, _ = cli(capsys, "plan", "llama-2-7b", "--train", "--laws", "--context",
                         "4096")
    assert code == 0 and "law (exact)" in text_ and "book form" in text_


def test_comm_bytes_per_direction_or_both(capsys: pytest.CaptureFixture[str]) -> None:
    one = cli_json(capsys, "derive", "--flops", "2*N", "--comm-bytes", "4*N")
    both = cli_json(capsys, "derive", "--flops", "2*N", "--comm-bytes", "4*N", "--comm-per",
                    "both")
    n = sp.Symbol("N", positive=True)
    assert same(one["t_comms"]["ici"], 4 * n / sp.Rational(ICI))  # type: ignore[index]
    assert same(both["t_comms"]["ici"], 4 * n / (2 * sp.Rational(ICI)))  # type: ignore[index]
    assert one["notes"] == [{"label": "bytes (ici) counted", "text": "per direction, timed "
                             "at the one-way 45000000000 B/s per chip"}]
    code, text_, _ = cli(capsys, "derive", "--flops", "2*N", "--comm-bytes", "4*N",
                         "--comm-per", "both")
    assert "over both directions, timed at the bidirectional 90000000000 B/s" in text_
    code, _, err = cli(capsys, "derive", "--flops", "2*N", "--comm-per", "both")
    assert code == 2
    assert err.strip().endswith("--comm-per: --comm-per says how --comm-bytes are counted: "
                                "give --comm-bytes")


def test_model_decode_prints_the_book_form_under_choices(capsys: pytest.CaptureFixture[str],
                                                         ) -> None:
    args = ("model", "llama-2-7b", "--decode", "--context", "128", "--chip", "h100-sxm",
            "--choices", "book")
    out = cli_json(capsys, *args)
    # Llama 2 7B: 6,738,415,616 parameters (its card), 2 L K H x 2 = 524,288 KV bytes a token
    expected = sp.Rational(6738415616 * 2 + 128 * 524288, 335 * 10**10)
    assert parse_expr(str(out["book_decode_time"])) == expected
    code, text_, _ = cli(capsys, *args)
    assert code == 0 and text_.rstrip().endswith(
        "book form: weights and KV cache read once over h100-sxm's HBM, no compute: 4.043 ms")
    exact = cli_json(capsys, *args[:-2])
    assert "book_decode_time" not in exact


def test_the_tensor_parallel_limit_on_the_command_line(capsys: pytest.CaptureFixture[str],
                                                       ) -> None:
    out = cli_json(capsys, "derive", "--mesh", "X=Y", "--chip", "h100-sxm", "--mlp", "tp=X",
                   "--choices", "book", "--between", "math,nvlink", "--solve", "Y")
    th = out["threshold"]
    assert isinstance(th, dict) and th["direction"] == "<"
    f = sp.Symbol("F", positive=True)
    # F W / C: 4.5e11 B/s of NVLink one way, 9.894e14 FLOP/s bf16 (NVIDIA's dense figure)
    assert same(th["exact"], f * sp.Rational(450 * 10**9, 9894 * 10**11))
