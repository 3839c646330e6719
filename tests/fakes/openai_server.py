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
  with `tool_calls` or a `refusal`; a `finish_reason` key in it is taken out and used as the
  choice's finish reason, e.g. "length" or "content_filter"). No reply left: HTTP 500 with an
  explanation, so the test fails loudly.
- GET /v1/models: the model names seen so far (plus "fake-embedding" and "fake-chat").

`FakeOpenAIServer(api_key="sk-x")`: requests without `Authorization: Bearer sk-x` get 401.
Failures, delays and the request log are those of `tests.fakes.http_fake.FakeHTTPServer`.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http_fake import FakeHTTPServer, RecordedRequest, Route, error_body

__all__ = ["ChatReply", "ChatScript", "FakeOpenAIServer", "RecordedRequest"]

ChatReply = str | dict[str, Any]
ChatScript = list[ChatReply] | Callable[[dict[str, Any]], ChatReply]


@dataclass
class FakeOpenAIServer(FakeHTTPServer):
    dimension: int = 8
    api_key: str | None = None
    chat_replies: ChatScript = field(default_factory=list)
    reverse_order: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self._models: set[str] = {"fake-embedding", "fake-chat"}

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def vector_for(self, text: str, dimension: int | None = None) -> list[float]:
        """The unit vector this server returns for `text` (stable across processes)."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
        rng = random.Random(seed)
        vector = [rng.uniform(-1.0, 1.0) for _ in range(dimension or self.dimension)]
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    def _routes(self) -> dict[tuple[str, str], Route]:
        return {
            ("POST", "/v1/embeddings"): self._embeddings,
            ("POST", "/v1/chat/completions"): self._chat,
            ("GET", "/v1/models"): self._models_list,
        }

    def _refuse(self, request: RecordedRequest) -> tuple[int, Any] | None:
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, error_body("invalid api key")
        return None

    def _embeddings(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or "input" not in body:
            return 400, error_body("body must be a JSON object with 'input'")
        inputs = body["input"]
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            return 400, error_body("'input' must be a string or a list of strings")
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
            return 400, error_body("body must be a JSON object with a 'messages' list")
        with self._lock:
            script = self.chat_replies
            if callable(script):
                reply: ChatReply | None = None
            elif script:
                reply = script.pop(0)
            else:
                return 500, error_body("FakeOpenAIServer: no scripted chat reply left")
            model = str(body.get("model", "fake-chat"))
            self._models.add(model)
            number = len(self.requests)
        if callable(script):
            reply = script(body)
        message = dict(reply) if isinstance(reply, dict) else {"role": "assistant", "content": reply}
        finish = message.pop("finish_reason", None) or ("tool_calls" if message.get("tool_calls") else "stop")
        return 200, {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def _models_list(self, body: Any) -> tuple[int, Any]:
        with self._lock:
            names = sorted(self._models)
        return 200, {
            "object": "list",
            "data": [{"id": n, "object": "model", "owned_by": "fake"} for n in names],
        }
