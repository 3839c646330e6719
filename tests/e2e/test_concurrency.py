"""Concurrency through real `polyg serve` processes: two servers on one data directory, and
many tool calls in flight on one connection.

Two processes that open one embedded database at the same instant must share one FalkorDB
server: two servers on one AOF would silently lose one side's writes.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.mcp_helpers import (
    HttpServer,
    embedded_pid,
    ok,
    reap_embedded,
    redis_servers_under,
    stdio_client_for,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_database_left_behind")]

HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
# The tests call kg tools only; each other toolset would add to every server's start.
KG = ("--toolsets", "kg")
PER_SERVER = 100
IN_FLIGHT = 10  # concurrent calls per client


def server_starts(data_dir: Path) -> int:
    """How many FalkorDB servers have ever started on this data directory (from its log)."""
    log = (data_dir / "db" / "falkordb.log").read_text(errors="replace")
    return len(re.findall(r"Ready to accept connections", log))


async def create_many(url: str, tag: str, count: int) -> set[str]:
    ids: set[str] = set()
    limiter = anyio.Semaphore(IN_FLIGHT)

    async def one(client: Client, i: int) -> None:
        async with limiter:
            made = await ok(client, "create_entity", {"name": f"{tag}-{i}", "type": "item"})
            ids.add(made["entity"]["id"])

    async with Client(url) as client, anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, client, i)
    return ids


async def listed_ids(url: str) -> set[str]:
    async with Client(url) as client:
        listed = await ok(client, "list_entities", {"limit": 1000})
    return {e["id"] for e in listed["entities"]}


async def test_two_processes_share_one_database(tmp_path: Path, servers: list[HttpServer]) -> None:
    root = tmp_path / "shared"
    a = HttpServer(root, args=list(KG), env=HASHING)
    b = HttpServer(root, args=list(KG), env=HASHING)
    servers += [a, b]
    a.start()
    b.start()  # the same instant, as far as the database start is concerned
    a.wait_ready()
    b.wait_ready()
    data_dir = a.data_dir
    db_pid = embedded_pid(data_dir)
    assert db_pid is not None
    assert redis_servers_under(data_dir) == [db_pid]

    created: dict[str, set[str]] = {}

    async def fill(server: HttpServer, tag: str) -> None:
        created[tag] = await create_many(server.url, tag, PER_SERVER)

    async with anyio.create_task_group() as tg:
        tg.start_soon(fill, a, "a")
        tg.start_soon(fill, b, "b")
    everything = created["a"] | created["b"]
    assert len(everything) == 2 * PER_SERVER

    assert await listed_ids(a.url) == everything
    assert await listed_ids(b.url) == everything
    assert redis_servers_under(data_dir) == [db_pid]
    assert server_starts(data_dir) == 1

    # Both stop at once; the last one out shuts the database down (nothing left to reap).
    for server in (a, b):
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
    for server in (a, b):
        assert server.proc is not None
        assert server.proc.wait(timeout=30) == 0, server.stderr_text()
    assert embedded_pid(data_dir) is None
    assert redis_servers_under(data_dir) == []

    third = HttpServer(root, args=list(KG), env=HASHING)
    servers.append(third)
    third.start().wait_ready()
    assert await listed_ids(third.url) == everything
    assert third.stop() == 0
    assert not third.left_embedded_behind
    assert server_starts(data_dir) == 2


async def test_parallel_calls_on_one_connection(tmp_path: Path) -> None:
    root = tmp_path / "par"
    root.mkdir()
    with (root / "stderr.log").open("a", encoding="utf-8") as errlog:
        try:
            async with stdio_client_for(root, *KG, errlog=errlog, **HASHING) as client:
                await parallel_calls(client)
        finally:
            left_behind = reap_embedded(root / "data")
    # Closing stdin stops the server, and the server its database.
    assert not left_behind


async def parallel_calls(client: Client) -> None:
    project = {"project_id": "par"}
    entity_ids: list[str] = []

    async def create(i: int) -> None:
        made = await ok(client, "create_entity", {"name": f"e{i}", "type": "item", **project})
        entity_ids.append(made["entity"]["id"])

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(create, i)
    assert len(set(entity_ids)) == 50
    listed = await ok(client, "list_entities", {"limit": 1000, **project})
    assert {e["id"] for e in listed["entities"]} == set(entity_ids)

    # 20 observations of one entity at once: none may be lost (each is a read-embed-write).
    target = entity_ids[0]
    texts = [f"observation {i} about e0" for i in range(20)]
    observation_ids: list[str] = []

    async def observe(text: str) -> None:
        added = await ok(client, "add_observation", {"entity_id": target, "observation": text, **project})
        observation_ids.append(added["observation"]["id"])

    async with anyio.create_task_group() as tg:
        for text in texts:
            tg.start_soon(observe, text)
    got = await ok(client, "get_entity", {"entity_id": target, **project})
    observations = got["entity"]["observations"]
    assert sorted(o["text"] for o in observations) == sorted(texts)
    assert sorted(o["id"] for o in observations) == sorted(observation_ids)
