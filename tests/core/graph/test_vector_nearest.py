"""The k nearest nodes stay k after their nodes are written again: FalkorDB 4.16 keeps a stale
vector-index entry for every write to a node that has a vector, and stale entries take places
among the k nearest (`polyg.store.queries.vectors.nearest` asks again for more)."""

from __future__ import annotations

import pytest

from polyg.runtime.app import Services
from polyg.store.falkor import VectorParam
from polyg.store.names import ENTITY
from polyg.store.queries import resolve as resolve_q
from polyg.store.queries import search as search_q

pytestmark = pytest.mark.anyio


async def test_knn_answers_k_nodes_after_every_node_was_written_again(services: Services, project: str) -> None:
    names = [f"Kestrel {i}" for i in range(12)]
    for name in names:
        await services.entities.create(project, name=name, type_="project")
    assert await services.ctx.vectors.settle(project, 60)
    # Two writes to every entity that leave its text (and so its vector) as it is.
    for marker in (1, 2):
        await services.ctx.write(project, f"MATCH (n:{ENTITY}) SET n.touched = $m", {"m": marker})
    vector = VectorParam((await services.ctx.embed(["Kestrel 3"]))[0])
    raw = await services.ctx.read(
        project,
        f"CALL db.idx.vector.queryNodes('{ENTITY}', 'embedding', 5, vecf32($v)) YIELD node RETURN node.id",
        {"v": vector},
    )
    assert len(raw) < 5, "the store no longer drops stale entries from k: this workaround can go"

    hits = await search_q.knn(services.ctx, project, search_q.Target(ENTITY), vector, 5)
    assert len(hits) == 5
    assert [hit[1] for hit in hits] == sorted((hit[1] for hit in hits), reverse=True)
    candidates = await resolve_q.vector_candidates(services.ctx, project, ENTITY, vector, 5)
    assert len(candidates) == 5
    assert candidates[0][1] == "Kestrel 3"


async def test_knn_of_a_label_with_fewer_nodes_than_k_answers_them_all(services: Services, project: str) -> None:
    for name in ("Osprey", "Merlin"):
        await services.entities.create(project, name=name, type_="project")
    assert await services.ctx.vectors.settle(project, 60)
    vector = VectorParam((await services.ctx.embed(["Osprey"]))[0])
    hits = await search_q.knn(services.ctx, project, search_q.Target(ENTITY), vector, 10)
    assert len(hits) == 2
