"""Cypher that reads the relationships around entities: listed from one entity (kg), between a
set of entities (memory-compat's relations, exploration's knowledge), between two entities by
type and text, and a concept's similarity and representation links (the semantic view)."""

from __future__ import annotations

from polyg.errors import InvalidParams
from polyg.store.falkor import Row
from polyg.store.queries import OWN, SHARED, Runner, knowledge
from polyg.store.queries.edges import REL_TEXT

_PATTERNS: dict[str, str] = {
    "outgoing": "(e)-[r]->(o:Entity)",
    "incoming": "(e)<-[r]-(o:Entity)",
    "both": "(e)-[r]-(o:Entity)",
}


# What `around` returns: for listing relationships, and for the entities at their other end.
LISTED = "DISTINCT r.id, startNode(r).id, endNode(r).id, type(r), r.description"
RELATED = (
    "DISTINCT r.id, startNode(r).id, endNode(r).id, type(r), r.description, "
    "CASE WHEN startNode(r) = e THEN 'outgoing' ELSE 'incoming' END, o.id, o.name, o.type"
)


def _pattern(direction: str) -> str:
    try:
        return _PATTERNS[direction]
    except KeyError:
        raise InvalidParams("direction must be 'incoming', 'outgoing' or 'both'.") from None


async def around(
    runner: Runner, project: str, entity_id: str, type_: str | None, direction: str, limit: int, returns: str
) -> list[Row]:
    """`returns` (LISTED or RELATED) for the relationships of the entity, oldest first; no row
    if the entity does not exist, one row of nulls if it has none."""
    return await runner.read(
        project,
        f"MATCH (e:Entity {{id: $id}}) OPTIONAL MATCH {_pattern(direction)} WHERE $type IS NULL OR type(r) = $type "
        f"WITH e, r, o ORDER BY r.created_at, r.id LIMIT $limit RETURN {returns}",
        {"id": entity_id, "type": type_, "limit": limit},
    )


async def relations_touching(runner: Runner, project: str, ids: list[str], limit: int) -> list[Row]:
    """[from name, to name, relation text] of relations between entities with an endpoint
    among `ids` (observations are not relations), oldest first, at most `limit`."""
    return await runner.read(
        project,
        "UNWIND $ids AS id MATCH (e:Entity {id: id})-[r]-(:Entity) "
        f"WITH DISTINCT r RETURN startNode(r).name, endNode(r).name, {REL_TEXT} "
        "ORDER BY r.created_at, r.id LIMIT $limit",
        {"ids": ids, "limit": limit},
    )


async def relation_between(run: Runner, project: str, a: str, b: str, rel_type: str, text: str) -> list[Row]:
    """Id of a relationship of that type and text from a to b (`rel_type` checked by the caller)."""
    return await run.read(
        project,
        f"MATCH (:Entity {{id: $a}})-[r:{rel_type}]->(:Entity {{id: $b}}) "
        "WHERE coalesce(r.label, type(r)) = $text RETURN r.id, r.created_at LIMIT 1",
        {"a": a, "b": b, "text": text},
    )


HIDDEN = ["embedding", "head_embedding", "rev", "vec_rev", "id", "created_at", "updated_at"]


async def knowledge_touching(runner: Runner, project: str, ids: list[str], cap: int) -> list[Row]:
    """[type, source id, target id, target name, user properties] of the relationships touching
    these entities (polyg's own types left out), at most `cap`."""
    return await runner.read(
        project,
        f"UNWIND $ids AS i MATCH (e:Entity {{id: i}})-[r]-(o:Entity) WHERE {knowledge('r', 'e', 'o')} "
        "WITH DISTINCT r, startNode(r) AS a, endNode(r) AS b "
        "RETURN type(r), a.id, b.id, b.name, "
        "CASE WHEN size([k IN keys(r) WHERE NOT k IN $hidden]) = 0 THEN NULL "
        "ELSE properties(r) END "
        "ORDER BY type(r), a.id, b.id LIMIT $cap",
        {"ids": ids, "own": OWN, "shared": SHARED, "hidden": HIDDEN, "cap": cap},
    )


async def concept_neighbours(run: Runner, project: str, ids: list[str], per_concept: int) -> list[Row]:
    """(concept id, [[name, score], ...] similar concepts best first, [names it represents])."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (c:Entity {id: i}) "
        "OPTIONAL MATCH (c)-[s:SIMILAR_TO]-(o:Entity) WITH c, s, o ORDER BY s.score DESC "
        "WITH c, collect(CASE WHEN o IS NULL THEN NULL ELSE [o.name, s.score] END)[0..$n] AS similar "
        "OPTIONAL MATCH (c)-[:REPRESENTS]->(x:Entity) RETURN c.id, similar, collect(x.name)",
        {"ids": ids, "n": per_concept},
    )
