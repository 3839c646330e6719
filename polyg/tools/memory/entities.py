"""The memory toolset's entity graph: `add_entity`, `link_entities` and `get_entity` (by name,
with the facts that hold and the entity's latest events; by id, kg's form)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.model import Node
from polyg.core.text.time import parse_instant
from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.tools import kg, shaping
from polyg.tools.memory.shared import LIMIT, OFFSET, REFERENCE, TIMEZONE, memory
from polyg.tools.registry import Params

# --- result shapes ---------------------------------------------------------------------

if TYPE_CHECKING:  # annotations only: the memory graphs' modules load when the services are made
    from polyg.core.memory.entity_graph import Relation


class EntityOut(kg.EntityOut):
    """kg's entity (get_entity answers in kg's form too) with the entity's properties."""

    properties: dict[str, Any] = Field(default_factory=dict)


class EntityRef(BaseModel):
    id: str
    name: str
    type: str


class RelationshipOut(BaseModel):
    id: str
    type: str
    relationship: str
    direction: Literal["outgoing", "incoming"]
    entity: EntityRef
    description: str
    valid_from: str | None = None
    valid_to: str | None = None
    invalidated_by: str | None = None
    confidence: float | None = None
    score: float | None = None


class EventRef(BaseModel):
    id: str
    description: str
    occurred_at: str | None


class GetEntityResult(BaseModel):
    entity: EntityOut
    relationships: list[RelationshipOut] = []
    has_more: bool = False
    next_offset: int | None = Field(
        default=None, description="When has_more: pass as offset to get_entity to see the next relationships."
    )
    events: list[EventRef] = Field(
        default=[],
        description="Its latest events (10 at most; fewer if the response budget is reached first: "
        "query_timeline with the entity lists them all).",
    )


class AddEntityResult(BaseModel):
    entity: EntityOut
    created: bool


class LinkOut(BaseModel):
    id: str
    source: EntityRef
    target: EntityRef
    type: str
    relationship: str


class LinkEntitiesResult(BaseModel):
    relationship: LinkOut
    created: bool
    entities_created: list[str]


# --- parameters ------------------------------------------------------------------------


class AddEntity(Params):
    name: str
    entity_type: str = Field(description="e.g. Person, Service, Deployment.")
    properties: dict[str, Any] | None = None
    description: str = ""
    replace_properties: bool = Field(
        default=False, description="Replace an existing entity's properties instead of merging."
    )


class LinkEntities(Params):
    source: str
    target: str
    relationship: str = Field(description="e.g. 'owns', 'depends on'.")
    description: str = ""
    create_missing: bool = False


class GetEntity(Params):
    name: str | None = Field(default=None, description="Exact, else in any case.")
    entity_id: str | None = Field(default=None, description="Or its id.")
    observation_offset: int = Field(
        default=0, ge=0, le=limits.MAX_OFFSET, description="Skip this many observations (oldest first)."
    )
    observation_limit: int = Field(default=limits.OBSERVATIONS_SHOWN, ge=1, le=limits.MAX_LIMIT)
    include_relationships: bool = True
    as_of: str | None = Field(default=None, description="Facts that held then (default: now).")
    include_history: bool = Field(default=False, description="Every fact, whatever its window.")
    limit: int = LIMIT
    offset: int = OFFSET
    reference_time: str | None = REFERENCE
    timezone: str | None = TIMEZONE


# --- shaping ---------------------------------------------------------------------------


def entity_out(record: Node) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "type": record.type,
        "description": record.summary,
        "parentId": record.parent_id,
        "properties": record.properties,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def entity_ref(record: Node) -> dict[str, Any]:
    return {"id": record.id, "name": record.name, "type": record.type}


def relation_out(rel: Relation) -> dict[str, Any]:
    return {
        "id": rel.id,
        "type": rel.type,
        "relationship": rel.relationship,
        "direction": rel.direction,
        "entity": {"id": rel.other_id, "name": rel.other_name, "type": rel.other_type},
        "description": rel.description,
        "valid_from": rel.valid_from,
        "valid_to": rel.valid_to,
        "invalidated_by": rel.invalidated_by,
        "confidence": rel.confidence,
        "score": rel.score,
    }


# --- tools -----------------------------------------------------------------------------


@memory.tool(AddEntity, AddEntityResult, idempotent=True, title="Add entity")
async def add_entity(s: Services, p: AddEntity) -> AddEntityResult:
    """Add an entity by name, or update it (properties merged, description replaced)."""
    record, created = await s.memory.entities.add_entity(
        s.project(p.project_id),
        name=p.name,
        entity_type=p.entity_type,
        properties=p.properties,
        description=p.description,
        replace_properties=p.replace_properties,
    )
    return shaping.typed(AddEntityResult, {"entity": entity_out(record), "created": created})


@memory.tool(LinkEntities, LinkEntitiesResult, idempotent=True, title="Link entities")
async def link_entities(s: Services, p: LinkEntities) -> LinkEntitiesResult:
    """Link two entities by name (an unknown name is an error unless create_missing)."""
    link = await s.memory.entities.link(
        s.project(p.project_id),
        source=p.source,
        target=p.target,
        relationship=p.relationship,
        description=p.description,
        create_missing=p.create_missing,
    )
    return shaping.typed(
        LinkEntitiesResult,
        {
            "relationship": {
                "id": link.id,
                "source": entity_ref(link.source),
                "target": entity_ref(link.target),
                "type": link.type,
                "relationship": link.relationship,
            },
            "created": link.created,
            "entities_created": link.entities_created,
        },
    )


@memory.tool(GetEntity, GetEntityResult, read_only=True, title="Get entity", supersedes="kg")
async def get_entity(s: Services, p: GetEntity) -> GetEntityResult | kg.EntityResult:
    """An entity by name with its observations, latest events and facts (now, or as_of); or
    by entity_id (kg's form).

    By name: its relationships are the facts that hold now (or as_of a time; all of them with
    include_history) and its other links. By entity_id alone, as in the kg toolset: the entity
    with its observations."""
    if p.name is None:
        if p.entity_id is None:
            raise InvalidParams("Invalid arguments for get_entity: give name (or entity_id).")
        # spec 002's form, answered by kg's own tool: one get_entity serves both toolsets.
        by_id = kg.GetEntity(
            project_id=p.project_id,
            entity_id=p.entity_id,
            observation_offset=p.observation_offset,
            observation_limit=p.observation_limit,
        )
        return await kg.get_entity(s, by_id)
    graphs = s.memory
    as_of = None
    if p.as_of is not None:
        ref = graphs.temporal.reference(p.reference_time, p.timezone)
        as_of = parse_instant(p.as_of, reference=ref, tz=p.timezone)
    view = await graphs.entities.get(
        s.project(p.project_id),
        name=p.name,
        entity_id=p.entity_id,
        relationships=p.include_relationships,
        as_of=as_of,
        history=p.include_history,
        limit=p.limit,
        offset=p.offset,
        observation_offset=p.observation_offset,
        observation_limit=p.observation_limit,
    )
    answer: dict[str, Any] = {
        "entity": {**kg.observation_page(view.observations), **entity_out(view.entity)},
        "relationships": [relation_out(r) for r in view.relations],
        "has_more": view.has_more,
        "events": view.events,
    }
    if limits.size(answer) > limits.RESPONSE_BUDGET:
        _cut_to_budget(answer, view.observations.observations_total, p.observation_offset)
    relationships = shaping.Page(answer["relationships"], p.offset, answer["has_more"])
    if relationships.has_more:
        answer["next_offset"] = relationships.next_offset
    return shaping.typed(GetEntityResult, answer)


def _cut_to_budget(answer: dict[str, Any], observations_total: int, observation_offset: int) -> None:
    """Cut an entity's answer to the response budget: its latest events first, then its
    observations, then its relationships each get what room is left (the entity itself always
    shows); what was cut says where its next page starts."""
    entity, events = answer["entity"], answer["events"]
    bare = {**answer, "entity": {**entity, "observations": []}, "relationships": [], "events": []}
    room = limits.RESPONSE_BUDGET - 1_000 - limits.size(bare)
    answer["events"] = events[: limits.fit(events, room)]
    room -= limits.size(answer["events"])
    # At least one of each, so that paging on from the next offset always moves.
    page = shaping.fit_page(entity, "observations", offset=observation_offset, has_more=False, room=room)
    if page.cut:
        entity["observations_total"] = observations_total
        entity["next_observation_offset"] = page.next_offset
    room -= limits.size(entity["observations"])
    if shaping.keep_fitting(answer, "relationships", at_least_one=True, room=room):
        answer["has_more"] = True
