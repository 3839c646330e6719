"""Chunk search's bound on a query word's full-text matches (`SearchConfig.max_term_matches`): a
word held by more chunks than the bound gives no text votes; rarer words still do."""

from __future__ import annotations

from dataclasses import replace

import pytest

from polyg.core.ingest.parsers import Document
from polyg.core.ingest.service import IngestService
from polyg.core.search.service import CHUNK_SEARCH, CHUNK_TARGETS
from polyg.runtime.app import Services

pytestmark = pytest.mark.anyio

# Small lists, so that ten chunks holding a word are "many"; every word fetched by share alone.
TINY = replace(CHUNK_SEARCH, candidates=2, term_candidates=2, max_term_share=1.0)


async def _text_voted(services: Services, project: str, max_term_matches: int | None) -> list[str]:
    config = replace(TINY, max_term_matches=max_term_matches)
    hits = await services.search.hits(project, "apple zebra", CHUNK_TARGETS, 2, config=config)
    return [hit.node_id for hit in hits if hit.text is not None]


async def test_a_word_in_more_chunks_than_the_bound_gives_no_text_votes(services: Services, project: str) -> None:
    docs = [Document(f"Orchard {i}", ("Ann",), f"Orchard {i} grows an apple tree.", f"test:o{i}") for i in range(10)]
    docs.append(Document("Zoo", ("Ben",), "The zebra ate an apple.", "test:zoo"))
    await IngestService(services.ctx).ingest(project, docs)
    unbounded = await _text_voted(services, project, None)
    bounded = await _text_voted(services, project, 2)
    assert len(unbounded) == 2  # the zebra chunk, then an apple chunk
    assert len(bounded) == 1 and bounded[0] == unbounded[0]  # "apple" (10+ chunks) no longer votes
