"""Relationships between entities (spec 002 section 2): real relationship types, validated names."""

from __future__ import annotations

from typing import Any, Literal

from polyg.core import limits
from polyg.core.entities import exists
from polyg.core.graph import GraphContext
from polyg.core.reltypes import RelTypeService
from polyg.errors import InvalidParams, NotFound
from polyg.names import check_type_name, new_id, now_iso

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


class RelationshipService:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService | None = None) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)

    async def create(
        self, project: str, *, source_id: str, target_id: str, type_: str, description: str = ""
    ) -> dict[str, Any]:
        check_type_name(type_)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        ends = {"src": source_id, "dst": target_id}
        if not await exists(self.ctx, project, "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) RETURN a.id", ends):
            raise NotFound("Source or Target entity not found.")
        await self.reltypes.ensure(project, [type_])
        rel_id = new_id("rel")
        # The type is interpolated (Cypher cannot parameterise it); check_type_name made it safe.
        rows = await self.ctx.write(
            project,
            "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) "
            f"CREATE (a)-[r:{type_} {{id: $id, description: $description, created_at: $now}}]->(b) "
            "RETURN r.id",
            {"src": source_id, "dst": target_id, "id": rel_id, "description": description, "now": now_iso()},
        )
        if not rows:
            raise NotFound("Source or Target entity not found.")
        return {
            "id": rel_id,
            "source_id": source_id,
            "target_id": target_id,
            "type": type_,
            "description": description,
        }

    async def _around(
        self, project: str, entity_id: str, type_: str | None, direction: str, limit: int, returns: str
    ) -> list[list[Any]]:
        limits.limit(limit)
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

    async def delete(self, project: str, relationship_id: str) -> None:
        if not await exists(
            self.ctx, project, "MATCH (:Entity)-[r {id: $id}]->(:Entity) RETURN r.id", {"id": relationship_id}
        ):
            raise NotFound(f"Relationship {relationship_id} not found.")
        rows = await self.ctx.write(
            project,
            "MATCH (:Entity)-[r {id: $id}]->(:Entity) WITH r, r.id AS gone DELETE r RETURN count(gone)",
            {"id": relationship_id},
        )
        if rows[0][0] == 0:
            raise NotFound(f"Relationship {relationship_id} not found.")
