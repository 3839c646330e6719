"""Relationship types as data (spec 000), against embedded FalkorDB."""

from __future__ import annotations

import pytest

from polyg.core.graph.relationships import RelationshipService
from polyg.core.graph.reltypes import RelationshipType, RelTypeService, canonical
from polyg.errors import InvalidParams, NotFound
from polyg.runtime.app import Services

pytestmark = pytest.mark.anyio


async def edge_id_indexes(s: Services, project: str) -> set[str]:
    rows = await s.store.ro_query(
        project,
        "CALL db.indexes() YIELD label, types, entitytype WHERE entitytype = 'RELATIONSHIP' RETURN label, types",
    )
    return {label for label, types in rows if "RANGE" in dict(types).get("id", [])}


async def type_nodes(s: Services, project: str) -> list[str]:
    rows = await s.store.ro_query(project, "MATCH (t:RelationshipType) RETURN t.name ORDER BY t.name")
    return [r[0] for r in rows]


async def test_create_get_update_delete_list(services: Services, project: str) -> None:
    types = RelTypeService(services.ctx)
    made = await types.create(
        project,
        "CHILD_OF",
        description="being someone's child",
        directionality="strong",
        source_types=["Person"],
        target_types=["Person"],
    )
    assert made == RelationshipType("CHILD_OF", "being someone's child", "strong", ("Person",), ("Person",))
    assert (made.forward_weight, made.backward_weight) == (1.0, 0.2)
    assert await types.get(project, "CHILD_OF") == made

    await types.create(project, "INFLUENCED_BY", directionality="weak")
    await types.create(project, "COLLABORATED_WITH", directionality="balanced")
    assert await types.weights(project) == {
        "CHILD_OF": (1.0, 0.2),
        "COLLABORATED_WITH": (0.7, 0.7),
        "INFLUENCED_BY": (0.8, 0.6),
    }
    updated = await types.update(project, "CHILD_OF", directionality="weak")
    assert updated == RelationshipType("CHILD_OF", "being someone's child", "weak", ("Person",), ("Person",))
    await types.delete(project, "CHILD_OF")
    assert await types.get(project, "CHILD_OF") is None
    assert [t.name for t in await types.all(project)] == ["COLLABORATED_WITH", "INFLUENCED_BY"]
    with pytest.raises(NotFound):
        await types.delete(project, "CHILD_OF")
    with pytest.raises(NotFound):
        await types.update(project, "NOPE", description="x")


async def test_bad_definitions_are_refused(services: Services, project: str) -> None:
    types = RelTypeService(services.ctx)
    with pytest.raises(InvalidParams, match="directionality"):
        await types.create(project, "KNOWS", directionality="sideways")
    with pytest.raises(InvalidParams, match="reserved"):
        await types.create(project, "HAS_OBSERVATION")
    with pytest.raises(InvalidParams):
        await types.create(project, "KNOWS]->(x) DELETE x //")
    with pytest.raises(InvalidParams):
        await types.create(project, "KNOWS", source_types=["Person`) DETACH DELETE (x"])
    assert await type_nodes(services, project) == []


async def test_ensure_registers_once_and_indexes_edges(services: Services, project: str) -> None:
    types = RelTypeService(services.ctx)
    await types.create(project, "INFLUENCED_BY", description="kept", directionality="weak")
    await types.ensure(project, ["INFLUENCED_BY", "USES", "USES"])
    # Another process (a new service) registering the same names adds nothing.
    await RelTypeService(services.ctx).ensure(project, ["USES", "INFLUENCED_BY"])
    assert await type_nodes(services, project) == ["INFLUENCED_BY", "USES"]
    registered = await types.get(project, "USES")
    assert registered == RelationshipType("USES")
    assert (registered.forward_weight, registered.backward_weight) == (0.5, 0.5)  # spec 000's unknown type
    # First use must not undo a user's definition.
    assert await types.get(project, "INFLUENCED_BY") == RelationshipType("INFLUENCED_BY", "kept", "weak")
    assert {"INFLUENCED_BY", "USES"} <= await edge_id_indexes(services, project)
    rows = await services.store.ro_query(
        project, "CALL db.indexes() YIELD label, types, entitytype WHERE label = 'RelationshipType' RETURN types"
    )
    assert "RANGE" in dict(rows[0][0])["name"]


async def test_relationship_lookup_by_id_uses_the_index(services: Services, project: str) -> None:
    """The kg create path registers the type on first use; lookups by id then use an index seek."""
    s = services
    a = await s.entities.create(project, name="a", type_="file")
    b = await s.entities.create(project, name="b", type_="file")
    rels = RelationshipService(s.ctx)
    made = await rels.create(project, source_id=a.id, target_id=b.id, type_="imports")
    assert await type_nodes(s, project) == ["imports"]
    assert "imports" in await edge_id_indexes(s, project)
    plan = await s.store.explain(project, "MATCH ()-[r:imports {id: $id}]->() RETURN r", {"id": made.id})
    assert any("Edge By Index Scan" in line for line in plan)


def test_migration_names() -> None:
    assert canonical("PARENT_OF") == ("CHILD_OF", True)
    assert canonical("EMPLOYER_OF") == ("EMPLOYED_BY", True)
    assert canonical("CONTAINS") == ("LOCATED_IN", True)
    assert canonical("INFLUENCED_BY") == ("INFLUENCED_BY", False)
    with pytest.raises(InvalidParams):
        canonical("HAS_OBSERVATION")


async def test_one_registry_serves_every_writer_and_forgets_a_replaced_database(
    services: Services, project: str
) -> None:
    """kg, memory-compat and the edge service share one registry: a type registered by one is
    known to the others. A database replaced by an empty one has no types: after
    `forget_database_state` the next write registers and indexes its type again."""
    s = services
    assert s.relationships.reltypes is s.named.reltypes is s.edges.reltypes is s.nodes.edges.reltypes
    a = await s.entities.create(project, name="a", type_="file")
    b = await s.entities.create(project, name="b", type_="file")
    await s.relationships.create(project, source_id=a.id, target_id=b.id, type_="imports")
    assert await type_nodes(s, project) == ["imports"]
    await s.store.delete_project(project)  # as a database replaced under the running process
    s.forget_database_state()
    await s.named.create_entities(project, [{"name": "a", "entityType": "file"}, {"name": "b", "entityType": "file"}])
    await s.named.create_relations(project, [{"from": "a", "to": "b", "relationType": "imports"}])
    assert await type_nodes(s, project) == ["imports"]
    assert "imports" in await edge_id_indexes(s, project)


async def test_graphrag_registers_types_again_after_the_database_is_replaced(services: Services, project: str) -> None:
    """graphrag writes through the process's one registry: after a store restart (which
    forgets what the registry learnt) a type it registered before is registered again."""
    a = await services.entities.create(project, name="a", type_="t")
    b = await services.entities.create(project, name="b", type_="t")
    links = services.graphrag.links
    await links.add(project, a.id, b.id, "feeds_into")
    assert "feeds_into" in await type_nodes(services, project)
    # The database replaced by an empty one: what a restart on a lost data directory looks like.
    await services.store.delete_project(project)
    services.forget_database_state()
    a = await services.entities.create(project, name="a", type_="t")
    b = await services.entities.create(project, name="b", type_="t")
    await links.add(project, a.id, b.id, "feeds_into")
    assert "feeds_into" in await type_nodes(services, project)
    assert "feeds_into" in await edge_id_indexes(services, project)
