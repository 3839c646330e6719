"""A remember that fails half-way is finished by its retry, through the MCP client.

The server is the real `polyg serve` over stdio, with one store write made to fail on demand
(`store_faults.py`: the function that writes a fact, or the one that writes a causal link,
raises a StoreError once): the memory is written, what follows it is not. Remembering the same
memory again writes what is missing, and says so; a third time writes nothing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from polyg.embed import create_embedder
from polyg.errors import StoreError
from polyg.runtime.app import Polyg
from polyg.store.queries import temporal as temporal_q
from tests.core.conftest import isolated_settings
from tests.mcp_helpers import KG, open_log, polyg_command, reap_embedded, serve_args, server_env
from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio
REF = "2026-01-09T12:00:00Z"
AT = datetime(2026, 1, 9, 12, 0, tzinfo=UTC)
FAULTS = Path(__file__).with_name("store_faults.py")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
async def faulty_server(servers_root: Path) -> AsyncIterator[KG]:
    root = servers_root / "memory-retry-stdio"
    armed = root / "faults"
    armed.mkdir(parents=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(FAULTS), *serve_args(root / "data", "--toolsets", "memory")],
        env=server_env(root, STORE_FAULTS_DIR=str(armed), PYTHONPATH=str(REPO)),
    )
    with open_log(root / "stderr.log") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield KG(client, "stdio", root)
        finally:
            reap_embedded(root / "data")


@pytest.fixture
def mem(faulty_server: KG, project: str) -> Memory:
    return Memory(faulty_server, project)


def arm(mem: Memory, write: str) -> None:
    """The next call of the query function `write` in the server fails."""
    (mem.server.root / "faults" / write).touch()


def counts(stats: dict[str, Any]) -> tuple[int, int, int, int]:
    temporal, causal = stats["graphs"]["temporal"], stats["graphs"]["causal"]
    return temporal["events"], causal["undated_events"], temporal["facts"], causal["causal_links"]


async def a_third_time_writes_nothing(mem: Memory, said: dict[str, str], memory_id: str) -> None:
    """The memory, finished, told again: a duplicate, and the graph as it was."""
    before = await mem.stats()
    third = await mem.ok("remember", **said)
    assert third["duplicate"] is True and third["memory_id"] == memory_id
    written = ("entities_created", "facts_added", "facts_invalidated", "causal_links_added", "causal_links_updated")
    assert all(not third[k] for k in written)
    assert await mem.stats() == before


async def test_a_fact_whose_write_failed_is_written_by_the_retry(mem: Memory) -> None:
    said = {"content": "Alice works on Payments.", "context": "Dana", "reference_time": REF}
    arm(mem, "create_fact")
    failed = await mem.fails("remember", code=StoreError.code, **said)
    assert "store went away" in failed.message
    # The memory was written; its fact was not.
    assert counts(await mem.stats()) == (1, 0, 0, 0)

    retry = await mem.ok("remember", **said)
    assert retry["duplicate"] is False and str(retry["memory_id"]).startswith("evt")
    assert len(retry["facts_added"]) == 1 and retry["events_logged"] == []
    assert counts(await mem.stats()) == (1, 0, 1, 0)
    out = await mem.ok("recall", query="What does Alice work on?", reference_time=REF)
    fact = next(e for e in out["evidence"] if e["id"] == retry["facts_added"][0])
    assert fact["memories"] == [retry["memory_id"]]

    await a_third_time_writes_nothing(mem, said, retry["memory_id"])


async def test_a_causal_link_whose_write_failed_is_written_by_the_retry(mem: Memory) -> None:
    said = {"content": "Bo works on Search. The queue filled up because the worker crashed.", "reference_time": REF}
    arm(mem, "create_link")
    await mem.fails("remember", code=StoreError.code, **said)
    # The memory, its fact, and the cause and effect (events made for the link) were written;
    # the link was not.
    assert counts(await mem.stats()) == (1, 2, 1, 0)

    retry = await mem.ok("remember", **said)
    assert retry["duplicate"] is False
    # The fact written before the failure is not written again, nor reported.
    assert retry["facts_added"] == [] and retry["causal_links_updated"] == []
    assert len(retry["causal_links_added"]) == 1
    assert counts(await mem.stats()) == (1, 2, 1, 1)
    why = await mem.ok("recall", query="Why did the queue fill up?", reference_time=REF)
    link = next(e for e in why["evidence"] if e["id"] == retry["causal_links_added"][0])
    assert link["memories"] == [retry["memory_id"]]

    await a_third_time_writes_nothing(mem, said, retry["memory_id"])


async def test_polyg_status_counts_the_unfinished_memories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    core = Polyg(isolated_settings(tmp_path), embedder=create_embedder("hashing"))
    try:
        services = await core.ready()

        async def failing(*args: Any, **kwargs: Any) -> None:
            raise StoreError("the store went away")

        with monkeypatch.context() as patched:
            patched.setattr(temporal_q, "create_fact", failing)
            with pytest.raises(StoreError):
                await services.memory_writer.remember("team", "Alice works on Payments.", None, AT)
        await services.memory_writer.remember("team", "Bo works on Search.", None, AT)
    finally:
        await core.close()
    status = [*polyg_command(), "status", "--data-dir", str(tmp_path / "data")]
    done = await anyio.run_process(status, env=server_env(tmp_path / "cli"), stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    said = "memories whose facts or causal links were not all written (remember them again): team 1"
    assert said in done.stdout.decode()
