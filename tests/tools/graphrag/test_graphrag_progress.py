"""Progress notifications of `extract_all_relationships` through the real MCP client over stdio
(that they arrive alike over Streamable HTTP is tests/tools/test_transport_matrix.py's): a
client that sends a progressToken (the SDK does when given a progress callback) hears the
entities read after every batch, before the result; a client that does not gets the same result
and no notification."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from polyg.core.graphrag.extract import BATCH
from tests.mcp_helpers import KG, check_result, kg_session

pytestmark = pytest.mark.anyio

ENTITIES = 2 * BATCH + 37
# What is measured here is the reporting, not the vectors: the instant embedder.
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}


@pytest.fixture(scope="module")
async def server(servers_root: Path) -> AsyncIterator[KG]:
    root = servers_root / "graphrag-progress-stdio"
    async with kg_session("stdio", root, "--toolsets", "memory-compat,graphrag", **HASHING) as kg:
        yield kg


async def make_entities(server: KG, project: str) -> None:
    entities = [
        {"name": f"Service {i}", "entityType": "service", "observations": [f"It uses Service {(i + 1) % ENTITIES}."]}
        for i in range(ENTITIES)
    ]
    await server.ok("create_entities", {"project_id": project, "entities": entities})


async def test_progress_arrives_after_every_batch_when_asked(server: KG, project: str) -> None:
    await make_entities(server, project)
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await server.client.call_tool(
        "extract_all_relationships", {"project_id": project}, progress_callback=on_progress
    )
    assert not result.is_error, result
    await check_result(server.client, "extract_all_relationships", result)
    stats = result.structured_content["statistics"]
    assert stats["total_processed"] == ENTITIES
    assert stats["total_relationships"] == ENTITIES
    assert heard == [
        (float(done), float(ENTITIES), f"{done} of {ENTITIES} entities read") for done in (BATCH, 2 * BATCH, ENTITIES)
    ]


async def test_no_progress_without_a_token_and_none_when_nothing_is_due(server: KG, project: str) -> None:
    await make_entities(server, project)
    first = await server.ok("extract_all_relationships", {"project_id": project})
    assert first["statistics"]["total_processed"] == ENTITIES
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    again = await server.client.call_tool(
        "extract_all_relationships", {"project_id": project}, progress_callback=on_progress
    )
    await check_result(server.client, "extract_all_relationships", again)
    assert again.structured_content["statistics"]["total_processed"] == 0
    assert heard == []
