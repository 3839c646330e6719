"""Degrade, don't fail: while FalkorDB builds an entity vector index, the search tools answer
from words and the graph and say `degraded: "vector index building"` (polyg.core.degraded).

The index is built for real: the entities' vector index of a project is dropped, ten thousand
entities with vectors are added, and the index is created again, which FalkorDB then builds in
the background (tens of seconds here) as it does after a restart. The test checks that the
index is still under construction after its calls, so that they all ran while it was (the
index is made costly to build for that)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.falkor_server import FalkorServer, graph_query
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

PROJECT = "ib"
GRAPH = f"polyg:{PROJECT}"
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
FILLERS = 10_000
REF = "2026-03-02T10:00:00Z"
BUILDING = "vector index building"


def building(server: FalkorServer) -> bool:
    client = server.client()
    try:
        rows = graph_query(client, "CALL db.indexes() YIELD label, status RETURN label, status", GRAPH)[1]
    finally:
        client.close()
    return any(b"UNDER CONSTRUCTION" in status for _, status in rows)


def rebuild_entity_vectors(server: FalkorServer) -> None:
    # Writing the 10k fillers takes seconds on a loaded machine: more than a client's default 5 s.
    client = server.client(timeout=120)
    try:
        graph_query(client, "DROP VECTOR INDEX FOR (n:Entity) ON (n.embedding)", GRAPH)
        graph_query(
            client,
            f"UNWIND range(1, {FILLERS}) AS i CREATE (:Entity {{id: 'fill' + toString(i), name: 'filler ' + "
            "toString(i), type: 'filler', embedding: vecf32([x IN range(1, 384) | rand() - 0.5])})",
            GRAPH,
        )
        # Built with a far larger graph per vector than polyg's own (M, efConstruction), so that
        # the build outlasts the calls below on a machine of any speed.
        graph_query(
            client,
            "CREATE VECTOR INDEX FOR (n:Entity) ON (n.embedding) OPTIONS "
            "{dimension: 384, similarityFunction: 'cosine', M: 64, efConstruction: 800}",
            GRAPH,
        )
    finally:
        client.close()


def stop_the_build(server: FalkorServer) -> None:
    """The calls are made: FalkorDB is killed, so that the build (a core busy for tens of
    seconds) does not go on while the polyg servers shut down; they then close on a store that
    is gone, as after any crash of the database."""
    server.kill()


async def search_tools(mcp: KG) -> dict[str, dict[str, object]]:
    return {
        "search_nodes": await mcp.ok("search_nodes", {"query": "first program"}),
        "search_semantic": await mcp.ok("search_semantic", {"query": "first program"}),
        "graph_enhanced_search": await mcp.ok("graph_enhanced_search", {"query": "first program"}),
        "explore_neighborhoods": await mcp.ok("explore_neighborhoods", {"search_terms": ["first program"]}),
        "recall": await mcp.ok("recall", {"query": "Why did the auth service crash?", "reference_time": REF}),
    }


async def test_search_tools_answer_by_words_while_the_vector_index_builds(tmp_path: Path) -> None:
    args = ("--toolsets", "all", "--project", PROJECT, "--store")
    with FalkorServer() as server:
        async with (
            kg_session("stdio", tmp_path / "first", *args, server.url, **HASHING) as mcp,
            kg_session("stdio", tmp_path / "second", *args, server.url, **HASHING) as fresh,
        ):
            ada = {"name": "Ada Lovelace", "entityType": "person", "observations": ["She wrote the first program."]}
            await mcp.ok("create_entities", {"entities": [ada]})
            await mcp.ok(
                "remember", {"content": "The auth service crashed after the Redis upgrade.", "reference_time": REF}
            )
            await mcp.ok(
                "add_article", {"title": "GPT-4 report", "authors": ["Alice"], "text": "GPT-4 is a multimodal model."}
            )
            healthy = await mcp.ok("search_nodes", {"query": "first program"})
            assert "degraded" not in healthy

            rebuild_entity_vectors(server)
            assert building(server)
            # A polyg that saw the index ready finds out from the vector query's refusal.
            results = await search_tools(mcp)
            # One that has not searched yet finds out from the index states: its words are then
            # matched by reading the nodes, the chunks' included.
            found = await fresh.ok("search_nodes", {"query": "first program"})
            retrieved = await fresh.ok("graph_retrieve", {"query": "multimodal model"})
            assert building(server), "the index was built before the calls ended: nothing was tested"
            stop_the_build(server)
        for tool, result in results.items():
            assert result["degraded"] == BUILDING, tool
        assert [e["name"] for e in results["search_nodes"]["entities"]] == ["Ada Lovelace"]  # type: ignore[index]
        assert results["graph_enhanced_search"]["results"][0]["entity_name"] == "Ada Lovelace"  # type: ignore[index]
        assert "Redis upgrade" in str(results["recall"]["evidence"])
        assert found["degraded"] == BUILDING
        assert [e["name"] for e in found["entities"]] == ["Ada Lovelace"]
        assert retrieved["degraded"] == BUILDING
        assert retrieved["results"][0]["article"] == "GPT-4 report"


async def test_a_write_during_an_index_build_is_refused_and_reads_still_answer(tmp_path: Path) -> None:
    """FalkorDB holds a write to a graph until an index build on it ends, and every read that
    comes after the write waits behind it: one `create_entities` sent during the build made
    the searches after it time out too (StoreTimeout; the store timeout is short here, so the
    test does not wait long for that). polyg refuses the write before sending it, with a
    retryable 2005 that names the build and its progress, and the searches answer, degraded."""
    env = {**HASHING, "POLYG_STORE_TIMEOUT_S": "5"}
    with FalkorServer() as server:
        args = ("--toolsets", "all", "--project", PROJECT, "--store", server.url)
        async with kg_session("stdio", tmp_path / "one", *args, **env) as mcp:
            ada = {"name": "Ada Lovelace", "entityType": "person", "observations": ["She wrote the first program."]}
            await mcp.ok("create_entities", {"entities": [ada]})
            assert "degraded" not in await mcp.ok("search_nodes", {"query": "first program"})

            rebuild_entity_vectors(server)
            assert building(server)
            grace = {"name": "Grace Hopper", "entityType": "person", "observations": ["She wrote a compiler."]}
            refused = await mcp.fails("create_entities", {"entities": [grace]}, code=2005)
            found = await mcp.ok("search_nodes", {"query": "first program"})
            opened = await mcp.ok("open_nodes", {"names": ["Ada Lovelace"]})
            assert building(server), "the index was built before the calls ended: nothing was tested"
            stop_the_build(server)
        assert "building its index on Entity" in refused.message, refused.message
        assert "% done" in refused.message and "try again" in refused.message, refused.message
        assert found["degraded"] == BUILDING
        assert [e["name"] for e in found["entities"]] == ["Ada Lovelace"]
        assert [e["name"] for e in opened["entities"]] == ["Ada Lovelace"]
