"""The one writer of entities (issue 24): every toolset creates its `:Entity` nodes here, through
the one statement of `polyg.store.queries.nodes.create_entities`.

The toolsets' specs differ in what a create does when the entity may exist; they are options
of the one write (`IfAbsent`), each checked inside the write query, which FalkorDB runs alone
on the graph, so that racing writers (tasks of one server, or two servers on one data
directory) never both create one name:
- kg (`create_entity`) and knowledge (`manage_nodes`): names may repeat, every create makes a
  node ("always");
- memory-compat (`create_entities`) and its import: names are unique, a name that exists is
  skipped ("name"); a restore that keeps ids skips ids that exist ("id");
- memory (`remember`, `add_fact`, `add_entity`, `link_entities`, `add_event`, ...): a name means
  the entity of that name in any case, made when there is none (`match_or_create`); a concept
  is made unless an entity of that name exists ("name").
Updates are one statement too (`update`: fields, user properties, second label, revision), and
deletes two (`delete`; knowledge's also touches the neighbours, whose documents are stale).
Each entity created, or whose text changed, is queued for its vectors (`polyg.core.graph.vectorizer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.model import OWN_PROPERTY_KEYS, Node, decode_properties
from polyg.names import new_id, now_iso
from polyg.store.falkor import Row
from polyg.store.names import ENTITY, Label, is_name, is_reserved_label
from polyg.store.queries import nodes as nq
from polyg.store.queries import nodes as q
from polyg.store.queries.nodes import IfAbsent

__all__ = ["DEFAULT_TYPE", "EntityWriter", "IfAbsent", "node_from", "type_label"]

OWN_KEYS = sorted(OWN_PROPERTY_KEYS)
# The type of an entity memory creates without one (a name its caller gave no type).
DEFAULT_TYPE = "entity"


def type_label(type_: str) -> Label | None:
    """A second label from the node type (`location` -> `:Location`), if the type is a valid
    name and the label is not one of polyg's own."""
    if not is_name(type_):
        return None
    label = type_[0].upper() + type_[1:]
    return None if is_reserved_label(label) else Label(label)


def node_from(row: Row, kind: str = ENTITY) -> Node:
    """The node of a row of [own fields, labels, user property pairs] (`create_entities`)."""
    fields, labels, props = row[:3]
    return Node(
        id=fields["id"],
        kind=kind,
        labels=tuple(labels),
        name=fields.get("name"),
        type=fields.get("type"),
        summary=fields.get("summary") or "",
        parent_id=fields.get("parent_id"),
        properties=decode_properties(dict(props)),
        created_at=fields.get("created_at"),
        updated_at=fields.get("updated_at"),
    )


class EntityWriter:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx

    async def create(
        self,
        project: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        if_absent: IfAbsent = "always",
        parent: bool = False,
        prelude: str = "",
        carry: Sequence[str] = (),
        after: str = "",
        params: Mapping[str, Any] | None = None,
        now: str | None = None,
    ) -> list[Node]:
        """Create an entity per row (checked already: id, name, type, and optionally summary,
        parent_id, props, obs [{id, text, at}], created_at, updated_at) in one query; the
        second label comes from the type. Returns the entities created: a row `if_absent`
        found existing, or whose parent (`parent`) is gone, has none. `prelude`, `carry`,
        `after`: see `polyg.store.queries.nodes.create_entities_cypher`."""
        if not rows:
            return []
        written = await q.create_entities(
            self.ctx,
            project,
            [{**row, "label": type_label(str(row["type"]))} for row in rows],
            now=now or now_iso(),
            own=OWN_KEYS,
            if_absent=if_absent,
            parent=parent,
            prelude=prelude,
            carry=carry,
            after=after,
            params=params,
        )
        nodes = [node_from(row) for row in written]
        self.ctx.vectors.mark(project, [node.id for node in nodes])
        return nodes

    async def match_or_create(
        self,
        project: str,
        names: Sequence[str],
        types: Mapping[str, str] | None = None,
        *,
        fields: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, Node]:
        """Create an entity for each name (stored as names are, `limits.name`; of its type in
        `types`, else `DEFAULT_TYPE`; with `fields[name]`'s summary and props) unless one of
        that name in any case exists, checked inside the write. Returns name -> the entity
        created; a name left out was found existing, and is the caller's to look up
        (`Resolver.entity_ids`: that entity, as any lookup finds it)."""
        rows: dict[str, dict[str, Any]] = {}  # by normalised name: rows of one query cannot see each other
        asked: dict[str, str] = {}  # row id -> the name as the caller gave it
        for name in names:
            stored = limits.name(name)
            type_ = (types or {}).get(name) or DEFAULT_TYPE
            limits.type_(type_)
            if stored.lower() in rows:
                continue
            row = {"id": new_id("ent"), "name": stored, "type": type_, **(fields or {}).get(name, {})}
            rows[stored.lower()] = row
            asked[row["id"]] = name
        made = await self.create(project, list(rows.values()), if_absent="name_key")
        return {asked[node.id]: node for node in made}

    async def update(
        self,
        project: str,
        entity_id: str,
        *,
        sets: Mapping[str, str] | None = None,
        props: Mapping[str, Any] | None = None,
        relabel: tuple[Label | None, Label | None] | None = None,
        text_changed: bool = False,
    ) -> Node | None:
        """Set own fields (`sets`: name, type, summary, parent_id, checked already), merge user
        properties (a None value removes one), swap the type label (`relabel`: old, new); a text
        change (`text_changed`) gives the entity a new revision and queues its vector. Returns
        the entity as written, or None if it is gone."""
        rows = await nq.update_node(
            self.ctx,
            project,
            ENTITY,
            entity_id,
            dict(sets or {}),
            dict(props or {}),
            now_iso(),
            relabel=relabel,
            text_changed=text_changed,
            own_keys=OWN_KEYS,
        )
        if not rows:
            return None
        if text_changed:
            self.ctx.vectors.mark(project, [entity_id])
        return node_from(rows[0])

    async def delete(self, project: str, ids: Sequence[str], *, touch_neighbours: bool = False) -> int:
        """Delete entities with their observations, relationships and the documents built from
        them; their children lose their parent. `touch_neighbours` (one id): the entities it was
        linked to get a new `updated_at`. Returns how many were deleted."""
        if not touch_neighbours:
            return await q.delete_entities(self.ctx, project, list(ids))
        deleted = 0
        for entity_id in ids:
            deleted += len(await nq.delete_node(self.ctx, project, ENTITY, entity_id, now_iso()))
        return deleted
