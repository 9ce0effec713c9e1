"""symroof claims new --from: the rows a text's values make, the stubs and engine calls it
writes, and a 30-claim text of our own scaffolded and filled as a user would (every guessed
call taken), with the verdicts its chapter must print."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from symroof import chip, einsum, roofline
from symroof.claims.scaffold import rows_of_text
from symroof.hardware.catalog import load_catalog
from tests.conftest import ROOT, run_cli

TRIAL = ROOT / "tests" / "data" / "scaffold_trial"
TEXT = TRIAL / "TEXT.md"
FILLED = TRIAL / "serve"  # the chapter scaffolded from TEXT.md, every guessed call taken

COLLECTIVE = 'ch.collective("allreduce", inference_memory(llama_2_7b).parts["weights"], "X", ' \
    'mesh("X=8", h100_sxm))'
AT = 'rl.at({"D": 8192, "F": 8192, "B": 128})'
# (key, stated, the engine call the stub suggests) of every row of TEXT.md
ROWS = [
    ("peak_01", "9.89e14 FLOP/s", 'h100_sxm.peak("bf16")'),
    ("bandwidth_02", "3.35e12 B/s", 'h100_sxm.bandwidth("hbm")'),
    ("ridge_03", "about 295 FLOPs/byte", "rl.ridge"),
    ("bytes_04", "80 GB", 'h100_sxm.capacity("hbm")'),
    ("formula_05", "2*B*D*F", "rl.op.flops"),
    ("formula_06", "2*B*D + 2*D*F + 2*B*F", "rl.op.bytes()"),
    ("input_07", "8192", "definition(8192)"),
    ("input_08", "128", "definition(128)"),
    ("flops_09", "1.72e10 FLOPs", f"{AT}.op.flops"),
    ("bytes_10", "138.4 MB", f"{AT}.op.bytes()"),
    ("intensity_11", "about 124 FLOPs/byte", f"{AT}.intensity"),
    ("time_12", "17.4 us", f"{AT}.t_math"),
    ("time_13", "41.3 us", f'{AT}.t_comms["hbm"]'),
    ("threshold_14", "B > 295", "sp.Gt(th.symbol, th.asymptotic)"),
    ("input_15", "8192", "definition(8192)"),
    ("threshold_16", "318.3 tokens", 'ch.threshold(rl.at({"D": 8192, "F": 8192}), "B").exact'),
    ("count_17", "6.74B parameters", "params(llama_2_7b).total"),
    ("bytes_18", "13.5 GB", 'inference_memory(llama_2_7b).parts["weights"]'),
    ("bytes_19", "524288 bytes", "kv_bytes_per_token(llama_2_7b)"),
    ("input_20", "4096 tokens", "definition(4096)"),
    ("input_21", "16", "definition(16)"),
    ("bytes_22", "68.7 GB",
     'inference_memory(llama_2_7b, batch=16, context=4096).parts["kv cache"]'),
    ("bytes_23", "about 82 GB", "inference_memory(llama_2_7b, batch=16, context=4096).total"),
    ("time_24", "about 4.0 ms",
     'inference_memory(llama_2_7b).parts["weights"] / h100_sxm.bandwidth("hbm")'),
    ("bandwidth_25", "450 GB/s", 'h100_sxm.bandwidth("nvlink")'),
    ("input_26", "13.5 GB", "definition(13500000000)"),
    ("time_27", "52.4 ms", f"{COLLECTIVE}.time"),
    ("time_28", "30 ms", f"{COLLECTIVE}.bandwidth_time"),
    ("time_29", "8.4 us", f"{COLLECTIVE}.latency_time"),
    ("count_30", "14", f"{COLLECTIVE}.hops"),
    ("input_31", "16 chips", "definition(16)"),
    ("input_32", "64 MB", "definition(64000000)"),
    ("time_33", "about 0.67 ms",
     'ch.collective("allgather", 64000000, "X", mesh("X=16", tpu_v5e)).time'),
    ("ridge_34", "about 295", "rl.ridge"),
    ("bytes_35", "0.5 MiB", "kv_bytes_per_token(llama_2_7b)"),
    ("threshold_36", "295", "th.asymptotic"),
]


def test_the_trial_text_reads_a_row_per_value_with_the_engine_call_that_derives_it() -> None:
    """No row for the digits of "Llama 2 7B" or "H100 SXM"; the inputs the text gives
    (D = F = 8192, a batch of 128, 16 chips, what a collective moves) are definitions; the
    call names the chip, the model and the collective the text names, and the sizes it
    gave."""
    rows = rows_of_text(TEXT.read_text("utf-8"), "en")
    assert [(r.key, r.stated, r.call) for r in rows] == ROWS
    assert {r.section for r in rows} == {"The chip", "One matmul", "The model", "More chips",
                                         "Summary"}
    assert rows[13].quote == "For a batch much smaller than D and F the matmul is " \
        "memory-bound until B > 295."
    assert not any(r.unit for r in rows)


def _taken(code: str) -> str:
    """A scaffolded claims.py with every guessed call taken, as a user does it: the
    commented call replaces the stub below it (and ``measured`` is no longer imported)."""
    lines = code.split("\n")
    out: list[str] = []
    skip = False
    for i, line in enumerate(lines):
        if skip:
            skip = False
            continue
        guess = re.fullmatch(r"(\s+)#   (\w+)=(.*),", line)
        if guess and lines[i + 1].strip().startswith(f"{guess.group(2)}=measured("):
            out.append(f"{guess.group(1)}{guess.group(2)}={guess.group(3)},")
            skip = True
        else:
            out.append(line)
    return "\n".join(out).replace("Chapter, definition, measured", "Chapter, definition")


def test_the_filled_trial_chapter_is_the_scaffold_with_its_guesses_taken(tmp_path: Path
                                                                          ) -> None:
    folder = tmp_path / "serve"
    done = run_cli("claims", "new", str(folder), "--from", str(TEXT), "--lang", "en",
                   "--title", "Serving a 7B model on one H100", "--book",
                   "tests/data/scaffold_trial/TEXT.md")
    assert done.returncode == 0, done.stderr
    code = (folder / "claims.py").read_text("utf-8")
    assert (folder / "en.toml").read_text("utf-8") == (FILLED / "en.toml").read_text("utf-8")
    assert _taken(code) == (FILLED / "claims.py").read_text("utf-8")
    # the setup the stubs' calls use, each chip, model, roofline and collective once
    assert '''def claims(ch: Chapter) -> None:
    h100_sxm = chip("h100-sxm")
    tpu_v5e = chip("tpu-v5e")
    llama_2_7b = model("llama-2-7b")
    rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), h100_sxm)
    th = ch.threshold(rl, "B", regime="B<<D,F")
    allreduce = ch.collective(
        "allreduce", inference_memory(llama_2_7b).parts["weights"], "X", mesh("X=8", h100_sxm))
    allgather = ch.collective("allgather", 64000000, "X", mesh("X=16", tpu_v5e))
''' in code
    # a stub: the concept, the quote, the call commented, the stub verify reads UNVERIFIABLE
    assert '''        # 450 GB/s: a bandwidth
        #   \u201cEight H100s in one HGX box talk over NVLink at 450 GB/s one way.\u201d
        #   bandwidth_25=h100_sxm.bandwidth("nvlink"),
        bandwidth_25=measured("not derived yet: bandwidth"),
''' in code
    # an input is kept as a definition at once
    assert '''        # 16 chips: an input the text gives: kept as a definition (it checks nothing)
        #   \u201cA TPU v5e pod row of 16 chips gathers 64 MB in about 0.67 ms over ICI.\u201d
        input_31=definition(16),
''' in code
    assert max(len(line) for line in code.splitlines()) <= 100
    done = run_cli("verify", "--no-cache", str(folder))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(
        "36 claims in 1 derivation: 8 DEFINITION, 28 UNVERIFIABLE")


def test_the_filled_trial_chapter_gives_a_verdict_for_every_row(tmp_path: Path) -> None:
    """The text's two deliberate slips (the KV cache twice too large, and the sum that
    carries it forward) and its AllReduce counted as bytes over bandwidth alone are
    MISMATCH; the inputs are definitions; the rest, rounded as the text prints them, OK."""
    shutil.copytree(FILLED, tmp_path / "serve")
    done = run_cli("verify", "--no-cache", str(tmp_path / "serve"))
    assert done.returncode == 1, done.stderr
    verdicts = dict(line.split()[1::-1] for line in done.stdout.splitlines()[1:-2])
    mismatch = {"bytes_22", "bytes_23", "time_28"}
    assert verdicts == {key: "DEFINITION" if key.startswith("input") else
                        "MISMATCH" if key in mismatch else "OK" for key, _, _ in ROWS}
    assert "MISMATCH    bytes_22      68.7 GB                34.36 GB (derived 34.3597 GB, " \
        "stated 68.7 GB; the stated value is twice the derived" in done.stdout
    assert done.stdout.rstrip().endswith(
        "36 claims in 1 derivation: 25 OK, 8 DEFINITION, 3 MISMATCH")


@pytest.mark.parametrize(("text", "rows"), [
    # digits inside a chip's or a model's name are no value
    ("Llama 2 7B runs on an H100 SXM5 and GPT-2 XL on a TPU v5e.", []),
    ("Mistral 7B has 7.24B parameters.",
     [("count_01", "7.24B parameters", "", "params(mistral_7b).total")]),
    # a unit after "per" or after the dtype is the row's unit; the stated value is bare
    ("The ridge of TPU v5e is about 240 FLOPs per byte.",
     [("ridge_01", "about 240", "FLOPs/byte", 'tpu_v5e.ridge("bf16")')]),
    ("A TPU v5e does 1.97e14 bf16 FLOP/s.",
     [("peak_01", "1.97e14", "FLOP/s", 'tpu_v5e.peak("bf16")')]),
    # inputs: an assignment, a batch, a count of chips, what a collective moves
    ("With B = D = 64 it is small.", [("input_01", "64", "", "definition(64)")]),
    ("A ring of 8 chips on an H100 SXM runs an AllGather of 2 GB in 4.4 ms.",
     [("input_01", "8 chips", "", "definition(8)"), ("input_02", "2 GB", "",
                                                    "definition(2000000000)"),
      ("time_03", "4.4 ms", "", 'ch.collective("allgather", 2000000000, "X", '
                                'mesh("X=8", h100_sxm)).time')]),
    # a size after below, above or until is a threshold; hops are a count
    ("Memory sets the pace below 240 tokens per step.",
     [("threshold_01", "240 tokens", "", "")]),
    # a critical intensity is the chip's ridge; a model's FLOPs per token (the context left
    # to fill in); the weights shared over the chips the text counts
    ("A TPU v5e's critical intensity is 243 FLOP/B.",
     [("ridge_01", "243 FLOP/B", "", 'tpu_v5e.ridge("bf16")')]),
    ("Training Mistral 7B takes 4.3e10 FLOPs per token.",
     [("flops_01", "4.3e10 FLOPs", "",
       "training_flops_per_token(mistral_7b, context=CONTEXT)")]),
    ("Sharding the weights of Mistral 7B over a row of 16 chips leaves 905 MB per chip.",
     [("input_01", "16 chips", "", "definition(16)"),
      ("bytes_02", "905 MB", "", 'inference_memory(mistral_7b).parts["weights"] / 16')]),
    # what a collective moves and over how many chips, when the text does not say
    ("The AllReduce on an H100 SXM takes 14 hops.",
     [("count_01", "14", "", 'ch.collective("allreduce", BYTES, "X", mesh("X=N", h100_sxm))'
                             '.hops')]),
])
def test_a_scaffold_reads_names_inputs_and_units(text: str,
                                                 rows: list[tuple[str, str, str, str]]
                                                 ) -> None:
    assert [(r.key, r.stated, r.unit, r.call) for r in rows_of_text(text, "en")] == rows


def test_a_collective_the_text_does_not_size_stays_in_its_stub(tmp_path: Path) -> None:
    """A call with BYTES or N to fill in is not made in claims.py's setup: the scaffold
    verifies at once."""
    (tmp_path / "t.md").write_text("The AllReduce on an H100 SXM takes 14 hops.\n", "utf-8")
    done = run_cli("claims", "new", str(tmp_path / "ch"), "--from", str(tmp_path / "t.md"),
                   "--lang", "en")
    assert done.returncode == 0, done.stderr
    code = (tmp_path / "ch" / "claims.py").read_text("utf-8")
    assert '    h100_sxm = chip("h100-sxm")\n    # replace each stub' in code
    assert '        #   count_01=ch.collective("allreduce", BYTES, "X", mesh("X=N", h100_sxm))' \
        '.hops,\n' in code
    done = run_cli("verify", "--no-cache", str(tmp_path / "ch"))
    assert done.returncode == 0 and "1 claim in 1 derivation: 1 UNVERIFIABLE" in done.stdout


def test_a_ridge_the_scaffold_guesses_from_the_chip_is_the_roofline_s() -> None:
    """One question, one answer: the stubs name ``chip.ridge(dtype)`` where the text has no
    matmul and ``rl.ridge`` where it has one; for every catalogue chip with a bf16 peak the
    two are one exact number."""
    checked = 0
    for name, c in load_catalog().chips.items():
        if "mxu.bf16" not in c.figures or "hbm" not in c.figures:
            continue
        assert chip(name).ridge("bf16") == roofline(einsum("B D, D F -> B F", "bf16"),
                                                    chip(name)).ridge, name
        checked += 1
    assert checked == len(load_catalog().chips) - 1  # h800-pcie has no bf16 peak


def test_the_walk_through_of_docs_scaffold_md_is_what_the_scaffold_writes(tmp_path: Path
                                                                           ) -> None:
    """The page's text scaffolded: its table is the page's en.toml, its claims.py holds the
    stubs the page shows, and with every guess taken it is the page's claims.py (which
    tests/test_docs_pages.py verifies)."""
    page = (ROOT / "docs" / "scaffold.md").read_text("utf-8")
    fenced = dict(re.findall(r"(?ms)^```(markdown|text|python|toml)\n(.*?)^```$", page))
    (tmp_path / "serve.md").write_text(fenced["markdown"], "utf-8")
    done = run_cli("claims", "new", "serve", "--from", "serve.md", "--lang", "en",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    code = (tmp_path / "serve" / "claims.py").read_text("utf-8")
    table = (tmp_path / "serve" / "en.toml").read_text("utf-8")
    python = re.search(r"(?ms)^```python\n# serve/claims.py\n(.*?)^```$", page)
    toml = re.search(r"(?ms)^```toml\n# serve/en.toml\n(.*?)^```$", page)
    assert python and toml
    assert _taken(code) == python.group(1)
    assert table == toml.group(1)
    shown = re.search(r"(?ms)whose stubs read:\n\n```text\n(.*?)^```$", page)
    assert shown
    for part in shown.group(1).split("        ...\n"):
        assert part in code, part


@pytest.mark.parametrize(("lang", "text", "rows"), [
    ("ru", "# Крыша\n\nПиковая производительность TPU v5e равна 1,97e14 FLOP/s.\n"
           "Llama 2 7B хранит 524288 байт кэша на токен. Веса Llama 2 7B занимают 13,5 ГБ.\n",
     [("peak_01", "1,97e14 FLOP/s", 'tpu_v5e.peak("bf16")'),
      ("bytes_02", "524288 байт", "kv_bytes_per_token(llama_2_7b)"),
      ("bytes_03", "13,5 ГБ", 'inference_memory(llama_2_7b).parts["weights"]')]),
    # 6.74B beside 参数 is a count (B for billion), not bytes
    ("zh", "# 模型\n\nLlama 2 7B 有 6.74B 参数。\n",
     [("count_01", "6.74B", "params(llama_2_7b).total")]),
])
def test_a_scaffold_guesses_the_call_in_each_language(
        lang: str, text: str, rows: list[tuple[str, str, str]], tmp_path: Path) -> None:
    assert [(r.key, r.stated, r.call) for r in rows_of_text(text, lang)] == rows
    (tmp_path / "t.md").write_text(text, "utf-8")
    done = run_cli("claims", "new", "ch", "--from", "t.md", "--lang", lang, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    code = (tmp_path / "ch" / "claims.py").read_text("utf-8")
    (tmp_path / "ch" / "claims.py").write_text(_taken(code), "utf-8")
    done = run_cli("verify", "--no-cache", "ch", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(f"in 1 derivation: {len(rows)} OK")
