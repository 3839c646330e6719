"""The vector cache: the model runs once per distinct recent text, and nothing else changes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from polyg.config import load_settings
from polyg.embed.cache import CachingEmbedder
from polyg.embed.hashing import HashingEmbedder
from polyg.errors import EmbeddingError
from polyg.runtime.app import Polyg


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed (and failing on demand)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.fail = False

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            raise EmbeddingError("model down")
        self.seen.extend(texts)
        return super().embed_batch_sync(texts)


def float32(vector: list[float]) -> list[float]:
    from array import array

    return array("f", vector).tolist()


def test_repeated_texts_run_through_the_model_once_and_get_the_same_vectors() -> None:
    inner = CountingEmbedder()
    cached = CachingEmbedder(inner, entries=16)
    batch = ["works at Acme", "likes jazz", "works at Acme", "works at Acme"]
    vectors = cached.embed_batch_sync(batch)
    assert inner.seen == ["works at Acme", "likes jazz"]  # duplicates within a batch: once
    assert vectors == [float32(v) for v in HashingEmbedder().embed_batch_sync(batch)]
    assert cached.embed_query_sync("likes jazz") == vectors[1]
    assert cached.embed_batch_sync(["likes jazz", "new text"]) == [
        vectors[1],
        *map(float32, inner.embed_batch_sync(["new text"])),
    ]
    assert inner.seen.count("likes jazz") == 1
    assert (cached.hits, cached.misses) == (4, 3)


def test_the_least_recently_used_vector_goes_first() -> None:
    inner = CountingEmbedder()
    cached = CachingEmbedder(inner, entries=2)
    cached.embed_batch_sync(["a", "b"])
    cached.embed_query_sync("a")  # "a" is now the most recent: "b" goes when "c" comes
    cached.embed_query_sync("c")
    inner.seen.clear()
    cached.embed_batch_sync(["a", "c", "b"])
    assert inner.seen == ["b"]


def test_a_failed_embedding_is_not_remembered() -> None:
    inner = CountingEmbedder()
    cached = CachingEmbedder(inner, entries=4)
    inner.fail = True
    with pytest.raises(EmbeddingError):
        cached.embed_batch_sync(["x"])
    inner.fail = False
    assert cached.embed_batch_sync(["x"]) == [float32(HashingEmbedder().embed_query_sync("x"))]
    assert inner.seen == ["x"]


def test_bad_texts_are_refused_as_without_the_cache() -> None:
    cached = CachingEmbedder(CountingEmbedder())
    with pytest.raises(Exception, match="not a str"):
        cached.embed_batch_sync(["ok", None])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        CachingEmbedder(CountingEmbedder(), entries=0)


@pytest.mark.anyio
@pytest.mark.parametrize(("entries", "cached"), [(None, True), (0, False)])
async def test_the_server_caches_unless_configured_off(tmp_path: Path, entries: int | None, cached: bool) -> None:
    settings = load_settings(None, data_dir=tmp_path, embedding_cache_entries=entries)
    core = Polyg(settings, embedder=HashingEmbedder())
    core.start()
    try:
        services = await core.ready()
        assert isinstance(services.ctx.embedder, CachingEmbedder) is cached
        assert services.ctx.embedder.model_id == HashingEmbedder().model_id
    finally:
        await core.close()


def completes_at_once[T](coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result if it finishes without suspending (no thread hop), else fails."""
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coro.close()
    raise AssertionError("the call suspended: it waited for a worker thread")


def test_cached_vectors_are_answered_without_waiting_for_a_worker_thread() -> None:
    inner = CountingEmbedder()
    cached = CachingEmbedder(inner, entries=16)
    made = cached.embed_batch_sync(["deployed auth", "disk full"])
    inner.fail = True  # the model is not asked again
    assert completes_at_once(cached.embed_batch(["disk full", "deployed auth"])) == [made[1], made[0]]
    assert completes_at_once(cached.embed_query("disk full")) == made[1]
    assert cached.hits == 3
    with pytest.raises(EmbeddingError):  # one text is not cached: the model is asked
        asyncio.run(cached.embed_batch(["disk full", "not seen yet"]))
