"""recall's meaning-level links: a memory that shares no word with the query, but is close in
meaning to one of its best hits and said by the same speaker, is found through that hit; one
said by someone else is not. Real store, real vectors (the hashing embedder: texts that share
words are close)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from polyg.core.recall.memories import DEFAULT_RANKING, MemorySearch
from polyg.runtime.app import Services

pytestmark = pytest.mark.anyio

AT = datetime(2025, 5, 8, 13, 0, tzinfo=UTC)
LINKED = replace(
    DEFAULT_RANKING, similar_of=3, similar_k=3, similar_share=1.0, similar_min=0.4, similar_same_context=True
)


async def _remember(services: Services, project: str) -> dict[str, str]:
    writer = services.memory_writer
    said = {
        "hit": ("Caroline", "I joined a pottery workshop at the community centre"),
        "same speaker": ("Caroline", "the community centre workshop was full of painters"),
        "other speaker": ("Melanie", "the community centre workshop was full of sculptors"),
        "unrelated": ("Caroline", "Brakes fixed yesterday, bike rolls fine"),
    }
    ids = {}
    for day, (key, (speaker, text)) in enumerate(said.items()):
        remembered = await writer.remember(project, text, speaker, AT.replace(day=8 + day))
        ids[key] = remembered.memory_id
    assert await services.ctx.vectors.settle(project, 60)
    return ids


async def test_a_memory_close_to_a_hit_is_found_through_it(services: Services, project: str) -> None:
    ids = await _remember(services, project)
    search = MemorySearch(services.memory, project, ranking=LINKED)
    found = [hit.id for hit in await search.search("pottery", limit=5, focus=["Caroline"])]
    assert found[0] == ids["hit"]
    assert ids["same speaker"] in found
    assert ids["other speaker"] not in found
    assert ids["unrelated"] not in found

    unlinked = MemorySearch(services.memory, project, ranking=replace(LINKED, similar_of=0))
    assert ids["same speaker"] not in [hit.id for hit in await unlinked.search("pottery", limit=5)]


async def test_without_the_speaker_rule_anyone_close_counts(services: Services, project: str) -> None:
    ids = await _remember(services, project)
    search = MemorySearch(services.memory, project, ranking=replace(LINKED, similar_same_context=False))
    found = [hit.id for hit in await search.search("pottery", limit=5)]
    assert {ids["same speaker"], ids["other speaker"]} <= set(found)
    assert ids["unrelated"] not in found
