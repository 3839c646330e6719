"""recall's search over stored memories: hybrid search (full text and vectors, fused by rank)
over every event, each hit counted for the memories it comes from (a memory itself, or the
memories an extracted event cites), then reranked with the graph around the query.

The graph signals, each measured on LoCoMo (bench/locomo_recall.py, figures in
bench/README.md):
- source and focus: a memory from an entity the query names (its speaker), or one that
  involves it, ranks above one that only shares words with the query;
- time: a memory from the time the query names ranks above others;
- neighbours: the memories remembered just before and after a good hit in the same
  conversation are evidence too (the reply to the turn that matched, or the question it answers),
  and so are the nearest before and after it from the same speaker (where a story goes on);
  the shares of several hits add up;
- meaning links: what the same speaker said closest in meaning to the best hits (by their
  stored vectors), elsewhere in time, in words the query does not use.
Spreading the results over several moments (`same_moment`) was measured and lost: it is off.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from polyg.core.memory_graphs import MemoryGraphs
from polyg.core.memory_write import MEMORY_ORIGIN
from polyg.core.model import Hit
from polyg.core.search import STOPWORDS
from polyg.core.temporal import Event
from polyg.core.time import Interval, parse_instant
from polyg.store.falkor import Row
from polyg.store.queries import temporal as q


@dataclass(frozen=True)
class MemoryRanking:
    """How the graph reranks the search's hits (each a factor on the fused score)."""

    # A memory from (said by, sent from) an entity the query names.
    source_boost: float = 3.0
    # A memory that involves (mentions) an entity the query names.
    involved_boost: float = 1.5
    # Each further memory of the same moment (remembered with the same time: one conversation,
    # one meeting) counts this much less than the one before it, so that the first results
    # span several moments: an answer built from several occasions needs each of them.
    same_moment: float = 1.0
    candidates: int = 60
    # The memories just before and after each of the best `neighbours_of` hits (in the same
    # conversation: remembered in order within `neighbour_window_s`) gain this share of its
    # score: an answer is often the reply to the turn that matched the question, or the other
    # way round. The shares add up (to the memory's own score too): a memory among several
    # good hits is where the conversation is about the question.
    neighbour_share: float = 0.5
    neighbours_of: int = 10
    neighbour_window_s: int = 3600
    # Turns each way that count as neighbours, whoever said them.
    neighbour_reach: int = 1
    # The nearest memory each way of the hit's own context (its speaker) counts as a neighbour
    # too, looked for among the `context_reach` nearest: in a dialogue that is the speaker's own
    # turn before or after the other's reply, where a story goes on.
    same_context_neighbours: bool = True
    context_reach: int = 4
    # A memory from the time the query names (its day, its month) counts this much more.
    in_time_boost: float = 2.0
    # The `similar_k` memories closest in meaning (by their stored vectors) to each of the best
    # `similar_of` hits count `similar_share` of that hit times their cosine to it, when it is
    # at least `similar_min`: what a person said about the same subject elsewhere, in words
    # the query does not use. 0: off.
    similar_of: int = 5
    similar_k: int = 3
    similar_share: float = 0.7
    similar_min: float = 0.4
    # Only memories of the hit's own context (its speaker) count as close to it.
    similar_same_context: bool = True


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
        wanted = {name.lower() for name in focus}
        scores: dict[str, float] = {}
        texts: dict[str, Event] = {}
        missing: list[str] = []
        for hit in hits:
            event = events.get(hit.node_id)
            if event is None:
                continue
            score = hit.fused * _boost(ranking, event, wanted) * _in_time(ranking, event, window)
            for memory in _memories_of(event):
                if score > scores.get(memory, 0.0):
                    scores[memory] = score
                    if memory == event.id:
                        texts[memory] = event
                    elif memory not in texts:
                        missing.append(memory)
        if ranking.similar_of > 0:
            missing += await self._similar(ranking, scores)
        if ranking.neighbour_share > 0:
            best = sorted(scores, key=lambda m: (-scores[m], m))[: ranking.neighbours_of]
            rows = await q.memories_around(
                self.graphs.temporal.ctx,
                self.project,
                best,
                ranking.neighbour_window_s * 1_000_000,
                max(ranking.neighbour_reach, ranking.context_reach if ranking.same_context_neighbours else 0),
            )
            missing += [near for near in add_neighbours(scores, rows, ranking) if near not in texts]
        unread = list(dict.fromkeys(m for m in missing if m not in texts))
        for event in await self.graphs.temporal.events(self.project, unread) if unread else []:
            texts[event.id] = event
        ranked = sorted((m for m in scores if m in texts), key=lambda m: (-scores[m], m))
        if ranking.same_moment < 1.0:
            ranked = _spread(ranked, scores, texts, ranking.same_moment)
        ranked = ranked[:limit]
        if not ranked:
            return []
        top = scores[ranked[0]]
        return [
            MemoryHit(m, texts[m].description, texts[m].occurred_at, round(TOP_SCORE * scores[m] / top, 6))
            for m in ranked
        ]

    async def _similar(self, ranking: MemoryRanking, scores: dict[str, float]) -> list[str]:
        """Raise `scores` of the memories close in meaning to the best ones; returns those
        added."""
        best = sorted(scores, key=lambda m: (-scores[m], m))[: ranking.similar_of]
        rows = await q.similar_memories(
            self.graphs.temporal.ctx, self.project, best, ranking.similar_k, same_context=ranking.similar_same_context
        )
        added: list[str] = []
        for memory, near, cosine in rows:
            if cosine < ranking.similar_min:
                continue
            score = scores[memory] * ranking.similar_share * cosine
            if score > scores.get(near, 0.0):
                if near not in scores:
                    added.append(near)
                scores[near] = score
        return added


def add_neighbours(scores: dict[str, float], rows: Sequence[Row], ranking: MemoryRanking) -> list[str]:
    """Raise `scores` of the memories around the hits (`rows` as `memories_around` reads them):
    each gains `neighbour_share` of every hit it is a neighbour of, what the hit scored itself.
    Returns the neighbours."""
    hit = dict(scores)
    out: list[str] = []
    for memory, context, before, after in rows:
        for side in (before, after):
            for near in _around(side, context, ranking):
                scores[near] = scores.get(near, 0.0) + hit[memory] * ranking.neighbour_share
                out.append(near)
    return out


def _around(side: list[list[str | None]], context: str | None, ranking: MemoryRanking) -> list[str]:
    """The neighbours of a hit on one side of it (`side`: [id, context] pairs, nearest first)."""
    out = [str(near) for near, _ in side[: ranking.neighbour_reach]]
    if ranking.same_context_neighbours and context:
        own = next((str(near) for near, said_by in side if said_by == context), None)
        if own is not None and own not in out:
            out.append(own)
    return out


def _boost(ranking: MemoryRanking, event: Event, wanted: set[str]) -> float:
    if not wanted:
        return 1.0
    if (event.context or "").lower() in wanted:
        return ranking.source_boost
    if wanted & {n.lower() for n in event.entities}:
        return ranking.involved_boost
    return 1.0


def _in_time(ranking: MemoryRanking, event: Event, window: Interval | None) -> float:
    if window is None or ranking.in_time_boost == 1.0 or event.occurred_at is None:
        return 1.0
    return ranking.in_time_boost if window.contains(parse_instant(event.occurred_at)) else 1.0


def _spread(ranked: list[str], scores: dict[str, float], texts: dict[str, Event], factor: float) -> list[str]:
    """`ranked` with each memory's score lowered by `factor` per better memory of its moment."""
    seen: dict[str | None, int] = {}
    for memory in ranked:
        moment = texts[memory].occurred_at
        scores[memory] *= factor ** seen.get(moment, 0)
        seen[moment] = seen.get(moment, 0) + 1
    return sorted(ranked, key=lambda m: (-scores[m], m))


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
