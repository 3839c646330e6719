"""The store reads plain cells of a reply itself (polyg.store.results): every kind of value must
come out exactly as the FalkorDB client's own parser gives it, in every store mode."""

from __future__ import annotations

from typing import Any

import pytest

from polyg.errors import StoreError
from polyg.runtime.app import Services

pytestmark = pytest.mark.anyio

P = "results"

EVERY_KIND = (
    "MATCH (n:Thing)-[r:LINKS]->(m:Thing) "
    "RETURN n, r, m.name, id(n), 1.5, -7, 12345678901234, true, false, null, 'ünï', "
    "[1, 'a', [2.5, null, false]], {a: 1, b: 'x', c: [true], d: {e: null}}, "
    "point({latitude: 1.5, longitude: 2.5}), properties(r), labels(n), keys(r), [n, 1], {node: m}, "
    "vecf32([1.0, 2.0]), [p = (n)-[:LINKS]->(m) | p], localdatetime('2024-05-01T10:00:00'), "
    "date('2024-05-01'), duration({days: 2})"
)


async def client_parse(s: Services, cypher: str) -> tuple[list[str], list[list[Any]]]:
    """The same query through the FalkorDB client's own query method and parser."""
    graph = s.store._graph(P)
    result = await graph.ro_query(cypher)
    return [str(column[1]) for column in result.header], list(result.result_set)


async def test_every_kind_of_value_reads_as_the_client_parses_it(services: Services) -> None:
    await services.store.query(
        P,
        "CREATE (:Thing:Extra {name: 'a', tags: ['x', 'y'], score: 0.25})"
        "-[:LINKS {weight: 0.5, note: 'n', flags: [true, false]}]->(:Thing {name: 'b', at: 3})",
    )
    names, rows = await services.store.ro_table(P, EVERY_KIND)
    assert (names, rows) == await client_parse(services, EVERY_KIND)
    row = rows[0]
    assert row[2:14] == [
        "b",
        row[3],
        1.5,
        -7,
        12345678901234,
        True,
        False,
        None,
        "ünï",
        [1, "a", [2.5, None, False]],
        {"a": 1, "b": "x", "c": [True], "d": {"e": None}},
        {"latitude": 1.5, "longitude": 2.5},
    ]
    assert isinstance(row[3], int)
    assert row[14] == {"weight": 0.5, "note": "n", "flags": [True, False]}
    assert row[15] == ["Thing", "Extra"]
    assert row[0].properties == {"name": "a", "tags": ["x", "y"], "score": 0.25}  # a node, as the client reads it


async def test_writes_return_their_rows_or_none(services: Services) -> None:
    assert await services.store.query(P, "CREATE (:Thing {name: 'c'})") == []
    rows = await services.store.query(P, "CREATE (t:Thing {name: 'd'}) RETURN t.name, id(t) >= 0")
    assert rows == [["d", True]]
    assert await services.store.ro_table(P, "MATCH (t:Thing) WHERE t.name = 'nobody' RETURN t.name") == (["t.name"], [])


async def test_a_failing_query_is_a_store_error(services: Services) -> None:
    await services.store.query(P, "CREATE (:Thing {name: 'e'})")
    with pytest.raises(StoreError):
        await services.store.ro_query(P, "MATCH (t:Thing) RETURN [1, 2][t.name]")  # fails as it runs
    with pytest.raises(StoreError):
        await services.store.ro_query(P, "MATCH (t:Thing RETURN t")
