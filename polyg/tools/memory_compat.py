"""The `memory-compat` toolset: the official MCP memory server's tools, names and shapes.

A client configured for that server works unchanged; what it gets in addition is a real
database and ranked hybrid search. Entities here are the `kg` toolset's entities: one
graph, two vocabularies (names here, ids there).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from polyg.core import limits
from polyg.core.app import Services
from polyg.errors import PayloadTooLarge
from polyg.tools.registry import Params, Toolset

memory_compat = Toolset("memory-compat")

READ_GRAPH_DEFAULT = 100


class Item(BaseModel):
    # Validated by alias only: `from_` is the Python name of `from`, not a second accepted key.
    model_config = ConfigDict(extra="forbid", strict=True)


class Entity(Item):
    name: str = Field(description="The name of the entity")
    entityType: str = Field(description="The type of the entity")
    observations: list[str] = Field(
        default_factory=list, description="An array of observation contents associated with the entity"
    )


class Relation(Item):
    from_: str = Field(alias="from", description="The name of the entity where the relation starts")
    to: str = Field(description="The name of the entity where the relation ends")
    relationType: str = Field(description="The type of the relation")


class ObservationAddition(Item):
    entityName: str = Field(description="The name of the entity to add the observations to")
    contents: list[str] = Field(description="An array of observation contents to add")


class ObservationDeletion(Item):
    entityName: str = Field(description="The name of the entity containing the observations")
    observations: list[str] = Field(description="An array of observations to delete")


# --- results -------------------------------------------------------------------------------


class EntitiesOut(BaseModel):
    entities: list[Entity]


class RelationsOut(BaseModel):
    relations: list[Relation]


class AddedObservations(BaseModel):
    entityName: str
    addedObservations: list[str]


class ObservationsOut(BaseModel):
    results: list[AddedObservations]


class Done(BaseModel):
    success: bool
    message: str


class GraphOut(BaseModel):
    entities: list[Entity]
    relations: list[Relation]
    relationsTruncated: bool = Field(
        default=False,
        description="True when the entities have more relations than one result carries (10,000).",
    )
    nextOffset: int | None = Field(
        default=None, description="Offset of the next page when more entities follow (read_graph)."
    )


# --- parameters ----------------------------------------------------------------------------


class CreateEntities(Params):
    entities: list[Entity]


class CreateRelations(Params):
    relations: list[Relation]


class AddObservations(Params):
    observations: list[ObservationAddition]


class DeleteEntities(Params):
    entityNames: list[str] = Field(description="An array of entity names to delete")


class DeleteObservations(Params):
    deletions: list[ObservationDeletion]


class DeleteRelations(Params):
    relations: list[Relation] = Field(description="An array of relations to delete")


class ReadGraph(Params):
    limit: int = Field(default=READ_GRAPH_DEFAULT, ge=1, le=1000, description="Entities per page (1-1000).")
    offset: int = Field(default=0, ge=0, description="Entities to skip; pass nextOffset to read on.")


class SearchNodes(Params):
    query: str = Field(description="Words, a phrase or a name to look for")
    limit: int = Field(default=10, ge=1, le=100, description="Maximum number of entities (1-100).")


class OpenNodes(Params):
    names: list[str] = Field(description="An array of entity names to retrieve")


def _relation(rel: Relation) -> dict[str, str]:
    return {"from": rel.from_, "to": rel.to, "relationType": rel.relationType}


async def _graph(s: Services, project: str, ids: list[str], next_offset: int | None = None) -> dict[str, Any]:
    # Two independent reads: one round trip's wait instead of two.
    entities, (relations, truncated) = await asyncio.gather(
        s.named.entities(project, ids), s.named.relations_touching(project, ids)
    )
    graph: dict[str, Any] = {"entities": entities, "relations": relations}
    if truncated:
        graph["relationsTruncated"] = True
    if next_offset is not None:
        graph["nextOffset"] = next_offset
    return graph


# --- tools ---------------------------------------------------------------------------------


@memory_compat.tool(CreateEntities, EntitiesOut, title="Create Entities")
async def create_entities(s: Services, p: CreateEntities) -> dict[str, Any]:
    """Create multiple new entities in the knowledge graph. Names that already exist (or
    repeat within the batch) are skipped; the result lists the entities actually created."""
    created = await s.named.create_entities(s.project(p.project_id), [e.model_dump() for e in p.entities])
    return {"entities": created}


@memory_compat.tool(CreateRelations, RelationsOut, title="Create Relations")
async def create_relations(s: Services, p: CreateRelations) -> dict[str, Any]:
    """Create multiple new relations between entities in the knowledge graph. Relations should
    be in active voice. Duplicates are skipped; an unknown entity name is an error."""
    created = await s.named.create_relations(s.project(p.project_id), [_relation(r) for r in p.relations])
    return {"relations": created}


@memory_compat.tool(AddObservations, ObservationsOut, title="Add Observations")
async def add_observations(s: Services, p: AddObservations) -> dict[str, Any]:
    """Add new observations to existing entities in the knowledge graph (ones already present
    are not added twice)."""
    results = await s.named.add_observations(s.project(p.project_id), [o.model_dump() for o in p.observations])
    return {"results": results}


@memory_compat.tool(DeleteEntities, Done, destructive=True, idempotent=True, title="Delete Entities")
async def delete_entities(s: Services, p: DeleteEntities) -> dict[str, Any]:
    """Delete multiple entities and their associated relations from the knowledge graph."""
    await s.named.delete_entities(s.project(p.project_id), p.entityNames)
    return {"success": True, "message": "Entities deleted successfully"}


@memory_compat.tool(DeleteObservations, Done, destructive=True, idempotent=True, title="Delete Observations")
async def delete_observations(s: Services, p: DeleteObservations) -> dict[str, Any]:
    """Delete specific observations from entities in the knowledge graph."""
    await s.named.delete_observations(s.project(p.project_id), [d.model_dump() for d in p.deletions])
    return {"success": True, "message": "Observations deleted successfully"}


@memory_compat.tool(DeleteRelations, Done, destructive=True, idempotent=True, title="Delete Relations")
async def delete_relations(s: Services, p: DeleteRelations) -> dict[str, Any]:
    """Delete multiple relations from the knowledge graph."""
    await s.named.delete_relations(s.project(p.project_id), [_relation(r) for r in p.relations])
    return {"success": True, "message": "Relations deleted successfully"}


@memory_compat.tool(ReadGraph, GraphOut, read_only=True, title="Read Graph")
async def read_graph(s: Services, p: ReadGraph) -> dict[str, Any]:
    """Read the knowledge graph one page at a time: at most `limit` entities (default 100, in
    name order) with the relations that touch them. It never returns the whole graph at once:
    when more entities follow, the result carries `nextOffset`; call again with it as `offset`."""
    project = s.project(p.project_id)
    ids, more = await s.named.page(project, p.offset, p.limit)
    return await _graph(s, project, ids, p.offset + len(ids) if more else None)


@memory_compat.tool(SearchNodes, GraphOut, read_only=True, title="Search Nodes")
async def search_nodes(s: Services, p: SearchNodes) -> dict[str, Any]:
    """Search for entities by meaning and by words in their names, types and observations,
    best match first (an exact name first of all); returns them with the relations that touch them."""
    project = s.project(p.project_id)
    hits = await s.search.entities(project, p.query, p.limit)
    return await _graph(s, project, [entity_id for entity_id, _ in hits])


@memory_compat.tool(OpenNodes, GraphOut, read_only=True, title="Open Nodes")
async def open_nodes(s: Services, p: OpenNodes) -> dict[str, Any]:
    """Open specific entities by name, with the relations that touch them."""
    if len(p.names) > limits.MAX_BATCH:
        raise PayloadTooLarge(f"names holds {len(p.names)} items; the limit is {limits.MAX_BATCH}.")
    project = s.project(p.project_id)
    by_name = await s.named.ids_by_name(project, p.names)
    return await _graph(s, project, [by_name[n] for n in dict.fromkeys(p.names) if n in by_name])
