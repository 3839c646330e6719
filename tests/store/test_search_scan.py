"""The word scan a search falls back on while FalkorDB builds its indexes
(`polyg.store.queries.search.term_hits_scan`): its rows on a small graph written through polyg's
own writers, and one pass over each label whatever the number of words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyg.core.graph.embeddable import REGISTRY
from polyg.runtime.app import Polyg, Services
from polyg.store.falkor import Row
from polyg.store.names import ENTITY
from polyg.store.queries import search as q
from tests.core.conftest import isolated_settings

pytestmark = pytest.mark.anyio

P = "scan"
TARGETS = [target.query for target in REGISTRY.search_targets(ENTITY)]  # Entity, then Observation
FIELDS = {str(target.label): REGISTRY[target.label].fulltext for target in REGISTRY.search_targets(ENTITY)}
K = 2
FETCHED = {"Entity": 2, "Observation": 3}
CORPUS = [
    ("Sonny Rollins", "musician", "", ["played the tenor saxophone"]),
    ("Saxophone Colossus", "album", "", ["recorded in 1956"]),
    ("Coleman Hawkins", "musician", "", ["a saxophonist of the swing era", "a tenor saxophone pioneer"]),
    ("Max Roach", "musician", "Bebop pioneer", ["a bebop drummer"]),
]


@pytest.fixture(scope="module")
async def s(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    core = Polyg(isolated_settings(tmp_path_factory.mktemp("scan")))
    try:
        services = await core.ready()
        for name, type_, summary, observations in CORPUS:
            await services.entities.create(P, name=name, type_=type_, description=summary, observations=observations)
        yield services
    finally:
        await core.close()


async def ids_by_name(s: Services) -> dict[str, str]:
    return {name: entity_id for entity_id, name in await s.store.ro_query(P, "MATCH (e:Entity) RETURN e.id, e.name")}


class Recorder:
    """The core's own runner, keeping the queries it was given."""

    def __init__(self, s: Services) -> None:
        self.s = s
        self.sent: list[tuple[str, dict[str, Any] | None]] = []

    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        self.sent.append((cypher, params))
        return await self.s.ctx.read(project, cypher, params)

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        raise AssertionError("the scan only reads")


async def test_rows_per_label_and_term(s: Services) -> None:
    e = await ids_by_name(s)
    rollins, colossus, hawkins, roach = (e[name] for name, *_ in CORPUS)
    # The entities were written in this order, so their node ids (the order of `ids`) follow it.
    assert [row[0] for row in await s.store.ro_query(P, "MATCH (e:Entity) RETURN e.name ORDER BY id(e)")] == [
        name for name, *_ in CORPUS
    ]
    pairs = [
        ["rollins", "rollins"],  # a name, matched lower-cased
        ["tenor", "tenor"],  # observations only, counted for their entities
        ["saxophon*", "saxophon"],  # a stem: a name, and three observations of two entities
        ["musician", "musician"],  # three types: above the entities' bound of 2
        ["bebop", "bebop"],  # a description and an observation
        ["trumpet", "trumpet"],  # nowhere
    ]
    rows = await q.term_hits_scan(s.ctx, P, TARGETS, FIELDS, pairs, K, FETCHED)
    assert [list(row) for row in rows] == [
        ["Entity", "rollins", 1, [rollins]],
        ["Entity", "tenor", 0, []],
        ["Entity", "saxophon*", 1, [colossus]],
        ["Entity", "musician", 3, []],
        ["Entity", "bebop", 1, [roach]],
        ["Entity", "trumpet", 0, []],
        ["Observation", "rollins", 0, []],
        ["Observation", "tenor", 2, [rollins, hawkins]],
        # Three matching observations (within the bound of 3), the first K=2 by node id.
        ["Observation", "saxophon*", 3, [rollins, hawkins]],
        ["Observation", "musician", 0, []],
        ["Observation", "bebop", 1, [roach]],
        ["Observation", "trumpet", 0, []],
    ]


async def test_ids_follow_node_order_and_an_owner_counts_per_matching_observation(s: Services) -> None:
    e = await ids_by_name(s)
    rows = await q.term_hits_scan(s.ctx, P, TARGETS, FIELDS, [["sax", "sax"], ["a", "a"]], 10, {"Entity": 10})
    # Hawkins holds "sax" in two observations: his id comes once per observation, as the
    # full-text lookup's rows do (each observation is a hit).
    assert [list(row) for row in rows] == [
        ["Entity", "sax", 1, [e["Saxophone Colossus"]]],
        ["Entity", "a", 4, [e[name] for name, *_ in CORPUS]],
        ["Observation", "sax", 3, [e["Sonny Rollins"], e["Coleman Hawkins"], e["Coleman Hawkins"]]],
        # An observation bound of k (10) when `fetched` names none.
        ["Observation", "a", 4, [e["Sonny Rollins"], e["Coleman Hawkins"], e["Coleman Hawkins"], e["Max Roach"]]],
    ]
    assert [] == await q.term_hits_scan(s.ctx, P, TARGETS, FIELDS, [], K, FETCHED)


async def test_a_term_is_found_in_one_field_not_across_two(s: Services) -> None:
    # "Sonny Rollins" is a musician: the end of the name and the start of the type are two
    # fields (the scan joins them with a line break, which no word holds).
    across = [["smus", "smus"], ["nmus", "nmus"], ["rollins musician", "rollins musician"]]
    rows = await q.term_hits_scan(s.ctx, P, TARGETS[:1], FIELDS, across, K, FETCHED)
    assert [row[2] for row in rows] == [0, 0, 0]
    with pytest.raises(ValueError, match="line break"):
        await q.term_hits_scan(s.ctx, P, TARGETS, FIELDS, [["s\nm", "s\nm"]], K, FETCHED)


async def test_each_label_is_scanned_once_whatever_the_number_of_words(s: Services) -> None:
    runner = Recorder(s)
    words = ["rollins", "tenor", "saxophone", "drummer", "pioneer"]
    pairs = [[word, word] for word in words] + [[f"{word[:5]}*", word[:5]] for word in words]
    await q.term_hits_scan(runner, P, TARGETS, FIELDS, pairs, K, FETCHED)
    [(cypher, params)] = runner.sent
    plan = await s.store.explain(P, cypher, params)
    scans = [line.strip() for line in plan if "Label Scan" in line]
    # The per-word form read each label twice per word (a count, then the matches).
    assert sorted(scans) == sorted(f"Node By Label Scan | (node:{target.label})" for target in TARGETS), plan
