"""The bulk path (`MemoryBulk`) writes the graph the tools write: one small memory graph is
written twice in one store, once through the services the tools call (add_event, add_fact,
add_causal_link, one item at a time) and once through the bulk path, and a memory server
then gives the same answers on both for get_entity, query_timeline, get_causal_chain and
recall (ids and creation times aside). And a batch the bulk path cannot write as the tools
would is refused before anything is written."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.lib.memory_bulk import BulkEvent, BulkFact, BulkLink, MemoryBulk
from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.errors import InvalidParams
from polyg.runtime.app import Polyg
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ENTITIES = {"auth-service": "service", "Alice": "person", "Bob": "person", "Payments": "project", "Billing": "project"}
# (key, description, minutes after T0, entities, duration in minutes); two at the same instant,
# written out of time order, so the T_BEFORE chain is not the order of the calls.
EVENTS = [
    ("deploy", "deploy v2.3.1 of auth-service", 60, ["auth-service", "Alice"], 15),
    ("secret", "AUTH_SECRET missing from the auth-service config", 70, ["auth-service"], None),
    ("crash", "auth-service crashed on start", 75, ["auth-service"], None),
    ("page", "Bob was paged about auth-service", 76, ["Bob", "auth-service"], None),
    ("standup", "standup about the release", 0, ["Alice", "Bob"], 30),
    ("rollback", "rollback of auth-service to v2.3.0", 120, ["auth-service", "Bob"], None),
]
# (subject, predicate, object, valid_from, valid_to)
FACTS = [
    ("Alice", "works_on", "Payments", "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
    ("Alice", "works_on", "Billing", "2025-01-01T00:00:00Z", None),
    ("Bob", "Works with", "Alice", "2025-06-01T00:00:00Z", None),
    ("auth-service", "owned_by", "Bob", "2026-03-01T00:00:00Z", None),
]
# (cause, effect, confidence, evidence): event keys, or an entity name
LINKS = [
    ("deploy", "secret", 0.88, "the v2.3.1 manifest drops AUTH_SECRET"),
    ("secret", "crash", 0.95, "startup log: AUTH_SECRET not set"),
    ("crash", "page", 0.9, ""),
    ("crash", "rollback", 0.7, "Bob rolled back after the crash"),
    ("Payments", "deploy", 0.5, "the release was for Payments"),
]


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


async def _through_services(services: Any, project: str) -> dict[str, str]:
    """The graph as the memory tools write it (the calls their handlers make); event key -> id."""
    graphs = services.memory
    for name, kind in ENTITIES.items():
        await graphs.entities.ensure(project, [name], {name: kind})
    ids = {}
    for key, text, minutes, names, duration in EVENTS:
        done = await graphs.temporal.add_event(
            project,
            description=text,
            occurred_at=_at(minutes).isoformat(),
            duration=f"PT{duration}M" if duration else None,
            entities=names,
            find_entities=False,
        )
        ids[key] = done.event.id
    for subject, predicate, obj, start, end in FACTS:
        await graphs.temporal.add_fact(
            project, subject=subject, predicate=predicate, object_=obj, valid_from=start, valid_to=end
        )
    for cause, effect, confidence, evidence in LINKS:
        await graphs.causal.add_link(
            project,
            cause=ids.get(cause, cause),
            effect=ids.get(effect, effect),
            confidence=confidence,
            evidence=evidence,
        )
    return ids


async def _through_bulk(services: Any, project: str) -> dict[str, str]:
    graphs = services.memory
    for name, kind in ENTITIES.items():
        await graphs.entities.ensure(project, [name], {name: kind})
    events = [
        BulkEvent(key, text, _at(minutes), tuple(names), _at(minutes + duration) if duration else None)
        for key, text, minutes, names, duration in EVENTS
    ]
    facts = [
        BulkFact(s, p, o, datetime.fromisoformat(start), datetime.fromisoformat(end) if end else None)
        for s, p, o, start, end in FACTS
    ]
    links = [BulkLink(c, e, confidence, evidence) for c, e, confidence, evidence in LINKS]
    report = await MemoryBulk(graphs.temporal).load(project, events, facts, links)
    assert report.facts_added == len(FACTS) and report.causal_links_added == len(LINKS)
    return report.event_ids


def _core(root: Path) -> Polyg:
    settings = load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None)
    return Polyg(settings, embedder=create_embedder("hashing"))


@pytest.fixture(scope="module")
async def both(servers_root: Path) -> Any:
    """One store holding the graph twice (project `tools`, project `bulk`), served over stdio;
    and the event ids of each."""
    root = servers_root / "memory-bulk"
    core = _core(root)
    try:
        services = await core.ready()
        ids = {"tools": await _through_services(services, "tools"), "bulk": await _through_bulk(services, "bulk")}
        for project in ids:
            assert await services.ctx.vectors.settle(project, 120)
    finally:
        await core.close()
    async with kg_session("stdio", root, "--toolsets", "memory", POLYG_EMBEDDING_PROVIDER="hashing") as server:
        yield server, ids


ID = re.compile(r"\b(?:evt|ent|cau|rel|obs)_[0-9a-f]{16}(?:_[A-Za-z0-9_]+)?\b")
VARYING = {"created_at", "updated_at", "project_id", "server_ms", "took_ms"}


def _same_form(value: Any, names: dict[str, str]) -> Any:
    """The answer with ids written as what they stand for (an event by its key, an entity by
    its name, other ids as their kind) and creation times left out."""
    if isinstance(value, dict):
        return {k: _same_form(v, names) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_same_form(v, names) for v in value]
    if isinstance(value, str):
        return ID.sub(lambda m: names.get(m.group(0), m.group(0).split("_", 1)[0]), value)
    return value


async def _ids_named(server: KG, project: str, event_ids: dict[str, str]) -> dict[str, str]:
    names = {event_id: f"event:{key}" for key, event_id in event_ids.items()}
    for name in ENTITIES:
        found = await server.ok("get_entity", {"project_id": project, "name": name, "include_relationships": False})
        names[found["entity"]["id"] if "entity" in found else found["id"]] = f"entity:{name}"
    return names


async def _answers(server: KG, project: str, event_ids: dict[str, str]) -> dict[str, Any]:
    def call(tool: str, **args: Any) -> Any:
        return server.ok(tool, {"project_id": project, **args})

    out: dict[str, Any] = {}
    for name in ENTITIES:
        out[f"get_entity {name}"] = await call("get_entity", name=name)
    span = {"from": "2024-01-01T00:00:00Z", "to": "2026-04-01T00:00:00Z"}
    out["timeline"] = await call("query_timeline", **span)
    out["timeline of auth-service"] = await call("query_timeline", **span, entity="auth-service")
    out["timeline, a page"] = await call("query_timeline", **span, limit=3)
    out["Alice as of 2024-06"] = await call("get_entity", name="Alice", as_of="2024-06-01T00:00:00Z")
    for key in ("crash", "deploy", "page"):
        for direction in ("upstream", "downstream", "both"):
            out[f"chain {key} {direction}"] = await call(
                "get_causal_chain", event=event_ids[key], direction=direction, depth=3
            )
    for query in ("Why did auth-service crash?", "What happened to auth-service?", "What does Alice work on?"):
        out[f"recall {query}"] = await call("recall", query=query, reference_time="2026-03-03T00:00:00Z")
    return out


def _difference(question: str, got: dict[str, Any], expected: dict[str, Any]) -> str:
    keys = [k for k in {**expected, **got} if got.get(k) != expected.get(k)]
    return f"{question}: " + "; ".join(f"{k}: bulk {got.get(k)!r} != tools {expected.get(k)!r}" for k in keys)


async def test_the_bulk_path_and_the_tools_give_the_same_answers(both: Any) -> None:
    server, ids = both
    answers = {}
    for project, event_ids in ids.items():
        names = await _ids_named(server, project, event_ids)
        answers[project] = _same_form(await _answers(server, project, event_ids), names)
        # Where two items rank alike, their order follows their ids, which differ between the two.
        for question, answer in answers[project].items():
            if question.startswith("recall"):
                answer["evidence"].sort(key=lambda item: (-item["score"], item["id"]))
            if question.startswith("chain"):
                answer["nodes"].sort(key=lambda node: (node["distance"], node["id"]))
                answer["links"].sort(key=lambda link: (link["cause_id"], link["effect_id"]))
    for question, expected in answers["tools"].items():
        assert answers["bulk"][question] == expected, _difference(question, answers["bulk"][question], expected)
    # The answers are about the graph, not empty on both sides.
    assert len(answers["tools"]["timeline"]["items"]) == len(EVENTS) + len(FACTS)
    assert "event:secret" in str(answers["tools"]["chain crash upstream"])


async def test_statistics_and_the_time_chain_match(both: Any) -> None:
    server, _ = both
    stats = {p: await server.ok("get_statistics", {"project_id": p}) for p in ("tools", "bulk")}
    for figures in stats.values():
        figures["graphs"]["semantic"].pop("vectors_pending")
    assert _same_form(stats["bulk"], {}) == _same_form(stats["tools"], {})
    assert stats["bulk"]["graphs"]["temporal"]["t_before"] == len(EVENTS) - 1


async def test_a_batch_placed_among_stored_events_splices_the_chain(tmp_path: Path) -> None:
    """A second batch whose events fall between stored ones: the chain stays one line in time order."""
    core = _core(tmp_path)
    try:
        services = await core.ready()
        graphs = services.memory
        await graphs.entities.ensure("p", ["auth-service"], None)
        bulk = MemoryBulk(graphs.temporal)
        first = await bulk.load("p", [BulkEvent(str(m), f"e{m}", _at(m), ("auth-service",)) for m in (0, 20, 40)])
        second = await bulk.load("p", [BulkEvent(str(m), f"e{m}", _at(m), ("auth-service",)) for m in (10, 30, 50)])
        text = {v: f"e{k}" for k, v in {**first.event_ids, **second.event_ids}.items()}
        rows = await services.ctx.read("p", "MATCH (a:Event)-[:T_BEFORE]->(b:Event) RETURN a.id, b.id", {})
        assert sorted((text[a], text[b]) for a, b in rows) == sorted(
            (f"e{m}", f"e{m + 10}") for m in (0, 10, 20, 30, 40)
        )
    finally:
        await core.close()


async def test_a_batch_the_tools_would_write_otherwise_is_refused_whole(tmp_path: Path) -> None:
    core = _core(tmp_path)
    try:
        services = await core.ready()
        graphs = services.memory
        await graphs.entities.ensure("p", ["Alice", "Payments", "Billing"], None)
        bulk = MemoryBulk(graphs.temporal)
        event = BulkEvent("a", "kickoff", T0, ("Alice",))
        clash = [BulkFact("Alice", "works_on", "Payments", T0), BulkFact("Alice", "works_on", "Billing", T0)]
        with pytest.raises(InvalidParams, match="single-valued"):
            await bulk.load("p", [event], clash)
        with pytest.raises(InvalidParams, match="not in project"):
            await bulk.load("p", [BulkEvent("b", "kickoff", T0, ("Nobody",))])
        with pytest.raises(InvalidParams, match="confidence"):
            await bulk.load("p", [event], [], [BulkLink("a", "Alice", confidence=1.5)])
        with pytest.raises(InvalidParams, match="same node"):
            await bulk.load("p", [event], [], [BulkLink("Alice", "alice")])
        rows = await services.ctx.read("p", "MATCH (ev:Event) RETURN count(ev)", {})
        assert rows[0][0] == 0
        # A fact that holds already is not written twice.
        await bulk.load("p", [], [BulkFact("Alice", "works_on", "Payments", T0)])
        again = await bulk.load("p", [], [BulkFact("Alice", "works_on", "Payments", T0 + timedelta(days=1))])
        assert (again.facts_added, again.facts_duplicate) == (0, 1)
    finally:
        await core.close()
