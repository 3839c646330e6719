"""Every error code of spec 001, through the CLI (`polyg ingest`, `polyg query`, `polyg serve`)
or the real MCP client over stdio, each with a message a user can act on.

The CLI runs in the test process (tests/cli_runner.py: its own click command with the
environment, streams and exit status a `polyg` process had): what is checked is the command's
exit status, message and output, not the process boundary, and a process start costs about
1 s of CPU (and a MiniLM load, for `ingest` and `query`) per command."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg
from tests.cli_runner import Completed, run_cli
from tests.mcp_helpers import embedded_pid, free_port, kg_session, server_env
from tests.tools.retrieval.conftest import write_corpus

pytestmark = pytest.mark.anyio


def polyg(root: Path, *args: str, **env: str) -> Completed:
    return run_cli(args, server_env(root, **env))


def fails_with(result: Completed, code: int) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert f"(code {code})" in result.stderr, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def ingested_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root whose data directory holds the test corpus, ingested by `polyg ingest` once per
    module (an ingest loads the embedding model: seconds of CPU). The CLI has exited, so its
    embedded FalkorDB has stopped and flushed its files: the directory is a store at rest."""
    root = tmp_path_factory.mktemp("ingested")
    result = polyg(root, "ingest", str(write_corpus(root / "docs")), "--data-dir", str(root / "data"))
    assert result.returncode == 0, result.stderr
    assert embedded_pid(root / "data") is None, "the CLI left its FalkorDB running"
    return root


def ingested(root: Path, template: Path) -> Path:
    """A data directory holding the test corpus, as `polyg ingest` left it: a copy of the
    module's ingested store, which each test may damage or change on its own. The store names
    the files it ingested by path: they stay (unchanged) under template/docs."""
    shutil.copytree(template / "data", root / "data", ignore=shutil.ignore_patterns("*.sock", "*.pid"))
    return root / "data"


async def run_on(data: Path, cypher: str) -> None:
    """A write straight to the store of `data` (the CLI that made it has exited)."""
    core = Polyg(load_settings(None, data_dir=data, store=None), embedder=create_embedder("hashing"))
    try:
        services = await core.ready()
        await services.store.query("default", cypher)
    finally:
        await core.close()


def test_1001_missing_configuration_file(tmp_path: Path) -> None:
    message = fails_with(polyg(tmp_path, "query", "anything", "--config", str(tmp_path / "app.yaml")), 1001)
    assert "app.yaml not found" in message


def test_1002_invalid_yaml(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text("project: [unclosed\n", encoding="utf-8")
    message = fails_with(polyg(tmp_path, "query", "anything", "--config", str(tmp_path / "app.yaml")), 1002)
    assert "not valid YAML" in message


def test_2001_store_unreachable(tmp_path: Path) -> None:
    store = f"falkor://127.0.0.1:{free_port()}"
    message = fails_with(polyg(tmp_path, "query", "anything", "--store", store), 2001)
    assert "Cannot reach FalkorDB" in message


@pytest.fixture
def refusing_server() -> Iterator[int]:
    """A server speaking the store's protocol that refuses every client's credentials."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def answer(conn: socket.socket) -> None:
        with conn:
            while conn.recv(65536):
                conn.sendall(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    # Closing alone does not wake the thread blocked in accept() (the join then waited out its
    # whole timeout); shutting the listening socket down does: accept() fails and serve returns.
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_2002_authentication_failure(tmp_path: Path, refusing_server: int) -> None:
    store = f"falkor://127.0.0.1:{refusing_server}"
    message = fails_with(polyg(tmp_path, "query", "anything", "--store", store, FALKORDB_PASSWORD="wrong"), 2002)
    assert "Authentication to FalkorDB" in message


@pytest.mark.parametrize(
    ("damage", "code", "advice"),
    [
        # 2003: the chunks' vector index is gone; search would silently find nothing by meaning.
        ("DROP VECTOR INDEX FOR (n:Chunk) ON (n.embedding)", 2003, "polyg init-schema"),
        # 5002: the chunks search finds belong to no article: expansion cannot report them.
        ("MATCH (a:Article) DETACH DELETE a", 5002, "polyg ingest"),
    ],
    ids=["2003_vector_index_missing", "5002_graph_expansion_failure"],
)
async def test_a_damaged_store(tmp_path: Path, ingested_once: Path, damage: str, code: int, advice: str) -> None:
    data = ingested(tmp_path, ingested_once)
    await run_on(data, damage)
    message = fails_with(polyg(tmp_path, "query", "Who wrote about GPT-4?", "--data-dir", str(data)), code)
    assert advice in message


def test_3001_embedding_model_failure(tmp_path: Path) -> None:
    result = polyg(
        tmp_path,
        "query",
        "anything",
        "--data-dir",
        str(tmp_path / "data"),
        POLYG_EMBEDDING_PROVIDER="openai",
        POLYG_EMBEDDING_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        POLYG_EMBEDDING_DIMENSION="384",
    )
    fails_with(result, 3001)


def test_3002_text_encoding_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes("Un café très noir.".encode("latin-1"))
    message = fails_with(
        polyg(tmp_path, "ingest", str(tmp_path / "notes.txt"), "--data-dir", str(tmp_path / "d")), 3002
    )
    assert "convert it to UTF-8" in message


def test_4001_server_start_failure(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = polyg(tmp_path, "serve", "--transport", "http", "--port", port, "--data-dir", str(tmp_path / "d"))
    assert "choose another --port".lower() in fails_with(result, 4001).lower()


def test_query_prints_the_spec_json(tmp_path: Path, ingested_once: Path) -> None:
    data = ingested(tmp_path, ingested_once)
    result = polyg(tmp_path, "query", "Who wrote about GPT-4?", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["total_results"] == len(answer["results"]) >= 1
    assert answer["results"][0]["author"] == "Alice, Bob"
    # The execution trace of the request, in the JSON log file, under a request id.
    lines = [json.loads(line) for line in (tmp_path / "logs" / "polyg.log").read_text().splitlines()]
    [trace] = [line for line in lines if line["msg"] == "graph_retrieve trace"]
    assert trace["request_id"] and trace["searched"] == ["Chunk"] and trace["chunks_found"] >= 1
    assert trace["results"] == answer["total_results"] and trace["expansion_ms"] >= 0
    docs = ingested_once / "docs"  # the files the store was made from
    again = polyg(tmp_path, "ingest", str(docs), "--data-dir", str(data))
    assert json.loads(again.stdout)["unchanged"] == 5
    gone = polyg(tmp_path, "ingest", "--delete", str(docs / "gpt4.md"), "--data-dir", str(data))
    assert json.loads(gone.stdout)["deleted"] == 1


async def test_mcp_tools_and_their_errors(tmp_path: Path) -> None:
    # The hashing embedder: one article is found by any query, and the errors are input checks;
    # the MiniLM load (about 0.4 s of CPU) would prove nothing here.
    async with kg_session("stdio", tmp_path, "--toolsets", "retrieval", POLYG_EMBEDDING_PROVIDER="hashing") as mcp:
        added = await mcp.ok(
            "add_article",
            {"title": "GPT-4 report", "authors": ["Alice", "Bob"], "text": "GPT-4 is a multimodal model."},
        )
        assert added["status"] == "created" and added["chunks"] == 1
        again = await mcp.ok(
            "add_article",
            {"title": "GPT-4 report", "authors": ["Alice", "Bob"], "text": "GPT-4 is a multimodal model."},
        )
        assert again["status"] == "unchanged" and again["article_id"] == added["article_id"]
        found = await mcp.ok("graph_retrieve", {"query": "Who wrote about GPT-4?"})
        assert found["total_results"] == 1
        assert found["results"][0]["author"] == "Alice, Bob" and found["results"][0]["article"] == "GPT-4 report"
        await mcp.fails("graph_retrieve", {"query": 5}, code=4002)
        await mcp.fails("graph_retrieve", {"query": "what", "limit": 0}, code=4002)
        empty = await mcp.fails("graph_retrieve", {"query": "   "}, code=5001)
        assert "must not be empty" in empty.text
        await mcp.fails("add_article", {"title": "x", "authors": [], "text": " "}, code=4002)
