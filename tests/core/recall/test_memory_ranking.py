"""recall's memory ranking (`rank_memories`) on a small constructed conversation: the graph's
score is blended with how the search saw each memory itself (its full-text vote), who said it
(the speaker the query names, also for a memory found only as a neighbour) and where the other
good memories are (a moment that holds several of them is where the talk is about the question:
an answer built from several turns needs each of them, not one strong hit's echoes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from polyg.core.recall.ranking import DEFAULT_RANKING, Candidate, MemoryRanking, rank_memories
from polyg.store.falkor import Row

pytestmark = pytest.mark.anyio

# (id, speaker, moment) in the order they were remembered; two sessions.
TURNS = [
    ("a1", "Ann", "2023-05-01T10:00:00Z"),
    ("b1", "Bo", "2023-05-01T10:00:00Z"),
    ("a2", "Ann", "2023-05-01T10:00:00Z"),
    ("b2", "Bo", "2023-05-01T10:00:00Z"),
    ("a3", "Ann", "2023-05-01T10:00:00Z"),
    ("z1", "Ann", "2023-06-09T18:00:00Z"),
    ("z2", "Bo", "2023-06-09T18:00:00Z"),
    ("z3", "Ann", "2023-06-09T18:00:00Z"),
]
WITHOUT_AGREEMENT = replace(DEFAULT_RANKING, cosine_weight=0.0, text_weight=0.0, source_weight=0.0, moment_weight=0.0)


class Conversation:
    """The reads rank_memories makes, over TURNS (as the database's queries answer them)."""

    def __init__(self, turns: Sequence[tuple[str, str, str]] = TURNS) -> None:
        self.turns = list(turns)

    async def around(self, ids: list[str], window_us: int, reach: int) -> Sequence[Row]:
        rows: list[Row] = []
        for memory, speaker, moment in self.turns:
            if memory in ids:
                same = [(n, s) for n, s, m in self.turns if m == moment]
                at = same.index((memory, speaker))
                before = [[n, s] for n, s in reversed(same[:at])][:reach]
                after = [[n, s] for n, s in same[at + 1 :]][:reach]
                rows.append([memory, speaker, before, after])
        return rows

    async def similar(self, ids: list[str], k: int, same_context: bool) -> Sequence[Row]:
        return []


def hit(memory: str, rank: int, *, by_text: bool = True, cosine: float = 0.5) -> Candidate:
    speaker, moment = next((s, m) for n, s, m in TURNS if n == memory)
    vote = 1 / (10 + rank) if by_text else None
    return Candidate(memory, 1 / (10 + rank) + (vote or 0.0), cosine, vote, (memory,), speaker, (), moment)


async def order(
    candidates: list[Candidate], ranking: MemoryRanking = DEFAULT_RANKING, focus: Sequence[str] = ()
) -> list[str]:
    no_neighbours = replace(ranking, neighbour_share=0.0)
    return [m for m, _ in await rank_memories(candidates, Conversation(), no_neighbours, focus=focus)]


async def test_hits_from_the_moment_that_holds_most_good_hits_outrank_a_lone_stronger_hit() -> None:
    # One strong hit in June; three a little weaker ones from the May session.
    found = [hit("z1", 1), hit("a1", 2), hit("a2", 2), hit("a3", 2)]
    assert (await order(found, WITHOUT_AGREEMENT))[0] == "z1"
    assert await order(found) == ["a1", "a2", "a3", "z1"]


async def test_a_hit_the_words_found_outranks_one_only_the_vectors_found_at_the_same_score() -> None:
    by_text = hit("z3", 1, by_text=True, cosine=0.4)
    by_vector = Candidate("a3", by_text.fused, 0.4, None, ("a3",), "Ann", (), TURNS[4][2])
    assert await order([by_vector, by_text], WITHOUT_AGREEMENT) == ["a3", "z3"]  # a tie: by id
    assert await order([by_vector, by_text]) == ["z3", "a3"]


async def test_a_neighbour_said_by_the_named_speaker_outranks_one_said_by_another() -> None:
    # b2's neighbours: a2 before it and a3 after it (Ann's), b1 as Bo's own turn before.
    found = [hit("b2", 1)]
    neighbours = replace(DEFAULT_RANKING, neighbour_reach=1, same_context_neighbours=True, moment_weight=0.0)
    before = [
        m for m, _ in await rank_memories(found, Conversation(), replace(neighbours, source_weight=0.0), focus=["Bo"])
    ]
    ranked = [m for m, _ in await rank_memories(found, Conversation(), neighbours, focus=["Bo"])]
    assert before[1:] == ["a2", "a3", "b1"]  # equal shares: by id
    assert ranked[1] == "b1"


async def test_without_a_named_speaker_or_words_the_graph_order_stands() -> None:
    found = [hit("a1", 1, by_text=False), hit("z2", 2, by_text=False)]
    assert await order(found) == await order(found, WITHOUT_AGREEMENT) == ["a1", "z2"]
