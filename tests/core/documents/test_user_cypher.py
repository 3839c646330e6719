"""The template-variable runner: read-only user Cypher bound to a node, against embedded FalkorDB."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from polyg.core.documents.user_cypher import UserCypher
from polyg.errors import InvalidParams, NotFound, QueryTooCostly, StoreTimeout
from polyg.runtime.app import Services
from polyg.store.falkor import QUERY_MEM_CAPACITY
from polyg.store.names import Label

pytestmark = pytest.mark.anyio
ENTITY = Label("Entity")

GRAPH = """
CREATE (cp:Entity:Person {id: 'cp', name: 'Charlie Parker', summary: 'Jazz saxophonist'}),
       (ly:Entity:Person {id: 'ly', name: 'Lester Young', summary: 'Jazz saxophonist'}),
       (dg:Entity:Person {id: 'dg', name: 'Dizzy Gillespie', summary: 'Jazz trumpeter'}),
       (cp)-[:INFLUENCED_BY {id: 'i1', relevance_strength: 'strong'}]->(ly),
       (cp)-[:COLLABORATED_WITH {id: 'c1', relevance_strength: 'strong', projects: ['Bebop'], when: '1945'}]->(dg)
"""
INFLUENCES = (
    "MATCH (n)-[r:INFLUENCED_BY]->(p:Person) RETURN p.name as name, "
    "CASE WHEN r.relevance_strength = 'strong' THEN true ELSE false END as strength, p.summary as work_type"
)


async def runner(s: Services, project: str) -> UserCypher:
    await s.ctx.write(project, GRAPH)
    return UserCypher(s.ctx)


async def test_runs_bound_to_the_node(services: Services, project: str) -> None:
    u = await runner(services, project)
    await u.check(project, INFLUENCES)
    result = await u.run_for(project, INFLUENCES, ENTITY, "cp")
    assert result.columns == ("name", "strength", "work_type")
    assert result.rows == (("Lester Young", True, "Jazz saxophonist"),)
    assert not result.truncated
    # Lester Young has no influences: bound to him, the same query finds none.
    assert (await u.run_for(project, INFLUENCES, ENTITY, "ly")).rows == ()
    with pytest.raises(NotFound):
        await u.run_for(project, INFLUENCES, ENTITY, "nobody")


async def test_dependencies_are_the_nodes_and_edges_read(services: Services, project: str) -> None:
    u = await runner(services, project)
    ids = dict(await services.store.ro_query(project, "MATCH (x:Entity) RETURN x.id, id(x)"))
    edges = dict(await services.store.ro_query(project, "MATCH ()-[r]->() RETURN r.id, id(r)"))
    result = await u.run_for(project, "MATCH (n)-[r]->(p) RETURN p.name AS name, [p, {via: r}] AS seen", ENTITY, "cp")
    assert result.node_ids == {ids["cp"], ids["ly"], ids["dg"]}
    assert result.edge_ids == {edges["i1"], edges["c1"]}
    assert sorted(row[0] for row in result.rows) == ["Dizzy Gillespie", "Lester Young"]
    assert {row[1][0]["properties"]["id"] for row in result.rows} == {"ly", "dg"}  # nodes come back as maps
    only_names = await u.run_for(project, "MATCH (n)-[r]->(p) RETURN p.name", ENTITY, "cp")
    assert only_names.node_ids == {ids["cp"]} and only_names.edge_ids == frozenset()


async def test_writes_are_refused(services: Services, project: str) -> None:
    u = await runner(services, project)
    for query in (
        "SET n.name = 'x' RETURN n",
        "MATCH (n)-[r]->(p) DELETE r",
        "CREATE (x:Person {name: 'x'}) RETURN x",
        "MERGE (x:Person {name: 'x'}) RETURN x",
    ):
        with pytest.raises(InvalidParams, match="writes"):
            await u.check(project, query)
        with pytest.raises(InvalidParams, match="read-only"):
            await u.run_for(project, query, ENTITY, "cp")
    with pytest.raises(InvalidParams, match="read-only"):
        await u.run_for(project, "CALL db.idx.fulltext.createNodeIndex('Person', 'name')", ENTITY, "cp")
    with pytest.raises(InvalidParams, match="beyond its node"):
        await u.check(project, "CALL db.idx.fulltext.createNodeIndex('Person', 'name')")
    rows = await services.store.ro_query(
        project, "MATCH (x) WHERE x.name = 'x' OR x:Person RETURN x.name ORDER BY x.name"
    )
    assert rows == [["Charlie Parker"], ["Dizzy Gillespie"], ["Lester Young"]]
    assert (
        await services.store.ro_query(project, "CALL db.indexes() YIELD label WHERE label = 'Person' RETURN label")
        == []
    )


async def test_queries_that_leave_their_node_are_refused(services: Services, project: str) -> None:
    u = await runner(services, project)
    for query in (
        "MATCH (m) RETURN m.name",
        "MATCH (m:Person) RETURN m.name",
        "MATCH (n)-[r]->(p) RETURN p.name AS name UNION MATCH (m) RETURN m.name AS name",
        "MATCH (n)-[r]->(p) WITH p MATCH (q) WHERE id(q) = id(p) + 1 RETURN q.name",
        "MATCH (a), (b) RETURN a.name",
        "CALL db.idx.fulltext.queryNodes('Entity', 'jazz') YIELD node RETURN node.name",
    ):
        with pytest.raises(InvalidParams, match="beyond its node"):
            await u.check(project, query)
    await u.check(project, "MATCH (n)-[:COLLABORATED_WITH]->(p)-[*1..2]-(q) RETURN DISTINCT q.name ORDER BY q.name")


async def test_errors_carry_the_database_reason(services: Services, project: str) -> None:
    u = await runner(services, project)
    with pytest.raises(InvalidParams, match="does not compile: Invalid input") as info:
        await u.check(project, "MATCH (n)-[r:INFLUENCED_BY->(p) RETURN p")
    assert info.value.code == 4002
    with pytest.raises(InvalidParams, match="query failed"):
        await u.run_for(project, "RETURN n.name, 1 / 0", ENTITY, "cp")
    with pytest.raises(InvalidParams):
        await u.check(project, "")


async def test_row_cap_and_time_limit(services: Services, project: str) -> None:
    s = services
    u = await runner(s, project)
    await s.ctx.write(
        project,
        "MATCH (cp:Entity {id: 'cp'}) UNWIND range(1, 40) AS i "
        "CREATE (cp)-[:KNOWS]->(:Entity {id: 'k' + toString(i), name: 'k' + toString(i)})",
    )
    capped = await u.run_for(project, "MATCH (n)-[:KNOWS]->(p) RETURN p.name", ENTITY, "cp", max_rows=10)
    assert len(capped.rows) == 10 and capped.truncated
    # Every friend knows every other: 6-hop paths number about 39^5; a limit of 50 ms stops them.
    await s.ctx.write(
        project,
        "MATCH (a:Entity), (b:Entity) WHERE a.id STARTS WITH 'k' AND b.id STARTS WITH 'k' AND a <> b "
        "CREATE (a)-[:KNOWS]->(b)",
    )
    # Every row names its nodes, so no build of FalkorDB can count endpoints instead of paths.
    slow = (
        "MATCH (n)-[:KNOWS]->(a)-[:KNOWS]->(b)-[:KNOWS]->(c)-[:KNOWS]->(d)-[:KNOWS]->(e)-[:KNOWS]->(f) "
        "RETURN count([a.id, b.id, c.id, d.id, e.id, f.id])"
    )
    await u.check(project, slow)
    with pytest.raises(StoreTimeout, match="50 ms"):
        await u.run_for(project, slow, ENTITY, "cp", timeout_ms=50)
    with pytest.raises(InvalidParams):
        await u.run_for(project, slow, ENTITY, "cp", timeout_ms=0)


async def test_dependency_probe_finds_what_properties_hide(services: Services, project: str) -> None:
    u = await runner(services, project)
    ids = dict(await services.store.ro_query(project, "MATCH (x:Entity) RETURN x.id, id(x)"))
    edges = dict(await services.store.ro_query(project, "MATCH ()-[r]->() RETURN r.id, id(r)"))
    collaborators = (
        "MATCH (n)-[r:COLLABORATED_WITH]->(p:Person) WHERE r.relevance_strength IN ['medium', 'strong'] "
        "RETURN p.name as name, r.projects as projects, r.when as when ORDER BY r.when LIMIT 5"
    )
    result = await u.run_for(project, collaborators, ENTITY, "cp", dependencies=True)
    assert result.rows == (("Dizzy Gillespie", ["Bebop"], "1945"),)
    assert result.node_ids == {ids["cp"], ids["dg"]} and result.edge_ids == {edges["c1"]}
    assert result.dependencies_probed
    # A RETURN inside a string, a comment or a subquery's braces is not the final projection.
    tricky = "MATCH (n)-[r]->(p) WHERE p.name <> 'RETURN x' /* RETURN y */ RETURN p.name AS `RETURN`"
    assert (await u.run_for(project, tricky, ENTITY, "cp", dependencies=True)).node_ids == set(ids.values())


async def test_dependency_probe_finds_nodes_in_paths_lists_and_maps(services: Services, project: str) -> None:
    u = await runner(services, project)
    ids = dict(await services.store.ro_query(project, "MATCH (x:Entity) RETURN x.id, id(x)"))
    edges = dict(await services.store.ro_query(project, "MATCH ()-[r]->() RETURN r.id, id(r)"))
    # The variables in scope at the final RETURN hold a path, a list of nodes, a map and a count.
    query = (
        "MATCH path = (n)-[:INFLUENCED_BY]->(a) OPTIONAL MATCH (n)-[c:COLLABORATED_WITH]->(b) "
        "WITH n, path, collect(b) AS partners, {edge: c} AS held, count(*) AS rows RETURN rows"
    )
    result = await u.run_for(project, query, ENTITY, "cp", dependencies=True)
    assert result.rows == ((1,),)
    assert result.node_ids == {ids["cp"], ids["ly"], ids["dg"]}
    assert result.edge_ids == {edges["i1"], edges["c1"]}
    assert result.edge_end_ids == {ids["cp"], ids["dg"]}
    assert result.dependencies_probed


def test_final_return() -> None:
    from polyg.store.queries.user_cypher import dependency_probe

    assert dependency_probe("MATCH (n)-->(p) RETURN p.name ORDER BY p.name") == "MATCH (n)-->(p) RETURN *"
    assert dependency_probe("MATCH (n) WITH n RETURN n.name // RETURN 1") == "MATCH (n) WITH n RETURN *"
    assert dependency_probe('MATCH (n) WHERE n.x = "it\'s RETURN" RETURN 1') == (
        'MATCH (n) WHERE n.x = "it\'s RETURN" RETURN *'
    )
    assert dependency_probe("MATCH (n) RETURN [x IN [1] | x] AS returned") == "MATCH (n) RETURN *"
    assert dependency_probe("MATCH (n) SET n.returns = 1") is None


# --- bounds (issue 26): what one template query may cost the shared database -----------------

MB = 1 << 20
FIFTY = "[" + ", ".join(str(i) for i in range(50)) + "]"


async def database_memory(services: Services) -> int:
    """The embedded database's used_memory (INFO memory), read on its own socket."""
    client = aioredis.Redis(unix_socket_path=services.store.where)
    try:
        return int((await client.info("memory"))["used_memory"])
    finally:
        await client.aclose()


async def test_the_embedded_database_caps_the_memory_of_a_query(services: Services) -> None:
    client = aioredis.Redis(unix_socket_path=services.store.where)
    try:
        reply = await client.execute_command("GRAPH.CONFIG", "GET", "QUERY_MEM_CAPACITY")  # type: ignore[no-untyped-call]
    finally:
        await client.aclose()
    assert int(reply[1]) == QUERY_MEM_CAPACITY


async def test_expressions_the_database_cannot_stop_are_refused_before_they_run(
    services: Services, project: str
) -> None:
    u = await runner(services, project)
    before = await database_memory(services)
    for query, reason in (
        # Planned (constant-folded) before any limit applies: 12 s and 4 GB on save before.
        ("UNWIND range(1, 100000000) AS x RETURN count(x)", "ranges hold more than 10000"),
        ("RETURN reduce(s = 0, x IN range(1, 100) | s + x) AS total", "reduce"),
        ("RETURN reduce(s = 'a', i IN [1, 2, 3] | s + s) AS doubled", "reduce"),
        ("RETURN size(range(1, toInteger(n.birth_year) * 100000000)) AS items", "not an integer literal"),
        # A cartesian product of ranges: each is small, together 10^6.
        ("UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN count(*)", "ranges hold more than"),
        (f"WITH {FIFTY} AS s RETURN size([a IN s | [b IN s | [c IN s | a]]]) AS cubed", "nests 3"),
    ):
        with pytest.raises(InvalidParams, match=reason) as refused:
            await u.check(project, query)
        assert refused.value.code == 4002
        # At render too: a template saved before the check existed is not run.
        with pytest.raises(InvalidParams, match=reason):
            await u.run_for(project, query, ENTITY, "cp")
    assert await database_memory(services) < before + 16 * MB
    # What stays allowed: small literal ranges, ranges over a list's own indexes, two levels.
    for query in (
        "UNWIND range(1, 3) AS i RETURN i",
        "MATCH (n)-->(p) WITH collect(p.name) AS names UNWIND range(0, size(names) - 1) AS i RETURN names[i]",
        "MATCH (n)-->(p) WITH collect(p.name) AS names RETURN [a IN names | [b IN names WHERE a < b | b]] AS pairs",
    ):
        await u.check(project, query)
        assert (await u.run_for(project, query, ENTITY, "cp")).rows


async def test_work_the_database_can_stop_ends_at_the_time_limit_with_a_4xxx_error(
    services: Services, project: str
) -> None:
    u = await runner(services, project)
    await services.ctx.write(project, "UNWIND range(1, 300) AS i CREATE (:Other {id: 'o' + toString(i)})")
    before = await database_memory(services)
    for query in (
        # A deep UNWIND: 50^5 rows, from list literals (no range to refuse).
        f"WITH {FIFTY} AS xs UNWIND xs AS a UNWIND xs AS b UNWIND xs AS c UNWIND xs AS d UNWIND xs AS e "
        "RETURN count([a, b, c, d, e])",
        # A cartesian product of node scans (refused on save: it leaves n), 300^3 rows.
        "MATCH (a:Other) MATCH (b:Other) MATCH (c:Other) RETURN count([a.id, b.id, c.id])",
    ):
        with pytest.raises(QueryTooCostly, match="limit of 1000 ms") as stopped:
            await u.run_for(project, query, ENTITY, "cp")
        assert stopped.value.code == 4008
    assert await database_memory(services) < before + 16 * MB
    # The database was reachable all along, and still is.
    assert (await u.run_for(project, "RETURN n.name AS name", ENTITY, "cp")).rows == (("Charlie Parker",),)
