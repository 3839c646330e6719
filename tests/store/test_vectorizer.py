"""Write-behind vectors (polyg.core.vectorizer): a write is acknowledged once its text is
stored; its vectors follow, survive embedder failures and crashes, and never go stale.

Runs in every store mode, with a hashing embedder that tests can hold back or make fail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest

from polyg.core.app import Polyg, Services
from polyg.core.vectors import compose
from polyg.embed.hashing import HashingEmbedder
from polyg.errors import EmbeddingError

from .conftest import StoreMode

pytestmark = pytest.mark.anyio

P = "vectors"


class ControlledEmbedder(HashingEmbedder):
    """Hashing vectors; stored-text embedding can be held back (`gate`) or made to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.failures_left = 0
        self.batches = 0

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        assert self.gate.wait(30), "test never released the embedder"
        if self.failures_left > 0:
            self.failures_left -= 1
            raise EmbeddingError("embedding service unavailable (test)")
        self.batches += 1
        return super().embed_batch_sync(texts)


@pytest.fixture
async def controlled(store_mode: StoreMode) -> AsyncIterator[tuple[Services, ControlledEmbedder]]:
    embedder = ControlledEmbedder()
    core = Polyg(store_mode.settings(), embedder=embedder)
    try:
        yield await core.ready(), embedder
    finally:
        embedder.gate.set()
        await core.close()


async def vectors_of(s: Services, entity_id: str) -> tuple[list[float] | None, int | None, int | None]:
    rows = await s.store.ro_query(
        P, "MATCH (e:Entity {id: $id}) RETURN e.embedding, e.rev, e.vec_rev", {"id": entity_id}
    )
    embedding, rev, vec_rev = rows[0]
    return ([float(x) for x in embedding] if embedding else None), rev, vec_rev


async def test_a_write_is_acknowledged_before_its_vectors_and_they_follow(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    s, embedder = controlled
    embedder.gate.clear()  # the model is "busy": the write must not wait for it
    made = await asyncio.wait_for(
        s.entities.create(P, name="Miles Davis", type_="person", observations=["played the trumpet"]), 5
    )
    assert (await s.entities.get(P, made["id"]))["observations"][0]["text"] == "played the trumpet"
    assert await vectors_of(s, made["id"]) == (None, 1, None)
    assert embedder.batches == 0  # acknowledged while the model has finished nothing

    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, made["id"])
    head, observation = embedder.embed_batch_sync(["Miles Davis (person)", "played the trumpet"])
    assert embedding == pytest.approx(compose(head, [observation]), abs=1e-5)
    assert rev == vec_rev == 1
    rows = await s.store.ro_query(P, "MATCH (o:Observation) RETURN o.embedding")
    assert [float(x) for x in rows[0][0]] == pytest.approx(observation, abs=1e-5)


async def test_search_finds_by_meaning_what_was_just_written(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    embedder.gate.clear()
    made = await s.entities.create(P, name="Coltrane", type_="person", observations=["tenor saxophone"])

    async def release_soon() -> None:
        await asyncio.sleep(0.3)
        embedder.gate.set()

    release = asyncio.create_task(release_soon())
    # Only a vector can find it: no word of the query is in the entity's text.
    s.search.config = s.search.config.__class__(min_similarity=-1.0, vector_margin=None)
    found = await s.search.entities(P, "saxophonist", limit=5)
    await release
    assert found and found[0][0] == made["id"]


async def test_a_failing_embedder_loses_nothing(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    embedder.failures_left = 2
    made = await s.entities.create(P, name="a", type_="thing", description="kept while the embedder fails")
    assert (await s.entities.get(P, made["id"]))["description"] == "kept while the embedder fails"
    deadline = time.monotonic() + 30
    while (await vectors_of(s, made["id"]))[0] is None:
        assert time.monotonic() < deadline, "vectors never stored after the embedder recovered"
        await asyncio.sleep(0.1)
    assert embedder.failures_left == 0
    assert s.ctx.vectors.failures == 0
    _, rev, vec_rev = await vectors_of(s, made["id"])
    assert rev == vec_rev == 1


async def test_a_text_change_while_embedding_wins(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    made = await s.entities.create(P, name="a", type_="thing")
    assert await s.ctx.vectors.settle(P, 30)
    embedder.gate.clear()
    first = await s.entities.add_observation(P, made["id"], "first")
    await asyncio.sleep(0.2)  # the worker has read revision 2 and waits on the model
    await s.entities.add_observation(P, made["id"], "second")
    await s.entities.delete_observation(P, made["id"], first["id"])
    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, made["id"])
    assert rev == vec_rev == 4
    head, second = embedder.embed_batch_sync(["a (thing)", "second"])
    assert embedding == pytest.approx(compose(head, [second]), abs=1e-5)


async def test_vectors_a_crash_left_behind_are_made_at_the_next_start(store_mode: StoreMode) -> None:
    first = Polyg(store_mode.settings(), embedder=HashingEmbedder())
    s = await first.ready()
    kept = await s.entities.create(P, name="kept", type_="thing", observations=["already embedded"])
    assert await s.ctx.vectors.settle(P, 30)
    # As a crash between the text write and the vector write leaves them: text, no vectors.
    await s.store.query(
        P,
        "CREATE (:Entity {id: 'ent_crash', name: 'Orphan', type: 'thing', summary: 'written before a crash', "
        "rev: 1})-[:HAS_OBSERVATION]->(:Observation {id: 'obs_crash', text: 'lost its vector'})",
    )
    await s.store.query(P, "MATCH (e:Entity {id: $id}) SET e.rev = 2, e.summary = 'changed'", {"id": kept["id"]})
    await first.close()

    second = Polyg(store_mode.settings(), embedder=HashingEmbedder())
    try:
        s = await second.ready()
        deadline = time.monotonic() + 30
        while (await vectors_of(s, "ent_crash"))[0] is None or (await vectors_of(s, kept["id"]))[2] != 2:
            assert time.monotonic() < deadline, "the start did not store the missing vectors"
            await asyncio.sleep(0.1)
        rows = await s.store.ro_query(P, "MATCH (o:Observation {id: 'obs_crash'}) RETURN o.embedding")
        assert rows[0][0]
    finally:
        await second.close()
