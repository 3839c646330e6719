"""Limits of the memory tools that agree with what they publish (issue 26), through the MCP
client: remember's content limit, and clear_graph taking the cleared entities' documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import jsonschema
import pytest

from polyg.core.memory.write import MAX_CONTENT, MAX_CONTEXT
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def server(servers_root: Path) -> AsyncIterator[KG]:
    async with kg_session("stdio", servers_root / "memory-limits", "--toolsets", "memory,knowledge") as kg:
        yield kg


async def test_remember_publishes_the_content_limit_it_keeps(server: KG, project: str) -> None:
    tools = {t.name: t.input_schema for t in (await server.client.list_tools()).tools}
    schema = tools["remember"]
    longest = {"project_id": project, "content": ("word " * MAX_CONTENT)[:MAX_CONTENT], "context": "c" * MAX_CONTEXT}
    assert len(longest["content"]) == MAX_CONTENT
    jsonschema.validate(longest, schema)
    # The longest content the schema takes, with the longest context, is stored: before, up to
    # 20,000 characters passed the schema and 16,385 and more were refused as a "description".
    assert (await server.ok("remember", longest))["duplicate"] is False
    over = {**longest, "content": longest["content"] + "x"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(over, schema)
    refused = await server.fails("remember", over, code=4002)
    assert "content" in refused.message and "description" not in refused.message


async def test_clearing_the_entity_graph_takes_its_cached_documents(server: KG, project: str) -> None:
    p = {"project_id": project}
    made = await server.ok(
        "manage_nodes",
        {**p, "operation": "create", "nodes": [{"name": f"N{i}", "summary": f"node {i}"} for i in range(3)]},
    )
    node_ids = [r["node_id"] for r in made["results"]]
    docs = await server.ok("generate_documents", {**p, "node_identifiers": node_ids})
    assert len(docs["documents"]) == 3

    async def cached_documents() -> int:
        page = await server.ok("export_graph", {**p, "format": "json", "limit": 1000})
        return sum(1 for item in page["items"] if "CachedDocument" in item.get("labels", ()))

    assert await cached_documents() == 3
    await server.ok("clear_graph", {**p, "graph": "entity", "confirm": True})
    assert await cached_documents() == 0


async def test_add_concept_does_not_make_a_second_entity_of_a_name(server: KG, project: str) -> None:
    p = {"project_id": project}
    await server.ok("add_entity", {**p, "name": "Python", "entity_type": "language"})
    refused = await server.fails("add_concept", {**p, "name": " Python ", "description": "a topic"}, code=4002)
    assert "exists already" in refused.message and "'language'" in refused.message
    page = await server.ok("export_graph", {**p, "format": "json", "limit": 1000})
    named = [i for i in page["items"] if i["kind"] == "node" and i["properties"].get("name") == "Python"]
    assert [n["properties"]["type"] for n in named] == ["language"]
    # A concept of its own name represents it; adding that concept again reuses it.
    made = await server.ok("add_concept", {**p, "name": "Python programming", "represents": ["Python"]})
    again = await server.ok("add_concept", {**p, "name": "Python programming"})
    assert made["created"] and not again["created"]
    assert again["concept"]["id"] == made["concept"]["id"]
