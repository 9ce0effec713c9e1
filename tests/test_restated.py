"""Claims that cannot fail (issue 35): the audit of every bundled claim whose derive code
restates its stated value, held to what ``claims.restated`` finds by construction; the forms
a restatement takes, the engine values it must never catch, and a law over both."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.claims.chapter import build_chapter
from symroof.claims.restated import restated, restated_folder
from tests.conftest import ROOT

CHAPTERS = sorted(p.parent for p in (ROOT / "derivations").glob("*/claims.py"))

# The audit: every bundled claim whose value reads OK (or ROUNDING) was read in its
# claims.py; these are the ones whose value comes from nothing the engine derives (no
# concept, roofline, model, collective, plan or catalogue figure), only from numbers,
# symbols or text claims.py types itself. Each: (folder, key) -> how it restates.
AUDITED = {
    ("appendix", "csr_example_params"): "rows * cols, two literals (100_000 and 10_000)",
    ("appendix", "csr_nnz_millions"): "nnz / 10**6, nnz = the literal density 1/100 times "
                                      "rows * cols",
    ("appendix", "gemm_attention_block"): "the length of the einsum specs claims.py types "
                                          "for the block, filtered by its own contracts()",
    ("appendix", "einsum_matmul"): "the indices claims.py types (A[i, k], B[k, j], summed "
                                   "over k) spelled as a string by its own einsum_spec()",
    ("appendix", "einsum_attention_scores"): "the indices claims.py types (Q[b, h, i, d], "
                                             "K[b, h, j, d], summed over d) spelled as a "
                                             "string by its own einsum_spec()",
    ("appendix-training", "gpt2_card_decimal_gb"): "parse_quantity('80 GiB'): the figure "
                                                   "typed, read back",
    ("rooflines", "token_batch_example"): "512 * 4096 typed into a ch.step",
    ("rooflines", "token_batch_example_local"): "512 * 4096 over the input gpus",
    ("rooflines", "q5_h100_dense_flops"): "the typed 1.979e15 FLOP/s halved",
    ("scaling", "scaling_tokens_per_param_heuristic"): "chinchilla_d / chinchilla_n, two "
                                                       "literals (1.4e12 and 70e9)",
    ("scaling", "scaling_chinchilla_tokens_per_param"): "chinchilla_d / chinchilla_n",
    ("scaling", "scaling_gpt3_tokens_per_param"): "Rational(gpt3_d, gpt3_n), two literals "
                                                  "(300e9 and 175e9)",
}

# Audited too, and marked definition(...) in claims.py rather than found: they call the
# engine, whose factor cancels in a ratio of one product at two typed parameter counts
# (175e9 / 70e9 = 2.5). The reading follows where a value comes from, not what cancels.
CANCELS = {
    ("scaling", "scaling_weight_memory_2_5x"): "N * dtype_bytes('bf16') at 175e9 over "
                                               "70e9: the bytes per weight cancel",
    ("scaling", "scaling_inference_compute_2_5x"): "the forward FLOPs 2 N D at D = 1, at "
                                                   "175e9 over 70e9: 2 cancels",
}


def test_the_bundled_restatements_found_are_the_audited_ones() -> None:
    found = {(folder.name, key) for folder in CHAPTERS for key in restated_folder(folder)}
    assert found == set(AUDITED)
    assert not found & set(CANCELS)


def test_every_bundled_definition_is_audited_or_marked() -> None:
    # what verify reads: a claim of kind definition is either marked definition(...) in
    # claims.py ("restates a definition") or an audited restatement, and each audited one is
    # a definition in every translation
    restating, marked, ids = set(), set(), set()
    for folder in CHAPTERS:
        for d in build_chapter(folder):
            prefix = d.id.rpartition("-")[2] + "_" if folder.name == "rooflines" else ""
            for c in d.claims:
                if c.kind != "definition":
                    continue
                key = (folder.name, c.id.removeprefix(prefix))
                if c.restates:
                    assert c.restates.startswith("no engine computation: restates "), c.id
                    restating.add(key)
                    ids.add(c.id)
                else:
                    marked.add(key)
    assert restating == set(AUDITED)
    assert ids == {p + key for name, key in AUDITED
                   for p in (("ru_", "zh_") if name == "rooflines" else ("",))}  # 15 claims
    assert marked == {("appendix-training", "mem_weights_half"),
                      ("appendix-training", "mem_weights_fp32"),
                      ("rooflines", "t_math_formula"), ("rooflines", "t_comms_formula"),
                      *CANCELS}


def test_what_a_bundled_restatement_says() -> None:
    said = restated_folder(ROOT / "derivations" / "appendix")
    assert said["gemm_attention_block"] == (
        "restates len(with_weights) + (len(gemms) - len(with_weights)), made in claims.py "
        "from its own literals through its own contracts, has_weight")
    assert said["einsum_matmul"] == (
        "restates einsum_spec((A[i, k], B_[k, j]), summed=(k,)), made in claims.py from its "
        "own literals through its own einsum_spec")
    assert said["csr_example_params"] == "restates rows * cols, written in claims.py"


HEAD = """
import numpy as np
import sympy as sp
from symroof import chip, dtype_bytes, einsum, parse_quantity, COMPUTE
from symroof.claims import law, within, quantity
"""


def found(body: str, **siblings: str) -> dict[str, str]:
    return restated(HEAD + textwrap.dedent(body), siblings)


def test_every_form_of_a_restatement_is_found() -> None:
    got = found("""
        TABLE = {"gpt3": 175 * 10**9, "chinchilla": 70 * 10**9}
        def twice(x):
            return 2 * x
        def product(*xs, **named):
            out = 1
            for x in [*xs, *named.values()]:
                out *= x
            return out
        def claims(ch):
            total = 0
            for n in (512, 4096):
                total += n
            parts = []
            parts.append(2048)
            a, b = (x for x in (1, 2))
            chips = ch.given("chips", 8)
            ch.add(
                sym=sp.sympify("2048"), big=max(TABLE.values()), n=len(TABLE),
                own=twice(1024), loop=total, filled=parts[0], unpacked=a + b,
                lam=(lambda v: v * 2)(chips), mapped=sum(map(lambda v: v, [1, 2])),
                label=f"{TABLE['gpt3']} params", holds=law(3 > 2), inside=within(3, 1, 5),
                np_arith=np.prod([512, 4096]), walrus=(w := 7) * 2,
                step=ch.step("evaluate", "tokens", None, sp.Integer(512) * 4096),
                rate=parse_quantity("1e15 FLOP/s", COMPUTE) / 2,
                root=sp.sqrt(sp.Rational(9, 4)), formula=2 * sp.Symbol("B"),
                rest=product(512, 4096), named=product(a=512, b=4096),
            )
    """)
    assert set(got) == {"sym", "big", "n", "own", "loop", "filled", "unpacked", "lam",
                        "mapped", "label", "holds", "inside", "np_arith", "walrus", "step",
                        "rate", "root", "formula", "rest", "named"}
    assert got["own"] == "restates twice(1024), made in claims.py from its own literals through " \
        "its own twice"
    assert got["lam"] == "restates (lambda v: v * 2)(chips), made in claims.py from its own " \
        "literals and the input chips"
    assert got["big"] == "restates max(TABLE.values()), made in claims.py from its own " \
        "literals (TABLE)"


def test_what_the_reading_cannot_follow_restates_what_it_is_given() -> None:
    # no engine source in sight: eval, getattr, a class of claims.py, a module reached by
    # name, an unknown name hold only the literals they are given
    got = found("""
        import importlib
        class Table:
            width = 4096
        def claims(ch):
            ch.add(
                ev=eval("512 * 4096"), dynamic=getattr(sp, "Integer")(5), cls=Table.width,
                module=importlib.import_module("math").prod([512, 4096]),
                unknown=elsewhere(2), ok=getattr(sp, "Integer")(dtype_bytes("bf16")),
            )
    """)
    assert set(got) == {"ev", "dynamic", "cls", "module", "unknown"}
    assert got["ev"] == "restates eval('512 * 4096'), made in claims.py from its own " \
        "literals; nothing the engine derives reaches it (eval(...) read as what it is given)"
    assert got["cls"].endswith("(its own class Table read as what it is given)")


def test_a_sibling_module_is_read_as_claims_py() -> None:
    body = """
        from _helpers import tokens, WIDTH
        def claims(ch):
            ch.add(t=tokens(512), w=WIDTH)
    """
    helper = "WIDTH = 4096\ndef tokens(n):\n    return n * WIDTH\n"
    assert set(found(body, _helpers=helper)) == {"t", "w"}
    assert found(body) == {}  # a module it cannot read is a computation


def test_an_engine_value_is_never_caught() -> None:
    got = found("""
        def claims(ch):
            h100 = chip("h100-sxm")
            rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), h100)
            values = []
            values.append(dtype_bytes("bf16"))
            handed = [1, 2]
            np.copyto(handed, 3)
            x = sp.Symbol("x")
            class Rates:
                peak = chip("h100-sxm").peak("bf16")
            ch.add(
                peak=h100.peak("bf16"), ridge=rl.ridge, bytes=2 * dtype_bytes("fp32"),
                twice=max(rl.ridge, 1), filled=values[0], handed=handed[0],
                shape=str(np.broadcast_shapes((3, 1), (1, 4))), algebra=sp.diff(x**2, x),
                flops=einsum("B D, D F -> B F").flops.subs({"B": 2}), cls=Rates.peak,
                dynamic=getattr(sp, "Integer")(dtype_bytes("bf16")),
                filtered=len([s for s in ("a", "b") if dtype_bytes(s)]),
            )
    """)
    assert got == {}


def test_a_marked_value_is_left_as_it_is() -> None:
    got = found("""
        from symroof.claims import assumed, definition, measured
        def claims(ch):
            ch.add(a=definition(3), b=assumed(4, "why"), c=measured("2 ms"))
    """)
    assert got == {}


# a value: (source, whether the engine is one of its sources)
_LEAVES = st.one_of(
    st.integers(1, 10**6).map(lambda n: (str(n), False)),
    st.just(('ch.given("k", 3)', False)),
    st.just(('sp.Rational(1, 2)', False)),
    st.sampled_from(['dtype_bytes("bf16")', 'chip("h100-sxm").peak("bf16")',
                     'einsum("B D, D F -> B F", "bf16").flops',
                     'ch.roofline(einsum("B D, D F -> B F"), chip("tpu-v5e")).ridge'])
    .map(lambda s: (s, True)))


def _node(children: st.SearchStrategy[tuple[str, bool]]) -> st.SearchStrategy[tuple[str, bool]]:
    one = children
    two = st.tuples(children, children)
    return st.one_of(
        st.tuples(two, st.sampled_from(["+", "-", "*", "/", "**"])).map(
            lambda t: (f"({t[0][0][0]} {t[1]} {t[0][1][0]})", t[0][0][1] or t[0][1][1])),
        st.tuples(two, st.sampled_from(["max", "min", "sp.Max", "np.maximum"])).map(
            lambda t: (f"{t[1]}({t[0][0][0]}, {t[0][1][0]})", t[0][0][1] or t[0][1][1])),
        two.map(lambda t: (f"len([{t[0][0]}, {t[1][0]}])", t[0][1] or t[1][1])),
        two.map(lambda t: (f"[{t[0][0]}, {t[1][0]}][0]", t[0][1] or t[1][1])),
        one.map(lambda t: (f"sp.sympify({t[0]})", t[1])),
        one.map(lambda t: (f"twice({t[0]})", t[1])),
        one.map(lambda t: (f"(lambda v: v + 1)({t[0]})", t[1])),
        one.map(lambda t: (f'{{"k": {t[0]}}}["k"]', t[1])),
        one.map(lambda t: (f"ch.step('evaluate', 'v', None, {t[0]})", t[1])),
        one.map(lambda t: (f"named({t[0]})", t[1])),
    )


@settings(max_examples=60, deadline=None)
@given(st.recursive(_LEAVES, _node, max_leaves=6), st.booleans())
def test_law_a_value_restates_exactly_when_no_source_is_the_engine(
        value: tuple[str, bool], cancelled: bool) -> None:
    source, engine = value
    if cancelled:  # an engine value that cancels leaves what the rest restates
        source = f"{source} + 0 * dtype_bytes('fp32')"
    # named(x) binds x to a name first: a value read through a variable
    body = source
    lines = []
    while "named(" in body:
        start = body.rindex("named(")  # the innermost first: its argument names none
        depth, end = 0, start + len("named")
        for end in range(start + len("named"), len(body)):
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            if depth == 0:
                break
        name = f"v{len(lines)}"
        lines.append(f"    {name} = {body[start + len('named('):end]}")
        body = body[:start] + name + body[end + 1:]
    text = HEAD + "def twice(x):\n    return 2 * x\ndef claims(ch):\n" + \
        "\n".join(lines) + f"\n    ch.add(x={body})\n"
    assert ("x" in restated(text)) is not engine, text


def test_unreadable_folders_find_nothing(tmp_path: Path) -> None:
    assert restated_folder(tmp_path) == {}
    (tmp_path / "claims.py").write_text("def claims(ch):\n    ch.add(x=1 +\n", "utf-8")
    assert restated_folder(tmp_path) == {}


def test_a_helper_that_adds_claims_reads_what_its_calls_pass() -> None:
    got = found("""
        def put(ch, tokens, ridge):
            ch.add(tokens=tokens, ridge=ridge)
        def claims(ch):
            rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
            put(ch, 512 * 4096, rl.ridge)
    """)
    assert got == {"tokens": "restates tokens, made in claims.py from its own literals"}


def test_a_star_import_leaves_unknown_names_alone() -> None:
    assert found("""
        from symroof import *
        def claims(ch):
            ch.add(ridge=roofline(einsum("B D, D F -> B F"), chip("tpu-v5e")).ridge)
    """) == {}


def test_a_table_of_literals_given_to_the_chapter_restates_it() -> None:
    got = found("""
        def claims(ch):
            shape = [32, 1, 64]
            ch.add(shape=shape, rank=len(shape))
    """)
    assert got == {"shape": "restates [32, 1, 64], written in claims.py",
                   "rank": "restates len([32, 1, 64]), written in claims.py"}


def test_an_engine_value_that_cancels_leaves_a_restatement() -> None:
    got = found("""
        def claims(ch):
            rl = ch.roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e"))
            r = rl.ridge
            ch.add(zero=5 + 0 * rl.ridge, same=2048 * r / r, gone=(r + 7) - r,
                   power=sp.Integer(3) * r ** 0, kept=r * 2, twice=r + r,
                   moved=r.subs({"B": 2}) / r)
    """)
    assert set(got) == {"zero", "same", "gone", "power"}
    assert got["same"] == "restates 2048 * r / r, made in claims.py from its own literals: " \
        "the engine's rl.ridge cancels in it (= 2048)"


def test_a_number_read_from_outside_restates_what_it_reads() -> None:
    # the environment or a file is no engine computation; the engine's own catalogue is
    got = found("""
        import os
        from pathlib import Path
        def claims(ch):
            ch.add(env=int(os.environ["K"]), getenv=float(os.getenv("K", "7")),
                   file=int(Path("data.txt").read_text()), opened=int(open("d").read()),
                   chip=chip("h100-sxm").peak("bf16") * int(os.getenv("K", "1")))
    """)
    assert set(got) == {"env", "getenv", "file", "opened"}
    assert got["getenv"].endswith("(os.getenv read as what it is given)")


def test_every_spelling_of_add_is_read() -> None:
    got = found("""
        def claims(ch):
            add = ch.add
            add(alias=512 * 4096)
            getattr(ch, "add")(by_name=2048)
            ch.add(**{"spread": 4096}, **dict(called=8))
            ch.add(**{"engine": dtype_bytes("bf16")})
    """)
    assert set(got) == {"alias", "by_name", "spread", "called"}
