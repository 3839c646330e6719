"""The machinery shared by the fake HTTP servers in this package: a real local server on
127.0.0.1 (ephemeral port, background thread), every request recorded, scripted failures and
delays. A subclass names its routes (`_routes`) and, optionally, how it checks credentials
(`_refuse`).

Behaviour switches every fake has:
- `srv.fail_next(status=500, body="boom", times=1, path=None, headers=None)`: the next `times`
  requests (to `path` only, if given) get that status, body (a dict body is sent as JSON,
  anything else as text) and extra response headers (e.g. `{"retry-after": "0"}`).
- `srv.delay = 0.5`: every response is delayed by that many seconds (cut short when the
  server stops, so a timeout test never waits for the fake).
- `srv.hold()` ... `srv.release()`: requests arriving in between are answered only once
  released (or the server stops): a test shows without a timer that something does not
  wait for the answer.

Every request, failed or not, is recorded in `srv.requests` (a `RecordedRequest` with the
method, path, lower-cased headers and decoded JSON body) in arrival order.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

Route = Callable[[Any], tuple[int, Any]]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # decoded JSON, or None when the body was empty or not JSON
    raw_body: bytes = b""


@dataclass
class _Failure:
    status: int
    body: Any
    path: str | None
    headers: dict[str, str]


@dataclass
class FakeHTTPServer:
    delay: float = 0.0
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: deque[_Failure] = deque()
        self._stopping = threading.Event()
        self._released = threading.Event()
        self._released.set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- what a subclass provides ---------------------------------------------------------

    def _routes(self) -> dict[tuple[str, str], Route]:
        """(method, path) -> handler of the decoded body returning (status, body)."""
        return {}

    def _refuse(self, request: RecordedRequest) -> tuple[int, Any] | None:
        """A response for a request whose credentials are wrong, else None."""
        return None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> Self:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        self._stopping.clear()
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 500,
        body: Any = "boom",
        *,
        times: int = 1,
        path: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            self._failures.extend(_Failure(status, body, path, headers or {}) for _ in range(times))

    def hold(self) -> None:
        """Answer no request until `release()` (each is recorded when it arrives)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- request handling (called from the server's threads) ------------------------------

    def _record(self, request: RecordedRequest) -> _Failure | None:
        with self._lock:
            self.requests.append(request)
            if self._failures and self._failures[0].path in (None, request.path):
                return self._failures.popleft()
            return None


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) makes the late response fail to send; that is
        # the scenario under test, not a server fault worth a traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHTTPServer  # set on the per-server subclass made in FakeHTTPServer.start
    # HTTP/1.0: one request per connection, so no keep-alive thread outlives a test.
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw_body=raw,
        )
        failure = self.fake._record(request)
        self.fake._released.wait()
        if self.fake.delay:
            self.fake._stopping.wait(self.fake.delay)
        if failure is not None:
            self._send(failure.status, failure.body, failure.headers)
            return
        refusal = self.fake._refuse(request)
        if refusal is not None:
            self._send(*refusal)
            return
        route = self.fake._routes().get((request.method, request.path))
        if route is None:
            self._send(404, error_body(f"no route for {request.method} {request.path}"))
            return
        self._send(*route(body))

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        if isinstance(body, (dict, list)):
            payload, content_type = json.dumps(body).encode(), "application/json"
        else:
            payload, content_type = str(body).encode(), "text/plain; charset=utf-8"
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except ConnectionError:
            pass  # the client gave up (a timeout test); nothing to answer
