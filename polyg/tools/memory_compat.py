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
from polyg.core.memory.named import NamedEntity, NamedRelation
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.registry import Params, Toolset, degraded_field

memory_compat = Toolset(
    "memory-compat",
    instructions=(
        "memory-compat: the official MCP memory server's tools, with its names and shapes; entities are "
        "named by their names. search_nodes ranks by meaning and words (an exact name first); read_graph "
        "returns what fits in one result and gives nextOffset to read on."
    ),
)

# A client written for the official server reads the graph in one call and knows nothing of
# `nextOffset`: the default reads as much as the response budget holds (hundreds of entities).
READ_GRAPH_DEFAULT = limits.MAX_LIMIT
# Of the response budget, what entities may take before their relations get the rest.
ENTITY_SHARE = 0.75

NAME = limits.schema_name()
NAMES = limits.schema_list({"type": "string", **NAME})


class Item(BaseModel):
    # Validated by alias only: `from_` is the Python name of `from`, not a second accepted key.
    model_config = ConfigDict(extra="forbid", strict=True)


class Entity(Item):
    name: str = Field(description="The name of the entity", json_schema_extra=NAME)
    entityType: str = Field(description="The type of the entity", json_schema_extra=limits.schema_type())
    observations: list[str] = Field(
        default_factory=list,
        description="An array of observation contents associated with the entity",
        json_schema_extra=limits.schema_list({"type": "string", **limits.schema_text()}),
    )


class Relation(Item):
    from_: str = Field(
        alias="from", description="The name of the entity where the relation starts", json_schema_extra=NAME
    )
    to: str = Field(description="The name of the entity where the relation ends", json_schema_extra=NAME)
    relationType: str = Field(description="The type of the relation", json_schema_extra=limits.schema_relation_text())


class ObservationAddition(Item):
    entityName: str = Field(description="The name of the entity to add the observations to", json_schema_extra=NAME)
    contents: list[str] = Field(
        description="An array of observation contents to add",
        json_schema_extra=limits.schema_list({"type": "string", **limits.schema_text()}),
    )


class ObservationDeletion(Item):
    entityName: str = Field(description="The name of the entity containing the observations", json_schema_extra=NAME)
    observations: list[str] = Field(
        description="An array of observations to delete", json_schema_extra=limits.schema_list()
    )


# --- results -------------------------------------------------------------------------------
# The official server's shapes, without the input limits: a result shows what is stored, and
# a name another toolset (or an older polyg) let in must not make a validating client refuse
# the whole result.


class EntityShown(Item):
    name: str = Field(description="The name of the entity")
    entityType: str = Field(description="The type of the entity")
    observations: list[str] = Field(description="An array of observation contents associated with the entity")


class RelationShown(Item):
    from_: str = Field(alias="from", description="The name of the entity where the relation starts")
    to: str = Field(description="The name of the entity where the relation ends")
    relationType: str = Field(description="The type of the relation")


class EntityOut(EntityShown):
    observationsTotal: int | None = Field(
        default=None, description="How many observations the entity has, when not all are shown."
    )


class EntitiesOut(BaseModel):
    entities: list[EntityShown]


class RelationsOut(BaseModel):
    relations: list[RelationShown]


class AddedObservations(BaseModel):
    entityName: str
    addedObservations: list[str]


class ObservationsOut(BaseModel):
    results: list[AddedObservations]


class Done(BaseModel):
    success: bool
    message: str


class GraphOut(BaseModel):
    entities: list[EntityOut]
    relations: list[RelationShown]
    relationsTruncated: bool = Field(
        default=False,
        description="True when the entities have more relations than one result carries.",
    )
    nextOffset: int | None = Field(
        default=None, description="Offset of the next page when more entities follow (read_graph)."
    )
    entitiesOmitted: int | None = Field(
        default=None, description="Entities found but left out to keep the result within its size budget."
    )
    degraded: str | None = degraded_field()
    note: str | None = Field(default=None, description="What was left out of this result, and how to read it.")


# --- parameters ----------------------------------------------------------------------------


BATCH = limits.schema_list()


class CreateEntities(Params):
    entities: list[Entity] = Field(json_schema_extra=BATCH)


class CreateRelations(Params):
    relations: list[Relation] = Field(json_schema_extra=BATCH)


class AddObservations(Params):
    observations: list[ObservationAddition] = Field(json_schema_extra=BATCH)


class DeleteEntities(Params):
    entityNames: list[str] = Field(description="An array of entity names to delete", json_schema_extra=NAMES)


class DeleteObservations(Params):
    deletions: list[ObservationDeletion] = Field(json_schema_extra=BATCH)


class DeleteRelations(Params):
    relations: list[Relation] = Field(description="An array of relations to delete", json_schema_extra=BATCH)


OBSERVATION_OFFSET = Field(
    default=0,
    ge=0,
    le=limits.MAX_OFFSET,
    description=f"Skip this many observations of each entity (each shows at most {limits.OBSERVATIONS_SHOWN}).",
)


class ReadGraph(Params):
    limit: int = Field(
        default=READ_GRAPH_DEFAULT,
        ge=1,
        le=limits.MAX_LIMIT,
        description=f"Entities per page (1-{limits.MAX_LIMIT}); fewer when the result would be too large.",
    )
    offset: int = Field(
        default=0, ge=0, le=limits.MAX_OFFSET, description="Entities to skip; pass nextOffset to read on."
    )


class SearchNodes(Params):
    query: str = Field(description="Words, a phrase or a name to look for")
    limit: int = Field(default=10, ge=1, le=100, description="Maximum number of entities (1-100).")


class OpenNodes(Params):
    names: list[str] = Field(description="An array of entity names to retrieve", json_schema_extra=NAMES)
    observationOffset: int = OBSERVATION_OFFSET


def _relation(rel: Relation) -> dict[str, str]:
    return {"from": rel.from_, "to": rel.to, "relationType": rel.relationType}


# --- results shaped as the official server's ----------------------------------------------


def entity_out(entity: NamedEntity) -> dict[str, Any]:
    """`{name, entityType, observations}`, and `observationsTotal` when some are not shown."""
    out: dict[str, Any] = {"name": entity.name, "entityType": entity.type, "observations": list(entity.observations)}
    if len(entity.observations) < entity.observations_total:
        out["observationsTotal"] = entity.observations_total
    return out


def relation_out(relation: NamedRelation) -> dict[str, str]:
    return {"from": relation.source, "to": relation.target, "relationType": relation.text}


async def _graph(
    s: Services,
    project: str,
    ids: list[str],
    *,
    page: tuple[int, bool] | None = None,
    observation_offset: int = 0,
) -> dict[str, Any]:
    """Entities with the relations that touch them, within the response budget: each entity
    shows at most OBSERVATIONS_SHOWN observations, and entities (then relations) that would
    take the result past the budget are left out, with a note in words saying so and how to
    read on. `page` is (offset, more follow) for a read_graph page."""
    share = int(limits.RESPONSE_BUDGET * ENTITY_SHARE)
    # Two independent reads: one round trip's wait instead of two.
    found, (touching, truncated) = await asyncio.gather(
        s.named.entities(project, ids, skip=observation_offset, shown=limits.OBSERVATIONS_SHOWN),
        s.named.relations_touching(project, ids),
    )
    entities = [entity_out(e) for e in found]
    kept = max(limits.fit(entities, share), 1 if entities else 0)
    if kept < len(entities):
        entities = entities[:kept]
        touching, truncated = await s.named.relations_touching(project, ids[:kept])
    relations = [relation_out(r) for r in touching]
    if entities and limits.size(entities[0]) > share:
        _trim_observations(entities[0], share)
    shown = limits.fit(relations, limits.RESPONSE_BUDGET - limits.size(entities))
    graph: dict[str, Any] = {"entities": entities, "relations": relations[:shown]}
    notes = []
    left_out = len(ids) - kept
    if page is not None:
        offset, more = page
        read = shaping.Page(entities, offset, more or left_out > 0, cut=left_out)
        if read.has_more:
            graph["nextOffset"] = read.next_offset
            notes.append(
                f"This is only part of the graph: entities {offset + 1}-{read.next_offset} in name order. "
                f"More follow: call read_graph again with offset {read.next_offset} to read on."
            )
    elif left_out:
        graph["entitiesOmitted"] = left_out
        notes.append(
            f"{left_out} more entities were found but left out to keep this result small: ask for fewer at a time."
        )
    if truncated or shown < len(relations):
        graph["relationsTruncated"] = True
        notes.append("Not every relation of these entities is shown: open fewer entities at a time to see theirs.")
    cut = sum(1 for e in entities if "observationsTotal" in e)
    if cut:
        notes.append(
            f"{cut} entities show only some of their observations (observationsTotal says how many they have): "
            "call open_nodes with observationOffset to see the others."
        )
    if notes:
        graph["note"] = " ".join(notes)
    return graph


def _trim_observations(entity: dict[str, Any], budget: int) -> None:
    """Cut one entity's observations to fit the budget (an entity alone can exceed it)."""
    total = entity.get("observationsTotal", len(entity["observations"]))
    entity["observations"] = entity["observations"][: limits.fit(entity["observations"], budget - 1000)]
    if len(entity["observations"]) < total:
        entity["observationsTotal"] = total


# --- tools ---------------------------------------------------------------------------------


@memory_compat.tool(CreateEntities, EntitiesOut, title="Create Entities")
async def create_entities(s: Services, p: CreateEntities) -> EntitiesOut:
    """Create multiple new entities in the knowledge graph. Names that already exist (or
    repeat within the batch) are skipped; the result lists the entities actually created."""
    created = await s.named.create_entities(s.project(p.project_id), [e.model_dump() for e in p.entities])
    return shaping.typed(EntitiesOut, {"entities": [entity_out(e) for e in created]})


@memory_compat.tool(CreateRelations, RelationsOut, title="Create Relations")
async def create_relations(s: Services, p: CreateRelations) -> RelationsOut:
    """Create multiple new relations between entities in the knowledge graph. Relations should
    be in active voice. Duplicates are skipped; an unknown entity name is an error."""
    created = await s.named.create_relations(s.project(p.project_id), [_relation(r) for r in p.relations])
    return shaping.typed(RelationsOut, {"relations": [relation_out(r) for r in created]})


@memory_compat.tool(AddObservations, ObservationsOut, title="Add Observations")
async def add_observations(s: Services, p: AddObservations) -> ObservationsOut:
    """Add new observations to existing entities in the knowledge graph (ones already present
    are not added twice)."""
    results = await s.named.add_observations(s.project(p.project_id), [o.model_dump() for o in p.observations])
    return shaping.typed(
        ObservationsOut,
        {"results": [{"entityName": r.entity_name, "addedObservations": list(r.added)} for r in results]},
    )


@memory_compat.tool(DeleteEntities, Done, destructive=True, idempotent=True, title="Delete Entities")
async def delete_entities(s: Services, p: DeleteEntities) -> Done:
    """Delete multiple entities and their associated relations from the knowledge graph."""
    await s.named.delete_entities(s.project(p.project_id), p.entityNames)
    return shaping.typed(Done, {"success": True, "message": "Entities deleted successfully"})


@memory_compat.tool(DeleteObservations, Done, destructive=True, idempotent=True, title="Delete Observations")
async def delete_observations(s: Services, p: DeleteObservations) -> Done:
    """Delete specific observations from entities in the knowledge graph."""
    await s.named.delete_observations(s.project(p.project_id), [d.model_dump() for d in p.deletions])
    return shaping.typed(Done, {"success": True, "message": "Observations deleted successfully"})


@memory_compat.tool(DeleteRelations, Done, destructive=True, idempotent=True, title="Delete Relations")
async def delete_relations(s: Services, p: DeleteRelations) -> Done:
    """Delete multiple relations from the knowledge graph."""
    await s.named.delete_relations(s.project(p.project_id), [_relation(r) for r in p.relations])
    return shaping.typed(Done, {"success": True, "message": "Relations deleted successfully"})


@memory_compat.tool(ReadGraph, GraphOut, read_only=True, title="Read Graph")
async def read_graph(s: Services, p: ReadGraph) -> GraphOut:
    """Read the knowledge graph: entities in name order with the relations that touch them, as
    many as fit in one result (hundreds; at most `limit`). When more follow, the result says so
    in `note` and carries `nextOffset`: call again with it as `offset` to read on."""
    project = s.project(p.project_id)
    ids, more = await s.named.page(project, p.offset, p.limit)
    return shaping.typed(GraphOut, await _graph(s, project, ids, page=(p.offset, more)))


@memory_compat.tool(SearchNodes, GraphOut, read_only=True, title="Search Nodes")
async def search_nodes(s: Services, p: SearchNodes) -> GraphOut:
    """Search for entities by meaning and by words in their names, types and observations,
    best match first (an exact name first of all); returns them with the relations that touch them."""
    project = s.project(p.project_id)
    hits = await s.search.search(project, p.query, "default", p.limit)
    return shaping.typed(GraphOut, await _graph(s, project, [hit.node_id for hit in hits]))


@memory_compat.tool(OpenNodes, GraphOut, read_only=True, title="Open Nodes")
async def open_nodes(s: Services, p: OpenNodes) -> GraphOut:
    """Open specific entities by name, with the relations that touch them."""
    limits.count(p.names, "names")
    names = [limits.name(n, f"names[{i}]") for i, n in enumerate(p.names)]
    project = s.project(p.project_id)
    by_name = await s.named.ids_by_name(project, names)
    ids = [by_name[n] for n in dict.fromkeys(names) if n in by_name]
    return shaping.typed(GraphOut, await _graph(s, project, ids, observation_offset=p.observationOffset))
