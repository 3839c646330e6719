"""The memory toolset's temporal graph: events and facts in time (`add_event`, `add_fact`,
`get_facts`, `query_timeline`) and the invalidations a newer fact made (`list_invalidations`,
`undo_invalidation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from polyg.core.text.time import format_utc, parse_instant
from polyg.errors import NotFound
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.memory.shared import LIMIT, OFFSET, REFERENCE, TIMEZONE, memory
from polyg.tools.registry import Params

# --- result shapes ---------------------------------------------------------------------

if TYPE_CHECKING:  # annotations only: the memory graphs' modules load when the services are made
    from polyg.core.memory.temporal import Event, Fact


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


# --- parameters ------------------------------------------------------------------------


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
        description="Closes the subject's other facts of the predicate (default: by predicate).",
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


# --- shaping ---------------------------------------------------------------------------


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


def now_text(s: Services) -> str:
    return format_utc(s.memory.temporal.clock.now())


# --- tools -----------------------------------------------------------------------------


@memory.tool(AddEvent, AddEventResult, title="Add event")
async def add_event(s: Services, p: AddEvent) -> AddEventResult:
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
    return shaping.typed(
        AddEventResult, {"event": event_out(result.event), "entities_created": result.entities_created}
    )


@memory.tool(AddFact, AddFactResult, idempotent=True, title="Add fact")
async def add_fact(s: Services, p: AddFact) -> AddFactResult:
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
    return shaping.typed(
        AddFactResult,
        {
            "fact": fact_out(result.fact, now),
            "entities_created": result.entities_created,
            "invalidated": [fact_out(f, now) for f in result.invalidated],
            "duplicate": result.duplicate,
        },
    )


@memory.tool(GetFacts, FactList, read_only=True, title="Get facts")
async def get_facts(s: Services, p: GetFacts) -> FactList:
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
    page = shaping.fit_page(answer, "facts", offset=p.offset, has_more=more)
    if page.cut:
        # next_offset only when the budget cut the page, as before (the model leaves it optional).
        answer.update(has_more=True, next_offset=page.next_offset, note=page.note("get_facts"))
    return shaping.typed(FactList, answer)


@memory.tool(QueryTimeline, TimelineResult, read_only=True, title="Query timeline")
async def query_timeline(s: Services, p: QueryTimeline) -> TimelineResult:
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
    page = shaping.fit_page(answer, "items", offset=p.offset, has_more=timeline.has_more)
    answer.update(has_more=page.has_more, next_offset=page.next_offset)
    if page.cut:
        answer["note"] = page.note("query_timeline")
    return shaping.typed(TimelineResult, answer)


@memory.tool(ListInvalidations, InvalidationList, read_only=True, title="List invalidations")
async def list_invalidations(s: Services, p: ListInvalidations) -> InvalidationList:
    """Facts closed by newer facts, latest first: which, by which, when."""
    facts, more = await s.memory.temporal.invalidations(
        s.project(p.project_id), entity=p.entity, limit=p.limit, offset=p.offset
    )
    now = now_text(s)
    return shaping.typed(
        InvalidationList,
        {
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
        },
    )


@memory.tool(UndoInvalidation, FactResult, destructive=True, title="Undo invalidation")
async def undo_invalidation(s: Services, p: UndoInvalidation) -> FactResult:
    """Reopen an invalidated fact (retract_newer: also delete the fact that closed it)."""
    fact = await s.memory.temporal.undo_invalidation(s.project(p.project_id), p.fact_id, retract_newer=p.retract_newer)
    return shaping.typed(FactResult, {"fact": fact_out(fact, now_text(s))})
