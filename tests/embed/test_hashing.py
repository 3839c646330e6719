"""HashingEmbedder: the dependency-free embedder other unit tests use as a fast fake."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys

import pytest

from polyg.embed.hashing import HashingEmbedder
from polyg.errors import ConfigError, TextEncodingError


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_shape_unit_norm_and_model_id() -> None:
    embedder = HashingEmbedder()
    assert embedder.dimension == 384
    assert embedder.model_id == "hashing-384"
    vectors = embedder.embed_batch_sync(["graph memory for agents", "FalkorDB", "x"])
    assert len(vectors) == 3
    for vector in vectors:
        assert len(vector) == 384
        assert norm(vector) == pytest.approx(1.0, abs=1e-9)


def test_deterministic_across_instances_and_processes() -> None:
    text = "Deterministic vectors survive a restart"
    first = HashingEmbedder().embed_batch_sync([text])[0]
    assert HashingEmbedder().embed_batch_sync([text])[0] == first
    # Python's str hash is salted per process; stored vectors must not depend on it.
    code = (
        "import json; from polyg.embed.hashing import HashingEmbedder; "
        f"print(json.dumps(HashingEmbedder().embed_batch_sync([{text!r}])[0]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert [float(x) for x in out.stdout.strip()[1:-1].split(",")] == pytest.approx(first, abs=1e-12)


def test_similar_texts_are_closer_than_dissimilar_ones() -> None:
    embedder = HashingEmbedder()
    anchor, similar, unrelated = embedder.embed_batch_sync(
        [
            "the graph database stores memories of the agent",
            "the agent stores its memories in a graph database",
            "quarterly tax filing deadline is next Tuesday",
        ]
    )
    assert cosine(anchor, similar) > 0.5
    assert cosine(anchor, similar) > cosine(anchor, unrelated) + 0.3
    # Character trigrams make inflections land near each other.
    trumpet, trumpets, tax = embedder.embed_batch_sync(["trumpet", "trumpets", "tax"])
    assert cosine(trumpet, trumpets) > cosine(trumpet, tax)


def test_case_and_punctuation_insensitive() -> None:
    embedder = HashingEmbedder()
    a, b = embedder.embed_batch_sync(["Hello, World!", "hello world"])
    assert a == b


def test_empty_and_punctuation_only_texts_get_a_unit_vector() -> None:
    empty, dots = HashingEmbedder().embed_batch_sync(["", "..."])
    assert norm(empty) == pytest.approx(1.0)
    assert empty == dots


def test_custom_dimension() -> None:
    embedder = HashingEmbedder(dimension=16)
    assert embedder.model_id == "hashing-16"
    assert len(embedder.embed_batch_sync(["abc"])[0]) == 16
    with pytest.raises(ConfigError):
        HashingEmbedder(dimension=1)


def test_rejects_non_str_and_invalid_unicode() -> None:
    embedder = HashingEmbedder()
    with pytest.raises(TextEncodingError) as excinfo:
        embedder.embed_batch_sync(["ok", None])  # type: ignore[list-item]
    assert excinfo.value.code == 3002
    assert "#1" in excinfo.value.message
    with pytest.raises(TextEncodingError):
        embedder.embed_batch_sync(["lone surrogate \ud800"])
    with pytest.raises(TextEncodingError, match="single str"):
        embedder.embed_batch_sync("not a list")  # type: ignore[arg-type]
    with pytest.raises(TextEncodingError, match="single str"):
        asyncio.run(embedder.embed_batch("not a list"))


def test_async_conveniences() -> None:
    embedder = HashingEmbedder()

    async def run() -> tuple[list[float], list[list[float]], list[list[float]]]:
        return (
            await embedder.embed("alpha"),
            await embedder.embed_batch(["alpha", "beta"]),
            await embedder.embed_batch([]),
        )

    single, batch, empty = asyncio.run(run())
    assert single == batch[0]
    assert len(batch) == 2
    assert empty == []
