"""A call that finds every pooled connection in use says the store is busy, not unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyg.errors import StoreTimeout
from polyg.store.embedded import EmbeddedFalkor
from polyg.store.falkor import FalkorStore

pytestmark = pytest.mark.anyio


async def test_a_call_that_waits_out_a_busy_pool_is_told_the_store_is_busy(tmp_path: Path) -> None:
    # At 1M entities under 10 calls/s, calls queued behind 637 ms searches held all 16 connections
    # for the pool's whole wait, and 8 calls were told "Cannot reach FalkorDB" of a database that
    # was answering the others.
    with EmbeddedFalkor(tmp_path / "db") as ef:
        ef.wait_until_loaded(30)
        store = FalkorStore(unix_socket=ef.socket_path, pool_size=1)
        # Only the wait for a free connection is short: the queries that do get one keep the
        # default socket timeout (half a second for their answers could fail them on a loaded machine).
        store._conn._pool.timeout = 0.5  # type: ignore[union-attr]
        unreachable: list[bool] = []

        async def on_unreachable() -> None:
            unreachable.append(True)

        store.on_unreachable = on_unreachable
        try:
            await store.query("p", "CREATE (:N {id: 1})")
            pool = store._conn._pool  # type: ignore[union-attr]
            held = await pool.get_connection()  # the pool's only connection, in use elsewhere
            try:
                with pytest.raises(StoreTimeout) as caught:
                    await store.ro_query("p", "MATCH (n:N) RETURN count(n)")
            finally:
                await pool.release(held)
            assert "busy" in caught.value.message, caught.value.message
            assert "Cannot reach" not in caught.value.message
            assert caught.value.details == {"retryable": True, "pool_size": 1}
            assert unreachable == []  # not taken for a database that died or restarted
            assert await store.ro_query("p", "MATCH (n:N) RETURN count(n)") == [[1]]
        finally:
            await store.close()
