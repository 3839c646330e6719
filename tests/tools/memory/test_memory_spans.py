"""recall answers a conversation with the sentence that answers, over the real MCP client: told
one turn at a time (speaker as context, when it was said as reference_time), a when-question
gets the date the turn's words name read from when it was told ("yesterday", "last week"), and
a what-question the sentence holding the answer, not the speaker's name nor every memory found."""

from __future__ import annotations

import pytest

from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio

TURNS = [
    ("2024-03-12T18:00:00Z", "Priya", "Hey Omar! I went to the climbing gym yesterday and my arms are still sore."),
    ("2024-03-12T18:01:00Z", "Omar", "Nice! Last week I started a pottery course at the community centre."),
    ("2024-03-12T18:02:00Z", "Priya", "Cool. Also, I'm learning the cello these days. It is hard but fun."),
    ("2024-03-12T18:03:00Z", "Omar", "My sister moved to Lisbon last month, so I will visit her in the summer."),
    ("2024-03-12T18:04:00Z", "Priya", "Do you like living in Bristol?"),
]


async def _told(mem: Memory) -> None:
    for at, who, text in TURNS:
        await mem.ok("remember", content=text, context=who, reference_time=at)


async def _asked(mem: Memory, query: str) -> str:
    out = await mem.ok("recall", query=query, reference_time="2024-04-01T09:00:00Z")
    return str(out["answer"])


async def test_when_says_the_date_the_words_name_read_from_when_they_were_told(mem: Memory) -> None:
    await _told(mem)
    gym = await _asked(mem, "When did Priya go to the climbing gym?")
    assert "2024-03-11" in gym, gym  # "yesterday", told on 2024-03-12
    pottery = await _asked(mem, "When did Omar start the pottery course?")
    # "last week" names no day: the answer says so rather than a Monday it cannot know.
    assert "the week before 2024-03-12" in pottery.lower(), pottery
    moved = await _asked(mem, "When did Omar's sister move to Lisbon?")
    assert "February 2024" in moved, moved


async def test_what_answers_with_the_sentence_that_holds_the_answer(mem: Memory) -> None:
    await _told(mem)
    cello = await _asked(mem, "What instrument is Priya learning?")
    assert "cello" in cello and "Stored memories" not in cello, cello
    # The sentence, said in the third person: not the whole turn, nor the other turns.
    assert "Priya is learning the cello" in cello and "pottery" not in cello and "Hey Omar" not in cello, cello


HOUSE = [
    ("2025-03-01T10:00:00Z", "Zoe loves jazz and plays the piano."),
    ("2025-02-20T18:00:00Z", "We cleaned the gutters last week."),
    ("2025-03-03T18:00:00Z", "The basement flooded this morning."),
    ("2025-03-04T18:00:00Z", "Today the plumber replaced the burst pipe."),
    ("2025-03-06T18:00:00Z", "Yesterday we repainted the basement wall."),
]


async def test_what_happened_after_lists_the_events_after_the_anchor_by_their_dates(mem: Memory) -> None:
    for at, text in HOUSE:
        await mem.ok("remember", content=text, context="Hannah", reference_time=at)
    after = await _asked(mem, "What happened after the basement flooded?")
    assert "plumber" in after and "repainted" in after, after
    assert "gutters" not in after and "jazz" not in after, after
    # In time order, each event's date said once: the words that named its day relative to the
    # telling go (the time of day the extraction may give it is not asserted).
    assert "On 2025-03-04" in after and "On 2025-03-05" in after, after
    assert after.index("plumber") < after.index("repainted"), after
    assert "Today" not in after and "Yesterday" not in after, after
    before = await _asked(mem, "What happened before the basement flooded?")
    assert "gutters" in before and "plumber" not in before, before
