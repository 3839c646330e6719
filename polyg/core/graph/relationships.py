"""Relationships between entities (spec 002 section 2): real relationship types, validated names.

One rule for duplicates, shared with memory-compat: an edge with the same source, target and
type as an existing one is that edge (creating it again returns the existing one). Each type's
`id` has a range index (`polyg.store.schema`), so an edge is found by id through the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.model import Edge, Node
from polyg.errors import NotFound
from polyg.names import check_type_name, new_id
from polyg.store.names import RelType
from polyg.store.queries import edge_reads as edge_reads_q
from polyg.store.queries import edges as q
from polyg.store.queries.edges import between_entities_by_id as by_id
from polyg.store.queries.edges import delete_between_entities_by_id as delete_by_id
from polyg.store.schema import relationship_types

__all__ = ["Direction", "Neighbour", "RelationshipService", "by_id", "delete_by_id"]

Direction = Literal["incoming", "outgoing", "both"]


@dataclass(frozen=True)
class Neighbour:
    """An entity next to another, the edge between them, and that edge's direction seen from
    the entity asked about."""

    node: Node
    edge: Edge
    direction: Literal["incoming", "outgoing"]


class RelationshipService:
    def __init__(
        self, ctx: GraphContext, reltypes: RelTypeService | None = None, writer: EdgeWriter | None = None
    ) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)
        self.writer = writer or EdgeWriter(ctx, self.reltypes)

    async def create(self, project: str, *, source_id: str, target_id: str, type_: str, description: str = "") -> Edge:
        rel_type = RelType(check_type_name(type_))
        limits.identifier(source_id, "source_id")
        limits.identifier(target_id, "target_id")
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        if not await q.endpoints_exist(self.ctx, project, source_id, target_id):
            raise NotFound("Source or Target entity not found.")
        row = {"id": new_id("rel"), "a": source_id, "b": target_id, "type": rel_type, "description": description}
        rows = await self.writer.create(project, [row], if_absent="type", returns="r.id, r.description")
        if not rows:
            # An edge of this type between these entities already is returned instead of a second
            # one: the check ran inside the write; this read finds the edge that stopped it.
            rows = await q.existing(self.ctx, project, rel_type, source_id, target_id)
        if not rows:
            raise NotFound("Source or Target entity not found.")
        rel_id, stored_description = rows[0]
        return Edge(rel_id, rel_type, source_id, target_id, stored_description or "")

    async def _around(
        self, project: str, entity_id: str, type_: str | None, direction: str, limit: int, returns: str
    ) -> list[list[Any]]:
        limits.limit(limit)
        limits.identifier(entity_id, "entity_id")
        if type_ is not None:
            limits.identifier(type_, "relationship_type")
        rows = await edge_reads_q.around(self.ctx, project, entity_id, type_, direction, limit, returns)
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        return [row for row in rows if row[0] is not None]

    async def list_for(
        self, project: str, entity_id: str, *, type_: str | None, direction: str, limit: int
    ) -> list[Edge]:
        rows = await self._around(project, entity_id, type_, direction, limit, edge_reads_q.LISTED)
        return [Edge(rid, t, src, dst, d or "") for rid, src, dst, t, d in rows]

    async def related(
        self, project: str, entity_id: str, *, type_: str | None, direction: str, limit: int
    ) -> list[Neighbour]:
        rows = await self._around(project, entity_id, type_, direction, limit, edge_reads_q.RELATED)
        return [
            Neighbour(Node(oid, "Entity", name=name, type=otype), Edge(rid, t, src, dst, d or ""), way)
            for rid, src, dst, t, d, way, oid, name, otype in rows
        ]

    async def type_of(self, project: str, relationship_id: str) -> RelType | None:
        """The type of the relationship with this id, looked up through each type's id index
        (one query: a UNION of index lookups, instead of a scan of every edge)."""
        types = sorted(await relationship_types(self.ctx.store, project))
        return await q.type_of(self.ctx, project, [RelType(t) for t in types], relationship_id)

    async def delete(self, project: str, relationship_id: str) -> None:
        limits.identifier(relationship_id, "relationship_id")
        rel_type = await self.type_of(project, relationship_id)
        if rel_type is None:
            raise NotFound(f"Relationship {relationship_id} not found.")
        if await q.delete_between_entities(self.ctx, project, rel_type, relationship_id) == 0:
            raise NotFound(f"Relationship {relationship_id} not found.")
