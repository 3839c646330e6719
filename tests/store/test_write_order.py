"""Concurrent writes to one graph, replayed from the embedded store's log after a restart, come
back as written (FalkorDB numbers property names at planning and logs writes at commit; see
polyg/store/falkor.py's docstring)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from polyg.store.embedded import EmbeddedFalkor
from polyg.store.falkor import FalkorStore

pytestmark = pytest.mark.anyio


async def _properties(data_dir: Path, write: Any = None) -> list[Any]:
    with EmbeddedFalkor(data_dir) as ef:
        ef.wait_until_loaded(30)
        store = FalkorStore(unix_socket=ef.socket_path)
        try:
            if write is not None:
                await write(store)
            return await store.ro_query("p", "MATCH (n:N) RETURN n.id, properties(n) ORDER BY n.id")
        finally:
            await store.close()


async def test_concurrent_writes_bringing_new_property_names_survive_a_restart(tmp_path: Path) -> None:
    async def write(store: FalkorStore) -> None:
        # Every write logged as effects (property numbers), as a slow write is on a loaded machine.
        await store.graph_config("SET", "EFFECTS_THRESHOLD", "0")
        await store.query("p", "CREATE (:Seed)")
        # Each write names properties of its own, one inline and one set after a match.
        await asyncio.gather(
            *(
                store.query("p", f"MATCH (:Seed) CREATE (n:N {{id: $i, k{i}: $i}}) SET n.late{i} = $i", {"i": i})
                for i in range(30)
            )
        )

    written = await _properties(tmp_path / "db", write)
    assert written == [[i, {"id": i, f"k{i}": i, f"late{i}": i}] for i in range(30)]
    # Before writes to a graph were sent one at a time, 5 of 5 runs read some back under
    # another write's names (k14 for late7).
    assert await _properties(tmp_path / "db") == written
