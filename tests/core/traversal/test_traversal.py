"""Traversal against embedded FalkorDB: neighbourhoods, k best paths, subgraphs, centrality."""

from __future__ import annotations

import random

import pytest

from polyg.core.graph.reltypes import RelTypeService
from polyg.core.search.centrality import CentralityService
from polyg.core.traversal.service import TraversalService, WeightScorer
from polyg.errors import InvalidParams, NotFound
from polyg.runtime.app import Services
from polyg.store.names import ENTITY
from polyg.store.queries import traversal as q

pytestmark = pytest.mark.anyio

# A -CHILD_OF(strong)-> B -CHILD_OF(strong)-> D; A -COLLABORATED_WITH(weak)-> D;
# C -INFLUENCED_BY(strong)-> A; C -INFLUENCED_BY(medium)-> D; B -COLLABORATED_WITH(medium)-> C;
# D -LOCATED_IN(strong)-> E (a type nobody described); B -COLLABORATED_WITH-> B (a loop).
GRAPH = """
CREATE (a:Entity {id: 'A', name: 'A', type: 'person'}), (b:Entity {id: 'B', name: 'B', type: 'person'}),
       (c:Entity {id: 'C', name: 'C', type: 'person'}), (d:Entity {id: 'D', name: 'D', type: 'person'}),
       (e:Entity {id: 'E', name: 'E', type: 'city'}),
       (a)-[:CHILD_OF {id: 'ab', relevance_strength: 'strong', weight: 0.9}]->(b),
       (b)-[:CHILD_OF {id: 'bd', relevance_strength: 'strong', weight: 0.8}]->(d),
       (a)-[:COLLABORATED_WITH {id: 'ad', relevance_strength: 'weak', weight: 0.3}]->(d),
       (c)-[:INFLUENCED_BY {id: 'ca', relevance_strength: 'strong', weight: 0.5}]->(a),
       (c)-[:INFLUENCED_BY {id: 'cd', relevance_strength: 'medium'}]->(d),
       (b)-[:COLLABORATED_WITH {id: 'bc', relevance_strength: 'medium'}]->(c),
       (d)-[:LOCATED_IN {id: 'de', relevance_strength: 'strong'}]->(e),
       (b)-[:COLLABORATED_WITH {id: 'bb'}]->(b),
       (a)-[:HAS_OBSERVATION]->(:Observation {id: 'obs', text: 'structure, not knowledge'})
"""


async def build(s: Services, project: str) -> TraversalService:
    await s.ctx.write(project, GRAPH)
    types = RelTypeService(s.ctx)
    await types.create(project, "CHILD_OF", directionality="strong")
    await types.create(project, "INFLUENCED_BY", directionality="weak")
    await types.create(project, "COLLABORATED_WITH", directionality="balanced")
    return TraversalService(s.ctx, types)


def ids(path: object) -> list[str]:
    return [n.id for n in path.nodes]  # type: ignore[attr-defined]


async def test_paths_scored_by_spec_000_strength(services: Services, project: str) -> None:
    t = await build(services, project)
    found = await t.paths(project, "A", "D", max_len=4, k=10)
    # By hand: per hop relevance (weak 0.2, medium 0.6, strong 1.0) x directional weight for
    # the direction travelled, the product times 1 / length.
    expected = [
        (["A", "B", "D"], 1.0 * 1.0 * 1.0 * 1.0 / 2),  # longer, strong: beats the direct weak link
        (["A", "C", "D"], (1.0 * 0.6) * (0.6 * 0.8) / 2),  # A<-C travelled backward (weak: 0.6)
        (["A", "D"], 0.2 * 0.7),
        (["A", "C", "B", "D"], (1.0 * 0.6) * (0.6 * 0.7) * (1.0 * 1.0) / 3),
        (["A", "B", "C", "D"], (1.0 * 1.0) * (0.6 * 0.7) * (0.6 * 0.8) / 3),
    ]
    assert [ids(p) for p in found.paths] == [path for path, _ in expected]
    for path, (_, strength) in zip(found.paths, expected, strict=True):
        assert path.score.final == pytest.approx(strength)
        assert len(set(ids(path))) == len(path.nodes)  # no node twice (B has a loop; A-B-C-A is a cycle)
    assert found.total_found == 5 and not found.truncated
    best = found.paths[0]
    assert [(e.id, e.type, e.forward) for e in best.edges] == [("ab", "CHILD_OF", True), ("bd", "CHILD_OF", True)]
    assert (best.score.raw, best.score.length_penalty) == (1.0, 0.5)
    backward = found.paths[1].edges[0]
    assert (backward.id, backward.source.id, backward.target.id, backward.forward) == ("ca", "C", "A", False)


async def test_paths_k_min_score_and_length(services: Services, project: str) -> None:
    t = await build(services, project)
    top = await t.paths(project, "A", "D", k=2, min_score=0.1)
    assert [ids(p) for p in top.paths] == [["A", "B", "D"], ["A", "C", "D"]]
    assert top.total_found == 3
    short = await t.paths(project, "A", "D", max_len=1)
    assert [ids(p) for p in short.paths] == [["A", "D"]]
    # Through an undescribed type (0.5 both ways): A-B-D-E.
    far = await t.paths(project, "A", "E", max_len=3, k=1)
    assert ids(far.paths[0]) == ["A", "B", "D", "E"]
    assert far.paths[0].score.final == pytest.approx(1.0 * 1.0 * 0.5 / 3)
    weighted = await t.paths(project, "A", "D", k=1, scorer=WeightScorer())
    # Spec 004's weights: ab 0.9 x bc 1.0 (no weight) x cd 1.0 beats ab 0.9 x bd 0.8.
    assert ids(weighted.paths[0]) == ["A", "B", "C", "D"] and weighted.paths[0].score.final == pytest.approx(0.9)
    with pytest.raises(InvalidParams):
        await t.paths(project, "A", "D", max_len=7)
    with pytest.raises(NotFound):
        await t.paths(project, "A", "nope")


async def test_neighbours_distance_path_direction_and_caps(services: Services, project: str) -> None:
    t = await build(services, project)
    one = await t.neighbours(project, "A")
    assert [(n.node.id, n.distance) for n in one.neighbours] == [("B", 1), ("C", 1), ("D", 1)]
    via = {n.node.id: (n.via.type, n.via.forward) for n in one.neighbours}
    assert via == {"B": ("CHILD_OF", True), "C": ("INFLUENCED_BY", False), "D": ("COLLABORATED_WITH", True)}

    two = await t.neighbours(project, "A", depth=2)
    e = next(n for n in two.neighbours if n.node.id == "E")
    assert e.distance == 2 and [n.id for n in e.path] == ["A", "D", "E"] and [x.id for x in e.edges] == ["ad", "de"]
    assert "obs" not in {n.node.id for n in two.neighbours}  # HAS_OBSERVATION is not traversed

    out = await t.neighbours(project, "A", direction="outbound", depth=3)
    assert {n.node.id: n.distance for n in out.neighbours} == {"B": 1, "D": 1, "C": 2, "E": 2}
    inbound = await t.neighbours(project, "D", direction="inbound")
    assert {n.node.id for n in inbound.neighbours} == {"A", "B", "C"}
    typed = await t.neighbours(project, "A", types=["CHILD_OF"], depth=3)
    assert [(n.node.id, n.distance) for n in typed.neighbours] == [("B", 1), ("D", 2)]
    heavy = await t.neighbours(project, "A", min_weight=0.5, depth=3)
    # ad (0.3) is too light, so D is two hops away; cd has no weight (1.0) and outweighs bd (0.8).
    assert {n.node.id: [x.id for x in n.edges] for n in heavy.neighbours}["D"] == ["ca", "cd"]
    capped = await t.neighbours(project, "A", depth=3, limit=2)
    assert [n.node.id for n in capped.neighbours] == ["B", "C"]
    for bad in ({"depth": 4}, {"depth": 0}, {"limit": 0}, {"direction": "up"}, {"min_weight": 2.0}):
        with pytest.raises(InvalidParams):
            await t.neighbours(project, "A", **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParams):
        await t.neighbours(project, "A", types=["HAS_OBSERVATION"])


async def test_a_limited_neighbourhood_is_the_start_of_the_whole_one(services: Services, project: str) -> None:
    """A small limit reads only the heaviest rows of a layer (and more when rows lead back to
    nodes already reached): what it returns must be the first nodes of the unlimited answer,
    hubs, ties of weight and relationships back to reached nodes included."""
    rng = random.Random(11)
    edges = []
    for k in range(240):
        a = rng.randrange(40)
        b = rng.choice([0, 1, 2, rng.randrange(40)])  # three hubs
        weight = rng.choice([0.2, 0.5, 0.5, 1.0, None])
        edges.append({"a": f"n{a}", "b": f"n{b}", "id": f"e{k:03d}", "w": weight, "t": rng.choice(["USES", "PART_OF"])})
    await services.ctx.write(
        project, "UNWIND range(0, 39) AS i CREATE (:Entity {id: 'n' + toString(i), name: 'n' + toString(i)})"
    )
    for type_ in ("USES", "PART_OF"):
        await services.ctx.write(
            project,
            "UNWIND $rows AS row MATCH (a:Entity {id: row.a}), (b:Entity {id: row.b}) "
            f"CREATE (a)-[r:{type_} {{id: row.id}}]->(b) SET r.weight = row.w",
            {"rows": [e for e in edges if e["t"] == type_]},
        )
    t = TraversalService(services.ctx)
    for start in ("n0", "n5", "n17", "n33"):
        for direction in ("both", "outbound", "inbound"):
            whole = await t.neighbours(project, start, direction=direction, depth=3, limit=1000)
            expected = [(n.node.id, n.distance, n.via.id) for n in whole.neighbours]
            for limit in (1, 3, 7, 12, 25):
                part = await t.neighbours(project, start, direction=direction, depth=3, limit=limit)
                assert [(n.node.id, n.distance, n.via.id) for n in part.neighbours] == expected[:limit]


async def test_a_depth_one_neighbourhood_is_read_in_one_round_trip(services: Services, project: str) -> None:
    """At depth 1 the first layer is the last: its rows come whole, beside the start node's
    read, and no second read fetches the hops shown."""
    t = await build(services, project)
    reads = 0
    read = services.ctx.read

    async def counted(*args: object, **kwargs: object) -> object:
        nonlocal reads
        reads += 1
        return await read(*args, **kwargs)  # type: ignore[arg-type]

    services.ctx.read = counted  # type: ignore[method-assign]
    try:
        one = await t.neighbours(project, "A")
    finally:
        services.ctx.read = read  # type: ignore[method-assign]
    assert reads == 2  # the start node and its layer, side by side
    assert [(n.node.id, n.via.id, n.via.weight) for n in one.neighbours] == [
        ("B", "ab", 0.9),
        ("C", "ca", 0.5),
        ("D", "ad", 0.3),
    ]


async def test_a_depth_one_neighbourhood_is_the_first_layer_of_a_deeper_one(services: Services, project: str) -> None:
    """The whole rows of a depth-1 layer give the answer the deeper walk (which reads the hops
    shown again) gives for its first layer: the same nodes, relationships with their
    properties, and paths; loops, parallel relationships and ties of weight included."""
    rng = random.Random(5)
    await services.ctx.write(
        project, "UNWIND range(0, 19) AS i CREATE (:Entity {id: 'n' + toString(i), name: 'n' + toString(i), type: 't'})"
    )
    edges = [
        {"a": f"n{rng.randrange(20)}", "b": f"n{rng.choice([0, 1, rng.randrange(20)])}", "id": f"e{k:03d}"}
        | {"w": rng.choice([0.2, 0.5, 1.0, None]), "note": rng.choice(["x", "y"])}
        for k in range(90)
    ]
    await services.ctx.write(
        project,
        "UNWIND $rows AS row MATCH (a:Entity {id: row.a}), (b:Entity {id: row.b}) "
        "CREATE (a)-[r:USES {id: row.id, note: row.note}]->(b) SET r.weight = row.w",
        {"rows": edges},
    )
    t = TraversalService(services.ctx)
    for start in ("n0", "n1", "n7"):
        for direction in ("both", "outbound", "inbound"):
            for limit in (1, 4, 50):
                deeper = await t.neighbours(project, start, direction=direction, depth=2, limit=limit)
                one = await t.neighbours(project, start, direction=direction, limit=limit)
                assert one.start == deeper.start
                assert list(one.neighbours) == [n for n in deeper.neighbours if n.distance == 1]
                assert all(n.edges[0].properties["note"] for n in one.neighbours)


async def test_subgraph_among_given_nodes(services: Services, project: str) -> None:
    t = await build(services, project)
    sub = await t.subgraph(project, ["A", "B", "D", "missing"])
    assert [n.id for n in sub.nodes] == ["A", "B", "D"]
    assert sorted(e.id for e in sub.edges) == ["ab", "ad", "bb", "bd"]  # B's loop joins B to B
    assert sub.missing == ("missing",) and not sub.truncated
    capped = await t.subgraph(project, ["A", "B", "D"], max_edges=1)
    assert len(capped.edges) == 1 and capped.truncated
    with pytest.raises(InvalidParams):
        await t.subgraph(project, [str(i) for i in range(1001)])


async def test_pagerank_on_a_star_and_cache_refresh(services: Services, project: str) -> None:
    s = services
    await s.ctx.write(
        project,
        "CREATE (hub:Entity {id: 'hub'}) WITH hub UNWIND range(1, 5) AS i "
        "CREATE (:Entity {id: 'leaf' + toString(i)})-[:LINKS_TO]->(hub)",
    )
    centrality = CentralityService(s.ctx)
    first = await centrality.get(project)
    ranked = sorted(first.pagerank, key=lambda k: -first.pagerank[k])
    assert ranked[0] == "hub"
    assert all(first.rank("hub") > first.rank(f"leaf{i}") for i in range(1, 6))
    assert len({round(first.rank(f"leaf{i}"), 9) for i in range(1, 6)}) == 1  # the leaves alike
    assert first.degree["hub"] == 5 and first.degree["leaf1"] == 1
    assert first.normalised_rank("hub") == 1.0
    assert await centrality.get(project) is first  # cached
    await s.ctx.write(project, "MATCH (hub:Entity {id: 'hub'}) CREATE (hub)-[:LINKS_TO]->(:Entity {id: 'new'})")
    second = await centrality.get(project)
    assert second is not first and second.degree["hub"] == 6 and "new" in second.pagerank


async def test_paths_at_a_hub_follow_its_strongest_relationships(services: Services, project: str) -> None:
    from polyg.core.traversal.service import FANOUT

    # S -> H (the hub); H has FANOUT + 8 weak relationships to leaves that lead on to T, and one
    # strong one to M, which leads to T: only the hub's best are read, and the best path is there.
    await services.ctx.write(
        project,
        "CREATE (s:Entity {id: 'S', name: 'S'}), (h:Entity {id: 'H', name: 'H'}), (m:Entity {id: 'M', name: 'M'}), "
        "(t:Entity {id: 'T', name: 'T'}), (s)-[:CHILD_OF {relevance_strength: 'strong'}]->(h), "
        "(h)-[:CHILD_OF {relevance_strength: 'strong'}]->(m), (m)-[:CHILD_OF {relevance_strength: 'strong'}]->(t) "
        "WITH h, t UNWIND range(1, $leaves) AS i "
        "CREATE (h)-[:CHILD_OF {relevance_strength: 'weak'}]->(l:Entity {id: 'L' + toString(i)}), "
        "(l)-[:CHILD_OF {relevance_strength: 'weak'}]->(t)",
        {"leaves": FANOUT + 8},
    )
    types = RelTypeService(services.ctx)
    await types.create(project, "CHILD_OF", directionality="strong")
    found = await TraversalService(services.ctx, types).paths(project, "S", "T", max_len=4, k=3)
    assert ids(found.paths[0]) == ["S", "H", "M", "T"]
    assert found.paths[0].score.final == pytest.approx(1.0 / 3)
    assert found.truncated  # the hub had more relationships than were read


async def test_a_first_layer_led_by_loops_still_reaches_its_limit(services: Services, project: str) -> None:
    """The first layer is read heaviest first and cut in the database: relationships from the
    start to itself, heavier than the rest, reach no new node and must not use up the read."""
    await services.ctx.write(
        project,
        "CREATE (s:Entity {id: 'S', name: 'S'}) "
        "FOREACH (i IN range(1, 9) | CREATE (s)-[:LOOPS {id: 'l' + toString(i), weight: 1.0}]->(s)) "
        "FOREACH (i IN range(1, 6) | CREATE (s)-[:USES {id: 'u' + toString(i), weight: 0.1 * i}]->"
        "(:Entity {id: 'm' + toString(i), name: 'm' + toString(i)}))",
    )
    found = await TraversalService(services.ctx).neighbours(project, "S", limit=2)
    assert [n.node.id for n in found.neighbours] == ["m6", "m5"]


async def test_first_layer_is_read_heaviest_first(services: Services, project: str) -> None:
    """The start's own relationships come from the database heaviest first, so a limit smaller
    than a hub's degree reads only that many of them (each way)."""
    await services.ctx.write(
        project,
        "CREATE (h:Entity {id: 'hub', name: 'hub'}) WITH h UNWIND range(0, 29) AS i "
        "CREATE (h)-[:USES {id: 'u' + toString(i), weight: toFloat(i % 10) / 10}]->(:Entity {id: 'x' + toString(i)})",
    )
    rows = await q.expand_from(
        services.ctx, project, ENTITY, "hub", direction="outbound", types=None, min_weight=0.0, cap=3
    )
    assert sorted(row[6]["weight"] for row in rows) == [0.9, 0.9, 0.9]
    found = await TraversalService(services.ctx).neighbours(project, "hub", direction="outbound", limit=4)
    assert [n.via.weight for n in found.neighbours] == [0.9, 0.9, 0.9, 0.8]


async def test_a_capped_context_keeps_what_lies_nearest_the_first_start(services: Services, project: str) -> None:
    """Start nodes are expanded in the order given: when the row cap cuts a layer, it cuts the
    relationships of the later ones (here a hub made first, so the database meets it first)."""
    await services.ctx.write(
        project,
        "CREATE (h:Entity {id: 'hub'}), (a:Entity {id: 'a'}) WITH h, a UNWIND range(0, 39) AS i "
        "CREATE (h)-[:USES {id: 'h' + toString(i)}]->(:Entity {id: 'hx' + toString(i)})",
    )
    await services.ctx.write(
        project,
        "MATCH (a:Entity {id: 'a'}) UNWIND range(0, 2) AS i "
        "CREATE (a)-[:USES {id: 'a' + toString(i)}]->(:Entity {id: 'ax' + toString(i)})",
    )
    context = await TraversalService(services.ctx).surroundings(project, ["a", "hub"], 1, layer_cap=10)
    rows = await q.nodes_by_internal_id(services.ctx, project, list(context.nodes))
    assert {"a", "hub", "ax0", "ax1", "ax2"} <= {row[1] for row in rows}
    assert context.truncated
    # The hub first: the cap cuts its relationships, and still every start node is in the context.
    context = await TraversalService(services.ctx).surroundings(project, ["hub", "a"], 1, layer_cap=10)
    rows = await q.nodes_by_internal_id(services.ctx, project, list(context.nodes))
    assert {"a", "hub"} <= {row[1] for row in rows}
    assert len(context.nodes) == 12


async def test_traversal_reads_never_scan_the_graph(services: Services, project: str) -> None:
    """Every read a neighbourhood (each direction, depth 3), a path search or a context makes
    finds its nodes by id or index, never by scanning every node: `id(x) = h[0]` (a list
    element) and `MATCH (x) WHERE id(x) = fid MATCH (x)<-[r]-(o)` (planned from o) scanned the
    graph once per row, so a depth-3 neighbourhood took 1.7 s at 10k entities and grew with the
    store (bench/entity_scale.py)."""
    t = await build(services, project)
    seen: list[tuple[str, dict[str, object]]] = []
    read = services.ctx.read

    async def recorded(project_id: str, cypher: str, params: dict[str, object] | None = None) -> object:
        seen.append((cypher, params or {}))
        return await read(project_id, cypher, params)

    services.ctx.read = recorded  # type: ignore[method-assign,assignment]
    try:
        for direction in ("both", "inbound", "outbound"):
            await t.neighbours(project, "A", direction=direction, depth=3)
        await t.paths(project, "A", "D", max_len=4, k=3)
        await t.surroundings(project, ["A"], 2)
        await t.subgraph(project, ["A", "B", "D"])
        # what graph-enhanced search reads of the relationships it shows
        (ends,) = await read(project, "MATCH (a {id: 'A'})-[r {id: 'ab'}]->(b) RETURN id(a), id(b), id(r)")
        await q.links_by_internal_id(services.ctx, project, [tuple(ends)])  # type: ignore[arg-type]
    finally:
        services.ctx.read = read  # type: ignore[method-assign]
    assert len(seen) >= 8
    assert any("$links" in cypher for cypher, _ in seen) and any("$hops" in cypher for cypher, _ in seen)
    for cypher, params in seen:
        plan = await services.store.explain(project, cypher, params)
        assert not any("All Node Scan" in line for line in plan), (cypher, plan)
