"""The chip catalogue: every required chip, sources, alternatives and overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy as sp

from symroof.core.errors import InputError
from symroof.hardware.catalog import chip, load_catalog

REQUIRED = ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "a100-40gb", "a100-80gb", "h100-sxm",
            "h100-pcie", "h200", "b200", "rtx-4080"]


def test_every_required_chip_has_peak_bandwidth_capacity_and_sources() -> None:
    catalog = load_catalog()
    for name in REQUIRED:
        c = catalog[name]
        assert c.peak("bf16") > 0 and c.bandwidth("hbm") > 0 and c.capacity("hbm") > 0
        for fig in c.figures.values():
            assert fig.source in catalog.sources
            assert all(a.source in catalog.sources for a in fig.alternatives)


def test_disagreeing_sources_are_kept_as_alternatives() -> None:
    v5e = chip("tpu-v5e")
    assert v5e.bandwidth() == 810 * 10**9
    assert chip("tpu-v5e", hbm="B1").bandwidth() == 820 * 10**9
    assert chip("tpu-v6e").peak() == 918 * 10**12  # the vendor's (GC-v6e); the book's is B2
    assert chip("tpu-v6e", bf16="B2").peak() == 920 * 10**12
    assert chip("tpu-v6e", bf16="B1").peak() == 910 * 10**12
    assert chip("h100-sxm").peak() == 9894 * 10**11  # NVIDIA's dense 989.4 TFLOP/s
    assert chip("h100-sxm", bf16="B1").peak() == 989 * 10**12
    assert {a.value for a in chip("h100-sxm").figure("bf16").alternatives} >= {990 * 10**12}


# the vendors' figures that differ from the book's (Google Cloud's TPU pages, as the fact
# sheet quotes them: 2765 GBps, 918 TFLOPs, 1836 TOPs, 1638 GBps, 393 TOPs), and the book's
# ch. 2 table (B2) they replace as defaults
VENDOR_DEFAULTS = [
    ("tpu-v5p", "hbm", 2765 * 10**9, 28 * 10**11),
    ("tpu-v6e", "mxu.bf16", 918 * 10**12, 92 * 10**13),
    ("tpu-v6e", "mxu.int8", 1836 * 10**12, 184 * 10**13),
    ("tpu-v6e", "hbm", 1638 * 10**9, 16 * 10**11),
    ("tpu-v5e", "mxu.int8", 393 * 10**12, 394 * 10**12),
]


@pytest.mark.parametrize(("name", "key", "vendor", "book"), VENDOR_DEFAULTS)
def test_defaults_are_the_vendors_figures_and_the_book_an_edition(
        name: str, key: str, vendor: int, book: int) -> None:
    c = chip(name)
    assert c.figure(key).value == vendor and c.figure(key).source.startswith("GC-")
    assert c.edition("B2").figure(key).value == book
    assert c.with_figures({key: "B2"}).figure(key).value == book


def test_one_rule_for_every_default() -> None:
    """A figure a vendor publishes with one value defaults to it; where a default is the
    book's although a vendor figure in its convention (direction, per) is listed, its note
    says why; the book's figure under a vendor default is an alternative labelled with its
    edition."""
    catalog = load_catalog()
    vendor = ("GC-", "NV-")  # a vendor's figure is labelled with its source
    kept = []
    for name, c in catalog.chips.items():
        for key, fig in c.figures.items():
            vendors = {a.value for a in fig.alternatives if a.label.startswith(vendor)
                       and not a.direction and not a.per}
            if fig.source.startswith(vendor):
                assert fig.value in vendors or not vendors, (name, key)
                books = [a for a in fig.alternatives if a.source.startswith("B")]
                assert all(a.label.startswith(a.source) for a in books), (name, key)
            elif vendors and fig.source.startswith("B"):
                assert "the default stays the book's" in fig.note.lower(), (name, key)
                kept.append(f"{name} {key}")
    # the figures the rule keeps at the book's (each note says why)
    assert sorted(kept) == [
        "h100-sxm vpu.fp32", "tpu-v4 hbm.capacity", "tpu-v5e dcn", "tpu-v5e hbm",
        "tpu-v5e ici", "tpu-v5p hbm.capacity", "tpu-v5p ici", "tpu-v6e ici"]


def test_picked_alternative_keeps_the_default_as_an_alternative() -> None:
    fig = chip("tpu-v5e", hbm="B1").figure("hbm")
    assert fig.label == "B1"
    assert 810 * 10**9 in {a.value for a in fig.alternatives}


def test_critical_intensities() -> None:
    # 989.4e12 / 3.35e12 and 97.5e12 / 716.8e9, derived by hand
    assert chip("h100-sxm").ridge() == sp.Rational(9894, 335) * 10
    assert chip("rtx-4080").ridge() == sp.Rational(975, 7168) * 1000
    assert round(float(chip("h100-sxm").ridge())) == 295
    assert round(float(chip("rtx-4080").ridge())) == 136


def test_overrides_accept_units_and_refuse_wrong_dimensions() -> None:
    assert chip("tpu-v5e").with_figures({"hbm": "810 GB/s"}).bandwidth() == 810 * 10**9
    with pytest.raises(InputError, match="^set hbm: '1 TFLOP/s' is not a bandwidth"):
        chip("tpu-v5e").with_figures({"hbm": "1 TFLOP/s"})
    with pytest.raises(InputError, match="^set nope: chip 'tpu-v5e' has no figure 'nope'"):
        chip("tpu-v5e").with_figures({"nope": "1"})


def test_unknown_chip_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="unknown chip 'tpu-v9'.*known: a100-40gb"):
        chip("tpu-v9")


def test_user_catalogue_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[sources]\nme = "my bench"\n[chips.toy]\n'
                    '[chips.toy.peak.mxu.bf16]\nvalue = "1 TFLOP/s"\nsource = "me"\n'
                    '[chips.toy.memory.hbm]\nbandwidth = { value = "10 GB/s", source = "me" }\n')
    toy = load_catalog(str(path))["toy"]
    assert toy.ridge() == 100


@pytest.mark.parametrize(("body", "message"), [
    ("", "no [chips.NAME] tables"),
    ("[chips.x]\nnope = 1", "a chip needs at least one figure"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = "1 GB/s" }',
     "chips.x.memory.hbm.bandwidth: missing 'source'"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = 5, source = "a" }',
     "'value' must be a string, got int"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = "1 GB/s", source = "z" }',
     "source 'z' is not in [sources]"),
    ('[sources]\na="b"\n[chips.x.memory.hbm]\nbandwidth = { value = "1 TFLOP/s", source = "a" }',
     "is not a bandwidth"),
    ("[chips.x", "not valid TOML"),
])
def test_bad_catalogue_files_name_file_and_key(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(InputError) as info:
        load_catalog(str(path))
    assert str(path) in str(info.value) and message in str(info.value)


def test_symroof_chip_shows_the_ridge_over_each_link() -> None:
    from tests.conftest import run_cli
    got = run_cli("chip", "tpu-v5e")
    assert got.returncode == 0
    lines = got.stdout.splitlines()
    # 1.97e14 FLOP/s over ICI's 4.5e10 B/s one way per link (9e10 both ways), as B2 has them
    assert "  critical intensity (bf16 / ici, per link): 39400/9 ≈ 4377.8 FLOP/byte one way, " \
        "19700/9 ≈ 2188.9 both ways" in lines
    # DCN's 2.5e10 B/s per host, shared by 8 chips
    assert "  critical intensity (bf16 / dcn, a host's share per chip (8 chips)): 63040 " \
        "FLOP/byte one way, 31520 both ways" in lines
    data = json.loads(run_cli("chip", "tpu-v5e", "--json").stdout)
    assert data["links"]["ici"]["ridge_bf16"] == "39400/9"


def test_a_peak_derived_from_the_microarchitecture_agrees_with_the_sheet() -> None:
    from symroof.claims.diagnosis import judged_number
    from symroof.claims.rules import Verdict
    a100 = chip("a100-40gb")
    # 108 SMs x 4 tensor cores x 512 FLOPs per clock x 1.41 GHz (B12, NV-A100)
    assert a100.micro_peak("bf16") == 108 * 4 * 512 * 1_410_000_000
    assert judged_number("3.1e14", a100.micro_peak("bf16")).verdict == Verdict.OK
    assert judged_number("312 TFLOP/s", a100.micro_peak("bf16")).verdict == Verdict.OK
    # 76 SMs x 1024 FLOPs per clock per SM x 2.505 GHz with fp16 accumulate (fact sheet)
    assert judged_number("194.9", chip("rtx-4080").micro_peak("fp16") / 10**12).verdict == \
        Verdict.OK
    assert a100.with_figures({"micro.clock": "1.1 GHz"}).micro_peak() == \
        108 * 4 * 512 * 1_100_000_000
    with pytest.raises(InputError, match=r"chip 'h100-sxm' has no microarchitecture figure "
                                         r"'flops_per_clock_per_tensor_core.bf16' to derive a "
                                         r"bf16 peak from"):
        chip("h100-sxm").micro_peak()  # no source gives its FLOPs per clock
    with pytest.raises(InputError, match=r"a clock is a number and a unit"):
        a100.with_figures({"micro.clock": "1.1"})
    # a name is a figure as a text states it: a symbol
    assert a100.with_figures({"micro.clock": "f"}).micro_peak() == \
        108 * 4 * 512 * sp.Symbol("f", positive=True)


def test_tpu_v3_and_h800_are_in_the_catalogue_with_sources() -> None:
    v3 = chip("tpu-v3")
    assert v3.peak("bf16") == 123 * 10**12 and v3.bandwidth() == 900 * 10**9
    assert v3.capacity("hbm") == 32 * 2**30 and v3.figure("mxu.bf16").source == "GC-v3"
    h800 = chip("h800-pcie")
    assert h800.peak("fp8") == 1513 * 10**12 and h800.figure("mxu.fp8").source == "B4"


def test_tpu_v2_and_h800_sxm_are_in_the_catalogue_with_sources() -> None:
    # JAX's TPU table (jax/_src/pallas/mosaic/tpu_info.py): 4.6e13 bf16, 16e9 B at 7.16e11 B/s
    v2 = chip("tpu-v2")
    assert (v2.peak("bf16"), v2.capacity("hbm"), v2.bandwidth()) == (
        46 * 10**12, 16 * 10**9, 716 * 10**9)
    assert v2.figure("mxu.bf16").source == "JAX-TPU"
    assert v2.with_figures({"mxu.bf16": "GIO-v2"}).peak("bf16") == 45 * 10**12  # 180 / 4
    # the H800 SXM keeps the H100 SXM's tensor rates; NVLink 400 GB/s both ways; FP64 ~1e12
    h800 = chip("h800-sxm")
    h100 = chip("h100-sxm").with_figures({"mxu.bf16": "NV-H100", "mxu.fp16": "NV-H100",
                                          "mxu.fp8": "NV-H100"})
    for dtype in ("bf16", "fp16", "tf32", "fp8"):
        assert h800.peak(dtype) == h100.peak(dtype)
    assert h800.peak("bf16") == sp.Rational(9894, 10) * 10**12
    assert h800.peak("fp64", "vpu") == 10**12
    assert h800.capacity("hbm") == 80 * 10**9 and h800.bandwidth() == sp.Rational(335, 100) * 10**12
    assert h800.bandwidth("nvlink") == 200 * 10**9  # one way: half the 400 GB/s printed
    assert {h800.figure(k).source for k in ("mxu.bf16", "vpu.fp64", "nvlink")} == {"H800-SEC"}


def test_an_unknown_microarchitecture_figure_is_named(tmp_path: Path) -> None:
    cat = tmp_path / "c.toml"
    cat.write_text('[sources]\nT = "t"\n[chips.x]\n[chips.x.peak.mxu.bf16]\nvalue = "1e14 FLOP/s"'
                   '\nsource = "T"\n[chips.x.micro]\nwarps = { value = "4", source = "T" }\n',
                   "utf-8")
    with pytest.raises(InputError, match=r"chips\.x\.micro\.warps: unknown microarchitecture "
                                         r"figure 'warps'"):
        load_catalog(str(cat))
