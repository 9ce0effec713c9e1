"""The chapter form: one language-free claims.py, one table per translation; kinds from
stated values; input errors naming the file and key; consistency findings."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from symroof.claims.chapter import build_chapter, kind_of
from symroof.claims.consistency import agree
from symroof.claims.model import Law
from symroof.claims.runner import verify
from symroof.core.errors import InputError
from symroof.core.resources import bundled
from tests.conftest import run_cli

CLAIMS = '''
import sympy as sp
from symroof import chip, einsum
from symroof.claims import Chapter, definition, law, measured

def claims(ch: Chapter) -> None:
    v5e = chip("tpu-v5e", hbm=ch.given("hbm", "8.2e11 B/s"))
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), v5e)
    ch.add(ridge=rl.ridge, t_math=definition(rl.t_math), linear=law(rl.ridge > 1, "degree 1"),
           time=sp.Integer(10**12) / v5e.peak("bf16"), seen=measured("a benchmark"),
           bound=rl.at({"B": 1, "D": 8192, "F": 8192}).bound())
'''
EN = '''
[chapter]
id = "demo-en"
title = "Demo"
book = "A book"
language = "en"
prefix = "en_"

["Rooflines".ridge]
quote = "about 240 at 8.2e11 B/s"
stated = "240"
figures = { "TPU v5e HBM" = "8.2e11 B/s" }

["Rooflines".t_math]
quote = "T = FLOPs / peak"
stated = "2*B*D*F/197000000000000"

["Rooflines".linear]
quote = "linear"
stated = "linearly"

["Rooflines".time]
quote = "5.08 ms"
stated = "5.08 ms"

["Problems".seen]
quote = "measured"
stated = "fast"

["Problems".bound]
quote = "memory-bound"
stated = "hbm"
'''


def chapter(tmp_path: Path, tables: dict[str, str], claims: str = CLAIMS) -> Path:
    (tmp_path / "claims.py").write_text(textwrap.dedent(claims), "utf-8")
    for name, text in tables.items():
        (tmp_path / name).write_text(textwrap.dedent(text), "utf-8")
    return tmp_path


def test_kinds_follow_from_the_stated_value_and_verdicts_follow(tmp_path: Path) -> None:
    [d] = build_chapter(chapter(tmp_path, {"en.toml": EN}))
    assert d.id == "demo-en" and d.origin.endswith("en.toml")
    kinds = {c.id: c.kind for c in d.claims}
    assert kinds == {"en_ridge": "number", "en_t_math": "definition", "en_linear": "qualitative",
                     "en_time": "number", "en_seen": "measurement", "en_bound": "label"}
    assert {c.id: c.source.section for c in d.claims}["en_seen"] == "Problems"
    got = {v.claim.id: str(v.verdict) for v in verify([d]).verdicts}
    assert got == {"en_ridge": "OK", "en_t_math": "DEFINITION", "en_linear": "OK",
                   "en_time": "OK", "en_seen": "UNVERIFIABLE", "en_bound": "OK"}


def test_a_missing_or_extra_key_is_an_input_error_naming_file_and_key(tmp_path: Path) -> None:
    missing = EN.replace('["Problems".bound]\nquote = "memory-bound"\nstated = "hbm"\n', "")
    folder = chapter(tmp_path, {"en.toml": missing})
    with pytest.raises(InputError, match=r"en\.toml: bound: a claim of claims.py this table "
                                         r"neither states nor omits"):
        build_chapter(folder)
    extra = EN + '\n["Problems".typo]\nquote = "x"\nstated = "1"\n'
    (folder / "en.toml").write_text(textwrap.dedent(extra), "utf-8")
    with pytest.raises(InputError, match=r"en\.toml: typo: a claim claims.py does not add"):
        build_chapter(folder)
    omitted = missing.replace('prefix = "en_"', 'prefix = "en_"\nomits = ["bound"]')
    (folder / "en.toml").write_text(textwrap.dedent(omitted), "utf-8")
    assert len(build_chapter(folder)[0].claims) == 5


def test_a_bad_row_or_table_names_where(tmp_path: Path) -> None:
    bad = EN.replace('stated = "hbm"', 'stated = "hbm"\nunits = 1')
    folder = chapter(tmp_path, {"en.toml": bad})
    with pytest.raises(InputError, match=r"en\.toml: bound: unknown field 'units'"):
        build_chapter(folder)
    bad = EN.replace('stated = "hbm"', 'stated = "hbm"\nunit = 1')  # a field, not text
    (folder / "en.toml").write_text(textwrap.dedent(bad), "utf-8")
    with pytest.raises(InputError, match=r"en\.toml: bound: unit must be text, got 1"):
        build_chapter(folder)
    (folder / "en.toml").write_text("[chapter\n", "utf-8")
    with pytest.raises(InputError, match="not valid TOML"):
        build_chapter(folder)


def test_translations_share_one_derivation_and_conflicts_are_found(tmp_path: Path) -> None:
    zh = EN.replace('"demo-en"', '"demo-zh"').replace('"en"', '"zh"').replace('"en_"', '"zh_"')
    zh = zh.replace('quote = "about 240 at 8.2e11 B/s"\nstated = "240"\n'
                    'figures = { "TPU v5e HBM" = "8.2e11 B/s" }',
                    'quote = "about 243 at 8.1e11 B/s"\nstated = "243"\n'
                    'figures = { "TPU v5e HBM" = "8.1e11 B/s" }')
    zh = zh.replace('quote = "5.08 ms"\nstated = "5.08 ms"\n',
                    'quote = "5.08 ms at 8.2e11 B/s"\nstated = "5.08 ms"\n'
                    'figures = { "TPU v5e HBM" = "8.2e11 B/s" }\n')
    zh += '\n[inputs]\nhbm = "8.1e11 B/s"\n'
    en, zhd = build_chapter(chapter(tmp_path, {"en.toml": EN, "zh.toml": zh}))
    assert (en.id, zhd.id) == ("demo-en", "demo-zh")
    found = {k.figure: k for k in zhd.conflicts}
    assert found["TPU v5e HBM"].values == (("8.1e11 B/s", ("zh_ridge",)),
                                           ("8.2e11 B/s", ("zh_time",)))
    assert found["ridge across translations"].values == (("240 (en)", ("en_ridge",)),
                                                         ("243 (zh)", ("zh_ridge",)))
    verdicts = {v.claim.id: str(v.verdict) for v in verify([en, zhd]).verdicts}
    # zh derives its ridge with its own 8.1e11 (243.2: it holds) and contradicts itself
    assert verdicts["zh_ridge"] == verdicts["zh_time"] == verdicts["en_ridge"] == "INCONSISTENT"
    assert verdicts["en_time"] == "OK"


def test_a_known_conflict_is_listed_and_leaves_the_verdicts(tmp_path: Path) -> None:
    zh = EN.replace('"demo-en"', '"demo-zh"').replace('"en"', '"zh"').replace('"en_"', '"zh_"')
    zh = zh.replace('quote = "5.08 ms"\nstated = "5.08 ms"',
                    'quote = "5.1 ms, 5.2 ms"\nstated = "5.1 ms"')
    zh = zh.replace('["Rooflines".ridge]', '[chapter.known]\n"time across translations" = '
                    '"zh rounds to two digits"\n\n["Rooflines".ridge]')
    en, zhd = build_chapter(chapter(tmp_path, {"en.toml": EN, "zh.toml": zh}))
    assert not en.conflicts and not zhd.conflicts  # 5.08 and 5.1 agree at 5.1's precision
    zh = zh.replace('stated = "5.1 ms"', 'stated = "5.2 ms"')
    (tmp_path / "zh.toml").write_text(textwrap.dedent(zh), "utf-8")
    en, zhd = build_chapter(tmp_path)
    [k] = zhd.conflicts
    assert k.known == "zh rounds to two digits" and en.conflicts[0].known == ""
    verdicts = {v.claim.id: str(v.verdict) for v in verify([en, zhd]).verdicts}
    assert verdicts["zh_time"] == "MISMATCH" and verdicts["en_time"] == "INCONSISTENT"


def test_kind_of() -> None:
    assert kind_of("1.6 TB/s", 1) == "number"
    assert kind_of("≈61,000", 1) == "number"
    assert kind_of("1/2", 1) == "number"
    assert kind_of("a*N**(-a) = b*D**(-b)", None) == "relation"
    assert kind_of("почти вдвое", Law(True, "")) == "qualitative"
    assert kind_of("2*t_m*t_n", sp.Integer(1)) == "expr"


@pytest.mark.parametrize(("a", "b", "same"), [
    ("1e15", "9.89e14", True), ("8.1e11", "8.2e11", False), ("1/2", "0.5", True),
    ("B > 120", "B > 122", False), ("B*F*(2*D - 1)", "B*D*F + B*F*(D - 1)", True),
    ("1.01 ms", "0.00101", True),
])
def test_printed_values_agree_at_their_precision(a: str, b: str, same: bool) -> None:
    assert agree(a, b) is same


def test_the_chinese_chapter_contradicts_itself_on_the_v5e_hbm_figure() -> None:
    """Seed 004 prints TPU v5e HBM as 8.2e11 (the main text, 240 FLOPs/byte, and the
    problem 3 code) and as 8.1e11 (problems 1 and 2: 486, B > 243, B > 122), and sums up
    problem 2 with 240 -> 120, the 8.2e11 figures, against its own B > 122."""
    zh = next(d for d in build_chapter(bundled("derivations") / "rooflines")
              if d.id == "rooflines-zh")
    found = {k.figure: k for k in zh.conflicts if not k.known}
    assert set(found) == {"TPU v5e HBM",
                          "summary zh_q2_insight_240_to_120 of zh_q2_w8a16_critical_batch"}
    values = dict(found["TPU v5e HBM"].values)
    assert set(values["8.2e11 B/s"]) == {"zh_critical_intensity_v5e", "zh_q3_exact_bytes_curves"}
    assert set(values["8.1e11 B/s"]) == {"zh_q1_int8_critical_intensity", "zh_q1_int8_critical",
                                         "zh_q1_t_comms", "zh_q2_w8a16_critical_batch"}


def test_verify_json_lists_conflicts() -> None:
    done = run_cli("verify", "--json", "--no-cache", "--no-timing",
                   str(bundled("derivations") / "rooflines"))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    figures = {k["figure"]: k for k in out["conflicts"]}
    assert figures["TPU v5e HBM"]["known"] is None
    assert {v["value"] for v in figures["TPU v5e HBM"]["values"]} == {"8.1e11 B/s", "8.2e11 B/s"}
    # the zh table names the defining place (the book's ch. 2 table: 8.1e11 B/s): the claims
    # that print 8.2e11 and the summary conflict stay INCONSISTENT, the others hold (issue 35)
    assert figures["TPU v5e HBM"]["defining"] == "8.1e11 B/s"
    assert out["summary"]["INCONSISTENT"] == 4
    assert figures["q1_int8_critical_intensity across translations"]["known"]


@pytest.mark.slow
def test_verify_takes_a_bundled_derivation_by_name() -> None:
    by_id = run_cli("verify", "--json", "--no-cache", "--no-timing", "rooflines-zh")
    assert by_id.returncode == 0, by_id.stderr
    assert {c["derivation"] for c in json.loads(by_id.stdout)["claims"]} == {"rooflines-zh"}
    by_folder = run_cli("verify", "--json", "--no-timing", "appendix-adcost")
    assert {c["derivation"] for c in json.loads(by_folder.stdout)["claims"]} == \
        {"appendix-ru-adcost"}
    missing = run_cli("verify", "no-such-chapter")
    assert missing.returncode == 2
    assert missing.stderr == ("symroof: error: no-such-chapter: no such file or folder (nor a "
                              "bundled derivation of that name)\n")


@pytest.mark.slow
def test_assumptions_are_shown_beside_the_verdict(tmp_path: Path) -> None:
    table = EN.replace('stated = "240"\n', 'stated = "240"\nassumes = "HBM at 8.2e11 B/s"\n')
    folder = chapter(tmp_path, {"en.toml": table})
    for _ in range(2):  # built, then from the cache
        done = run_cli("verify", str(folder))
        line = next(x for x in done.stdout.splitlines() if "en_ridge" in x)
        assert line.split()[0] == "OK" and line.endswith("(assumes HBM at 8.2e11 B/s)")
    row = json.loads(run_cli("verify", "--json", str(folder)).stdout)["claims"][0]
    assert row["assumptions"] == ["HBM at 8.2e11 B/s"]


def test_a_defining_place_keeps_the_claims_that_use_its_value(tmp_path: Path) -> None:
    zh = EN.replace('"demo-en"', '"demo-zh"').replace('"en"', '"zh"').replace('"en_"', '"zh_"')
    zh = zh.replace('quote = "about 240 at 8.2e11 B/s"\nstated = "240"\n'
                    'figures = { "TPU v5e HBM" = "8.2e11 B/s" }',
                    'quote = "about 243 at 8.1e11 B/s"\nstated = "243"\n'
                    'figures = { "TPU v5e HBM" = "8.1e11 B/s" }')
    zh = zh.replace('quote = "5.08 ms"\nstated = "5.08 ms"\n',
                    'quote = "5.08 ms at 8.2e11 B/s"\nstated = "5.08 ms"\n'
                    'figures = { "TPU v5e HBM" = "8.2e11 B/s" }\n')
    zh = zh.replace('["Rooflines".ridge]', '[chapter.defines]\n"TPU v5e HBM" = { value = '
                    '"8.1e11 B/s", place = "the chip table of ch. 2" }\n\n["Rooflines".ridge]')
    zh += '\n[inputs]\nhbm = "8.1e11 B/s"\n'
    [zhd] = build_chapter(chapter(tmp_path, {"zh.toml": zh}))
    [k] = zhd.conflicts
    assert (k.defined_by, k.defining, k.agreeing) == ("the chip table of ch. 2", "8.1e11 B/s",
                                                     ("zh_ridge",))
    by = {v.claim.id: v for v in verify([zhd]).verdicts}
    assert by["zh_ridge"].verdict == "OK"
    assert by["zh_ridge"].detail.endswith(
        "uses the defining value; conflict noted: TPU v5e HBM printed as 8.1e11 B/s in "
        "zh_ridge; 8.2e11 B/s in zh_time; the chip table of ch. 2 defines 8.1e11 B/s")
    assert by["zh_time"].verdict == "INCONSISTENT"
    assert k.to_json()["defined_by"] == "the chip table of ch. 2"


def test_a_malformed_defining_place_is_an_input_error(tmp_path: Path) -> None:
    bad = EN.replace('["Rooflines".ridge]', '[chapter.defines]\n"TPU v5e HBM" = "8.1e11"\n\n'
                     '["Rooflines".ridge]')
    with pytest.raises(InputError, match=r"en\.toml: \[chapter\.defines\] TPU v5e HBM: needs "
                                         r"\{ value = \"as printed\", place = \"where\" \}"):
        build_chapter(chapter(tmp_path, {"en.toml": bad}))
