"""A real, local OpenAI-compatible HTTP server for tests.

It listens on 127.0.0.1 on an ephemeral port and serves from a background thread, so the
code under test goes through its real HTTP client, serialisation, timeouts and error paths.

    with FakeOpenAIServer(dimension=8) as srv:
        embedder = OpenAICompatEmbedder(base_url=srv.base_url, api_key="sk-test")
        ...
        assert srv.requests[0].headers["authorization"] == "Bearer sk-test"

Endpoints (all under /v1):
- POST /v1/embeddings: deterministic unit vectors of `srv.dimension` floats derived from a
  hash of each input (`srv.vector_for(text)` gives the expected one). `srv.reverse_order =
  True` returns the items in reverse order (their `index` fields stay right), to test
  that clients order by `index`. `srv.dimension` may be changed between requests.
- POST /v1/chat/completions: scripted replies. `srv.chat_replies` is either a list popped
  from the front (one per request) or a callable taking the decoded request body. A reply
  is a str (the assistant message's content) or a dict (the whole assistant `message`, e.g.
  with `tool_calls`). No reply left: HTTP 500 with an explanation, so the test fails loudly.
- GET /v1/models: the model names seen so far (plus "fake-embedding" and "fake-chat").

Behaviour switches:
- `srv.fail_next(status=500, body="boom", times=1, path=None)`: the next `times` requests
  (to `path` only, if given, e.g. "/v1/embeddings") get that status and body (a dict body is
  sent as JSON, anything else as text).
- `FakeOpenAIServer(api_key="sk-x")`: requests without `Authorization: Bearer sk-x` get 401.
- `srv.delay = 0.5`: every response is delayed, to test client timeouts.

Every request, failed or not, is recorded in `srv.requests` (a `RecordedRequest` with the
method, path, lower-cased headers and decoded JSON body) in arrival order.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

ChatReply = str | dict[str, Any]
ChatScript = list[ChatReply] | Callable[[dict[str, Any]], ChatReply]


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


@dataclass
class FakeOpenAIServer:
    dimension: int = 8
    api_key: str | None = None
    chat_replies: ChatScript = field(default_factory=list)
    reverse_order: bool = False
    delay: float = 0.0
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: deque[_Failure] = deque()
        self._models: set[str] = {"fake-embedding", "fake-chat"}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ----------------------------------------------------------------------

    def fail_next(self, status: int = 500, body: Any = "boom", *, times: int = 1, path: str | None = None) -> None:
        with self._lock:
            self._failures.extend(_Failure(status, body, path) for _ in range(times))

    def vector_for(self, text: str, dimension: int | None = None) -> list[float]:
        """The unit vector this server returns for `text` (stable across processes)."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
        rng = random.Random(seed)
        vector = [rng.uniform(-1.0, 1.0) for _ in range(dimension or self.dimension)]
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- request handling (called from the server's threads) ---------------------------

    def _record(self, request: RecordedRequest) -> _Failure | None:
        with self._lock:
            self.requests.append(request)
            if self._failures and self._failures[0].path in (None, request.path):
                return self._failures.popleft()
            return None

    def _embeddings(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or "input" not in body:
            return 400, _error("body must be a JSON object with 'input'")
        inputs = body["input"]
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            return 400, _error("'input' must be a string or a list of strings")
        model = str(body.get("model", "fake-embedding"))
        with self._lock:
            self._models.add(model)
            dimension = self.dimension
        data = [
            {"object": "embedding", "index": i, "embedding": self.vector_for(text, dimension)}
            for i, text in enumerate(inputs)
        ]
        if self.reverse_order:
            data.reverse()
        tokens = sum(len(text.split()) for text in inputs)
        return 200, {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chat(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, _error("body must be a JSON object with a 'messages' list")
        with self._lock:
            script = self.chat_replies
            if callable(script):
                reply: ChatReply | None = None
            elif script:
                reply = script.pop(0)
            else:
                return 500, _error("FakeOpenAIServer: no scripted chat reply left")
            model = str(body.get("model", "fake-chat"))
            self._models.add(model)
            number = len(self.requests)
        if callable(script):
            reply = script(body)
        message = reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}
        finish = "tool_calls" if isinstance(reply, dict) and reply.get("tool_calls") else "stop"
        return 200, {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def _models_list(self) -> tuple[int, Any]:
        with self._lock:
            names = sorted(self._models)
        return 200, {
            "object": "list",
            "data": [{"id": n, "object": "model", "owned_by": "fake"} for n in names],
        }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) makes the late response fail to send; that is
        # the scenario under test, not a server fault worth a traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer  # set on the per-server subclass made in FakeOpenAIServer.start
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
        if self.fake.delay:
            time.sleep(self.fake.delay)
        if failure is not None:
            self._send(failure.status, failure.body)
            return
        key = self.fake.api_key
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            self._send(401, _error("invalid api key"))
            return
        routes: dict[tuple[str, str], Callable[[], tuple[int, Any]]] = {
            ("POST", "/v1/embeddings"): lambda: self.fake._embeddings(body),
            ("POST", "/v1/chat/completions"): lambda: self.fake._chat(body),
            ("GET", "/v1/models"): self.fake._models_list,
        }
        route = routes.get((request.method, request.path))
        if route is None:
            self._send(404, _error(f"no route for {request.method} {request.path}"))
            return
        self._send(*route())

    def _send(self, status: int, body: Any) -> None:
        if isinstance(body, (dict, list)):
            payload, content_type = json.dumps(body).encode(), "application/json"
        else:
            payload, content_type = str(body).encode(), "text/plain; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
