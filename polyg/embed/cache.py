"""A bounded cache of recent vectors in front of an embedder.

A vector is a function of its text alone (the int8 MiniLM embeds one text per call, see
polyg.embed.minilm), so a text seen recently need not run through the model again. That pays
twice: agents repeat their search queries, and memories repeat observations word for word
("Works at Acme", "Prefers dark mode"), whose vectors an import or a burst of writes would
otherwise compute once per entity. Identical texts within one batch are embedded once.

Vectors are kept as float32 (what the store keeps too), about 1.6 KB each: the default 8,192
entries hold about 13 MB.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from polyg.embed.base import Embedder, check_texts

log = logging.getLogger(__name__)

DEFAULT_ENTRIES = 8192


class CachingEmbedder(Embedder):
    """`inner`, with the `entries` most recently used vectors kept (least recently used out)."""

    def __init__(self, inner: Embedder, entries: int = DEFAULT_ENTRIES) -> None:
        if entries < 1:
            raise ValueError("a vector cache needs at least one entry")
        self.inner = inner
        self.model_id = inner.model_id
        self._entries = entries
        self._vectors: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()  # embedding threads and the query thread share the cache
        self.hits = 0
        self.misses = 0

    # Read from the inner embedder when asked, not copied at construction: an OpenAI-compatible
    # embedder without a configured dimension learns it from a request (blocking), which must
    # happen in `load()` (run in a worker thread), never on the event loop building this cache.
    @property
    def dimension(self) -> int:  # type: ignore[override]  # read-only: the inner embedder's to know
        return self.inner.dimension

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        # Every vector cached: answered here, without waiting for a low-priority worker thread
        # (on a busy machine that wait is longer than the lookup by far).
        if texts and not isinstance(texts, str):
            found = self._cached(list(texts))
            if found is not None:
                return found
        return await super().embed_batch(texts)

    async def embed_query(self, text: str) -> list[float]:
        if isinstance(text, str):
            found = self._cached([text])
            if found is not None:
                return found[0]
        return await super().embed_query(text)

    def _cached(self, texts: list[str]) -> list[list[float]] | None:
        """The vectors of `texts` if every one is cached (counted as hits), else None."""
        if not all(isinstance(text, str) for text in texts):
            return None
        with self._lock:
            vectors = [self._vectors.get(text) for text in texts]
            if any(vector is None for vector in vectors):
                return None
            for text in texts:
                self._vectors.move_to_end(text)
            self.hits += len(texts)
        return [vector.tolist() for vector in vectors if vector is not None]

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        checked = check_texts(texts)
        found: dict[str, list[float]] = {}
        with self._lock:
            for text in checked:
                if text not in found and (cached := self._vectors.get(text)) is not None:
                    self._vectors.move_to_end(text)
                    found[text] = cached.tolist()
        missing = [text for text in dict.fromkeys(checked) if text not in found]
        if missing:
            # Stored, and returned, as float32 (what the store keeps): a text gets the same
            # vector whether it was just made or found here.
            made = [array("f", vector) for vector in self.inner.embed_batch_sync(missing)]
            found.update((text, vector.tolist()) for text, vector in zip(missing, made, strict=True))
            with self._lock:
                for text, vector in zip(missing, made, strict=True):
                    self._vectors[text] = vector
                    self._vectors.move_to_end(text)
                while len(self._vectors) > self._entries:
                    self._vectors.popitem(last=False)
        with self._lock:
            self.misses += len(missing)
            self.hits += len(checked) - len(missing)
        return [found[text] for text in checked]

    def embed_query_sync(self, text: str) -> list[float]:
        return self.embed_batch_sync([text])[0]

    def load(self) -> None:
        self.inner.load()

    def close(self) -> None:
        log.info("vector cache", extra={"hits": self.hits, "misses": self.misses})
        self.inner.close()

    def __repr__(self) -> str:
        return f"CachingEmbedder({self.inner!r}, entries={self._entries})"
