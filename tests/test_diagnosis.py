"""Verdicts that say which simplification a text made: APPROX, SIMPLIFIED and the slips a
diagnosis names (the test chapter ``tests/data/choices`` is written in a book's style)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from symroof.claims.chapter import build_chapter
from symroof.claims.diagnosis import judged_number
from symroof.claims.model import Claim, Conflict, Erratum, Source
from symroof.claims.rules import Verdict
from symroof.claims.runner import run_claim, verify
from symroof.core.choices import Tried
from symroof.render.report import render
from tests.conftest import ROOT, run_cli

CHOICES = ROOT / "tests" / "data" / "choices"
SRC = Source("book", language="en")


@pytest.fixture(scope="module")
def chapter() -> dict[str, object]:
    [d] = build_chapter(CHOICES)
    result = verify([d])
    return {"derivation": d, "result": result,
            "by": {v.claim.id: v for v in result.verdicts}}


def test_a_book_style_allgather_time_reads_simplified_naming_what_it_drops(
        chapter: dict[str, object]) -> None:
    v = chapter["by"]["t_book"]  # type: ignore[index]
    assert v.verdict == Verdict.SIMPLIFIED and not v.verdict.fails
    assert v.detail == ("holds as the leading term in n: the text drops (n-1)/n and the hop "
                        "latency (8 us); exact 707.051 us")
    assert v.diagnosis["choice"] == "collectives=leading, latency=off"
    assert v.diagnosis["kind"] == "choice"
    # V/(2W) of the one-way figure: 2 * 4096 * 8192 bytes / (2 * 45e9 B/s), in us
    assert sp.Rational(v.diagnosis["value"].split()[0]) == \
        sp.Rational(2 * 4096 * 8192, 2 * 45 * 10**9) * 10**6


def test_a_time_over_the_one_way_figure_is_a_mismatch_naming_the_convention(
        chapter: dict[str, object]) -> None:
    v = chapter["by"]["t_one_way"]  # type: ignore[index]
    assert v.verdict == Verdict.MISMATCH
    assert v.detail.startswith("derived 0.707051 ms, stated 1.49 ms; the stated value is what "
                               "the one-way link figure for a ring that sends both ways gives")
    assert v.detail.endswith(": 1.49131 ms (collectives=leading, latency=off, "
                             "link_alpha=one_way)")
    assert v.diagnosis["kind"] == "slip"


def test_gib_printed_as_gb_is_a_mismatch_naming_gib(chapter: dict[str, object]) -> None:
    v = chapter["by"]["array"]  # type: ignore[index]
    assert v.verdict == Verdict.MISMATCH
    assert v.detail == "derived 8.58993 GB, stated 8 GB; the stated 8 GB is 8 GiB"
    assert v.diagnosis == {"choice": "GiB printed as GB", "kind": "slip",
                           "meaning": "the stated 8 GB is 8 GiB",
                           "said": "the stated 8 GB is 8 GiB", "value": "8 GiB",
                           "value_value": 8.0}


def test_a_marked_approximation_within_five_percent_reads_approx(
        chapter: dict[str, object]) -> None:
    v = chapter["by"]["t_approx"]  # type: ignore[index]
    assert v.verdict == Verdict.APPROX and not v.verdict.fails
    assert v.detail == "marked approximate: 1.8% from the derived 0.707051 ms"
    assert chapter["by"]["t_exact"].verdict == Verdict.OK  # type: ignore[index]


def test_the_text_s_declared_choices_read_simplified_and_are_noted(
        chapter: dict[str, object]) -> None:
    v = chapter["by"]["t_declared"]  # type: ignore[index]
    assert v.verdict == Verdict.SIMPLIFIED
    notes = chapter["derivation"].notes  # type: ignore[attr-defined]
    assert any(n.startswith("The text's choices: collectives = leading: the leading term")
               for n in notes)


@pytest.mark.parametrize(("stated", "derived", "verdict"), [
    ("≈0.72 ms", sp.Rational(707, 10**6), Verdict.APPROX),
    ("~0.72 ms", sp.Rational(707, 10**6), Verdict.APPROX),
    ("about 0.72 ms", sp.Rational(707, 10**6), Verdict.APPROX),
    ("0.72 ms", sp.Rational(707, 10**6), Verdict.MISMATCH),  # not marked
    ("≈0.75 ms", sp.Rational(707, 10**6), Verdict.MISMATCH),  # 5.7% off
    ("≈0.71 ms", sp.Rational(707, 10**6), Verdict.OK),  # within the printed precision
])
def test_approx_only_for_a_marked_number_within_five_percent(
        stated: str, derived: sp.Rational, verdict: Verdict) -> None:
    assert judged_number(stated, derived).verdict == verdict


def test_approx_in_russian_and_chinese_marks() -> None:
    assert judged_number("около 0,72 мс", sp.Rational(707, 10**6), "ru").verdict == \
        Verdict.APPROX
    assert judged_number("约0.72 ms", sp.Rational(707, 10**6), "zh").verdict == Verdict.APPROX


def test_unit_slips_both_ways_and_for_rates() -> None:
    assert judged_number("160 kB", 160 * 1024).detail.endswith("the stated 160 kB is 160 KiB")
    assert judged_number("8 GiB", 8 * 10**9).detail.endswith("the stated 8 GiB is 8 GB")
    assert judged_number("1.6 TB/s", sp.Rational(16, 10) * 2**40).detail.endswith(
        "the stated 1.6 TB/s is 1.6 TiB/s")
    plain = judged_number("7 GB", 8 * 2**30)
    assert plain.verdict == Verdict.MISMATCH and plain.diagnosis is None


def _tried(exact: int, simplified: int) -> Tried:
    from symroof.core.choices import EXACT
    return Tried(sp.Integer(exact), EXACT, ((EXACT.with_(latency="off"), sp.Integer(simplified)),))


def test_marks_turn_simplified_and_a_slip_as_they_turn_ok_and_mismatch() -> None:
    c = Conflict("W", (("1", ("a",)), ("2", ("c",))), "t")
    conflicted = run_claim(Claim("c", SRC, "s", "q", "5", value=_tried(7, 5), conflicts=(c,)),
                           "d")
    assert conflicted.verdict == Verdict.INCONSISTENT
    erratum = run_claim(Claim("e", SRC, "s", "q", "8 GB", value=8 * 2**30,
                              erratum=Erratum("binary gigabytes")), "d")
    assert erratum.verdict == Verdict.ERRATUM
    assert erratum.detail == "known erratum: binary gigabytes; the stated 8 GB is 8 GiB"
    stale = run_claim(Claim("s", SRC, "s", "q", "5", value=_tried(7, 5),
                            erratum=Erratum("x")), "d")
    assert stale.verdict == Verdict.STALE


def test_an_expression_claim_is_diagnosed_too() -> None:
    n, v, w = sp.symbols("n V W", positive=True)
    from symroof.core.choices import EXACT
    value = Tried((n - 1) / n * v / w, EXACT,
                  ((EXACT.with_(collectives="leading"), v / w),))
    got = run_claim(Claim("x", SRC, "s", "q", "V/W", kind="expr", value=value), "d")
    assert got.verdict == Verdict.SIMPLIFIED
    assert got.detail.startswith("holds as the leading term in n: the text drops (n-1)/n")


def test_verify_json_carries_the_diagnosis_and_counts_apart(tmp_path: Path) -> None:
    got = run_cli("verify", str(CHOICES), "--json", "--no-cache")
    assert got.returncode == 1  # two MISMATCHes
    data = json.loads(got.stdout)
    assert data["summary"] == {"OK": 1, "APPROX": 1, "SIMPLIFIED": 2, "MISMATCH": 2}
    rows = {r["id"]: r for r in data["claims"]}
    assert rows["t_book"]["diagnosis"]["choice"] == "collectives=leading, latency=off"
    assert rows["t_exact"]["diagnosis"] is None


def test_a_chapter_of_approx_and_simplified_claims_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "claims.py").write_text((CHOICES / "claims.py").read_text("utf-8"), "utf-8")
    table = (CHOICES / "en.toml").read_text("utf-8")
    keep = table.split('["Collectives".t_one_way]')[0] + textwrap.dedent('''
        ["Collectives".t_approx]
        quote = "about 0.72 ms"
        stated = "≈0.72 ms"
        ''')
    omits = 'omits = ["t_one_way", "t_declared", "t_exact", "array"]\n'
    (tmp_path / "en.toml").write_text(keep.replace('language = "en"\n',
                                                   f'language = "en"\n{omits}'), "utf-8")
    got = run_cli("verify", str(tmp_path), "--no-cache")
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.rstrip().endswith("2 claims in 1 derivation: 1 APPROX, 1 SIMPLIFIED")


def test_the_index_lists_diagnoses_next_to_errata(chapter: dict[str, object]) -> None:
    files = dict(render(chapter["result"], ["md"], plots=False).files)  # type: ignore[arg-type]
    index = files["index.md"]
    assert isinstance(index, str)
    errata, diagnoses = index.split("### Diagnoses")[0], index.split("### Diagnoses")[1]
    assert "## Errata" in errata and errata.count("the stated 8 GB is 8 GiB") == 1
    assert "the stated 8 GB is 8 GiB" in diagnoses
    assert "holds as the leading term in n" in diagnoses
    page = files["choices-en.md"]
    assert isinstance(page, str) and "holds as the text simplifies" in page


def test_a_time_over_the_sparse_peak_is_a_mismatch_naming_it() -> None:
    from symroof import chip
    from symroof.core.choices import tried
    h100 = chip("h100-sxm")
    flops = 2 * 8192 * 8192 * 8192

    def seconds(c: object) -> object:
        return flops / h100.peak("bf16", choices=c)  # type: ignore[arg-type]

    value = tried(seconds)
    # a text's 2*8192^3 FLOPs over the 1979 TFLOP/s of the sheet (sparse): 0.556 ms
    got = run_claim(Claim("t", SRC, "s", "q", "0.556 ms", value=value), "d")
    assert got.verdict == Verdict.MISMATCH
    assert "the sparse peak of the spec sheet for a dense matmul gives" in got.detail
    assert got.diagnosis["choice"] == "peak=sparse"
    with pytest.raises(Exception, match="has no sparse peak"):
        chip("tpu-v5e").peak("bf16", choices=value.choices.with_(peak="sparse"))


def test_a_book_s_2p_flops_of_a_7b_model_read_simplified() -> None:
    from symroof.core.choices import tried
    from symroof.models import flops_per_token, model
    from symroof.models.chosen import flops_under
    cfg = model("llama-2-7b")

    def forward(c: object) -> object:
        return flops_under(cfg, 4096, c)  # type: ignore[arg-type]

    # "a 7B model costs 2 x 7e9 = 1.40e10 FLOPs per token"
    got = run_claim(Claim("f", SRC, "s", "q", "1.40e10", value=tried(forward)), "d")
    assert got.verdict == Verdict.SIMPLIFIED
    assert got.detail == ("holds as 2 FLOPs per parameter per token: the text drops attention "
                          "FLOPs and the exact parameter count; exact 1.53622e10")
    assert got.diagnosis["choice"] == "flops=per_token_2P, sizes=nominal"
    # at two digits causal attention (1.43e10) reproduces "1.4e10" too: both are named
    both = run_claim(Claim("h", SRC, "s", "q", "1.4e10", value=tried(forward)), "d")
    assert both.diagnosis["choice"] == "flops=causal"
    assert both.diagnosis["also"] == ["flops=per_token_2P, sizes=nominal"]
    assert both.detail.endswith("; also reproduced by flops=per_token_2P, sizes=nominal")
    exact = run_claim(Claim("g", SRC, "s", "q", "1.5e10", value=tried(forward)), "d")
    assert exact.verdict == Verdict.OK  # 2 P + attention at 4096 positions: 15.4e9
    assert sp.Integer(14_500_000_000) < flops_per_token(cfg, 4096) < 15_500_000_000


def test_a_figure_from_another_edition_of_the_chip_table_is_a_named_choice() -> None:
    from symroof import chip
    from symroof.core.choices import tried

    def ridge(c: object) -> object:
        return chip("tpu-v5e").under(c).ridge()  # type: ignore[arg-type]

    # the chapter's "240" is 1.97e14 / 8.2e11 (B1); the catalogue's default HBM is 8.1e11
    got = run_claim(Claim("r", SRC, "s", "q", "240", value=tried(ridge, editions=("B1",))), "d")
    assert got.verdict == Verdict.SIMPLIFIED
    assert got.detail == "holds with the chip table's B1 edition (edition=B1); exact 243.21"
    assert got.diagnosis["kind"] == "choice" and got.diagnosis["choice"] == "edition=B1"
    # a value no edition reproduces stays a MISMATCH
    off = run_claim(Claim("r", SRC, "s", "q", "250", value=tried(ridge, editions=("B1",))), "d")
    assert off.verdict == Verdict.MISMATCH and off.diagnosis is None


def test_a_marked_approximation_stays_approx_when_only_a_slip_reproduces_it() -> None:
    from symroof.core.choices import EXACT
    # ≈0.72 is 1.8% from 0.707 (APPROX); a slip giving 0.72 exactly does not turn it wrong
    value = Tried(sp.Rational(707, 10**6), EXACT,
                  ((EXACT.with_(link_alpha="one_way"), sp.Rational(72, 10**5)),))
    got = run_claim(Claim("a", SRC, "s", "q", "≈0.72 ms", value=value), "d")
    assert got.verdict == Verdict.APPROX and got.diagnosis is None
    chosen = Tried(sp.Rational(707, 10**6), EXACT,
                   ((EXACT.with_(latency="off"), sp.Rational(72, 10**5)),))
    assert run_claim(Claim("b", SRC, "s", "q", "≈0.72 ms", value=chosen), "d").verdict == \
        Verdict.SIMPLIFIED


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["allgather", "reducescatter", "allreduce", "alltoall"]),
       n=st.sampled_from([4, 8, 16]), nbytes=st.integers(1, 10**9),
       attr=st.sampled_from(["time", "bandwidth_time", "latency_time", "bytes_per_device"]))
def test_a_plain_collective_value_is_judged_as_if_marked_with_choices(
        kind: str, n: int, nbytes: int, attr: str) -> None:
    # one question, one answer: a plain value a recorded collective gives is tried under
    # the named choices exactly as ch.with_choices(collective, of=...) tries it
    from symroof import chip, mesh
    from symroof.claims.chapter import COLLECTIVE_VALUES, Chapter, with_editions
    ch = Chapter("d", "D", Source("b"))
    c = ch.collective(kind, nbytes, "X", mesh(f"X={n}", chip("tpu-v5e")))
    value = getattr(c, attr)
    first = next(a for a in COLLECTIVE_VALUES if getattr(c, a) == value)
    assert with_editions(value, ch) == ch.with_choices(c, of=first)
    assert with_editions(value, Chapter("d", "D", Source("b"))) == value  # not recorded


def test_a_plain_collective_time_reads_simplified_or_a_named_slip_as_if_marked(
        tmp_path: Path) -> None:
    # the same chapter with the values marked and plain: the same verdicts and details
    lines = ("from symroof import chip, mesh\n"
             "def claims(ch):\n"
             "    c = ch.collective('allgather', 10**6, 'X', mesh('X=16', chip('tpu-v5e')))\n"
             "    ch.add(lead={0}, nolat={0}, oneway={0})\n")
    rows = ('[chapter]\nid = "p-en"\ntitle = "P"\nbook = "B"\nlanguage = "en"\n'
            '["S".lead]\nquote = "19.1 us"\nstated = "19.1 us"\n'
            '["S".nolat]\nquote = "10.4 us"\nstated = "10.4 us"\n'
            '["S".oneway]\nquote = "35.8 us"\nstated = "35.8 us"\n')
    got = []
    for value in ("c.time", "ch.with_choices(c)"):
        folder = tmp_path / value.split("(")[0].replace(".", "_")
        folder.mkdir()
        (folder / "claims.py").write_text(lines.format(value))
        (folder / "en.toml").write_text(rows)
        got.append({v.claim.id: (str(v.verdict), v.detail)
                    for v in verify(build_chapter(folder)).verdicts})
    assert got[0] == got[1]
    assert [v for v, _ in got[0].values()] == ["SIMPLIFIED", "SIMPLIFIED", "MISMATCH"]
    assert "link_alpha=one_way" in got[0]["oneway"][1]


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["all_gather", "reduce_scatter", "all_reduce", "all_to_all"]),
       n=st.sampled_from([4, 8, 16]), rows=st.integers(1, 64),
       name=st.sampled_from(["tpu-v5e", "tpu-v5p", "h100-sxm"]),
       attr=st.sampled_from(["time", "bandwidth_time", "latency_time", "bytes_per_device"]))
def test_a_value_of_a_collective_called_directly_is_judged_as_if_marked(
        kind: str, n: int, rows: int, name: str, attr: str) -> None:
    # one question, one answer: a collective the chapter did not record (all_gather(...)
    # called directly) gives its plain values the choices and the link editions that
    # ch.with_choices(collective, of=...) tries
    from symroof import chip, mesh, parallel
    from symroof.claims.chapter import COLLECTIVE_VALUES, Chapter, with_editions
    from symroof.core.units import recording
    ch = Chapter("d", "D", Source("b"))
    array = {"all_gather": f"bf16[{rows * n}_X, 64]", "all_to_all": f"bf16[{rows * n}_X, 64]"
             }.get(kind, f"bf16[{rows * n}, 64]")
    with recording() as made:
        c = getattr(parallel, kind)(array, "X", mesh(f"X={n}", chip(name)))
    ch.made.extend(made)
    value = getattr(c, attr)
    first = next(a for a in COLLECTIVE_VALUES if getattr(c, a) == value)
    marked = ch.with_choices(c, of=first)
    assert with_editions(value, ch) == (marked if marked.alternatives else value)
    assert with_editions(value, Chapter("d", "D", Source("b"))) == value  # nothing made


PLAIN_OR_MARKED = """\
from symroof import chip, mesh
from symroof.core.choices import Choices
from symroof.models import kv_bytes_per_token, model, params, with_round_params
from symroof.models.chosen import params_under
from symroof.models.nominal import kv_bytes_under
from symroof.parallel import all_gather, sharded_matmul
from symroof.plans.device_step import device_step
from symroof.plans.options import StepOptions

def claims(ch):
    wide = mesh('X=16', chip('tpu-v5e'))
    c = all_gather('bf16[8192_X, 64]', 'X', wide)
    mm = sharded_matmul('bf16[4096, 8192_X]', 'bf16[8192_X, 8192]',
                        mesh('X=8', chip('tpu-v5e')))
    cfg = model('llama-2-7b')
    def step(choices=Choices()):
        return device_step(cfg, 'decode', mesh('X=8', 'h100-sxm'), {{'tp': ('X',)}},
                           batch=64, context=2048,
                           options=StepOptions(choices=choices)).t_lower
    far = all_gather('bf16[8192_X, 64]', 'X', mesh('X=2@dcn,Y=16', 'tpu-v5e'))
    big = with_round_params(model('llama-3-70b'), '70e9', kv_bytes_per_token='320e3')
    ch.add(lead={gather}, nolat={gather}, oneway={gather}, edition={gather},
           matmul={matmul}, plan={plan}, count={count}, dcn={dcn}, kv={kv})
"""
PLAIN = {"gather": "c.time", "matmul": "mm.roofline().t_lower", "plan": "step()",
         "count": "params(cfg).total", "dcn": "far.time", "kv": "kv_bytes_per_token(big)"}
MARKED = {"gather": "ch.with_choices(c)", "dcn": "ch.with_choices(far)",
          "kv": "ch.with_choices(lambda k: kv_bytes_under(big, 'bf16', k))",
          "matmul": "ch.with_choices(lambda k: mm.under(k).roofline().t_lower)",
          "plan": "ch.with_choices(step)",
          "count": "ch.with_choices(lambda k: params_under(cfg, k, active=False))"}


def test_plain_values_of_helpers_read_as_the_same_values_marked(tmp_path: Path) -> None:
    # the law of plain and marked values, for a collective called directly (its leading
    # term, latency off, one way, its links' other edition; one over DCN, whose hop latency
    # stays a symbol), a sharded matmul's roofline, a plan's step, a model's parameter
    # count and its KV bytes at the text's own figure: the same verdicts and details
    stated = {"lead": "19.7 us", "nolat": "10.9 us", "oneway": "36.8 us",
              "edition": "17.8 us", "matmul": "2.98 ms", "plan": "3.25 ms",
              "count": "7.0B params", "dcn": "168 us", "kv": "320 kB"}
    rows = '[chapter]\nid = "p-en"\ntitle = "P"\nbook = "B"\nlanguage = "en"\n' + "".join(
        f'["S".{k}]\nquote = "{v}"\nstated = "{v}"\n' for k, v in stated.items())
    got = []
    for name, values in (("plain", PLAIN), ("marked", MARKED)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "claims.py").write_text(PLAIN_OR_MARKED.format(**values))
        (folder / "en.toml").write_text(rows)
        got.append({v.claim.id: (str(v.verdict), v.detail)
                    for v in verify(build_chapter(folder)).verdicts})
    assert got[0] == got[1]
    assert {k: v for k, (v, _) in got[0].items()} == {
        "lead": "SIMPLIFIED", "nolat": "SIMPLIFIED", "oneway": "MISMATCH",
        "edition": "SIMPLIFIED", "matmul": "SIMPLIFIED", "plan": "SIMPLIFIED",
        "count": "SIMPLIFIED", "dcn": "SIMPLIFIED", "kv": "SIMPLIFIED"}
    # a DCN hop's latency has no figure (alpha_dcn): the plain value, a formula, is judged
    # under the choices as the marked one is
    assert got[0]["dcn"][1].startswith("holds under latency=off")
    assert got[0]["edition"][1].startswith("holds with the chip table's B2-draft edition")
    assert "link_alpha=one_way" in got[0]["oneway"][1]
    assert got[0]["count"][1].startswith("holds under sizes=nominal")


def test_a_value_its_helper_cannot_make_again_is_judged_as_it_is() -> None:
    # a remake that fails under some choice (here a division by zero) means no diagnosis
    # for the value, not a failed chapter; one that works is tried
    from symroof.claims.chapter import Chapter, with_editions
    from symroof.core.units import TIME, recording, records

    @records(TIME, again=lambda choices, n: 1 / 0 if choices.latency == "off" else n)
    def broken(n: object) -> object:
        return n

    @records(TIME, again=lambda choices, n: n / 2 if choices.latency == "off" else n)
    def working(n: object) -> object:
        return n

    ch = Chapter("d", "D", Source("b"))
    with recording() as made:
        a, b = broken(sp.Rational(3, 1000)), working(sp.Rational(5, 1000))
    ch.made.extend(made)
    assert with_editions(a, ch) == a
    got = with_editions(b, ch)
    assert isinstance(got, Tried) and [(c.describe(), v) for c, v in got.alternatives] == [
        ("latency=off", sp.Rational(1, 400))]


def _made(make: object) -> tuple[object, object]:
    """A chapter that recorded what ``make()`` made, and that value."""
    from symroof.claims.chapter import Chapter
    from symroof.core.units import recording
    ch = Chapter("d", "D", Source("b"))
    with recording() as made:
        value = make()  # type: ignore[operator]
    ch.made.extend(made)
    return ch, value


@settings(max_examples=25, deadline=None)
@given(params_=st.integers(1, 100).map(lambda k: k * 10**9), kv=st.integers(0, 10**6),
       batch=st.integers(1, 64), context=st.integers(0, 8192),
       name=st.sampled_from(["h100-sxm", "a100-80gb", "tpu-v5e", "tpu-v5p", "b200"]))
def test_a_plain_decode_time_is_tried_as_decode_time_of_gives_it_under_each_choice(
        params_: int, kv: int, batch: int, context: int, name: str) -> None:
    # one question, one answer: a plain decode_time_of(...) is tried counting the weights
    # alone exactly as decode_time_of(..., traffic="weights") gives it, and under each of
    # the chip table's editions exactly as it gives it on that edition's chip
    from symroof import chip
    from symroof.claims.chapter import with_editions
    from symroof.models import decode_time_of
    the_chip = chip(name)
    ch, value = _made(lambda: decode_time_of(params_, kv, the_chip, batch, context))
    got = with_editions(value, ch)
    # made under the book's count (the weights and the KV cache), each choice a change of it
    alternatives = got.alternatives if isinstance(got, Tried) else ()
    if isinstance(got, Tried):
        assert got.choices.describe() == "traffic=weights_kv"
    tried_ = {c.describe(got.choices): v for c, v in alternatives}
    weights = decode_time_of(params_, kv, the_chip, batch, context, traffic="weights")
    assert tried_.get("traffic=weights", value) == weights
    labels = {a.label for f in the_chip.figures.values() for a in f.alternatives}
    for label in labels:
        on = decode_time_of(params_, kv, the_chip.edition(label), batch, context)
        assert tried_.get(f"edition={label}", value) == on
    # and its KV reads in one byte an element, as decode_time_of(..., kv_dtype=X) gives
    # them: the text's 16-bit KV bytes halved
    for dtype in ("fp8", "int8"):
        one_byte = decode_time_of(params_, kv, the_chip, batch, context, kv_dtype=dtype)
        assert one_byte == (2 * params_ + sp.Rational(batch * context * kv, 2)) / \
            the_chip.bandwidth("hbm")
        assert tried_.get(f"kv_dtype={dtype}", value) == one_byte
    # a choice is left out only when it changes nothing
    assert all(v != value for v in tried_.values())
    assert set(tried_) <= {"traffic=weights", "kv_dtype=fp8", "kv_dtype=int8",
                           *(f"edition={lb}" for lb in labels)}


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["llama-2-7b", "llama-3-8b", "gpt2", "mixtral-8x7b"]),
       batch=st.sampled_from([None, 1, 8]), context=st.sampled_from([1024, 4096]))
def test_plain_training_memory_is_tried_as_training_memory_gives_it_under_each_choice(
        name: str, batch: int | None, context: int) -> None:
    # one question, one answer: a plain training_memory(...).total is tried at the round
    # parameter count (bytes per parameter x the nominal count, plus the activations), with
    # Megatron's optimizer as training_memory(optimizer="adam-megatron") gives it, and under
    # a recomputation policy as training_memory(recompute=...) gives it
    from symroof.claims.chapter import with_editions
    from symroof.models import model, training_memory
    from symroof.models.nominal import nominal_params
    cfg = model(name)
    given_ = {"batch": batch, "context": context if batch else None}
    ch, value = _made(lambda: training_memory(cfg, **given_).total)
    got = with_editions(value, ch)
    assert isinstance(got, Tried) and got.value == value
    # made under a training memory's whole count, each choice a change of it
    assert got.choices.describe() == "memory=training"
    tried_ = {c.describe(got.choices): v for c, v in got.alternatives}
    exact = training_memory(cfg, **given_)
    act = exact.parts.get("activations", 0)
    assert tried_["sizes=nominal"] == 16 * nominal_params(cfg) + act
    assert tried_["optimizer=megatron18"] == training_memory(
        cfg, optimizer="adam-megatron", **given_).total
    for policy in ("selective", "full"):
        again = training_memory(cfg, recompute=policy, **given_).total
        assert tried_.get(f"checkpoints={policy}", value) == again
    assert ("checkpoints=full" in tried_) == (batch is not None)
    # and counting some of its parts, as the public function's parts sum: the weights
    # alone; the weights, gradients and optimizer state (a change only with activations)
    assert tried_["memory=weights"] == exact.parts["weights"]
    states = exact.parts["weights"] + exact.parts["gradients"] + \
        exact.parts["optimizer state"]
    assert tried_.get("memory=states", value) == states
    assert ("memory=states" in tried_) == (batch is not None)
    assert tried_["sizes=nominal, memory=weights"] == 2 * nominal_params(cfg)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["llama-2-7b", "gpt2", "mixtral-8x7b"]),
       optimizer=st.sampled_from(["adam-mixed", "adam-megatron", "adam-bf16", "adam-8bit"]),
       batch=st.sampled_from([None, 2]), recompute=st.sampled_from(["none", "full"]),
       counted=st.sampled_from(["training", "all", "weights", "states"]))
def test_a_training_memory_under_a_count_of_its_parts_is_the_sum_of_those_parts(
        name: str, optimizer: str, batch: int | None, recompute: str, counted: str) -> None:
    # one question, one answer: training_memory made again under memory=X holds exactly
    # the public function's parts X counts, their sum its total, and the bytes per
    # parameter of the parts it counts
    from symroof.core.choices import OPTIONS, Choices
    from symroof.core.errors import InputError
    from symroof.models import inference_memory, model, training_memory
    from symroof.models.memory import OPTIMIZERS, TRAINING_COUNTS, _training_under
    assert set(TRAINING_COUNTS) == set(OPTIONS["memory"])  # every count has its parts
    cfg = model(name)
    given_ = {"optimizer": optimizer, "batch": batch, "context": 2048 if batch else None,
              "recompute": recompute}
    whole = training_memory(cfg, **given_)
    got = _training_under(Choices(memory=counted), cfg, **given_)
    keys = {"weights": ["weights"], "states": ["weights", "gradients", "optimizer state"]}.get(
        counted, list(whole.parts))
    assert dict(got.parts) == {k: whole.parts[k] for k in keys}
    assert got.total == sum((whole.parts[k] for k in keys), sp.S.Zero)
    w, g, o, _ = OPTIMIZERS[optimizer]
    assert got.bytes_per_param == {"weights": w, "states": w + g + o}.get(counted, w + g + o)
    with pytest.raises(InputError, match="^choices: memory=states counts a training memory; "
                                         "a serving memory takes memory=all or memory=weights"):
        inference_memory(cfg, batch=1, context=16, choices=Choices(memory="states"))


@settings(max_examples=6, deadline=None)
@given(data=st.data(), name=st.sampled_from(["h100-sxm", "tpu-v5e", "a100-80gb"]),
       phase=st.sampled_from(["decode", "prefill"]))
def test_a_plan_s_step_under_an_edition_is_the_step_on_that_edition_s_chip(
        data: st.DataObject, name: str, phase: str) -> None:
    # one question, one answer: a step under choices naming an edition of the chip table
    # is the step on the mesh built on that edition's chip, and the judge tries a plain
    # step's values under every edition that changes them
    from symroof import chip, mesh
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.device_step import device_step
    from symroof.plans.options import StepOptions
    labels = sorted({a.label for f in chip(name).figures.values() for a in f.alternatives})
    label = data.draw(st.sampled_from(labels))
    cfg, axes = model("llama-2-7b"), {"tp": ("X",)}
    under = device_step(cfg, phase, mesh("X=8", name), axes, batch=8, context=1024,
                        options=StepOptions(choices=Choices(edition=label)))
    on = device_step(cfg, phase, mesh("X=8", chip(name).edition(label)), axes, batch=8,
                     context=1024)
    assert (under.t_lower, under.t_upper, dict(under.terms)) == \
        (on.t_lower, on.t_upper, dict(on.terms))
    assert f"edition={label}: the chip figures of that edition of the table" in under.notes
    ch, value = _made(lambda: device_step(cfg, phase, mesh("X=8", name), axes, batch=8,
                                          context=1024).t_lower)
    got = with_editions(value, ch)
    tried_ = {c.describe(): v for c, v in got.alternatives} if isinstance(got, Tried) else {}
    assert tried_.get(f"edition={label}", value) == on.t_lower


@pytest.mark.parametrize(("name", "label"), [("h100-sxm", "B12-table"), ("tpu-v5e", "GC-v5e")])
def test_a_training_plan_under_an_edition_is_the_plan_on_that_edition_s_chip(
        name: str, label: str) -> None:
    # one question, one answer, as for a model step: the plan under choices naming an
    # edition is the plan on that edition's chip, stated in its assumptions, and the judge
    # tries a plain plan's values under it
    from symroof import chip, mesh
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.options import StepOptions
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import train
    cfg, strategy = model("llama-2-7b"), parse_strategy("dp=X")
    under = train(cfg, mesh("X=8", name), strategy, batch=8, context=4096,
                  options=StepOptions(choices=Choices(edition=label)))
    on = train(cfg, mesh("X=8", chip(name).edition(label)), strategy, batch=8, context=4096)
    assert (under.t_lower, under.t_upper, under.memory) == (on.t_lower, on.t_upper, on.memory)
    assert under.t_lower != train(cfg, mesh("X=8", name), strategy, batch=8,
                                  context=4096).t_lower
    assert f"edition={label}: the chip figures of that edition of the table" in \
        under.assumptions
    ch, value = _made(lambda: train(cfg, mesh("X=8", name), strategy, batch=8,
                                    context=4096).t_lower)
    got = with_editions(value, ch)
    assert isinstance(got, Tried)
    assert dict((c.describe(got.choices), v) for c, v in got.alternatives)[
        f"edition={label}"] == on.t_lower


@pytest.mark.parametrize(("strategy_", "offload"), [("dp=X", ()), ("zero3=X", ()),
                                                    ("tp=X", ("optimizer",))])
def test_a_training_plan_under_a_memory_count_totals_the_parts_it_counts(
        strategy_: str, offload: tuple[str, ...]) -> None:
    # one question, one answer: a training plan under memory=X is the plain plan with its
    # memory's total the sum of the parts X counts (its parts, times and fit's capacity as
    # they are), and the judge tries both counts on a plain plan's memory
    from symroof import mesh
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import OPTIONS, Choices
    from symroof.models import model
    from symroof.plans.options import StepOptions
    from symroof.plans.strategy import parse_strategy
    from symroof.plans.training import PLAN_COUNTS, train
    assert set(PLAN_COUNTS) == set(OPTIONS["memory"])  # every count has its parts
    cfg, strategy, m = model("llama-2-7b"), parse_strategy(strategy_), mesh("X=8", "h100-sxm")

    def plan(memory: str = "training") -> object:
        return train(cfg, m, strategy, batch=8, context=4096, options=StepOptions(
            offload=offload, choices=Choices(memory=memory)))
    whole = plan()
    parts = {k: v for k, v in whole.memory.items() if k != "total"}
    counts = {"weights": ["weights"], "states": ["weights", "gradients", "optimizer"]}
    for memory, keys in counts.items():
        under = plan(memory)
        assert under.memory == {**parts, "total": sum((parts[k] for k in keys), sp.S.Zero)}
        assert (under.t_lower, under.t_upper, under.predicted, under.terms) == \
            (whole.t_lower, whole.t_upper, whole.predicted, whole.terms)
    assert plan("all").memory == whole.memory
    ch, value = _made(lambda: train(cfg, m, strategy, batch=8, context=4096,
                                    options=StepOptions(offload=offload)).memory["total"])
    got = with_editions(value, ch)
    assert isinstance(got, Tried) and got.choices.describe() == "memory=training"
    tried_ = {c.describe(got.choices): v for c, v in got.alternatives}
    assert tried_ == {f"memory={k}": plan(k).memory["total"] for k in counts}


@pytest.mark.parametrize("context", [1, 2048, 4096])
def test_a_plain_kv_cache_of_a_sequence_is_tried_at_the_text_s_kv_bytes(context: int) -> None:
    # kv_bytes_per_sequence(...) at sizes=nominal is the text's KV bytes per token (where
    # with_round_params states them) times the context, as kv_bytes_per_token's is
    from symroof.claims.chapter import with_editions
    from symroof.models import kv_bytes_per_sequence, model, with_round_params
    cfg = with_round_params(model("llama-3-70b"), "70e9", kv_bytes_per_token="320e3")
    ch, value = _made(lambda: kv_bytes_per_sequence(cfg, context))
    assert value == 327680 * context
    got = with_editions(value, ch)
    assert isinstance(got, Tried)
    # and the KV cache in one byte an element, as kv_bytes_per_sequence(cfg, T, "fp8") is
    one_byte = kv_bytes_per_sequence(cfg, context, "fp8")
    assert one_byte == 163840 * context
    assert [(c.describe(), v) for c, v in got.alternatives] == \
        [("sizes=nominal", 320000 * context), ("kv_dtype=fp8", one_byte),
         ("kv_dtype=int8", one_byte)]
    ch, plain = _made(lambda: kv_bytes_per_sequence(model("llama-3-70b"), context))
    got = with_editions(plain, ch)  # no text's figure: the KV cache's dtypes alone
    assert isinstance(got, Tried) and [c.describe() for c, _ in got.alternatives] == \
        ["kv_dtype=fp8", "kv_dtype=int8"]


def _serving_values(name: str, choices: object = None) -> dict[str, object]:
    """The values of a serving plan on 8 chips ``name`` and of what is made from it (a
    queue of its requests, its KV cache in host memory, the cost of a decode step, a
    speculative decode), under ``choices`` (``Choices``: its edition taken as that
    edition's chip, the rest as the plan's options), by the public functions alone."""
    from symroof import chip, mesh
    from symroof.core.choices import EXACT
    from symroof.models import model
    from symroof.plans.cost import cost_of, parse_price
    from symroof.plans.options import StepOptions
    from symroof.plans.queueing import queue
    from symroof.plans.serving import serve
    from symroof.plans.serving_offload import offload_serving
    from symroof.plans.speculative_plan import speculative_step
    c = EXACT if choices is None else choices
    label = c.edition  # type: ignore[attr-defined]
    the_chip = chip(name).edition(label) if label else chip(name)
    options = StepOptions(choices=c.with_(edition=""))  # type: ignore[attr-defined]
    on = mesh("X=8", the_chip)
    s = serve(model("llama-2-7b"), on, batch=64, context=2048, options=options)
    q = queue(s.requests, "1/2")
    o = offload_serving(s, ("kv",), the_chip, layers=32)
    cost = cost_of(parse_price("2 USD/h"), chips=8, seconds=s.decode.latency, tokens=64,
                   what="decode step")
    # (a serving plan's count of its memory is not a step's: the speculative decode is
    # never tried under it; its KV cache's dtype is its steps')
    spec = speculative_step(model("llama-2-13b"), model("llama-2-7b"), on, {"tp": ("X",)},
                            batch=16, context=2048, gamma=4, acceptance="0.8",
                            options=StepOptions(choices=c.with_(  # type: ignore[attr-defined]
                                edition="", memory="all")))
    return {"ttft": s.requests["time_to_first_token"], "wait": q.wait,
            "queued_latency": q.request_latency, "offload_rate": o.requests["requests_per_s"],
            "offload_decode": o.decode.t_lower, "cost": cost.per_million_tokens,
            "tpot": spec.time_per_output_token, "tokens_per_s": spec.tokens_per_s}


@pytest.mark.parametrize("name", ["h100-sxm", "tpu-v5e"])
def test_plain_serving_values_are_tried_as_the_public_functions_give_them_under_each_choice(
        name: str) -> None:
    # one question, one answer: a plain value of a serving plan, of a queue of its requests,
    # of its KV cache offloaded, of a step's cost and of a speculative decode is tried under
    # each choice exactly as the same calls give it with that choice in the plan's options
    # (an edition: on that edition's chip); each is recorded with its dimension
    from symroof import chip, mesh
    from symroof.claims.chapter import engine_results, with_editions
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.options import StepOptions
    from symroof.plans.serving import serve
    ch, values = _made(lambda: _serving_values(name))
    assert values == _serving_values(name)
    dims = engine_results(ch)
    assert [dims.get(v) for v in values.values()] == [  # type: ignore[attr-defined]
        (0, 0, 1), (0, 0, 1), (0, 0, 1), (0, 0, -1), (0, 0, 1), (0, 0, 0), (0, 0, 1),
        (0, 0, -1)]
    labels = {a.label for f in chip(name).figures.values() for a in f.alternatives}
    tried_any = set()
    for key, value in values.items():  # type: ignore[attr-defined]
        got = with_editions(value, ch)  # plain when no choice changes it
        assert (got.value if isinstance(got, Tried) else got) == value, key
        for c, v in got.alternatives if isinstance(got, Tried) else ():
            assert v == _serving_values(name, c)[key], (key, c.describe())
            tried_any.add(c.describe())
    assert {f"edition={lb}" for lb in labels} & tried_any
    assert "latency=off" in tried_any and "kv_dtype=fp8" in tried_any
    # a plan under an edition is the plan on that edition's chip
    label = sorted(labels)[0]
    under = serve(model("llama-2-7b"), mesh("X=8", name), batch=64, context=2048,
                  options=StepOptions(choices=Choices(edition=label)))
    on = serve(model("llama-2-7b"), mesh("X=8", chip(name).edition(label)), batch=64,
               context=2048)
    assert (under.requests, under.memory, under.capacity) == (on.requests, on.memory,
                                                               on.capacity)


def test_a_choice_under_which_a_queue_grows_without_bound_is_not_tried() -> None:
    # a queue at 999/1000 of the plan's capacity: a choice that slows the plan (the leading
    # term's bigger collectives) leaves no wait to compare, so it is left out, not an ERROR
    from symroof import mesh
    from symroof.claims.chapter import with_editions
    from symroof.models import model
    from symroof.plans.queueing import queue
    from symroof.plans.serving import serve

    def waiting() -> object:
        served = serve(model("llama-2-7b"), mesh("X=8", "h100-sxm"), batch=64, context=2048)
        assert served.requests is not None
        mu = served.requests["requests_per_s"]
        return queue(served.requests, mu * sp.Rational(999, 1000)).wait, mu
    ch, (value, mu) = _made(waiting)  # type: ignore[misc]
    # M/D/1 at rho = 999/1000: rho / (2 mu (1 - rho)) = 999 / (2 mu)
    assert value == sp.Rational(999, 2) / mu
    got = with_editions(value, ch)
    assert isinstance(got, Tried) and got.value == value
    tried_ = {c.describe(): v for c, v in got.alternatives}
    assert "collectives=leading" not in tried_ and "latency=off" in tried_
    assert all(v is not None for v in tried_.values())
    verdict = run_claim(Claim("w", SRC, "s", "q", "9 s", value=got), "d")
    assert verdict.verdict == Verdict.MISMATCH
    assert verdict.detail.startswith(f"derived {float(value):.6} s, stated 9 s")


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["allgather", "reducescatter", "allreduce"]),
       n=st.sampled_from([4, 8, 16]), nbytes=st.integers(10**6, 10**9),
       latency=st.booleans())
@example(kind="allreduce", n=4, nbytes=393549370, latency=False)  # V/W printed truncated
def test_a_collective_written_as_v_over_w_is_a_slip_only_for_an_allreduce(
        kind: str, n: int, nbytes: int, latency: bool) -> None:
    # V/W (the text's bytes over the link bandwidth): an AllReduce's 2(n-1)/n dropped is a
    # slip, named with the right value; an AllGather's or a ReduceScatter's (n-1)/n dropped
    # is its leading term, a simplification
    from symroof import chip, mesh
    from symroof.claims.chapter import Chapter, with_editions
    from symroof.claims.diagnosis import judged
    from symroof.core.choices import Choices
    from symroof.core.printer import text
    ch = Chapter("d", "D", Source("b"))
    c = ch.collective(kind, nbytes, "X", mesh(f"X={n}", chip("tpu-v5e")))
    said = c.under(Choices(collectives="v_over_w", latency="on" if latency else "off")).time
    stated = f"{text(sp.Float(said * 10**6, 8))} us"
    got = judged(Claim("x", SRC, "s", stated, stated, value=with_editions(c.time, ch)),
                 with_editions(c.time, ch), "x")
    if kind == "allreduce":
        assert got.verdict == Verdict.MISMATCH
        assert "; the text drops the ring's 2(n-1)/n" in got.detail
        assert got.diagnosis["kind"] == "slip"
        assert got.diagnosis["choice"] == "collectives=v_over_w" + ("" if latency else
                                                                   ", latency=off")
        assert got.detail.endswith(f"; right: {got.detail.split(',')[0][8:]}")
    else:
        assert got.verdict == Verdict.SIMPLIFIED
        assert got.detail.startswith("holds as the leading term in n: the text drops (n-1)/n")


def _printed(x: sp.Expr) -> str:
    """``x`` printed to six significant digits, as a text prints a number."""
    return f"{float(x):.5e}".replace("e+", "e")


@settings(max_examples=60, deadline=None)
@given(i=st.integers(100, 10**4), j=st.integers(100, 10**4),
       slip=st.sampled_from([sp.Rational(1, 2), 2, 3, sp.Rational(3, 2), 10]),
       how=st.sampled_from(["sum", "product", "quotient", "square"]))
def test_a_wrong_figure_carried_forward_is_named_and_a_right_result_never_is(
        i: int, j: int, slip: sp.Rational, how: str) -> None:
    # an earlier claim states a figure `slip` times its derived value a; a later one is
    # made from a by a recorded step (a sum, a product, a quotient, a square): stated as
    # derived it holds and is never told it follows from the figure; stated as the text's
    # own figure makes it, a MISMATCH names the figure and its claim; the same value not
    # shown made from the figure (no step recorded, the figure not in its quote) is not
    from types import SimpleNamespace

    from symroof.claims.chapter import own_figures
    from symroof.claims.diagnosis import judged
    if i == j:  # two primes: a step's output is a product of their powers in one way only
        return
    a, b = int(sp.prime(i)), int(sp.prime(j))
    make = {"sum": lambda x: x + b, "product": lambda x: x * b,
            "quotient": lambda x: sp.Rational(b) / x, "square": lambda x: x * x}[how]
    ops = (sp.Integer(a),) if how == "square" else (sp.Integer(a), sp.Integer(b))
    figure = Claim("k", SRC, "s", f"a figure of {_printed(a * slip)}", _printed(a * slip),
                   value=sp.Integer(a))
    assert figure.reading is not None  # the text computes on with its figure as printed
    value, wrong = make(sp.Integer(a)), make(figure.reading.value)
    shown = SimpleNamespace(made=[], operands=[(value, ops)])
    for stated, made, named in ((value, shown, False), (wrong, shown, True),
                                (wrong, SimpleNamespace(made=[], operands=[]), False)):
        later = Claim("c", SRC, "s", f"so {_printed(stated)}", _printed(stated), value=value)
        _, c = own_figures((figure, later), made)
        got = judged(c, value, "c")
        said = "follows from the text's own k (stated"
        if got.verdict in (Verdict.OK, Verdict.ROUNDING):  # a right result: never told so
            assert said not in got.detail and got.diagnosis is None
        else:
            assert got.verdict == Verdict.MISMATCH
            assert (said in got.detail) == named, got.detail
            assert not named or "carried forward; right: " in got.detail
    # a right result is what the law's first case gives
    later = Claim("c", SRC, "s", f"so {_printed(value)}", _printed(value), value=value)
    assert judged(own_figures((figure, later), shown)[1], value, "c").verdict in \
        (Verdict.OK, Verdict.ROUNDING)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["llama-2-7b", "llama-3-8b", "gpt2", "mixtral-8x7b"]),
       batch=st.integers(1, 64), context=st.integers(1, 8192),
       kv=st.sampled_from(["fp8", "int8"]), dtype=st.sampled_from(["bf16", "fp8"]))
def test_a_serving_memory_is_tried_as_the_public_functions_give_each_part_and_kv_dtype(
        name: str, batch: int, context: int, kv: str, dtype: str) -> None:
    # one question, one answer: memory=weights is the weights part of inference_memory, and
    # kv_dtype=X is inference_memory / kv_bytes_per_sequence / kv_bytes_per_token called with
    # that dtype; a plain value's tried alternatives are exactly those
    from symroof.claims.chapter import Chapter, with_editions
    from symroof.core.choices import Choices
    from symroof.core.units import recording
    from symroof.models import (
        inference_memory,
        kv_bytes_per_sequence,
        kv_bytes_per_token,
        model,
    )
    cfg = model(name)
    whole = inference_memory(cfg, batch=batch, context=context, dtype=dtype)
    alone = inference_memory(cfg, batch=batch, context=context, dtype=dtype,
                             choices=Choices(memory="weights"))
    assert alone.parts == {"weights": whole.parts["weights"]}
    cast = inference_memory(cfg, batch=batch, context=context, dtype=dtype,
                            choices=Choices(kv_dtype=kv))
    assert cast.parts == inference_memory(cfg, batch=batch, context=context, dtype=dtype,
                                          kv_dtype=kv).parts
    ch = Chapter("d", "D", Source("b"))
    with recording() as made:
        total = inference_memory(cfg, batch=batch, context=context, dtype=dtype).total
        sequence = kv_bytes_per_sequence(cfg, context)
        per_token = kv_bytes_per_token(cfg)
    ch.made.extend(made)
    got = {c.describe(): v for c, v in with_editions(total, ch).alternatives}
    assert got["memory=weights"] == whole.parts["weights"]
    if cast.total != whole.total:
        assert got[f"kv_dtype={kv}"] == cast.total
    for value, public in ((sequence, kv_bytes_per_sequence(cfg, context, kv)),
                          (per_token, kv_bytes_per_token(cfg, kv))):
        tried_ = with_editions(value, ch)
        got = {c.describe(): v for c, v in getattr(tried_, "alternatives", ())}
        assert got[f"kv_dtype={kv}"] == public


@settings(max_examples=8, deadline=None)
@given(name=st.sampled_from(["h100-sxm", "tpu-v5e", "a100-80gb"]),
       kv=st.sampled_from(["fp8", "int8"]), phase=st.sampled_from(["decode", "prefill"]),
       model_name=st.sampled_from(["llama-2-7b", "llama-2-70b"]),
       tp=st.sampled_from([1, 8]), batch=st.sampled_from([8, 64]),
       context=st.sampled_from([512, 4096]))
def test_a_model_step_under_a_kv_dtype_is_the_step_the_options_give(
        name: str, kv: str, phase: str, model_name: str, tp: int, batch: int,
        context: int) -> None:
    # one question, one answer: a model step's kv_dtype choice is its options' kv_dtype (the
    # whole step equal), and the judge tries it on a plain step's values as that step gives
    from symroof import chip, mesh
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.device_step import device_step
    from symroof.plans.options import StepOptions
    cfg = model(model_name)
    on = dict(m=mesh(f"X={tp}", name), axes={"tp": ("X",)}) if tp > 1 else \
        dict(m=None, axes={}, chip=chip(name))
    chosen = device_step(cfg, phase, batch=batch, context=context,
                         options=StepOptions(choices=Choices(kv_dtype=kv)), **on)
    public = device_step(cfg, phase, batch=batch, context=context,
                         options=StepOptions(kv_dtype=kv), **on)
    assert chosen == public
    ch, value = _made(lambda: device_step(
        cfg, phase, batch=batch, context=context, **on).t_lower)
    got = with_editions(value, ch)
    tried_ = {c.describe(got.choices): v for c, v in got.alternatives} \
        if isinstance(got, Tried) else {}
    if public.t_lower != value:
        assert tried_[f"kv_dtype={kv}"] == public.t_lower
    if phase == "decode":  # a decode step reads its KV cache: one byte an element is less
        assert public.bytes < device_step(cfg, phase, batch=batch,
                                          context=context, **on).bytes


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["h100-sxm", "tpu-v5e", "a100-80gb"]),
       model_name=st.sampled_from(["llama-2-7b", "llama-3-8b", "mixtral-8x7b"]),
       kv=st.sampled_from(["fp8", "int8"]), given_kv=st.sampled_from(["bf16", "fp8"]),
       chosen=st.sampled_from([{}, {"sizes": "nominal"}, {"traffic": "weights"}]),
       batch=st.integers(1, 64), context=st.integers(0, 8192), chips=st.sampled_from([1, 8]))
def test_a_book_decode_time_under_a_kv_dtype_is_the_time_kv_dtype_gives(
        name: str, model_name: str, kv: str, given_kv: str, chosen: dict[str, str],
        batch: int, context: int, chips: int) -> None:
    # one question, one answer: a book decode time's kv_dtype choice is its kv_dtype (with
    # any other choice), and the judge tries it on a plain book decode time as
    # book_decode_time(..., kv_dtype=X) gives it; a cache already in that dtype is not
    # read in it again
    from symroof import chip
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import Choices
    from symroof.core.units import also_tried, remade
    from symroof.models import book_decode_time, model
    from symroof.models.counts import KV_TRIES
    cfg, the_chip = model(model_name), chip(name)
    public = book_decode_time(cfg, the_chip, batch, context, Choices().with_(**chosen),
                              kv_dtype=kv, chips=chips)
    assert book_decode_time(cfg, the_chip, batch, context,
                            Choices().with_(**chosen, kv_dtype=kv), chips=chips) == public
    ch, value = _made(lambda: book_decode_time(cfg, the_chip, batch, context,
                                               kv_dtype=given_kv, chips=chips))
    got = with_editions(value, ch)
    tried_ = {c.describe(got.choices): v for c, v in got.alternatives} \
        if isinstance(got, Tried) else {}
    plain = book_decode_time(cfg, the_chip, batch, context, kv_dtype=kv, chips=chips)
    if plain != value:
        assert tried_[f"kv_dtype={kv}"] == plain
    else:  # nothing to read (no context) or the cache already in one byte an element
        assert f"kv_dtype={kv}" not in tried_
    if given_kv == "fp8":
        assert plain == value
    # the helper's own record takes the same choice, as the public function gives it
    entry = ch.made[-1][0]  # type: ignore[attr-defined]
    assert also_tried(entry)[0] == KV_TRIES
    assert remade(entry)(Choices(kv_dtype=kv)) == plain  # type: ignore[misc]


@settings(max_examples=25, deadline=None)
@given(params_=st.integers(1, 100).map(lambda k: k * 10**9), kv=st.integers(0, 10**6),
       batch=st.integers(1, 64), context=st.integers(0, 8192),
       given_in=st.sampled_from(["bf16", "fp8", "int8", "fp32"]),
       read=st.sampled_from([None, "bf16", "fp8", "int8", "fp32"]),
       name=st.sampled_from(["h100-sxm", "tpu-v5e", "b200"]))
def test_a_cache_given_in_its_own_dtype_times_as_its_16_bit_bytes_read_in_that_dtype(
        params_: int, kv: int, batch: int, context: int, given_in: str, read: str | None,
        name: str) -> None:
    # one question, one answer: KV bytes a text gives already in a dtype are read as that
    # dtype's; the same cache given as its 16-bit bytes and read in that dtype times the
    # same; the exact form is (2P + B T kv x read bytes / given bytes) / HBM bandwidth
    from symroof import chip
    from symroof.claims.chapter import with_editions
    from symroof.core.sizes import dtype_bytes
    from symroof.models import decode_time_of
    the_chip = chip(name)
    own = sp.Rational(kv)  # the cache's bytes per token in given_in
    as_16_bit = own * 2 / dtype_bytes(given_in)
    got = decode_time_of(params_, own, the_chip, batch, context, kv_bytes_dtype=given_in,
                         kv_dtype=read)
    assert got == decode_time_of(params_, as_16_bit, the_chip, batch, context,
                                 kv_dtype=read or given_in)
    scale = dtype_bytes(read or given_in) / dtype_bytes(given_in)
    assert got == (2 * params_ + batch * context * own * scale) / the_chip.bandwidth("hbm")
    if read is None:  # given in fp8 and read as given: as the 16-bit bytes read in fp8
        assert got == decode_time_of(params_, own, the_chip, batch, context,
                                     kv_bytes_dtype=given_in, kv_dtype=given_in)
    # the judge reads a cache given in one byte an element in one byte: not tried again
    ch, value = _made(lambda: decode_time_of(params_, own, the_chip, batch, context,
                                             kv_bytes_dtype=given_in))
    tried_ = with_editions(value, ch)
    described = {c.describe(tried_.choices): v for c, v in tried_.alternatives} \
        if isinstance(tried_, Tried) else {}
    for dtype in ("fp8", "int8"):
        if given_in in ("fp8", "int8"):
            assert f"kv_dtype={dtype}" not in described
        else:
            assert described.get(f"kv_dtype={dtype}", value) == decode_time_of(
                params_, own, the_chip, batch, context, kv_bytes_dtype=given_in,
                kv_dtype=dtype)


@settings(max_examples=4, deadline=None)
@given(name=st.sampled_from(["h100-sxm", "tpu-v5e"]), kv=st.sampled_from(["fp8", "int8"]),
       batch=st.sampled_from([8, 16]), context=st.sampled_from([512, 2048]),
       gamma=st.sampled_from([2, 4]))
def test_a_speculative_step_under_a_kv_dtype_is_the_step_the_options_give(
        name: str, kv: str, batch: int, context: int, gamma: int) -> None:
    # one question, one answer: a speculative decode's kv_dtype choice is its options'
    # kv_dtype (the whole step equal: the draft's, the verification's and the plain decode
    # step's), and the judge tries it on a plain step's values as that step gives them
    from symroof import mesh
    from symroof.claims.chapter import with_editions
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.options import DEFAULT_OPTIONS, StepOptions
    from symroof.plans.speculative_plan import speculative_step

    def drafted(options: StepOptions = DEFAULT_OPTIONS) -> object:
        return speculative_step(model("llama-2-13b"), model("llama-2-7b"),
                                mesh("X=8", name), {"tp": ("X",)}, batch=batch,
                                context=context, gamma=gamma, acceptance="0.8",
                                options=options)
    public = drafted(StepOptions(kv_dtype=kv))
    assert drafted(StepOptions(choices=Choices(kv_dtype=kv))) == public
    ch, plain = _made(drafted)
    for attr in ("time_per_output_token", "tokens_per_s", "iteration"):
        value = getattr(plain, attr)
        got = with_editions(value, ch)
        tried_ = {c.describe(got.choices): v for c, v in got.alternatives} \
            if isinstance(got, Tried) else {}
        assert getattr(public, attr) != value  # its KV cache read in one byte an element
        assert tried_[f"kv_dtype={kv}"] == getattr(public, attr), attr


@settings(max_examples=6, deadline=None)
@given(name=st.sampled_from(["h100-sxm", "tpu-v5e"]), kv=st.sampled_from(["fp8", "int8"]),
       batch=st.sampled_from([8, 64]), context=st.sampled_from([512, 2048]))
def test_a_serving_plan_under_a_kv_dtype_or_a_memory_count_is_the_plan_the_options_give(
        name: str, kv: str, batch: int, context: int) -> None:
    # one question, one answer: a serving plan's kv_dtype choice is its options' kv_dtype
    # (the whole plan equal); memory=weights changes its memory's total to the weights alone
    # and nothing else
    from symroof import mesh
    from symroof.core.choices import Choices
    from symroof.models import model
    from symroof.plans.options import StepOptions
    from symroof.plans.serving import serve
    cfg, on = model("llama-2-7b"), mesh("X=8", name)
    chosen = serve(cfg, on, batch=batch, context=context,
                   options=StepOptions(choices=Choices(kv_dtype=kv)))
    assert chosen == serve(cfg, on, batch=batch, context=context,
                           options=StepOptions(kv_dtype=kv))
    plain = serve(cfg, on, batch=batch, context=context)
    alone = serve(cfg, on, batch=batch, context=context,
                  options=StepOptions(choices=Choices(memory="weights")))
    assert alone.memory == {**plain.memory, "total": plain.memory["weights"]}
    assert (alone.decode, alone.prefill, alone.requests) == \
        (plain.decode, plain.prefill, plain.requests)
