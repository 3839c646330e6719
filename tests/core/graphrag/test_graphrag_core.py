"""GraphRAG core (spec 004) on an embedded FalkorDB: personalised PageRank and salience by hand,
weights checked, weighted/causal relationships, extraction with name resolution, the
extraction log, and LLM extraction through a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from polyg.core.graphrag.extract import Extractor
from polyg.core.graphrag.service import percentile, tier_of
from polyg.core.search.centrality import personalised_pagerank
from polyg.core.search.graph_search import check_weights
from polyg.errors import InvalidParams, NotFound
from polyg.llm.openai_compat import OpenAICompatLLM
from polyg.runtime.app import Services
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.anyio


def test_personalised_pagerank_by_hand() -> None:
    # A (1) has two leaves (3, 4); B (2) has no relationship; the walk restarts at A and B
    # equally. B dangles, so its rank y returns to the restarts: y = 0.15 * 0.5 + 0.85 * y * 0.5
    # -> y = 0.075 / 0.575. The leaves hand all they get back to A: leaves n = 0.85 x and
    # x = (0.15 + 0.85 y) * 0.5 + 0.85 n.
    links = {1: [(3, 1.0), (4, 1.0)], 3: [(1, 1.0)], 4: [(1, 1.0)]}
    ranks = personalised_pagerank([1, 2, 3, 4], links, {1: 0.5, 2: 0.5})
    y = 0.075 / 0.575
    x = (0.15 + 0.85 * y) * 0.5 / (1 - 0.85 * 0.85)
    assert ranks[2] == pytest.approx(y, abs=1e-5)
    assert ranks[1] == pytest.approx(x, abs=1e-5)
    assert ranks[3] == ranks[4] == pytest.approx(0.85 * x / 2, abs=1e-5)
    assert math.fsum(ranks.values()) == pytest.approx(1.0)
    assert ranks[1] > ranks[2]  # a connected seed outranks an isolated one of equal relevance


def test_personalised_pagerank_follows_weights() -> None:
    # From the seed 1, a heavy link to 2 carries four times what a light link to 3 does.
    ranks = personalised_pagerank([1, 2, 3], {1: [(2, 0.8), (3, 0.2)], 2: [(1, 0.8)], 3: [(1, 0.2)]}, {1: 1.0})
    assert ranks[2] == pytest.approx(4 * ranks[3])
    assert personalised_pagerank([1, 2], {}, {}) == {1: 0.0, 2: 0.0}


@pytest.mark.parametrize(("vector", "graph"), [(-0.1, 0.5), (1.1, 0.0), (0.5, 2.0), (0.0, 0.0), (True, 0.5)])
def test_weights_outside_0_1_or_summing_to_0_are_refused(vector: Any, graph: Any) -> None:
    with pytest.raises(InvalidParams):
        check_weights(vector, graph)


def test_percentile_and_tier() -> None:
    ordered = [0.1, 0.1, 0.2, 0.5]
    assert percentile(ordered, 0.5) == 0.875  # 3 below, itself half
    assert percentile(ordered, 0.1) == 0.25  # 0 below, two equal
    assert percentile([], 1.0) == 0.0
    assert [tier_of(v) for v in (0.95, 0.9, 0.6, 0.5, 0.49)] == [
        "core",
        "core",
        "supporting",
        "supporting",
        "peripheral",
    ]


async def _entity(s: Services, project: str, name: str, *observations: str) -> str:
    created = await s.entities.create(project, name=name, type_="thing", observations=list(observations))
    return str(created.id)


async def _relationships(s: Services, project: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    rows = await s.ctx.read(
        project,
        "MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name, type(r), b.name, properties(r) "
        "ORDER BY a.name, type(r), b.name",
    )
    return [(a, t, b, dict(p)) for a, t, b, p in rows]


async def test_weighted_links_merge_map_types_and_keep_context(services: Services, project: str) -> None:
    a = await _entity(services, project, "Alpha")
    b = await _entity(services, project, "Beta")
    links = services.graphrag.links
    first = await links.add(project, a, b, "depends_on", weight=0.9, context={"by": "review", "tags": ["x", 1]})
    assert (first.type, first.relation, first.created, first.context) == (
        "DEPENDS_UPON",
        "depends_on",
        True,
        {"by": "review", "tags": ["x", 1]},
    )
    again = await links.add(project, a, b, "DEPENDS_ON", weight=0.4)
    assert (again.id, again.created, again.weight, again.context) == (first.id, False, 0.4, first.context)
    causal = await links.add(project, b, a, "causes", weight=0.7)
    assert causal.is_causal and causal.type == "CAUSES"
    rels = await _relationships(services, project)
    assert [(x, t, y) for x, t, y, _ in rels] == [("Alpha", "DEPENDS_UPON", "Beta"), ("Beta", "CAUSES", "Alpha")]
    assert rels[1][3]["confidence"] == 0.7  # the causal view reads it as the link's confidence
    with pytest.raises(InvalidParams):
        await links.add(project, a, b, "uses", weight=1.5)
    with pytest.raises(InvalidParams):
        await links.add(project, a, b, "bad type!")
    with pytest.raises(InvalidParams):
        await links.add(project, a, b, "HAS_OBSERVATION")
    with pytest.raises(NotFound):
        await links.add(project, a, "ent_missing", "uses")


async def test_extraction_resolves_names_and_reports_the_rest(services: Services, project: str) -> None:
    gateway = await _entity(
        services,
        project,
        "API Gateway",
        "Uses redis for caching and depends on Auth Servce.",  # any case; a typo
        "It does not use MySQL.",  # negated: nothing
        "Relates to Kafka.",  # no such entity: reported
        "The Billing Engine is caused by Gremlins.",  # the subject is another entity; Gremlins unknown
    )
    await _entity(services, project, "Redis")
    await _entity(services, project, "Auth Service")
    await _entity(services, project, "MySQL")
    await _entity(services, project, "Billing Engine", "Billing Engine is used by the API Gateway.")
    found = await services.graphrag.extractor.entity(project, gateway)
    got = sorted((r.relation, r.source.name, r.target.name, r.target.how, r.created) for r in found.relationships)
    assert got == [
        ("depends_on", "API Gateway", "Auth Service", "fuzzy", True),
        ("uses", "API Gateway", "Redis", "case-insensitive", True),
    ]
    assert sorted((u.text, u.relation, u.role) for u in found.unresolved) == [
        ("Gremlins", "causes", "object"),
        ("Kafka", "relates_to", "object"),
    ]
    assert found.negated == 1 and found.source == "rules"
    rels = {(a, t, b): p for a, t, b, p in await _relationships(services, project)}
    uses = rels[("API Gateway", "USES", "Redis")]
    assert uses["weight"] == 0.5 and uses["origin"] == "extraction" and uses["extracted_by"] == "rules"
    assert uses["evidence"] == "Uses redis for caching and depends on Auth Servce."
    assert ("API Gateway", "USES", "MySQL") not in rels

    # Passive voice from the other entity's observation names the same relationship: no duplicate.
    run = await services.graphrag.extractor.due(project)
    billing = next(e for e in run.entities if e.name == "Billing Engine")
    assert [(r.relation, r.source.name, r.target.name, r.created) for r in billing.relationships] == [
        ("uses", "API Gateway", "Billing Engine", True)
    ]
    assert {e.name for e in run.entities} == {"Redis", "Auth Service", "MySQL", "Billing Engine"}  # gateway: done
    assert run.remaining == 0
    assert len(await _relationships(services, project)) == 3


async def test_extraction_log_takes_only_changed_entities_and_adds_no_duplicates(
    services: Services, project: str
) -> None:
    a = await _entity(services, project, "Service A", "Service A uses Store.")
    await _entity(services, project, "Store")
    manual = await services.graphrag.links.add(project, a, a, "relates_to")  # a self link is allowed by hand
    first = await services.graphrag.extractor.due(project)
    assert sum(e.created for e in first.entities) == 1
    assert (await services.graphrag.extractor.due(project)).entities == ()
    await services.entities.add_observation(project, a, "Service A causes Store outages. It uses Store.")
    again = await services.graphrag.extractor.due(project)
    assert [e.entity_id for e in again.entities] == [a]
    (changed,) = again.entities
    assert [(r.relation, r.created) for r in changed.relationships] == [("uses", False)]
    assert [(u.text, u.relation) for u in changed.unresolved] == [("Store outages", "causes")]
    rels = await _relationships(services, project)
    assert [(x, t, y) for x, t, y, _ in rels] == [
        ("Service A", "RELATES_TO", "Service A"),
        ("Service A", "USES", "Store"),
    ]
    assert rels[0][3]["id"] == manual.id
    # A limit takes that many of the due entities; the rest stay due.
    await services.entities.add_observation(project, a, "Uses Store.")
    for name in ("C1", "C2"):
        await _entity(services, project, name, "Uses Store.")
    part = await services.graphrag.extractor.due(project, limit=2)
    assert len(part.entities) == 2 and part.remaining == 1


@pytest.fixture
def openai_srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


async def test_llm_extraction_is_checked_like_the_rules(
    services: Services, project: str, openai_srv: FakeOpenAIServer
) -> None:
    gateway = await _entity(services, project, "Gateway", "Caches sessions in Redis; never talks to Mongo.")
    await _entity(services, project, "Redis")
    await _entity(services, project, "Mongo")
    answer = {
        "relationships": [
            {"subject": None, "relation": "uses", "object": "redis", "observation": 0},
            {"subject": None, "relation": "uses", "object": "Mongo", "observation": 0, "negated": True},
            {"subject": None, "relation": "depends_on", "object": "Ghost", "observation": 0},
            {"subject": None, "relation": "uses", "object": "Redis", "observation": 7},  # no such observation
        ]
    }
    openai_srv.chat_replies = [json.dumps(answer), "not json at all", "still not json", "nor this"]
    llm = OpenAICompatLLM(base_url=openai_srv.base_url, model="fake-chat", timeout_s=5, max_retries=0)
    try:
        extractor = Extractor(services.ctx, services.graphrag.reltypes, llm)
        found = await extractor.entity(project, gateway)
        assert found.source == "llm"
        assert [(r.relation, r.target.name, r.target.how) for r in found.relationships] == [
            ("uses", "Redis", "case-insensitive")
        ]
        assert [(u.text, u.relation) for u in found.unresolved] == [("Ghost", "depends_on")]
        assert found.negated == 1
        rels = {(a, t, b): p for a, t, b, p in await _relationships(services, project)}
        assert rels[("Gateway", "USES", "Redis")]["extracted_by"] == "llm"
        # An answer that is not the schema: the rules answer instead (they find nothing here).
        fallback = await extractor.entity(project, gateway)
        assert fallback.source == "rules" and fallback.relationships == ()
    finally:
        await llm.aclose()


async def _legacy_entity(services: Services, project: str, node_id: str, name: str) -> None:
    """An entity whose name was stored before names were normalised (surrounding whitespace),
    older than any entity the tools write."""
    await services.ctx.write(
        project,
        "CREATE (:Entity {id: $id, name: $name, type: 'legacy', created_at: '2000-01-01T00:00:00Z'})",
        {"id": node_id, "name": name},
    )


async def test_names_are_looked_up_as_stored_not_as_the_index_loosely_matches(services: Services, project: str) -> None:
    # FalkorDB's name index also returns " Redis " for "Redis": the name found is compared.
    await _legacy_entity(services, project, "legacy_redis", " Redis ")
    await _legacy_entity(services, project, "legacy_kafka", "Kafka  ")
    redis = await _entity(services, project, "Redis")
    found = await services.graphrag.extractor.resolver.resolve(project, ["Redis", "  Redis", "Kafka", "kafka"])
    assert {name: (r.id, r.how) for name, r in found.items() if r.how != "fuzzy"} == {
        "Redis": (redis, "exact"),
        "  Redis": (redis, "exact"),  # read as a name is stored
    }
    # Knowledge documents resolve a node by name the same way.
    assert (await services.documents.resolve(project, "Redis")).id == redis
    assert (await services.documents.resolve(project, " Redis\t")).id == redis
