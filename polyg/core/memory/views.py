"""Management of the memory views: statistics, clearing one view, exporting the graph.

The export writes the project graph as Cypher statements that rebuild it in an empty FalkorDB
graph (range indexes on `id` first, so the relationship statements find their ends by index),
or as JSON nodes and edges. Either is paged: `offset` counts nodes, then relationships.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.text.time import SYSTEM_CLOCK, Clock, format_utc
from polyg.errors import InvalidParams
from polyg.store.names import NAME
from polyg.store.queries import transfer as transfer_q
from polyg.store.queries import views as q

View = Literal["semantic", "temporal", "causal", "entity", "all"]
VIEWS: tuple[str, ...] = ("semantic", "temporal", "causal", "entity", "all")
OWN_TYPES = frozenset({"HAS_OBSERVATION", "SIMILAR_TO", "REPRESENTS", "CAUSES", "INVOLVES", "T_BEFORE"})
VECTOR_KEYS = frozenset(transfer_q.VECTOR_KEYS)
MAX_EXPORT = 20_000


@dataclass(frozen=True)
class Statistics:
    entity: dict[str, Any]
    temporal: dict[str, Any]
    causal: dict[str, Any]
    semantic: dict[str, Any]
    orphans: dict[str, int]


@dataclass
class Export:
    format: str
    nodes: int
    edges: int
    offset: int
    next_offset: int | None
    statements: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)


def literal(value: Any, key: str | None = None) -> str:
    """A Cypher literal that reads back as `value` (vectors as vecf32, floats exactly)."""
    if key in VECTOR_KEYS and isinstance(value, list):
        return "vecf32([" + ",".join(f"{v:.9g}" for v in value) + "])"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParams("a stored number is not finite and cannot be exported")
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ",".join(literal(v) for v in value) + "]"
    if value is None:
        return "null"
    raise InvalidParams(f"a stored value of type {type(value).__name__} cannot be exported")


def name(value: str) -> str:
    """A label, type or key as Cypher reads it: backquoted unless it is a plain name."""
    return value if NAME.fullmatch(value) else "`" + value.replace("`", "``") + "`"


def props(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{name(k)}: {literal(v, k)}" for k, v in values.items() if v is not None) + "}"


class Views:
    def __init__(self, ctx: GraphContext, clock: Clock = SYSTEM_CLOCK) -> None:
        self.ctx = ctx
        self.clock = clock

    async def statistics(self, project: str) -> Statistics:
        figures = await q.counts(self.ctx, project, format_utc(self.clock.now()))
        rel_types = {t: int(c) for t, c in await q.relationship_types(self.ctx, project) if t not in OWN_TYPES}
        orphans = await q.orphans(self.ctx, project)
        concepts = figures.get("concepts", 0)
        return Statistics(
            entity={
                "entities": figures.get("entities", 0) - concepts,
                "observations": figures.get("observations", 0),
                "relationships": sum(rel_types.values()),
                "relationship_types": rel_types,
            },
            temporal={
                "events": figures.get("events", 0) - figures.get("undated_events", 0),
                "facts": figures["facts"],
                "facts_current": figures["facts_current"],
                "facts_invalidated": figures["facts_invalidated"],
                "t_before": figures.get("t_before", 0),
                "involves": figures.get("involves", 0),
            },
            causal={
                "causal_links": figures.get("causal_links", 0),
                "undated_events": figures.get("undated_events", 0),
            },
            semantic={
                "concepts": concepts,
                "similar_to": figures.get("similar_to", 0),
                "represents": figures.get("represents", 0),
                "vectors_pending": self.ctx.vectors.pending(project),
            },
            orphans=orphans,
        )

    async def orphans(self, project: str, limit: int = 50) -> list[tuple[str, str, str]]:
        limits.limit(limit)
        return [(k, i, t) for k, i, t in await q.orphan_ids(self.ctx, project, limit)]

    async def clear(self, project: str, view: str) -> int:
        """Delete what belongs to `view` and nothing else; how many nodes and relationships went."""
        if view not in q.CLEARS:
            raise InvalidParams(f"Unknown graph {view!r}: use one of {', '.join(VIEWS)}.")
        deleted = 0
        for match, node in q.CLEARS[view]:
            while True:
                count = await q.clear_step(self.ctx, project, match, node)
                deleted += count
                if count < q.BATCH:
                    break
        return deleted

    async def export(
        self, project: str, fmt: str, *, offset: int = 0, limit: int = 5_000, embeddings: bool = True
    ) -> Export:
        if fmt not in ("cypher", "json"):
            raise InvalidParams("format must be 'cypher' or 'json'.")
        if not 1 <= limit <= MAX_EXPORT:
            raise InvalidParams(f"limit must be between 1 and {MAX_EXPORT}.")
        if offset < 0:
            raise InvalidParams("offset must not be negative.")
        total_nodes = await transfer_q.node_count(self.ctx, project)
        total = total_nodes + await transfer_q.edge_count(self.ctx, project)
        node_rows = []
        if offset < total_nodes:
            node_rows = await transfer_q.nodes_page(self.ctx, project, offset, limit, vectors=embeddings)
        room = limit - len(node_rows)
        edge_rows = []
        if room > 0:
            edge_rows = await transfer_q.edges_page(self.ctx, project, max(0, offset - total_nodes), room)
        end = offset + len(node_rows) + len(edge_rows)
        out = Export(fmt, len(node_rows), len(edge_rows), offset, end if end < total else None)
        nodes = [(labels, self._keep(p, embeddings)) for labels, p in node_rows]
        edges = [(t, self._keep(p, embeddings), la, a, lb, b) for t, p, la, a, lb, b in edge_rows]
        if fmt == "json":
            out.items = [{"kind": "node", "labels": list(lab), "properties": p} for lab, p in nodes]
            out.items += [
                {
                    "kind": "edge",
                    "type": t,
                    "properties": p,
                    "from": {"label": la, "id": a},
                    "to": {"label": lb, "id": b},
                }
                for t, p, la, a, lb, b in edges
            ]
            return out
        if offset == 0:
            found = [label for label in await transfer_q.labels(self.ctx, project) if label != "PolygMeta"]
            out.statements += [f"CREATE INDEX FOR (n:{name(label)}) ON (n.id)" for label in found]
        out.statements += [f"CREATE (:{':'.join(name(x) for x in lab)} {props(p)})" for lab, p in nodes]
        out.statements += [
            f"MATCH (a:{name(la)} {{id: {literal(a)}}}), (b:{name(lb)} {{id: {literal(b)}}}) "
            f"CREATE (a)-[:{name(t)} {props(p)}]->(b)"
            for t, p, la, a, lb, b in edges
        ]
        return out

    @staticmethod
    def _keep(stored: dict[str, Any], embeddings: bool) -> dict[str, Any]:
        values = dict(stored)
        if not embeddings:
            for key in VECTOR_KEYS:
                values.pop(key, None)
            values.pop("vec_rev", None)  # so that polyg computes the vectors again after a load
        return values
