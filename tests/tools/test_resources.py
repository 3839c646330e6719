"""MCP resources and completion over a real MCP client: entity pages are the knowledge document's
text, summaries, exports and tool pages read back; resources/list pages with a cursor; a
missing project or entity is a clear resource error; completion finds projects, entity names and
template ids."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
PROJECT = "res-proj"


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[KG]:
    root = tmp_path_factory.mktemp("resources")
    async with kg_session("stdio", root, "--project", PROJECT, "--toolsets", "kg,memory,knowledge", **FAST) as session:
        yield session


@pytest.fixture(scope="module")
async def graph(server: KG) -> dict[str, str]:
    """Two linked entities (one with markup in its name) in PROJECT; their ids by name."""
    ids = {}
    for name, type_ in (("Ada Lovelace", "person"), ("Analytical Engine", "machine"), ("<script>x</script>", "t")):
        made = await server.ok("create_entity", {"name": name, "type": type_, "description": f"about {name}"})
        ids[name] = made["entity"]["id"]
    await server.ok(
        "create_relationship",
        {"source_id": ids["Ada Lovelace"], "target_id": ids["Analytical Engine"], "type": "programmed"},
    )
    return ids


async def read_text(server: KG, uri: str) -> str:
    result = await server.client.read_resource(uri)
    (content,) = result.contents
    assert isinstance(content, types.TextResourceContents) and content.uri == uri
    return content.text


async def test_templates_are_listed(server: KG) -> None:
    templates = (await server.client.list_resource_templates()).resource_templates
    assert {t.uri_template for t in templates} == {
        "polyg://{project}/entity/{id}",
        "polyg://{project}/summary",
        "polyg://{project}/document/{template}/{id}",
        "polyg://{project}/export/{format}{?offset}",
        "polyg://tools/{name}",
    }


async def test_an_entity_page_is_its_knowledge_document(server: KG, graph: dict[str, str]) -> None:
    ada = graph["Ada Lovelace"]
    page = await read_text(server, f"polyg://{PROJECT}/entity/{ada}")
    documents = await server.ok("generate_documents", {"node_identifiers": [ada]})
    assert page == documents["documents"][0]["content"]
    assert "# Ada Lovelace" in page and "Analytical Engine" in page
    # By name too, in any case, percent-encoded as a URI carries it (a '/' in a name as %2F).
    assert await read_text(server, f"polyg://{PROJECT}/entity/ada%20lovelace") == page
    await server.ok("create_entity", {"name": "src/utils.ts", "type": "file"})
    assert (await read_text(server, f"polyg://{PROJECT}/entity/src%2Futils.ts")).startswith("# src&#x2F;utils.ts")


async def test_a_document_with_a_chosen_template(server: KG, graph: dict[str, str]) -> None:
    made = await server.ok(
        "manage_templates",
        {"operation": "create", "templates": [{"name": "Card", "structure": "CARD {{name}}", "node_types": []}]},
    )
    template_id = made["results"][0]["template_id"]
    ada = graph["Ada Lovelace"]
    assert await read_text(server, f"polyg://{PROJECT}/document/{template_id}/{ada}") == "CARD Ada Lovelace"


async def test_missing_project_entity_and_unknown_uris_are_clear_errors(server: KG, graph: dict[str, str]) -> None:
    cases = {
        "polyg://no-such-project/summary": "Project 'no-such-project' not found",
        f"polyg://{PROJECT}/entity/ent_missing": "Entity 'ent_missing' not found in project 'res-proj'",
        f"polyg://{PROJECT}/export/xml": "Unknown export format 'xml'",
        f"polyg://{PROJECT}/export/json?offset=x": "offset must be a whole number",
        "polyg://tools/no_such_tool": "No tool 'no_such_tool'",
        "polyg://bad%20project!/summary": "a project id is 1-64 letters",
        f"polyg://{PROJECT}/nothing/here": "Unknown resource",
        "file:///etc/passwd": "Unknown resource",
    }
    for uri, message in cases.items():
        with pytest.raises(MCPError) as caught:
            await server.client.read_resource(uri)
        assert caught.value.error.code == types.INVALID_PARAMS, uri
        assert message in caught.value.error.message, (uri, caught.value.error.message)
        assert "Traceback" not in caught.value.error.message


async def test_summary_export_and_tool_pages(server: KG, graph: dict[str, str]) -> None:
    summary = await read_text(server, f"polyg://{PROJECT}/summary")
    assert summary.startswith(f"# Project {PROJECT}\n")
    assert f"polyg://{PROJECT}/entity/{graph['Ada Lovelace']}" in summary
    assert "## Relationships by type\n" in summary and "\n- programmed: 1\n" in summary
    # Markup in a name is escaped, as the entity's document escapes it.
    assert "&lt;script&gt;x&lt;/script&gt;" in summary and "<script>" not in summary
    assert "&lt;script&gt;" in await read_text(server, f"polyg://{PROJECT}/entity/{graph['<script>x</script>']}")

    export = json.loads(await read_text(server, f"polyg://{PROJECT}/export/json"))
    assert export["format"] == "json" and export["offset"] == 0
    assert {item["properties"].get("name") for item in export["items"]} >= set(graph)
    assert not any("embedding" in item["properties"] for item in export["items"])
    cypher = json.loads(await read_text(server, f"polyg://{PROJECT}/export/cypher"))
    assert cypher["statements"] and cypher["next"] is None

    # The tool page has what the lean tools/list leaves out: the full schemas with their texts.
    page = await read_text(server, "polyg://tools/add_fact")
    assert page.startswith("# add_fact\n") and "## Input schema" in page and "## Output schema" in page
    assert "list_invalidations" in page  # the description's details
    assert "x-polyg-listed" not in await read_text(server, "polyg://tools/create_relationship")


async def test_resources_list_pages_through_every_entity_with_a_cursor(server: KG, graph: dict[str, str]) -> None:
    project = "paged"
    for i in range(130):
        await server.ok("create_entity", {"project_id": project, "name": f"item {i:03}", "type": "t"})
    uris: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        result = await server.client.list_resources(cursor=cursor)
        pages += 1
        # 100 a page; the MCP App's page (polyg.ui.mcp_app) is added to the first.
        assert len(result.resources) <= 100 + (pages == 1), len(result.resources)
        uris += [r.uri for r in result.resources]
        cursor = result.next_cursor
        if cursor is None:
            break
    assert pages >= 2
    assert len(uris) == len(set(uris))
    assert f"polyg://{project}/summary" in uris and f"polyg://{PROJECT}/summary" in uris
    assert sum(uri.startswith(f"polyg://{project}/entity/") for uri in uris) == 130
    assert "polyg://tools/recall" in uris and "ui://polyg/graph" in uris
    with pytest.raises(MCPError, match="Invalid cursor"):
        await server.client.list_resources(cursor="not-a-cursor")


async def test_completion_of_projects_entity_names_templates_and_prompt_arguments(
    server: KG, graph: dict[str, str]
) -> None:
    entity_ref = types.ResourceTemplateReference(uri="polyg://{project}/entity/{id}")
    projects = await server.client.complete(entity_ref, {"name": "project", "value": "res"})
    assert projects.completion.values == [PROJECT]

    names = await server.client.complete(entity_ref, {"name": "id", "value": "ada"}, {"project": PROJECT})
    assert names.completion.values == ["Ada Lovelace"]
    # Without a project in the context: the server's project.
    names = await server.client.complete(entity_ref, {"name": "id", "value": "anal"})
    assert names.completion.values == ["Analytical Engine"]

    made = await server.ok(
        "manage_templates",
        {"operation": "create", "templates": [{"name": "Profile", "structure": "P {{name}}", "node_types": []}]},
    )
    template_id = made["results"][0]["template_id"]
    document_ref = types.ResourceTemplateReference(uri="polyg://{project}/document/{template}/{id}")
    templates = await server.client.complete(document_ref, {"name": "template", "value": template_id[:6]})
    assert template_id in templates.completion.values

    tools = await server.client.complete(
        types.ResourceTemplateReference(uri="polyg://tools/{name}"), {"name": "name", "value": "get_ca"}
    )
    assert tools.completion.values == ["get_causal_chain"]

    prompt = types.PromptReference(name="add_details")
    ids = await server.client.complete(prompt, {"name": "entity_id", "value": "Ada"})
    assert ids.completion.values == [graph["Ada Lovelace"]]
    project_ids = await server.client.complete(prompt, {"name": "project_id", "value": "RES"})
    assert project_ids.completion.values == [PROJECT]

    # A reference polyg does not know completes to nothing, not an error.
    unknown = await server.client.complete(types.PromptReference(name="nope"), {"name": "x", "value": "a"})
    assert unknown.completion.values == []
