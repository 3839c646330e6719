"""Relationship types, traversal, centrality and user Cypher in every store mode (embedded,
FalkorDB server, server with a password): the procedures and limits they rely on (db.indexes,
algo.pageRank, GRAPH.EXPLAIN, GRAPH.RO_QUERY with a timeout) behave alike."""

from __future__ import annotations

import pytest

from polyg.core.documents.user_cypher import UserCypher
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.search.centrality import CentralityService
from polyg.core.traversal.service import TraversalService
from polyg.errors import InvalidParams, StoreTimeout
from polyg.runtime.app import Services
from polyg.store.names import Label
from tests.store.test_projects import indexes_operational

pytestmark = pytest.mark.anyio

P = "contract"


async def test_types_paths_centrality_and_user_cypher(services: Services) -> None:
    s = services
    await s.ctx.write(
        P,
        "CREATE (a:Entity {id: 'a'}), (b:Entity {id: 'b'}), (c:Entity {id: 'c'}), "
        "(a)-[:CHILD_OF {id: 'ab', relevance_strength: 'strong'}]->(b), "
        "(b)-[:CHILD_OF {id: 'bc', relevance_strength: 'strong'}]->(c), "
        "(a)-[:KNOWS {id: 'ac', relevance_strength: 'weak'}]->(c)",
    )
    types = RelTypeService(s.ctx)
    await types.create(P, "CHILD_OF", directionality="strong")
    await types.ensure(P, ["KNOWS"])
    # An index made over existing edges is used by the planner once FalkorDB has filled it.
    await indexes_operational(s, P)
    plan = await s.store.explain(P, "MATCH ()-[r:KNOWS {id: 'ac'}]->() RETURN r")
    assert any("Edge By Index Scan" in line for line in plan)

    found = await TraversalService(s.ctx, types).paths(P, "a", "c")
    assert [[n.id for n in p.nodes] for p in found.paths] == [["a", "b", "c"], ["a", "c"]]
    assert [p.score.final for p in found.paths] == pytest.approx([0.5, 0.2 * 0.5])

    ranks = await CentralityService(s.ctx).get(P)
    assert max(ranks.pagerank, key=lambda k: ranks.pagerank[k]) == "c"

    user = UserCypher(s.ctx)
    result = await user.run_for(P, "MATCH (n)-[:CHILD_OF]->(p) RETURN p.id", Label("Entity"), "a")
    assert result.rows == (("b",),)
    with pytest.raises(InvalidParams, match="read-only"):
        await user.run_for(P, "SET n.x = 1", Label("Entity"), "a")
    await s.ctx.write(P, "UNWIND range(1, 30) AS i CREATE (:Entity {id: 'k' + toString(i)})")
    await s.ctx.write(
        P,
        "MATCH (x:Entity), (y:Entity) WHERE x.id STARTS WITH 'k' AND y.id STARTS WITH 'k' AND x <> y "
        "CREATE (x)-[:KNOWS]->(y)",
    )
    await s.ctx.write(P, "MATCH (a:Entity {id: 'a'}), (k:Entity {id: 'k1'}) CREATE (a)-[:KNOWS]->(k)")
    # Every row names its nodes, so no build of FalkorDB can count endpoints instead of paths.
    slow = (
        "MATCH (n)-[:KNOWS]->(a)-[:KNOWS]->(b)-[:KNOWS]->(c)-[:KNOWS]->(d)-[:KNOWS]->(e)-[:KNOWS]->(f) "
        "RETURN count([a.id, b.id, c.id, d.id, e.id, f.id])"
    )
    with pytest.raises(StoreTimeout):
        await user.run_for(P, slow, Label("Entity"), "a", timeout_ms=50)
