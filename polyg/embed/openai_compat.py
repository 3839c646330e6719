"""Embeddings from any OpenAI-compatible HTTP endpoint (OpenAI, Azure-style proxies, vLLM,
Ollama, LM Studio, text-embeddings-inference...).

The client is synchronous on purpose: `Embedder.embed_batch` already runs
`embed_batch_sync` in a worker thread, and one code path is simpler to reason about than a
sync and an async one.
"""

from __future__ import annotations

import math
import threading

import httpx

from polyg.embed.base import Embedder, check_texts
from polyg.errors import DimensionMismatch, EmbeddingError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_TIMEOUT = 30.0
# OpenAI accepts up to 2048 inputs per request, but smaller requests keep one slow or failed
# call cheap to lose, and stay under the body limits of most self-hosted servers.
MAX_BATCH = 256
_EXCERPT_CHARS = 200


class OpenAICompatEmbedder(Embedder):
    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        dimension: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = MAX_BATCH,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model_id = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key or None
        self._dimension = dimension
        self._dimension_configured = dimension is not None
        self._timeout = timeout
        self._batch_size = max(1, min(batch_size, MAX_BATCH))
        self._transport = transport
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    # `dimension` is a property because it may only be known after the first response.
    @property
    def dimension(self) -> int:
        """Vector length; when not configured, discovered by a probe request (blocking)."""
        if self._dimension is None:
            self.load()
        assert self._dimension is not None  # load() either discovered it or raised
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = value

    def load(self) -> None:
        # Nothing to load, but the store needs the dimension to create its vector index at
        # start: discover it now with one tiny request rather than on the first real write.
        if self._dimension is None:
            self.embed_batch_sync(["dimension probe"])

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        checked = check_texts(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(checked), self._batch_size):
            vectors.extend(self._embed_request(checked[start : start + self._batch_size]))
        return vectors

    def _http(self) -> httpx.Client:
        # One pooled client shared by all worker threads (httpx's pool is thread-safe), made
        # on first use so that constructing an embedder never touches the network stack.
        with self._lock:
            if self._client is None:
                headers = {"User-Agent": "polyg"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(timeout=self._timeout, headers=headers, transport=self._transport)
            return self._client

    def _embed_request(self, batch: list[str]) -> list[list[float]]:
        payload = {"model": self.model_id, "input": batch}
        try:
            response = self._http().post(self._url, json=payload)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(
                f"embedding request to {self._url} timed out after {self._timeout:g} s",
                details={"url": self._url},
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(
                f"embedding request to {self._url} failed: {type(exc).__name__}: {self._redact(str(exc))}",
                details={"url": self._url},
            ) from exc
        if response.status_code >= 400:
            excerpt = self._redact(response.text[:_EXCERPT_CHARS].strip())
            raise EmbeddingError(
                f"embedding endpoint {self._url} answered HTTP {response.status_code}: {excerpt}",
                details={"url": self._url, "status": response.status_code},
            )
        vectors = self._parse(response, expected=len(batch))
        self._check_dimension(vectors)
        return vectors

    def _parse(self, response: httpx.Response, *, expected: int) -> list[list[float]]:
        try:
            items = response.json()["data"]
            # The API does not promise to answer in input order; `index` says where each goes.
            if all(isinstance(item.get("index"), int) for item in items):
                items = sorted(items, key=lambda item: item["index"])
                indices_ok = [item["index"] for item in items] == list(range(expected))
            else:
                indices_ok = len(items) == expected
            vectors = [_unit([float(x) for x in item["embedding"]]) for item in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            excerpt = self._redact(response.text[:_EXCERPT_CHARS])
            raise EmbeddingError(
                f"embedding endpoint {self._url} sent an unexpected response: {excerpt}",
                details={"url": self._url},
            ) from exc
        if not indices_ok or len(vectors) != expected:
            raise EmbeddingError(
                f"embedding endpoint {self._url} returned {len(vectors)} vectors for {expected} inputs",
                details={"url": self._url},
            )
        for position, vector in enumerate(vectors):
            # Python's JSON reader takes NaN and Infinity; such a vector (or one whose norm
            # overflows) would poison every cosine score it takes part in.
            if not all(map(math.isfinite, vector)):
                raise EmbeddingError(
                    f"embedding endpoint {self._url} returned a vector with NaN or infinite values "
                    f"(input #{position} of {expected})",
                    details={"url": self._url, "position": position},
                )
        return vectors

    def _check_dimension(self, vectors: list[list[float]]) -> None:
        with self._lock:
            if self._dimension is None and vectors:
                # Fixed from the first answer on: the vector index is built for this size.
                self._dimension = len(vectors[0])
            expected = self._dimension
        for vector in vectors:
            if len(vector) != expected:
                hint = " (check the configured embedding dimension)" if self._dimension_configured else ""
                raise DimensionMismatch(
                    f"model {self.model_id!r} returned a {len(vector)}-dimensional vector, expected {expected}{hint}",
                    details={"expected": expected, "actual": len(vector)},
                )

    def _redact(self, text: str) -> str:
        # Some servers echo the credential in their error body; it must not reach a log.
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text


def _unit(vector: list[float]) -> list[float]:
    # OpenAI's vectors are already unit length, other servers' (Ollama's) may not be; all
    # polyg embedders return unit vectors so cosine and dot-product scores agree.
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0.0 else vector
