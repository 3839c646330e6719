"""A small headless Chromium driver over the DevTools protocol on a pipe (no WebSocket, no driver
binary, nothing downloaded): chromium reads commands on fd 3 and writes answers on fd 4, each a
JSON message ended by a NUL byte.

Enough for the graph view's tests and screenshots: open a page, evaluate script, wait for a
condition, click at a point, capture a PNG. JavaScript exceptions the page throws are collected.
One browser serves many tests (a start costs ~1 s of CPU): each page opens in a browser context of
its own (no cookie, storage or cache shared with another page) and is closed after its test.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    # Otherwise the browser preloads its omnibox popups, two WebUI pages in a renderer of their
    # own, even headless, and again for each browser context: one context per test then cost
    # ~6 s of CPU in a run of tests/ui (against one shared context), and 0.7 s without them.
    # A name a Chromium does not know is ignored.
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup",
    "--remote-debugging-pipe",
]
# The first tab: a blank page rather than the new-tab page (another WebUI renderer).
FIRST_TAB = "about:blank"
COMMAND_TIMEOUT_S = 60.0
# What Chromium answers an evaluation that a navigation of the page overtook.
NAVIGATED = ("Inspected target navigated or closed", "Execution context was destroyed", "Cannot find context")


def find_chromium() -> str | None:
    """The Chromium to drive: $POLYG_CHROMIUM, else one on PATH."""
    named = os.environ.get("POLYG_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, executable: str, *, width: int = 1280, height: int = 800) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="polyg-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_pipes() -> None:
            # In the child, before exec: the pipes become its fds 3 and 4 (moved above 4 first,
            # so that neither overwrites the other). dup2 makes them inheritable; every other fd
            # Python opened is not, so exec closes it.
            high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [
                executable,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                f"--window-size={width},{height}",
                FIRST_TAB,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire_pipes,
            close_fds=False,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.width, self.height = width, height
        self._next_id = 0
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.exceptions: list[str] = []  # every page's, in the order they were thrown
        self._pages: dict[str, Page] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_child, "rb", buffering=0) as stream:
            while chunk := stream.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                waiting = self._answers.get(message["id"])
            if waiting is not None:
                waiting.put(message)
        elif message.get("method") == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            thrown = str(details.get("exception", {}).get("description") or details.get("text"))
            self.exceptions.append(thrown)
            with self._lock:
                page = self._pages.get(message.get("sessionId", ""))
            if page is not None:
                page.exceptions.append(thrown)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._answers[ident] = answer
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=COMMAND_TIMEOUT_S)
        except queue.Empty:
            raise BrowserError(f"chromium did not answer {method}") from None
        finally:
            with self._lock:
                del self._answers[ident]
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def new_page(self) -> Page:
        """A blank page in a new browser context of its own; `Page.close` disposes of both."""
        context = self.send("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]
        target = self.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, context)
        with self._lock:
            self._pages[session] = page
        page.send("Runtime.enable")
        page.send("Page.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        self.profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    def __init__(self, browser: Browser, session: str, context: str) -> None:
        self.browser = browser
        self.session = session
        self.context = context
        self.exceptions: list[str] = []  # what this page's scripts threw

    def close(self) -> None:
        """Close the page with its context (disposing of a context closes its pages). An open graph
        page costs CPU even when idle (measured: ~0.05 s per second each)."""
        with self.browser._lock:
            self.browser._pages.pop(self.session, None)
        self.browser.send("Target.disposeBrowserContext", {"browserContextId": self.context})

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str, *, extra_headers: dict[str, str] | None = None) -> int:
        """Open `url` and wait until the document has loaded; the HTTP status of the page."""
        if extra_headers:
            self.send("Network.enable")
            self.send("Network.setExtraHTTPHeaders", {"headers": extra_headers})
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")
        status = self.evaluate("performance.getEntriesByType('navigation')[0]?.responseStatus ?? 0")
        return int(status)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll until `expression` is truthy (a wait for the page, not a timing assertion)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError as exc:
                # A wait is often for a navigation a click started: an evaluation that meets it
                # ("Inspected target navigated or closed") is asked again in the new document.
                if not any(sign in str(exc) for sign in NAVIGATED):
                    raise
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true: {expression}; page exceptions: {self.browser.exceptions}")
            time.sleep(0.05)

    def idle(self) -> None:
        """Wait until the graph view has no request under way."""
        self.wait_for("document.body && document.body.dataset.busy === '0'")

    def click(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
