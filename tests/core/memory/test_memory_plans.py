"""The memory toolset's reads at the core, on an embedded store: a timeline and get_entity are one
query each, whose plan uses the indexes and scans no label; facts written before they carried
`valid_from_us` get it the first time a timeline needs it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from polyg.core.graph.context import GraphContext
from polyg.core.memory.entity_graph import OWN_KEYS
from polyg.core.memory.temporal import TemporalGraph
from polyg.core.search.resolve import all_words_query
from polyg.core.text.time import epoch_us
from polyg.embed.hashing import HashingEmbedder
from polyg.runtime.app import Services
from polyg.store.falkor import Row
from polyg.store.names import EVENT, RelType
from polyg.store.queries import memories as memories_q
from polyg.store.queries import node_reads as node_reads_q
from polyg.store.queries import resolve as resolve_q
from polyg.store.queries import temporal as temporal_q
from tests.store.test_data_integrity import _index_only
from tests.store.test_projects import indexes_operational

pytestmark = pytest.mark.anyio


class Counting:
    """A runner that counts the reads it passes on and keeps their Cypher."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.reads: list[tuple[str, dict[str, Any]]] = []

    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        self.reads.append((cypher, params or {}))
        return await self.services.ctx.read(project, cypher, params)

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        return await self.services.ctx.write(project, cypher, params)


def scans_nothing(plan: list[str], *steps: str) -> bool:
    return all(_index_only(plan, step) for step in steps)


async def test_timeline_reads_facts_through_their_integer_index_and_repairs_old_ones(
    services: Services, project: str
) -> None:
    temporal = services.memory.temporal
    for i in range(30):  # enough entities that a label scan would show in a plan
        await services.entities.create(project, name=f"service {i}", type_="Service")
    await temporal.add_fact(project, subject="Alice", predicate="works_on", object_="Auth", valid_from="2025-06-01")
    await temporal.add_fact(project, subject="Auth", predicate="status", object_="live", valid_from="2025-07-01")
    await temporal.add_event(project, description="Auth went live", occurred_at="2025-07-01T09:00:00Z")
    # A fact as polyg wrote it before facts carried valid_from_us.
    await services.ctx.write(project, "MATCH ()-[r:status]->() SET r.valid_from_us = NULL")

    fresh = TemporalGraph(services.memory.entities)
    window = fresh.window("2025-01-01", "2025-12-31", None, None, None)
    timeline = await fresh.timeline(project, window)
    assert [(item.kind, item.at[:10]) for item in timeline.items] == [
        ("fact", "2025-06-01"),
        ("fact", "2025-07-01"),
        ("event", "2025-07-01"),
    ]
    assert await services.ctx.read(project, "MATCH ()-[r:status]->() RETURN r.valid_from_us") == [[1751328000000000]]

    runner = Counting(services)
    fact_types = [RelType("status"), RelType("works_on")]
    assert window.start is not None and window.end is not None
    span_us = (epoch_us(window.start), epoch_us(window.end))
    await temporal_q.timeline(
        runner, project, window.as_strings(), span_us, None, facts=True, fact_types=fact_types, limit=51
    )
    assert len(runner.reads) == 1
    await indexes_operational(services, project)
    plan = await services.store.explain(project, *runner.reads[0])
    assert scans_nothing(plan, "Node By Index Scan | (ev:Event)", "Edge By Index Scan | [r:status]"), plan


async def test_get_entity_is_one_query_through_the_name_index(services: Services, project: str) -> None:
    for i in range(30):
        await services.entities.create(project, name=f"service {i}", type_="Service")
    await services.memory.temporal.add_fact(project, subject="service 3", predicate="owned_by", object_="Alice")
    runner = Counting(services)
    rows = await node_reads_q.entity_view(
        runner,
        project,
        by="name",
        key="service 3",
        own=OWN_KEYS,
        observations=(0, 100),
        relationships=(0, 51),
        at="2999-01-01T00:00:00.000000Z",
        events=10,
    )
    fields, properties, _, _, relationships, _ = rows[0]
    assert fields["name"] == "service 3" and properties == []  # no vector travels with it
    assert [r[5] for r in relationships] == ["Alice"]
    await indexes_operational(services, project)
    plan = await services.store.explain(project, *runner.reads[0])
    assert scans_nothing(plan, "Node By Index Scan | (e:Entity)"), plan


async def test_memory_neighbours_read_through_the_time_index(services: Services, project: str) -> None:
    """recall's turns around a hit, with who said them: the window around each memory is read
    through the occurred_us index, not by scanning every event once per memory."""
    temporal = services.memory.temporal
    ids = []
    for i in range(30):  # enough events that a label scan would show in a plan
        added = await temporal.add_event(
            project,
            description=f"turn {i}",
            occurred_at=f"2025-03-01T10:{i:02d}:00Z",
            origin="memory",
            context="Ann" if i % 2 else "Bo",
        )
        ids.append(added.event.id)
    runner = Counting(services)
    rows = await memories_q.memories_around(runner, project, [ids[5], ids[0]], 150 * 1_000_000, 2)
    assert {row[0]: row[1:] for row in rows} == {
        ids[5]: ["Ann", [[ids[4], "Bo"], [ids[3], "Ann"]], [[ids[6], "Bo"], [ids[7], "Ann"]]],
        ids[0]: ["Bo", [], [[ids[1], "Ann"], [ids[2], "Bo"]]],
    }
    await indexes_operational(services, project)
    plan = await services.store.explain(project, *runner.reads[0])
    assert scans_nothing(plan, "Node By Index Scan | (o:Event)"), plan


async def test_similar_memories_are_the_nearest_memories_by_their_stored_vectors(
    services: Services, project: str
) -> None:
    """recall's meaning-level links: for each memory, the memories nearest to its own stored
    vector (itself and extracted events left out), each with its cosine, in one query."""
    temporal = services.memory.temporal
    texts = ["pottery class with the kids", "the kids loved the pottery class", "fixed the car brakes"]
    ids = []
    for i, text in enumerate(texts):
        added = await temporal.add_event(
            project, description=text, occurred_at=f"2025-03-0{i + 1}T10:00:00Z", origin="memory"
        )
        ids.append(added.event.id)
    await temporal.add_event(project, description="pottery class with the kids", occurred_at="2025-03-04T10:00:00Z")
    assert await services.ctx.vectors.settle(project, 60)
    runner = Counting(services)
    rows = await memories_q.similar_memories(runner, project, [ids[0]], 1)
    assert len(runner.reads) == 1
    assert [row[:2] for row in rows] == [[ids[0], ids[1]]]
    assert 0.0 < rows[0][2] < 1.0
    far = await memories_q.similar_memories(runner, project, [ids[0]], 3)
    assert {row[1] for row in far} == {ids[1], ids[2]}
    assert far[0][2] > far[-1][2]


async def test_an_events_exact_text_is_found_without_reading_every_event(services: Services, project: str) -> None:
    """remember's duplicate check (a memory's exact text) and a causal reference's exact and
    case-insensitive lookups go through the full-text index, even for a text full of short
    and common words, and still tell apart texts that differ only in those words."""
    temporal = services.memory.temporal
    for i in range(30):
        await temporal.add_event(project, description=f"note {i} of the day", occurred_at="2025-03-01T10:00:00Z")
    first = await temporal.add_event(
        project, description="Bo: we shipped it to QA", occurred_at="2025-03-02T10:00:00Z", origin="memory"
    )
    await temporal.add_event(project, description="Bo: we shipped it", occurred_at="2025-03-02T11:00:00Z")
    await indexes_operational(services, project)
    resolver = services.memory.resolver
    assert await resolver.exact(project, "Bo: we shipped it to QA", "event") == first.event.id
    assert await resolver.exact(project, "bo: we shipped it to qa", "event") is None
    found = await resolver.node(project, "BO: WE SHIPPED IT TO QA", kinds=("event",))
    assert found is not None and (found.id, found.how) == (first.event.id, "case-insensitive")
    for folded in (False, True):
        runner = Counting(services)
        words = all_words_query("Bo: we shipped it to QA")
        await resolve_q.node_with_text_indexed(runner, project, EVENT, words, "bo: we shipped it to qa", folded=folded)
        plan = await services.store.explain(project, *runner.reads[0])
        assert "Label Scan" not in "\n".join(plan), plan


async def test_concurrent_askers_of_one_vector_share_one_model_run(services: Services) -> None:
    """recall's graphs ask for the query's vector at once, and remember asks ahead for its
    texts': the model runs once per text."""
    calls: list[list[str]] = []

    class Counted(HashingEmbedder):
        def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
            calls.append(list(texts))
            return super().embed_batch_sync(texts)

    embedder = Counted()
    ctx = GraphContext(services.store, embedder, services.ctx.schema)
    vectors = await asyncio.gather(*(ctx.embed_query("why did auth fail") for _ in range(4)))
    assert len(calls) == 1 and all(v == vectors[0] for v in vectors)
    ctx.prefetch(["a memory", "a memory", "  "])
    made = await ctx.embed(["a memory"])
    assert calls[1:] == [["a memory"]]
    assert made == embedder.embed_batch_sync(["a memory"])
