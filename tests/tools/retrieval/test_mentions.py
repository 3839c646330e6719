"""MENTIONS links from chunks to entities, whichever was written first: an entity created,
renamed or deleted after the chunks were ingested is reported by graph_retrieve accordingly."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyg.core.graph.chunk_mentions import NameMatcher
from polyg.core.graph.nodes import NodeChange
from polyg.core.ingest.parsers import Document
from polyg.core.ingest.service import IngestService
from polyg.core.transfer import graph_import
from polyg.runtime.app import Services
from polyg.tools.retrieval import retrieve
from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio

LAB = "OpenAI released GPT-4 in March. Samuel and Sam's dog watched the GPT 4 demo."


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("OpenAI", True),
        ("GPT-4", True),  # as written...
        ("GPT 4", True),
        ("Sam", True),  # "Sam's"
        ("Samuel and Sam", True),
        ("Sa", False),  # too short to be a mention
        ("Samu", False),  # not a whole word
        ("GPT-4 in", True),
        ("March.", True),
        ("openai", False),  # case as written
        ("dog watched the GPT", True),
        ("GPT-4o", False),
    ],
)
def test_a_name_is_found_as_written_and_as_whole_words(name: str, found: bool) -> None:
    assert bool(NameMatcher([("e", name)]).find(LAB)) is found


def test_a_name_must_end_at_a_word_boundary() -> None:
    matcher = NameMatcher([("e", "GPT-4")])
    assert matcher.find("GPT-4o is new") == set()
    assert matcher.find("GPT-4's successor") == {"e"}
    assert matcher.find("(GPT-4)") == {"e"}


async def _entities(services: Services, project: str, query: str) -> list[str]:
    result = await retrieve(services, project, query, 1)
    return list(result["results"][0]["entities"])


async def test_an_entity_created_after_ingestion_is_linked_renamed_and_deleted(
    services: Services, project: str
) -> None:
    doc = Document("Labs", ("Alice",), "OpenAI released a new model. Samuel was not involved.", "test:labs")
    await IngestService(services.ctx).ingest(project, [doc])
    question = "Which lab released a new model?"
    assert await _entities(services, project, question) == []
    created = await services.entities.create(project, name="OpenAI", type_="organization")
    await services.entities.create(project, name="Sam", type_="person")  # not a whole word of "Samuel"
    assert await _entities(services, project, question) == ["OpenAI"]
    # Renamed to a name the chunk does not hold: the link goes; to one it holds: it comes back.
    [outcome] = await services.nodes.update(project, [NodeChange(created.id, name="Anthropic")])
    assert outcome.status == "updated"
    assert await _entities(services, project, question) == []
    await services.nodes.update(project, [NodeChange(created.id, name="Samuel")])
    assert await _entities(services, project, question) == ["Samuel"]
    await services.entities.delete(project, created.id)
    assert await _entities(services, project, question) == []
    rows = await services.ctx.read(project, "MATCH (:Chunk)-[m:MENTIONS]->() RETURN count(m)")
    assert rows == [[0]]


async def test_links_made_at_ingestion_and_after_it_agree_and_are_not_doubled(services: Services, project: str) -> None:
    await services.entities.create(project, name="GPT-4", type_="model")
    docs = [Document(f"Note {i}", ("Bob",), f"Note {i}: GPT-4 answered question {i}.", f"test:n{i}") for i in range(3)]
    docs.append(Document("Other", ("Bob",), "GPT 4 is written apart here.", "test:other"))
    report = await IngestService(services.ctx).ingest(project, docs)
    assert report.mentions == 3
    # A second entity of the same name, created after: linked to the same three chunks.
    await services.entities.create(project, name="GPT-4", type_="model")
    await services.entities.create(project, name="Bob", type_="person")  # an author, not in any text
    await retrieve(services, project, "GPT-4", 1)  # waits for the links, as every search does
    rows = await services.ctx.read(
        project, "MATCH (c:Chunk)-[m:MENTIONS]->(e:Entity) RETURN e.id, c.article_id, count(m) ORDER BY e.id"
    )
    assert len(rows) == 6 and all(count == 1 for _, _, count in rows)
    assert len({article for _, article, _ in rows}) == 3


async def _exported(services: Services, project: str) -> graph_import.Graph:
    """The project as export_graph (format json, with vectors) gives it, checked as `polyg import` reads it."""
    export = await services.memory.views.export(project, "json", embeddings=True)
    assert export.next_offset is None
    return graph_import.check(graph_import.whole_export([{"format": "json", "items": export.items}]))


async def test_an_import_with_vectors_links_chunks_and_entities_as_ingestion_does(
    services: Services, project: str
) -> None:
    # Two exports with their vectors: an article's chunks, and an entity they name.
    docs, names = f"{project}d", f"{project}n"
    doc = Document("Labs", ("Alice",), "OpenAI released GPT-4 in March.", "test:labs")
    await IngestService(services.ctx).ingest(docs, [doc])
    await services.entities.create(names, name="GPT-4", type_="model")
    assert await services.ctx.vectors.settle(names, 120)
    importer = graph_import.GraphImport(services.ctx, services.memory.temporal)
    # Chunks restored into a project holding an entity they name; then an entity they name.
    await services.entities.create(project, name="OpenAI", type_="organization")
    assert await services.ctx.vectors.settle(project, 120)  # its own round is over: no chunk then
    await importer.restore(project, await _exported(services, docs))
    await importer.restore(project, await _exported(services, names))
    assert sorted(await _entities(services, project, "Which lab released GPT-4?")) == ["GPT-4", "OpenAI"]
    # Imported again: nothing doubled.
    await importer.restore(project, await _exported(services, docs))
    await importer.restore(project, await _exported(services, names))
    rows = await services.ctx.read(project, "MATCH (:Chunk)-[m:MENTIONS]->(e:Entity) RETURN e.name, count(m)")
    assert sorted(rows) == [["GPT-4", 1], ["OpenAI", 1]]


async def test_graph_retrieve_reports_an_entity_kg_created_after_ingestion(tmp_path: Path) -> None:
    async with kg_session("stdio", tmp_path, "--toolsets", "kg,retrieval") as mcp:
        await mcp.ok(
            "add_article",
            {
                "title": "Lighthouses",
                "authors": ["Ann"],
                "text": "The Fresnel lens made lighthouse beams visible for twenty miles.",
            },
        )
        found = await mcp.ok("graph_retrieve", {"query": "lighthouse lens"})
        assert found["results"][0]["entities"] == []
        await mcp.ok("create_entity", {"name": "Fresnel lens", "type": "invention"})
        found = await mcp.ok("graph_retrieve", {"query": "lighthouse lens"})
        assert found["results"][0]["entities"] == ["Fresnel lens"]
        assert found["results"][0]["author"] == "Ann"
