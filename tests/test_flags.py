"""Errors below cli/ name parameters; cli/flags.py writes them as the verb's flags."""

from __future__ import annotations

import argparse

import pytest

from symroof.cli.flags import FLAGS, VERB_FLAGS, flagged
from symroof.cli.main import build_parser
from symroof.core.errors import DerivationError, InputError


def verb_options() -> dict[str, set[str]]:
    """Each verb's options, its actions' too (``claims new --from``)."""
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    def options(p: argparse.ArgumentParser) -> set[str]:
        found = {o for a in p._actions for o in a.option_strings}
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                found |= set().union(*map(options, a.choices.values()))
        return found
    return {name: options(p) for name, p in verbs.choices.items()}


def test_every_flag_of_the_tables_is_an_option_of_a_verb() -> None:
    options = verb_options()
    every = set().union(*options.values())
    assert sorted(set(FLAGS.values()) - every) == []
    for verb, table in VERB_FLAGS.items():
        assert set(table.values()) <= options[verb], verb


@pytest.mark.parametrize(("where", "verb", "shown"), [
    ("microbatch", "plan", "--microbatch"),
    ("kv_dtype", "model", "--kv-dtype"),
    ("subs D", "derive", "--subs D"),
    ("matmul: lhs", "derive", "--matmul: lhs"),
    ("nbytes", "collective", "--bytes"),
    ("variables", "optimize", "--vars"),
    ("format html", "report", "--format html"),
    # not parameters: a file and line, a table path, a mesh with its spec, a verb, a claim id
    ("stated.py:4", "verify", "stated.py:4"),
    ("chips.x.peak.mxu.bf16.value", "chips", "chips.x.peak.mxu.bf16.value"),
    ("mesh 'X=8'", "collective", "mesh 'X=8'"),
    ("derive", "derive", "derive"),
    ("nbytes", "derive", "nbytes"),  # a parameter of another verb's request
])
def test_a_place_is_written_as_the_verb_s_flag(where: str, verb: str, shown: str) -> None:
    assert flagged(InputError("wrong", where), verb).where == shown


def test_parameters_a_message_names_are_flags_and_the_error_keeps_its_kind() -> None:
    exc = flagged(DerivationError("`between` needs `solve` SYMBOL, not `nothing`", "between"),
                  "derive")
    assert isinstance(exc, DerivationError)
    assert str(exc) == "--between: --between needs --solve SYMBOL, not `nothing`"
    plain = InputError("no parameter here", None)
    assert flagged(plain, "derive") is plain
