"""Cypher for documents (spec 001): articles, their authors and chunks; what graph retrieval
reads around the chunks search found.

`(:Author)-[:WROTE]->(:Article)-[:HAS_CHUNK]->(:Chunk)`, chunks of an article linked in order by
`NEXT_CHUNK`, and `(:Chunk)-[:MENTIONS]->(:Entity)` for the entities a chunk names. An article is
known by its `source` (a file path, a JSONL line's url or title); `content_hash` is set only once
its chunks and their vectors are stored, so an ingestion cut short is redone, not half-kept.
"""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import ARTICLE, AUTHOR, CHUNK, ENTITY, HAS_CHUNK, MENTIONS, NEXT_CHUNK, WROTE
from polyg.store.queries import Runner

# Range indexes of the document labels that are not embeddable (the chunk's come from the
# embeddable registry): articles are found by source and id, authors by name.
INDEXES: dict[str, tuple[str, ...]] = {ARTICLE: ("id", "source"), AUTHOR: ("id", "name")}


# An author is kept only while it wrote an article.
_DROP_ORPHAN_AUTHORS = f"MATCH (au:{AUTHOR}) WHERE NOT (au)-[:{WROTE}]->(:{ARTICLE}) DELETE au"


async def article_hashes(runner: Runner, project: str, sources: list[str]) -> list[Row]:
    """[source, id, content_hash] of the articles known by these sources."""
    return await runner.read(
        project,
        f"UNWIND $sources AS s MATCH (a:{ARTICLE} {{source: s}}) RETURN a.source, a.id, a.content_hash",
        {"sources": sources},
    )


async def replace_articles(runner: Runner, project: str, articles: list[dict[str, Any]]) -> list[Row]:
    """Create or update articles (source, id, title, url, date, authors, now) with their authors,
    dropping the chunks and authorship they had; returns [source, id] of each."""
    rows = await runner.write(
        project,
        "UNWIND $articles AS a "
        f"MERGE (art:{ARTICLE} {{source: a.source}}) ON CREATE SET art.id = a.id, art.created_at = a.now "
        "SET art.title = a.title, art.url = a.url, art.date = a.date, art.updated_at = a.now, "
        "art.content_hash = NULL "
        f"WITH art, a OPTIONAL MATCH (art)-[:{HAS_CHUNK}]->(old:{CHUNK}) "
        "WITH art, a, collect(old) AS olds FOREACH (c IN olds | DETACH DELETE c) "
        f"WITH art, a OPTIONAL MATCH (:{AUTHOR})-[w:{WROTE}]->(art) "
        "WITH art, a, collect(w) AS ws FOREACH (x IN ws | DELETE x) "
        "WITH art, a "
        f"FOREACH (name IN a.authors | MERGE (au:{AUTHOR} {{name: name}}) "
        "ON CREATE SET au.id = 'au_' + replace(randomUUID(), '-', ''), au.created_at = a.now "
        f"MERGE (au)-[:{WROTE}]->(art)) "
        "RETURN a.source, art.id",
        {"articles": articles},
    )
    await runner.write(project, _DROP_ORPHAN_AUTHORS)
    return rows


async def create_chunks(runner: Runner, project: str, chunks: list[dict[str, Any]]) -> None:
    """Chunks (id, article, ord, text, heading, tokens, now) under their articles, and the
    `NEXT_CHUNK` link from each chunk's predecessor (`prev`, when it has one)."""
    await runner.write(
        project,
        f"UNWIND $chunks AS c MATCH (art:{ARTICLE} {{id: c.article}}) "
        f"CREATE (art)-[:{HAS_CHUNK} {{ord: c.ord}}]->(k:{CHUNK} {{id: c.id, article_id: c.article, ord: c.ord, "
        "text: c.text, heading: c.heading, tokens: c.tokens, created_at: c.now})",
        {"chunks": chunks},
    )
    links = [[c["prev"], c["id"]] for c in chunks if c.get("prev")]
    if links:
        await runner.write(
            project,
            f"UNWIND $links AS l MATCH (a:{CHUNK} {{id: l[0]}}), (b:{CHUNK} {{id: l[1]}}) "
            f"CREATE (a)-[:{NEXT_CHUNK}]->(b)",
            {"links": links},
        )


async def link_mentions(runner: Runner, project: str, mentions: list[list[str]]) -> None:
    """[chunk id, entity id] pairs as `MENTIONS` edges."""
    if mentions:
        await runner.write(
            project,
            f"UNWIND $m AS m MATCH (c:{CHUNK} {{id: m[0]}}), (e:{ENTITY} {{id: m[1]}}) CREATE (c)-[:{MENTIONS}]->(e)",
            {"m": mentions},
        )


async def chunks_naming(runner: Runner, project: str, entities: list[dict[str, str]], cap: int) -> list[Row]:
    """[entity id, chunk id, chunk text] of the chunks whose text holds an entity's `name` as
    written and, by the full-text index, its words as a `phrase`: at most `cap` per entity,
    best full-text score first."""
    return await runner.read(
        project,
        "UNWIND $entities AS e "
        f"CALL {{ WITH e CALL db.idx.fulltext.queryNodes('{CHUNK}', e.phrase) YIELD node, score "
        "WITH node, score WHERE node.text CONTAINS e.name "
        "RETURN node ORDER BY score DESC, id(node) LIMIT $cap } "
        "RETURN e.id, node.id, node.text",
        {"entities": entities, "cap": cap},
    )


async def relink_mentions(runner: Runner, project: str, entity_ids: list[str], links: list[list[str]]) -> None:
    """The entities' `MENTIONS` links after a change of their names: links from chunks whose
    text no longer holds the name are dropped, [chunk id, entity id] `links` are made (where
    they are not already)."""
    if entity_ids:
        await runner.write(
            project,
            f"UNWIND $ids AS id MATCH (c:{CHUNK})-[m:{MENTIONS}]->(e:{ENTITY} {{id: id}}) "
            "WHERE NOT c.text CONTAINS e.name DELETE m",
            {"ids": entity_ids},
        )
    if links:
        await runner.write(
            project,
            f"UNWIND $m AS m MATCH (c:{CHUNK} {{id: m[0]}}), (e:{ENTITY} {{id: m[1]}}) MERGE (c)-[:{MENTIONS}]->(e)",
            {"m": links},
        )


async def mark_ingested(runner: Runner, project: str, hashes: list[list[str]]) -> None:
    """[article id, content hash]: the article's chunks and vectors are all stored."""
    await runner.write(
        project, f"UNWIND $h AS h MATCH (a:{ARTICLE} {{id: h[0]}}) SET a.content_hash = h[1]", {"h": hashes}
    )


async def delete_articles(runner: Runner, project: str, sources: list[str], prefixes: list[str]) -> list[Row]:
    """Articles whose source is one of `sources` or starts with one of `prefixes`, with their
    chunks; returns [source, title] of each."""
    found = await runner.read(
        project,
        f"MATCH (a:{ARTICLE}) WHERE a.source IN $sources OR any(p IN $prefixes WHERE a.source STARTS WITH p) "
        "RETURN a.id, a.source, a.title",
        {"sources": sources, "prefixes": prefixes},
    )
    if not found:
        return []
    await runner.write(
        project,
        f"UNWIND $ids AS id MATCH (a:{ARTICLE} {{id: id}}) OPTIONAL MATCH (a)-[:{HAS_CHUNK}]->(c:{CHUNK}) "
        "WITH a, collect(c) AS cs FOREACH (c IN cs | DETACH DELETE c) DETACH DELETE a",
        {"ids": [row[0] for row in found]},
    )
    await runner.write(project, _DROP_ORPHAN_AUTHORS)
    return [[row[1], row[2]] for row in found]


async def expand_chunks(runner: Runner, project: str, chunk_ids: list[str]) -> list[Row]:
    """Around each chunk: its text and place, its article, the article's authors, the entities
    it mentions, and the texts of the chunks before and after it."""
    return await runner.read(
        project,
        f"UNWIND $ids AS id MATCH (art:{ARTICLE})-[:{HAS_CHUNK}]->(c:{CHUNK} {{id: id}}) "
        f"OPTIONAL MATCH (au:{AUTHOR})-[:{WROTE}]->(art) "
        "WITH c, art, collect(DISTINCT au.name) AS authors "
        f"OPTIONAL MATCH (c)-[:{MENTIONS}]->(e:{ENTITY}) "
        "WITH c, art, authors, collect(DISTINCT e.name) AS entities "
        f"OPTIONAL MATCH (before:{CHUNK})-[:{NEXT_CHUNK}]->(c) "
        f"OPTIONAL MATCH (c)-[:{NEXT_CHUNK}]->(after:{CHUNK}) "
        "RETURN c.id, c.text, c.ord, c.heading, art.id, art.title, art.url, art.date, authors, entities, "
        "before.text, after.text",
        {"ids": chunk_ids},
    )


async def chunk_count(runner: Runner, project: str) -> int:
    rows = await runner.read(project, f"MATCH (c:{CHUNK}) RETURN count(c)")
    return int(rows[0][0]) if rows else 0
