"""The `memory` toolset (spec 003), part 1: the four graphs' direct tools and their management.

Each tool parses its arguments, calls `polyg.core.memory_graphs` and shapes the typed result
into the spec's form. Times in arguments are ISO 8601 or English phrases read against
`reference_time` (default: the server's clock) in `timezone` (default: the reference's zone,
else UTC); times in results are UTC.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from polyg.core import limits
from polyg.core.causal import CausalNode, Chain, Explanation
from polyg.core.entity_graph import Relation
from polyg.core.model import Node
from polyg.core.temporal import Event, Fact
from polyg.core.time import format_utc, parse_instant
from polyg.errors import InvalidParams, NotFound
from polyg.runtime.app import Services
from polyg.tools import kg, shaping
from polyg.tools.registry import Params, Toolset, degraded_field

memory = Toolset(
    "memory",
    instructions=(
        "memory: remember stores a memory and what it states (entities, events, facts, causal links); "
        "recall answers a question from all of it, citing its evidence. Direct tools: entities by name "
        "(add_entity, link_entities, get_entity), events and facts in time (add_event, add_fact, get_facts, "
        "query_timeline, list_invalidations, undo_invalidation), causes (add_causal_link, get_causal_chain, "
        "explain_why), concepts (add_concept, search_semantic); get_statistics, clear_graph, export_graph. "
        # Said once here rather than in every time parameter's description in tools/list.
        "Times are ISO 8601 or English phrases ('yesterday 14:30', 'last Tuesday'), read against "
        "reference_time (ISO; default: now) in timezone (IANA; default: the reference time's zone, else "
        "UTC); results are in UTC."
    ),
)

# limit and offset are described by their names and bounds (kept short: every tools/list carries them).
LIMIT = Field(default=50, ge=1, le=1000)
OFFSET = Field(default=0, ge=0)
# Described once, in the toolset's instructions (every time tool has them).
REFERENCE = Field(default=None)
TIMEZONE = Field(default=None)
Graph = Literal["semantic", "temporal", "causal", "entity", "all"]
Direction = Literal["upstream", "downstream", "both"]


# --- result shapes -------------------------------------------------------------------------


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


class EventOut(BaseModel):
    id: str
    description: str
    occurred_at: str | None
    ended_at: str | None = None
    duration_seconds: float | None = None
    entities: list[str] = []
    origin: str = "event"


class AddEventResult(BaseModel):
    event: EventOut
    entities_created: list[str]


class FactOut(BaseModel):
    id: str
    subject: str
    predicate: str
    object: str
    valid_from: str
    valid_to: str | None
    current: bool
    invalidated_by: str | None = None
    invalidated_at: str | None = None


class AddFactResult(BaseModel):
    fact: FactOut
    entities_created: list[str]
    invalidated: list[FactOut]
    duplicate: bool


class FactList(BaseModel):
    facts: list[FactOut]
    has_more: bool
    as_of: str | None
    next_offset: int | None = None
    note: str | None = None


class TimelineItemOut(BaseModel):
    """An event or a fact (the other key is absent). Not `EventOut | None`: a client validates
    every result against the schema, and an anyOf of an object and null is its slow path
    (50 items: 45 against 12 ms)."""

    kind: Literal["event", "fact"]
    at: str
    event: EventOut | SkipJsonSchema[None] = None
    fact: FactOut | SkipJsonSchema[None] = None


class TimelineResult(BaseModel):
    from_: str | None = Field(alias="from")
    to: str | None
    items: list[TimelineItemOut]
    has_more: bool
    next_offset: int | None
    note: str | None = None


class InvalidationOut(BaseModel):
    fact: FactOut
    invalidated_by: str
    invalidated_at: str | None
    valid_to_before: str | None


class InvalidationList(BaseModel):
    invalidations: list[InvalidationOut]
    has_more: bool


class FactResult(BaseModel):
    fact: FactOut


class NodeOut(BaseModel):
    id: str
    kind: Literal["event", "entity"]
    text: str
    occurred_at: str | None = None
    type: str | None = None


class CausalLinkOut(BaseModel):
    id: str
    cause_id: str
    effect_id: str
    confidence: float
    evidence: str


class AddCausalLinkResult(BaseModel):
    link: CausalLinkOut
    cause: NodeOut
    effect: NodeOut
    resolved: dict[str, str]
    scores: dict[str, float] = Field(default={}, description="How well each end matched (1.0: exactly).")
    updated: bool


class ChainNodeOut(NodeOut):
    distance: int
    confidence: float
    direction: str
    via: str | None = None


class MatchOut(BaseModel):
    """How the event asked about was found: by id, exactly, ..., or as a natural phrasing of a
    stored one (`search`), with the match's score (cosine similarity for fuzzy wording)."""

    how: str
    score: float


class CausalChainResult(BaseModel):
    start: NodeOut
    match: MatchOut | None = None
    direction: str
    depth: int
    nodes: list[ChainNodeOut]
    links: list[CausalLinkOut]
    cycles: list[str]
    truncated_by_depth: bool
    truncated_by_limit: bool
    omitted: int | None = None
    note: str | None = None


class StepOut(NodeOut):
    confidence: float | None = None
    evidence: str | None = None


class ExplanationOut(BaseModel):
    confidence: float
    chain: list[StepOut]


class ExplainResult(BaseModel):
    event: NodeOut
    match: MatchOut | None = None
    answer: str
    root_causes: list[NodeOut]
    explanations: list[ExplanationOut]
    cycles: list[str]
    truncated_by_depth: bool


class ScoredName(BaseModel):
    name: str
    score: float


class ConceptOut(BaseModel):
    id: str
    name: str
    description: str


class AddConceptResult(BaseModel):
    concept: ConceptOut
    created: bool
    similar: list[ScoredName]
    represents: list[str]


class SemanticHitOut(BaseModel):
    id: str
    kind: Literal["entity", "concept", "event"]
    text: str
    score: float
    similarity: float | None
    type: str | None = None
    description: str | None = None
    occurred_at: str | None = None
    similar: list[ScoredName] = []


class SearchResult(BaseModel):
    results: list[SemanticHitOut]
    degraded: str | None = degraded_field()


class StatisticsResult(BaseModel):
    graphs: dict[str, dict[str, Any]]
    orphans: dict[str, int]


class ClearResult(BaseModel):
    graph: str
    deleted: int


class ExportResult(BaseModel):
    format: Literal["cypher", "json"]
    nodes: int
    edges: int
    offset: int
    next_offset: int | None
    statements: list[str] = []
    items: list[dict[str, Any]] = []
    note: str | None = None


# --- parameters ----------------------------------------------------------------------------


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


class AddEvent(Params):
    description: str
    occurred_at: str
    duration: str | None = Field(default=None, description="ISO 8601 (PT30M) or '90 minutes'.")
    ended_at: str | None = None
    entities: list[str] = Field(default=[], description="Names (created when unknown).")
    find_entities: bool = Field(default=True, description="Also link entities whose names occur in the text.")
    reference_time: str | None = REFERENCE
    timezone: str | None = TIMEZONE


class AddFact(Params):
    subject: str
    predicate: str = Field(description="e.g. works_on, lives_in.")
    object: str
    valid_from: str | None = Field(default=None, description="Default: the reference time.")
    valid_to: str | None = Field(default=None, description="Default: still true.")
    single_valued: bool | None = Field(
        default=None,
        description="Whether it closes the subject's other facts of the predicate (default: by predicate).",
    )
    subject_type: str | None = None
    object_type: str | None = None
    description: str = ""
    reference_time: str | None = REFERENCE
    timezone: str | None = TIMEZONE


class GetFacts(Params):
    subject: str
    predicate: str | None = None
    as_of: str | None = None
    include_history: bool = False
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = OFFSET
    reference_time: str | None = REFERENCE
    timezone: str | None = TIMEZONE


class QueryTimeline(Params):
    from_: str | None = Field(default=None, alias="from")
    to: str | None = Field(default=None, description="End, including the period it names ('2026-01-07').")
    during: str | None = Field(default=None, description="Or a span: 'last week', 'in March 2023'.")
    entity: str | None = Field(default=None, description="Only what involves this entity (by name).")
    include_facts: bool = True
    limit: int = LIMIT
    offset: int = OFFSET
    reference_time: str | None = REFERENCE
    timezone: str | None = TIMEZONE


class ListInvalidations(Params):
    entity: str | None = None
    limit: int = LIMIT
    offset: int = OFFSET


class UndoInvalidation(Params):
    fact_id: str = Field(description="The invalidated (older) fact.")
    retract_newer: bool = False


class AddCausalLink(Params):
    cause: str = Field(
        description="Event or entity (text, name, id or a natural phrasing of it); created when nothing matches."
    )
    effect: str
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    evidence: str = ""
    create_missing: bool = True


class GetCausalChain(Params):
    event: str = Field(description="Event or entity (text, name or id).")
    direction: Direction = "upstream"
    depth: int = Field(default=3, ge=1, le=10)
    min_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    limit: int = Field(default=200, ge=1, le=1000)


class ExplainWhy(Params):
    event: str
    depth: int = Field(default=5, ge=1, le=10)
    limit: int = Field(default=10, ge=1, le=100)


class AddConcept(Params):
    name: str
    description: str = ""
    represents: list[str] = Field(default=[], description="Names of the entities it stands for.")


class SearchSemantic(Params):
    query: str
    limit: int = Field(default=10, ge=1, le=100)
    threshold: float = Field(default=0.3, ge=-1.0, le=1.0, description="Minimum cosine similarity.")
    include_events: bool = True


class GetStatistics(Params):
    pass


class ClearGraph(Params):
    graph: Graph
    confirm: bool = False


class ExportGraph(Params):
    format: Literal["cypher", "json"] = "json"
    offset: int = OFFSET
    limit: int = Field(default=5000, ge=1, le=20000, description="Nodes and relationships per page.")
    # Off unless asked: 384 floats a node made a page of 5,000 nodes 17.7 MB (and its build held
    # up other calls for seconds); an import computes the vectors again when they are missing.
    include_embeddings: bool = Field(
        default=False, description="Also export each node's vectors (large: about 4 KB a node in JSON)."
    )


# --- shaping -------------------------------------------------------------------------------


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


def event_out(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "description": event.description,
        "occurred_at": event.occurred_at,
        "ended_at": event.ended_at,
        "duration_seconds": event.duration_s,
        "entities": event.entities,
        "origin": event.origin,
    }


def fact_out(fact: Fact, now: str) -> dict[str, Any]:
    current = fact.valid_from <= now and (fact.valid_to is None or fact.valid_to > now)
    return {
        "id": fact.id,
        "subject": fact.subject,
        "predicate": fact.predicate,
        "object": fact.object,
        "valid_from": fact.valid_from,
        "valid_to": fact.valid_to,
        "current": current,
        "invalidated_by": fact.invalidated_by,
        "invalidated_at": fact.invalidated_at,
    }


def node_out(node: CausalNode) -> dict[str, Any]:
    return {"id": node.id, "kind": node.kind, "text": node.text, "occurred_at": node.occurred_at, "type": node.type}


def match_out(chain: Chain) -> dict[str, Any] | None:
    return {"how": chain.match.how, "score": chain.match.score} if chain.match is not None else None


def chain_out(chain: Chain, direction: str, depth: int) -> dict[str, Any]:
    return {
        "start": node_out(chain.start),
        "match": match_out(chain),
        "direction": direction,
        "depth": depth,
        "nodes": [
            {
                **node_out(n.node),
                "distance": n.distance,
                "confidence": n.confidence,
                "direction": n.direction,
                "via": n.via,
            }
            for n in chain.nodes
        ],
        "links": [
            {
                "id": link.id,
                "cause_id": link.cause_id,
                "effect_id": link.effect_id,
                "confidence": link.confidence,
                "evidence": link.evidence,
            }
            for link in chain.links
        ],
        "cycles": chain.cycles,
        "truncated_by_depth": chain.cut_by_depth,
        "truncated_by_limit": chain.cut_by_limit,
    }


def answer(event: CausalNode, explanations: list[Explanation]) -> str:
    """One sentence per explanation: "X because Y (0.95), which followed from Z (0.88)"."""
    if not explanations:
        return f"No causes of {event.text!r} are stored."
    sentences = []
    for explanation in explanations:
        causes = list(reversed(explanation.steps[:-1]))  # nearest cause first
        parts = [f"{causes[0].node.text} ({causes[0].confidence:g})"]
        parts += [f"which followed from {s.node.text} ({s.confidence:g})" for s in causes[1:]]
        sentences.append(f"{event.text} because {', '.join(parts)}; chain confidence {explanation.confidence:.4g}.")
    return " ".join(sentences)


def now_text(s: Services) -> str:
    return format_utc(s.memory.temporal.clock.now())


# --- entity graph --------------------------------------------------------------------------


@memory.tool(AddEntity, AddEntityResult, idempotent=True, title="Add entity")
async def add_entity(s: Services, p: AddEntity) -> dict[str, Any]:
    """Add an entity by name, or update it (properties merged, description replaced)."""
    record, created = await s.memory.entities.add_entity(
        s.project(p.project_id),
        name=p.name,
        entity_type=p.entity_type,
        properties=p.properties,
        description=p.description,
        replace_properties=p.replace_properties,
    )
    return {"entity": entity_out(record), "created": created}


@memory.tool(LinkEntities, LinkEntitiesResult, idempotent=True, title="Link entities")
async def link_entities(s: Services, p: LinkEntities) -> dict[str, Any]:
    """Link two entities by name (an unknown name is an error unless create_missing)."""
    link = await s.memory.entities.link(
        s.project(p.project_id),
        source=p.source,
        target=p.target,
        relationship=p.relationship,
        description=p.description,
        create_missing=p.create_missing,
    )
    return {
        "relationship": {
            "id": link.id,
            "source": entity_ref(link.source),
            "target": entity_ref(link.target),
            "type": link.type,
            "relationship": link.relationship,
        },
        "created": link.created,
        "entities_created": link.entities_created,
    }


@memory.tool(GetEntity, GetEntityResult, read_only=True, title="Get entity", supersedes="kg")
async def get_entity(s: Services, p: GetEntity) -> dict[str, Any] | str:
    """An entity by name with observations, properties, latest events and relationships (facts
    holding now, or as_of); or by entity_id (kg's form).

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
    if answer["has_more"]:
        answer["next_offset"] = p.offset + len(answer["relationships"])
    return answer


def _cut_to_budget(answer: dict[str, Any], observations_total: int, observation_offset: int) -> None:
    """Cut an entity's answer to the response budget: its latest events first, then its
    observations, then its relationships each get what room is left (the entity itself always
    shows); what was cut says where its next page starts."""
    entity, relationships = answer["entity"], answer["relationships"]
    observations, events = entity["observations"], answer["events"]
    bare = {**answer, "entity": {**entity, "observations": []}, "relationships": [], "events": []}
    room = limits.RESPONSE_BUDGET - 1_000 - limits.size(bare)
    answer["events"] = events[: limits.fit(events, room)]
    room -= limits.size(answer["events"])
    # At least one of each, so that paging on from the next offset always moves.
    shown = max(limits.fit(observations, room), 1 if observations else 0)
    if shown < len(observations):
        entity["observations"] = observations[:shown]
        entity["observations_total"] = observations_total
        entity["next_observation_offset"] = observation_offset + shown
    room -= limits.size(entity["observations"])
    kept = max(limits.fit(relationships, room), 1 if relationships else 0)
    if kept < len(relationships):
        answer["relationships"] = relationships[:kept]
        answer["has_more"] = True


# --- temporal graph ------------------------------------------------------------------------


@memory.tool(AddEvent, AddEventResult, title="Add event")
async def add_event(s: Services, p: AddEvent) -> dict[str, Any]:
    """Log an event at a time, with the entities it involves (named, or found in the text).

    The time is ISO or a phrase ('yesterday 14:30'); a duration is optional. Entities are given
    by name or found by name in the text; events are kept in time order."""
    result = await s.memory.temporal.add_event(
        s.project(p.project_id),
        description=p.description,
        occurred_at=p.occurred_at,
        duration=p.duration,
        ended_at=p.ended_at,
        entities=p.entities,
        find_entities=p.find_entities,
        reference_time=p.reference_time,
        tz=p.timezone,
    )
    return {"event": event_out(result.event), "entities_created": result.entities_created}


@memory.tool(AddFact, AddFactResult, idempotent=True, title="Add fact")
async def add_fact(s: Services, p: AddFact) -> dict[str, Any]:
    """State a fact (subject, predicate, object) valid from a time; a new value of a single-valued
    predicate closes the old fact (undoably).

    Subject and object are found by name or created. Closing the old fact's window is recorded,
    listable with list_invalidations and undoable with undo_invalidation. Whether a predicate
    holds one object at a time is decided by the predicate (works_on, lives_in, status, role,
    ...) unless single_valued says."""
    result = await s.memory.temporal.add_fact(
        s.project(p.project_id),
        subject=p.subject,
        predicate=p.predicate,
        object_=p.object,
        valid_from=p.valid_from,
        valid_to=p.valid_to,
        single_valued=p.single_valued,
        subject_type=p.subject_type,
        object_type=p.object_type,
        description=p.description,
        reference_time=p.reference_time,
        tz=p.timezone,
    )
    now = now_text(s)
    return {
        "fact": fact_out(result.fact, now),
        "entities_created": result.entities_created,
        "invalidated": [fact_out(f, now) for f in result.invalidated],
        "duplicate": result.duplicate,
    }


@memory.tool(GetFacts, FactList, read_only=True, title="Get facts")
async def get_facts(s: Services, p: GetFacts) -> dict[str, Any]:
    """Facts about an entity holding now, or as_of a time (all with include_history)."""
    project = s.project(p.project_id)
    graphs = s.memory
    subject_id = await graphs.resolver.entity_id(project, p.subject)
    if subject_id is None:
        raise NotFound(f"Entity with name {p.subject!r} not found.")
    ref = graphs.temporal.reference(p.reference_time, p.timezone)
    as_of = parse_instant(p.as_of, reference=ref, tz=p.timezone) if p.as_of is not None else None
    facts, more = await graphs.temporal.facts(
        project,
        subject_id,
        predicate=p.predicate,
        as_of=as_of,
        history=p.include_history,
        limit=p.limit,
        offset=p.offset,
    )
    answer: dict[str, Any] = {
        "facts": [fact_out(f, now_text(s)) for f in facts],
        "has_more": more,
        "as_of": None if p.include_history else format_utc(as_of or graphs.temporal.clock.now()),
    }
    omitted = shaping.keep_fitting(answer, "facts", at_least_one=True)
    if omitted:
        answer["has_more"] = True
        answer["next_offset"] = p.offset + len(answer["facts"])
        answer["note"] = shaping.left_out(
            len(answer["facts"]), len(facts), f"call get_facts again with offset {answer['next_offset']}."
        )
    return answer


@memory.tool(QueryTimeline, TimelineResult, read_only=True, title="Query timeline")
async def query_timeline(s: Services, p: QueryTimeline) -> dict[str, Any]:
    """Events and facts that began between `from` and `to` (or `during` a span), in time order.

    Optionally only those involving one entity; paged with limit and offset."""
    graphs = s.memory
    window = graphs.temporal.window(p.from_, p.to, p.during, p.reference_time, p.timezone)
    timeline = await graphs.temporal.timeline(
        s.project(p.project_id),
        window,
        entity=p.entity,
        include_facts=p.include_facts,
        limit=p.limit,
        offset=p.offset,
    )
    now = now_text(s)
    answer: dict[str, Any] = {
        "from": timeline.start,
        "to": timeline.end,
        "items": [
            {"kind": "event", "at": item.at, "event": event_out(item.event)}
            if item.event is not None
            else {"kind": "fact", "at": item.at, "fact": fact_out(item.fact, now) if item.fact else None}
            for item in timeline.items
        ],
        "has_more": timeline.has_more,
        "next_offset": timeline.next_offset,
    }
    if shaping.keep_fitting(answer, "items", at_least_one=True):
        shown = len(answer["items"])
        answer["has_more"] = True
        answer["next_offset"] = p.offset + shown
        answer["note"] = shaping.left_out(
            shown, len(timeline.items), f"call query_timeline again with offset {answer['next_offset']}."
        )
    return answer


@memory.tool(ListInvalidations, InvalidationList, read_only=True, title="List invalidations")
async def list_invalidations(s: Services, p: ListInvalidations) -> dict[str, Any]:
    """Facts closed by newer facts, latest first: which, by which, when."""
    facts, more = await s.memory.temporal.invalidations(
        s.project(p.project_id), entity=p.entity, limit=p.limit, offset=p.offset
    )
    now = now_text(s)
    return {
        "invalidations": [
            {
                "fact": fact_out(f, now),
                "invalidated_by": f.invalidated_by,
                "invalidated_at": f.invalidated_at,
                "valid_to_before": f.prior_valid_to,
            }
            for f in facts
        ],
        "has_more": more,
    }


@memory.tool(UndoInvalidation, FactResult, destructive=True, title="Undo invalidation")
async def undo_invalidation(s: Services, p: UndoInvalidation) -> dict[str, Any]:
    """Reopen an invalidated fact's window (retract_newer: also delete the fact that closed it)."""
    fact = await s.memory.temporal.undo_invalidation(s.project(p.project_id), p.fact_id, retract_newer=p.retract_newer)
    return {"fact": fact_out(fact, now_text(s))}


# --- causal graph --------------------------------------------------------------------------


@memory.tool(AddCausalLink, AddCausalLinkResult, idempotent=True, title="Add causal link")
async def add_causal_link(s: Services, p: AddCausalLink) -> dict[str, Any]:
    """Record that a cause led to an effect, with a confidence (0-1) and evidence.

    Each of cause and effect is matched to an event or entity (by id, exactly, in any case,
    fuzzily, then by meaning) or created as a new event. Stating a link again updates its
    confidence and adds new evidence to the evidence it had."""
    result = await s.memory.causal.add_link(
        s.project(p.project_id),
        cause=p.cause,
        effect=p.effect,
        confidence=p.confidence,
        evidence=p.evidence,
        create_missing=p.create_missing,
        described=True,
    )
    link = result.link
    return {
        "link": {
            "id": link.id,
            "cause_id": link.cause_id,
            "effect_id": link.effect_id,
            "confidence": link.confidence,
            "evidence": link.evidence,
        },
        "cause": node_out(result.cause),
        "effect": node_out(result.effect),
        "resolved": result.resolved,
        "scores": result.scores,
        "updated": result.updated,
    }


@memory.tool(GetCausalChain, CausalChainResult, read_only=True, title="Get causal chain")
async def get_causal_chain(s: Services, p: GetCausalChain) -> dict[str, Any]:
    """Causes (upstream), effects (downstream) or both of an event, up to `depth` links away.

    Each node's confidence is the product along its chain; cycles are reported, not followed."""
    chain = await s.memory.causal.chain(
        s.project(p.project_id),
        p.event,
        direction=p.direction,
        depth=p.depth,
        min_confidence=p.min_confidence,
        max_nodes=p.limit,
    )
    answer = chain_out(chain, p.direction, p.depth)
    _chain_within_budget(answer)
    return answer


def _chain_within_budget(chain: dict[str, Any]) -> None:
    """The nearest nodes that fit, then the links among them (at most half the room when the
    links are long), so that no link shown names a node left out."""
    nodes, links = chain["nodes"], chain["links"]
    room = limits.RESPONSE_BUDGET - shaping.MARGIN - limits.size({**chain, "nodes": [], "links": []})
    if limits.size(nodes) + limits.size(links) <= room:
        return
    shaping.keep_fitting(chain, "nodes", room=room - min(limits.size(links), room // 2))
    shown = {chain["start"]["id"], *(n["id"] for n in chain["nodes"])}
    chain["links"] = [x for x in links if x["cause_id"] in shown and x["effect_id"] in shown]
    shaping.keep_fitting(chain, "links", room=room - limits.size(chain["nodes"]))
    omitted = len(nodes) + len(links) - len(chain["nodes"]) - len(chain["links"])
    chain.update(truncated_by_limit=True, omitted=omitted)
    how = "ask for less depth, a higher min_confidence or a smaller limit."
    chain["note"] = shaping.left_out(len(chain["nodes"]), len(nodes), how)


@memory.tool(ExplainWhy, ExplainResult, read_only=True, title="Explain why")
async def explain_why(s: Services, p: ExplainWhy) -> dict[str, Any]:
    """Why an event happened: chains from its root causes, strongest first.

    Each chain comes with each link's confidence and evidence, the nodes' times, and the chain's
    confidence (their product)."""
    chain, explanations = await s.memory.causal.explain(s.project(p.project_id), p.event, depth=p.depth, limit=p.limit)
    return {
        "event": node_out(chain.start),
        "match": match_out(chain),
        "answer": answer(chain.start, explanations),
        "root_causes": [node_out(e.steps[0].node) for e in explanations],
        "explanations": [
            {
                "confidence": e.confidence,
                "chain": [
                    {**node_out(step.node), "confidence": step.confidence, "evidence": step.evidence}
                    for step in e.steps
                ],
            }
            for e in explanations
        ],
        "cycles": chain.cycles,
        "truncated_by_depth": chain.cut_by_depth,
    }


# --- semantic graph ------------------------------------------------------------------------


@memory.tool(AddConcept, AddConceptResult, idempotent=True, title="Add concept")
async def add_concept(s: Services, p: AddConcept) -> dict[str, Any]:
    """Add a concept, linked to similar concepts and to the entities it represents.

    A concept is an entity of type concept; the links to similar concepts carry their
    similarity score."""
    concept = await s.memory.semantic.add_concept(
        s.project(p.project_id), name=p.name, description=p.description, represents=p.represents
    )
    return {
        "concept": {"id": concept.id, "name": concept.name, "description": concept.description},
        "created": concept.created,
        "similar": [{"name": n, "score": sc} for n, sc in concept.similar],
        "represents": concept.represents,
    }


@memory.tool(SearchSemantic, SearchResult, read_only=True, title="Semantic search")
async def search_semantic(s: Services, p: SearchSemantic) -> dict[str, Any]:
    """Entities, concepts and events by meaning and words, at least `threshold` similar.

    A hybrid search; concepts come with their similar concepts."""
    hits = await s.memory.semantic.search(
        s.project(p.project_id), p.query, limit=p.limit, threshold=p.threshold, events=p.include_events
    )
    return {
        "results": [
            {
                "id": h.id,
                "kind": h.kind,
                "text": h.text,
                "score": h.score,
                "similarity": h.similarity,
                "type": h.type,
                "description": h.description,
                "occurred_at": h.occurred_at,
                "similar": [{"name": n, "score": sc} for n, sc in h.similar],
            }
            for h in hits
        ]
    }


# --- management ----------------------------------------------------------------------------


@memory.tool(GetStatistics, StatisticsResult, read_only=True, title="Graph statistics")
async def get_statistics(s: Services, p: GetStatistics) -> dict[str, Any]:
    """Counts per graph (entity, temporal, causal, semantic), and orphan nodes.

    Per graph: nodes and relationships of each kind, facts current and invalidated, vectors
    pending; orphans are nodes no other graph links to."""
    stats = await s.memory.views.statistics(s.project(p.project_id))
    return {
        "graphs": {
            "entity": stats.entity,
            "temporal": stats.temporal,
            "causal": stats.causal,
            "semantic": stats.semantic,
        },
        "orphans": stats.orphans,
    }


@memory.tool(ClearGraph, ClearResult, destructive=True, title="Clear graph")
async def clear_graph(s: Services, p: ClearGraph) -> dict[str, Any]:
    """Delete one graph's contents (semantic, temporal, causal, entity) or all; needs confirm: true.

    Cannot be undone."""
    if not p.confirm:
        raise InvalidParams(f"Clearing the {p.graph} graph deletes data for good: call again with confirm: true.")
    deleted = await s.memory.views.clear(s.project(p.project_id), p.graph)
    return {"graph": p.graph, "deleted": deleted}


@memory.tool(ExportGraph, ExportResult, read_only=True, title="Export graph")
async def export_graph(s: Services, p: ExportGraph) -> dict[str, Any]:
    """The project graph as Cypher statements or JSON nodes and edges, a page at a time.

    The Cypher statements rebuild it in an empty FalkorDB graph; read on with next_offset until
    it is null."""
    export = await s.memory.views.export(
        s.project(p.project_id), p.format, offset=p.offset, limit=p.limit, embeddings=p.include_embeddings
    )
    page: dict[str, Any] = {
        "format": export.format,
        "nodes": export.nodes,
        "edges": export.edges,
        "offset": export.offset,
        "next_offset": export.next_offset,
        "statements": export.statements,
        "items": export.items,
    }
    return _export_within_budget(page)


def _export_within_budget(page: dict[str, Any]) -> dict[str, Any]:
    """A page cut to the response budget: its first nodes and edges that fit, `next_offset`
    where the rest start. Index statements (the first page's) come before the rows and stay."""
    key = "items" if page["format"] == "json" else "statements"
    rows = page["nodes"] + page["edges"]
    whole = page[key]
    leading = len(whole) - rows  # index statements, not counted by offset
    if shaping.keep_fitting(page, key) and rows:
        # At least one row, so that paging moves on.
        shown = max(len(page[key]) - leading, 1)
        page[key] = whole[: leading + shown]
    if rows and len(page[key]) < len(whole):
        shown = len(page[key]) - leading
        page["nodes"] = min(page["nodes"], shown)
        page["edges"] = shown - page["nodes"]
        page["next_offset"] = page["offset"] + shown
        page["note"] = shaping.left_out(shown, rows, f"call export_graph again with offset {page['next_offset']}.")
    return page
