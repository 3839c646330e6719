"""Projects: what each one holds, and clearing all or part of one, in one place.

A project is one graph. Clearing it whole deletes the graph, and with it everything this
process remembers about it: the schema guard (the next write creates the indexes again), the
search caches (index readiness, node counts) and the vectorizer's queue, whose writes would
otherwise create the deleted graph again. Clearing part of it deletes exactly the labels and
relationship types named (a node goes with its edges), in batches; the graph and its queued
vector writes stay (those only update nodes that still exist).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from polyg.core.graph import GraphContext
from polyg.core.reltypes import RelTypeService
from polyg.core.search import SearchService
from polyg.names import check_project_id
from polyg.store.names import Label, RelType
from polyg.store.queries import projects as q

# Nodes or edges deleted per query when clearing part of a project.
CLEAR_BATCH = 10_000


@dataclass(frozen=True)
class ProjectStats:
    project: str
    nodes: int
    edges: int
    labels: dict[str, int]  # nodes per label (a node with two labels counts under each)
    relationship_types: dict[str, int]  # edges per type
    schema_version: int | None  # None: nothing written yet
    embedding_model: str | None
    dimension: int | None
    pending_vectors: int  # entities of this project whose vectors this process has yet to store


@dataclass(frozen=True)
class Cleared:
    project: str
    nodes: int  # deleted
    edges: int  # deleted, including those of deleted nodes


class ProjectService:
    def __init__(self, ctx: GraphContext, search: SearchService, reltypes: RelTypeService | None = None) -> None:
        self.ctx = ctx
        self.search = search
        # The process's registry of relationship types: a cleared type is registered (and its
        # edges' id indexed) again by the next write of it.
        self.reltypes = reltypes

    async def names(self) -> list[str]:
        return await self.ctx.store.list_projects()

    async def stats(self, project: str) -> ProjectStats:
        check_project_id(project)
        ctx = self.ctx
        labels, types, (nodes, edges) = await asyncio.gather(
            q.labels(ctx, project), q.rel_types(ctx, project), q.totals(ctx, project)
        )
        counts = await asyncio.gather(
            *(q.label_count(ctx, project, name) for name in labels),
            *(q.rel_type_count(ctx, project, name) for name in types),
        )
        version, model, dimension = await q.schema_meta(ctx, project)
        # A label or type stays in the graph's schema after its last node or edge is deleted.
        return ProjectStats(
            project=project,
            nodes=nodes,
            edges=edges,
            labels={n: c for n, c in zip(labels, counts[: len(labels)], strict=True) if c},
            relationship_types={t: c for t, c in zip(types, counts[len(labels) :], strict=True) if c},
            schema_version=version,
            embedding_model=model,
            dimension=dimension,
            pending_vectors=ctx.vectors.pending(project),
        )

    async def clear(
        self, project: str, *, labels: Sequence[str] | None = None, rel_types: Sequence[str] | None = None
    ) -> Cleared:
        """Delete the whole project (no labels and no types given), or the nodes of `labels` and
        the edges of `rel_types`. Names are checked before anything is deleted."""
        check_project_id(project)
        if labels is None and rel_types is None:
            return await self._clear_all(project)
        wanted_labels = [Label(name) for name in labels or ()]
        wanted_types = [RelType(name) for name in rel_types or ()]
        if project not in await self.names():
            return Cleared(project, 0, 0)  # deleting from a missing graph would create it
        nodes, edges = await q.totals(self.ctx, project)
        for rel_type in wanted_types:
            while await q.delete_rel_type_batch(self.ctx, project, rel_type, CLEAR_BATCH) == CLEAR_BATCH:
                pass
        for label in wanted_labels:
            while await q.delete_label_batch(self.ctx, project, label, CLEAR_BATCH) == CLEAR_BATCH:
                pass
        nodes_after, edges_after = await q.totals(self.ctx, project)
        self._forget(project)
        return Cleared(project, nodes - nodes_after, edges - edges_after)

    async def _clear_all(self, project: str) -> Cleared:
        await self.ctx.vectors.forget(project)
        if project not in await self.names():
            self._forget(project)
            return Cleared(project, 0, 0)
        nodes, edges = await q.totals(self.ctx, project)
        await self.ctx.store.delete_project(project)
        self._forget(project)
        return Cleared(project, nodes, edges)

    def _forget(self, project: str) -> None:
        self.ctx.schema.forget(project)
        self.search.forget(project)
        if self.reltypes is not None:
            self.reltypes.forget(project)
