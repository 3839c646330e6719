"""OpenAICompatEmbedder against a real local HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import httpx
import pytest

from polyg.embed.openai_compat import OpenAICompatEmbedder
from polyg.errors import DimensionMismatch, EmbeddingError, TextEncodingError
from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(dimension=8) as server:
        yield server


@pytest.fixture
def embedder(srv: FakeOpenAIServer) -> Iterator[OpenAICompatEmbedder]:
    client = OpenAICompatEmbedder(base_url=srv.base_url, model="fake-embedding", api_key="sk-test-123")
    yield client
    client.close()


def test_vectors_come_back_in_input_order(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    texts = ["alpha", "beta", "gamma"]
    vectors = embedder.embed_batch_sync(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(srv.vector_for(text), abs=1e-12)
    (request,) = srv.requests
    assert request.method == "POST"
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "fake-embedding", "input": texts}
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.headers["content-type"] == "application/json"


def test_results_are_ordered_by_index(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    srv.reverse_order = True
    texts = [f"text {i}" for i in range(5)]
    vectors = embedder.embed_batch_sync(texts)
    assert vectors == [pytest.approx(srv.vector_for(t), abs=1e-12) for t in texts]


def test_large_inputs_are_split_into_batches_of_256(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    texts = [f"input number {i}" for i in range(600)]
    vectors = embedder.embed_batch_sync(texts)
    assert [len(r.body["input"]) for r in srv.requests] == [256, 256, 88]
    assert [t for r in srv.requests for t in r.body["input"]] == texts
    assert vectors[0] == pytest.approx(srv.vector_for(texts[0]), abs=1e-12)
    assert vectors[599] == pytest.approx(srv.vector_for(texts[599]), abs=1e-12)


def test_no_authorization_header_without_a_key(srv: FakeOpenAIServer) -> None:
    client = OpenAICompatEmbedder(base_url=srv.base_url + "/", model="m")  # trailing slash is fine
    try:
        client.embed_batch_sync(["x"])
    finally:
        client.close()
    assert "authorization" not in srv.requests[0].headers
    assert srv.requests[0].path == "/v1/embeddings"


def test_server_requiring_a_key_rejects_a_missing_one() -> None:
    with FakeOpenAIServer(api_key="sk-right") as server:
        good = OpenAICompatEmbedder(base_url=server.base_url, api_key="sk-right")
        bad = OpenAICompatEmbedder(base_url=server.base_url)
        try:
            assert len(good.embed_batch_sync(["x"])[0]) == 8
            with pytest.raises(EmbeddingError, match="401"):
                bad.embed_batch_sync(["x"])
        finally:
            good.close()
            bad.close()


def test_dimension_is_discovered_from_the_first_response(srv: FakeOpenAIServer) -> None:
    client = OpenAICompatEmbedder(base_url=srv.base_url)
    try:
        client.embed_batch_sync(["first"])
        assert client.dimension == 8
        assert len(srv.requests) == 1  # known now: no probe
    finally:
        client.close()


def test_reading_an_unknown_dimension_probes_once(srv: FakeOpenAIServer) -> None:
    client = OpenAICompatEmbedder(base_url=srv.base_url)
    try:
        assert client.dimension == 8
        assert client.dimension == 8
        assert len(srv.requests) == 1
    finally:
        client.close()


def test_a_different_size_later_is_a_dimension_mismatch(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    embedder.embed_batch_sync(["first"])
    srv.dimension = 16
    with pytest.raises(DimensionMismatch) as excinfo:
        embedder.embed_batch_sync(["second"])
    assert excinfo.value.code == 3003
    assert excinfo.value.details == {"expected": 8, "actual": 16}
    assert embedder.dimension == 8  # stays fixed


def test_configured_dimension_is_enforced(srv: FakeOpenAIServer) -> None:
    client = OpenAICompatEmbedder(base_url=srv.base_url, dimension=1536)
    try:
        assert client.dimension == 1536
        assert srv.requests == []  # configured: nothing to discover
        with pytest.raises(DimensionMismatch, match="configured"):
            client.embed_batch_sync(["x"])
    finally:
        client.close()


def test_http_error_is_translated_with_status_and_excerpt(
    srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder
) -> None:
    srv.fail_next(status=500, body="boom " + "x" * 1000)
    with pytest.raises(EmbeddingError) as excinfo:
        embedder.embed_batch_sync(["x"])
    assert excinfo.value.code == 3001
    assert "HTTP 500" in excinfo.value.message
    assert "boom" in excinfo.value.message
    assert len(excinfo.value.message) < 400  # an excerpt, not the whole body
    assert excinfo.value.details["status"] == 500
    # The failure was one request's: the next one works.
    assert len(embedder.embed_batch_sync(["x"])) == 1


def test_api_key_never_appears_in_errors(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    srv.fail_next(status=401, body={"error": {"message": "Incorrect API key provided: sk-test-123"}})
    with pytest.raises(EmbeddingError) as excinfo:
        embedder.embed_batch_sync(["x"])
    assert "sk-test-123" not in excinfo.value.message
    assert "sk-test-123" not in repr(excinfo.value.details)
    assert "401" in excinfo.value.message


def test_malformed_responses_are_embedding_errors(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    srv.fail_next(status=200, body="this is not json")
    with pytest.raises(EmbeddingError, match="unexpected response"):
        embedder.embed_batch_sync(["x"])
    srv.fail_next(status=200, body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
    with pytest.raises(EmbeddingError, match="1 vectors for 2 inputs"):
        embedder.embed_batch_sync(["x", "y"])
    srv.fail_next(status=200, body={"data": [{"index": 0, "embedding": "base64?"}]})
    with pytest.raises(EmbeddingError):
        embedder.embed_batch_sync(["x"])


def test_unreachable_server_is_an_embedding_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAICompatEmbedder(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-secret")
    try:
        with pytest.raises(EmbeddingError) as excinfo:
            client.embed_batch_sync(["x"])
    finally:
        client.close()
    assert "failed" in excinfo.value.message
    assert "sk-secret" not in excinfo.value.message


def test_timeout_is_an_embedding_error(srv: FakeOpenAIServer) -> None:
    srv.delay = 0.5
    client = OpenAICompatEmbedder(base_url=srv.base_url, timeout=0.1)
    try:
        with pytest.raises(EmbeddingError, match="timed out"):
            client.embed_batch_sync(["x"])
    finally:
        client.close()


def test_invalid_input_is_rejected_before_any_request(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    with pytest.raises(TextEncodingError):
        embedder.embed_batch_sync(["ok", b"bytes"])  # type: ignore[list-item]
    assert embedder.embed_batch_sync([]) == []
    assert srv.requests == []


def test_non_unit_vectors_are_normalised(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    srv.fail_next(status=200, body={"data": [{"index": 0, "embedding": [3.0, 4.0, 0, 0, 0, 0, 0, 0]}]})
    assert embedder.embed_batch_sync(["x"]) == [pytest.approx([0.6, 0.8, 0, 0, 0, 0, 0, 0])]


def test_async_and_concurrent_use(srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder) -> None:
    async def run() -> list[list[float]]:
        return list(await asyncio.gather(*(embedder.embed(f"t{i}") for i in range(8))))

    vectors = asyncio.run(run())
    assert vectors == [pytest.approx(srv.vector_for(f"t{i}"), abs=1e-12) for i in range(8)]
    assert len(srv.requests_to("/v1/embeddings")) == 8


# -- the fake server's other endpoint, reused by later LLM code paths ---------------------


def test_fake_chat_completions_replies_in_script_order(srv: FakeOpenAIServer) -> None:
    srv.chat_replies = ["first", {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]
    body = {"model": "fake-chat", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=srv.base_url) as client:
        first = client.post("/chat/completions", json=body).json()
        second = client.post("/chat/completions", json=body).json()
        exhausted = client.post("/chat/completions", json=body)
    assert first["choices"][0]["message"] == {"role": "assistant", "content": "first"}
    assert first["choices"][0]["finish_reason"] == "stop"
    assert second["choices"][0]["message"]["tool_calls"] == [{"id": "c1"}]
    assert second["choices"][0]["finish_reason"] == "tool_calls"
    assert exhausted.status_code == 500
    assert srv.requests_to("/v1/chat/completions")[0].body == body


def test_fake_chat_completions_with_a_callable_and_failures(srv: FakeOpenAIServer) -> None:
    srv.chat_replies = lambda body: "echo: " + body["messages"][-1]["content"]
    srv.fail_next(status=429, body="slow down", path="/v1/chat/completions")
    body = {"messages": [{"role": "user", "content": "ping"}]}
    with httpx.Client(base_url=srv.base_url) as client:
        assert client.post("/embeddings", json={"input": "not failed"}).status_code == 200
        limited = client.post("/chat/completions", json=body)
        ok = client.post("/chat/completions", json=body).json()
        missing = client.get("/nope")
    assert (limited.status_code, limited.text) == (429, "slow down")
    assert ok["choices"][0]["message"]["content"] == "echo: ping"
    assert missing.status_code == 404


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e309"])
def test_vectors_with_nan_or_infinity_are_refused(
    srv: FakeOpenAIServer, embedder: OpenAICompatEmbedder, bad: str
) -> None:
    # Python's JSON reader accepts these; 1e309 overflows to infinity.
    fine = "[" + ", ".join(["0.5"] * 8) + "]"
    poisoned = "[" + ", ".join(["0.1", bad] + ["0.1"] * 6) + "]"
    body = f'{{"data": [{{"index": 0, "embedding": {fine}}}, {{"index": 1, "embedding": {poisoned}}}]}}'
    srv.fail_next(status=200, body=body, path="/v1/embeddings")
    with pytest.raises(EmbeddingError) as excinfo:
        embedder.embed_batch_sync(["fine", "poisoned"])
    assert excinfo.value.code == 3001
    assert "NaN or infinite" in excinfo.value.message and "input #1" in excinfo.value.message
    # The next answer is a good one again, and is taken.
    assert embedder.embed_batch_sync(["fine"])[0] == pytest.approx(srv.vector_for("fine"), abs=1e-12)
