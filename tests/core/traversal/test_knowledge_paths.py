"""The best-first path search finds the same best paths as scoring every enumerated path, on
random graphs with hubs, cycles, parallel edges and every directionality."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.core.traversal.service import TraversalService, WeightScorer
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg, Services

pytestmark = pytest.mark.anyio

TYPES = ("INFLUENCED_BY", "COLLABORATED_WITH", "CHILD_OF", "KNOWS")
DIRECTIONALITY = {"INFLUENCED_BY": "weak", "COLLABORATED_WITH": "balanced", "CHILD_OF": "strong"}


@pytest.fixture(scope="module")
async def services(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    root: Path = tmp_path_factory.mktemp("paths")
    core = Polyg(
        load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None),
        embedder=create_embedder("hashing"),
    )
    try:
        yield await core.ready()
    finally:
        await core.close()


async def random_graph(s: Services, project: str, seed: int, nodes: int = 40) -> None:
    rng = random.Random(seed)
    for name, directionality in DIRECTIONALITY.items():
        await s.reltypes.create(project, name, directionality=directionality)
    await s.ctx.write(
        project,
        "UNWIND range(0, $n - 1) AS i CREATE (:Entity {id: 'n' + toString(i), name: 'N' + toString(i)})",
        {"n": nodes},
    )
    edges = []
    for i in range(1, nodes):
        # Preferential attachment makes hubs; a few extra edges make cycles and parallel edges.
        for _ in range(rng.choice((1, 2, 3))):
            j = rng.randrange(0, i) if rng.random() < 0.5 else rng.randrange(0, max(1, i // 4))
            a, b = (i, j) if rng.random() < 0.5 else (j, i)
            strength = rng.choice(("weak", "medium", "strong", None))
            edges.append({"a": f"n{a}", "b": f"n{b}", "s": strength, "w": rng.random(), "t": rng.choice(TYPES)})
    # Every third edge again as KNOWS: parallel edges between the same nodes.
    edges += [{**e, "t": "KNOWS"} for e in edges[::3]]
    for rel in TYPES:
        await s.ctx.write(
            project,
            f"UNWIND $edges AS e MATCH (a:Entity {{id: e.a}}), (b:Entity {{id: e.b}}) "
            f"CREATE (a)-[:{rel} {{relevance_strength: e.s, weight: e.w}}]->(b)",
            {"edges": [e for e in edges if e["t"] == rel]},
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_best_first_finds_the_enumerated_best(services: Services, seed: int) -> None:
    project = f"p{uuid.uuid4().hex[:10]}"
    await random_graph(services, project, seed)
    fast = TraversalService(services.ctx, services.reltypes)
    full = TraversalService(services.ctx, services.reltypes, best_first=False)
    rng = random.Random(seed)
    for _ in range(8):
        a, b = (f"n{rng.randrange(40)}" for _ in range(2))
        for k, max_len, min_score, scorer in ((3, 4, 0.0, None), (5, 3, 0.05, None), (2, 4, 0.0, WeightScorer())):
            got = await fast.paths(project, a, b, k=k, max_len=max_len, min_score=min_score, scorer=scorer)
            want = await full.paths(project, a, b, k=k, max_len=max_len, min_score=min_score, scorer=scorer)
            assert [round(p.score.final, 9) for p in got.paths] == [round(p.score.final, 9) for p in want.paths], (
                a,
                b,
                k,
            )
            assert not got.truncated
