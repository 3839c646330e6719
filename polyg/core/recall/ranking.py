"""How recall ranks stored memories: the search's hits (each with its event: who said it, when,
what it names) reranked with the graph around the query. One function, `rank_memories`, given
the hits and two reads (the memories around a hit, the memories close to it in meaning), so the
same rule runs on the database and, in bench/quality/locomo_rerank.py, on a recorded replay.

The signals, each measured on LoCoMo (bench/quality/locomo_recall.py, figures in bench/notes/2026-11-27-locomo.md):
- source and focus: a memory from an entity the query names (its speaker), or one that
  involves it, ranks above one that only shares words with the query;
- time: a memory from the time the query names ranks above others;
- neighbours: the memories remembered just before and after a good hit in the same
  conversation are evidence too (the reply to the turn that matched, or the question it answers),
  and so are the nearest before and after it from the same speaker (where a story goes on);
  the shares of several hits add up;
- meaning links: what the same speaker said closest in meaning to the best hits (by their
  stored vectors), elsewhere in time, in words the query does not use;
- agreement: that graph score blended with what the search saw of the memory itself (cosine,
  full-text vote), whether the named speaker said it, and how many of the best memories share
  its moment (a session where several good hits are is where the talk is about the question).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from polyg.core.memory.temporal import Event
from polyg.core.memory.write import MEMORY_ORIGIN
from polyg.core.model import Hit
from polyg.core.text.time import Interval, parse_instant
from polyg.store.falkor import Row


@dataclass(frozen=True)
class MemoryRanking:
    """How the graph reranks the search's hits: factors on the fused score, shares of it passed
    to neighbours, then the agreement blend."""

    # A memory from (said by, sent from) an entity the query names.
    source_boost: float = 2.0
    # A memory that involves (mentions) an entity the query names.
    involved_boost: float = 1.5
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
    in_time_boost: float = 3.0
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
    # Agreement: the graph's score above (as a share of the best one) is blended with what
    # the search saw of each memory itself and with where the other good memories are, each
    # signal's weight against the graph score's 1.0: its cosine to the query, its full-text
    # vote (1.0 for the best text match), whether an entity the query names said it, and the
    # share of the `moment_of` best memories that are of its moment (remembered at the same
    # time: one conversation, one meeting), where the talk is about the question. 0: off.
    # A moment is the memory's `occurred_at` as stored: memories told with one reference time
    # (a session's) share it; memories each stamped at their own instant do not, and then the
    # moment weight adds only a small bonus for being among the best. Fitted on LoCoMo with
    # leave-one-conversation-out cross-validation (bench/quality/locomo_rerank.py).
    cosine_weight: float = 0.18
    text_weight: float = 0.2
    source_weight: float = 0.24
    moment_weight: float = 0.6
    moment_of: int = 20


DEFAULT_RANKING = MemoryRanking()


@dataclass(frozen=True)
class Candidate:
    """One search hit with what the ranking reads of its event."""

    id: str
    fused: float
    vector: float | None
    text: float | None
    memories: tuple[str, ...]  # the memories it counts for: itself, or those it was extracted from
    context: str | None  # who said it
    entities: tuple[str, ...]  # the names it involves
    at: str | None  # when


def candidate(hit: Hit, event: Event) -> Candidate:
    memories = (event.id,) if event.origin == MEMORY_ORIGIN else tuple(event.memories)
    return Candidate(
        hit.node_id, hit.fused, hit.vector, hit.text, memories, event.context, tuple(event.entities), event.occurred_at
    )


class MemoryReads(Protocol):
    """What the ranking reads beyond the hits (rows as polyg.store.queries.temporal's
    `memories_around` and `similar_memories` return them)."""

    async def around(self, ids: list[str], window_us: int, reach: int) -> Sequence[Row]: ...

    async def similar(self, ids: list[str], k: int, same_context: bool) -> Sequence[Row]: ...


async def rank_memories(
    candidates: Sequence[Candidate],
    reads: MemoryReads,
    ranking: MemoryRanking = DEFAULT_RANKING,
    *,
    focus: Sequence[str] = (),
    window: Interval | None = None,
) -> list[tuple[str, float]]:
    """Memory ids with their scores, best first: `candidates` (the search's hits, best first)
    reranked for a query that names `focus` and asks about `window`."""
    wanted = {name.lower() for name in focus}
    scores: dict[str, float] = {}
    # memory -> (who said it, when) where the hits and their neighbours tell.
    known: dict[str, tuple[str | None, str | None]] = {}
    for hit in candidates:
        score = hit.fused * _boost(ranking, hit, wanted) * _in_time(ranking, hit, window)
        for memory in hit.memories:
            scores[memory] = max(score, scores.get(memory, 0.0))
        if hit.memories == (hit.id,):
            known[hit.id] = (hit.context, hit.at)
    if ranking.similar_of > 0:
        await _add_similar(scores, reads, ranking)
    if ranking.neighbour_share > 0:
        best = _best(scores, ranking.neighbours_of)
        reach = max(ranking.neighbour_reach, ranking.context_reach if ranking.same_context_neighbours else 0)
        rows = await reads.around(best, ranking.neighbour_window_s * 1_000_000, reach)
        add_neighbours(scores, rows, ranking)
        for memory, _, before, after in rows:  # a neighbour is of its hit's moment
            for near, said_by in [*before, *after]:
                known.setdefault(str(near), (said_by, known.get(str(memory), (None, None))[1]))
    if _blends(ranking):
        scores = _agreement(scores, candidates, known, ranking, wanted)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _blends(ranking: MemoryRanking) -> bool:
    return any((ranking.cosine_weight, ranking.text_weight, ranking.source_weight, ranking.moment_weight))


def _agreement(
    scores: dict[str, float],
    candidates: Sequence[Candidate],
    known: dict[str, tuple[str | None, str | None]],
    ranking: MemoryRanking,
    wanted: set[str],
) -> dict[str, float]:
    """`scores` blended with each memory's own search scores, who said it and its moment's
    share of the best memories (MemoryRanking's agreement weights)."""
    top = max(scores.values(), default=0.0) or 1.0
    best_vote = max((hit.text or 0.0 for hit in candidates), default=0.0) or 1.0
    cosine: dict[str, float] = {}
    text: dict[str, float] = {}
    for hit in candidates:
        for memory in hit.memories:
            cosine[memory] = max(cosine.get(memory, 0.0), hit.vector or 0.0)
            text[memory] = max(text.get(memory, 0.0), (hit.text or 0.0) / best_vote)
    best = _best(scores, ranking.moment_of)
    per_moment = Counter(known[m][1] for m in best if m in known and known[m][1] is not None)

    def blended(memory: str, score: float) -> float:
        said_by, moment = known.get(memory, (None, None))
        return (
            score / top
            + ranking.cosine_weight * cosine.get(memory, 0.0)
            + ranking.text_weight * text.get(memory, 0.0)
            + ranking.source_weight * ((said_by or "").lower() in wanted)
            + ranking.moment_weight * per_moment.get(moment, 0) / max(1, len(best))
        )

    return {memory: blended(memory, score) for memory, score in scores.items()}


def _best(scores: dict[str, float], n: int) -> list[str]:
    return sorted(scores, key=lambda m: (-scores[m], m))[:n]


async def _add_similar(scores: dict[str, float], reads: MemoryReads, ranking: MemoryRanking) -> None:
    """Raise `scores` of the memories close in meaning to the best ones."""
    rows = await reads.similar(_best(scores, ranking.similar_of), ranking.similar_k, ranking.similar_same_context)
    for memory, near, cosine in rows:
        if cosine >= ranking.similar_min:
            scores[near] = max(scores.get(near, 0.0), scores[memory] * ranking.similar_share * cosine)


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


def _boost(ranking: MemoryRanking, hit: Candidate, wanted: set[str]) -> float:
    if not wanted:
        return 1.0
    if (hit.context or "").lower() in wanted:
        return ranking.source_boost
    if wanted & {n.lower() for n in hit.entities}:
        return ranking.involved_boost
    return 1.0


def _in_time(ranking: MemoryRanking, hit: Candidate, window: Interval | None) -> float:
    if window is None or ranking.in_time_boost == 1.0 or hit.at is None:
        return 1.0
    return ranking.in_time_boost if window.contains(parse_instant(hit.at)) else 1.0
