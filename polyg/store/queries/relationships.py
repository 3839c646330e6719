"""Cypher for relationships between entities addressed by id (the `kg` toolset; created by
`polyg.core.graph.edge_writer`): the one a create found, listed around an entity, found and deleted by
id through each type's `id` index."""

from __future__ import annotations

from polyg.errors import InvalidParams
from polyg.store.falkor import Row
from polyg.store.names import RelType
from polyg.store.queries import Runner

_PATTERNS: dict[str, str] = {
    "outgoing": "(e)-[r]->(o:Entity)",
    "incoming": "(e)<-[r]-(o:Entity)",
    "both": "(e)-[r]-(o:Entity)",
}
ENDPOINTS = "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) "
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


def by_id(rel_type: RelType) -> str:
    """Matches `r`, the relationship between entities of this type with id `$id`, through the
    type's id index. The endpoints are checked after the match: labels on them in the pattern
    make FalkorDB scan every entity and probe the index from each (10 s at 100k entities)."""
    return f"MATCH ()-[r:{rel_type} {{id: $id}}]->() WITH r WHERE startNode(r):Entity AND endNode(r):Entity "


def delete_by_id(rel_type: RelType) -> str:
    return by_id(rel_type) + "WITH r, r.id AS gone DELETE r RETURN count(gone)"


async def endpoints_exist(runner: Runner, project: str, source_id: str, target_id: str) -> bool:
    return bool(await runner.read(project, ENDPOINTS + "RETURN a.id LIMIT 1", {"src": source_id, "dst": target_id}))


async def existing(runner: Runner, project: str, rel_type: RelType, source_id: str, target_id: str) -> list[Row]:
    """[id, description] of the oldest edge of this type without free text (that would be
    memory-compat's "works at" stored as works_at) between these entities: the one that stopped
    a create (`polyg.core.graph.edge_writer`, "type")."""
    return await runner.read(
        project,
        ENDPOINTS + f"MATCH (a)-[x:{rel_type}]->(b) WHERE x.label IS NULL "
        "RETURN x.id, x.description ORDER BY x.created_at, x.id LIMIT 1",
        {"src": source_id, "dst": target_id},
    )


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


async def type_of(runner: Runner, project: str, types: list[RelType], relationship_id: str) -> RelType | None:
    """The type of the relationship with this id among `types` (one query: a UNION of index
    lookups, instead of a scan of every edge)."""
    if not types:
        return None
    lookup = " UNION ALL ".join(by_id(t) + "RETURN type(r) AS t" for t in types)
    rows = await runner.read(project, lookup, {"id": relationship_id})
    return RelType(rows[0][0]) if rows else None


async def delete(runner: Runner, project: str, rel_type: RelType, relationship_id: str) -> int:
    rows = await runner.write(project, delete_by_id(rel_type), {"id": relationship_id})
    return int(rows[0][0]) if rows else 0
