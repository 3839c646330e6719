"""An event's vector comes from the vectorizer, after `add_event` (or `remember`) has answered;
a search right after still finds it by meaning, because search waits for the vectors of
earlier writes.

The server embeds through the fake OpenAI-compatible endpoint, whose vectors are hashes of
the text (only the same text is near), and which answers the first request for an event's
text late: the vector is still on its way when the client searches, so a search that did
not wait for it would miss the event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.mcp_helpers import KG, kg_session
from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio

SLOW_S = 1.0  # far longer than a search that does not wait takes (milliseconds)


@dataclass
class SlowFirstEmbedding(FakeOpenAIServer):
    """Answers the first `slow[text]` embedding requests holding `text` late."""

    slow: dict[str, int] = field(default_factory=dict)

    def _embeddings(self, body: Any) -> tuple[int, Any]:
        inputs = body.get("input") if isinstance(body, dict) else None
        texts = set(inputs) if isinstance(inputs, list) else {inputs}
        with self._lock:
            late = [text for text in self.slow if text in texts]
            for text in late:
                self.slow[text] -= 1
                if not self.slow[text]:
                    del self.slow[text]
        if late:
            self._stopping.wait(SLOW_S)
        return super()._embeddings(body)


@pytest.fixture(scope="module")
def fake() -> Iterator[SlowFirstEmbedding]:
    with SlowFirstEmbedding(dimension=16) as server:
        yield server


@pytest.fixture(scope="module")
async def server(servers_root: Path, fake: SlowFirstEmbedding) -> AsyncIterator[KG]:
    env = {
        "POLYG_EMBEDDING_PROVIDER": "openai",
        "POLYG_EMBEDDING_BASE_URL": fake.base_url,
        "POLYG_EMBEDDING_MODEL": "fake-embedding",
        "POLYG_EMBEDDING_DIMENSION": str(fake.dimension),
    }
    async with kg_session("stdio", servers_root / "event-vectors-stdio", "--toolsets", "memory", **env) as kg:
        yield kg


async def test_an_event_is_found_by_meaning_right_after_add_event(
    server: KG, fake: SlowFirstEmbedding, project: str
) -> None:
    mem = Memory(server, project)
    text = "the nightly backup job overran its window"
    fake.slow[text] = 1  # the vectorizer's request
    added = await mem.ok("add_event", description=text, occurred_at="2026-01-05T02:00:00Z")
    found = await mem.ok("search_semantic", query=text, limit=5)
    assert not fake.slow  # the vectorizer asked for the event's vector (late)
    hits = {r["id"]: r for r in found["results"]}
    assert added["event"]["id"] in hits
    assert hits[added["event"]["id"]]["kind"] == "event"
    assert hits[added["event"]["id"]]["similarity"] == pytest.approx(1.0, abs=1e-3)


async def test_a_memory_is_found_by_meaning_right_after_remember(
    server: KG, fake: SlowFirstEmbedding, project: str
) -> None:
    mem = Memory(server, project)
    content = "the staging cluster ran out of disk overnight"
    # remember asks ahead for its text's vector, and the vectorizer asks again unless that answer
    # is there by then (it depends on the machine's load): whichever asks is late.
    fake.slow[content] = 2
    stored = await mem.ok("remember", content=content, reference_time="2026-01-05T09:00:00Z")
    found = await mem.ok("search_semantic", query=content, limit=5)
    with fake._lock:
        assert fake.slow.pop(content, 0) < 2  # at least one request for its vector was late
    similar = {r["id"]: r["similarity"] for r in found["results"] if r["kind"] == "event"}
    assert similar.get(stored["memory_id"]) == pytest.approx(1.0, abs=1e-3)
