"""Write-ups rendered in a sealed worker from the verdicts of a sealed run: the parent never
imports a derivation.

>>> sent = _encode({"a.md": "x", "a.pdf": b"%PDF"})
>>> _decode(sent) == {"a.md": "x", "a.pdf": b"%PDF"}
True

A write-up shows what a derivation built (its steps, rooflines, figures), which only its
own code can make again. So a forked worker, sealed like a verifying one (standard
streams to the null device, its own process group, bounded by the time limit), builds the
units, takes every verdict from the parent's rows (the parent judged them), renders the
Markdown, LaTeX and HTML, and sends the files back. PDFs are compiled here from the LaTeX
it sent, which is text made of escaped data, never code. A worker that exits, hangs or
fails renders nothing: the report says so in one line and exits 1.
"""

from __future__ import annotations

import base64
import json
import os
import select
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from ..claims.processes import fork_worker, how, kill, reap
from ..core.errors import InputError, SymroofError


class NotRendered(SymroofError):
    """The write-up's worker exited, hung or failed (a run failure, exit 1)."""


def render_sealed(units: Sequence[Path], rows: Sequence[Mapping[str, Any]],
                  formats: Sequence[str], lang: str, timeout: float) -> Any:
    """The :class:`symroof.render.report.Rendered` files of ``units``, built and rendered
    in a sealed worker within ``timeout`` seconds per unit (and once more for rendering)."""
    from .pdf import with_pdfs
    from .report import Rendered
    inner = [f for f in formats if f != "pdf"]
    if "pdf" in formats and "tex" not in inner:
        inner.append("tex")
    pid, read = fork_worker(lambda write: _serve(units, rows, inner, lang, timeout, write))
    limit = timeout * (len(units) + 1)
    data, status = _collect(read, pid, limit + 0.5 + timeout / 4)  # its own limit acts first
    try:
        answer = json.loads(data) if data else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        why = f"ran past {limit:g} s" if status is None else f"{how(status)}"
        raise NotRendered(f"the write-up's worker {why} without rendering")
    if "error" in answer:
        cls = InputError if answer.get("input") else NotRendered
        raise cls(str(answer["error"]))
    files = with_pdfs(_decode(answer["files"]), formats, None, timeout)
    return Rendered(files, tuple(str(n) for n in answer.get("notes", [])))


def _collect(fd: int, pid: int, limit: float) -> tuple[bytes, int | None]:
    """Everything the worker sends, and its status (None: killed at the limit)."""
    deadline = time.monotonic() + limit
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                kill(pid)
                return b"", None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks), reap(pid)
            chunks.append(chunk)
            if chunk.endswith(b"\n"):  # its one message is complete: it has nothing to add
                return b"".join(chunks), reap(pid, kill=True)
    except BaseException:
        kill(pid)
        raise
    finally:
        os.close(fd)


def _serve(units: Sequence[Path], rows: Sequence[Mapping[str, Any]], formats: list[str],
           lang: str, timeout: float, fd: int) -> NoReturn:
    from ..claims.worker import seal, send
    from ..core.timelimits import TimeLimit
    try:
        seal()
        answer = _render(units, rows, formats, lang, timeout)
    except TimeLimit:
        answer = {"error": f"the write-up's worker ran past {timeout * (len(units) + 1):g} s "
                           "without rendering"}
    except SymroofError as exc:
        answer = {"error": str(exc), "input": isinstance(exc, InputError)}
    except BaseException as exc:  # the worker's last resort: report, never raise
        answer = {"error": f"the write-up's worker failed: {type(exc).__name__}: {exc}"}
    try:
        send(fd, answer)
    finally:
        os._exit(0)


def _render(units: Sequence[Path], rows: Sequence[Mapping[str, Any]], formats: list[str],
            lang: str, timeout: float) -> dict[str, Any]:
    from ..claims.loader import load_derivations
    from ..claims.runner import Verification, verification_of
    from ..core.timelimits import time_limit
    from .report import render
    with time_limit(timeout * (len(units) + 1)):
        derivations = load_derivations(str(u) for u in units)
        done = verification_of(derivations, rows)
        verdicts = tuple(replace(v, value=_shown_value(v)) for v in done.verdicts)
        rendered = render(Verification(done.derivations, verdicts), formats, lang=lang)
    return {"files": _encode(rendered.files), "notes": list(rendered.notes)}


def _shown_value(v: Any) -> Any:
    """The derived object a write-up shows beside a verdict the parent gave (None for an
    error, a time-out, a measurement or a law, whose verdict says what it shows)."""
    from ..claims.model import Law
    from ..claims.runner import _derive
    if v.verdict in ("ERROR", "TIMEOUT") or v.claim.kind == "measurement":
        return None
    derived = _derive(v.claim)
    if isinstance(derived, Law):
        return None
    return derived.inequality if hasattr(derived, "inequality") else derived


def _encode(files: Mapping[str, str | bytes]) -> dict[str, Any]:
    return {k: v if isinstance(v, str) else {"b64": base64.b64encode(v).decode("ascii")}
            for k, v in files.items()}


def _decode(files: Any) -> dict[str, str | bytes]:
    if not isinstance(files, dict):
        raise NotRendered("the write-up's worker sent a garbled answer")
    out: dict[str, str | bytes] = {}
    for k, v in files.items():
        if isinstance(v, str):
            out[str(k)] = v
        elif isinstance(v, dict) and isinstance(v.get("b64"), str):
            out[str(k)] = base64.b64decode(v["b64"])
        else:
            raise NotRendered("the write-up's worker sent a garbled answer")
    return out
