"""Centrality of a project's nodes: degree, and PageRank through FalkorDB's `algo.pageRank`;
and personalised PageRank (a walk restarting at chosen nodes) over a subgraph read by the caller.

Degree and PageRank are computed for a whole label at once and cached per project: a cached
figure serves until this process writes to the project (`GraphContext.writes`); for writes by
other processes sharing the database, a figure older than `MAX_AGE_S` is served once more while
a fresh one is computed in the background (no caller waits for a whole-graph recount).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from polyg.core.graph.context import GraphContext
from polyg.names import check_project_id
from polyg.store.names import ENTITY, Label
from polyg.store.queries import traversal as q

log = logging.getLogger(__name__)

DAMPING = 0.85
PPR_ITERATIONS = 100
PPR_TOLERANCE = 1e-6

MAX_AGE_S = 300.0


@dataclass(frozen=True)
class Centrality:
    """Per polyg id: PageRank (FalkorDB's scores, in (0, 1); a node without outgoing
    relationships passes its rank on to nobody, so they need not sum to 1) and degree
    (relationships to other nodes of the label, polyg's own types left out)."""

    pagerank: Mapping[str, float]
    degree: Mapping[str, int]
    computed_at: float = field(compare=False)
    # PageRank by internal id, for callers that walk the graph by internal ids. An internal id
    # is reused after a delete: a write by this process renews the figures, another process's
    # within MAX_AGE_S.
    by_internal: Mapping[int, float] = field(default_factory=dict, compare=False)

    def rank(self, node_id: str) -> float:
        return self.pagerank.get(node_id, 0.0)

    @functools.cached_property
    def top_rank(self) -> float:
        return max(self.pagerank.values(), default=0.0)

    def normalised_rank(self, node_id: str) -> float:
        """PageRank divided by the highest one: 1.0 for the most central node, in [0, 1]."""
        top = self.top_rank
        return self.rank(node_id) / top if top > 0 else 0.0


@dataclass
class _Entry:
    writes: int
    value: Centrality
    has_degree: bool


class CentralityService:
    def __init__(self, ctx: GraphContext, *, max_age_s: float = MAX_AGE_S) -> None:
        self.ctx = ctx
        self.max_age_s = max_age_s
        self._cache: dict[tuple[str, str], _Entry] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._refreshing: dict[tuple[str, str], asyncio.Task[None]] = {}

    async def get(self, project: str, label: Label = ENTITY, *, degree: bool = True) -> Centrality:
        """PageRank and, unless `degree` is False (its `degree` may then be empty), degree. The
        degrees read every relationship of the label (one row each): a caller that needs only
        PageRank should not wait for them."""
        check_project_id(project)
        key = (project, str(label))
        entry = self._usable(key, degree)
        if entry is not None:
            if time.monotonic() - entry.value.computed_at > self.max_age_s:
                # Old only (no write of ours since): the caller gets it, the next a fresh one.
                self._refresh_soon(key, project, label, entry.has_degree)
            return entry.value
        async with self._locks.setdefault(key, asyncio.Lock()):
            entry = self._usable(key, degree)
            if entry is not None:
                return entry.value
            return await self._compute(key, project, label, degree)

    def _usable(self, key: tuple[str, str], degree: bool) -> _Entry | None:
        entry = self._cache.get(key)
        if entry is None or entry.writes != self.ctx.writes.get(key[0], 0) or (degree and not entry.has_degree):
            return None
        return entry

    async def _compute(self, key: tuple[str, str], project: str, label: Label, with_degree: bool) -> Centrality:
        writes = self.ctx.writes.get(project, 0)
        if with_degree:
            ranks, ends = await asyncio.gather(
                q.pagerank(self.ctx, project, label), q.edge_ends(self.ctx, project, label)
            )
        else:
            ranks, ends = await q.pagerank(self.ctx, project, label), []
        degree = Counter(node_id for pair in ends for node_id in pair if node_id is not None)
        value = Centrality(
            pagerank={node_id: float(score) for node_id, score, _ in ranks if node_id is not None},
            degree={node_id: degree.get(node_id, 0) for node_id, _, _ in ranks if node_id is not None}
            if with_degree
            else {},
            computed_at=time.monotonic(),
            by_internal={int(internal): float(score) for _, score, internal in ranks},
        )
        self._cache[key] = _Entry(writes, value, with_degree)
        return value

    def _refresh_soon(self, key: tuple[str, str], project: str, label: Label, degree: bool) -> None:
        if key in self._refreshing:
            return

        async def refresh() -> None:
            async with self._locks.setdefault(key, asyncio.Lock()):
                await self._compute(key, project, label, degree)

        task = asyncio.get_running_loop().create_task(refresh())
        self._refreshing[key] = task
        task.add_done_callback(functools.partial(self._refreshed, key))

    def _refreshed(self, key: tuple[str, str], task: asyncio.Task[None]) -> None:
        self._refreshing.pop(key, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("centrality refresh failed", extra={"project": key[0], "error": repr(task.exception())})


def personalised_pagerank(
    nodes: Sequence[int],
    links: Mapping[int, Sequence[tuple[int, float]]],
    restart: Mapping[int, float],
    *,
    damping: float = DAMPING,
    iterations: int = PPR_ITERATIONS,
    tolerance: float = PPR_TOLERANCE,
) -> dict[int, float]:
    """PageRank whose walk restarts at `restart` (node -> share, normalised here) and follows
    `links` (node -> [(neighbour, weight)]) in proportion to their weights. A node whose links
    weigh nothing hands its rank back to the restart nodes, so ranks sum to 1."""
    index = {n: i for i, n in enumerate(nodes)}
    pairs = [(index[n], index[m], w) for n in nodes for m, w in links.get(n, ()) if m in index]
    teleport = np.array([restart.get(n, 0.0) for n in nodes], dtype=np.float64)
    rank = restarting_walk(
        np.array([p[0] for p in pairs], dtype=np.int64),
        np.array([p[1] for p in pairs], dtype=np.int64),
        np.array([p[2] for p in pairs], dtype=np.float64),
        teleport,
        damping=damping,
        iterations=iterations,
        tolerance=tolerance,
    )
    return {n: float(rank[i]) for n, i in index.items()}


def restarting_walk(
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    weight: NDArray[np.float64],
    teleport: NDArray[np.float64],
    *,
    damping: float = DAMPING,
    iterations: int = PPR_ITERATIONS,
    tolerance: float = PPR_TOLERANCE,
) -> NDArray[np.float64]:
    """`personalised_pagerank` on arrays: directed links src[i] -> dst[i] of weight[i] between
    nodes 0..len(teleport)-1, restarting in proportion to `teleport`. All zeros when nothing
    restarts anywhere."""
    size = len(teleport)
    teleport = np.clip(teleport, 0.0, None)
    if size == 0 or teleport.sum() <= 0:
        return np.zeros(size, dtype=np.float64)
    teleport = teleport / teleport.sum()
    keep = weight > 0
    src, dst, weight = src[keep], dst[keep], weight[keep]
    out = np.bincount(src, weights=weight, minlength=size)
    dangling = out <= 0
    share = weight / out[src]
    rank = teleport.copy()
    for _ in range(iterations):
        following = np.bincount(dst, weights=rank[src] * share, minlength=size)
        new = (1 - damping + damping * rank[dangling].sum()) * teleport + damping * following
        change = float(np.abs(new - rank).sum())
        rank = new
        if change < tolerance:
            break
    return rank
