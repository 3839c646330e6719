"""The store on a real FalkorDB cluster: projects spread over shards by their graph key, every
listing sees them all, a `falkor://` URL naming a cluster node finds the cluster, and a node
that cannot be reached is named."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from polyg.config import Settings, load_settings
from polyg.core.app import Polyg, Services
from polyg.embed import create_embedder
from polyg.errors import StoreTimeout
from polyg.names import graph_key
from polyg.store.falkor import FalkorStore
from tests.falkor_cluster import FalkorCluster
from tests.falkor_server import free_port

# Project ids whose graph keys hash to each of the three shards of FalkorCluster's slot split
# (0-5460, 5461-10921, 10922-16383); checked by `test_projects_spread_over_the_shards`.
pytestmark = pytest.mark.anyio

ON_SHARD = ("p_a", "p_b", "p_c")


@pytest.fixture
def settings(tmp_path: Path, cluster: FalkorCluster) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        base: dict[str, Any] = {"data_dir": tmp_path / "data", "log_dir": tmp_path / "logs", "store": cluster.url}
        return load_settings(None, **{**base, **overrides})

    return make


@pytest.fixture
async def services(settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    core = Polyg(settings(), embedder=create_embedder("hashing"), sweep=False)
    try:
        yield await core.ready()
    finally:
        services = await core.ready()
        for project in await services.store.list_projects():
            await services.store.delete_project(project)
        await core.close()


def shard_of(cluster: FalkorCluster, project: str) -> int:
    return cluster.primaries.index(cluster.primary_for(graph_key(project)))


async def test_projects_spread_over_the_shards(cluster: FalkorCluster, services: Services) -> None:
    assert services.store.is_cluster
    for project in ON_SHARD:
        await services.entities.create(project, name=f"in {project}", type_="note")
    assert [shard_of(cluster, p) for p in ON_SHARD] == [0, 1, 2]
    # Each graph is on its own shard's primary only: the cluster never splits or copies one.
    for shard, project in enumerate(ON_SHARD):
        for i, primary in enumerate(cluster.primaries):
            keys = FalkorCluster._command(primary, "KEYS", "polyg:*")
            assert (graph_key(project) in keys) == (i == shard)
    assert await services.store.list_projects() == sorted(ON_SHARD)
    for project in ON_SHARD:
        assert [e.name for e in await services.entities.find(project)] == [f"in {project}"]
    await services.store.delete_project("p_c")
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
            await services.store.delete_project(project)
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
