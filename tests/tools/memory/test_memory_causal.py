"""The causal graph through the MCP client: links resolved from text (id, exact, case, fuzzy,
vector, created), chains upstream, downstream and both, depth limits, confidence products and
cut-offs, cycles; explain_why; the spec's deployment-failure and incident-response scenarios."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import deployment_failure, incident_response

pytestmark = pytest.mark.anyio


def texts(chain: dict[str, Any]) -> dict[str, tuple[int, float]]:
    return {n["text"]: (n["distance"], n["confidence"]) for n in chain["nodes"]}


async def test_deployment_failure_why_did_auth_crash(mem: Memory) -> None:
    seeded = await seed(mem, deployment_failure())
    first, second = seeded["causal"][:2]
    # "missing AUTH_SECRET" matched nothing and became an event; "auth service crash" is the
    # logged event "Auth service crashed" (fuzzy); the second link finds both ends as written.
    assert first["resolved"] == {"cause": "created", "effect": "fuzzy"}
    assert first["effect"]["text"] == "Auth service crashed"
    assert second["resolved"] == {"cause": "exact", "effect": "exact"}
    assert second["cause"] == {**second["cause"], "kind": "entity", "text": "deploy-v2.3.1", "type": "Deployment"}

    why = await mem.ok("explain_why", event="Auth service crashed")
    [explanation] = why["explanations"]
    chain = explanation["chain"]
    assert [step["text"] for step in chain] == ["deploy-v2.3.1", "missing AUTH_SECRET", "Auth service crashed"]
    assert [step["confidence"] for step in chain] == [0.88, 0.95, None]
    assert chain[0]["evidence"] == "the v2.3.1 template dropped the variable"
    assert chain[1]["evidence"] == "crash log: AUTH_SECRET is not set"
    assert chain[2]["occurred_at"] == "2026-01-07T14:05:00.000000Z"
    assert explanation["confidence"] == pytest.approx(0.95 * 0.88)
    assert [r["text"] for r in why["root_causes"]] == ["deploy-v2.3.1"]
    assert "missing AUTH_SECRET" in why["answer"] and "deploy-v2.3.1" in why["answer"]
    assert "0.836" in why["answer"]

    # The created cause is about the entity its text names (the cross-graph link).
    secret = await mem.ok("get_entity", name="AUTH_SECRET")
    assert "missing AUTH_SECRET" in [e["description"] for e in secret["events"]]


async def test_chain_directions_and_confidence_products(mem: Memory) -> None:
    await seed(mem, deployment_failure())
    up = await mem.ok("get_causal_chain", event="Pager alert fired for auth-service", direction="upstream", depth=5)
    assert texts(up) == {
        "Pager alert fired for auth-service": (0, 1.0),
        "Health checks failed for auth-service": (1, 0.99),
        "Auth service crashed": (2, pytest.approx(0.99 * 0.9)),
        "missing AUTH_SECRET": (3, pytest.approx(0.99 * 0.9 * 0.95)),
        "deploy-v2.3.1": (4, pytest.approx(0.99 * 0.9 * 0.95 * 0.88)),
    }
    assert up["truncated_by_depth"] is False and up["cycles"] == []
    down = await mem.ok("get_causal_chain", event="deploy-v2.3.1", direction="downstream", depth=2)
    assert set(texts(down)) == {"deploy-v2.3.1", "missing AUTH_SECRET", "Auth service crashed"}
    assert down["truncated_by_depth"] is True  # the chain goes on past depth 2
    both = await mem.ok("get_causal_chain", event="Auth service crashed", direction="both", depth=1)
    directions = {n["text"]: n["direction"] for n in both["nodes"]}
    assert directions == {
        "Auth service crashed": "start",
        "missing AUTH_SECRET": "upstream",
        "Health checks failed for auth-service": "downstream",
    }
    strong = await mem.ok("get_causal_chain", event="Auth service crashed", direction="both", min_confidence=0.9)
    assert "deploy-v2.3.1" not in texts(strong)  # its link (0.88) is below the cut-off
    await mem.fails("get_causal_chain", event="something nobody logged", code=4004)


async def test_depth_limits(mem: Memory) -> None:
    steps = [f"step {i} of the outage" for i in range(8)]
    for cause, effect in itertools.pairwise(steps):
        await mem.ok("add_causal_link", cause=cause, effect=effect, confidence=0.5)
    for depth in (1, 3, 7):
        chain = await mem.ok("get_causal_chain", event=steps[-1], depth=depth)
        assert max(n["distance"] for n in chain["nodes"]) == depth
        assert len(chain["nodes"]) == depth + 1
        assert chain["truncated_by_depth"] is (depth < 7)
        deepest = next(n for n in chain["nodes"] if n["distance"] == depth)
        assert deepest["confidence"] == pytest.approx(0.5**depth)
    limited = await mem.ok("get_causal_chain", event=steps[-1], depth=7, limit=3)
    assert len(limited["nodes"]) == 3 and limited["truncated_by_limit"] is True


async def test_cycles_are_reported_not_followed(mem: Memory) -> None:
    loop = ["queue backs up", "workers time out", "retries flood the queue"]
    for cause, effect in zip(loop, loop[1:] + loop[:1], strict=True):
        await mem.ok("add_causal_link", cause=cause, effect=effect, confidence=0.8)
    chain = await mem.ok("get_causal_chain", event="queue backs up", direction="upstream", depth=10)
    assert sorted(n["text"] for n in chain["nodes"]) == sorted(loop)
    assert len(chain["cycles"]) == 1
    both = await mem.ok("get_causal_chain", event="workers time out", direction="both", depth=10)
    assert len(both["cycles"]) == 1  # the same loop, whichever way it is walked
    why = await mem.ok("explain_why", event="queue backs up", depth=10)
    assert why["cycles"] == chain["cycles"]
    assert why["explanations"][0]["chain"][-1]["text"] == "queue backs up"


async def test_resolution_by_id_case_and_vector(mem: Memory) -> None:
    crash = await mem.ok("add_event", description="Checkout latency spiked above two seconds", occurred_at="2026-01-09")
    db = await mem.ok("add_entity", name="orders-db", entity_type="Database")
    by_id = await mem.ok("add_causal_link", cause=db["entity"]["id"], effect=crash["event"]["id"], confidence=0.6)
    assert by_id["resolved"] == {"cause": "id", "effect": "id"}
    again = await mem.ok("add_causal_link", cause="ORDERS-DB", effect="checkout latency spiked above two seconds")
    assert again["resolved"] == {"cause": "case-insensitive", "effect": "case-insensitive"}
    assert again["updated"] is True and again["link"]["id"] == by_id["link"]["id"]
    assert again["link"]["confidence"] == 1.0
    meaning = await mem.ok("add_causal_link", cause="slow index scan on orders-db", effect="spike in checkout latency")
    assert meaning["resolved"]["effect"] == "vector"
    assert meaning["effect"]["id"] == crash["event"]["id"]
    assert meaning["resolved"]["cause"] == "created"
    assert (await mem.stats())["graphs"]["causal"]["causal_links"] == 2
    await mem.fails("add_causal_link", cause="unheard of", effect="never seen", create_missing=False, code=4004)


async def test_incident_response_scenario(mem: Memory) -> None:
    await seed(mem, incident_response())
    stats = (await mem.stats())["graphs"]
    assert stats["entity"]["entities"] == 15
    assert stats["temporal"]["events"] == 100
    assert stats["causal"]["causal_links"] == 20
    assert stats["causal"]["undated_events"] == 0  # every cause and effect was a logged event
    for incident in range(5):
        why = await mem.ok("explain_why", event=f"Incident {incident} step 4")
        [explanation] = why["explanations"]
        assert [s["text"] for s in explanation["chain"]] == [f"Incident {incident} step {k}" for k in range(5)]
        assert explanation["confidence"] == pytest.approx(0.9**4)
    timeline = await mem.ok("query_timeline", entity="svc-3", limit=100)
    assert sum(1 for i in timeline["items"] if i["event"]["description"].startswith("Incident 3")) == 5


async def test_stating_a_link_again_keeps_its_evidence(mem: Memory) -> None:
    """A link stated again (a new confidence, no evidence or other evidence) keeps the evidence
    it had; new evidence is added to it, once."""
    first = await mem.ok(
        "add_causal_link", cause="disk filled up", effect="database stopped", confidence=0.7, evidence="df: 100%"
    )
    again = await mem.ok("add_causal_link", cause="disk filled up", effect="database stopped", confidence=0.9)
    assert again["updated"] is True and again["link"]["id"] == first["link"]["id"]
    assert (again["link"]["confidence"], again["link"]["evidence"]) == (0.9, "df: 100%")
    more = await mem.ok(
        "add_causal_link", cause="disk filled up", effect="database stopped", evidence="postgres log: no space left"
    )
    assert more["link"]["evidence"] == "df: 100%\npostgres log: no space left"
    same = await mem.ok("add_causal_link", cause="disk filled up", effect="database stopped", evidence="df: 100%")
    assert same["link"]["evidence"] == "df: 100%\npostgres log: no space left"
    # What is stored, not only what the call answered.
    chain = await mem.ok("get_causal_chain", event="database stopped", direction="upstream")
    [link] = chain["links"]
    assert link["evidence"] == "df: 100%\npostgres log: no space left"
