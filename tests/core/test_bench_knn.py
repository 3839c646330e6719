"""The benchmarks' floor KNN (bench/common.py) names its label only through the label
validator, as every Cypher of the package does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.store.names import ENTITY

pytestmark = pytest.mark.anyio

COMMON = Path(__file__).resolve().parents[2] / "bench" / "common.py"


@pytest.fixture(scope="module")
def common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


async def test_knn_reads_the_nearest_nodes_of_a_label(common: ModuleType, services: Services) -> None:
    created = await services.entities.create(common.DEFAULT_PROJECT, name="Kestrel", type_="project")
    assert await services.ctx.vectors.settle(common.DEFAULT_PROJECT, 60)
    vector = (await services.ctx.embed(["Kestrel"]))[0]
    rows = await common.knn(services, ENTITY, vector, k=1)
    assert [row[0] for row in rows] == [created.id]


@pytest.mark.parametrize(
    "label", ["Entity', 'embedding', 1, vecf32([0.0])) YIELD node DETACH DELETE node //", "Entity\n", "1Entity"]
)
async def test_knn_refuses_a_label_that_is_no_label(common: ModuleType, services: Services, label: str) -> None:
    with pytest.raises(InvalidParams):
        await common.knn(services, label, [0.0] * services.ctx.embedder.dimension)
