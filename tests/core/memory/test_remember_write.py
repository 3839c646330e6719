"""remember's write: the memory and the events extracted from it go into the graph in one write
(all or nothing), in their places in the T_BEFORE chain, however many remember at once. Real
embedded store."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from polyg.core.memory.event_chain import FRESH_S, EventChain, NewEvent, chain_links
from polyg.core.text.time import epoch_us
from polyg.errors import StoreError
from polyg.names import new_id
from polyg.runtime.app import Services
from polyg.store.falkor import Row
from polyg.store.names import RelType
from polyg.store.queries import causal as causal_q
from polyg.store.queries import memories as memories_q
from polyg.store.queries import temporal as temporal_q

pytestmark = pytest.mark.anyio

AT = datetime(2026, 1, 9, 12, 0, tzinfo=UTC)


async def chain_order(services: Services, project: str) -> tuple[list[str], list[tuple[int, str]]]:
    """The dated events followed along T_BEFORE from the first, and all of them in (time, id)
    order: equal when the chain is whole and in order."""
    rows = await services.ctx.read(
        project, "MATCH (e:Event) WHERE e.occurred_us IS NOT NULL RETURN e.occurred_us, e.id", {}
    )
    links = await services.ctx.read(project, "MATCH (a:Event)-[:T_BEFORE]->(b:Event) RETURN a.id, b.id", {})
    after = dict((a, b) for a, b in links)
    assert len(after) == len(links), "an event with two successors"
    firsts = {i for _, i in rows} - set(after.values())
    assert len(firsts) == 1, f"the chain starts at {len(firsts)} events"
    order = [firsts.pop()]
    while order[-1] in after:
        order.append(after[order[-1]])
    return order, sorted((us, i) for us, i in rows)


def test_new_events_between_the_same_two_are_chained_to_each_other() -> None:
    around = {
        10: {"before": ["a"], "same": [], "after": ["b"]},
        20: {"before": ["a"], "same": [], "after": ["b"]},
        30: {"before": ["b"], "same": [], "after": []},
        5: {"before": [], "same": ["a0"], "after": ["a"]},
    }
    links, unlinks = chain_links([(20, "n2"), (30, "n3"), (10, "n1"), (5, "n0")], around)
    assert unlinks == [("a0", "a"), ("a", "b")]
    assert links == [("a0", "n0"), ("n0", "a"), ("a", "n1"), ("n1", "n2"), ("n2", "b"), ("b", "n3")]
    assert chain_links([(1, "x"), (1, "w")], {1: {"before": [], "same": [], "after": []}}) == ([("w", "x")], [])


async def test_a_remember_whose_write_fails_leaves_nothing_and_can_be_told_again(
    services: Services, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentence = "We migrated the database on Monday."
    query = services.store.query

    def carries(value: Any) -> bool:
        if isinstance(value, dict):
            return value.get("description") == sentence or any(carries(v) for v in value.values())
        return isinstance(value, list) and any(carries(v) for v in value)

    async def failing(project_: str, cypher: str, params: dict[str, Any] | None = None, **kw: Any) -> list[Row]:
        if carries(params):  # the write of the event the memory states
            raise StoreError("the store went away")
        return await query(project_, cypher, params, **kw)

    monkeypatch.setattr(services.store, "query", failing)
    with pytest.raises(StoreError):
        await services.memory_writer.remember(project, sentence, "Dana", AT)
    assert await services.ctx.read(project, "MATCH (e:Event) RETURN count(e)", {}) == [[0]]

    monkeypatch.setattr(services.store, "query", query)
    again = await services.memory_writer.remember(project, sentence, "Dana", AT)
    assert not again.duplicate and len(again.events_logged) == 1
    rows = await services.ctx.read(
        project, "MATCH (e:Event) OPTIONAL MATCH (e)-[:INVOLVES]->(x) RETURN e.id, e.memories, collect(x.name)", {}
    )
    by_id = {row[0]: row[1:] for row in rows}
    assert set(by_id) == {again.memory_id, *again.events_logged}
    assert by_id[again.events_logged[0]][0] == [again.memory_id]
    assert by_id[again.memory_id][1] == ["Dana"]


async def test_memories_remembered_at_once_keep_one_chain_in_time_order(services: Services, project: str) -> None:
    said = [
        "We deployed billing-3 yesterday.",
        "Alice works on ledger-2.",
        "The search-4 service crashed on Monday because the disk filled up.",
        "We migrated the database on Monday.",
        "Nothing happened today, honestly.",
    ]
    memories = [(said[i % len(said)] + f" Note {i}.", AT + timedelta(hours=i % 4)) for i in range(16)]
    done, _ = await asyncio.gather(
        asyncio.gather(*(services.memory_writer.remember(project, text, "Bo", at) for text, at in memories)),
        services.memory.temporal.add_event(project, description="an outage", occurred_at="2026-01-05T00:00:00Z"),
    )
    assert not any(r.duplicate for r in done)
    order, expected = await chain_order(services, project)
    assert order == [i for _, i in expected]
    assert len(order) == len(memories) + sum(len(r.events_logged) for r in done) + 1


async def test_a_place_in_time_read_before_another_write_is_read_again(services: Services, project: str) -> None:
    temporal = services.memory.temporal
    await temporal.add_event(project, description="first", occurred_at="2026-01-01T00:00:00Z")
    await temporal.add_event(project, description="last", occurred_at="2026-01-31T00:00:00Z")
    at = datetime(2026, 1, 20, tzinfo=UTC)
    read = await temporal.chain.read(project, [epoch_us(at)])
    # Written since the read, in the same gap: the read no longer says where the next one goes.
    await temporal.add_event(project, description="between", occurred_at="2026-01-10T00:00:00Z")
    await temporal.chain.write(project, [NewEvent(new_id("evt"), "later", at)], read)
    order, expected = await chain_order(services, project)
    assert order == [i for _, i in expected] and len(order) == 4


async def test_a_place_in_time_read_too_long_ago_is_read_again(services: Services, project: str) -> None:
    """Another process's writes move no count of this one: a read older than FRESH_S (a slow
    extraction in between) is not trusted, so the chain does not fork."""
    temporal = services.memory.temporal
    await temporal.add_event(project, description="first", occurred_at="2026-01-01T00:00:00Z")
    await temporal.add_event(project, description="last", occurred_at="2026-01-31T00:00:00Z")
    at = datetime(2026, 1, 20, tzinfo=UTC)
    read = await temporal.chain.read(project, [epoch_us(at)])
    other_process = EventChain(temporal.chain.ctx)
    await other_process.write(project, [NewEvent(new_id("evt"), "between", datetime(2026, 1, 10, tzinfo=UTC))])
    old = dataclasses.replace(read, taken=read.taken - FRESH_S - 1)
    await temporal.chain.write(project, [NewEvent(new_id("evt"), "later", at)], old)
    order, expected = await chain_order(services, project)
    assert order == [i for _, i in expected] and len(order) == 4


async def marks(services: Services, project: str) -> dict[str, bool | None]:
    """Each memory's `unfinished` mark: True, or None when it has no such property at all."""
    rows = await services.ctx.read(
        project,
        "MATCH (e:Event {origin: 'memory'}) RETURN e.description, CASE WHEN 'unfinished' IN keys(e) "
        "THEN e.unfinished ELSE NULL END",
        {},
    )
    return {text: mark for text, mark in rows}


async def test_a_memory_is_marked_unfinished_until_its_last_fact_or_link_is_written(
    services: Services, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = services.memory_writer
    plain, both, twice = (
        "the coffee machine makes odd noises",
        "Alice works on Payments. The queue filled up because the worker crashed.",
        # Its last item needs no write of its own (its first wrote it): the mark is cleared all the same.
        "Bo works on Search. Bo works on Search.",
    )
    assert not (await writer.remember(project, plain, None, AT)).facts_added
    done = await writer.remember(project, both, None, AT)
    assert done.facts_added and done.causal_links_added
    assert len((await writer.remember(project, twice, None, AT)).facts_added) == 1
    # Their last writes cite a fact, and update a link, that other memories stated first.
    cites, updates = "Alice works on Payments, as before.", "The queue filled up because the worker crashed!"
    assert (await writer.remember(project, cites, None, AT)).facts_added == []
    assert (await writer.remember(project, updates, None, AT)).causal_links_updated == done.causal_links_added
    # Written whole: no mark left, and none written at all on a memory with nothing to follow.
    assert await marks(services, project) == {m: None for m in (plain, both, twice, cites, updates)}
    assert await writer.unfinished(project) == 0

    create_fact = temporal_q.create_fact

    async def failing(*args: Any, **kwargs: Any) -> None:
        raise StoreError("the store went away")

    monkeypatch.setattr(temporal_q, "create_fact", failing)
    half = "Chen works on Ledger."
    with pytest.raises(StoreError):
        await writer.remember(project, half, "Dana", AT)
    assert (await marks(services, project))[f"Dana: {half}"] is True
    assert await writer.unfinished(project) == 1

    monkeypatch.setattr(temporal_q, "create_fact", create_fact)
    retry = await writer.remember(project, half, "Dana", AT)
    assert not retry.duplicate and len(retry.facts_added) == 1
    assert (await marks(services, project))[f"Dana: {half}"] is None
    assert await writer.unfinished(project) == 0
    again = await writer.remember(project, half, "Dana", AT)
    assert again.duplicate and again.memory_id == retry.memory_id and not again.facts_added


async def test_a_memory_told_again_while_its_links_are_written_waits_and_writes_nothing_twice(
    services: Services, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that gave up waiting tells the memory again while its first remember is still
    writing its causal link: the second waits for the first instead of finishing it too."""
    writer, causal = services.memory_writer, services.memory.causal
    add_link, memory_state = causal.add_link, memories_q.memory_state
    linking, seen_unfinished = asyncio.Event(), asyncio.Event()

    async def held_link(*args: Any, **kwargs: Any) -> Any:
        linking.set()
        await seen_unfinished.wait()
        return await add_link(*args, **kwargs)

    async def state(*args: Any) -> Any:
        found = await memory_state(*args)
        if found == "unfinished":
            seen_unfinished.set()
        return found

    monkeypatch.setattr(causal, "add_link", held_link)
    monkeypatch.setattr(memories_q, "memory_state", state)
    said = "The queue filled up because the worker crashed."
    first = asyncio.create_task(writer.remember(project, said, "Dana", AT))
    await linking.wait()  # the memory is written, its link is not
    second = await writer.remember(project, said, "Dana", AT)
    done = await first
    assert second.duplicate and second.memory_id == done.memory_id and not second.causal_links_added
    assert len(done.causal_links_added) == 1
    links = await services.ctx.read(project, "MATCH ()-[r:CAUSES]->() RETURN count(r)", {})
    events = await services.ctx.read(project, "MATCH (e:Event) RETURN count(e)", {})
    assert (links, events) == ([[1]], [[3]])  # the memory, the cause and the effect


async def test_two_retries_of_an_unfinished_memory_at_once_write_its_link_once(
    services: Services, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first remember failed at the link; a client then retries twice at once: one retry
    finishes the memory, the other waits for it and finds nothing missing."""
    writer, causal = services.memory_writer, services.memory.causal
    add_link, memory_state = causal.add_link, memories_q.memory_state
    said = "The queue filled up because the worker crashed."

    async def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("the store went away")

    monkeypatch.setattr(causal, "add_link", failing)
    with pytest.raises(StoreError):
        await writer.remember(project, said, "Dana", AT)
    linking, release = asyncio.Event(), asyncio.Event()

    async def held_link(*args: Any, **kwargs: Any) -> Any:
        linking.set()
        await release.wait()
        return await add_link(*args, **kwargs)

    looked = asyncio.Event()

    async def state(*args: Any) -> Any:
        found = await memory_state(*args)
        if linking.is_set():  # the second retry's look, while the first writes the link
            looked.set()
        return found

    monkeypatch.setattr(causal, "add_link", held_link)
    monkeypatch.setattr(memories_q, "memory_state", state)
    first = asyncio.create_task(writer.remember(project, said, "Dana", AT))
    await linking.wait()  # the first retry is writing the link
    second = asyncio.create_task(writer.remember(project, said, "Dana", AT))
    await looked.wait()  # the second has seen the memory unfinished
    release.set()
    done, waited = await first, await second
    assert len(done.causal_links_added) == 1 and waited.duplicate and not waited.causal_links_added
    links = await services.ctx.read(project, "MATCH ()-[r:CAUSES]->() RETURN count(r)", {})
    assert links == [[1]]
    assert await writer.unfinished(project) == 0


async def test_an_item_the_graph_refuses_is_left_out_and_the_memory_is_whole(services: Services, project: str) -> None:
    """A cause that resolves to its own effect is refused on every try: the memory is stored
    whole without it, not failed (or left unfinished) for good."""
    writer = services.memory_writer
    await writer.remember(project, "The deploy failed.", None, AT)
    said = "The deploy failed because the deploy failed again."
    out = await writer.remember(project, said, None, AT)
    assert not out.duplicate and out.causal_links_added == []
    assert await writer.unfinished(project) == 0
    assert (await writer.remember(project, said, None, AT)).duplicate


async def test_a_last_write_that_finds_its_ends_gone_leaves_the_memory_unfinished(
    services: Services, project: str
) -> None:
    """An end deleted between the read and the write: the link is not written, so the mark
    stays (a retry writes it), while a citation the memory had made already clears it."""
    await services.ctx.write(project, "CREATE (:Event {id: 'mem', origin: 'memory', unfinished: true})", {})
    link = {"id": new_id("cl"), "confidence": 0.9, "evidence": "x", "now": "2026-01-09T12:00:00Z", "memories": ["mem"]}
    await causal_q.create_link(services.ctx, project, ("Event", "gone-a"), ("Event", "gone-b"), link, settles="mem")
    assert await memories_q.memory_state(services.ctx, project, "mem") == "unfinished"
    await temporal_q.cite_fact(services.ctx, project, RelType("WORKS_ON"), "no-fact", "mem", settles="mem")
    assert await memories_q.memory_state(services.ctx, project, "mem") == "whole"
