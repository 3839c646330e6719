"""Centrality of a project's nodes: degree, and PageRank through FalkorDB's `algo.pageRank`.

Both are computed for a whole label at once and cached per project: a cached figure serves
until this process writes to the project (`GraphContext.writes`) or, for writes by other
processes sharing the database, until it is `MAX_AGE_S` old.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from polyg.core.graph import GraphContext
from polyg.names import check_project_id
from polyg.store.names import ENTITY, Label
from polyg.store.queries import traversal as q

MAX_AGE_S = 30.0


@dataclass(frozen=True)
class Centrality:
    """Per polyg id: PageRank (FalkorDB's scores, in (0, 1); a node without outgoing
    relationships passes its rank on to nobody, so they need not sum to 1) and degree
    (relationships to other nodes of the label, polyg's own types left out)."""

    pagerank: Mapping[str, float]
    degree: Mapping[str, int]
    computed_at: float = field(compare=False)

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


class CentralityService:
    def __init__(self, ctx: GraphContext, *, max_age_s: float = MAX_AGE_S) -> None:
        self.ctx = ctx
        self.max_age_s = max_age_s
        self._cache: dict[tuple[str, str], _Entry] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def get(self, project: str, label: Label = ENTITY) -> Centrality:
        check_project_id(project)
        key = (project, str(label))
        cached = self._fresh(key)
        if cached is not None:
            return cached
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._fresh(key)
            if cached is not None:
                return cached
            writes = self.ctx.writes.get(project, 0)
            ranks, ends = await asyncio.gather(
                q.pagerank(self.ctx, project, label), q.edge_ends(self.ctx, project, label)
            )
            degree = Counter(node_id for pair in ends for node_id in pair if node_id is not None)
            value = Centrality(
                pagerank={node_id: float(score) for node_id, score in ranks if node_id is not None},
                degree={node_id: degree.get(node_id, 0) for node_id, _ in ranks if node_id is not None},
                computed_at=time.monotonic(),
            )
            self._cache[key] = _Entry(writes, value)
            return value

    def _fresh(self, key: tuple[str, str]) -> Centrality | None:
        entry = self._cache.get(key)
        if entry is None or entry.writes != self.ctx.writes.get(key[0], 0):
            return None
        if time.monotonic() - entry.value.computed_at > self.max_age_s:
            return None
        return entry.value
