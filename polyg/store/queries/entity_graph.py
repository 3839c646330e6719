"""Entities by name with their properties and their relationships (the entity view of `memory`)."""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.queries import Runner

ENTITY_FIELDS = "e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at}"


async def entity(run: Runner, project: str, entity_id: str) -> list[Row]:
    """(fields, all stored properties) of the entity."""
    return await run.read(
        project, f"MATCH (e:Entity {{id: $id}}) RETURN {ENTITY_FIELDS}, properties(e)", {"id": entity_id}
    )


async def set_properties(run: Runner, project: str, entity_id: str, values: dict[str, Any], now: str) -> None:
    """Merge properties into the entity (a None value removes that property)."""
    await run.write(
        project,
        "MATCH (e:Entity {id: $id}) SET e += $props, e.updated_at = $now",
        {"id": entity_id, "props": values, "now": now},
    )


async def set_type(run: Runner, project: str, entity_id: str, type_: str, now: str) -> None:
    await run.write(
        project,
        "MATCH (e:Entity {id: $id}) SET e.type = $type, e.updated_at = $now",
        {"id": entity_id, "type": type_, "now": now},
    )


async def relation_between(run: Runner, project: str, a: str, b: str, rel_type: str, text: str) -> list[Row]:
    """Id of a relationship of that type and text from a to b (`rel_type` checked by the caller)."""
    return await run.read(
        project,
        f"MATCH (:Entity {{id: $a}})-[r:{rel_type}]->(:Entity {{id: $b}}) "
        "WHERE coalesce(r.label, type(r)) = $text RETURN r.id, r.created_at LIMIT 1",
        {"a": a, "b": b, "text": text},
    )


async def relationships(run: Runner, project: str, entity_id: str, at: str | None, skip: int, limit: int) -> list[Row]:
    """Relationships with other entities, both ways; facts only when valid at `at` (all when None)."""
    window = (
        ""
        if at is None
        else (" WHERE r.valid_from IS NULL OR (r.valid_from <= $at AND (r.valid_to IS NULL OR r.valid_to > $at))")
    )
    return await run.read(
        project,
        f"MATCH (e:Entity {{id: $id}})-[r]-(o:Entity){window} "
        "WITH e, r, o ORDER BY type(r), r.created_at, r.id SKIP $skip LIMIT $limit "
        "RETURN r.id, type(r), coalesce(r.label, type(r)), startNode(r) = e, o.id, o.name, o.type, "
        "r.description, r.valid_from, r.valid_to, r.invalidated_by, r.confidence, r.score",
        {"id": entity_id, "at": at, "skip": skip, "limit": limit},
    )


async def recent_events(run: Runner, project: str, entity_id: str, limit: int) -> list[Row]:
    return await run.read(
        project,
        "MATCH (:Entity {id: $id})<-[:INVOLVES]-(ev:Event) "
        "RETURN ev.id, ev.description, ev.occurred_at ORDER BY ev.occurred_at DESC, ev.id LIMIT $limit",
        {"id": entity_id, "limit": limit},
    )
