"""The graph's size and health (spec 004 `get_graph_statistics`), plus what a user maintaining
a graph needs to see: entities with no relationship, entities whose vectors are missing or
behind their text, names several entities share, and communities.

Spec 004 reports a Qdrant connection; polyg's vectors live in FalkorDB's own vector index, so
the statistics say whether that index is there and operational, and how many vectors are
still being made. A community here is a weakly connected component of two or more entities
(FalkorDB's `algo.WCC` over entities and every relationship between them); a lone entity is
an orphan, not a community.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from polyg.core.graph.context import GraphContext
from polyg.core.graph.weighted_links import shown_type
from polyg.store.falkor import Row
from polyg.store.queries import indexes as indexes_q
from polyg.store.queries import stats as q

DUPLICATES_SHOWN = 20


@dataclass(frozen=True)
class TypeCount:
    relation_type: str  # as results show it (spec 004's name for its seven types)
    count: int


@dataclass(frozen=True)
class DuplicateName:
    name: str
    count: int
    entity_ids: tuple[str, ...]


@dataclass(frozen=True)
class GraphStatistics:
    entities: int
    relationships: int
    relationship_types: tuple[TypeCount, ...]
    causal_relationships: int
    vector_index: str  # "operational", "building" or "absent"
    vectors_pending: int  # queued in this process, not stored yet
    vectors_parked: int  # texts the embedder refused, kept aside
    entities_without_vectors: int
    orphan_entities: int
    duplicate_names: tuple[DuplicateName, ...]
    communities: int
    largest_community: int

    @property
    def avg_relationships_per_entity(self) -> float:
        return round(self.relationships / self.entities, 2) if self.entities else 0.0


async def statistics(ctx: GraphContext, project: str) -> GraphStatistics:
    entities, orphans, missing, parked = await asyncio.gather(
        q.count_entities(ctx, project),
        q.count_orphans(ctx, project),
        q.count_without_vectors(ctx, project),
        ctx.vectors.parked(project),
    )
    types, duplicates, components, index = await asyncio.gather(
        q.relationship_types(ctx, project),
        q.duplicate_names(ctx, project, DUPLICATES_SHOWN),
        _components(ctx, project),
        indexes_q.entity_index_status(ctx, project),
    )
    groups = [int(size) for _, size in components if int(size) > 1]
    return GraphStatistics(
        entities=entities,
        relationships=sum(int(count) for _, count, _ in types),
        relationship_types=tuple(TypeCount(shown_type(t), int(count)) for t, count, _ in types),
        causal_relationships=sum(int(causal) for _, _, causal in types),
        vector_index=_index_state(index),
        vectors_pending=ctx.vectors.pending(project),
        vectors_parked=parked,
        entities_without_vectors=missing,
        orphan_entities=orphans,
        duplicate_names=tuple(DuplicateName(n, int(c), tuple(ids)) for n, c, ids in duplicates),
        communities=len(groups),
        largest_community=max(groups, default=0),
    )


async def _components(ctx: GraphContext, project: str) -> list[tuple[int, int]]:
    if not await q.count_entities(ctx, project):
        return []  # WCC over a label the graph has never held fails
    return [(int(c), int(n)) for c, n in await q.component_sizes(ctx, project)]


def _index_state(rows: list[Row]) -> str:
    vector = [status for status, has_vector in rows if has_vector]
    if not vector:
        return "absent"
    return "operational" if all(s == "OPERATIONAL" for s in vector) else "building"
