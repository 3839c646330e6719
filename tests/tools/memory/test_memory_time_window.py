"""What a user reads from `recall` asked about a time that dated events answer, over the MCP
client (stdio): the event's sentence is not quoted again from its memory, and memories that
tell of nothing in that time are not appended; a memory told in that time still is."""

from __future__ import annotations

import pytest

from tests.tools.memory.conftest import SAMS_WEEK, Memory, ask, tell

pytestmark = pytest.mark.anyio
SAM = [*SAMS_WEEK, "Priya joined Helix Labs as head of data in March."]


async def test_a_time_question_answered_by_an_event_quotes_no_memory_outside_it(mem: Memory) -> None:
    await tell(mem, SAM)
    out = await ask(mem, "What happened in April 2026?")
    assert [e["at"][:10] for e in out["reasoning"]["temporal_context"]["events"]] == ["2026-04-01"]
    assert out["answer"] == (
        "On 2026-04-01: Lena moved to Vienna with her husband Marco in April 2026. "
        "Lena Fischer lives in Vienna (since April 2026)."
    )


async def test_a_time_question_no_event_answers_still_quotes_the_memories(mem: Memory) -> None:
    await tell(mem, SAM)
    week = "The platform team at Orbit Labs adopted a four-day week."
    await mem.ok("remember", content=week, context="Sam", reference_time="2026-04-20T12:00:00Z")
    out = await ask(mem, "What happened at Orbit Labs in April 2026?")
    assert out["reasoning"]["temporal_context"]["events"] == []
    assert out["answer"].startswith("Stored memories: ")
    assert f"\u201cSam: {week}\u201d" in out["answer"]
