"""``symroof collective`` and ``symroof derive --mesh --between``: output, JSON, exit codes."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from symroof.cli.main import main
from tests.conftest import run_cli


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))  # type: ignore[no-any-return]


def test_collective_json_has_the_contract_fields(capsys: pytest.CaptureFixture[str]) -> None:
    out = as_json(capsys, "collective", "allgather", "--array", "bf16[B_X, D]", "--axes", "X",
                  "--mesh", "X=16", "--chip", "tpu-v5e", "--subs", "B=4096,D=8192")
    # V = 2 B D = 2^26 bytes; 15/16 of it crosses; each direction of a link carries half.
    bandwidth = Fraction(15, 16) * 2**26 / (2 * 45 * 10**9)
    latency = Fraction(8, 10**6)  # floor(16/2) hops of 1 us
    assert out["bytes_per_device"] == str(15 * 2**26 // 16)
    assert out["bandwidth_time"] == str(bandwidth)
    assert out["latency_time"] == str(latency)
    assert out["time"] == str(bandwidth + latency)
    assert out["latency_bound_below"] == str(latency * 2 * 45 * 10**9 * Fraction(16, 15))
    for key in ("bytes_per_device", "bandwidth_time", "latency_time", "time",
                "latency_bound_below"):
        assert math.isclose(out[f"{key}_value"], eval_fraction(out[key]))  # type: ignore[arg-type]


def eval_fraction(text: object) -> float:
    num, _, den = str(text).partition("/")
    return int(num) / int(den or 1)


def test_collective_latency_bound_in_a_size(capsys: pytest.CaptureFixture[str]) -> None:
    out = as_json(capsys, "collective", "allgather", "--array", "bf16[B_X, D]", "--axes", "X",
                  "--mesh", "X=16", "--chip", "tpu-v5e", "--solve", "B", "--subs", "D=8192")
    bound = out["latency_bound"]
    assert bound == {"symbol": "B", "relation": "B < 375/8", "exact": "375/8",
                     "exact_value": 46.875, "integer": 46}


def test_collective_on_an_nvswitch_node_counts_its_sourced_latency(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X",
                       "--mesh", "X=8", "--chip", "h100-sxm")
    assert code == 0
    assert "latency-bound below            V < 2.16 MB" in out  # 7 hops of 0.6 us
    timed = as_json(capsys, "collective", "allgather", "--bytes", "V", "--axes", "X",
                    "--mesh", "X=8", "--chip", "h100-sxm", "--set", "nvlink.latency=2 us")
    assert (timed["latency_bound_below"], timed["latency_time"]) == ("7200000", "7/500000")


def test_derive_on_a_mesh_between_math_and_ici(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("derive", "--mesh", "X=2", "--chip", "tpu-v5e", "--matmul",
            "bf16[B, D_X] x bf16[D_X, F]", "--between", "math,ici", "--solve", "D")
    out = as_json(capsys, *args)
    th = out["threshold"]
    assert th["relation"] == "D > 78800/9" and th["integer"] == 8756  # type: ignore[index]
    assert th["between"] == ["math", "ici"]  # type: ignore[index]
    assert out["terms"]["ici"] == "B*F/22500000000"  # type: ignore[index]
    code, text, _ = run(capsys, *args)
    assert code == 0
    assert "threshold           D > 78800/9 ≈ 8755.6 (against math,ici)" in text
    assert "smallest integer    8756" in text


def test_derive_between_latency_and_bandwidth(capsys: pytest.CaptureFixture[str]) -> None:
    out = as_json(capsys, "derive", "--mesh", "X=2", "--chip", "tpu-v5e", "--matmul",
                  "bf16[B, D_X] x bf16[D_X, F]", "--between", "bandwidth,latency",
                  "--solve", "B", "--subs", "F=8192")
    # 2 B F / 4.5e10 = 2 us (an AllReduce over a line of 2: two hops of 1 us)
    assert out["threshold"]["exact"] == "5625/1024"  # type: ignore[index]


@pytest.mark.parametrize(("args", "message"), [
    (["collective", "allgather", "--array", "bf16[B_X]", "--axes", "X", "--mesh", "X=512"],
     "the mesh is larger than the topology"),
    (["collective", "allgather", "--array", "bf16[B_X]", "--axes", "X", "--mesh", "X=8,X=4"],
     "'X' is given twice"),
    (["collective", "allgather", "--array", "bf16[B_Z, D]", "--axes", "X", "--mesh", "X=8"],
     "token 'B_Z' at column 6: dimension 'B' is sharded over unknown mesh axis 'Z'"),
    (["collective", "allgather", "--array", "bf16[B_X]", "--axes", "X", "--mesh", "X=8",
      "--set", "ici=9e10"], "--set ici: a link bandwidth must state its convention"),
    (["collective", "allreduce", "--bytes", "2*P", "--axes", "Y", "--mesh", "X=8"],
     "--axes: unknown mesh axis 'Y' (axes: X)"),
    (["derive", "--mesh", "X=8", "--matmul", "bf16[B, D_X] x bf16[D_X, F]", "--between",
      "math,foo", "--solve", "D"], "--between: no term 'foo' in the roofline (terms: math, "
     "hbm, ici, latency, bandwidth)"),
    (["derive", "--mesh", "X=8", "--matmul", "bf16[B, D_X] x bf16[D_X, F]", "--between",
      "math,ici"], "--between needs --solve SYMBOL"),
    (["derive", "--matmul", "bf16[B, D_X] x bf16[D_X, F]"], "--matmul needs --mesh"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str],
                                          message: str) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_a_threshold_with_no_closed_form_is_said_so() -> None:
    done = run_cli("derive", "--flops", "exp(N) + N", "--comm-bytes", "log(N + 2)",
                   "--between", "math,ici", "--solve", "N")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "T_math = T_ici has no closed form in N" in done.stderr


def readme_examples() -> list[tuple[str, list[str]]]:
    """The ``$ symroof ...`` commands of the guide's page on many chips (docs/chips.md)
    with the lines printed."""
    from tests.conftest import ROOT
    from tests.test_docs_pages import examples
    return [(ex.command, list(ex.shown)) for ex in examples(ROOT / "docs" / "chips.md")]


@pytest.mark.parametrize(("command", "shown"), readme_examples(), ids=lambda x: str(x)[:40])
def test_the_many_chips_page_shows_what_the_commands_print(
        capsys: pytest.CaptureFixture[str], command: str, shown: list[str]) -> None:
    import shlex
    args = shlex.split(command)
    assert args[0] == "symroof"
    code, out, _ = run(capsys, *args[1:])
    assert code == 0
    printed = out.rstrip("\n").split("\n")
    kept = [line for line in shown if line.strip() != "..."]
    assert all(line in printed for line in kept), (kept, printed)
    assert [line for line in printed if line in kept] == kept  # same order


def test_matmul_contracted_over_a_wrapped_ring(capsys: pytest.CaptureFixture[str]) -> None:
    """X[B, D_X] x Y[D_X, F] on a v5e ring of 16 (wraps around): T_math = 2 B (D/16) F / C,
    the AllReduce of 2BF bytes costs 2 (15/16) 2BF / (2 W) = 15 B F / (8 W); they meet at
    D = 15 C / W = 15 x 1.97e14 / 4.5e10 = 197000/3."""
    out = as_json(capsys, "derive", "--mesh", "X=16", "--chip", "tpu-v5e", "--matmul",
                  "bf16[B, D_X] x bf16[D_X, F]", "--between", "math,ici", "--solve", "D")
    th = out["threshold"]
    assert (th["exact"], th["integer"], th["relation"]) == (  # type: ignore[index]
        str(Fraction(15 * 197 * 10**12, 45 * 10**9)), 65667, "D > 197000/3")


def test_chip_shows_links_both_ways_and_topologies(capsys: pytest.CaptureFixture[str]) -> None:
    out = as_json(capsys, "chip", "tpu-v5p")
    ici = out["links"]["ici"]  # type: ignore[index]
    assert (ici["one_way"], ici["bidirectional"], ici["latency"], ici["latency_source"]) == (
        "90000000000", "180000000000", "1/1000000", "B3")
    pod = out["topologies"]["tpu-v5p-pod"]  # type: ignore[index]
    assert (pod["shape"], pod["wraparound"], pod["wrap_multiple"], pod["scale_out"]) == (
        [16, 20, 28], "multiple", 4, "dcn")
    code, text, _ = run(capsys, "chip", "b200", "--set", "nvlink=NV-B200")
    assert code == 0
    assert "nvlink   9e11 / 1.8e12 B/s per chip; latency 6e-7 s per hop (source NCCL-TUNE)" \
        in text
    assert "gb200-nvl72: switch 72 over nvlink" in text
