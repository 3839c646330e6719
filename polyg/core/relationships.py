"""Relationships between entities (spec 002 section 2): real relationship types, validated names.

One rule for duplicates, shared with memory-compat: an edge with the same source, target and
type as an existing one is that edge (creating it again returns the existing one). Each type's
`id` has a range index (`polyg.store.schema`), so an edge is found by id through the index.
"""

from __future__ import annotations

from typing import Any, Literal

from polyg.core import limits
from polyg.core.entities import exists
from polyg.core.graph import GraphContext
from polyg.core.reltypes import RelTypeService
from polyg.errors import InvalidParams, NotFound
from polyg.names import check_type_name, new_id, now_iso
from polyg.store.names import RelType
from polyg.store.schema import relationship_types

Direction = Literal["incoming", "outgoing", "both"]

_PATTERNS: dict[str, str] = {
    "outgoing": "(e)-[r]->(o:Entity)",
    "incoming": "(e)<-[r]-(o:Entity)",
    "both": "(e)-[r]-(o:Entity)",
}


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


class RelationshipService:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService | None = None) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)

    async def create(
        self, project: str, *, source_id: str, target_id: str, type_: str, description: str = ""
    ) -> dict[str, Any]:
        rel_type = RelType(check_type_name(type_))
        limits.identifier(source_id, "source_id")
        limits.identifier(target_id, "target_id")
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        ends = {"src": source_id, "dst": target_id}
        if not await exists(self.ctx, project, "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) RETURN a.id", ends):
            raise NotFound("Source or Target entity not found.")
        await self.reltypes.ensure(project, [rel_type])
        # The type is interpolated (Cypher cannot parameterise it); RelType made it safe. An edge
        # of this type between these entities already (without a free-text label: that would be
        # memory-compat's "works at" stored as works_at) is returned instead of a second one.
        rows = await self.ctx.write(
            project,
            "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) "
            f"OPTIONAL MATCH (a)-[x:{rel_type}]->(b) WHERE x.label IS NULL "
            "WITH a, b, x ORDER BY x.created_at, x.id WITH a, b, collect(x)[0] AS x "
            "FOREACH (_ IN CASE WHEN x IS NULL THEN [1] ELSE [] END | "
            f"CREATE (a)-[:{rel_type} {{id: $id, description: $description, created_at: $now}}]->(b)) "
            "RETURN coalesce(x.id, $id), coalesce(x.description, $description)",
            {"src": source_id, "dst": target_id, "id": new_id("rel"), "description": description, "now": now_iso()},
        )
        if not rows:
            raise NotFound("Source or Target entity not found.")
        rel_id, stored_description = rows[0]
        return {
            "id": rel_id,
            "source_id": source_id,
            "target_id": target_id,
            "type": rel_type,
            "description": stored_description or "",
        }

    async def _around(
        self, project: str, entity_id: str, type_: str | None, direction: str, limit: int, returns: str
    ) -> list[list[Any]]:
        limits.limit(limit)
        limits.identifier(entity_id, "entity_id")
        if type_ is not None:
            limits.identifier(type_, "relationship_type")
        pattern = _pattern(direction)
        rows = await self.ctx.read(
            project,
            f"MATCH (e:Entity {{id: $id}}) OPTIONAL MATCH {pattern} WHERE $type IS NULL OR type(r) = $type "
            f"WITH e, r, o ORDER BY r.created_at, r.id LIMIT $limit RETURN {returns}",
            {"id": entity_id, "type": type_, "limit": limit},
        )
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        return [row for row in rows if row[0] is not None]

    async def list_for(
        self, project: str, entity_id: str, *, type_: str | None, direction: str, limit: int
    ) -> list[dict[str, Any]]:
        rows = await self._around(
            project,
            entity_id,
            type_,
            direction,
            limit,
            "DISTINCT r.id, startNode(r).id, endNode(r).id, type(r), r.description",
        )
        return [
            {"id": rid, "source_id": src, "target_id": dst, "type": t, "description": d or ""}
            for rid, src, dst, t, d in rows
        ]

    async def related(
        self, project: str, entity_id: str, *, type_: str | None, direction: str, limit: int
    ) -> list[dict[str, Any]]:
        rows = await self._around(
            project,
            entity_id,
            type_,
            direction,
            limit,
            "DISTINCT r.id, type(r), CASE WHEN startNode(r) = e THEN 'outgoing' ELSE 'incoming' END, "
            "o.id, o.name, o.type",
        )
        return [
            {
                "entity": {"id": oid, "name": name, "type": otype},
                "relationship": {"id": rid, "type": t, "direction": d},
            }
            for rid, t, d, oid, name, otype in rows
        ]

    async def type_of(self, project: str, relationship_id: str) -> RelType | None:
        """The type of the relationship with this id, looked up through each type's id index
        (one query: a UNION of index lookups, instead of a scan of every edge)."""
        types = sorted(await relationship_types(self.ctx.store, project))
        if not types:
            return None
        lookup = " UNION ALL ".join(by_id(t) + "RETURN type(r) AS t" for t in map(RelType, types))
        rows = await self.ctx.read(project, lookup, {"id": relationship_id})
        return RelType(rows[0][0]) if rows else None

    async def delete(self, project: str, relationship_id: str) -> None:
        limits.identifier(relationship_id, "relationship_id")
        rel_type = await self.type_of(project, relationship_id)
        if rel_type is None:
            raise NotFound(f"Relationship {relationship_id} not found.")
        rows = await self.ctx.write(project, delete_by_id(rel_type), {"id": relationship_id})
        if rows[0][0] == 0:
            raise NotFound(f"Relationship {relationship_id} not found.")
