"""recall's search over stored memories: hybrid search (full text and vectors, fused by rank)
over every event, each hit counted for the memories it comes from (a memory itself, or the
memories an extracted event cites), then reranked with the graph around the query
(polyg.core.recall.ranking, which says what each signal is worth).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from polyg.core.memory.graphs import MemoryGraphs
from polyg.core.memory.write import MEMORY_ORIGIN
from polyg.core.model import Hit
from polyg.core.recall.answering import word_key
from polyg.core.recall.ranking import DEFAULT_RANKING, MemoryRanking, add_neighbours, candidate, rank_memories
from polyg.core.search.service import STOPWORDS
from polyg.core.text.time import Interval
from polyg.store.falkor import Row
from polyg.store.queries import memories as q

# The best memory's score: below a whole graph's own verdict (an entity named exactly, 1.0).
TOP_SCORE = 0.95


@dataclass(frozen=True)
class MemoryHit:
    id: str
    text: str
    at: str | None
    score: float  # 0..TOP_SCORE, the best hit first


@dataclass
class MemorySearch:
    graphs: MemoryGraphs
    project: str
    ranking: MemoryRanking | None = None  # None: DEFAULT_RANKING

    def find(self, query: str, limit: int) -> Awaitable[list[Hit]]:
        """The search's hits for `query`, which `search` reranks (started early, they are
        passed to it as `found`)."""
        ranking = self.ranking or DEFAULT_RANKING
        return self.graphs.semantic.search_service.search(self.project, query, "events", max(limit, ranking.candidates))

    async def search(
        self,
        query: str,
        *,
        limit: int,
        focus: Sequence[str] = (),
        window: Interval | None = None,
        found: Awaitable[list[Hit]] | None = None,
    ) -> list[MemoryHit]:
        """The memories that best answer `query`; `focus`: names of entities the query names;
        `window`: the time it asks about; `found`: `find(query, limit)` under way."""
        if not query.strip():
            return []
        ranking = self.ranking or DEFAULT_RANKING
        hits = await (found if found is not None else self.find(query, limit))
        if not hits:
            return []
        events = {e.id: e for e in await self.graphs.temporal.events(self.project, [h.node_id for h in hits])}
        candidates = [candidate(hit, events[hit.node_id]) for hit in hits if hit.node_id in events]
        scored = await rank_memories(candidates, _StoredMemories(self), ranking, focus=focus, window=window)
        texts = {e.id: e for e in events.values() if e.origin == MEMORY_ORIGIN}
        # The texts of the first memories only: those past them are never returned (a memory that
        # cannot be read, deleted since an event cited it, is rare).
        unread = [m for m, _ in scored[: limit * 2] if m not in texts]
        for event in await self.graphs.temporal.events(self.project, unread) if unread else []:
            texts[event.id] = event
        ranked = [(m, s) for m, s in scored if m in texts][:limit]
        if not ranked:
            return []
        top = ranked[0][1]
        return [
            MemoryHit(m, texts[m].description, texts[m].occurred_at, round(TOP_SCORE * s / top, 6)) for m, s in ranked
        ]


__all__ = ["DEFAULT_RANKING", "TOP_SCORE", "MemoryHit", "MemoryRanking", "MemorySearch", "add_neighbours", "relevance"]


@dataclass(frozen=True)
class _StoredMemories:
    """rank_memories' reads, from the database."""

    search: MemorySearch

    async def around(self, ids: list[str], window_us: int, reach: int) -> Sequence[Row]:
        return await q.memories_around(self.search.graphs.temporal.ctx, self.search.project, ids, window_us, reach)

    async def similar(self, ids: list[str], k: int, same_context: bool) -> Sequence[Row]:
        return await q.similar_memories(
            self.search.graphs.temporal.ctx, self.search.project, ids, k, same_context=same_context
        )


_WORD = re.compile(r"[a-z0-9]+")


def relevance(query: str, text: str, names: Sequence[str] = ()) -> float:
    """Share of the query's content words (not its function words, not the names it asks
    about) that `text` holds, compared by `word_key`; 1.0 when the query has none."""
    named = {w for n in names for w in _WORD.findall(n.lower())}
    words = {word_key(w) for w in _WORD.findall(query.lower()) if w not in STOPWORDS and w not in named and len(w) > 2}
    if not words:
        return 1.0
    held = {word_key(w) for w in _WORD.findall(text.lower())}
    return len(words & held) / len(words)
