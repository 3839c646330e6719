"""Batch node writes against real FalkorDB: one outcome per item, a failing item leaves nothing
behind and stops nothing, later items reach nodes earlier items created (by name)."""

from __future__ import annotations

from typing import Any

from polyg.core.graph.nodes import NodeChange, NodeDraft, NodeEdge

from ..conftest import Core, run


def read(core: Core, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Any]:
    return run(core, core.services.ctx.read(project, cypher, params or {}))


def count(core: Core, project: str, pattern: str = "(n)") -> int:
    return int(read(core, project, f"MATCH {pattern} RETURN count(*)")[0][0])


def make(core: Core, project: str, *drafts: NodeDraft) -> list[Any]:
    return run(core, core.nodes.create(project, list(drafts)))


def test_a_batch_answers_per_item_and_a_bad_item_leaves_nothing(core: Core, project: str) -> None:
    [parker] = make(core, project, NodeDraft("Charlie Parker", "person", "alto saxophonist"))
    outcomes = make(
        core,
        project,
        NodeDraft(
            "Miles Davis",
            "person",
            "trumpeter",
            properties={"born": 1926, "instruments": ["trumpet", "flugelhorn"]},
            observations=["recorded Kind of Blue"],
            edges=[NodeEdge(parker.id, "INFLUENCED_BY", properties={"start_date": "1944"})],
        ),
        NodeDraft("Bad", "person", properties={"address": {"city": "x"}}, edges=[NodeEdge(parker.id, "KNEW")]),
        NodeDraft("Ghost", "person", edges=[NodeEdge("nobody by that name", "KNEW")]),
        NodeDraft("Kind of Blue", "album", edges=[NodeEdge("Miles Davis", "RECORDED", outgoing=False)]),
    )
    assert [(o.index, o.status) for o in outcomes] == [(0, "created"), (1, "error"), (2, "error"), (3, "created")]
    assert outcomes[1].code == 4002 and "nested objects" in (outcomes[1].error or "")
    assert outcomes[2].code == 4004 and "nobody by that name" in (outcomes[2].error or "")
    assert count(core, project, "(n:Entity)") == 3  # Bad and Ghost left nothing
    assert count(core, project, "()-[r:KNEW]->()") == 0

    miles = outcomes[0].node
    assert miles is not None and set(miles.labels) == {"Entity", "Person"}
    assert miles.properties == {"born": 1926, "instruments": ["trumpet", "flugelhorn"]}
    assert len(outcomes[0].edge_ids) == 1
    rows = read(
        core,
        project,
        "MATCH (a)-[r:INFLUENCED_BY]->(b) RETURN a.name, b.name, r.id, r.start_date, b.updated_at > b.created_at",
    )
    assert rows == [["Miles Davis", "Charlie Parker", outcomes[0].edge_ids[0], "1944", True]]
    # Reverse: from the node named earlier in the batch to the new one.
    assert read(core, project, "MATCH (a)-[:RECORDED]->(b) RETURN a.id, b.name") == [[miles.id, "Kind of Blue"]]
    assert read(core, project, "MATCH (:Entity {name: 'Miles Davis'})-[:HAS_OBSERVATION]->(o) RETURN o.text") == [
        ["recorded Kind of Blue"]
    ]


def test_a_name_made_earlier_in_the_batch_wins_over_an_older_namesake(core: Core, project: str) -> None:
    [old] = make(core, project, NodeDraft("Bird", "person", "an older namesake"))
    new, album = make(
        core, project, NodeDraft("Bird", "person"), NodeDraft("Yardbird Suite", "song", edges=[NodeEdge("Bird", "BY")])
    )
    assert new.id != old.id
    assert read(core, project, "MATCH (:Entity {name: 'Yardbird Suite'})-[:BY]->(b) RETURN b.id") == [[new.id]]
    assert album.status == "created"


def test_parent_by_name_and_a_missing_parent(core: Core, project: str) -> None:
    [jazz] = make(core, project, NodeDraft("Jazz", "genre"))
    bebop, lost = make(
        core, project, NodeDraft("Bebop", "genre", parent="Jazz"), NodeDraft("Lost", "genre", parent="Nope")
    )
    assert bebop.node is not None and bebop.node.parent_id == jazz.id
    assert lost.status == "error" and lost.code == 4004
    assert count(core, project, "(n:Entity)") == 2


def test_reserved_and_invalid_names_are_per_item_errors(core: Core, project: str) -> None:
    [a] = make(core, project, NodeDraft("A", "thing"))
    outcomes = make(
        core,
        project,
        NodeDraft("B", "thing", edges=[NodeEdge(a.id, "HAS_OBSERVATION")]),
        NodeDraft("C", "thing", edges=[NodeEdge(a.id, "X`]->() DETACH DELETE n //")]),
        NodeDraft("D", "thing", properties={"id": "mine"}),
        NodeDraft("E\x00", "thing"),
        NodeDraft("F", "chunk"),  # a type whose label would be polyg's own: no second label
    )
    assert [o.code for o in outcomes[:4]] == [4002, 4002, 4002, 4002]
    assert outcomes[4].node is not None and outcomes[4].node.labels == ("Entity",)
    assert count(core, project, "(n:Entity)") == 2


def test_update_merges_properties_relabels_and_marks_text_changes(core: Core, project: str) -> None:
    [node] = make(
        core, project, NodeDraft("Blue Note", "label", "a record label", properties={"founded": 1939, "city": "NYC"})
    )
    assert node.id is not None
    run(core, core.services.ctx.vectors.settle(project, 10))
    [[rev, no_head]] = read(
        core, project, "MATCH (n:Entity {id: $id}) RETURN n.rev, n.head_embedding IS NULL", {"id": node.id}
    )
    assert rev and not no_head
    [done, missing] = run(
        core,
        core.nodes.update(
            project,
            [
                NodeChange(node.id, type="company", properties={"city": None, "owner": "Alfred Lion"}),
                NodeChange("no such node", summary="x"),
            ],
        ),
    )
    assert done.status == "updated" and done.node is not None
    assert set(done.node.labels) == {"Entity", "Company"}
    assert done.node.properties == {"founded": 1939, "owner": "Alfred Lion"}
    assert missing.status == "error" and missing.code == 4004
    [[changed, type_]] = read(core, project, "MATCH (n:Entity {id: $id}) RETURN n.rev, n.type", {"id": node.id})
    assert changed != rev and type_ == "company"
    # Properties only: the text is unchanged, the revision stays.
    run(core, core.nodes.update(project, [NodeChange("Blue Note", properties={"founded": 1940})]))
    assert read(core, project, "MATCH (n:Entity {id: $id}) RETURN n.rev, n.founded", {"id": node.id}) == [
        [changed, 1940]
    ]
    [bad] = run(core, core.nodes.update(project, [NodeChange(node.id, properties={"x": float("nan")})]))
    assert bad.code == 4002


def test_every_creation_and_text_change_gets_a_revision_no_node_had(core: Core, project: str) -> None:
    """A counter restarts at 1 for each node: a node deleted and made again under the same id
    (an import restores ids) would reuse a revision the vectorizer may hold a vector for."""
    made = make(core, project, *(NodeDraft(f"node {i}", "thing") for i in range(3)))
    ids = [o.id for o in made]
    revisions = [
        row[0] for row in read(core, project, "UNWIND $ids AS id MATCH (n:Entity {id: id}) RETURN n.rev", {"ids": ids})
    ]
    for summary in ("first text", "second text"):
        run(core, core.nodes.update(project, [NodeChange(ids[0], summary=summary)]))
        revisions += [row[0] for row in read(core, project, "MATCH (n:Entity {id: $id}) RETURN n.rev", {"id": ids[0]})]
    assert len(revisions) == 5 and len(set(revisions)) == 5
    assert all(isinstance(r, str) for r in revisions)


def test_delete_bumps_neighbours_and_frees_children(core: Core, project: str) -> None:
    parent, _ = make(core, project, NodeDraft("Parent", "thing"), NodeDraft("Other", "thing"))
    [child] = make(
        core,
        project,
        NodeDraft("Child", "thing", parent="Parent", observations=["o"], edges=[NodeEdge("Other", "NEAR")]),
    )
    assert child.node is not None and child.node.parent_id == parent.id
    run(core, core.nodes.delete(project, ["Parent"]))
    assert read(core, project, "MATCH (n:Entity {name: 'Child'}) RETURN n.parent_id") == [[None]]
    stamp = read(core, project, "MATCH (n:Entity {name: 'Other'}) RETURN n.updated_at")[0][0]
    gone, unknown = run(core, core.nodes.delete(project, [child.id or "", "nobody"]))
    assert (gone.status, gone.id, unknown.status, unknown.code) == ("deleted", child.id, "error", 4004)
    assert read(core, project, "MATCH (n:Entity {name: 'Other'}) RETURN n.updated_at > $t", {"t": stamp}) == [[True]]
    assert count(core, project, "(o:Observation)") == 0
    assert read(core, project, "MATCH (n:Entity) RETURN n.name") == [["Other"]]


def test_only_earlier_items_are_visible_by_name(core: Core, project: str) -> None:
    early, late, after = make(
        core,
        project,
        NodeDraft("Early", "thing", edges=[NodeEdge("Late", "BEFORE_IT")]),
        NodeDraft("Late", "thing"),
        NodeDraft("After", "thing", parent="Late", edges=[NodeEdge("Late", "AFTER_IT"), NodeEdge("Late", "NEAR")]),
    )
    assert (early.status, early.code, late.status, after.status) == ("error", 4004, "created", "created")
    assert after.node is not None and after.node.parent_id == late.id and len(after.edge_ids) == 2
    assert read(core, project, "MATCH (a)-[r]->(b) RETURN a.name, type(r), b.name ORDER BY type(r)") == [
        ["After", "AFTER_IT", "Late"],
        ["After", "NEAR", "Late"],
    ]
