"""A real headless Chromium, driven over the DevTools protocol on a pipe (standard library
only): load a page, record every request it makes, and read values off its DOM."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-pipe")


@dataclass
class Visit:
    """What one page load did: the URLs it asked for, the ones that failed, and the value
    of the probe expression after the load."""

    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    probe: Any = None
    console_errors: list[str] = field(default_factory=list)


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="symroof-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Chromium reads commands on fd 3 and writes replies on fd 4

        def wire() -> None:
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
            os.set_inheritable(3, True)  # dup2 onto itself keeps close-on-exec
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(OSError, TimeoutError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        self.profile.cleanup()

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise OSError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self._events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method and e.get("sessionId") == session
                      for e in self._events):
            self._events.append(self._read(deadline))

    def visit(self, page: Path, probe: str, width: int = 0) -> Visit:
        """Load ``page`` in a fresh tab (``width`` CSS pixels wide, when given) and evaluate
        ``probe`` (a JS expression) after the load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        self._events = []
        for domain in ("Network", "Page", "Runtime"):
            self.send(f"{domain}.enable", session=session)
        if width:
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                      session=session)
        self.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        value = self.send("Runtime.evaluate", {"expression": probe, "returnByValue": True},
                          session=session)["result"].get("value")
        visit = Visit(probe=value)
        for e in self._events:
            p = e.get("params", {})
            if e.get("method") == "Network.requestWillBeSent":
                visit.requests.append(p["request"]["url"])
            elif e.get("method") == "Network.loadingFailed":
                visit.failed.append(f"{p.get('errorText')} ({p.get('requestId')})")
            elif e.get("method") == "Runtime.exceptionThrown":
                visit.console_errors.append(str(p.get("exceptionDetails", {}).get("text")))
        self.send("Target.closeTarget", {"targetId": target})
        return visit
