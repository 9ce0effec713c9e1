"""The example notebook runs from top to bottom in a real kernel (nbclient), and every
object it shows has a rich HTML view, not its plain repr."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "examples" / "symroof.ipynb"


def test_the_example_notebook_executes_and_shows_rich_views() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    shown = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        errors = [o for o in c.outputs if o.output_type == "error"]
        assert not errors, (c.source, errors)
        results = [o for o in c.outputs if o.output_type == "execute_result"]
        assert len(results) == 1, c.source
        data = results[0]["data"]
        assert {"text/html", "text/latex", "text/markdown"} <= set(data), c.source
        assert len(data["text/plain"]) < 2000, c.source  # never a dump
        shown.append(data["text/html"])
    assert shown[0].startswith('<div class="symroof"><strong>tpu-v5e: Google TPU v5e')
    assert "$\\frac{9850}{41} \\approx 240.24$" in shown[2]  # the critical intensity
    assert "$B &gt; \\frac{9850}{41} \\approx 240.24$" in shown[3]
    assert "<td class=\"l\">OK</td>" in shown[6]  # the verification
