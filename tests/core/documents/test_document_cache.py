"""Cached documents (spec 000) do not outlive what they were built from: deleting a node, by
any toolset's delete, removes the documents cached for it and those built from it, and only
those."""

from __future__ import annotations

import pytest

from polyg.core.documents.templates import TemplateDraft
from polyg.core.graph.nodes import NodeDraft, NodeEdge
from polyg.runtime.app import Services

pytestmark = pytest.mark.anyio

PAGE = TemplateDraft(
    id="page",
    name="Page",
    structure="# {{name}}\n{{#friends}}* {{name}}\n{{/friends}}",
    variables={"friends": "MATCH (n)-[:KNOWS]->(p) RETURN p.name AS name ORDER BY name"},
    node_types=("Person",),
)


async def documents_of(s: Services, project: str) -> dict[str, int]:
    """Node id -> how many documents are cached for it."""
    rows = await s.store.ro_query(project, "MATCH (n)-[:CACHED_AT]->(c:CachedDocument) RETURN n.id, count(c)")
    orphans = await s.store.ro_query(project, "MATCH (c:CachedDocument) WHERE NOT ()-[:CACHED_AT]->(c) RETURN count(c)")
    assert orphans == [[0]]
    return {node_id: count for node_id, count in rows}


async def people(s: Services, project: str) -> dict[str, str]:
    """Ann knows Bob; Cy knows nobody; Dee knows Cy. Each gets its page."""
    await s.templates.create(project, PAGE)
    drafts = [
        NodeDraft("Bob", "Person"),
        NodeDraft("Ann", "Person", edges=[NodeEdge("Bob", "KNOWS")]),
        NodeDraft("Cy", "Person"),
        NodeDraft("Dee", "Person", edges=[NodeEdge("Cy", "KNOWS")]),
    ]
    made = {d.name: o.id for d, o in zip(drafts, await s.nodes.create(project, drafts), strict=True)}
    docs = await s.documents.generate(project, list(made.values()))
    assert [d.from_cache for d in docs] == [False] * 4
    assert (await documents_of(s, project)) == {node_id: 1 for node_id in made.values()}
    return {k: str(v) for k, v in made.items()}


async def test_deleting_a_node_removes_its_documents_and_those_built_from_it(services: Services, project: str) -> None:
    made = await people(services, project)
    [outcome] = await services.nodes.delete(project, [made["Bob"]])
    assert outcome.status == "deleted"
    # Bob's page is gone, and Ann's, which listed him; Cy's and Dee's stay valid.
    assert await documents_of(services, project) == {made["Cy"]: 1, made["Dee"]: 1}
    again = await services.documents.generate(project, [made["Cy"], made["Dee"], made["Ann"]])
    assert [d.from_cache for d in again] == [True, True, False]
    assert again[2].content == "# Ann\n"


async def test_every_delete_path_removes_documents(services: Services, project: str) -> None:
    made = await people(services, project)
    # The entity delete of the kg toolset and the name-based one of memory-compat.
    await services.entities.delete(project, made["Cy"])
    assert await documents_of(services, project) == {made["Ann"]: 1, made["Bob"]: 1}
    await services.named.delete_entities(project, ["Bob"])
    assert await documents_of(services, project) == {}
    # Deleting the template drops every page built from it.
    await services.documents.generate(project, [made["Ann"]])
    await services.templates.delete(project, "page")
    assert await documents_of(services, project) == {}
