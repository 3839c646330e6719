"""The `kg` toolset (spec 002): entity, relationship and observation CRUD scoped by project_id."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.graph.entities import EntityDetail, Observation
from polyg.core.model import Edge, Node
from polyg.runtime.app import Services
from polyg.store.names import NAME, RESERVED_REL_TYPES
from polyg.tools import shaping
from polyg.tools.listing import LISTED
from polyg.tools.prompts import PROMPTS
from polyg.tools.registry import Params, Toolset

kg = Toolset(
    "kg",
    prompts=PROMPTS,
    instructions=(
        "kg: entities by id (create_entity, get_entity, list_entities, update_entity_description, "
        "delete_entity), their observations (add_observation, delete_observation) and typed relationships "
        "between them (create_relationship, get_relationships, get_related_entities, delete_relationship)."
    ),
)

Direction = Literal["incoming", "outgoing", "both"]
# A limit is described by its name and bounds (every tools/list carries it: kept short).
LIMIT = Field(default=50, ge=1, le=limits.MAX_LIMIT)
# What the server checks, published in the input schemas (derived from the same constants).
ENTITY_NAME = limits.schema_name()
ID = limits.schema_identifier()
TEXT = limits.schema_text()
OPTIONAL_TEXT = limits.schema_text(allow_empty=True)


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


# A valid name that is none of polyg's own types in any case (reservation ignores case).
RESERVED = "|".join(_any_case(t) for t in sorted(RESERVED_REL_TYPES))
# `(?!.*\n)`: Python's `$` (which JSON Schema validators in Python use) also matches before a
# final newline, and the server's check does not accept one.
REL_TYPE: dict[str, Any] = {
    "pattern": f"^(?!.*\\n)(?!(?:{RESERVED})$){NAME.pattern}$",
    # tools/list shows the name rule only (the reserved names spelt in any case are 450 bytes
    # on every listing); the description says it, and polyg://tools/create_relationship has it all.
    LISTED: {"pattern": f"^{NAME.pattern}$"},
}


# --- result shapes -------------------------------------------------------------------------


class ObservationOut(BaseModel):
    id: str
    text: str


class EntityOut(BaseModel):
    id: str
    name: str
    type: str
    description: str
    parentId: str | None
    created_at: str | None = None
    updated_at: str | None = None
    observations: list[ObservationOut] = []
    observations_total: int | None = Field(
        default=None, description="How many observations the entity has, when not all are shown."
    )
    next_observation_offset: int | None = Field(
        default=None, description="Pass as observation_offset to get_entity to see the next observations."
    )


class EntityResult(BaseModel):
    entity: EntityOut


class Capped(BaseModel):
    """A list cut to the response budget says so (up to 1,000 rows of 512-character names and
    16k-character descriptions would exceed it)."""

    omitted: int | None = Field(default=None, description="How many more matched but were left out.")
    note: str | None = Field(default=None, description="Why some were left out and how to see them.")


class EntitySummary(BaseModel):
    id: str
    name: str
    type: str


class EntityList(Capped):
    entities: list[EntitySummary]


class RelationshipOut(BaseModel):
    id: str
    source_id: str
    target_id: str
    type: str
    description: str


class RelationshipResult(BaseModel):
    relationship: RelationshipOut


class RelationshipList(Capped):
    relationships: list[RelationshipOut]


class RelationRef(BaseModel):
    id: str
    type: str
    direction: Literal["incoming", "outgoing"]


class RelatedEntity(BaseModel):
    entity: EntitySummary
    relationship: RelationRef


class RelatedEntities(Capped):
    related_entities: list[RelatedEntity]


class ObservationResult(BaseModel):
    observation: ObservationOut


# --- parameters ----------------------------------------------------------------------------


class CreateEntity(Params):
    name: str = Field(
        description="e.g. 'src/utils.ts' (trimmed).",
        json_schema_extra=ENTITY_NAME,
    )
    type: str = Field(description="e.g. 'file', 'class', 'function'.", json_schema_extra=limits.schema_type())
    description: str = Field(default="", json_schema_extra=OPTIONAL_TEXT)
    observations: list[str] = Field(
        default=[],
        description="Initial observations (each text once).",
        json_schema_extra=limits.schema_list({"type": "string", **TEXT}),
    )
    parentId: str | None = Field(
        default=None,
        description="Id of a parent entity.",
        json_schema_extra={**ID, "minLength": 1, "pattern": limits.TEXT_PATTERN},
    )


class EntityRef(Params):
    entity_id: str = Field(json_schema_extra=ID)


class GetEntity(EntityRef):
    observation_offset: int = Field(
        default=0, ge=0, le=limits.MAX_OFFSET, description="Skip this many observations (oldest first)."
    )
    observation_limit: int = Field(
        default=limits.OBSERVATIONS_SHOWN,
        ge=1,
        le=limits.MAX_LIMIT,
        description="Observations to return at most; fewer when they would make the result too large.",
    )


class ListEntities(Params):
    type: str | None = None
    name_contains: str | None = Field(default=None, description="Part of the name, in any case.")
    limit: int = LIMIT
    offset: int = Field(default=0, ge=0, le=limits.MAX_OFFSET)


class UpdateDescription(Params):
    entity_id: str = Field(json_schema_extra=ID)
    description: str = Field(json_schema_extra=OPTIONAL_TEXT)


class CreateRelationship(Params):
    source_id: str = Field(json_schema_extra=ID)
    target_id: str = Field(json_schema_extra=ID)
    type: str = Field(
        description="Letters, digits and '_', not a type polyg uses itself; e.g. 'imports'.",
        json_schema_extra=REL_TYPE,
    )
    description: str = Field(default="", json_schema_extra=OPTIONAL_TEXT)


class RelationshipQuery(Params):
    entity_id: str = Field(json_schema_extra=ID)
    relationship_type: str | None = Field(default=None, json_schema_extra=ID)
    direction: Direction = "both"
    limit: int = LIMIT


class RelationshipRef(Params):
    relationship_id: str = Field(json_schema_extra=ID)


class AddObservation(Params):
    entity_id: str = Field(json_schema_extra=ID)
    observation: str = Field(json_schema_extra=TEXT)


class ObservationRef(Params):
    entity_id: str = Field(json_schema_extra=ID)
    observation_id: str = Field(json_schema_extra=ID)


def observation_out(observation: Observation) -> dict[str, Any]:
    return {"id": observation.id, "text": observation.text}


def observation_page(entity: EntityDetail) -> dict[str, Any]:
    """An entity's page of observations; when some are left out, `observations_total` says how
    many it has and `next_observation_offset` where the next page starts (if one does)."""
    page: dict[str, Any] = {"observations": [observation_out(o) for o in entity.observations]}
    if len(entity.observations) < entity.observations_total:
        page["observations_total"] = entity.observations_total
        if entity.next_observation_offset is not None:
            page["next_observation_offset"] = entity.next_observation_offset
    return page


def shape_entity(entity: EntityDetail) -> dict[str, Any]:
    node = entity.node
    return {
        "id": node.id,
        "name": node.name,
        "type": node.type,
        "description": node.summary,
        "parentId": node.parent_id,
        "created_at": node.created_at,
        "updated_at": node.updated_at,
        **observation_page(entity),
    }


def entity_summary(node: Node) -> dict[str, Any]:
    return {"id": node.id, "name": node.name, "type": node.type}


def shape_relationship(edge: Edge) -> dict[str, Any]:
    return {
        "id": edge.id,
        "source_id": edge.source_id,
        "target_id": edge.target_id,
        "type": edge.type,
        "description": edge.description,
    }


# --- tools ---------------------------------------------------------------------------------


NARROW = "ask for fewer (limit) or narrow by relationship_type or direction."


@kg.tool(CreateEntity, EntityResult, title="Create entity")
async def create_entity(s: Services, p: CreateEntity) -> EntityResult:
    """Create an entity with optional description, observations and parent."""
    entity = await s.entities.create(
        s.project(p.project_id),
        name=p.name,
        type_=p.type,
        description=p.description,
        observations=p.observations,
        parent_id=p.parentId,
    )
    return shaping.typed(EntityResult, {"entity": shape_entity(entity)})


@kg.tool(GetEntity, EntityResult, read_only=True, title="Get entity")
async def get_entity(s: Services, p: GetEntity) -> EntityResult:
    """Get an entity by id, with its observations (oldest first, 100 at most: when there are
    more, `next_observation_offset` says where the next ones start)."""
    entity = shape_entity(
        await s.entities.get(s.project(p.project_id), p.entity_id, skip=p.observation_offset, shown=p.observation_limit)
    )
    observations = entity["observations"]
    room = limits.RESPONSE_BUDGET - limits.size({**entity, "observations": []})
    page = shaping.fit_page(entity, "observations", offset=p.observation_offset, has_more=False, room=room)
    if page.cut:
        entity.setdefault("observations_total", p.observation_offset + len(observations))
        entity["next_observation_offset"] = page.next_offset
    return shaping.typed(EntityResult, {"entity": entity})


@kg.tool(ListEntities, EntityList, read_only=True, title="List entities")
async def list_entities(s: Services, p: ListEntities) -> EntityList:
    """List entities, optionally of a type and by part of the name."""
    entities = await s.entities.find(
        s.project(p.project_id), type_=p.type, name_contains=p.name_contains, limit=p.limit, offset=p.offset
    )
    return shaping.typed(
        EntityList,
        shaping.capped(
            "entities",
            [entity_summary(e) for e in entities],
            lambda shown: f"call list_entities again with offset {p.offset + shown}.",
        ),
    )


@kg.tool(UpdateDescription, idempotent=True, title="Update entity description")
async def update_entity_description(s: Services, p: UpdateDescription) -> str:
    """Replace an entity's description."""
    await s.entities.update_description(s.project(p.project_id), p.entity_id, p.description)
    return "Entity description updated successfully."


@kg.tool(EntityRef, destructive=True, title="Delete entity")
async def delete_entity(s: Services, p: EntityRef) -> str:
    """Delete an entity with its observations and relationships."""
    await s.entities.delete(s.project(p.project_id), p.entity_id)
    return "Entity, its observations, and related relationships deleted."


@kg.tool(CreateRelationship, RelationshipResult, title="Create relationship")
async def create_relationship(s: Services, p: CreateRelationship) -> RelationshipResult:
    """Create a typed relationship from source_id to target_id.

    The same type between the same entities again returns the existing relationship."""
    relationship = await s.relationships.create(
        s.project(p.project_id),
        source_id=p.source_id,
        target_id=p.target_id,
        type_=p.type,
        description=p.description,
    )
    return shaping.typed(RelationshipResult, {"relationship": shape_relationship(relationship)})


@kg.tool(RelationshipQuery, RelationshipList, read_only=True, title="Get relationships")
async def get_relationships(s: Services, p: RelationshipQuery) -> RelationshipList:
    """Relationships of an entity, by type and direction."""
    rels = await s.relationships.list_for(
        s.project(p.project_id), p.entity_id, type_=p.relationship_type, direction=p.direction, limit=p.limit
    )
    return shaping.typed(
        RelationshipList, shaping.capped("relationships", [shape_relationship(r) for r in rels], lambda _: NARROW)
    )


@kg.tool(RelationshipQuery, RelatedEntities, read_only=True, title="Get related entities")
async def get_related_entities(s: Services, p: RelationshipQuery) -> RelatedEntities:
    """Entities connected to an entity, each with its relationship."""
    related = await s.relationships.related(
        s.project(p.project_id), p.entity_id, type_=p.relationship_type, direction=p.direction, limit=p.limit
    )
    shaped = [
        {
            "entity": entity_summary(n.node),
            "relationship": {"id": n.edge.id, "type": n.edge.type, "direction": n.direction},
        }
        for n in related
    ]
    return shaping.typed(RelatedEntities, shaping.capped("related_entities", shaped, lambda _: NARROW))


@kg.tool(RelationshipRef, destructive=True, title="Delete relationship")
async def delete_relationship(s: Services, p: RelationshipRef) -> str:
    """Delete a relationship by id."""
    await s.relationships.delete(s.project(p.project_id), p.relationship_id)
    return "Relationship deleted."


@kg.tool(AddObservation, ObservationResult, title="Add observation")
async def add_observation(s: Services, p: AddObservation) -> ObservationResult:
    """Add an observation to an entity; one it already holds is returned, not added."""
    observation = await s.entities.add_observation(s.project(p.project_id), p.entity_id, p.observation)
    return shaping.typed(ObservationResult, {"observation": observation_out(observation)})


@kg.tool(ObservationRef, destructive=True, title="Delete observation")
async def delete_observation(s: Services, p: ObservationRef) -> str:
    """Delete one observation of an entity."""
    await s.entities.delete_observation(s.project(p.project_id), p.entity_id, p.observation_id)
    return "Observation deleted."
