"""The store on a real FalkorDB cluster: projects spread over shards by their graph key, every
listing sees them all, a `falkor://` URL naming a cluster node finds the cluster, and a node
that cannot be reached is named."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from polyg.config import Settings
from polyg.embed import create_embedder
from polyg.errors import StoreTimeout
from polyg.names import graph_key
from polyg.runtime.app import Polyg, Services
from polyg.store.falkor import QUERY_MEM_CAPACITY, FalkorStore
from tests.falkor_cluster import ON_SHARD, FalkorCluster
from tests.falkor_server import free_port
from tests.store.cluster.conftest import drop

pytestmark = pytest.mark.anyio


@pytest.fixture
async def services(settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    core = Polyg(settings(), embedder=create_embedder("hashing"), sweep=False)
    try:
        yield await core.ready()
    finally:
        services = await core.ready()
        for project in await services.store.list_projects():
            await drop(services, project)
        await core.close()


async def test_projects_spread_over_the_shards(cluster: FalkorCluster, services: Services) -> None:
    assert services.store.is_cluster
    for project in ON_SHARD:
        await services.entities.create(project, name=f"in {project}", type_="note")
    assert [cluster.shard_of(graph_key(p)) for p in ON_SHARD] == [0, 1, 2]
    # The per-query memory capacity polyg sets at open is every node's, replicas included.
    for node in cluster.nodes:
        assert int(FalkorCluster._command(node, "GRAPH.CONFIG", "GET", "QUERY_MEM_CAPACITY")[1]) == QUERY_MEM_CAPACITY
    # Each graph is on its own shard's primary only: the cluster never splits or copies one.
    homes = [cluster.primary_for(graph_key(p)) for p in ON_SHARD]
    assert len(set(homes)) == 3
    for project, home in zip(ON_SHARD, homes, strict=True):
        for primary in homes:
            keys = FalkorCluster._command(primary, "KEYS", "polyg:*")
            assert (graph_key(project) in keys) == (primary is home)
    assert await services.store.list_projects() == sorted(ON_SHARD)
    for project in ON_SHARD:
        assert [e.name for e in await services.entities.find(project)] == [f"in {project}"]
    await drop(services, "p_c")
    assert await services.store.list_projects() == ["p_a", "p_b"]


async def test_a_plain_url_naming_a_cluster_node_finds_the_cluster(
    cluster: FalkorCluster, settings: Callable[..., Settings]
) -> None:
    node = cluster.primaries[1]
    core = Polyg(settings(store=f"falkor://{node.host}:{node.port}"), embedder=create_embedder("hashing"), sweep=False)
    try:
        services = await core.ready()
        assert services.store.is_cluster
        for project in ON_SHARD:  # two of the three live on other nodes than the one named
            await services.entities.create(project, name="x", type_="note")
        assert await services.store.list_projects() == sorted(ON_SHARD)
        for project in ON_SHARD:
            await drop(services, project)
    finally:
        await core.close()


async def test_an_unreachable_node_at_start_is_named(cluster: FalkorCluster) -> None:
    dead = free_port()
    nobody = FalkorStore.from_url(f"falkor+cluster://127.0.0.1:{dead}", timeout_s=2)
    with pytest.raises(StoreTimeout, match=f"127.0.0.1:{dead}"):
        await nobody.wait_until_loaded(5)
    await nobody.close()
    # One seed answers, another does not: the one that does not is named all the same.
    live = cluster.primaries[0]
    half = FalkorStore.from_url(f"falkor+cluster://{live.host}:{live.port},127.0.0.1:{dead}", timeout_s=2)
    with pytest.raises(StoreTimeout, match=f"127.0.0.1:{dead} \\(seed"):
        await half.wait_until_loaded(5)
    await half.close()


async def test_a_primary_down_at_start_is_named(cluster: FalkorCluster) -> None:
    """A shard whose primary and replica are both down when polyg starts: the seed answers, and
    the primary it lists that does not is named (not a generic failure of the cluster)."""
    primary = cluster.primary_for(graph_key(ON_SHARD[2]))  # who it is now, after other tests' failovers
    replica = cluster.replica_of(primary)
    seed = cluster.primary_for(graph_key(ON_SHARD[0]))
    primary.kill()
    replica.kill()
    store = FalkorStore.from_url(f"falkor+cluster://{seed.host}:{seed.port}", timeout_s=2)
    try:
        with pytest.raises(StoreTimeout, match=f"{primary.host}:{primary.port} \\(primary") as failed:
            await store.wait_until_loaded(5)
        assert failed.value.code == 2001
    finally:
        await store.close()
