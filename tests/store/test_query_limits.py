"""The database's per-query memory capacity (issue 26): set on a server that has none, kept
where its operator chose one, tolerated where GRAPH.CONFIG is refused; a query over it is a
clear error and leaves the database's memory where it was."""

from __future__ import annotations

import pytest
import redis

from polyg.core.app import Services
from polyg.errors import QueryMemoryExceeded
from polyg.store.falkor import QUERY_MEM_CAPACITY, FalkorStore
from tests.falkor_server import FalkorServer

pytestmark = pytest.mark.anyio

MB = 1 << 20
# A list of 5 million integers (about 80 MB) built inside one expression.
BIG_LIST = "MATCH (n) WHERE id(n) = 0 RETURN size(range(1, n.x * 5000000))"


def capacity(server: FalkorServer) -> int:
    client = server.client()
    try:
        return int(client.execute_command("GRAPH.CONFIG", "GET", "QUERY_MEM_CAPACITY")[1])  # type: ignore[no-untyped-call]
    finally:
        client.close()


def used_memory(server: FalkorServer) -> int:
    client = server.client()
    try:
        return int(client.info("memory")["used_memory"])  # type: ignore[index]
    finally:
        client.close()


async def test_a_server_without_a_capacity_gets_one_and_an_operators_is_kept() -> None:
    with FalkorServer() as server:
        assert capacity(server) == 0  # FalkorDB's default: unlimited
        store = FalkorStore.from_url(server.url)
        try:
            assert await store.limit_query_memory() == QUERY_MEM_CAPACITY
            assert capacity(server) == QUERY_MEM_CAPACITY
            # The capacity in force is kept, whoever set it.
            assert await store.limit_query_memory(64 * MB) == QUERY_MEM_CAPACITY
        finally:
            await store.close()


async def test_a_query_over_the_capacity_is_stopped_and_its_memory_returned() -> None:
    with FalkorServer() as server:
        store = FalkorStore.from_url(server.url)
        try:
            await store.query("g", "CREATE (:N {x: 1})")
            assert await store.limit_query_memory(20 * MB) == 20 * MB
            before = used_memory(server)
            with pytest.raises(QueryMemoryExceeded, match="exceeded capacity"):
                await store.ro_query("g", BIG_LIST)
            assert used_memory(server) < before + 8 * MB
            assert await store.ro_query("g", "MATCH (n:N) RETURN n.x") == [[1]]  # still serving
        finally:
            await store.close()


async def test_a_server_that_refuses_graph_config_is_used_without_a_capacity() -> None:
    with FalkorServer() as server:
        client = server.client()
        try:
            client.execute_command("ACL", "SETUSER", "default", "-graph.config")  # type: ignore[no-untyped-call]
            with pytest.raises(redis.ResponseError):
                client.execute_command("GRAPH.CONFIG", "GET", "QUERY_MEM_CAPACITY")  # type: ignore[no-untyped-call]
        finally:
            client.close()
        store = FalkorStore.from_url(server.url)
        try:
            assert await store.limit_query_memory() == 0
            assert await store.query("g", "CREATE (:N {x: 1}) RETURN 1") == [[1]]
        finally:
            await store.close()


async def test_every_store_mode_opens_with_a_query_memory_capacity(services: Services) -> None:
    """Embedded (the module argument) and server mode (set at open): one capacity in force."""
    reply = await services.store.graph_config("GET", "QUERY_MEM_CAPACITY")
    assert int(reply[1]) == QUERY_MEM_CAPACITY
