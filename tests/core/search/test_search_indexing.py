"""Search while FalkorDB builds a vector index: a clear 2003 error, then results once it is done.

After a restart FalkorDB rebuilds its indexes in the background; vector queries fail and
full-text queries find nothing meanwhile. Rebuilding an index over 10k vectors here gives a
window of seconds in which the same thing happens. Nothing can hold FalkorDB's build (it runs in
a thread of its own), so on a loaded machine it may still end within the second a search waits
for a build before refusing (`polyg.core.graph.indexes.WAIT_S`): such an attempt is told apart
by the index being operational after the search, and made again.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from polyg.config import load_settings
from polyg.core.graph.indexes import builds
from polyg.errors import IndexNotFound
from polyg.runtime.app import Polyg, Services
from polyg.store.queries.indexes import index_states
from tests.mcp_helpers import reap_embedded

pytestmark = pytest.mark.anyio
PROJECT = "indexing"
ATTEMPTS = 3


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("POLYG_", "FALKORDB_")):
                mp.delenv(name)
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        settings = load_settings(
            None, data_dir=tmp_path / "data", log_dir=tmp_path / "logs", embedding_provider="hashing"
        )
    core = Polyg(settings)
    try:
        yield await core.ready()
    finally:
        await core.close()
        reap_embedded(tmp_path / "data")


async def search_during_a_rebuild(s: Services) -> IndexNotFound:
    """Rebuild the observations' vector index and search at once: the refusal. A search that
    answers is a failure if the index is still being built after it, and an attempt to make
    again if the build had already ended."""
    for _ in range(ATTEMPTS):
        s.ctx.indexes.forget_all()  # as in a new process after a restart
        await s.store.query(PROJECT, "DROP VECTOR INDEX FOR (n:Observation) ON (n.embedding)")
        await s.store.query(
            PROJECT,
            "CREATE VECTOR INDEX FOR (n:Observation) ON (n.embedding) "
            "OPTIONS {dimension: 384, similarityFunction: 'cosine', efRuntime: 100}",
        )
        try:
            await s.search.entities(PROJECT, "Miles Davis")
        except IndexNotFound as refused:
            return refused
        building = builds(await index_states(s.ctx, PROJECT))
        assert not building, f"a search during an index build answered instead of refusing: {building}"
    pytest.fail(f"the index build ended before the search in each of {ATTEMPTS} attempts: nothing was tested")


async def test_search_during_index_build_is_a_clear_error_then_works(services: Services) -> None:
    s = services
    await s.named.create_entities(
        PROJECT, [{"name": "Miles Davis", "entityType": "person", "observations": ["trumpet"]}]
    )
    rng = random.Random(7)
    vectors = [[rng.uniform(-1, 1) for _ in range(384)] for _ in range(2000)]
    for _ in range(5):
        await s.store.query(
            PROJECT, "UNWIND $vs AS v CREATE (:Observation {text: 'noise', embedding: vecf32(v)})", {"vs": vectors}
        )
    assert await s.search.entities(PROJECT, "Miles Davis")  # indexes operational: seen and remembered

    refused = await search_during_a_rebuild(s)
    assert refused.code == 2003
    assert "being rebuilt" in refused.message

    with anyio.fail_after(120):
        while True:
            try:
                hits = await s.search.entities(PROJECT, "Miles Davis")
                break
            except IndexNotFound:
                await anyio.sleep(0.2)
    [(entity_id, _), *_] = hits
    assert (await s.named.entities(PROJECT, [entity_id]))[0].name == "Miles Davis"
