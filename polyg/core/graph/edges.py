"""Edges between any nodes an edge may join (entities, events, chunks, ...), written in batches
with one outcome per item.

An edge id carries its type (`rel_<16 hex>_<TYPE>`), so that finding an edge by id is one
lookup in its type's range index on `id` (see `polyg.store.queries.edges` for the numbers).
Ids without a type (edges written before this scheme) are found by asking each type's index in
turn. A type is registered on its first use, which makes that index (`polyg.core.graph.reltypes`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.embeddable import REGISTRY, EmbeddableRegistry
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.model import (
    OWN_PROPERTY_KEYS,
    Edge,
    Outcome,
    check_text,
    decode_properties,
    encode_edge_properties,
)
from polyg.errors import InvalidParams, NotFound, PayloadTooLarge, PolygError
from polyg.names import now_iso
from polyg.store.falkor import Row
from polyg.store.names import NAME, Label, RelType, is_name, is_reserved_rel_type, user_rel_type
from polyg.store.queries import edges as q
from polyg.store.queries import projects as projects_q
from polyg.store.queries import resolve as resolve_q

OWN_KEYS = sorted(OWN_PROPERTY_KEYS)
EDGE_ID = re.compile(rf"rel_[0-9a-f]{{16}}_({NAME.pattern})")


def new_edge_id(rel_type: RelType) -> str:
    return f"rel_{secrets.token_hex(8)}_{rel_type}"


def type_of(edge_id: str) -> RelType | None:
    """The type an edge id carries, if it carries one."""
    match = EDGE_ID.fullmatch(edge_id) if isinstance(edge_id, str) else None
    if match is None or is_reserved_rel_type(match.group(1)):
        return None
    return RelType(match.group(1))


@dataclass(frozen=True)
class EdgeDraft:
    """A new edge: endpoints by id or exact name, `type` a relationship type name."""

    source: str
    target: str
    type: str
    description: str = ""
    properties: Mapping[str, object] | None = None


@dataclass(frozen=True)
class EdgeChange:
    id: str
    description: str | None = None
    properties: Mapping[str, object] | None = None  # merged; a None value removes the property


def edge_from(row: Row) -> Edge:
    edge, rel_type, source, target, props = row[:5]
    return Edge(
        id=edge["id"],
        type=rel_type,
        source_id=source,
        target_id=target,
        description=edge.get("description") or "",
        properties=decode_properties(dict(props)),
        created_at=edge.get("created_at"),
        updated_at=edge.get("updated_at"),
    )


def check_batch(items: Sequence[Any], what: str) -> None:
    if len(items) > limits.MAX_BATCH:
        raise PayloadTooLarge(f"{what} holds {len(items)} items; the limit is {limits.MAX_BATCH}.")


@dataclass(frozen=True)
class Resolved:
    id: str
    label: Label
    labels: tuple[str, ...]
    type: str | None


async def resolve(
    ctx: GraphContext, project: str, refs: Sequence[str], registry: EmbeddableRegistry = REGISTRY
) -> dict[str, Resolved]:
    """Reference -> node, by exact id first, then by exact name (the oldest of that name)."""
    wanted = sorted({ref for ref in refs if isinstance(ref, str) and ref})
    if not wanted:
        return {}
    rows = await resolve_q.references(ctx, project, registry.endpoint_labels(), registry.named_labels(), wanted)
    endpoints = set(registry.endpoint_labels())
    found: dict[str, Resolved] = {}
    for ref, (node_id, labels, type_) in rows:
        label = next(label for label in labels if label in endpoints)
        found[ref] = Resolved(node_id, Label(label), tuple(labels), type_)
    return found


class EdgeService:
    def __init__(
        self,
        ctx: GraphContext,
        reltypes: RelTypeService | None = None,
        registry: EmbeddableRegistry = REGISTRY,
        writer: EdgeWriter | None = None,
    ) -> None:
        self.ctx = ctx
        # Registers a type on its first use, with the range index on its edges' `id`.
        self.reltypes = reltypes or RelTypeService(ctx)
        self.writer = writer or EdgeWriter(ctx, self.reltypes)
        self.registry = registry

    # --- writes ---------------------------------------------------------------------------------

    async def create(self, project: str, drafts: Sequence[EdgeDraft]) -> list[Outcome]:
        """Create edges; the valid items in one query per (type, source label, target label)."""
        check_batch(drafts, "relationships")
        ends = await resolve(self.ctx, project, [r for d in drafts for r in (d.source, d.target)], self.registry)
        outcomes: dict[int, Outcome] = {}
        groups: dict[tuple[RelType, Label, Label], list[tuple[int, dict[str, Any]]]] = {}
        now = now_iso()
        for index, draft in enumerate(drafts):
            try:
                key, row = self._prepare(index, draft, ends, now)
            except PolygError as exc:
                outcomes[index] = Outcome.failed(index, exc)
                continue
            groups.setdefault(key, []).append((index, row))
        for (rel_type, source_label, target_label), items in groups.items():
            try:
                written = await self._write(project, rel_type, source_label, target_label, [row for _, row in items])
            except PolygError as exc:
                # The checks leave nothing the database refuses: this is the store failing, and the
                # group's one query wrote nothing.
                outcomes.update((index, Outcome.failed(index, exc)) for index, _ in items)
                continue
            for index, row in items:
                outcomes[index] = self._outcome(index, row, written)
        return [outcomes[index] for index in range(len(drafts))]

    def _prepare(
        self, index: int, draft: EdgeDraft, ends: Mapping[str, Resolved], now: str
    ) -> tuple[tuple[RelType, Label, Label], dict[str, Any]]:
        where = f"relationships[{index}]"
        rel_type = user_rel_type(draft.type, f"{where}.type")
        description = check_text(draft.description, f"{where}.description", max_len=limits.MAX_TEXT)
        props = encode_edge_properties(draft.properties, f"{where}.properties")
        for end in ("source", "target"):
            if not isinstance(getattr(draft, end), str) or not getattr(draft, end):
                raise InvalidParams(f"{where}.{end} must be a node id or name.")
        source, target = ends.get(draft.source), ends.get(draft.target)
        if source is None or target is None:
            missing = draft.source if source is None else draft.target
            raise NotFound(f"{where}: node {missing!r} not found (by id or name).")
        row = {
            "id": new_edge_id(rel_type),
            "source": source.id,
            "target": target.id,
            "description": description,
            "props": {k: v for k, v in props.items() if v is not None},
            "now": now,
        }
        return (rel_type, source.label, target.label), row

    async def _write(
        self, project: str, rel_type: RelType, source: Label, target: Label, rows: list[dict[str, Any]]
    ) -> dict[str, Edge]:
        """Edges of one type between nodes of two labels, one per row (id, source, target,
        description, props, now), in one query, touching both ends. A row whose endpoint is
        missing writes nothing and is missing from the result; the others are written."""
        result = await self.writer.create(
            project,
            [
                {
                    **row,
                    "a": row["source"],
                    "b": row["target"],
                    "type": rel_type,
                    "created_at": row["now"],
                    "updated_at": row["now"],
                }
                for row in rows
            ],
            source=source,
            target=target,
            touch_ends=True,
            returns=q.EDGE_RETURN,
            params={"own": OWN_KEYS},
            now=rows[0]["now"],
        )
        return {edge.id: edge for edge in map(edge_from, result)}

    @staticmethod
    def _outcome(index: int, row: Mapping[str, Any], written: Mapping[str, Edge]) -> Outcome:
        edge = written.get(row["id"])
        if edge is None:
            return Outcome.failed(
                index, NotFound(f"relationships[{index}]: the source or target node was deleted meanwhile.")
            )
        return Outcome(index, "created", edge.id, edge=edge)

    async def update(self, project: str, changes: Sequence[EdgeChange]) -> list[Outcome]:
        check_batch(changes, "relationships")
        outcomes = []
        for index, change in enumerate(changes):
            try:
                where = f"relationships[{index}]"
                description = None
                if change.description is not None:
                    description = check_text(change.description, f"{where}.description", max_len=limits.MAX_TEXT)
                props = encode_edge_properties(change.properties, f"{where}.properties")
                rel_type = await self.type_of_id(project, change.id)
                rows = await q.update_edge(
                    self.ctx, project, rel_type, change.id, description, props, now_iso(), OWN_KEYS
                )
                if not rows:
                    raise NotFound(f"Relationship {change.id} not found.")
                outcomes.append(Outcome(index, "updated", change.id, edge=edge_from(rows[0])))
            except PolygError as exc:
                outcomes.append(Outcome.failed(index, exc, change.id))
        return outcomes

    async def delete(self, project: str, ids: Sequence[str]) -> list[Outcome]:
        check_batch(ids, "relationships")
        outcomes = []
        for index, edge_id in enumerate(ids):
            try:
                rel_type = await self.type_of_id(project, edge_id)
                rows = await q.delete_edge(self.ctx, project, rel_type, edge_id, now_iso())
                if not rows:
                    raise NotFound(f"Relationship {edge_id} not found.")
                outcomes.append(Outcome(index, "deleted", edge_id))
            except PolygError as exc:
                outcomes.append(Outcome.failed(index, exc, edge_id))
        return outcomes

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, project: str, edge_id: str) -> Edge:
        rel_type = await self.type_of_id(project, edge_id)
        rows = await q.get_edges(self.ctx, project, rel_type, [edge_id], OWN_KEYS)
        if not rows:
            raise NotFound(f"Relationship {edge_id} not found.")
        return edge_from(rows[0])

    async def type_of_id(self, project: str, edge_id: str) -> RelType:
        """The type of an edge, from its id or else by asking each type's index (NotFound)."""
        if not isinstance(edge_id, str) or not edge_id:
            raise InvalidParams("A relationship id must be a non-empty string.")
        carried = type_of(edge_id)
        if carried is not None:
            return carried
        types = [
            RelType(name)
            for name in await projects_q.rel_types(self.ctx, project)
            if is_name(name) and not is_reserved_rel_type(name)
        ]
        rows = await q.find_type(self.ctx, project, types, edge_id)
        if not rows:
            raise NotFound(f"Relationship {edge_id} not found.")
        return RelType(rows[0][0])
