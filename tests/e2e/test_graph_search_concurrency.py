"""graph_enhanced_search while another session deletes and recreates the entities it finds
(issue 26, item 3), through the real MCP client: no search fails.

Measured before the fix: 131 of 1,201 searches failed with an internal error (KeyError, 4000).
tests/core/search/test_graph_search_vanished.py makes the race deterministic; this is the race itself.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
NAMES = [f"Saxophonist {i}" for i in range(12)]
ROUNDS = 40


@pytest.fixture(scope="module")
async def two_sessions(servers_root: Path) -> AsyncIterator[tuple[KG, KG]]:
    root = servers_root / "graph-search-concurrency"
    args = ("--toolsets", "memory-compat,graphrag")
    async with (
        kg_session("stdio", root, *args, **HASHING) as searcher,
        kg_session("stdio", root, *args, **HASHING) as writer,
    ):
        yield searcher, writer


def entities() -> list[dict[str, object]]:
    return [
        {"name": n, "entityType": "person", "observations": [f"{n} plays jazz saxophone with {NAMES[(i + 1) % 12]}."]}
        for i, n in enumerate(NAMES)
    ]


async def test_searches_survive_entities_deleted_meanwhile(two_sessions: tuple[KG, KG], project: str) -> None:
    searcher, writer = two_sessions
    p = {"project_id": project}
    await writer.ok("create_entities", {**p, "entities": entities()})
    relations = [{"from": a, "to": b, "relationType": "plays_with"} for a, b in itertools.pairwise(NAMES)]
    await writer.ok("create_relations", {**p, "relations": relations})
    failures: list[str] = []
    searched = 0

    async def churn() -> None:
        # Until the searches have run beside the deletions more than ROUNDS times, however the
        # machine shares its time between the two (under load, 38 searches beside 40 rounds).
        rounds = 0
        while rounds < ROUNDS or searched <= ROUNDS:
            await writer.ok("delete_entities", {**p, "entityNames": NAMES[::2]})
            await writer.ok("create_entities", {**p, "entities": entities()[::2]})
            rounds += 1

    async def search() -> None:
        nonlocal searched
        while not done.is_set():
            result = await searcher.call("graph_enhanced_search", {**p, "query": "jazz saxophone", "limit": 10})
            searched += 1
            if result.is_error:
                failures.append(f"{result.error_code}: {result.text[:120]}")

    done = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(search)
        tasks.start_soon(search)
        await churn()
        done.set()
    assert searched > ROUNDS
    assert failures == []
