"""The entity-scale bulk loader (`bench.lib.bulk_load`) leaves the store polyg writes: 300
synthetic entities and their 600 relationships are written once through polyg's core (the
preload's `write_entities` and the vectorizer, then the core's `write_relations`: the path the
benchmark took so far) and once by the bulk loader (rows with their vectors in one statement,
the full-text and vector indexes created after the rows); each store, restarted, holds the same
nodes, properties, vectors, relationships and indexes, and a kg server over stdio gives the same
answers on both (search, get_entity, neighbours at depth 3)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench.latency.entity_scale import _preload_relations
from bench.lib.bulk_load import bulk_load
from bench.lib.preload import preload
from bench.lib.synthetic import entity_id
from polyg.config import load_settings
from polyg.runtime.app import Polyg
from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio

N = 300
# Times of writing, and the random revision tokens (checked to match their vectors', then dropped).
VARYING = {"created_at", "updated_at", "rev", "vec_rev", "server_ms", "took_ms"}
VECTORS = {"embedding", "head_embedding"}


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-7) for x, y in zip(a, b, strict=True))


async def _dump(data_dir: Path) -> dict[str, Any]:
    """Every node, relationship and index of the default project, times left out."""
    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider="hashing"), sweep=False)
    try:
        services = await core.ready()
        project, store = services.project(None), services.store
        nodes: dict[tuple[Any, ...], dict[str, Any]] = {}
        for labels, props in await store.ro_query(project, "MATCH (n) RETURN labels(n), properties(n)"):
            props = dict(props)
            if "rev" in props:  # every vector is the one computed from the node's current text
                assert props.get("vec_rev") == props["rev"], props.get("id")
            key = (tuple(sorted(labels)), props.get("id") or props.get("key") or props.get("name"))
            assert key not in nodes, key
            nodes[key] = {k: v for k, v in props.items() if k not in VARYING}
        rels = sorted(
            (a, t, b, sorted((k, v) for k, v in dict(p).items() if k not in VARYING))
            for a, t, b, p in await store.ro_query(
                project,
                "MATCH (a)-[r]->(b) RETURN coalesce(a.id, a.name), type(r), coalesce(b.id, b.name), properties(r)",
            )
        )
        indexes = sorted(
            repr(row)
            for row in await store.ro_query(
                project,
                "CALL db.indexes() YIELD label, properties, types, options, language, stopwords, entitytype, status "
                "RETURN label, properties, types, options, language, stopwords, entitytype, status",
            )
        )
        return {"nodes": nodes, "rels": rels, "indexes": indexes}
    finally:
        await core.close()


@pytest.fixture(scope="module")
async def stores(servers_root: Path) -> dict[str, Path]:
    polyg_root, bulk_root = servers_root / "through-polyg", servers_root / "bulk"
    await preload(polyg_root / "data", N, "hashing", 600.0, 64)
    await _preload_relations(polyg_root / "data", N, "hashing")
    # Small batches: rows of both relationship types and several entity batches.
    info = await bulk_load(bulk_root / "data", N, batch=64, rel_batch=100)
    assert (info["entities"], info["observations"], info["relations"]) == (N, N // 10, 2 * N)
    return {"polyg": polyg_root, "bulk": bulk_root}


async def test_the_bulk_store_holds_what_polyg_writes(stores: dict[str, Path]) -> None:
    polyg, bulk = await _dump(stores["polyg"] / "data"), await _dump(stores["bulk"] / "data")
    assert bulk["indexes"] == polyg["indexes"]
    assert bulk["rels"] == polyg["rels"]
    assert len(polyg["rels"]) >= 2 * N  # the entities' links and their observations
    assert bulk["nodes"].keys() == polyg["nodes"].keys()
    vectors = 0
    for key, expected in polyg["nodes"].items():
        got = bulk["nodes"][key]
        assert {k: v for k, v in got.items() if k not in VECTORS} == {
            k: v for k, v in expected.items() if k not in VECTORS
        }, key
        assert got.keys() & VECTORS == expected.keys() & VECTORS, key
        for name in got.keys() & VECTORS:
            assert _close(got[name], expected[name]), (key, name)
            vectors += 1
    assert vectors == 2 * N + N // 10  # entity and head vectors, observation vectors


def _same_form(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _same_form(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_same_form(v) for v in value]
    if isinstance(value, float):
        return round(value, 5)
    return value


async def _answers(root: Path) -> dict[str, Any]:
    toolsets = "kg,memory-compat,graphrag"  # the entity-scale benchmark's
    async with kg_session("stdio", root, "--toolsets", toolsets, POLYG_EMBEDDING_PROVIDER="hashing") as server:
        out: dict[str, Any] = {}
        for query in ("parser auth", "billing invoice service", "Uses redis"):
            out[f"search {query}"] = await server.ok("search_nodes", {"query": query, "limit": 10})
        for i in (0, 7, 150):
            out[f"get {i}"] = await server.ok("get_entity", {"entity_id": entity_id(i)})
            neighbours = await server.ok("get_entity_neighbors", {"entity_id": entity_id(i), "depth": 3})
            out[f"neighbours {i}"] = neighbours
        return _same_form(out)


async def test_a_server_answers_the_same_on_both(stores: dict[str, Path]) -> None:
    polyg, bulk = await _answers(stores["polyg"]), await _answers(stores["bulk"])
    assert polyg["search parser auth"]["entities"], polyg["search parser auth"]
    for question, expected in polyg.items():
        assert bulk[question] == expected, question
