"""Named search presets (`polyg.core.search.service.PRESETS`) do what their names say, on the embedded
store: `default` fuses meaning and words with an exact name first, `semantic` does so with a
lighter full-text side, `vector_only` and `text_only` use one kind of evidence, `chunks` searches
document chunks, which get their vectors from the vectorizer by being declared embeddable.

The embedder hashes words, except that "automobile" is embedded as "car": a query can then
match by meaning a text that holds none of its words.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from polyg.core.search.service import PRESETS, SEMANTIC_SEARCH
from polyg.embed.hashing import HashingEmbedder
from polyg.errors import InvalidParams
from polyg.runtime.app import Polyg, Services
from polyg.store.names import CHUNK

from ..conftest import isolated_settings

pytestmark = pytest.mark.anyio

P = "presets"


class SynonymEmbedder(HashingEmbedder):
    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        return super().embed_batch_sync([text.replace("automobile", "car") for text in texts])


@pytest.fixture(scope="module")
async def s(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    core = Polyg(isolated_settings(tmp_path_factory.mktemp("presets")), embedder=SynonymEmbedder())
    try:
        services = await core.ready()
        await _corpus(services)
        yield services
    finally:
        await core.close()


async def _corpus(s: Services) -> None:
    for name, type_, observations in [
        ("Garage", "place", ["a car dealer and repair shop"]),
        ("Miles Davis", "musician", ["played the trumpet"]),
        ("trumpet", "instrument", ["a brass instrument"]),
        ("Brass band", "ensemble", ["a band of trumpet, trombone and tuba players"]),
    ]:
        await s.entities.create(P, name=name, type_=type_, observations=observations)
    # Chunks written as a deferred writer would: text and a revision, vectors left to the vectorizer.
    await s.ctx.write(
        P,
        "UNWIND $rows AS r CREATE (:Chunk {id: r.id, text: r.text, rev: r.id})",
        {"rows": [{"id": "c1", "text": "the car would not start"}, {"id": "c2", "text": "a trumpet solo"}]},
    )
    s.ctx.vectors.mark(P, ["c1", "c2"], CHUNK)
    assert await s.ctx.vectors.settle(P, 30)
    # An event as the temporal view writes it: its vector is the vectorizer's too.
    await s.memory.temporal.add_event(
        P, description="the car broke down on the bridge", occurred_at="2024-05-01T10:00:00Z", find_entities=False
    )


async def _ids(s: Services, query: str, preset: str) -> list[str]:
    names = dict(await s.store.ro_query(P, "MATCH (e:Entity) RETURN e.id, e.name"))
    return [names.get(hit.node_id, hit.node_id) for hit in await s.search.search(P, query, preset, 10)]  # type: ignore[arg-type]


async def test_the_presets_are_the_ones_the_toolsets_name() -> None:
    assert set(PRESETS) == {"default", "semantic", "vector_only", "text_only", "chunks", "events"}


async def test_vector_only_finds_by_meaning_and_text_only_by_words(s: Services) -> None:
    # No text holds "automobile": only its vector ("car") finds the garage.
    assert (await _ids(s, "automobile", "vector_only"))[0] == "Garage"
    assert await _ids(s, "automobile", "text_only") == []
    assert (await _ids(s, "automobile", "default"))[0] == "Garage"
    vector_hits = await s.search.search(P, "automobile", "vector_only", 10)
    assert all(hit.text is None and hit.vector is not None for hit in vector_hits)
    similarities = [hit.vector for hit in vector_hits]
    assert similarities == sorted(similarities, reverse=True)  # type: ignore[type-var]

    text_hits = await s.search.search(P, "trombone", "text_only", 10)
    assert [hit.vector for hit in text_hits] == [None]
    assert text_hits[0].text is not None


async def test_default_ranks_an_exact_name_first_and_the_one_kind_presets_do_not(s: Services) -> None:
    default = await s.search.search(P, "trumpet", "default", 10)
    assert (await _ids(s, "trumpet", "default"))[0] == "trumpet"
    assert default[0].fused > 1.0  # above anything fusion gives: the name rule put it there
    for preset in ("vector_only", "text_only"):
        hits = await s.search.search(P, "trumpet", preset, 10)  # type: ignore[arg-type]
        assert {"trumpet", "Miles Davis", "Brass band"} <= set(await _ids(s, "trumpet", preset))
        assert all(hit.fused < 1.0 for hit in hits)


async def test_semantic_fuses_meaning_and_words_with_an_exact_name_first(s: Services) -> None:
    assert (await _ids(s, "automobile", "semantic"))[0] == "Garage"  # by meaning alone
    hits = await s.search.search(P, "trumpet", "semantic", 10)
    assert (await _ids(s, "trumpet", "semantic"))[0] == "trumpet" and hits[0].fused > 1.0
    trombone = await s.search.search(P, "trombone", "semantic", 10)
    assert trombone[0].text is not None and trombone[0].vector is not None  # both kinds of evidence
    assert (await _ids(s, "trombone", "semantic"))[0] == "Brass band"


async def test_semantic_leaves_a_word_many_texts_hold_to_the_vectors(tmp_path: Path) -> None:
    # A word more texts hold than SEMANTIC_SEARCH.max_term_matches (yet fewer than half of
    # them, which `default` still ranks): `default` votes for its holders by text,
    # `semantic` leaves it to the vector side.
    many = SEMANTIC_SEARCH.max_term_matches
    assert many is not None
    core = Polyg(isolated_settings(tmp_path), embedder=SynonymEmbedder())
    try:
        services = await core.ready()
        rows = [
            {"name": f"gizmo part {i}" if i <= many else f"spare item {i}", "entityType": "part", "observations": []}
            for i in range(2 * many + 2)
        ]
        await services.named.create_entities(P, rows)
        assert await services.ctx.vectors.settle(P, 60)
        default = await services.search.search(P, "gizmo", "default", 10)
        semantic = await services.search.search(P, "gizmo", "semantic", 10)
        holders = {
            row[0]
            for row in await services.store.ro_query(P, "MATCH (e:Entity) WHERE e.name STARTS WITH 'gizmo' RETURN e.id")
        }
        voted = {hit.node_id for hit in default if hit.text is not None}
        assert voted and voted <= holders
        assert semantic and all(hit.text is None and hit.vector is not None for hit in semantic)
    finally:
        await core.close()


async def test_chunks_searches_chunks_only_and_entity_presets_never_return_them(s: Services) -> None:
    assert await _ids(s, "automobile", "chunks") == ["c1"]  # by meaning: its vector came from the vectorizer
    assert (await _ids(s, "trumpet solo", "chunks"))[0] == "c2"
    for preset in ("default", "vector_only", "text_only"):
        assert not {"c1", "c2"} & set(await _ids(s, "trumpet solo car", preset))


async def test_events_searches_events_only_and_entity_presets_never_return_them(s: Services) -> None:
    [event_id] = [row[0] for row in await s.store.ro_query(P, "MATCH (e:Event) RETURN e.id")]
    [hit] = await s.search.search(P, "automobile", "events", 10)  # by meaning only: no text holds the word
    assert hit.node_id == event_id and hit.vector is not None and hit.text is None
    assert [h.node_id for h in await s.search.search(P, "bridge", "events", 10)] == [event_id]
    for preset in ("default", "vector_only", "text_only", "chunks"):
        assert event_id not in {h.node_id for h in await s.search.search(P, "car bridge automobile", preset, 10)}  # type: ignore[arg-type]


async def test_an_unknown_preset_is_refused(s: Services) -> None:
    with pytest.raises(InvalidParams, match="Unknown search preset 'wide'"):
        await s.search.search(P, "trumpet", "wide", 10)  # type: ignore[arg-type]


async def test_knowledge_strategies_are_presets_with_their_own_scores(s: Services) -> None:
    """explore_neighborhoods' `vector`, `text` and `combined` strategies search with the
    `vector_only`, `text_only` and `default` presets: a cosine, 1 / rank, a cosine where the
    vector found the entity."""

    async def primary(term: str, strategy: str) -> list[tuple[str, float]]:
        found = await s.explorer.explore(P, [term], strategy=strategy, max_results=3, depth=1)
        return [(p.name, p.score) for p in found.terms[term].primary]

    [garage] = await s.search.search(P, "automobile", "vector_only", 1)
    assert (await primary("automobile", "vector"))[0] == ("Garage", round(garage.vector or 0.0, 6))
    assert await primary("automobile", "text") == []
    assert (await primary("automobile", "combined"))[0] == ("Garage", round(garage.vector or 0.0, 6))
    assert [score for _, score in await primary("trumpet", "text")] == [1.0, 0.5, round(1 / 3, 6)]
    with pytest.raises(InvalidParams, match="search_strategy"):
        await primary("trumpet", "fuzzy")
