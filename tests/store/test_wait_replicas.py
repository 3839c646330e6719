"""`wait_replicas` on one FalkorDB server (README "Scaling out", step 3): each write is followed
by WAIT on its connection; with no replica to confirm it the call says so (2006), the write
being applied on the server all the same; with a replica, writes are acknowledged as usual."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.errors import ReplicasBehind
from polyg.runtime.app import Polyg
from tests.falkor_server import FalkorServer

pytestmark = pytest.mark.anyio


def core(tmp_path: Path, url: str) -> Polyg:
    settings = load_settings(
        None,
        store=url,
        data_dir=tmp_path / "data",
        log_dir=tmp_path / "logs",
        wait_replicas=1,
        wait_replicas_timeout_ms=200,
    )
    return Polyg(settings, embedder=create_embedder("hashing"), sweep=False)


def wait_until_synced(replica: FalkorServer) -> None:
    client = replica.client()
    try:
        deadline = time.monotonic() + 30
        while client.execute_command("ROLE")[3] != b"connected":  # type: ignore[no-untyped-call]
            assert time.monotonic() < deadline, "the replica did not synchronise"
            time.sleep(0.05)
    finally:
        client.close()


async def test_a_write_no_replica_confirms_is_reported_and_applied(tmp_path: Path) -> None:
    with FalkorServer() as server:
        polyg = core(tmp_path, server.url)
        try:
            s = await polyg.ready()
            with pytest.raises(ReplicasBehind) as behind:
                await s.store.query("p", "CREATE (:Note {name: 'alone'})")
            assert behind.value.code == 2006
            assert "only 0 of 1 replicas" in behind.value.message
            assert await s.store.ro_query("p", "MATCH (n:Note) RETURN n.name") == [["alone"]]
        finally:
            await polyg.close()


async def test_writes_wait_for_a_replica_that_holds_them(tmp_path: Path) -> None:
    with FalkorServer() as primary:
        with FalkorServer(extra_args=["--replicaof", primary.host, str(primary.port)]) as replica:
            wait_until_synced(replica)
            polyg = core(tmp_path, primary.url)
            try:
                s = await polyg.ready()
                made = await s.entities.create("p", name="copied", type_="note")
                # Acknowledged after WAIT: the replica holds it now, without waiting more.
                client = replica.client()
                try:
                    rows = client.execute_command("GRAPH.RO_QUERY", "polyg:p", "MATCH (e:Entity) RETURN e.id")  # type: ignore[no-untyped-call]
                finally:
                    client.close()
                assert [made.id.encode()] in rows[1]
            finally:
                await polyg.close()
