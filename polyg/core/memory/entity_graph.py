"""The entity view of `memory` (spec 003): entities addressed by name, with user properties, and
links between them by name.

Names resolve exactly first, then in any case (`polyg.core.search.resolve`). An unknown name is an
error unless the call asks for it to be created. These are the same `:Entity` nodes `kg` and
`memory-compat` see; properties are stored as real node properties (`polyg.core.model`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edges import new_edge_id
from polyg.core.graph.entities import EntityDetail, EntityService, Observation, entity_node
from polyg.core.graph.entity_writer import EntityWriter
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.memory.named import NamedGraph, stored_type
from polyg.core.model import OWN_PROPERTY_KEYS, Node, decode_properties, encode_properties
from polyg.core.search.resolve import Resolver
from polyg.core.text.time import SYSTEM_CLOCK, Clock, format_utc
from polyg.errors import InvalidParams, NotFound
from polyg.store.falkor import TextListParam
from polyg.store.names import ENTITY, RelType
from polyg.store.queries import edge_reads as edge_reads_q
from polyg.store.queries import node_reads as q

RECENT_EVENTS = 10  # the events get_entity shows, latest first
OWN_KEYS = TextListParam(sorted(OWN_PROPERTY_KEYS))


@dataclass(frozen=True)
class Relation:
    id: str
    type: str
    relationship: str  # as the user wrote it
    direction: str  # "outgoing" | "incoming"
    other_id: str
    other_name: str
    other_type: str
    description: str
    valid_from: str | None = None
    valid_to: str | None = None
    invalidated_by: str | None = None
    confidence: float | None = None
    score: float | None = None


@dataclass(frozen=True)
class EntityView:
    entity: Node
    observations: EntityDetail  # the entity with the page of its observations asked for
    relations: list[Relation] = field(default_factory=list)
    has_more: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class LinkResult:
    id: str
    source: Node
    target: Node
    type: str
    relationship: str
    created: bool
    entities_created: list[str]


def relation_from(row: list[Any]) -> Relation:
    rid, rtype, text, out, oid, oname, otype, desc, vfrom, vto, inv, conf, score = row
    direction = "outgoing" if out else "incoming"
    return Relation(rid, rtype, text, direction, oid, oname, otype, desc or "", vfrom, vto, inv, conf, score)


def record_from(fields: dict[str, Any], stored: dict[str, Any]) -> Node:
    """An entity with its user properties (the one entity model, `polyg.core.model.Node`)."""
    return Node(
        fields["id"],
        ENTITY,
        name=fields["name"],
        type=fields["type"],
        summary=fields.get("summary") or "",
        parent_id=fields.get("parent_id"),
        properties=decode_properties(stored),
        created_at=fields.get("created_at"),
        updated_at=fields.get("updated_at"),
    )


class EntityGraph:
    def __init__(
        self,
        ctx: GraphContext,
        resolver: Resolver,
        entities: EntityService,
        named: NamedGraph,
        reltypes: RelTypeService,
        clock: Clock = SYSTEM_CLOCK,
        writer: EntityWriter | None = None,
    ) -> None:
        self.ctx = ctx
        self.writer = writer or entities.writer
        self.resolver = resolver
        self.entities = entities
        self.named = named
        self.reltypes = reltypes
        self.clock = clock

    async def ensure(
        self,
        project: str,
        names: list[str],
        types: dict[str, str] | None = None,
        *,
        known: dict[str, str] | None = None,
    ) -> tuple[dict[str, str], list[str]]:
        """name -> id for every name, creating the unknown ones (of their type in `types`, else
        `DEFAULT_TYPE`); and the names created. `known`: the names' ids, looked up already
        (`Resolver.entity_ids`)."""
        ids = dict(known) if known is not None else await self.resolver.entity_ids(project, names)
        missing = [name for name in dict.fromkeys(names) if name not in ids]
        if not missing:
            return ids, []
        # Made only where no entity of that name exists, checked inside the write: a name
        # another writer made meanwhile is that writer's entity, looked up as any name is.
        made = await self.writer.match_or_create(project, missing, types)
        ids.update((name, node.id) for name, node in made.items())
        ids.update(await self._made_meanwhile(project, [name for name in missing if name not in made]))
        return ids, [name for name in missing if name in made]

    async def _made_meanwhile(self, project: str, names: list[str]) -> dict[str, str]:
        """The entities of names the writer found existing (made since they were looked up)."""
        if not names:
            return {}
        found = await self.resolver.entity_ids(project, names)
        gone = [name for name in names if name not in found]
        if gone:  # found by the write, deleted before the lookup
            raise NotFound(f"Entity with name {', '.join(gone)} was deleted meanwhile.")
        return found

    async def record(self, project: str, entity_id: str) -> Node:
        rows = await q.entity_with_properties(self.ctx, project, entity_id, OWN_KEYS)
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        return record_from(rows[0][0], dict(rows[0][1]))

    async def add_entity(
        self,
        project: str,
        *,
        name: str,
        entity_type: str,
        properties: dict[str, Any] | None = None,
        description: str = "",
        replace_properties: bool = False,
    ) -> tuple[Node, bool]:
        """Create the entity, or update the one of that name: its properties are merged into
        the stored ones (or replace them), a new description replaces the old one. Returns the
        entity and whether it was created."""
        limits.name(name)
        limits.type_(entity_type, "entity_type")
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        values = encode_properties(properties)
        entity_id = await self.resolver.entity_id(project, name)
        if entity_id is None:
            stored = {k: v for k, v in values.items() if v is not None}
            fields = {name: {"summary": description, "props": stored}}
            made = await self.writer.match_or_create(project, [name], {name: entity_type}, fields=fields)
            if name in made:
                return await self.record(project, made[name].id), True
            # Made meanwhile by another writer: updated as an entity found by the lookup is.
            entity_id = (await self._made_meanwhile(project, [name]))[name]
        if replace_properties:
            old = (await self.record(project, entity_id)).properties
            values = {**dict.fromkeys(old), **values}
        if values:
            await self.writer.update(project, entity_id, props=values)
        if description:
            await self.entities.update_description(project, entity_id, description)
        return await self.record(project, entity_id), False

    async def link(
        self,
        project: str,
        *,
        source: str,
        target: str,
        relationship: str,
        description: str = "",
        create_missing: bool = False,
    ) -> LinkResult:
        limits.name(source, "source")
        limits.name(target, "target")
        limits.text(relationship, "relationship", max_len=limits.MAX_TYPE)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        rel_type = RelType(stored_type(relationship))
        ids = await self.resolver.entity_ids(project, [source, target])
        unknown = [n for n in dict.fromkeys([source, target]) if n not in ids]
        if unknown and not create_missing:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found (pass create_missing to create it).")
        ids, made = await self.ensure(project, [source, target], known=ids)
        a, b = ids[source], ids[target]
        found = await edge_reads_q.relation_between(self.ctx, project, a, b, rel_type, relationship)
        created = False
        if found:
            rel_id = found[0][0]
        else:
            # Written unless a relation with that text joins them by now, checked inside the
            # write: two links of one pair at once make one relation.
            rel_id = new_edge_id(rel_type)
            row = {"id": rel_id, "a": a, "b": b, "text": relationship, "type": rel_type, "description": description}
            created = bool(await self.named.write_relations(project, [row], same="text"))
            if not created:
                found = await edge_reads_q.relation_between(self.ctx, project, a, b, rel_type, relationship)
                if not found:
                    raise NotFound("The relation was deleted meanwhile.")
                rel_id = found[0][0]
        return LinkResult(
            rel_id,
            await self.record(project, a),
            await self.record(project, b),
            rel_type,
            relationship,
            created,
            made,
        )

    async def get(
        self,
        project: str,
        *,
        name: str | None = None,
        entity_id: str | None = None,
        relationships: bool = True,
        as_of: datetime | None = None,
        history: bool = False,
        limit: int = 50,
        offset: int = 0,
        observation_offset: int = 0,
        observation_limit: int = limits.OBSERVATIONS_SHOWN,
    ) -> EntityView:
        """The entity (by name, else by id) with its observations, and its relationships: facts
        that hold at `as_of` (default now; every fact with `history`) and all other links."""
        limits.limit(limit)
        if offset < 0:
            raise InvalidParams("offset must not be negative.")
        limits.offset(observation_offset, "observation_offset")
        limits.limit(observation_limit, "observation_limit")
        if name is not None:
            by, key = "name", limits.name(name)
        elif entity_id is not None:
            by, key = "id", limits.identifier(entity_id, "entity_id")
        else:
            raise InvalidParams("Give the entity's name (or entity_id).")
        at = None if history else format_utc(as_of or self.clock.now())
        view = functools.partial(
            q.entity_view,
            self.ctx,
            project,
            own=OWN_KEYS,
            observations=(observation_offset, observation_offset + observation_limit),
            relationships=(offset, offset + limit + 1) if relationships else None,
            at=at,
            events=RECENT_EVENTS,
        )
        rows = await view(by=by, key=key)
        if not rows and by == "name":  # not that exact name: the same name in any case
            found = await self.resolver.entity_id(project, key)
            rows = await view(by="id", key=found) if found is not None else []
        if not rows:
            raise NotFound(f"Entity with name {name!r} not found." if by == "name" else f"Entity {key} not found.")
        fields, properties, shown, total, rel_rows, event_rows = rows[0]
        record = record_from(fields, dict(properties))
        page = tuple(Observation(o["id"], o["text"]) for o in shown)
        observations = EntityDetail(entity_node(fields), page, int(total), observation_offset)
        relations = [relation_from(row) for row in (rel_rows or [])[:limit]]
        events = [{"id": i, "description": d, "occurred_at": t} for i, d, t in event_rows]
        return EntityView(record, observations, relations, len(rel_rows or []) > limit, events)
