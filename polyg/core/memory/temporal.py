"""The temporal view: events on a timeline, and facts with validity windows.

Events are `:Event` nodes with an instant (`occurred_at`), an optional end (from a duration),
the entities they involve, and their place in the `T_BEFORE` chain. Facts are relationships
between entities whose type is the predicate and whose window [valid_from, valid_to) says when
they held. Nothing is deleted when the world changes: a newer value of a single-valued
predicate closes the older fact's window and records the invalidation (by which fact, when),
which can be listed and undone. Reads of facts default to what holds now; `as_of` asks about
another time.

Times follow `polyg.core.text.time`: ISO 8601 or English phrases, resolved against the reference
time (the caller's `reference_time`, else the clock); input without a zone is read in `tz`,
else in the reference's zone, else UTC; everything is stored and returned in UTC.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edges import new_edge_id, type_of
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.memory.entity_graph import EntityGraph
from polyg.core.memory.event_chain import EventChain, NewEvent
from polyg.core.memory.named import stored_type
from polyg.core.search.resolve import Resolver, fulltext_query, index_rows
from polyg.core.text.time import (
    Clock,
    Interval,
    epoch_us,
    format_utc,
    parse_instant,
    parse_range,
    parse_time,
    resolve_zone,
    to_utc,
    validity_window,
)
from polyg.errors import InvalidParams, NotFound
from polyg.names import new_id, now_iso
from polyg.store.falkor import Row
from polyg.store.names import ENTITY, RelType
from polyg.store.queries import memories as memories_q
from polyg.store.queries import resolve as resolve_q
from polyg.store.queries import temporal as q

# Predicates that hold one value at a time: a new object closes the old fact's window. Compared
# on the predicate's words, lower-cased ("Works on" is works_on). A call can say otherwise.
SINGLE_VALUED = frozenset(
    {
        "works_on",
        "works_at",
        "works_for",
        "employed_by",
        "lives_in",
        "based_in",
        "located_in",
        "reports_to",
        "managed_by",
        "owned_by",
        "assigned_to",
        # Team membership (remember's canonical predicate for "joined / works on / is on / moved
        # to the X team"): a new team closes the previous one, whatever verb stated either.
        "member_of",
        "married_to",
        # A pupil's school (remember's predicate for "goes to / attends / started at" a school).
        "studies_at",
        "role",
        "has_role",
        "title",
        "status",
        "has_status",
        "version",
        "current_version",
        "leads",
    }
)
# How long a timeline trusts the fact types it read when this process has not written since.
FACT_TYPES_TTL_S = 2.0
REPAIR_BATCH = 5_000
MAX_MENTION_CANDIDATES = 50

_DURATION_ISO = re.compile(
    r"P(?:(?P<weeks>\d+(?:\.\d+)?)W)?(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
_DURATION_PART = re.compile(
    r"(\d+(?:\.\d+)?)\s*(weeks?|w|days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b", re.IGNORECASE
)
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    """ISO 8601 durations (PT1H30M, P2D) or phrases ("90 minutes", "1h 30m", "2 days")."""
    cleaned = text.strip()
    iso = _DURATION_ISO.fullmatch(cleaned)
    if iso is not None and any(iso.groupdict().values()):
        parts = {k: float(v) for k, v in iso.groupdict().items() if v}
        return timedelta(**parts)
    total = 0.0
    rest = cleaned.lower().replace(" and ", " ").replace(",", " ")
    for amount, unit in _DURATION_PART.findall(rest):
        key = unit[0] if not unit.startswith("min") else "m"
        total += float(amount) * _UNIT_SECONDS[key]
    leftover = _DURATION_PART.sub("", rest).strip()
    if total <= 0 or leftover:
        raise InvalidParams(
            f"Cannot read the duration {text[:80]!r}: use ISO 8601 (PT30M, P2D) or a phrase such as '90 minutes'."
        )
    return timedelta(seconds=total)


def mentions(text: str, name: str) -> bool:
    """Whether `name` occurs in `text` as a whole word or phrase, in any case: in the lower-cased
    text, with no word character just before or after it. Searched as a plain substring: a
    pattern compiled per name missed the regex cache for most names, and each text is checked
    against up to 50 candidate names."""
    haystack, needle = text.lower(), name.lower()
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not _is_word_char(haystack[start - 1])) and (
            end == len(haystack) or not _is_word_char(haystack[end])
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    """What a regex word character is in a str pattern: a letter, a digit or numeric, or `_`."""
    return char.isalnum() or char == "_"


# A time as stored (`format_utc`): its instant depends on nothing but the text.
_STORED_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z")


def stored_instant(text: str) -> datetime:
    """The instant of a stored time. Read once per text: a write of a fact reads the windows
    of every fact its subject holds with that predicate (a hundred for someone who worked on a
    hundred things), each a full parse."""
    return _stored_instant(text) if _STORED_TIME.fullmatch(text) else parse_instant(text)


@functools.lru_cache(maxsize=65_536)
def _stored_instant(text: str) -> datetime:
    return parse_instant(text)


def fact_type(fid: str) -> RelType:
    """A fact's predicate type, from its id (facts are edges: `rel_<hex>_<TYPE>`)."""
    rel_type = type_of(fid)
    if rel_type is None:
        raise InvalidParams(f"{fid[:80]!r} is not a fact id (rel_<hex>_<predicate>).")
    return rel_type


def predicate_key(predicate: str) -> str:
    return "_".join(re.findall(r"\w+", predicate.lower()))


# --- typed results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    id: str
    description: str
    occurred_at: str | None
    ended_at: str | None = None
    duration_s: float | None = None
    entities: list[str] = field(default_factory=list)
    origin: str = "event"
    created_at: str | None = None
    # The memories (remember) it was extracted from.
    memories: list[str] = field(default_factory=list)
    context: str | None = None  # a memory's: who or where it is from


@dataclass(frozen=True)
class Fact:
    id: str
    subject: str
    subject_id: str
    predicate: str
    object: str
    object_id: str
    valid_from: str
    valid_to: str | None
    invalidated_by: str | None = None
    invalidated_at: str | None = None
    created_at: str | None = None
    prior_valid_to: str | None = None
    memories: list[str] = field(default_factory=list)  # the memories that stated it

    @property
    def window(self) -> Interval:
        return Interval(stored_instant(self.valid_from), stored_instant(self.valid_to) if self.valid_to else None)


@dataclass(frozen=True)
class EventResult:
    event: Event
    entities_created: list[str]
    # name -> id of every entity it involves.
    entity_ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FactResult:
    fact: Fact
    entities_created: list[str]
    invalidated: list[Fact]
    duplicate: bool = False


@dataclass(frozen=True)
class TimelineItem:
    kind: str  # "event" | "fact"
    at: str
    event: Event | None = None
    fact: Fact | None = None


@dataclass(frozen=True)
class Timeline:
    start: str | None
    end: str | None
    items: list[TimelineItem]
    has_more: bool
    next_offset: int | None


def event_from(row: Row) -> Event:
    fields, names = row[0], row[1]
    return Event(
        id=fields["id"],
        description=fields["description"],
        occurred_at=fields.get("occurred_at"),
        ended_at=fields.get("ended_at"),
        duration_s=fields.get("duration_s"),
        entities=sorted(n for n in names if n is not None),
        origin=fields.get("origin") or "event",
        created_at=fields.get("created_at"),
        memories=list(fields.get("memories") or []),
        context=fields.get("context"),
    )


def fact_from(row: Row) -> Fact:
    rid, _type, text, sid, sname, oid, oname, vfrom, vto, inv_by, inv_at, created, memories = row[:13]
    prior = row[13] if len(row) > 13 else None
    return Fact(rid, sname, sid, text, oname, oid, vfrom, vto, inv_by, inv_at, created, prior, list(memories or []))


# --- the service ------------------------------------------------------------------------------


class TemporalGraph:
    def __init__(self, entities: EntityGraph) -> None:
        # The entity view's context, resolver, relationship types and clock: one set for both.
        self.entities = entities
        self.ctx: GraphContext = entities.ctx
        self.resolver: Resolver = entities.resolver
        self.reltypes: RelTypeService = entities.reltypes
        self.clock: Clock = entities.clock
        self._marked: dict[str, set[str]] = {}  # fact types this process has marked, per project
        self._fact_types_checked: set[str] = set()
        self._fact_types_cache: dict[str, tuple[int, float, list[RelType]]] = {}  # (writes, when, types)
        self._indexed: dict[str, set[str]] = {}  # fact types whose valid_from_us index this process made
        self.chain = EventChain(self.ctx)  # events' places in time

    def reference(self, reference_time: str | None, tz: str | None = None) -> datetime:
        """The instant relative phrases are read against: the caller's, else the clock's now."""
        if reference_time is None:
            return self.clock.now()
        try:
            # An ISO time keeps its offset: naive phrases are then read in the caller's zone.
            given = datetime.fromisoformat(reference_time.strip())
        except ValueError:
            return parse_instant(reference_time, tz=tz, clock=self.clock)
        return given if given.tzinfo is not None else to_utc(given, resolve_zone(tz))

    # --- entities, shared by the writes below ----------------------------------------------

    async def _entity_ids(self, project: str, names: list[str], given: dict[str, str]) -> dict[str, str]:
        """name -> id of the names that exist: those in `given`, the others looked up."""
        ids = {name: given[name] for name in names if name in given}
        rest = [name for name in names if name not in ids]
        if rest:
            ids.update(await self.resolver.entity_ids(project, rest))
        return ids

    async def mentioned_entities(self, project: str, text: str) -> dict[str, str]:
        """Entities whose names occur in `text` (name -> id), found through the full-text index."""
        candidates = await self.entity_candidates(project, text)
        return {name: entity_id for name, entity_id in candidates.items() if mentions(text, name)}

    async def entity_candidates(self, project: str, text: str) -> dict[str, str]:
        """Entities whose names share a word with `text` (name -> id), the full-text index's
        best: those it names whole, and those it may mean by part of their name ("Alice" for
        "Alice Chen"; remember's extraction decides)."""
        query = fulltext_query(text)
        if not query:
            return {}
        await self.ctx.indexes.check(project)
        rows = await index_rows(resolve_q.text_candidates(self.ctx, project, ENTITY, query, MAX_MENTION_CANDIDATES))
        return {name: entity_id for entity_id, name in rows if name}

    # --- events -----------------------------------------------------------------------------

    async def add_event(
        self,
        project: str,
        *,
        description: str,
        occurred_at: str,
        duration: str | None = None,
        ended_at: str | None = None,
        entities: list[str] | None = None,
        find_entities: bool = True,
        reference_time: str | None = None,
        tz: str | None = None,
        origin: str = "event",
        memory: str | None = None,
        context: str | None = None,
        entity_ids: dict[str, str] | None = None,
        entity_types: dict[str, str] | None = None,
    ) -> EventResult:
        """An event; `memory`: the id of the memory it was extracted from (remember);
        `context`: a memory's, who or where it is from; `entity_ids`: the ids of `entities`
        the caller looked up already (`Resolver.entity_ids`); `entity_types`: the types of
        those it creates."""
        limits.text(description, "description", max_len=limits.MAX_TEXT)
        names = [limits.name(n, f"entities[{i}]") for i, n in enumerate(entities or [])]
        ref = self.reference(reference_time, tz)
        at = parse_time(occurred_at, reference=ref, tz=tz, clock=self.clock).at
        end: datetime | None = None
        if duration is not None:
            end = at + parse_duration(duration)
        if ended_at is not None:
            end = parse_instant(ended_at, reference=ref, tz=tz, clock=self.clock)
        window = Interval(at, end)  # refuses an end before the start
        # Everything is checked: now the writes.
        event_id = new_id("evt")
        # The lookups and its neighbours in time at once; the write only once all of them
        # succeeded, and one write: the event, its links and its place in the chain, all or
        # nothing. The vector is the vectorizer's (searches wait for it), so that an event
        # costs no model run here.
        ids, mentioned, chain = await asyncio.gather(
            self._entity_ids(project, names, entity_ids or {}),
            self.mentioned_entities(project, description) if find_entities else _no_names(),
            self.chain.read(project, [epoch_us(at)]),
        )
        ids, created = await self.entities.ensure(project, names, entity_types, known=ids)
        for name, entity_id in mentioned.items():
            ids.setdefault(name, entity_id)
        memories = (memory,) if memory else ()
        new = NewEvent(event_id, description, at, end, tuple(ids.values()), origin, memories, context)
        await self.chain.write(project, [new], chain)
        start_s, end_s = window.as_strings()
        duration_s = window.duration.total_seconds() if window.duration is not None else None
        event = Event(
            event_id,
            description,
            start_s,
            end_s,
            duration_s,
            sorted(ids),
            origin,
            memories=list(memories),
            context=context,
        )
        return EventResult(event, created, ids)

    async def events(self, project: str, ids: list[str]) -> list[Event]:
        rows = await q.events_by_ids(self.ctx, project, ids)
        by_id = {event.id: event for event in map(event_from, rows)}
        return [by_id[i] for i in ids if i in by_id]

    # --- facts ------------------------------------------------------------------------------

    async def add_fact(
        self,
        project: str,
        *,
        subject: str,
        predicate: str,
        object_: str,
        valid_from: str | None = None,
        valid_to: str | None = None,
        single_valued: bool | None = None,
        subject_type: str | None = None,
        object_type: str | None = None,
        description: str = "",
        reference_time: str | None = None,
        tz: str | None = None,
        memory: str | None = None,
        entity_ids: dict[str, str] | None = None,
        after: Awaitable[object] | None = None,
        settles: str | None = None,
    ) -> FactResult:
        """A fact; `memory`: the id of the memory that stated it (remember). The same fact
        stated again by another memory is not written twice: that memory is added to its own;
        nor is one this memory stated already (its remember failed after writing it, and is
        told again), whatever happened to its window since.
        `entity_ids`: names' ids the caller looked up already (`Resolver.entity_ids`);
        `after`: a write the fact's own must follow (the memory's), awaited once the facts it
        may replace are read; `settles`: a memory whose `unfinished` mark this call's write
        clears too (by a write of its own when the fact needs none): remember's last item."""
        limits.name(subject, "subject")
        limits.name(object_, "object")
        limits.text(predicate, "predicate", max_len=limits.MAX_TYPE)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        for value, what in ((subject_type, "subject_type"), (object_type, "object_type")):
            if value is not None:
                limits.type_(value, what)
        ref = self.reference(reference_time, tz)
        window = validity_window(valid_from, valid_to, reference=ref, tz=tz, clock=self.clock)
        rel_type = RelType(stored_type(predicate))
        single = predicate_key(predicate) in SINGLE_VALUED if single_valued is None else single_valued
        # Everything is checked: now the writes.
        types = {name: kind for name, kind in ((subject, subject_type), (object_, object_type)) if kind}
        given = entity_ids or {}
        both = {name: given[name] for name in (subject, object_) if name in given}
        ids, created = await self.entities.ensure(
            project, [subject, object_], types, known=both if len(both) == len({subject, object_}) else None
        )
        await self.reltypes.ensure(project, [rel_type])  # registered as a type, its edge ids indexed
        await self._mark_fact_type(project, rel_type)
        sid, oid = ids[subject], ids[object_]
        async with self.ctx.entity_locks(project, [sid]):
            # Only facts that end after the new one begins can hold over its window or overlap it.
            start = format_utc(window.start) if window.start is not None else None
            rows = await q.facts_of(self.ctx, project, sid, rel_type, None, ending_after=start)
            existing = [fact_from(r) for r in rows]
            same = [f for f in existing if f.object_id == oid and f.predicate == predicate]
            if after is not None:
                await after
            held = next((f for f in same if memory and memory in f.memories), None)
            held = held or next((f for f in same if f.window.covers(window)), None)
            if held is not None:
                if memory and memory not in held.memories:
                    await q.cite_fact(self.ctx, project, rel_type, held.id, memory, settles=settles)
                    held = replace(held, memories=[*held.memories, memory])
                elif settles is not None:
                    await memories_q.settle(self.ctx, project, settles)
                return FactResult(held, created, [], duplicate=True)
            closes, closed_by = self._replacements(existing, oid, window) if single else ([], None)
            new_end = window.end
            if closed_by is not None:
                new_end = closed_by.window.start
            new_id_ = new_edge_id(rel_type)
            now = now_iso()
            start_s, _ = window.as_strings()
            end_s = format_utc(new_end) if new_end is not None else None
            await q.create_fact(
                self.ctx,
                project,
                rel_type,
                {
                    "id": new_id_,
                    "s": sid,
                    "o": oid,
                    "label": None if predicate == rel_type else predicate,
                    "description": description,
                    "valid_from": start_s,
                    "valid_from_us": epoch_us(window.start) if window.start is not None else None,
                    "valid_to": end_s,
                    "invalidated_by": closed_by.id if closed_by is not None else None,
                    "invalidated_at": now if closed_by is not None else None,
                    "prior_valid_to": window.as_strings()[1] if closed_by is not None else None,
                    "now": now,
                    "memories": [memory] if memory else None,
                },
                closes=[{"id": f.id, "at": start_s} for f in closes],
                settles=settles,
            )
        fact = Fact(
            new_id_,
            subject,
            sid,
            predicate,
            object_,
            oid,
            start_s or "",
            end_s,
            closed_by.id if closed_by else None,
            now if closed_by else None,
            now,
            memories=[memory] if memory else [],
        )
        invalidated = [
            Fact(
                f.id,
                f.subject,
                f.subject_id,
                f.predicate,
                f.object,
                f.object_id,
                f.valid_from,
                start_s,
                new_id_,
                now,
                f.created_at,
                f.valid_to,
                f.memories,
            )
            for f in closes
        ]
        return FactResult(fact, created, invalidated)

    async def end_fact(
        self,
        project: str,
        *,
        subject: str,
        predicate: str,
        object_: str,
        at: datetime,
        memory: str | None = None,
        entity_ids: dict[str, str] | None = None,
        after: Awaitable[object] | None = None,
        settles: str | None = None,
    ) -> list[Fact]:
        """Close the facts (subject, predicate, object) that held at `at`: a memory said they
        ended then ("X left Y", "no longer works on Y", the one replaced in "X replaced Y as
        lead of Z"). Nothing is written when none held then (one that starts later is left as
        it is). `after`: the memory's own write, awaited first; `settles` as for add_fact.
        Returns the facts closed, with their new end."""
        ids = await self._entity_ids(project, [subject, object_], entity_ids or {})
        if after is not None:
            await after
        rel_type = RelType(stored_type(predicate))
        at_s = format_utc(at)
        held: list[Fact] = []
        if subject in ids and object_ in ids:
            async with self.ctx.entity_locks(project, [ids[subject]]):
                rows = await q.facts_of(self.ctx, project, ids[subject], rel_type, at_s)
                held = [
                    f
                    for f in map(fact_from, rows)
                    if f.object_id == ids[object_] and f.predicate == predicate and f.invalidated_by is None
                ]
                if held:
                    await q.end_facts(self.ctx, project, rel_type, [f.id for f in held], at_s, memory, settles=settles)
        if not held and settles is not None:
            await memories_q.settle(self.ctx, project, settles)
        return [replace(f, valid_to=at_s) for f in held]

    @staticmethod
    def _replacements(existing: list[Fact], object_id: str, window: Interval) -> tuple[list[Fact], Fact | None]:
        """For a single-valued predicate: the facts with another object that the new one closes
        (those that started no later and still held at its start), and the earliest fact that
        started after it, which closes the new one in turn."""
        assert window.start is not None
        closes: list[Fact] = []
        later: list[Fact] = []
        for fact in existing:
            if fact.object_id == object_id or not fact.window.overlaps(window):
                continue
            old = fact.window
            assert old.start is not None
            if old.start <= window.start:
                if old.end is None or old.end > window.start:
                    closes.append(fact)
            else:
                later.append(fact)
        first_later = min(later, key=lambda f: (f.valid_from, f.id), default=None)
        return closes, first_later

    async def facts(
        self,
        project: str,
        subject_id: str,
        *,
        predicate: str | None = None,
        as_of: datetime | None = None,
        history: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[Fact], bool]:
        """Facts about the subject: those holding at `as_of` (default now), or every one with
        `history`; a page of them, and whether more follow."""
        limits.limit(limit)
        if offset < 0:
            raise InvalidParams("offset must not be negative.")
        rel_type = RelType(stored_type(predicate)) if predicate is not None else None
        at = None if history else format_utc(as_of or self.clock.now())
        rows = await q.facts_of(self.ctx, project, subject_id, rel_type, at, offset, limit + 1)
        return [fact_from(r) for r in rows[:limit]], len(rows) > limit

    async def facts_about(
        self, project: str, object_id: str, *, as_of: datetime | None = None, limit: int = 100
    ) -> list[Fact]:
        """Facts whose object is the entity, holding at `as_of` (default now): the inverse of
        `facts`, so "who leads the Platform team" finds "Alice leads Platform team"."""
        limits.limit(limit)
        rows = await q.facts_to(self.ctx, project, object_id, format_utc(as_of or self.clock.now()), limit)
        return [fact_from(r) for r in rows]

    # --- timeline ---------------------------------------------------------------------------

    def window(
        self,
        start: str | None,
        end: str | None,
        during: str | None,
        reference_time: str | None,
        tz: str | None,
    ) -> Interval:
        """The span a timeline asks about. `start` begins at the start of the period it names and
        `end` includes the period it names ("to 2026-01-07" includes that day); `during` names
        the whole span ("last week")."""
        ref = self.reference(reference_time, tz)
        lo = parse_time(start, reference=ref, tz=tz, clock=self.clock).period.start if start else None
        hi = parse_time(end, reference=ref, tz=tz, clock=self.clock).period.end if end else None
        if during is not None:
            span = parse_range(during, reference=ref, tz=tz, clock=self.clock)
            lo = max(t for t in (lo, span.start) if t is not None) if (lo or span.start) else None
            hi = min(t for t in (hi, span.end) if t is not None) if (hi or span.end) else None
        if lo is not None and hi is not None and hi < lo:
            raise InvalidParams(f"The timeline's end ({format_utc(hi)}) is before its start ({format_utc(lo)}).")
        return Interval(lo, hi)

    async def timeline(
        self,
        project: str,
        window: Interval,
        *,
        entity: str | None = None,
        entity_id: str | None = None,
        include_facts: bool = True,
        limit: int = 50,
        offset: int = 0,
    ) -> Timeline:
        """The events and facts of `window`, of one entity when given by name (`entity`) or by
        the id a caller resolved already (`entity_id`)."""
        limits.limit(limit)
        if offset < 0:
            raise InvalidParams("offset must not be negative.")
        if entity_id is None and entity is not None:
            entity_id = await self.resolver.entity_id(project, entity)
            if entity_id is None:
                raise NotFound(f"Entity with name {entity!r} not found.")
        lo_us = epoch_us(window.start) if window.start is not None else None
        hi_us = epoch_us(window.end) if window.end is not None else None
        wanted = offset + limit + 1
        # Without an entity, facts are read type by type (each through its index).
        fact_types = await self._fact_types(project) if include_facts and entity_id is None else []
        rows = await q.timeline(
            self.ctx,
            project,
            window.as_strings(),
            (lo_us, hi_us),
            entity_id,
            facts=include_facts,
            fact_types=fact_types,
            limit=wanted,
        )
        items: list[TimelineItem] = []
        for kind, item in rows:
            if kind == "event":
                event = event_from(item)
                items.append(TimelineItem("event", event.occurred_at or "", event=event))
            else:
                fact = fact_from(item)
                items.append(TimelineItem("fact", fact.valid_from, fact=fact))
        items.sort(key=lambda item: (item.at, item.kind, (item.event or item.fact).id))  # type: ignore[union-attr]
        page = items[offset : offset + limit]
        more = len(items) > offset + limit
        lo, hi = window.as_strings()
        return Timeline(lo, hi, page, more, offset + limit if more else None)

    async def _fact_types(self, project: str) -> list[RelType]:
        """Types that hold facts, as marked on their :RelationshipType, each with the index a
        timeline reads it through. Read again after this process writes to the project, else
        at most every `FACT_TYPES_TTL_S` (another process may add a type meanwhile).

        Once per project and process, facts written before types were marked (or before facts
        had `valid_from_us`) are found by one scan, and marked (or given it)."""
        if project not in self._fact_types_checked:
            await self._repair_fact_types(project)
            self._fact_types_checked.add(project)
        writes, now = self.ctx.writes.get(project, 0), time.monotonic()
        cached = self._fact_types_cache.get(project)
        if cached is not None and cached[0] == writes and now - cached[1] < FACT_TYPES_TTL_S:
            return cached[2]
        types = [RelType(t) for t in await q.fact_types(self.ctx, project)]
        for rel_type in types:
            await self._index_fact_type(project, rel_type)
        self._fact_types_cache[project] = (self.ctx.writes.get(project, 0), now, types)
        return types

    async def _repair_fact_types(self, project: str) -> None:
        found = await q.discover_fact_types(self.ctx, project)
        if not found:
            return
        names = [RelType(t) for t, _ in found]
        await self.reltypes.ensure(project, names)
        await q.mark_fact_types(self.ctx, project, names)
        for rel_type, missing in found:
            while missing:
                rows = await q.facts_without_us(self.ctx, project, RelType(rel_type), REPAIR_BATCH)
                await q.set_valid_from_us(
                    self.ctx, project, RelType(rel_type), [{"id": i, "us": epoch_us(parse_instant(v))} for i, v in rows]
                )
                missing = len(rows) == REPAIR_BATCH

    async def _index_fact_type(self, project: str, rel_type: RelType) -> None:
        indexed = self._indexed.setdefault(project, set())
        if rel_type not in indexed:
            await q.create_valid_from_index(self.ctx, project, rel_type)
            indexed.add(rel_type)

    async def mark_fact_types(self, project: str, rel_types: list[RelType]) -> None:
        """Register types that hold facts written outside `add_fact` (an import) as such."""
        await self.reltypes.ensure(project, rel_types)
        for rel_type in rel_types:
            await self._mark_fact_type(project, rel_type)

    async def _mark_fact_type(self, project: str, rel_type: RelType) -> None:
        marked = self._marked.setdefault(project, set())
        if rel_type not in marked:
            await q.mark_fact_types(self.ctx, project, [rel_type])
            await self._index_fact_type(project, rel_type)
            marked.add(rel_type)

    # --- invalidations ----------------------------------------------------------------------

    async def invalidations(
        self, project: str, *, entity: str | None = None, limit: int = 50, offset: int = 0
    ) -> tuple[list[Fact], bool]:
        limits.limit(limit)
        entity_id = None
        if entity is not None:
            entity_id = await self.resolver.entity_id(project, entity)
            if entity_id is None:
                raise NotFound(f"Entity with name {entity!r} not found.")
        rows = await q.invalidations(self.ctx, project, entity_id, offset, limit + 1)
        return [fact_from(r) for r in rows[:limit]], len(rows) > limit

    async def undo_invalidation(self, project: str, fid: str, *, retract_newer: bool = False) -> Fact:
        """Give an invalidated fact its window back; with `retract_newer`, delete the fact that
        invalidated it (it was wrong), else leave it in place."""
        rel_type = fact_type(fid)
        rows = await q.fact_by_id(self.ctx, project, rel_type, fid)
        if not rows:
            raise NotFound(f"Fact {fid} not found.")
        fact = fact_from(rows[0])
        if fact.invalidated_by is None:
            raise InvalidParams(f"Fact {fid} was not invalidated: there is nothing to undo.")
        newer = fact.invalidated_by
        await q.reopen_fact(self.ctx, project, rel_type, fid)
        if retract_newer:
            await q.delete_fact(self.ctx, project, fact_type(newer), newer)
        rows = await q.fact_by_id(self.ctx, project, rel_type, fid)
        return fact_from(rows[0])


async def _no_names() -> dict[str, str]:
    return {}
