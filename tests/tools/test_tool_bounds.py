"""Work and results with published bounds (issue 26, item 5), through the real MCP client:
add_article's text, export_graph's vectors, find_relationship_paths' pairs and
extract_all_relationships' entities a call; each limit is in the tool's input schema and past it
is a clear 4002 before any work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from polyg.core.documents.service import MAX_IDENTIFIERS
from polyg.tools.graphrag import DEFAULT_EXTRACT_LIMIT, MAX_EXTRACT_LIMIT
from polyg.tools.knowledge.paths import MAX_PAIRS
from polyg.tools.retrieval import MAX_ARTICLE_TEXT
from tests.mcp_helpers import KG, POLL_S, kg_session

pytestmark = pytest.mark.anyio
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}


@pytest.fixture(scope="module")
async def server(servers_root: Path) -> AsyncIterator[KG]:
    toolsets = "memory-compat,memory,knowledge,graphrag,retrieval"
    async with kg_session("stdio", servers_root / "tool-bounds", "--toolsets", toolsets, **HASHING) as kg:
        yield kg


async def schemas(server: KG) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in (await server.client.list_tools()).tools}


async def test_add_article_publishes_and_keeps_a_text_limit(server: KG, project: str) -> None:
    schema = (await schemas(server))["add_article"]["properties"]
    assert schema["text"]["maxLength"] == MAX_ARTICLE_TEXT
    assert schema["authors"]["maxItems"] == 100
    article = {"project_id": project, "title": "Big", "authors": ["A. Writer"]}
    refused = await server.fails("add_article", {**article, "text": "word " * (MAX_ARTICLE_TEXT // 5 + 1)}, code=4002)
    assert "text" in refused.message and f"{MAX_ARTICLE_TEXT}" in refused.message
    done = await server.ok("add_article", {**article, "text": "# Big\n\nA short article about bounds."})
    assert done["status"] == "created"


# How long an entity's vector may take to be written on a loaded machine (polled; a bound, not a wait).
VECTOR_WAIT_S = 120.0


async def test_export_graph_leaves_vectors_out_unless_asked(server: KG, project: str) -> None:
    p = {"project_id": project}
    schema = (await schemas(server))["export_graph"]["properties"]["include_embeddings"]
    assert schema["default"] is False
    await server.ok("create_entities", {**p, "entities": [{"name": "Vec", "entityType": "t", "observations": ["o"]}]})

    async def vectors(**args: Any) -> int:
        page = await server.ok("export_graph", {**p, "format": "json", **args})
        return sum(1 for item in page["items"] if "embedding" in item["properties"])

    # The entity's vector is written just after create_entities answers (the vectorizer embeds
    # in the background): polled for, so that leaving it out below is a choice, not a race.
    with anyio.fail_after(VECTOR_WAIT_S):
        while True:
            if await vectors(include_embeddings=True) >= 1:
                break
            await anyio.sleep(POLL_S)
    assert await vectors() == 0


async def test_find_relationship_paths_takes_a_bounded_number_of_pairs(server: KG, project: str) -> None:
    schema = (await schemas(server))["find_relationship_paths"]["properties"]["node_pairs"]
    assert schema["maxItems"] == MAX_PAIRS
    documents = (await schemas(server))["generate_documents"]["properties"]["node_identifiers"]
    assert documents["maxItems"] == MAX_IDENTIFIERS
    pair = {"source_node_id": "a", "target_node_id": "b"}
    refused = await server.fails(
        "find_relationship_paths", {"project_id": project, "node_pairs": [pair] * (MAX_PAIRS + 1)}, code=4002
    )
    assert "node_pairs" in refused.message


async def test_extract_all_relationships_pages_through_what_is_due(server: KG, project: str) -> None:
    schema = (await schemas(server))["extract_all_relationships"]["properties"]["limit"]
    # tools/list writes an optional number as `type: [integer, null]` beside its bounds.
    assert schema["type"] == ["integer", "null"]
    assert (schema["maximum"], schema["default"]) == (MAX_EXTRACT_LIMIT, DEFAULT_EXTRACT_LIMIT)
    await server.fails("extract_all_relationships", {"project_id": project, "limit": MAX_EXTRACT_LIMIT + 1}, code=4002)
    due = DEFAULT_EXTRACT_LIMIT + 40
    entities = [{"name": f"Service {i}", "entityType": "service", "observations": ["It runs."]} for i in range(due)]
    await server.ok("create_entities", {"project_id": project, "entities": entities})
    # Before, one call with no limit read every due entity (20,000: 37.6 s in one call).
    first = await server.ok("extract_all_relationships", {"project_id": project})
    assert first["statistics"]["total_processed"] == DEFAULT_EXTRACT_LIMIT
    assert (first["statistics"]["remaining"], first["has_more"]) == (40, True)
    rest = await server.ok("extract_all_relationships", {"project_id": project, "limit": None})
    assert rest["statistics"]["total_processed"] == 40
    assert (rest["statistics"]["remaining"], rest["has_more"]) == (0, False)
