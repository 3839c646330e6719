"""`read_from_replicas` on one FalkorDB server with a replica (README "Scaling out", step 3), not
a cluster: read-only queries go to the replica (the one the server reports, or the one given in
`store_replicas`), writes and the WAIT after them to the primary; a replica that is down sends
reads back to the primary until it is back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import polyg.store.replicas
from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.errors import ConfigError, ReplicasBehind
from polyg.runtime.app import Polyg
from tests.falkor_server import FalkorServer, free_port
from tests.mcp_helpers import kg_session
from tests.store.test_wait_replicas import wait_until_synced

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def primary() -> Iterator[FalkorServer]:
    # tests/falkor_server.py starts it with no replica sync delay: the first copy is sent at once.
    with FalkorServer() as server:
        yield server


@pytest.fixture
def replica(primary: FalkorServer) -> Iterator[FalkorServer]:
    """A replica of `primary`, synchronised; a new one per test (one test kills it)."""
    with FalkorServer(extra_args=["--replicaof", primary.host, str(primary.port)]) as server:
        wait_until_synced(server)
        yield server


def core(tmp_path: Path, primary: FalkorServer, **overrides: Any) -> Polyg:
    settings = load_settings(
        None,
        store=primary.url,
        data_dir=tmp_path / "data",
        log_dir=tmp_path / "logs",
        read_from_replicas=True,
        # Acknowledged once the replica holds it: a read from the replica then sees it.
        wait_replicas=1,
        wait_replicas_timeout_ms=300,
        **overrides,
    )
    return Polyg(settings, embedder=create_embedder("hashing"), sweep=False)


def calls(node: FalkorServer, command: str) -> int:
    client = node.client()
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    for key, value in stats.items():
        if key.lower() == f"cmdstat_{command}":
            return int(value["calls"])
    return 0


@pytest.mark.parametrize("configured", [False, True], ids=["reported", "configured"])
async def test_reads_go_to_the_replica_writes_to_the_primary(
    tmp_path: Path, primary: FalkorServer, replica: FalkorServer, configured: bool
) -> None:
    overrides = {"store_replicas": [f"{replica.host}:{replica.port}"]} if configured else {}
    polyg = core(tmp_path, primary, **overrides)
    try:
        s = await polyg.ready()
        assert not s.store.is_cluster
        project = f"replica_reads_{configured}"
        writes = calls(primary, "graph.query")
        made = await s.entities.create(project, name="replicated", type_="note")
        assert calls(primary, "graph.query") > writes  # the write went to the primary
        # The entity's vectors are stored in the background, reading its text from the primary:
        # done before the reads are counted.
        assert await s.ctx.vectors.settle(project, 60)
        before = (calls(primary, "graph.ro_query"), calls(replica, "graph.ro_query"))
        for _ in range(5):
            assert (await s.entities.get(project, made.id)).node.name == "replicated"
        after = (calls(primary, "graph.ro_query"), calls(replica, "graph.ro_query"))
        assert after[0] == before[0]  # the primary answered no read
        assert after[1] >= before[1] + 5
        await s.store.delete_project(project)
    finally:
        await polyg.close()


async def test_a_replica_down_sends_reads_to_the_primary(
    tmp_path: Path, primary: FalkorServer, replica: FalkorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A replica that failed is passed over for less time than the 5 s users get, so that the
    # test sees it used again soon after it is back.
    monkeypatch.setattr(polyg.store.replicas, "PASS_OVER_S", 0.5)
    polyg_core = core(tmp_path, primary)
    project = "replica_down"
    try:
        s = await polyg_core.ready()
        made = await s.entities.create(project, name="kept", type_="note")
        replica.kill()
        # Reads are answered (by the primary), every time, not only after the first failure.
        before = calls(primary, "graph.ro_query")
        for _ in range(3):
            assert (await s.entities.get(project, made.id)).node.name == "kept"
        assert calls(primary, "graph.ro_query") >= before + 3
        # A write is applied on the primary, but no replica confirms it: 2006, as in a cluster.
        with pytest.raises(ReplicasBehind) as behind:
            await s.entities.create(project, name="unconfirmed", type_="note")
        assert behind.value.code == 2006
        assert {e.name for e in await s.entities.find(project)} == {"kept", "unconfirmed"}

        replica.restart()  # the same port and --replicaof: it resynchronises
        wait_until_synced(replica)
        await s.entities.create(project, name="confirmed", type_="note")
        # Back in use once its pass-over has ended: poll, the moment depends on the clock.
        deadline = time.monotonic() + 60
        start = calls(replica, "graph.ro_query")
        while calls(replica, "graph.ro_query") == start:
            assert time.monotonic() < deadline, "reads never went back to the replica"
            assert (await s.entities.get(project, made.id)).node.name == "kept"
        await s.store.delete_project(project)
    finally:
        await polyg_core.close()


def test_a_replica_address_that_is_not_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="host:port"):
        load_settings(None, data_dir=tmp_path, store_replicas="127.0.0.1:notaport")


def detach(replica: FalkorServer) -> None:
    """Cut the replica off its primary for good (it follows a port nobody listens on): it stays
    a read-only replica serving its old copy, as one behind its primary by any lag would."""
    client = replica.client()
    try:
        client.execute_command("REPLICAOF", "127.0.0.1", free_port())  # type: ignore[no-untyped-call]
    finally:
        client.close()


async def test_a_write_reads_from_the_primary_what_it_decides_on(
    tmp_path: Path, primary: FalkorServer, replica: FalkorServer
) -> None:
    """A replica behind by everything written since polyg opened: read-only tools read from it
    (they miss the new entity), but a write tool's own reads go to the primary: the new
    project's schema, read back as it is made, and the entity `add_observations` looks up by
    name. Before, the first write to a project failed to create its indexes and
    add_observations said the entity did not exist."""
    args = ("--toolsets", "all", "--store", primary.url)
    env = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_READ_FROM_REPLICAS": "true"}
    async with kg_session("stdio", tmp_path, *args, **env) as mcp:
        await mcp.ok("read_graph", {"project_id": "behind"})  # polyg is open, the replica found
        detach(replica)
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
        await mcp.ok("create_entities", {"project_id": "behind", "entities": [entity]})
        observations = [{"entityName": "Ada", "contents": ["a poet"]}]
        added = await mcp.ok("add_observations", {"project_id": "behind", "observations": observations})
        assert added["results"][0]["addedObservations"] == ["a poet"]
        # A read-only tool is answered by the replica, which has none of it.
        assert (await mcp.ok("search_nodes", {"project_id": "behind", "query": "Ada"}))["entities"] == []
    # All of it is on the primary.
    client = primary.client()
    try:
        cypher = "MATCH (:Entity {name: 'Ada'})-[:HAS_OBSERVATION]->(o) RETURN o.text ORDER BY o.text"
        rows = client.execute_command("GRAPH.RO_QUERY", "polyg:behind", cypher)  # type: ignore[no-untyped-call]
    finally:
        client.close()
    assert [row[0] for row in rows[1]] == [b"a poet", b"wrote the first program"]
