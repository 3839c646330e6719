"""Ingestion: each format, chunking by the model's tokens, idempotence, replacement, deletion,
links to the entities a chunk names, and retrieval's expansion through them."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from polyg.core.ingest.parsers import Document, find_files, parse_file
from polyg.core.ingest.service import IngestService
from polyg.core.text.chunking import DEFAULT_SPEC, MAX_CHUNK_TOKENS, ChunkSpec, chunk_text, count_tokens
from polyg.errors import InvalidParams, TextEncodingError
from polyg.runtime.app import Services
from polyg.tools.retrieval import retrieve
from tests.tools.retrieval.conftest import minimal_pdf, write_corpus

pytestmark = pytest.mark.anyio


async def _count(services: Services, project: str, pattern: str) -> int:
    rows = await services.ctx.read(project, f"MATCH {pattern} RETURN count(*)")
    return int(rows[0][0])


async def _ingest(services: Services, project: str, paths: list[Path], spec: ChunkSpec = DEFAULT_SPEC) -> object:
    docs = [doc for path in find_files(paths) for doc in parse_file(path)]
    return await IngestService(services.ctx, spec).ingest(project, docs)


def test_each_format_parses(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "docs")
    (folder / "qubits.pdf").write_bytes(minimal_pdf(["Quantum computers use qubits."], "Qubits primer", "Frank"))
    (folder / "ignored.bin").write_bytes(b"\x00")
    by_title = {doc.title: doc for path in find_files([folder]) for doc in parse_file(path)}
    assert set(by_title) == {
        "Notes on GPT-4",
        "tomatoes",
        "Pulling an espresso shot",
        "Transformers explained",
        "Bread at home",
        "Qubits primer",
    }
    md = by_title["Notes on GPT-4"]
    assert md.authors == ("Alice", "Bob") and md.date == "2023-04-01" and not md.text.startswith("---")
    html = by_title["Pulling an espresso shot"]
    assert html.authors == ("Carol",) and "# Espresso" in html.text and "script text" not in html.text
    assert by_title["Bread at home"].authors == ("Erin", "Alice")
    assert by_title["Transformers explained"].url == "https://example.org/transformers"
    assert by_title["Qubits primer"].authors == ("Frank",) and "qubits" in by_title["Qubits primer"].text
    assert by_title["tomatoes"].authors == ()


def test_include_patterns_and_unreadable_files(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "docs")
    assert [p.name for p in find_files([folder], ["*.md"])] == ["gpt4.md"]
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(TextEncodingError):
        parse_file(tmp_path / "latin1.txt")
    (tmp_path / "bad.jsonl").write_text('{"title": "x"}\n', encoding="utf-8")
    with pytest.raises(InvalidParams, match="line 1"):
        parse_file(tmp_path / "bad.jsonl")


def test_chunks_stay_within_the_model_window_and_respect_headings() -> None:
    paragraph = " ".join(f"Sentence {i} is about attention heads and their weights." for i in range(80))
    text = f"# First\n\n{paragraph}\n\n# Second\n\nA short closing section about tokenizers."
    chunks = chunk_text(text, ChunkSpec(size=MAX_CHUNK_TOKENS, overlap=32))
    assert len(chunks) > 3
    for chunk in chunks:
        assert count_tokens(chunk.text) <= MAX_CHUNK_TOKENS
    assert chunks[-1].text.startswith("# Second") and chunks[-1].heading == "Second"
    assert all(c.heading == "First" for c in chunks[:-1])
    # Overlap: each chunk of the long section starts inside the one before it, at a sentence.
    for before, after in itertools.pairwise(chunks[:-1]):
        assert after.text.startswith("Sentence") and after.text[:40] in before.text
    with pytest.raises(InvalidParams):
        ChunkSpec(size=300)


async def test_ingest_stores_articles_authors_chunks_in_order(services: Services, project: str, tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "docs")
    (folder / "qubits.pdf").write_bytes(minimal_pdf(["Quantum computers use qubits."], "Qubits primer", "Frank"))
    report = await _ingest(services, project, [folder], ChunkSpec(size=32, overlap=0))
    assert len(report.created) == 6  # type: ignore[attr-defined]
    assert await _count(services, project, "(:Article)") == 6
    assert await _count(services, project, "(:Author)") == 6  # Alice wrote two articles: one node
    assert await _count(services, project, "(:Author {name: 'Alice'})-[:WROTE]->(:Article)") == 2
    chunks = await _count(services, project, "(:Article)-[:HAS_CHUNK]->(:Chunk)")
    assert chunks == report.chunks  # type: ignore[attr-defined]
    assert await _count(services, project, "(c:Chunk) WHERE c.embedding IS NULL") == 0
    rows = await services.ctx.read(
        project,
        "MATCH (a:Article {title: 'Notes on GPT-4'})-[:HAS_CHUNK]->(c:Chunk) RETURN c.ord, c.id ORDER BY c.ord",
    )
    assert len(rows) >= 2
    links = await services.ctx.read(
        project, "MATCH (a:Chunk)-[:NEXT_CHUNK]->(b:Chunk) WHERE a.article_id = b.article_id RETURN a.id, b.id"
    )
    ids = [row[1] for row in rows]
    assert [[a, b] for a, b in links if a in ids] == [[a, b] for a, b in itertools.pairwise(ids)]


async def test_reingest_is_idempotent_and_a_change_replaces_chunks(
    services: Services, project: str, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "docs")
    first = await _ingest(services, project, [folder])
    chunk_ids = {row[0] for row in await services.ctx.read(project, "MATCH (c:Chunk) RETURN c.id")}
    again = await _ingest(services, project, [folder])
    assert len(again.unchanged) == 5 and not again.created and not again.updated and again.chunks == 0  # type: ignore[attr-defined]
    assert {row[0] for row in await services.ctx.read(project, "MATCH (c:Chunk) RETURN c.id")} == chunk_ids
    assert first.chunks == len(chunk_ids)  # type: ignore[attr-defined]

    (folder / "tomatoes.txt").write_text("Peppers want even more heat than tomatoes.\n", encoding="utf-8")
    changed = await _ingest(services, project, [folder])
    assert changed.updated == ["tomatoes"] and len(changed.unchanged) == 4  # type: ignore[attr-defined]
    texts = [row[0] for row in await services.ctx.read(project, "MATCH (c:Chunk) RETURN c.text")]
    assert any("Peppers" in t for t in texts) and not any("Pinch out" in t for t in texts)
    assert await _count(services, project, "(:Article {title: 'tomatoes'})") == 1


async def test_delete_removes_articles_chunks_and_orphan_authors(
    services: Services, project: str, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "docs")
    await _ingest(services, project, [folder])
    service = IngestService(services.ctx)
    gpt4 = str((folder / "gpt4.md").resolve())
    report = await service.delete(project, [gpt4])
    assert report.deleted == ["Notes on GPT-4"]
    assert await _count(services, project, "(:Article {title: 'Notes on GPT-4'})") == 0
    assert await _count(services, project, "(:Author {name: 'Bob'})") == 0  # wrote nothing else
    assert await _count(services, project, "(:Author {name: 'Alice'})") == 1  # still wrote the bread
    jsonl = str((folder / "papers.jsonl").resolve())
    assert sorted((await service.delete(project, [], [f"{jsonl}#"])).deleted) == [
        "Bread at home",
        "Transformers explained",
    ]
    assert await _count(services, project, "(:Chunk)") == await _count(services, project, "(:Article)-[:HAS_CHUNK]->()")


async def test_chunks_mention_known_entities_and_retrieval_reports_them(services: Services, project: str) -> None:
    await services.entities.create(project, name="OpenAI", type_="organization")
    await services.entities.create(project, name="Sam", type_="person")
    doc = Document("Labs", ("Alice",), "OpenAI released a new model. Samuel was not involved.", "test:labs")
    report = await IngestService(services.ctx).ingest(project, [doc])
    assert report.mentions == 1  # "Sam" is not a whole word of "Samuel"
    rows = await services.ctx.read(project, "MATCH (:Chunk)-[:MENTIONS]->(e:Entity) RETURN e.name")
    assert rows == [["OpenAI"]]
    result = await retrieve(services, project, "Which lab released a new model?", 3)
    assert result["results"][0]["entities"] == ["OpenAI"]


async def test_retrieval_gives_neighbouring_chunks_as_context(services: Services, project: str) -> None:
    sections = [f"## Part {i}\n\n" + f"Topic {i} covers " + " ".join(["detail"] * 20) for i in range(3)]
    sections[1] = "## Part 1\n\nThe lighthouse keeper logged every passing ship in a leather book."
    doc = Document("Sections", ("Ann", "Ben"), "\n\n".join(sections), "test:sections")
    await IngestService(services.ctx).ingest(project, [doc])
    result = await retrieve(services, project, "lighthouse keeper ship log", 1)
    [top] = result["results"]
    assert "lighthouse" in top["chunk_text"] and top["author"] == "Ann, Ben"
    assert top["context"]["previous"].startswith("## Part 0") and top["context"]["next"].startswith("## Part 2")


async def test_entity_search_does_not_return_chunks(services: Services, project: str) -> None:
    await IngestService(services.ctx).ingest(project, [Document("Owls", (), "Owls hunt at night.", "test:owls")])
    assert await services.search.entities(project, "owls hunt at night", 5) == []
    assert [hit.node_id for hit in await services.search.search(project, "owls hunt at night", "chunks", 5)]
