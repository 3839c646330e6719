"""Spec 004's weighted relationships: the seven named types, weight, causality and context.

Spec 004 names its types in lower case (`relates_to`, `causes`, ...). They are stored as the
upper-case relationship types every other toolset sees (`RELATES_TO`, `CAUSES`, ...), so a
`uses` link here is a `USES` relationship in `kg`, and a `causes` link is the causal view's
`CAUSES` link (with `confidence` = weight). `depends_on` is stored as `DEPENDS_UPON`:
`DEPENDS_ON` is polyg's own type (a cached document's dependency). Results show the spec's
name for these seven and any other type as stored. Any other valid type name is used as given.

`context` is a JSON object, stored JSON-encoded in one string property (the property codec
keeps flat values only) and returned decoded, as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.edges import new_edge_id
from polyg.core.graph.reltypes import RelTypeService
from polyg.errors import InvalidParams, NotFound, PayloadTooLarge
from polyg.names import now_iso
from polyg.store.names import RelType, user_rel_type
from polyg.store.queries import node_reads as q

SPEC_TYPES: dict[str, str] = {
    "relates_to": "RELATES_TO",
    "causes": "CAUSES",
    "part_of": "PART_OF",
    "implements": "IMPLEMENTS",
    "extends": "EXTENDS",
    "uses": "USES",
    "depends_on": "DEPENDS_UPON",
}
SPEC_NAMES: dict[str, str] = {stored: name for name, stored in SPEC_TYPES.items()}
CAUSAL = "CAUSES"
MAX_CONTEXT = 16_384  # characters of the JSON-encoded context


def stored_type(name: str) -> RelType:
    """The relationship type to store for a spec name (any case) or any other valid type."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidParams("relation_type must not be empty.")
    spec = SPEC_TYPES.get(name.strip().lower())
    return RelType(spec) if spec is not None else user_rel_type(name.strip(), "relation_type")


def shown_type(stored: str) -> str:
    """The name a result shows for a stored type: the spec's name for its seven types."""
    return SPEC_NAMES.get(stored, stored)


def is_causal(stored: str, props: Mapping[str, Any]) -> bool:
    return stored == CAUSAL or props.get("is_causal") is True


def check_weight(value: float, field: str = "weight") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidParams(f"{field} must be a number between 0 and 1, not {value!r}.")
    return float(value)


def encode_context(context: Mapping[str, Any] | None) -> str | None:
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise InvalidParams("context must be an object.")
    try:
        text = json.dumps(context, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidParams(f"context must be plain JSON: {exc}.") from None
    if len(text) > MAX_CONTEXT:
        raise PayloadTooLarge(f"context is {len(text)} characters as JSON; the limit is {MAX_CONTEXT}.")
    return text


def decode_context(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


@dataclass(frozen=True)
class WeightedLink:
    id: str
    source_id: str
    target_id: str
    type: str  # as stored
    weight: float
    is_causal: bool
    context: dict[str, Any] | None
    created: bool  # False: the relationship was there already (and was updated)

    @property
    def relation(self) -> str:
        return shown_type(self.type)


def link_properties(weight: float, causal: bool, context: str | None, rel: RelType) -> dict[str, Any]:
    props: dict[str, Any] = {
        "id": new_edge_id(rel),
        "weight": weight,
        "is_causal": causal,
        "created_at": now_iso(),
    }
    if context is not None:
        props["context"] = context
    if rel == CAUSAL:
        # The causal view reads a link's strength as its confidence.
        props["confidence"] = weight
    return props


def link_row(source_id: str, target_id: str, rel: RelType, props: Mapping[str, Any]) -> dict[str, Any]:
    """A weighted link as the edge writer takes it (`props` as `link_properties` makes them):
    one per (source, type, target), so a second write finds the first ("pair")."""
    return {
        "id": props["id"],
        "a": source_id,
        "b": target_id,
        "type": rel,
        "created_at": props["created_at"],
        "props": dict(props),
        # What a write that finds the link there sets on it (`replace`): all but its identity.
        "update": {k: v for k, v in props.items() if k not in ("id", "created_at")},
    }


class WeightedLinks:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService, writer: EdgeWriter | None = None) -> None:
        self.ctx = ctx
        self.reltypes = reltypes
        # Registers a user type on first use; polyg's own (CAUSES) need no entry.
        self.writer = writer or EdgeWriter(ctx, reltypes)

    async def add(
        self,
        project: str,
        source_id: str,
        target_id: str,
        relation_type: str,
        *,
        weight: float = 1.0,
        is_causal: bool = False,
        context: Mapping[str, Any] | None = None,
    ) -> WeightedLink:
        """Creates the relationship, or updates weight, causality and context of the one of
        that type already between the two entities (one per source, type and target)."""
        rel = stored_type(relation_type)
        weight = check_weight(weight)
        encoded = encode_context(context)
        causal = bool(is_causal) or rel == CAUSAL
        found = await q.existing_ids(self.ctx, project, [source_id, target_id])
        missing = [i for i in (source_id, target_id) if i not in found]
        if missing:
            raise NotFound(f"Entity {missing[0]} not found.")
        rows = await self.writer.create(
            project,
            [link_row(source_id, target_id, rel, link_properties(weight, causal, encoded, rel))],
            if_absent="pair",
            shape="plain",
            on_match=True,
            returns="r.id, r.id = row.id, properties(r)",
        )
        if not rows:
            raise NotFound("Source or target entity not found.")
        rel_id, created, props = rows[0]
        return WeightedLink(
            rel_id, source_id, target_id, str(rel), weight, causal, decode_context(props.get("context")), bool(created)
        )
