"""Data paths at the core, against every store mode: exact name lookups over FalkorDB's loose
name index, query plans that use the indexes, and duplicates guarded in the database (two
processes are two `GraphContext`s on one store: nothing they share but the database)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from polyg.core.graph.context import GraphContext
from polyg.core.graph.entities import DELETE_ENTITY_TAIL
from polyg.core.graph.relationships import RelationshipService, delete_by_id
from polyg.core.memory.named import NamedGraph
from polyg.errors import NotFound
from polyg.runtime.app import Services
from polyg.store.names import RelType
from polyg.store.schema import SchemaGuard
from tests.store.test_projects import indexes_operational

pytestmark = pytest.mark.anyio

P = "integrity"


def _index_only(plan: list[str], step: str) -> bool:
    """The plan has `step` and scans no label or graph: an index step fed by a scan of every
    entity (an index probe per entity) would pass a test that looked for the index alone."""
    text = "\n".join(plan)
    return step in text and "Label Scan" not in text and "All Node Scan" not in text


async def test_name_lookups_are_exact_where_the_index_is_not(services: Services) -> None:
    s = services
    # Names stored before they were normalised: FalkorDB's index finds both for "beta".
    await s.named.create_entities(P, [{"name": "alpha", "entityType": "t"}])
    await s.store.query(P, "CREATE (:Entity {id: 'legacy1', name: 'beta\n', type: 't', created_at: '1'})")
    await s.store.query(P, "CREATE (:Entity {id: 'legacy2', name: ' beta', type: 't', created_at: '2'})")
    loose = await s.store.ro_query(P, "MATCH (e:Entity {name: 'beta'}) RETURN e.id ORDER BY e.id")
    assert loose == [["legacy1"], ["legacy2"]]  # what the index does; the core must not

    assert await s.named.ids_by_name(P, ["beta"]) == {}
    with pytest.raises(NotFound):  # was a KeyError (4000) when the index answered for "beta"
        await s.named.add_observations(P, [{"entityName": "beta", "contents": ["x"]}])
    made = await s.named.create_entities(P, [{"name": "beta", "entityType": "t"}])
    assert [e.name for e in made] == ["beta"]
    beta = (await s.named.ids_by_name(P, ["beta"]))["beta"]
    assert beta not in ("legacy1", "legacy2")
    await s.named.add_observations(P, [{"entityName": "beta", "contents": ["x"]}])
    await s.named.delete_entities(P, ["beta"])
    left = await s.store.ro_query(P, "MATCH (e:Entity) RETURN e.id ORDER BY e.id")
    assert [row[0] for row in left if row[0].startswith("legacy")] == ["legacy1", "legacy2"]


async def test_deleting_an_entity_finds_its_children_through_an_index(services: Services) -> None:
    s = services
    parent = await s.entities.create(P, name="parent", type_="t")
    child = await s.entities.create(P, name="child", type_="t", parent_id=parent.id)
    await indexes_operational(s, P)
    # The query memory-compat's delete_entities runs (kg's delete_entity runs it for one id).
    plan = await s.store.explain(
        P, "UNWIND $ids AS id MATCH (e:Entity {id: id}) " + DELETE_ENTITY_TAIL, {"ids": [parent.id]}
    )
    assert _index_only(plan, "Node By Index Scan | (c:Entity)"), plan
    await s.entities.delete(P, parent.id)
    assert (await s.entities.get(P, child.id)).node.parent_id is None


async def test_relationships_are_found_by_id_through_an_index(services: Services) -> None:
    s = services
    a = await s.entities.create(P, name="a", type_="t")
    b = await s.entities.create(P, name="b", type_="t")
    rel = await s.relationships.create(P, source_id=a.id, target_id=b.id, type_="uses")
    await s.named.create_relations(P, [{"from": "a", "to": "b", "relationType": "works at"}])
    await indexes_operational(s, P)
    for rel_type in ("uses", "works_at"):  # a kg type, and memory-compat's stored "works at"
        plan = await s.store.explain(P, delete_by_id(RelType(rel_type)), {"id": rel.id})
        assert _index_only(plan, "Edge By Index Scan"), plan
    assert await s.relationships.type_of(P, rel.id) == "uses"
    await s.relationships.delete(P, rel.id)
    with pytest.raises(NotFound):
        await s.relationships.delete(P, rel.id)


async def test_existing_projects_get_the_new_indexes(services: Services) -> None:
    s = services
    # A project written before: a relationship type without its index, no index on parent_id.
    await s.store.query("old", "CREATE (:Entity {id: 'e1', name: 'a'})-[:knows {id: 'r1'}]->(:Entity {id: 'e2'})")
    guard = SchemaGuard(s.store, s.ctx.embedder.model_id, s.ctx.embedder.dimension)
    await guard.ensure("old")
    await indexes_operational(s, "old")
    plan = await s.store.explain("old", delete_by_id(RelType("knows")), {"id": "r1"})
    assert _index_only(plan, "Edge By Index Scan"), plan
    plan = await s.store.explain("old", "MATCH (c:Entity {parent_id: $id}) RETURN c", {"id": "e1"})
    assert _index_only(plan, "Node By Index Scan"), plan


@contextlib.asynccontextmanager
async def second_process(s: Services) -> AsyncIterator[NamedGraph]:
    """The core of another process on the same database: its own locks, caches and guard. Closed
    as a process would be (its vectors stored, its worker stopped): left running, the worker
    wrote them after the test, into the next one on the session's shared server."""
    schema = SchemaGuard(s.store, s.ctx.embedder.model_id, s.ctx.embedder.dimension)
    ctx = GraphContext(s.store, s.ctx.embedder, schema)
    try:
        yield NamedGraph(ctx)
    finally:
        await ctx.vectors.close()


async def test_two_processes_add_one_observation_once(services: Services) -> None:
    s = services
    async with second_process(s) as other:
        await s.named.create_entities(P, [{"name": "shared", "entityType": "t"}])
        for round_ in range(5):
            text = f"fact {round_}"
            results = await asyncio.gather(
                s.named.add_observations(P, [{"entityName": "shared", "contents": [text]}]),
                other.add_observations(P, [{"entityName": "shared", "contents": [text]}]),
            )
            added = [r[0].added for r in results]
            assert sorted(added) == [(), (text,)]  # one of them added it, and says so; the other did not
    (entity,) = await s.named.entities(P, list((await s.named.ids_by_name(P, ["shared"])).values()))
    assert entity.observations == tuple(f"fact {i}" for i in range(5))


async def test_two_processes_create_one_relationship_once(services: Services) -> None:
    s = services
    async with second_process(s) as second:
        other = RelationshipService(second.ctx)
        a = await s.entities.create(P, name="a", type_="t")
        b = await s.entities.create(P, name="b", type_="t")
        made = await asyncio.gather(
            *(
                service.create(P, source_id=a.id, target_id=b.id, type_="uses")
                for service in (s.relationships, other) * 3
            )
        )
    assert len({m.id for m in made}) == 1
    assert len(await s.relationships.list_for(P, a.id, type_=None, direction="both", limit=10)) == 1


async def test_search_ranks_first_the_entity_named_exactly_as_the_query_is_read(services: Services) -> None:
    """The query is read as a name is (stripped, NFC), and the name index's loose match (names
    differing in surrounding whitespace, stored before names were normalised) is not exact."""
    s = services
    await s.named.create_entities(P, [{"name": "Zoë", "entityType": "t"}, {"name": "Zoe", "entityType": "t"}])
    await s.store.query(P, "CREATE (:Entity {id: 'legacy', name: 'Zoe\n', type: 't', created_at: '1'})")
    await indexes_operational(s, P)
    ids = await s.named.ids_by_name(P, ["Zoë", "Zoe"])
    zoe_nfc, zoe = ids["Zoë"], ids["Zoe"]
    for query in (" Zoe\u0308 ", "Zoë"):
        ranked = [entity_id for entity_id, _ in await s.search.entities(P, query)]
        assert ranked[0] == zoe_nfc, (query, ranked)
    ranked = [entity_id for entity_id, _ in await s.search.entities(P, "Zoe")]
    assert ranked[0] == zoe, ranked
