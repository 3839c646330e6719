"""The benchmarks' floor KNN (bench/lib/inprocess.py) names its label only through the label
validator, as every Cypher of the package does."""

from __future__ import annotations

import pytest

from bench.lib import inprocess
from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.store.names import ENTITY

pytestmark = pytest.mark.anyio


async def test_knn_reads_the_nearest_nodes_of_a_label(services: Services) -> None:
    created = await services.entities.create(inprocess.DEFAULT_PROJECT, name="Kestrel", type_="project")
    assert await services.ctx.vectors.settle(inprocess.DEFAULT_PROJECT, 60)
    vector = (await services.ctx.embed(["Kestrel"]))[0]
    rows = await inprocess.knn(services, ENTITY, vector, k=1)
    assert [row[0] for row in rows] == [created.id]


@pytest.mark.parametrize(
    "label", ["Entity', 'embedding', 1, vecf32([0.0])) YIELD node DETACH DELETE node //", "Entity\n", "1Entity"]
)
async def test_knn_refuses_a_label_that_is_no_label(services: Services, label: str) -> None:
    with pytest.raises(InvalidParams):
        await inprocess.knn(services, label, [0.0] * services.ctx.embedder.dimension)
