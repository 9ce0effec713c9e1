"""Bad input gets one clear line and exit code 2; hostile formulas run nothing; an
interrupted report leaves the previous files whole; output is deterministic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.cli.main import main
from symroof.core.errors import InputError
from symroof.core.parse import parse_expr
from symroof.core.timelimits import time_limit
from tests.conftest import ROOT, examples, run_cli

MM = ["derive", "--einsum", "B D, D F -> B F"]
F1 = ["derive", "--bytes", "1", "--flops"]


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


CORPUS: list[tuple[list[str], str]] = [
    # derive: chips, figures, formulas, sizes, regimes, einsum specs
    ([*MM, "--chip", "tpu-v9"], "--chip: unknown chip 'tpu-v9'"),
    ([*F1, "2*B+"], "--flops: malformed formula '2*B+'"),
    ([*MM, "--solve", "Q"], "--solve: unknown symbol 'Q': the formulas use B, D, F"),
    ([*MM, "--set", "hbm=100 TFLOP/s"], "--set hbm: '100 TFLOP/s' is not a bandwidth"),
    ([*MM, "--subs", "D=-4"], "--subs: size D must be positive, got -4"),
    ([*MM, "--subs", "D=0"], "--subs: size D must be positive, got 0"),
    ([*MM, "--set", "foo=1"], "--set foo: chip 'tpu-v5e' has no figure 'foo'"),
    ([*MM, "--set", "hbm=B9"], "--set hbm: 'B9' is neither a value nor the label of an "
                               "alternative (labels: B1, GC-v5e"),
    ([*MM, "--set", "hbm"], "--set: expected KEY=VALUE, got 'hbm'"),
    ([*F1, "__import__('os')"], "--flops: the function '__import__' is not allowed"),
    ([*F1, "B.real"], "--flops: attribute access is not allowed in formula 'B.real'"),
    ([*F1, "lambda: 1"], "--flops: lambda is not allowed"),
    ([*F1, "[B for B in D]"], "--flops: a comprehension is not allowed"),
    ([*F1, "B/0"], "--flops: division by zero in formula 'B/0'"),
    ([*F1, "B**10000"], "--flops: the exponent 10000 is beyond 1000"),
    ([*F1, "9**9**9**9"], "--flops: the exponent 387420489 is beyond 1000"),
    ([*F1, "Б*2"], "--flops: the name 'Б' is not allowed in formula 'Б*2'"),
    ([*F1, ""], "--flops: empty formula"),
    ([*F1, "0"], "--flops: '0' must be positive"),
    (["derive", "--flops", "B", "--bytes", "-5"], "--bytes: '-5' must be positive"),
    ([*F1, "B" * 2500], "--flops: formula is 2500 characters long; the limit is 2000"),
    (["derive", "--bytes", "1", "--flops=" + "-" * 60 + "B"], "--flops: a double sign (--, +-)"),
    ([*MM, "--regime", "B<D"], "--regime: cannot read the regime clause 'B<D'"),
    ([*MM, "--regime", "Q<<D"], "--regime: the regime names Q, which no formula uses"),
    ([*MM, "--subs", "D=abc"], "--subs: D must be a number, got 'abc'"),
    ([*MM, "--subs", "D"], "--subs: expected NAME=VALUE, got 'D'"),
    ([*MM, "--subs", "D=1,D=2"], "--subs: 'D' is given twice"),
    ([*MM, "--subs", "Q=5"], "--subs: unknown symbol 'Q': the formulas use B, D, F"),
    ([*MM, "--dtypes", "fp12"], "unknown dtype 'fp12'"),
    (["derive", "--einsum", "B D -> G"], "output dimension 'G' is in no operand"),
    (["derive", "--einsum", "B D, D F"], "expected 'operands -> output'"),
    ([*MM, "--flops", "1"], "--einsum: give either --einsum or --flops/--bytes, not both"),
    ([*F1, "B", "--link", "ici"], "--link: --link needs --comm-bytes"),
    (["derive"], "derive: give --flops (and --bytes or --comm-bytes), or --einsum"),
    ([*MM, "--catalog", "missing.toml"], "missing.toml: no such catalogue file"),
    ([*MM, "--compute", "vpu"], "chip 'tpu-v5e' has no vpu peak for bf16"),
    ([*MM, "--solve", "B", "--subs", "B=4"], "--subs: B is solved for, so it cannot be "
                                            "given a value"),
    # optimize
    (["optimize", "--constants", "nope"], "--constants: unknown constant set 'nope'"),
    (["optimize", "--minimize", "A/N**a + B/D**b", "--subject-to", "6*N*D"],
     "--subject-to: expected one relation like 'lhs = rhs'"),
    (["optimize", "--minimize", "A/N**a + B/D**b", "--subject-to", "6*N*D = C",
      "--vars", "N,Q"], "--vars: unknown variable Q"),
    (["optimize"], "optimize: give --minimize EXPR"),
    # verify and report options
    (["verify", "--timeout", "0"], "--timeout: must be a positive number of seconds, got 0"),
    (["verify", "--only", "FOO"], "--only: unknown verdict 'FOO'"),
    (["verify", "no/such/path.py"], "no/such/path.py: no such file or folder"),
    (["report", "--format", "docx"], "--format: unknown format 'docx'"),
    (["report", "--check", "--format", "pdf"], "--format: --check compares md and tex only"),
    (["chip", "nope"], "unknown chip 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), CORPUS, ids=[f"cli-{i}" for i in
                                                          range(len(CORPUS))])
def test_bad_command_line(args: list[str], message: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(args, capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("symroof: error: ")
    assert message in lines[0], lines[0]


CATALOGS: list[tuple[str, str]] = [
    ("", "no [chips.NAME] tables"),
    ("[chips.x]\n", "a chip needs at least one figure"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = 5, source = "a" }',
     "chips.x.memory.hbm.bandwidth: 'value' must be a string, got int"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = "1 GB/s" }',
     "chips.x.memory.hbm.bandwidth: missing 'source'"),
    ("[chips.x", "not valid TOML"),
    ('[sources]\na="b"\n[chips.x.peak.mxu.fp12]\nvalue = "1 TFLOP/s"\nsource = "a"',
     "chips.x.peak.mxu: unknown dtype 'fp12'"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\ncapacity = { value = "-16 GB", source = "a" }',
     "chips.x.memory.hbm.capacity.value: '-16 GB' must be positive"),
    ('[sources]\na="b"\n[chips.x.links.ici]\nbandwidth = { value = "1 GB/s", source = "a" }\n'
     'direction = "sideways"', "direction must be one of one-way, bidirectional"),
    ('[sources]\na="b"\n[chips.x.peak.tpu.bf16]\nvalue = "1 TFLOP/s"\nsource = "a"',
     "unknown compute unit 'tpu'"),
    ("chips = 5", "no [chips.NAME] tables"),
]


@pytest.mark.parametrize(("body", "message"), CATALOGS, ids=[f"catalog-{i}" for i in
                                                            range(len(CATALOGS))])
def test_bad_catalogue_file(body: str, message: str, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chips.toml"
    path.write_text(body, encoding="utf-8")
    code, _, err = cli(["chips", "--catalog", str(path)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert str(path) in err and message in err, err


HEAD = "from symroof.claims.model import Derivation, Source\n"
DERIVATIONS: list[tuple[str, str]] = [
    ("def build():\n    x = 1\n    return x / 0\n",
     ":3: the derivation raised ZeroDivisionError: division by zero"),
    ("def build(:\n", ":1: syntax error"),
    ("def build():\n    return 5\n", "build() returned int, not a Derivation"),
    (HEAD + "def build():\n    d = Derivation.begin('t', 't', Source('b'))\n"
     "    d.claim('c', stated='abc', statement='s', quote='q', derive=lambda: 1)\n"
     "    return d.build()\n", ":4: claim 'c': stated: cannot read the stated value 'abc'"),
    (HEAD + "def build():\n    d = Derivation.begin('t', 't', Source('b'))\n"
     "    d.claim('c', stated='1', statement='s', quote='q', derive=lambda: 1)\n"
     "    d.claim('c', stated='1', statement='s', quote='q', derive=lambda: 1)\n"
     "    return d.build()\n", ":5: derivation 't': claim 'c': claim id used twice"),
    (HEAD + "def build():\n    d = Derivation.begin('t', 't', Source('b'))\n"
     "    d.claim('c', kind='expr', stated='B +', statement='s', quote='q', "
     "derive=lambda: 1)\n    return d.build()\n", "malformed formula 'B +'"),
    (HEAD + "def build():\n    d = Derivation.begin('t', 't', Source('b'))\n"
     "    d.claim('Bad Id', stated='1', statement='s', quote='q', derive=lambda: 1)\n"
     "    return d.build()\n", "claim 'Bad Id': claim ids are lower-case"),
    (HEAD + "def build():\n    d = Derivation.begin('t', 't', Source('b'))\n"
     "    d.claim('m', kind='measurement', stated='80%', statement='s', quote='q')\n"
     "    return d.build()\n", "a measurement needs its evidence"),
    ("import no_such_module_anywhere\n", "the derivation raised ModuleNotFoundError"),
]


@pytest.mark.parametrize(("body", "message"), DERIVATIONS, ids=[f"derivation-{i}" for i in
                                                                range(len(DERIVATIONS))])
def test_bad_derivation_file(body: str, message: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.py"
    path.write_text(body, encoding="utf-8")
    code, out, err = cli(["verify", str(path)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and message in err, err
    assert "Traceback" not in err


def test_other_bad_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = cli(["verify", str(tmp_path / "notes.txt")], capsys)
    assert code == 2 and "a derivation file must be a Python module (.py)" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(["verify", str(empty)], capsys)
    assert code == 2 and "no derivation units (*.py, or folders with claims.py)" in err


def test_corpus_is_large() -> None:
    assert len(CORPUS) + len(CATALOGS) + len(DERIVATIONS) + 2 >= 40


def test_failed_report_leaves_no_partial_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def build():\n    raise RuntimeError('boom')\n")
    out = tmp_path / "out"
    code, _, err = cli(["report", str(bad), "--out", str(out)], capsys)
    assert code == 2 and "the derivation raised RuntimeError: boom" in err
    assert not out.exists()


# ---------------------------------------------------------------- hostile formulas --

FRAGMENTS = ["__import__('os').system('touch {t}')", "open('{t}', 'w')", "B", "D", "2",
             "1.5e3", "**", "*", "/", "+", "-", "(", ")", "lambda: 0", "[x for x in B]",
             "().__class__", "B.__dict__", "exec('1')", "eval('1')", "sqrt(", "max(B, D)",
             "9**9**9", "'s'", ",", ":", "=", "<", "!", "~", "@", "getattr", "globals()",
             "\\", "\n", "__builtins__", "f'{B}'", "B if D else F", "{", "}", "0", "^"]


@pytest.mark.slow
@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12),
       st.text(alphabet="BDFN0123456789+-*/().,^ e", max_size=20))
def test_hostile_formulas_never_run_code_crash_or_hang(tmp_path_factory: pytest.TempPathFactory,
                                                       parts: list[str], noise: str) -> None:
    target = tmp_path_factory.getbasetemp() / "ran"
    formula = "".join(parts).replace("{t}", str(target)) + noise
    with time_limit(5, cpu=True):  # a hang is CPU spent; a busy machine spends none of it
        try:
            parse_expr(formula, where="--flops")
        except InputError as exc:
            assert str(exc).startswith("--flops: ")
    assert not target.exists()


# ------------------------------------------------------------ interruption, determinism --

@pytest.mark.slow
def _wait_for_a_worker(pid: int, seconds: float = 120) -> None:
    """Until process ``pid`` has a child (a worker it forked), however busy the machine; a
    fixed sleep would interrupt a slow start before its handler is in place."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if not children.exists():  # no /proc: the old, load-dependent wait
        time.sleep(2)
        return
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if children.read_text().split():
            time.sleep(0.2)
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} forked no worker within {seconds} s")


def test_ctrl_c_during_report_leaves_previous_reports_whole(tmp_path: Path) -> None:
    small = ROOT / "tests" / "data" / "small.py"
    out = tmp_path / "out"
    assert run_cli("report", str(small), "--format", "md", "--out", str(out)).returncode == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "small.md").write_bytes(b"previous\n")
    before["small.md"] = b"previous\n"
    slow = tmp_path / "slow.py"  # a claim that takes a minute: the run is surely verifying
    slow.write_text("import time\nfrom symroof.claims.model import Derivation, Source\n"
                    "def build():\n    d = Derivation.begin('slow', 'slow', Source('b'))\n"
                    "    d.claim('c', stated='1', statement='s', quote='q', "
                    "derive=lambda: time.sleep(60) or 1)\n    return d.build()\n")
    proc = subprocess.Popen([sys.executable, "-m", "symroof", "report", str(small), str(slow),
                             "--format", "md", "--no-cache", "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_a_worker(proc.pid)  # verifying: the slow claim's worker is forked
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "symroof: interrupted" in err, (proc.returncode, err)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_an_interrupt_a_library_swallows_is_raised_again_by_the_run() -> None:
    from symroof.claims.processes import interrupts_remembered
    before = signal.getsignal(signal.SIGINT)
    with interrupts_remembered() as interrupted:
        try:  # what mpmath's bare ``except: pass`` does to a Ctrl-C that lands in it
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler runs at once; never reached
        except:  # noqa: E722
            pass
        with pytest.raises(KeyboardInterrupt):
            interrupted()
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.slow
def test_verify_json_is_identical_across_runs_and_hash_seeds() -> None:
    outs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = run_cli("verify", "--json", "--no-timing", env=env)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["claims"][0]["seconds"] is None


def test_latex_user_text_is_escaped_and_pdflatex_never_gets_shell_escape(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from symroof.core.printer import tex_escape
    from symroof.render import pdf
    hostile = r"\input{/etc/passwd} \write18{id} 100% x_1 $y$ a&b #3"
    assert tex_escape(hostile) == (r"\textbackslash{}input\{/etc/passwd\} "
                                   r"\textbackslash{}write18\{id\} 100\% x\_1 \$y\$ a\&b \#3")
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(cmd)
        Path(str(kwargs["cwd"]), "doc.pdf").write_bytes(b"%PDF-fake")
        return subprocess.CompletedProcess(cmd, 0, b"", b"")
    monkeypatch.setattr(pdf.subprocess, "run", fake_run)
    assert pdf.compile_pdf("x", "x.tex", pdflatex="pdflatex") == b"%PDF-fake"
    assert calls and all("-no-shell-escape" in c and not any("shell-escape" in a and
                                                            a != "-no-shell-escape"
                                                            for a in c) for c in calls)
