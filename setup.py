"""The build puts KaTeX's files into the package, so that an installed symroof writes HTML
write-ups without a checkout: ``build_py`` copies KaTeX's ``dist`` (the CSS, the script and
the fonts) into ``symroof/render/katex/``. It takes them from ``node_modules/katex/dist``
when ``npm ci`` has run in the project folder, else it runs ``npm ci`` in a temporary folder
with the project's ``package.json`` and ``package-lock.json`` (the exact KaTeX they pin).
Without npm the package is built without KaTeX, and ``--format html`` says how to add it.
An editable install needs no copy: it finds ``node_modules`` beside the package.

Everything else about the build is in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
KATEX_FILES = ("katex.min.css", "katex.min.js")
FONT_SUFFIXES = (".woff2", ".woff", ".ttf")


def _complete(dist: Path) -> bool:
    return all((dist / name).is_file() for name in KATEX_FILES)


def _copy_katex(dist: Path, target: Path) -> None:
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    for name in KATEX_FILES:
        shutil.copyfile(dist / name, target / name)
    for font in sorted((dist / "fonts").glob("*")):
        if font.suffix in FONT_SUFFIXES:
            shutil.copyfile(font, target / "fonts" / font.name)


class BuildWithKatex(build_py):
    """``build_py`` that also places KaTeX's files in the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "symroof" / "render" / "katex"
        local = HERE / "node_modules" / "katex" / "dist"
        if _complete(local):
            _copy_katex(local, target)
            return
        npm = shutil.which("npm")
        lock = HERE / "package-lock.json"
        if npm is None or not lock.is_file():
            print("symroof build: npm or package-lock.json is missing, so the package has no "
                  "KaTeX; --format html will ask for SYMROOF_KATEX_DIR", file=sys.stderr)
            return
        with tempfile.TemporaryDirectory(prefix="symroof-katex-") as tmp:
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(HERE / name, Path(tmp) / name)
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=tmp,
                           check=True)
            _copy_katex(Path(tmp) / "node_modules" / "katex" / "dist", target)


setup(cmdclass={"build_py": BuildWithKatex})
