"""The embedded database's lifecycle under a running polyg core: failed opens, restarts, close.

Real FalkorDB processes throughout: a database polyg started must never outlive it, and what
polyg learnt about a database (indexes ready, schema made) must not outlive the database.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from polyg.config import Settings, load_settings
from polyg.embed.hashing import HashingEmbedder
from polyg.errors import EmbeddingError, EmbeddingModelError, IndexNotFound, StoreError
from polyg.runtime.app import Polyg, Services
from polyg.store.embedded import EmbeddedFalkor
from tests.mcp_helpers import embedded_pid, polyg_command, redis_servers_under, server_env

pytestmark = pytest.mark.anyio

P = "life"


class RejectsSome(HashingEmbedder):
    """Hashing vectors, but a batch holding a text with "reject me" fails, as a provider that
    refuses one input fails the whole request."""

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        if any("reject me" in text for text in texts):
            raise EmbeddingError("the provider refuses this input (test)")
        return super().embed_batch_sync(texts)


class LoadFails(HashingEmbedder):
    """Hashing vectors, but the first `times` loads fail, as a model file that cannot be read."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def load(self) -> None:
        if self.times > 0:
            self.times -= 1
            raise EmbeddingModelError("the model failed to load (test)")


@pytest.fixture
def settings(clean_env: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        return load_settings(None, data_dir=clean_env / "data", log_dir=clean_env / "logs", **overrides)

    return make


def kill9_database(data_dir: Path) -> int:
    pid = embedded_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    return pid


async def restart_database(s: Services, data_dir: Path) -> None:
    """Kill the embedded database; the next call meets it dead and starts it again (it replays
    its log, then rebuilds its indexes in the background)."""
    kill9_database(data_dir)
    with pytest.raises(StoreError):
        await s.ctx.read(P, "RETURN 1")
    await until_answering(lambda: s.ctx.read(P, "RETURN 1"))


async def until_answering(call: Callable[[], Any], tries: int = 300) -> Any:
    """Retry a call that fails while the database restarts (each failure is prompt)."""
    for _ in range(tries - 1):
        try:
            return await call()
        except StoreError:
            await asyncio.sleep(0.1)
    return await call()


@pytest.mark.parametrize("failed_opens", [1, 2])
async def test_a_failed_open_leaves_no_database_behind(
    settings: Callable[..., Settings], clean_env: Path, failed_opens: int
) -> None:
    core = Polyg(settings(), embedder=LoadFails(failed_opens))
    try:
        for _ in range(failed_opens):
            with pytest.raises(EmbeddingModelError):
                await core.ready()  # the database started; the model did not load
        if failed_opens == 1:
            s = await core.ready()  # the next call opens again, on the same database
            await s.entities.create(P, name="a", type_="thing")
        assert len(redis_servers_under(clean_env)) == 1
    finally:
        await core.close()
    assert redis_servers_under(clean_env) == []


async def test_close_during_a_restart_stops_the_restarted_database(
    settings: Callable[..., Settings],
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="polyg.runtime.app")
    core = Polyg(settings(), embedder=HashingEmbedder())
    s = await core.ready()
    await s.entities.create(P, name="a", type_="thing")

    # The restart is held inside the database start until close() has reached the point where
    # it either stops the database (the race: the start then attaches anew, and the stop is no
    # longer the last user's) or waits for the restart to finish.
    in_start, go_on = threading.Event(), threading.Event()
    start_server, stop = EmbeddedFalkor._start_server, EmbeddedFalkor.stop

    def held_start(self: EmbeddedFalkor, deadline: float) -> None:
        in_start.set()
        assert go_on.wait(60), "close() neither stopped the database nor waited for its restart"
        start_server(self, deadline)

    def stop_now(self: EmbeddedFalkor) -> None:
        go_on.set()
        stop(self)

    class CloseWaits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for the embedded database restart" in record.getMessage():
                go_on.set()

    monkeypatch.setattr(EmbeddedFalkor, "_start_server", held_start)
    monkeypatch.setattr(EmbeddedFalkor, "stop", stop_now)
    handler = CloseWaits()
    logging.getLogger("polyg.runtime.app").addHandler(handler)
    try:
        kill9_database(clean_env / "data")
        failing = asyncio.create_task(s.store.ping())  # meets the dead database: restarts it
        assert await asyncio.to_thread(in_start.wait, 60)
        await asyncio.wait_for(core.close(), 120)
        with pytest.raises(StoreError):
            await failing
    finally:
        logging.getLogger("polyg.runtime.app").removeHandler(handler)
        go_on.set()
    assert redis_servers_under(clean_env) == []


async def test_a_database_replaced_under_polyg_gets_its_indexes_again(
    settings: Callable[..., Settings], clean_env: Path
) -> None:
    """The database restarts empty (its files lost, or a server without a volume): the schema
    polyg made and the indexes it saw ready are gone with it, and search must still work."""
    core = Polyg(settings(), embedder=HashingEmbedder())
    try:
        s = await core.ready()
        await s.entities.create(P, name="alpha", type_="thing", observations=["plays the trumpet"])
        assert await s.ctx.vectors.settle(P, 30)
        assert [e for e, _ in await s.search.entities(P, "trumpet")]  # indexes seen ready

        kill9_database(clean_env / "data")
        shutil.rmtree(clean_env / "data" / "db" / "aof")
        with pytest.raises(StoreError):
            await s.entities.get(P, "ent_missing")  # meets the dead database: restarts it
        made = await until_answering(
            lambda: s.entities.create(P, name="beta", type_="thing", observations=["plays the saxophone"])
        )
        assert await s.ctx.vectors.settle(P, 30)
        found = await until_answering(lambda: s.search.entities(P, "saxophone"))
        assert [entity_id for entity_id, _ in found] == [made.id]
    finally:
        await core.close()
    assert redis_servers_under(clean_env) == []


async def entities_with_vectors(s: Services, count: int) -> None:
    """`count` entities with random vectors, written straight to the store (fast), so that
    rebuilding their vector index after a restart takes a while."""
    await s.ctx.schema.ensure(P)
    dimension = s.ctx.embedder.dimension
    for start in range(0, count, 1000):
        await s.store.query(
            P,
            "UNWIND range($start, $end) AS i CREATE (:Entity {id: 'ent_' + toString(i), name: 'n' + toString(i), "
            "type: 'thing', summary: 'filler', embedding: vecf32([x IN range(1, $dim) | rand() - 0.5])})",
            {"start": start, "end": min(start + 1000, count) - 1, "dim": dimension},
        )


async def index_building(s: Services) -> bool:
    rows = await s.store.ro_query(P, "CALL db.indexes() YIELD label, status RETURN label, status")
    return any(status != "OPERATIONAL" for _, status in rows)


# Restarts of the database until one is seen rebuilding its indexes (see `restarted_while_building`).
RESTARTS = 3


async def restarted_while_building(s: Services, data_dir: Path, what: str) -> None:
    """Restart the database until its indexes are seen being rebuilt once it answers again. The
    rebuild runs in FalkorDB's own thread, which nothing here can hold: on a loaded machine it
    may end before the first read after the restart, and such a restart tests nothing (the
    database, killed again, rebuilds them again)."""
    for _ in range(RESTARTS):
        await restart_database(s, data_dir)
        if await index_building(s):
            return
    pytest.fail(f"the rebuild ended before the {what} after each of {RESTARTS} restarts: use more nodes")


async def test_search_during_an_index_rebuild_after_a_restart_says_so(
    settings: Callable[..., Settings], clean_env: Path
) -> None:
    """After the database restarts it rebuilds its indexes in the background: a search meanwhile
    answers 2003 ("being rebuilt"), never an empty or partial result, even though this process
    saw the indexes ready before the restart."""
    core = Polyg(settings(), embedder=HashingEmbedder())
    try:
        s = await core.ready()
        await entities_with_vectors(s, 2000)
        await until_answering(lambda: s.search.entities(P, "filler"))  # indexes seen ready
        await restarted_while_building(s, clean_env / "data", "search")
        try:
            found: list[tuple[str, float]] | None = await s.search.entities(P, "n5 filler", limit=5)
        except IndexNotFound as exc:
            assert exc.code == 2003 and "rebuilt" in exc.message
            found = None
        building_after = await index_building(s)
        if building_after:
            assert found is None  # the rebuild spanned the whole search: it must say so
        else:
            assert found is None or found[0][0] == "ent_5"
    finally:
        await core.close()


async def test_remember_during_an_index_rebuild_after_a_restart_never_stores_a_memory_twice(
    settings: Callable[..., Settings], clean_env: Path
) -> None:
    """remember's duplicate check reads the events' full-text index: while the database rebuilds
    it after a restart, that read would find nothing and let the same memory in twice. It
    answers 2003 ("being rebuilt") instead, or, once the index is back, finds the memory."""
    core = Polyg(settings(), embedder=HashingEmbedder())
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    content = "The auth service crashed after the deploy."
    try:
        s = await core.ready()
        first = await s.memory_writer.remember(P, content, "Alice", at)
        await events_with_vectors(s, 3000)
        await until_answering(lambda: s.search.entities(P, "filler"))  # indexes seen ready
        assert (await s.memory_writer.remember(P, content, "Alice", at)).duplicate
        await restarted_while_building(s, clean_env / "data", "remember")
        try:
            again = await s.memory_writer.remember(P, content, "Alice", at)
            assert again.duplicate and again.memory_id == first.memory_id
        except IndexNotFound as exc:
            assert exc.code == 2003 and "rebuilt" in exc.message
        stored = await s.store.ro_query(
            P, "MATCH (e:Event) WHERE e.origin = 'memory' RETURN e.id, e.description"
        )  # a scan, not the index being rebuilt
        assert stored == [[first.memory_id, f"Alice: {content}"]]
    finally:
        await core.close()


async def events_with_vectors(s: Services, count: int) -> None:
    """`count` events with descriptions and random vectors, written straight to the store, so
    that rebuilding the events' indexes after a restart takes a while."""
    dimension = s.ctx.embedder.dimension
    for start in range(0, count, 1000):
        await s.store.query(
            P,
            "UNWIND range($start, $end) AS i CREATE (:Event {id: 'evt_' + toString(i), "
            "description: 'filler event ' + toString(i) + ' after the deploy', occurred_us: i, "
            "embedding: vecf32([x IN range(1, $dim) | rand() - 0.5])})",
            {"start": start, "end": min(start + 1000, count) - 1, "dim": dimension},
        )


async def test_polyg_status_counts_parked_entities(settings: Callable[..., Settings], clean_env: Path) -> None:
    core = Polyg(settings(), embedder=RejectsSome())
    try:
        s = await core.ready()
        await s.entities.create(P, name="fine", type_="thing")
        await s.entities.create(P, name="odd", type_="thing", observations=["please reject me"])
        assert await s.ctx.vectors.settle(P, 30)
        assert await s.ctx.vectors.parked(P) == 1
    finally:
        await core.close()
    status = await asyncio.to_thread(
        subprocess.run,
        [*polyg_command(), "status", "--data-dir", str(clean_env / "data")],
        env=server_env(clean_env / "cli"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert f"no vectors until it changes): {P} 1" in status.stdout, status.stdout + status.stderr
    assert redis_servers_under(clean_env) == []
