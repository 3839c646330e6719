"""recall's search over stored memories: hybrid search (full text and vectors, fused by rank)
over every event, each hit counted for the memories it comes from (a memory itself, or the
memories an extracted event cites), then reranked with the graph around the query.

The graph signals, each measured on LoCoMo (bench/locomo_recall.py, figures in
bench/README.md):
- focus: a memory that involves an entity the query names (its speaker, or a thing it
  mentions) ranks above one that only shares words with the query;
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from polyg.core.embeddable import SearchTarget
from polyg.core.memory_graphs import MemoryGraphs
from polyg.core.memory_write import MEMORY_ORIGIN
from polyg.core.search import STOPWORDS
from polyg.core.temporal import Event
from polyg.store.names import EVENT

EVENT_TARGETS = (SearchTarget(EVENT, None),)
# Hits read from the hybrid search before the graph reranks them.
CANDIDATES = 60


@dataclass(frozen=True)
class MemoryRanking:
    """How the graph reranks the search's hits (each a factor on the fused score)."""

    # A memory from (said by, sent from) an entity the query names.
    source_boost: float = 1.5
    # A memory that involves (mentions) an entity the query names.
    involved_boost: float = 1.5


DEFAULT_RANKING = MemoryRanking()
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
    ranking: MemoryRanking = DEFAULT_RANKING

    async def search(self, query: str, *, limit: int, focus: Sequence[str] = ()) -> list[MemoryHit]:
        """The memories that best answer `query`; `focus`: names of entities the query names."""
        if not query.strip():
            return []
        hits = await self.graphs.semantic.search_service.hits(
            self.project, query, EVENT_TARGETS, max(limit, CANDIDATES)
        )
        if not hits:
            return []
        events = {e.id: e for e in await self.graphs.temporal.events(self.project, [h.node_id for h in hits])}
        wanted = {name.lower() for name in focus}
        scores: dict[str, float] = {}
        texts: dict[str, Event] = {}
        missing: list[str] = []
        for hit in hits:
            event = events.get(hit.node_id)
            if event is None:
                continue
            score = hit.fused * self._boost(event, wanted)
            for memory in _memories_of(event):
                if score > scores.get(memory, 0.0):
                    scores[memory] = score
                    if memory == event.id:
                        texts[memory] = event
                    elif memory not in texts:
                        missing.append(memory)
        for event in await self.graphs.temporal.events(self.project, [m for m in missing if m not in texts]):
            texts[event.id] = event
        ranked = sorted((m for m in scores if m in texts), key=lambda m: (-scores[m], m))[:limit]
        if not ranked:
            return []
        top = scores[ranked[0]]
        return [
            MemoryHit(m, texts[m].description, texts[m].occurred_at, round(TOP_SCORE * scores[m] / top, 6))
            for m in ranked
        ]

    def _boost(self, event: Event, wanted: set[str]) -> float:
        if not wanted:
            return 1.0
        if (event.context or "").lower() in wanted:
            return self.ranking.source_boost
        if wanted & {n.lower() for n in event.entities}:
            return self.ranking.involved_boost
        return 1.0


def _memories_of(event: Event) -> list[str]:
    return [event.id] if event.origin == MEMORY_ORIGIN else list(event.memories)


_WORD = re.compile(r"[a-z0-9]+")


def relevance(query: str, text: str, names: Sequence[str] = ()) -> float:
    """Share of the query's content words (not its function words, not the names it asks
    about) that `text` holds, by their first five letters; 1.0 when the query has none."""
    named = {w for n in names for w in _WORD.findall(n.lower())}
    words = {w[:5] for w in _WORD.findall(query.lower()) if w not in STOPWORDS and w not in named and len(w) > 2}
    if not words:
        return 1.0
    held = {w[:5] for w in _WORD.findall(text.lower())}
    return len(words & held) / len(words)
