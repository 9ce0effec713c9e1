"""The HTML write-ups' own assets and KaTeX's, copied next to the pages so that no page
fetches anything when it is viewed.

>>> sorted(k for k in own_assets())
['symroof.css', 'symroof.js']

KaTeX is found, in this order: ``$SYMROOF_KATEX_DIR`` (its ``dist`` folder); the copy an
installed package carries (``symroof/render/katex/``, put there by the build from the npm
package that ``package-lock.json`` pins); ``node_modules/katex/dist`` of a checkout after
``npm ci`` (the current folder or above it, or beside the package).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InputError

KATEX_FILES = ("katex.min.css", "katex.min.js")

_JS = """// Typesets every .tex element with KaTeX; errors show in place, never stop the page.
document.querySelectorAll(".tex").forEach(function (el) {
  katex.render(el.textContent, el, {throwOnError: false, strict: "ignore",
    displayMode: el.classList.contains("display")});
});
"""

# fonts: the reader's sans-serif first; Chinese from whichever CJK family the system has
# (`make browser` installs WenQuanYi Micro Hei on Debian), emoji from a colour emoji font
_CSS = """body { font-family: system-ui, "Noto Sans", "DejaVu Sans", "Noto Sans CJK SC",
  "Source Han Sans SC", "WenQuanYi Micro Hei", "PingFang SC", "Microsoft YaHei",
  "Noto Color Emoji", "Apple Color Emoji", "Segoe UI Emoji", sans-serif; max-width: 60rem;
  margin: 2rem auto; padding: 0 1rem; line-height: 1.45; color: #222; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; font-size: 0.92rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; vertical-align: top; }
th { text-align: left; border-bottom: 2px solid #888; }
td.r, th.r { text-align: right; }
table.shares { table-layout: fixed; }
table.shares td { overflow-wrap: anywhere; }
table.shares td .tex { display: inline-block; max-width: 100%; overflow-x: auto;
  overflow-y: hidden; vertical-align: top; }
code { font-size: 0.85em; color: #555; }
small { color: #555; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; }
.tex.display { display: block; overflow-x: auto; margin: 0.4rem 0; }
li { margin: 0.3rem 0; }
.katex { font-size: 1.05em; }
"""


def own_assets() -> dict[str, str]:
    return {"symroof.css": _CSS, "symroof.js": _JS}


def katex_dir() -> Path:
    """KaTeX's ``dist`` folder: ``$SYMROOF_KATEX_DIR``, else the package's own copy, else
    ``node_modules/katex/dist`` in the current folder or above it, or beside the package."""
    given = os.environ.get("SYMROOF_KATEX_DIR")
    if given:
        if all((Path(given) / f).is_file() for f in KATEX_FILES):
            return Path(given)
        raise InputError(f"SYMROOF_KATEX_DIR={given} has no {' or '.join(KATEX_FILES)} "
                         "(it names KaTeX's dist folder)", "format html")
    here = Path.cwd().resolve()
    package_root = Path(__file__).resolve().parents[2]
    candidates = [Path(__file__).resolve().parent / "katex",
                  *(p / "node_modules" / "katex" / "dist" for p in (here, *here.parents)),
                  package_root / "node_modules" / "katex" / "dist"]
    for c in candidates:
        if all((c / f).is_file() for f in KATEX_FILES):
            return c
    raise InputError("KaTeX is not installed: this package was built without npm; in a "
                     "checkout run 'npm ci' (it reads package.json), or set SYMROOF_KATEX_DIR "
                     "to KaTeX's dist folder", "format html")


def assets() -> dict[str, str | bytes]:
    """Every file the HTML pages load, by its path in the output folder."""
    dist = katex_dir()
    files: dict[str, str | bytes] = dict(own_assets())
    for name in KATEX_FILES:
        files[f"katex/{name}"] = (dist / name).read_bytes()
    for font in sorted((dist / "fonts").glob("*")):
        if font.suffix in (".woff2", ".woff", ".ttf"):
            files[f"katex/fonts/{font.name}"] = font.read_bytes()
    return files
