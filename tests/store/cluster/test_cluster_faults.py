"""Faults on a real FalkorDB cluster: a shard that is down, a primary killed under load (its
replica takes over), and reads sent to replicas."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import pytest

from polyg.config import Settings
from polyg.embed import create_embedder
from polyg.errors import PolygError, StoreTimeout
from polyg.names import graph_key
from polyg.runtime.app import Polyg
from polyg.store.connection import reads_from_primary
from tests.falkor_cluster import ON_SHARD, FalkorCluster
from tests.store.cluster.conftest import drop

pytestmark = pytest.mark.anyio

DOWN_P, UP_P, _ = ON_SHARD


def core(settings: Callable[..., Settings], **overrides: Any) -> Polyg:
    return Polyg(settings(**overrides), embedder=create_embedder("hashing"), sweep=False)


async def test_a_shard_down_fails_its_projects_only(cluster: FalkorCluster, settings: Callable[..., Settings]) -> None:
    polyg = core(settings)
    try:
        s = await polyg.ready()
        for project in (DOWN_P, UP_P):
            await s.entities.create(project, name="before", type_="note")
        primary = cluster.primary_for(graph_key(DOWN_P))
        replica = cluster.replica_of(primary)
        primary.kill()
        replica.kill()
        for _ in range(2):  # again: each call says the same, none hangs
            with pytest.raises(StoreTimeout) as failed:
                await s.entities.find(DOWN_P)
            assert failed.value.code == 2001
            assert f"{primary.host}:{primary.port}" in failed.value.message
            assert f"polyg:{DOWN_P}" in failed.value.message
            # The other shards' projects are served all along.
            await s.entities.create(UP_P, name="during", type_="note")
            assert {e.name for e in await s.entities.find(UP_P)} >= {"before", "during"}
        cluster.heal()
        home = cluster.primary_for(graph_key(DOWN_P))
        on_node = FalkorCluster._command(home, "EXISTS", graph_key(DOWN_P))
        assert [e.name for e in await s.entities.find(DOWN_P)] == ["before"], (home.port, on_node)
        for project in (DOWN_P, UP_P):
            await drop(s, project)
    finally:
        await polyg.close()


async def test_failover_under_load_loses_no_acknowledged_write(
    cluster: FalkorCluster, settings: Callable[..., Settings]
) -> None:
    """Writes go on while the project's primary is killed: they fail with a 2xxx error until
    its replica has taken over (and, waiting for a replica, until one is back), then succeed on
    the same polyg; every write that was acknowledged is there."""
    polyg = core(settings, wait_replicas=1, wait_replicas_timeout_ms=500)
    try:
        s = await polyg.ready()
        acked: list[str] = []
        errors: list[tuple[float, int, str]] = []
        primary = cluster.primary_for(graph_key(DOWN_P))
        killed_at = promoted_at = 0.0
        recovered_at = 0.0
        deadline = time.monotonic() + 60
        i = 0
        while time.monotonic() < deadline:
            name = f"w{i}"
            i += 1
            try:
                await s.entities.create(DOWN_P, name=name, type_="note")
            except PolygError as exc:
                errors.append((time.monotonic(), exc.code, exc.message))
                if cluster.primary_for_or_none(graph_key(DOWN_P)) not in (None, primary):
                    promoted_at = promoted_at or time.monotonic()
                    # Taken over: bring the old primary back (a replica of the new one), so
                    # that the writes, waiting for one replica, can be confirmed again.
                    await asyncio.to_thread(cluster.heal)
                await asyncio.sleep(0.05)
                continue
            acked.append(name)
            if len(acked) == 10:
                primary.kill()
                killed_at = time.monotonic()
            if killed_at and errors and errors[-1][0] > killed_at and not recovered_at:
                recovered_at = time.monotonic()
            if recovered_at and len(acked) >= 20:
                break
        assert killed_at and recovered_at, f"no recovery: {errors[-3:]}"
        assert errors, "killing the primary went unnoticed"
        assert {code for _, code, _ in errors} <= {2001, 2006}, {code: msg for _, code, msg in errors}
        found = {e.name for e in await s.entities.find(DOWN_P, limit=1000)}
        assert set(acked) <= found, sorted(set(acked) - found)
        # Seen with `-s`: the numbers the README's "Scaling out" quotes.
        print(
            f"\nfailover: {len(errors)} failed calls; replica promoted {promoted_at - killed_at:.2f} s and writes"
            f" confirmed again {recovered_at - killed_at:.2f} s after the kill; {len(acked)} acknowledged, none lost"
        )
        await drop(s, DOWN_P)
    finally:
        await polyg.close()


async def test_reads_go_to_replicas_when_asked(cluster: FalkorCluster, settings: Callable[..., Settings]) -> None:
    polyg = core(settings, read_from_replicas=True, wait_replicas=1)
    try:
        s = await polyg.ready()
        made = await s.entities.create(UP_P, name="replicated", type_="note")
        # Its vectors are stored in the background, reading its text from the primary: done
        # before the reads are counted.
        assert await s.ctx.vectors.settle(UP_P, 60)
        primary = cluster.primary_for(graph_key(UP_P))
        replica = cluster.replica_of(primary)
        before = (ro_queries(primary), ro_queries(replica))
        for _ in range(5):
            assert (await s.entities.get(UP_P, made.id)).node.name == "replicated"
        after = (ro_queries(primary), ro_queries(replica))
        assert after[0] == before[0]  # the primary answered no read
        assert after[1] >= before[1] + 5
        # Reads that decide a write (a write tool's, the schema's) go to the primary.
        with reads_from_primary():
            for _ in range(3):
                assert (await s.entities.get(UP_P, made.id)).node.name == "replicated"
        assert ro_queries(primary) >= after[0] + 3
        await drop(s, UP_P)
    finally:
        await polyg.close()


def ro_queries(node: Any) -> int:
    stats = FalkorCluster._command(node, "INFO", "commandstats")
    for key, value in stats.items():
        if key.lower() == "cmdstat_graph.ro_query":
            return int(value["calls"])
    return 0


async def test_a_slot_migration_during_calls_is_followed(
    cluster: FalkorCluster, settings: Callable[..., Settings]
) -> None:
    """The project's graph moves from shard to shard (four moves) while polyg writes it and
    three readers read it: the client follows ASK and then MOVED, and sends again what a
    migrating slot refused (it never ran). No call fails, and every write is there once.

    Before, redis-py closed all the client's connections on every fifth MOVED, with them those
    of calls waiting for their reply: a write then failed with 2001 ("Connection closed by
    server") though it had sometimes been applied."""
    project = "p_migrating"
    polyg = core(settings)
    try:
        s = await polyg.ready()
        await s.entities.create(project, name="before", type_="note")
        written, reads = ["before"], 0
        for _ in range(4):
            source = cluster.primary_for(graph_key(project))
            target = next(p for p in cluster.primaries if p is not source and cluster._is_live_primary(p))
            moving = asyncio.ensure_future(asyncio.to_thread(cluster.migrate_slot_of, graph_key(project), target))

            async def read_until_moved(moving: asyncio.Future[None]) -> int:
                done = 0
                while not moving.done():
                    await s.entities.find(project, limit=1000)
                    done += 1
                return done

            readers = [asyncio.ensure_future(read_until_moved(moving)) for _ in range(3)]
            while not moving.done():
                name = f"during {len(written)}"
                await s.entities.create(project, name=name, type_="note")  # raises on any error
                written.append(name)
            await moving
            reads += sum(await asyncio.gather(*readers))
            assert cluster.primary_for(graph_key(project)) is target
        await s.entities.create(project, name="after", type_="note")
        names = [e.name for e in await s.entities.find(project, limit=1000)]
        assert sorted(names) == sorted([*written, "after"])  # each write applied once
        assert reads > 2 and len(written) > 5  # calls were made while the slot moved
    finally:
        with contextlib.suppress(PolygError):
            s = await polyg.ready()
            await drop(s, project)
        await polyg.close()
