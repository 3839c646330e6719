"""Write-behind vectors (polyg.core.graph.vectorizer): a write is acknowledged once its text is
stored; its vectors follow, survive embedder failures and crashes, and never go stale.

Runs in every store mode, with a hashing embedder that tests can hold back or make fail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import anyio
import pytest

from polyg.core.graph.embeddable import ENTITY as ENTITY_DECL
from polyg.core.graph.embeddable import OBSERVATION as OBSERVATION_DECL
from polyg.core.graph.embeddable import Embeddable, EmbeddableRegistry
from polyg.core.graph.vectorizer import Vectorizer
from polyg.core.graph.vectors import compose
from polyg.embed.hashing import HashingEmbedder
from polyg.errors import EmbeddingError
from polyg.runtime.app import Polyg, Services
from polyg.store.names import CHUNK, ENTITY, EVENT, OBSERVATION, Label

from .conftest import StoreMode

pytestmark = pytest.mark.anyio

P = "vectors"
POISON = "\u2620"  # a text holding it is rejected by ControlledEmbedder, alone or in a batch


class ControlledEmbedder(HashingEmbedder):
    """Hashing vectors; stored-text embedding can be held back (`gate`) or made to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()  # set while a call waits at the gate
        self.failures_left = 0
        self.down = False  # every call fails, as when the embedding service is down
        self.batches = 0

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        self.waiting.set()
        assert self.gate.wait(30), "test never released the embedder"
        self.waiting.clear()
        if self.down or self.failures_left > 0:
            self.failures_left -= 1
            raise EmbeddingError("embedding service unavailable (test)")
        if any(POISON in text for text in texts):
            raise EmbeddingError("the provider rejects this input (test)")
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
    assert (await s.entities.get(P, made.id)).observations[0].text == "played the trumpet"
    embedding, written_rev, vec_rev = await vectors_of(s, made.id)
    assert embedding is None and written_rev is not None and vec_rev is None
    assert embedder.batches == 0  # acknowledged while the model has finished nothing

    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, made.id)
    head, observation = embedder.embed_batch_sync(["Miles Davis (person)", "played the trumpet"])
    assert embedding == pytest.approx(compose(head, [observation]), abs=1e-5)
    assert rev == vec_rev == written_rev
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
    # Only a vector can find it: no word of the query is in the entity's text. The search waits
    # for the vectors up to `vector_wait_s`: the default's 5 s, on a loaded machine, may end
    # before the held model's vectors are stored, and the search then rightly runs without them.
    s.search.config = s.search.config.__class__(min_similarity=-1.0, vector_margin=None, vector_wait_s=60.0)
    found = await s.search.entities(P, "saxophonist", limit=5)
    await release
    assert found and found[0][0] == made.id


async def test_a_failing_embedder_loses_nothing(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    embedder.failures_left = 2
    made = await s.entities.create(P, name="a", type_="thing", description="kept while the embedder fails")
    assert (await s.entities.get(P, made.id)).node.summary == "kept while the embedder fails"
    deadline = time.monotonic() + 30
    # The round that stores them counts its success just after the write is acknowledged.
    while (await vectors_of(s, made.id))[0] is None or s.ctx.vectors.failures:
        assert time.monotonic() < deadline, "vectors never stored after the embedder recovered"
        await asyncio.sleep(0.1)
    assert embedder.failures_left == 0
    _, rev, vec_rev = await vectors_of(s, made.id)
    assert rev is not None and rev == vec_rev


async def test_a_text_that_failed_once_is_embedded_again_not_parked(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    """The model fails one call (a provider's passing error, or a service that comes back between
    the failed batch and the probe that tells a rejected text from a model that is down): the
    text is tried again once the probe works, and parked only if it fails again."""
    s, embedder = controlled
    embedder.failures_left = 1
    made = await s.entities.create(P, name="a", type_="thing", description="embeds well")
    assert await s.ctx.vectors.settle(P, 30)
    assert embedder.failures_left == 0
    assert await s.ctx.vectors.parked(P) == 0
    embedding, rev, vec_rev = await vectors_of(s, made.id)
    assert embedding is not None and rev == vec_rev


async def test_a_text_change_while_embedding_wins(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    made = await s.entities.create(P, name="a", type_="thing")
    assert await s.ctx.vectors.settle(P, 30)
    revisions = [(await vectors_of(s, made.id))[1]]
    embedder.gate.clear()
    first = await s.entities.add_observation(P, made.id, "first")
    # The worker has read revision 2 and waits on the model.
    assert await anyio.to_thread.run_sync(embedder.waiting.wait, 30), "the worker never called the model"
    revisions.append((await vectors_of(s, made.id))[1])
    await s.entities.add_observation(P, made.id, "second")
    revisions.append((await vectors_of(s, made.id))[1])
    await s.entities.delete_observation(P, made.id, first.id)
    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, made.id)
    assert rev == vec_rev and len({*revisions, rev}) == 4  # each change made a new revision
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
    await s.store.query(P, "MATCH (e:Entity {id: $id}) SET e.rev = 2, e.summary = 'changed'", {"id": kept.id})
    await first.close()

    second = Polyg(store_mode.settings(), embedder=HashingEmbedder())
    try:
        s = await second.ready()
        deadline = time.monotonic() + 30
        while (await vectors_of(s, "ent_crash"))[0] is None or (await vectors_of(s, kept.id))[2] != 2:
            assert time.monotonic() < deadline, "the start did not store the missing vectors"
            await asyncio.sleep(0.1)
        rows = await s.store.ro_query(P, "MATCH (o:Observation {id: 'obs_crash'}) RETURN o.embedding")
        assert rows[0][0]
    finally:
        await second.close()


async def test_a_text_the_embedder_rejects_is_parked_and_holds_back_nothing(
    controlled: tuple[Services, ControlledEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    s, embedder = controlled
    embedder.gate.clear()  # the four writes form one batch
    good = [
        await s.entities.create(P, name=f"good {i}", type_="thing", observations=[f"fine text {i}"]) for i in range(3)
    ]
    bad = await s.entities.create(P, name="bad", type_="thing", observations=[f"rejected {POISON} text"])
    embedder.gate.set()
    # Settled: not waiting on a batch that can never be stored.
    assert await s.ctx.vectors.settle(P, 30)
    for made in good:
        embedding, rev, vec_rev = await vectors_of(s, made.id)
        assert embedding is not None and rev == vec_rev
    embedding, rev, vec_rev = await vectors_of(s, bad.id)
    assert embedding is None and vec_rev is None
    assert await s.ctx.vectors.parked(P) == 1
    assert s.ctx.vectors.failures == 0 and s.ctx.vectors.pending(P) == 0
    parked = [r for r in caplog.records if "parked" in r.getMessage()]
    assert [getattr(r, "entity", None) for r in parked] == [bad.id]
    # Found by its words all the same; a text change makes it an ordinary entity again.
    assert bad.id in [entity_id for entity_id, _ in await s.search.entities(P, "rejected", limit=5)]
    await s.entities.update_description(P, bad.id, "now embeddable")
    await s.entities.delete_observation(P, bad.id, (await s.entities.get(P, bad.id)).observations[0].id)
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, bad.id)
    assert embedding is not None and rev == vec_rev
    assert await s.ctx.vectors.parked(P) == 0


async def test_a_lone_rejected_text_is_parked_and_later_writes_go_on(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    s, _ = controlled
    bad = await s.entities.create(P, name=f"only {POISON}", type_="thing")
    assert await s.ctx.vectors.settle(P, 30)
    assert await s.ctx.vectors.parked(P) == 1
    later = await s.entities.create(P, name="later", type_="thing")
    assert await s.ctx.vectors.settle(P, 30)
    assert (await vectors_of(s, later.id))[0] is not None
    assert (await vectors_of(s, bad.id))[0] is None


async def test_an_embedder_that_is_down_parks_nothing_and_search_does_not_wait_for_it(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    s, embedder = controlled
    embedder.gate.clear()
    made = await s.entities.create(P, name="a", type_="thing")
    # A search already waiting when the batch fails stops waiting: the project is failing.
    waiting = asyncio.create_task(s.ctx.vectors.settle(P, 3600))
    await asyncio.to_thread(embedder.waiting.wait, 30)
    embedder.down = True
    embedder.gate.set()
    assert await asyncio.wait_for(waiting, 60) is False  # bound: a guard against a hang only
    assert s.ctx.vectors.failing(P)
    assert await s.ctx.vectors.settle(P, 3600) is False  # and later searches do not wait either
    assert await s.ctx.vectors.parked(P) == 0  # a model that rejects everything parks nothing
    embedder.down = False
    deadline = time.monotonic() + 30
    # The round that stores them counts its success just after the write is acknowledged: a read
    # that sees the vectors may come first, and the project is still failing (searches do not
    # wait) until then.
    while (await vectors_of(s, made.id))[0] is None or s.ctx.vectors.failing(P):
        assert time.monotonic() < deadline, "vectors never stored after the embedder came back"
        await asyncio.sleep(0.1)
    assert await s.ctx.vectors.settle(P, 30)


async def test_a_vector_computed_for_a_deleted_entity_never_lands_on_its_namesake(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    """An import restores ids: an entity deleted and created again with the same id must not
    receive the vector of its predecessor's text (its revision once restarted at 1)."""
    s, embedder = controlled

    def row(text: str, obs_id: str) -> dict[str, object]:
        obs = [{"id": obs_id, "text": text}]
        return {"id": "ent_same", "name": "same", "type": "thing", "summary": text, "obs": obs}

    embedder.gate.clear()
    await s.named.write_entities(P, [row("the old text", "obs_old")], unique_names=False)
    await asyncio.to_thread(embedder.waiting.wait, 30)  # the worker embeds the old text
    await s.entities.delete(P, "ent_same")
    await s.named.write_entities(P, [row("the new text", "obs_new")], unique_names=False)
    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await vectors_of(s, "ent_same")
    assert rev == vec_rev
    head, observation = embedder.embed_batch_sync(["same (thing): the new text", "the new text"])
    assert embedding == pytest.approx(compose(head, [observation]), abs=1e-5)


async def chunk_vectors(s: Services, chunk_id: str) -> tuple[list[float] | None, object, object]:
    rows = await s.store.ro_query(P, "MATCH (c:Chunk {id: $id}) RETURN c.embedding, c.rev, c.vec_rev", {"id": chunk_id})
    embedding, rev, vec_rev = rows[0]
    return ([float(x) for x in embedding] if embedding else None), rev, vec_rev


async def test_chunks_written_without_vectors_get_them_from_the_registry(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    """Chunk is declared embeddable: chunks written with a revision and no vector are embedded
    by the same worker as entities, counted per label while they wait, parked alike."""
    s, embedder = controlled
    embedder.gate.clear()
    first = await s.entities.create(P, name="Owl", type_="bird")
    await asyncio.to_thread(embedder.waiting.wait, 30)  # its round is under way: the rest waits
    await s.ctx.write(
        P,
        "UNWIND $rows AS r CREATE (:Chunk {id: r.id, text: r.text, rev: r.id})",
        {"rows": [{"id": "chunk_a", "text": "owls hunt at night"}, {"id": f"chunk_{POISON}", "text": POISON}]},
    )
    s.ctx.vectors.mark(P, ["chunk_a", f"chunk_{POISON}"], CHUNK)
    made = await s.entities.create(P, name="Hawk", type_="bird")
    assert (s.ctx.vectors.pending(P, CHUNK), s.ctx.vectors.pending(P, ENTITY), s.ctx.vectors.pending(P)) == (2, 1, 3)
    with pytest.raises(ValueError, match="not a label the vectorizer embeds"):
        s.ctx.vectors.mark(P, ["obs_x"], OBSERVATION)  # a part: embedded with its entity
    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    embedding, rev, vec_rev = await chunk_vectors(s, "chunk_a")
    assert embedding == pytest.approx(embedder.embed_batch_sync(["owls hunt at night"])[0], abs=1e-5)
    assert rev == vec_rev == "chunk_a"
    assert (await vectors_of(s, made.id))[0] is not None and (await vectors_of(s, first.id))[0] is not None
    assert await s.ctx.vectors.parked(P, CHUNK) == 1 and await s.ctx.vectors.parked(P, ENTITY) == 0
    assert await s.ctx.vectors.parked(P) == 1
    # Found by meaning and words through the chunk search.
    assert [hit.node_id for hit in await s.search.search(P, "owls at night", "chunks", 5)][:1] == ["chunk_a"]


async def test_the_sweep_finds_stale_chunks_too(controlled: tuple[Services, ControlledEmbedder]) -> None:
    s, embedder = controlled
    # As a crash, or another process that writes text and leaves vectors to this worker, leaves them.
    await s.ctx.write(P, "CREATE (:Chunk {id: 'chunk_late', text: 'written before a crash', rev: 'r1'})")
    await s.ctx.write(P, "CREATE (:Chunk {id: 'chunk_ingested', text: 'embedded at ingestion'})")  # no revision
    assert await s.ctx.vectors.sweep(P) == 1
    assert await s.ctx.vectors.settle(P, 30)
    embedding, _, vec_rev = await chunk_vectors(s, "chunk_late")
    assert embedding == pytest.approx(embedder.embed_batch_sync(["written before a crash"])[0], abs=1e-5)
    assert vec_rev == "r1"
    assert await s.ctx.vectors.sweep(P) == 0


async def test_a_label_declared_embeddable_gets_vectors_by_declaring_itself(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    """A label the default worker does not know (a note, text field `body`): a registry that
    declares it is all a vectorizer needs to embed it."""
    s, embedder = controlled
    note = Embeddable(Label("Note"), head=("body",), head_text=lambda v: str(v.get("body") or ""), fulltext=("body",))
    vectorizer = Vectorizer(s.ctx, registry=EmbeddableRegistry([ENTITY_DECL, OBSERVATION_DECL, note]))
    try:
        await s.ctx.write(P, "CREATE (:Note {id: 'note_1', body: 'recorded Kind of Blue', rev: 'r1'})")
        with pytest.raises(ValueError):
            s.ctx.vectors.mark(P, ["note_1"], Label("Note"))
        assert await vectorizer.sweep(P) == 1 and vectorizer.pending(P, "Note") == 1
        assert await vectorizer.settle(P, 30)
        rows = await s.store.ro_query(P, "MATCH (e:Note {id: 'note_1'}) RETURN e.embedding, e.vec_rev")
        assert [float(x) for x in rows[0][0]] == pytest.approx(
            embedder.embed_batch_sync(["recorded Kind of Blue"])[0], abs=1e-5
        )
        assert rows[0][1] == "r1"
    finally:
        await vectorizer.close()


async def test_events_get_their_vectors_from_the_default_worker(
    controlled: tuple[Services, ControlledEmbedder],
) -> None:
    """Events are declared in the main registry: add_event stores the text with a revision and
    answers without the model (held back here); the worker embeds the description, and the
    events preset finds the event by meaning once it has."""
    s, embedder = controlled
    embedder.gate.clear()
    with anyio.fail_after(20):  # the model is held: an inline embedding would never return
        added = await s.memory.temporal.add_event(
            P, description="recorded Kind of Blue", occurred_at="1959-03-02T14:00:00Z", find_entities=False
        )
    assert s.ctx.vectors.pending(P, EVENT) == 1
    embedder.gate.set()
    assert await s.ctx.vectors.settle(P, 30)
    rows = await s.store.ro_query(
        P, "MATCH (e:Event {id: $id}) RETURN e.embedding, e.rev, e.vec_rev", {"id": added.event.id}
    )
    [(embedding, rev, vec_rev)] = rows
    assert [float(x) for x in embedding] == pytest.approx(
        embedder.embed_batch_sync(["recorded Kind of Blue"])[0], abs=1e-5
    )
    assert rev is not None and vec_rev == rev
    hits = await s.search.search(P, "recorded Kind of Blue", "events", 5)
    assert [hit.node_id for hit in hits] == [added.event.id] and hits[0].vector == pytest.approx(1.0, abs=1e-3)
