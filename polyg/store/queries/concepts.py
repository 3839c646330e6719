"""Concepts (entities of type `concept`), their similarity links `SIMILAR_TO {score}` and what
they represent `REPRESENTS` (the semantic view; both created by `polyg.store.queries.edges`);
details of search hits."""

from __future__ import annotations

from polyg.store.falkor import Row, VectorParam
from polyg.store.queries import Runner


async def similar_concepts(
    run: Runner, project: str, vector: VectorParam, concept_id: str, k: int, min_score: float
) -> list[Row]:
    """(id, name, score) of other concepts at cosine similarity `min_score` or more, best first."""
    return await run.read(
        project,
        "CALL db.idx.vector.queryNodes('Entity', 'embedding', $k, vecf32($v)) YIELD node, score "
        "WITH node, 1.0 - score AS sim WHERE node.type = 'concept' AND node.id <> $id AND sim >= $min "
        "RETURN node.id, node.name, sim ORDER BY sim DESC",
        {"k": k, "v": vector, "id": concept_id, "min": min_score},
    )


async def entity_named(run: Runner, project: str, name: str) -> list[Row]:
    """[id, summary, type] of an entity of that name, a concept first."""
    return await run.read(
        project,
        "MATCH (e:Entity {name: $name}) RETURN e.id, e.summary, e.type "
        "ORDER BY CASE WHEN e.type = 'concept' THEN 0 ELSE 1 END, e.created_at LIMIT 1",
        {"name": name},
    )


async def neighbours(run: Runner, project: str, ids: list[str], per_concept: int) -> list[Row]:
    """(concept id, [[name, score], ...] similar concepts best first, [names it represents])."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (c:Entity {id: i}) "
        "OPTIONAL MATCH (c)-[s:SIMILAR_TO]-(o:Entity) WITH c, s, o ORDER BY s.score DESC "
        "WITH c, collect(CASE WHEN o IS NULL THEN NULL ELSE [o.name, s.score] END)[0..$n] AS similar "
        "OPTIONAL MATCH (c)-[:REPRESENTS]->(x:Entity) RETURN c.id, similar, collect(x.name)",
        {"ids": ids, "n": per_concept},
    )


async def entity_hits(run: Runner, project: str, ids: list[str], vector: VectorParam | None) -> list[Row]:
    """(id, name, type, summary, cosine similarity to the query or null) of entities; no
    similarity without a `vector` (the query could not be embedded)."""
    similarity = "CASE WHEN e.embedding IS NULL THEN NULL ELSE 1.0 - vec.cosineDistance(e.embedding, vecf32($v)) END"
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) "
        f"RETURN e.id, e.name, e.type, e.summary, {similarity if vector else 'NULL'}",
        {"ids": ids, "v": vector},
    )


async def event_hits(run: Runner, project: str, vector: VectorParam, k: int) -> list[Row]:
    """(id, description, occurred_at, cosine similarity) of the `k` nearest events."""
    return await run.read(
        project,
        "CALL db.idx.vector.queryNodes('Event', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id, node.description, node.occurred_at, 1.0 - score ORDER BY score",
        {"k": k, "v": vector},
    )
