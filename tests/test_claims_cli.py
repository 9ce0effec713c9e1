"""symroof claims new: a scaffold that builds, and bad input as one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from symroof.claims.chapter import build_chapter
from tests.conftest import run_cli


def test_new_chapter_builds_and_a_second_language_adds_a_table(tmp_path: Path) -> None:
    """The scaffold is a worked chapter that verifies (its claims with imports, statements
    and stated values); a second language's table starts empty, and verify then names every
    claim it lacks at once."""
    folder = tmp_path / "Rooflines"
    done = run_cli("claims", "new", str(folder), "--lang", "ru", "--book", "A \"book\"",
                   "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"] == [str(folder / "claims.py"), str(folder / "ru.toml")]
    (ru,) = build_chapter(folder)
    assert (ru.id, ru.source.book) == ("rooflines-ru", 'A "book"')
    assert [c.id for c in ru.claims] == ["ru_ridge", "ru_critical_batch", "ru_small_batch"]
    assert all(c.statement for c in ru.claims)
    verify = run_cli("verify", "--json", "--no-cache", str(folder))
    assert verify.returncode == 0, verify.stderr
    rows = json.loads(verify.stdout)["claims"]
    assert [(r["id"], r["verdict"]) for r in rows] == [
        ("ru_ridge", "OK"), ("ru_critical_batch", "OK"), ("ru_small_batch", "OK")]
    done = run_cli("claims", "new", str(folder), "--lang", "zh")
    assert done.returncode == 0 and done.stdout == f"wrote {folder / 'zh.toml'}\n"
    assert "[\"A worked example\"" not in (folder / "zh.toml").read_text("utf-8")
    verify = run_cli("verify", "--no-cache", str(folder))
    assert verify.returncode == 2 and verify.stderr == (
        f"symroof: error: {folder / 'zh.toml'}: ridge, critical_batch, small_batch: 3 claims "
        "of claims.py this table neither states nor omits (a row for each, or list it under "
        "[chapter] omits)\n")


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run_cli("claims", "new", str(tmp_path / "c"), "--lang", "ru")
    done = run_cli("claims", "new", str(tmp_path / "c"), "--lang", "ru")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"symroof: error: {tmp_path / 'c' / 'ru.toml'}: this translation's "
                           "table already exists\n")
    done = run_cli("claims", "new", str(tmp_path / "d"), "--lang", "Russian")
    assert done.returncode == 2
    assert done.stderr == ("symroof: error: --lang: a language is two or three lower-case "
                           "letters, got 'Russian'\n")
    assert not (tmp_path / "d").exists()


def test_new_files_follow_the_umask(tmp_path: Path) -> None:
    import os
    import stat
    import subprocess
    import sys
    folder = tmp_path / "c"
    for mask, mode in ((0o022, 0o644), (0o077, 0o600)):
        table = folder / "ru.toml"
        table.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-m", "symroof", "claims", "new", str(folder),
                               "--lang", "ru"], capture_output=True, text=True,
                              preexec_fn=lambda m=mask: os.umask(m))
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(table.stat().st_mode) == mode
    assert stat.S_IMODE((folder / "claims.py").stat().st_mode) == 0o644
