"""Batch edge writes against real FalkorDB: any node kinds an edge may join, ids that carry their
type (found through the type's index), endpoints' `updated_at` bumped by every edge write."""

from __future__ import annotations

from typing import Any

from polyg.core.graph.edges import EdgeChange, EdgeDraft, EdgeService, type_of
from polyg.core.graph.embeddable import ENTITY, EVENT, OBSERVATION, EmbeddableRegistry
from polyg.core.graph.nodes import NodeDraft
from polyg.errors import NotFound

from ..conftest import Core, run


def read(core: Core, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Any]:
    return run(core, core.services.ctx.read(project, cypher, params or {}))


def stamps(core: Core, project: str) -> dict[str, str]:
    return dict(read(core, project, "MATCH (n) WHERE n.updated_at IS NOT NULL RETURN n.name, n.updated_at"))


def two(core: Core, project: str) -> tuple[str, str]:
    a, b = run(
        core, core.nodes.create(project, [NodeDraft("Miles Davis", "person"), NodeDraft("John Coltrane", "person")])
    )
    assert a.id and b.id
    return a.id, b.id


def test_create_per_item_with_names_and_ids(core: Core, project: str) -> None:
    miles, _ = two(core, project)
    before = stamps(core, project)
    outcomes = run(
        core,
        core.edges.create(
            project,
            [
                EdgeDraft(
                    miles, "John Coltrane", "PLAYED_WITH", "quintet", {"since": 1955, "albums": ["Round Midnight"]}
                ),
                EdgeDraft(miles, "Nobody", "PLAYED_WITH"),
                EdgeDraft(miles, "John Coltrane", "HAS_OBSERVATION"),
                EdgeDraft(miles, "John Coltrane", "PLAYED_WITH", properties={"bad": {"nested": 1}}),
                EdgeDraft(miles, ["not", "a", "name"], "PLAYED_WITH"),  # type: ignore[arg-type]
            ],
        ),
    )
    assert [o.status for o in outcomes] == ["created", "error", "error", "error", "error"]
    assert [o.code for o in outcomes[1:]] == [4004, 4002, 4002, 4002]
    edge = outcomes[0].edge
    assert edge is not None and edge.id == outcomes[0].id and type_of(edge.id) == "PLAYED_WITH"
    assert (edge.source_id, edge.type, edge.description) == (miles, "PLAYED_WITH", "quintet")
    assert edge.properties == {"since": 1955, "albums": ["Round Midnight"]}
    after = stamps(core, project)
    assert all(after[name] > before[name] for name in ("Miles Davis", "John Coltrane"))
    assert read(core, project, "MATCH ()-[r]->() RETURN count(r)") == [[1]]
    # The type's id index was made on first use, and lookups by id use it.
    indexes = read(core, project, "CALL db.indexes() YIELD label, entitytype RETURN label, entitytype")
    assert ["PLAYED_WITH", "RELATIONSHIP"] in indexes
    plan = run(
        core, core.services.store.explain(project, "MATCH ()-[r:PLAYED_WITH {id: $id}]->() RETURN r", {"id": edge.id})
    )
    assert "Edge By Index Scan" in str(plan)


def test_update_get_and_delete_by_id(core: Core, project: str) -> None:
    miles, trane = two(core, project)
    [made] = run(
        core, core.edges.create(project, [EdgeDraft(miles, trane, "PLAYED_WITH", properties={"a": 1, "b": 2})])
    )
    assert made.id
    before = stamps(core, project)
    [changed, unknown] = run(
        core,
        core.edges.update(
            project,
            [EdgeChange(made.id, "band mates", {"a": None, "c": "x"}), EdgeChange("rel_0123456789abcdef_PLAYED_WITH")],
        ),
    )
    assert changed.status == "updated" and changed.edge is not None
    assert (changed.edge.description, changed.edge.properties) == ("band mates", {"b": 2, "c": "x"})
    assert unknown.status == "error" and unknown.code == 4004
    assert all(v > before[k] for k, v in stamps(core, project).items())
    got = run(core, core.edges.get(project, made.id))
    assert got.properties == {"b": 2, "c": "x"} and got.target_id == trane
    before = stamps(core, project)
    [gone, again] = run(core, core.edges.delete(project, [made.id, made.id]))
    assert (gone.status, again.status, again.code) == ("deleted", "error", 4004)
    assert all(v > before[k] for k, v in stamps(core, project).items())
    assert read(core, project, "MATCH ()-[r]->() RETURN count(r)") == [[0]]


def test_ids_without_a_type_are_found_through_every_types_index(core: Core, project: str) -> None:
    miles, trane = two(core, project)
    run(core, core.edges.create(project, [EdgeDraft(miles, trane, "OTHER")]))
    run(
        core,
        core.services.ctx.write(
            project,
            "MATCH (a:Entity {id: $a}), (b:Entity {id: $b}) "
            "CREATE (a)-[:PLAYED_WITH {id: 'rel_legacy1', description: ''}]->(b)",
            {"a": miles, "b": trane},
        ),
    )
    assert run(core, core.edges.get(project, "rel_legacy1")).type == "PLAYED_WITH"
    [gone] = run(core, core.edges.delete(project, ["rel_legacy1"]))
    assert gone.status == "deleted"
    try:
        run(core, core.edges.get(project, "rel_legacy1"))
    except NotFound:
        pass
    else:
        raise AssertionError("a deleted edge was found")


def test_edges_join_other_node_kinds_but_not_observations(core: Core, project: str) -> None:
    registry = EmbeddableRegistry([ENTITY, OBSERVATION, EVENT])
    edges = EdgeService(core.services.ctx, registry=registry)
    [miles] = run(core, core.nodes.create(project, [NodeDraft("Miles Davis", "person", observations=["trumpet"])]))
    run(core, core.services.ctx.write(project, "CREATE (:Event {id: 'evt_1', description: 'Kind of Blue session'})"))
    [[obs_id]] = read(core, project, "MATCH (o:Observation) RETURN o.id")
    [to_event, to_observation] = run(
        core,
        edges.create(
            project, [EdgeDraft("evt_1", "Miles Davis", "INVOLVES_PLAYER"), EdgeDraft(miles.id or "", obs_id, "ABOUT")]
        ),
    )
    assert to_event.status == "created" and to_event.edge is not None
    assert (to_event.edge.source_id, to_event.edge.target_id) == ("evt_1", miles.id)
    assert read(core, project, "MATCH (e:Event) RETURN e.updated_at IS NOT NULL") == [[True]]
    assert to_observation.status == "error" and to_observation.code == 4004
