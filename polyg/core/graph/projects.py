"""Projects: their names, and what each one holds (nodes and edges per label and type, schema)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from polyg.core.graph.context import GraphContext
from polyg.names import check_project_id
from polyg.store.queries import projects as q


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


class ProjectService:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx

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
