"""A quote's math in Markdown never opens raw HTML: a ``<`` before a tag name is ``\\lt``
(``\\textless{}`` in a text argument), the same sign to KaTeX and MathJax."""

from __future__ import annotations

import re

import pytest

from symroof.render.quotes import quote_markup

TAG = re.compile(r"<[A-Za-z/!?]")


@pytest.mark.parametrize("quote", [
    "q $</span><script>alert(1)</script>$ r",
    r"q $\text{</span><img src=x onerror=alert(1)>}$ r",
    "q $$a<b<!-- c$$ r",
    r"q $x <?php ?> \le y$",
])
def test_math_in_markdown_opens_no_tag(quote: str) -> None:
    md = quote_markup(quote, "md")
    assert TAG.search(md) is None, md
    assert "$" in md  # still math, not refused


def test_the_sign_stays_the_sign() -> None:
    assert quote_markup("q $a<b$ and $a < b$", "md") == r"q $a\lt b$ and $a < b$"
    assert quote_markup(r"q $\text{<img>}$", "md") == r"q $\text{\textless{}img>}$"
