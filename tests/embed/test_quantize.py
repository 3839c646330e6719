"""The int8 copy of MiniLM (polyg.embed.quantize): derived once, cached, verified, close to the
pinned model, independent of batching, and never required (the pinned model is the fallback)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import polyg.embed.minilm as minilm
from polyg.checksum import file_sha256
from polyg.embed.minilm import MiniLMEmbedder

QUERIES = ["davis trumpet", "saxophone player", "Maria 123 Okafor", "who moved to Lisbon last spring and why?"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def fast(cache_dir: Path) -> Iterator[MiniLMEmbedder]:
    embedder = MiniLMEmbedder(cache_dir=cache_dir)
    embedder.load()
    yield embedder
    embedder.close()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def pinned() -> Iterator[MiniLMEmbedder]:
    embedder = MiniLMEmbedder(fast=False)
    embedder.load()
    yield embedder
    embedder.close()


def test_the_cached_int8_copy_runs(fast: MiniLMEmbedder, cache_dir: Path) -> None:
    assert fast.variant == "int8"
    [model] = cache_dir.glob("minilm-*.onnx")
    sidecar = model.with_suffix(".sha256")
    assert sidecar.read_text().strip() == file_sha256(model)
    before = model.stat().st_mtime_ns
    again = MiniLMEmbedder(cache_dir=cache_dir)
    try:
        again.load()
        assert again.variant == "int8"
        assert model.stat().st_mtime_ns == before  # reused, not derived again
        assert again.embed_query_sync("davis trumpet") == fast.embed_query_sync("davis trumpet")
    finally:
        again.close()


def test_vectors_stay_close_to_the_pinned_model(fast: MiniLMEmbedder, pinned: MiniLMEmbedder) -> None:
    assert pinned.variant == "pinned"
    batch = fast.embed_batch_sync(QUERIES)
    for text, in_batch, reference in zip(QUERIES, batch, pinned.embed_batch_sync(QUERIES), strict=True):
        vector = fast.embed_query_sync(text)
        assert len(vector) == 384
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-5)
        assert cosine(vector, reference) >= 0.985, text
        # A function of the text alone: alone or in a batch, run after run.
        assert in_batch == vector
        assert fast.embed_query_sync(text) == vector
    # Meaning survives: the query is still closest to its own paraphrase.
    trumpet, sax = fast.embed_batch_sync(["Miles Davis played the trumpet", "a tenor saxophonist"])
    query = fast.embed_query_sync("davis trumpet")
    assert cosine(query, trumpet) > cosine(query, sax)


def test_a_corrupt_cached_copy_is_made_again(cache_dir: Path, fast: MiniLMEmbedder) -> None:
    [model] = cache_dir.glob("minilm-*.onnx")
    model.write_bytes(b"not a model")
    embedder = MiniLMEmbedder(cache_dir=cache_dir)
    try:
        embedder.load()
        assert embedder.variant == "int8"
        assert model.stat().st_size > 10_000_000
        assert embedder.embed_query_sync("davis trumpet") == fast.embed_query_sync("davis trumpet")
    finally:
        embedder.close()


def test_without_the_copy_the_pinned_model_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pinned: MiniLMEmbedder
) -> None:
    def unavailable(*args: object, **kwargs: object) -> Path:
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(minilm, "quantized_copy", unavailable)
    embedder = MiniLMEmbedder(cache_dir=tmp_path)
    try:
        embedder.load()
        assert embedder.variant == "pinned"
        [stored] = embedder.embed_batch_sync(["davis trumpet"])
        assert stored == pytest.approx(pinned.embed_batch_sync(["davis trumpet"])[0], abs=1e-6)
        assert embedder.embed_query_sync("davis trumpet") == pytest.approx(stored, abs=1e-6)
    finally:
        embedder.close()
    assert not list(tmp_path.iterdir())
