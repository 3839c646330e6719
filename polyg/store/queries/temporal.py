"""Events, their order, and facts with validity windows (the temporal view).

Events are `:Event` nodes; `(:Event)-[:INVOLVES]->(:Entity)`; dated events form one chain
`(:Event)-[:T_BEFORE]->(:Event)` in (occurred_at, id) order. Facts are relationships between
entities that carry `valid_from` (and `valid_to` once closed); the relationship type is the
predicate. Times are `polyg.core.text.time.format_utc` strings, so text order is time order.

Window filters over the whole graph go through range indexes on integer microseconds
(`Event.occurred_us`, and `valid_from_us` on each fact type's edges): FalkorDB's range index
answers `<` and `<=` on a string property with every node, so strings are only compared
where no index is involved (an entity's own facts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyg.errors import StoreError
from polyg.store.falkor import Row
from polyg.store.names import RelType
from polyg.store.queries import Runner
from polyg.store.queries.edges import create_relationships
from polyg.store.queries.memories import settling
from polyg.store.queries.nodes import NEW_REV

EVENT_FIELDS = "ev {.id, .description, .occurred_at, .ended_at, .duration_s, .created_at, .origin, .memories, .context}"
FACT_FIELDS = (
    "r.id, type(r), coalesce(r.label, type(r)), s.id, s.name, o.id, o.name, r.valid_from, r.valid_to, "
    "r.invalidated_by, r.invalidated_at, r.created_at, r.memories"
)
IS_FACT = "r.valid_from IS NOT NULL"


def _facts_touching(entity_id: str | None, where: str) -> str:
    """A clause binding s, r, o for facts meeting `where`: all, or those the entity (`$entity`)
    is the subject or object of (read from the entity's own relationships, not a scan)."""
    if entity_id is None:
        return f"MATCH (s:Entity)-[r]->(o:Entity) WHERE {where} WITH s, r, o"
    return (
        f"MATCH (:Entity {{id: $entity}})-[r]-(:Entity) WHERE {where} "
        "WITH DISTINCT r WITH r, startNode(r) AS s, endNode(r) AS o"
    )


async def create_events(
    run: Runner,
    project: str,
    events: Sequence[dict[str, Any]],
    *,
    links: Sequence[tuple[str, str]] = (),
    unlinks: Sequence[tuple[str, str]] = (),
) -> None:
    """Create events (each: id, description, occurred_at, occurred_us, ended_at, duration_s,
    origin, now, memories: the ids of the memories it was extracted from, or None; context:
    who or where a memory is from, or None; unfinished: true for a memory whose facts or
    causal links follow, else None; involves: the ids of the entities it involves),
    their INVOLVES links, and their places in the T_BEFORE chain (`unlinks`: the (earlier,
    later) links they go between, removed; `links`: the (earlier, later) links to make, new
    events and their neighbours), in one write: all of it or nothing. Each gets a new text
    revision and no vector: the vectorizer embeds it (`polyg.core.graph.vectorizer`)."""
    # Each step ends in an aggregate, so that a step with nothing to do (an empty list) still
    # hands one row to the next. A neighbour deleted meanwhile matches nothing: its link is
    # skipped, not the whole write.
    await run.write(
        project,
        "UNWIND $events AS e "
        "CREATE (ev:Event {id: e.id, description: e.description, created_at: e.now, origin: e.origin, "
        f"rev: {NEW_REV}}}) "
        "SET ev.occurred_at = e.occurred_at, ev.occurred_us = e.occurred_us, ev.ended_at = e.ended_at, "
        "ev.duration_s = e.duration_s, ev.memories = e.memories, ev.context = e.context, "
        "ev.unfinished = e.unfinished "
        "WITH count(ev) AS made "
        "UNWIND $unlinks AS u OPTIONAL MATCH (:Event {id: u[0]})-[b:T_BEFORE]->(:Event {id: u[1]}) DELETE b "
        "WITH count(*) AS unlinked "
        "UNWIND $links AS l MATCH (a:Event {id: l[0]}), (z:Event {id: l[1]}) CREATE (a)-[:T_BEFORE]->(z) "
        "WITH count(*) AS linked "
        "UNWIND $events AS e UNWIND e.involves AS eid MATCH (ev:Event {id: e.id}), (x:Entity {id: eid}) "
        "CREATE (ev)-[:INVOLVES]->(x)",
        {"events": list(events), "links": [list(p) for p in links], "unlinks": [list(p) for p in unlinks]},
    )


# How far from an event its neighbours in time are looked for first: a bounded range reads only
# the events inside it, an open one every event on that side (sorted to take one). New events
# are usually near the latest ones, so the window almost always answers.
NEIGHBOUR_WINDOW_US = 86_400_000_000


def _nearest(side: str, bound: str) -> str:
    order, op = ("DESC", "<") if side == "before" else ("", ">")
    return (
        f"MATCH (p:Event) WHERE p.occurred_us {op} $at{bound} WITH p ORDER BY p.occurred_us {order}, p.id {order} "
        f"LIMIT 1 RETURN '{side}' AS k, p.id AS id"
    )


# What is read around one instant: the events nearest before it, at it, and after it.
InstantNeighbours = dict[str, list[str]]


async def neighbours_at(run: Runner, project: str, at_us: int) -> InstantNeighbours:
    """The dated events around the instant `at_us`, for `pick_neighbours` to place an event
    there ("before": the nearest earlier, "same": all at it, "after": the nearest later).

    Only plain comparisons reach the range index: with `p.occurred_us <= $at AND (p.occurred_us
    < $at OR p.id < $id)` FalkorDB kept the index's bound and dropped the rest, returning the
    event itself. Events at the same instant are ordered by id in `pick_neighbours` instead.
    Each side is looked for within `NEIGHBOUR_WINDOW_US` first, with whether any event lies
    beyond it (one unsorted row); only a side with none inside and some beyond is read again,
    unbounded."""
    params = {"at": at_us, "low": at_us - NEIGHBOUR_WINDOW_US, "high": at_us + NEIGHBOUR_WINDOW_US}
    rows = await run.read(
        project,
        " UNION ALL ".join(
            (
                _nearest("before", " AND p.occurred_us >= $low"),
                "MATCH (p:Event {occurred_us: $at}) RETURN 'same' AS k, p.id AS id",
                _nearest("after", " AND p.occurred_us <= $high"),
                "MATCH (p:Event) WHERE p.occurred_us < $low WITH p LIMIT 1 RETURN 'earlier' AS k, p.id AS id",
                "MATCH (p:Event) WHERE p.occurred_us > $high WITH p LIMIT 1 RETURN 'later' AS k, p.id AS id",
            )
        ),
        params,
    )
    found: dict[str, list[str]] = {"before": [], "same": [], "after": [], "earlier": [], "later": []}
    for kind, node_id in rows:
        found[kind].append(node_id)
    further = [
        _nearest(side, "")
        for side, beyond in (("before", "earlier"), ("after", "later"))
        if not found[side] and found[beyond]
    ]
    if further:
        for kind, node_id in await run.read(project, " UNION ALL ".join(further), params):
            found[kind].append(node_id)
    return {"before": found["before"], "same": found["same"], "after": found["after"]}


def pick_neighbours(found: InstantNeighbours, event_id: str) -> tuple[str | None, str | None]:
    """Ids of the dated events just before and just after (its instant, `event_id`) in time
    order, from what `neighbours_at` read at its instant (the event itself left out)."""
    same = [i for i in found["same"] if i != event_id]
    lower, higher = [i for i in same if i < event_id], [i for i in same if i > event_id]
    before = max(lower) if lower else (found["before"][0] if found["before"] else None)
    after = min(higher) if higher else (found["after"][0] if found["after"] else None)
    return before, after


async def events_by_ids(run: Runner, project: str, ids: list[str]) -> list[Row]:
    """(event fields, names of involved entities) for the given ids."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (ev:Event {id: i}) OPTIONAL MATCH (ev)-[:INVOLVES]->(x:Entity) "
        f"RETURN {EVENT_FIELDS}, collect(x.name)",
        {"ids": ids},
    )


def _given(*conditions: tuple[str, object]) -> list[str]:
    """The conditions whose value is given (a window bound that is not None)."""
    return [condition for condition, value in conditions if value is not None]


def _event_branch(entity_id: str | None, bounds: list[str]) -> str:
    """Dated events in [$start, $end) (epoch microseconds), the first $limit in time order, with
    the names of the entities they involve."""
    where = " AND ".join(bounds) if bounds else "ev.occurred_us IS NOT NULL"
    pattern = "(:Entity {id: $entity})<-[:INVOLVES]-(ev:Event)" if entity_id is not None else "(ev:Event)"
    return (
        f"MATCH {pattern} WHERE {where} WITH DISTINCT ev ORDER BY ev.occurred_us, ev.id LIMIT $limit "
        "OPTIONAL MATCH (ev)-[:INVOLVES]->(x:Entity) WITH ev, collect(x.name) AS names "
        f"RETURN 'event' AS kind, [{EVENT_FIELDS}, names] AS item"
    )


def _fact_branch(clause: str, order: str) -> str:
    return f"{clause} WITH s, r, o ORDER BY {order}, r.id LIMIT $limit RETURN 'fact' AS kind, [{FACT_FIELDS}] AS item"


async def timeline(
    run: Runner,
    project: str,
    window: tuple[str | None, str | None],
    window_us: tuple[int | None, int | None],
    entity_id: str | None,
    *,
    facts: bool,
    fact_types: Sequence[RelType],
    limit: int,
) -> list[Row]:
    """(kind, item) rows in one round trip: "event" items [event fields, involved names] and,
    with `facts`, "fact" items [FACT_FIELDS]; each branch its first `limit` in time order, for
    Python to merge. Events occurred in [start, end) and facts began in it. With an entity:
    its events and facts (read from its own relationships); else every event and the facts of
    `fact_types`, each type read through its `valid_from_us` index."""
    start, end = window
    start_us, end_us = window_us
    branches = [
        _event_branch(
            entity_id, _given(("ev.occurred_us >= $start_us", start_us), ("ev.occurred_us < $end_us", end_us))
        )
    ]
    if facts and entity_id is not None:
        bounds = [IS_FACT, *_given(("r.valid_from >= $start", start), ("r.valid_from < $end", end))]
        branches.append(_fact_branch(_facts_touching(entity_id, " AND ".join(bounds)), "r.valid_from"))
    elif facts:
        bounds = _given(("r.valid_from_us >= $start_us", start_us), ("r.valid_from_us < $end_us", end_us))
        where = " AND ".join(bounds) if bounds else "r.valid_from_us IS NOT NULL"
        # Unlabelled ends: with (s:Entity) FalkorDB scans the label and probes the index per node.
        branches += [_fact_branch(f"MATCH (s)-[r:{t}]->(o) WHERE {where}", "r.valid_from_us") for t in fact_types]
    return await run.read(
        project,
        " UNION ALL ".join(branches),
        {"start": start, "end": end, "start_us": start_us, "end_us": end_us, "entity": entity_id, "limit": limit},
    )


async def fact_types(run: Runner, project: str) -> list[str]:
    """The relationship types marked as holding facts."""
    rows = await run.read(project, "MATCH (t:RelationshipType) WHERE t.holds_facts = true RETURN t.name", {})
    return [row[0] for row in rows]


async def discover_fact_types(run: Runner, project: str) -> list[Row]:
    """(type, how many of its facts lack `valid_from_us`) of the facts stored (one scan of the
    entities' relationships)."""
    return await run.read(
        project,
        f"MATCH (:Entity)-[r]->(:Entity) WHERE {IS_FACT} "
        "RETURN type(r), sum(CASE WHEN r.valid_from_us IS NULL THEN 1 ELSE 0 END)",
        {},
    )


async def facts_without_us(run: Runner, project: str, rel_type: RelType, limit: int) -> list[Row]:
    """(id, valid_from) of facts of the type written before `valid_from_us` existed."""
    return await run.read(
        project,
        f"MATCH ()-[r:{rel_type}]->() WHERE {IS_FACT} AND r.valid_from_us IS NULL "
        "RETURN r.id, r.valid_from LIMIT $limit",
        {"limit": limit},
    )


async def set_valid_from_us(run: Runner, project: str, rel_type: RelType, rows: list[dict[str, Any]]) -> None:
    await run.write(
        project,
        f"UNWIND $rows AS row MATCH ()-[r:{rel_type} {{id: row.id}}]->() SET r.valid_from_us = row.us",
        {"rows": rows},
    )


async def create_valid_from_index(run: Runner, project: str, rel_type: RelType) -> None:
    """The range index a timeline reads a fact type's window through."""
    try:
        await run.write(project, f"CREATE INDEX FOR ()-[r:{rel_type}]-() ON (r.valid_from_us)")
    except StoreError as exc:
        if "already indexed" not in str(exc):  # another caller made it meanwhile: as wanted
            raise


async def mark_fact_types(run: Runner, project: str, names: Sequence[str]) -> None:
    """Mark registered relationship types as holding facts (a timeline reads only those)."""
    await run.write(
        project,
        "UNWIND $names AS n MATCH (t:RelationshipType {name: n}) SET t.holds_facts = true",
        {"names": list(names)},
    )


async def facts_of(
    run: Runner,
    project: str,
    subject_id: str,
    rel_type: RelType | None,
    as_of: str | None,
    skip: int = 0,
    limit: int | None = None,
    *,
    ending_after: str | None = None,
) -> list[Row]:
    """Facts whose subject is the entity, of one predicate or all; only those valid at `as_of`
    when given, else every fact (current, closed and invalidated); a page when `limit` is given;
    `ending_after`: only those still open at that time or closed at or after it (what a new fact from
    then on can duplicate or replace: not the subject's whole history)."""
    typed = f":{rel_type}" if rel_type is not None else ""
    window = " AND r.valid_from <= $at AND (r.valid_to IS NULL OR r.valid_to > $at)" if as_of is not None else ""
    if ending_after is not None:
        # Stored times are fixed-width text, whose order is time order; any other form is kept.
        window += f" AND (r.valid_to IS NULL OR r.valid_to >= $after OR size(r.valid_to) <> {len(ending_after)})"
    page = " SKIP $skip LIMIT $limit" if limit is not None else ""
    return await run.read(
        project,
        f"MATCH (s:Entity {{id: $s}})-[r{typed}]->(o:Entity) WHERE {IS_FACT}{window} "
        f"RETURN {FACT_FIELDS} ORDER BY r.valid_from, r.id{page}",
        {"s": subject_id, "at": as_of, "skip": skip, "limit": limit, "after": ending_after},
    )


async def facts_to(run: Runner, project: str, object_id: str, as_of: str, limit: int) -> list[Row]:
    """Facts whose object is the entity, valid at `as_of` (who leads it, who works on it)."""
    return await run.read(
        project,
        f"MATCH (s:Entity)-[r]->(o:Entity {{id: $o}}) WHERE {IS_FACT} "
        "AND r.valid_from <= $at AND (r.valid_to IS NULL OR r.valid_to > $at) "
        f"RETURN {FACT_FIELDS} ORDER BY r.valid_from, r.id LIMIT $limit",
        {"o": object_id, "at": as_of, "limit": limit},
    )


async def create_fact(
    run: Runner,
    project: str,
    rel_type: RelType,
    fact: dict[str, Any],
    closes: list[dict[str, Any]] | None = None,
    *,
    settles: str | None = None,
) -> None:
    """Create a fact (id, s, o, label, valid_from, valid_from_us, valid_to, invalidated_by,
    invalidated_at, now, memories: the ids of the memories that stated it, or None), and close
    the windows of the subject's facts it replaces (`closes`: id, at: valid_to = at, recording
    which fact did it and when; the former end is kept for an undo) in the same write: both
    happen or neither. `settles`: a memory whose `unfinished` mark the write clears too."""
    # Made by the one statement (`polyg.store.queries.edges`): a fact is a described
    # relationship whose window and provenance are its properties; no duplicate check in the
    # write, since the caller read the subject's facts under its lock and decided to write.
    window = ("valid_from", "valid_from_us", "valid_to", "invalidated_by", "invalidated_at", "prior_valid_to")
    props = {key: fact[key] for key in (*window, "memories") if fact.get(key) is not None}
    row = {
        "id": fact["id"],
        "a": fact["s"],
        "b": fact["o"],
        "type": rel_type,
        "label": fact["label"],
        "description": fact["description"],
        "created_at": fact["now"],
        "props": props,
    }
    after = ""
    if closes:
        after = (
            f"WITH DISTINCT r, a UNWIND $closes AS c MATCH (a)-[old:{rel_type} {{id: c.id}}]->(:Entity) "
            "SET old.prior_valid_to = old.valid_to, old.valid_to = c.at, old.invalidated_by = r.id, "
            "old.invalidated_at = $now"
        )
    await create_relationships(
        run,
        project,
        [row],
        now=fact["now"],
        after=after + settling(settles),
        returns=None,
        params={"closes": closes or [], "settles": settles},
    )


async def end_facts(
    run: Runner,
    project: str,
    rel_type: RelType,
    fact_ids: list[str],
    at: str,
    memory: str | None,
    *,
    settles: str | None = None,
) -> None:
    """Close the windows of these facts at `at` ("X left Y": a memory said they ended), keeping
    the former end for an undo and citing the memory that said it; `settles`: a memory whose
    `unfinished` mark the write clears too."""
    await run.write(
        project,
        f"MATCH (:Entity)-[r:{rel_type}]->(:Entity) WHERE r.id IN $ids "
        "SET r.prior_valid_to = r.valid_to, r.valid_to = $at, "
        "r.memories = CASE WHEN $memory IS NULL OR $memory IN coalesce(r.memories, []) THEN r.memories "
        "ELSE coalesce(r.memories, []) + $memory END" + settling(settles, even_unmatched=True),
        {"ids": fact_ids, "at": at, "memory": memory, "settles": settles},
    )


async def cite_fact(
    run: Runner, project: str, rel_type: RelType, fact_id: str, memory: str, *, settles: str | None = None
) -> None:
    """Add a memory to those a fact was stated by (another memory said it again); `settles`:
    a memory whose `unfinished` mark the write clears too."""
    await run.write(
        project,
        f"MATCH (:Entity)-[r:{rel_type} {{id: $id}}]->(:Entity) WHERE NOT $memory IN coalesce(r.memories, []) "
        "SET r.memories = coalesce(r.memories, []) + $memory" + settling(settles, even_unmatched=True),
        {"id": fact_id, "memory": memory, "settles": settles},
    )


async def fact_by_id(run: Runner, project: str, rel_type: RelType, fact_id: str) -> list[Row]:
    return await run.read(
        project,
        f"MATCH (s:Entity)-[r:{rel_type} {{id: $id}}]->(o:Entity) WHERE {IS_FACT} RETURN {FACT_FIELDS}",
        {"id": fact_id},
    )


async def reopen_fact(run: Runner, project: str, rel_type: RelType, fact_id: str) -> list[Row]:
    """Undo an invalidation: the window gets its former end back."""
    return await run.write(
        project,
        f"MATCH (:Entity)-[r:{rel_type} {{id: $id}}]->(:Entity) WHERE r.invalidated_by IS NOT NULL "
        "SET r.valid_to = r.prior_valid_to, r.invalidated_by = NULL, r.invalidated_at = NULL, "
        "r.prior_valid_to = NULL RETURN r.id",
        {"id": fact_id},
    )


async def delete_fact(run: Runner, project: str, rel_type: RelType, fact_id: str) -> None:
    await run.write(project, f"MATCH (:Entity)-[r:{rel_type} {{id: $id}}]->(:Entity) DELETE r", {"id": fact_id})


async def invalidations(run: Runner, project: str, entity_id: str | None, skip: int, limit: int) -> list[Row]:
    """Invalidated facts (touching the entity when given), most recent invalidation first."""
    return await run.read(
        project,
        f"{_facts_touching(entity_id, IS_FACT + ' AND r.invalidated_by IS NOT NULL')} "
        f"RETURN {FACT_FIELDS}, r.prior_valid_to ORDER BY r.invalidated_at DESC, r.id SKIP $skip LIMIT $limit",
        {"entity": entity_id, "skip": skip, "limit": limit},
    )


async def dated_events(run: Runner, project: str) -> list[Row]:
    """(id, occurred_us) of every dated event: the T_BEFORE chain's members (a bulk write
    places its events among them)."""
    return await run.read(project, "MATCH (ev:Event) WHERE ev.occurred_us IS NOT NULL RETURN ev.id, ev.occurred_us", {})


async def unlink_chain(run: Runner, project: str, pairs: list[dict[str, str]]) -> None:
    """Remove the T_BEFORE links between these (a, b) event ids: a bulk write put events between them."""
    await run.write(
        project,
        "UNWIND $pairs AS p MATCH (:Event {id: p.a})-[b:T_BEFORE]->(:Event {id: p.b}) DELETE b",
        {"pairs": pairs},
    )


async def facts_of_subjects(run: Runner, project: str, rel_type: RelType, subjects: list[str]) -> list[Row]:
    """(subject id, predicate, object id, valid_from, valid_to) of the facts of one type whose
    subject is one of these entities."""
    return await run.read(
        project,
        f"UNWIND $ids AS sid MATCH (s:Entity {{id: sid}})-[r:{rel_type}]->(o:Entity) WHERE {IS_FACT} "
        "RETURN s.id, coalesce(r.label, type(r)), o.id, r.valid_from, r.valid_to",
        {"ids": subjects},
    )
