"""The spec's test scenarios (spec 003, "Test Datasets") as data: the deployment failure and the
personal-knowledge set as the spec writes them, the others generated with the sizes its table
gives (entities, events, causal links). Deterministic: no randomness, so assertions are exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment_failure() -> dict[str, Any]:
    """5 entities, 10 events, 4 causal links; the spec's chain: deploy-v2.3.1 -> missing
    AUTH_SECRET (0.88) -> auth service crash (0.95)."""
    start = datetime(2026, 1, 7, 14, 0, tzinfo=UTC)
    descriptions = [
        "Deployment v2.3.1 started",
        "Auth service crashed",
        "Config rendered without AUTH_SECRET",
        "Health checks failed for auth-service",
        "Pager alert fired for auth-service",
        "On-call engineer acknowledged the alert",
        "Rollback of deploy-v2.3.1 started",
        "Auth service recovered",
        "AUTH_SECRET added to the deployment template",
        "Postmortem written",
    ]
    minutes = [0, 5, 1, 6, 7, 9, 15, 20, 40, 120]
    return {
        "entities": [
            {"name": "auth-service", "type": "Service"},
            {"name": "deploy-v2.3.1", "type": "Deployment"},
            {"name": "AUTH_SECRET", "type": "EnvVar"},
            {"name": "api-gateway", "type": "Service"},
            {"name": "on-call", "type": "Team"},
        ],
        "events": [
            {"description": d, "occurred_at": iso(start + timedelta(minutes=m))}
            for d, m in zip(descriptions, minutes, strict=True)
        ],
        "causal_links": [
            {
                "cause": "missing AUTH_SECRET",
                "effect": "auth service crash",
                "confidence": 0.95,
                "evidence": "crash log: AUTH_SECRET is not set",
            },
            {
                "cause": "deploy-v2.3.1",
                "effect": "missing AUTH_SECRET",
                "confidence": 0.88,
                "evidence": "the v2.3.1 template dropped the variable",
            },
            {"cause": "Auth service crashed", "effect": "Health checks failed for auth-service", "confidence": 0.9},
            {
                "cause": "Health checks failed for auth-service",
                "effect": "Pager alert fired for auth-service",
                "confidence": 0.99,
            },
        ],
    }


def personal_knowledge() -> dict[str, Any]:
    return {
        "entities": [{"name": "Alice", "type": "Person", "properties": {"role": "Tech Lead", "team": "Platform"}}],
        "facts": [
            {"subject": "Alice", "predicate": "works_on", "object": "Auth Service", "valid_from": "2025-06-01"},
            {
                "subject": "Alice",
                "predicate": "works_on",
                "object": "Payment Service",
                "valid_from": "2024-01-01",
                "valid_to": "2025-05-31",
            },
        ],
    }


PROJECT_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def project_timeline() -> dict[str, Any]:
    """8 entities, 50 events (one every 3 days from 5 January 2026, each about one entity),
    2 causal links."""
    names = ["Apollo", "Design Doc", "Backend API", "Frontend", "Database", "CI Pipeline", "Beta", "Launch"]
    events = [
        {
            "description": f"Milestone {i:02d}: work on {names[i % 8]}",
            "occurred_at": iso(PROJECT_START + timedelta(days=3 * i)),
            "entities": [names[i % 8]],
            "find_entities": False,
        }
        for i in range(50)
    ]
    return {
        "entities": [{"name": n, "type": "Component"} for n in names],
        "events": events,
        "causal_links": [
            {"cause": "Milestone 03: work on Frontend", "effect": "Milestone 06: work on Beta", "confidence": 0.7},
            {"cause": "Milestone 06: work on Beta", "effect": "Milestone 07: work on Launch", "confidence": 0.8},
        ],
    }


def team_structure() -> dict[str, Any]:
    """20 entities (2 teams, 2 leads, 16 engineers), 5 events, no causal links."""
    teams = ["Platform", "Payments"]
    people = [f"Engineer {i:02d}" for i in range(16)]
    leads = ["Lead Platform", "Lead Payments"]
    links = [{"source": p, "target": teams[i % 2], "relationship": "member_of"} for i, p in enumerate(people)] + [
        {"source": lead, "target": team, "relationship": "leads"} for lead, team in zip(leads, teams, strict=True)
    ]
    links += [{"source": p, "target": leads[i % 2], "relationship": "reports_to"} for i, p in enumerate(people)]
    return {
        "entities": [{"name": t, "type": "Team"} for t in teams]
        + [{"name": p, "type": "Person"} for p in people + leads],
        "links": links,
        "events": [
            {"description": f"Team offsite {i} of Platform", "occurred_at": iso(PROJECT_START + timedelta(days=30 * i))}
            for i in range(5)
        ],
    }


def knowledge_evolution() -> dict[str, Any]:
    """10 entities, 30 events, 10 causal links, and a status that changes every month: the
    facts' windows are what the scenario is about."""
    statuses = [
        "proposed",
        "approved",
        "in design",
        "in development",
        "in review",
        "in testing",
        "staged",
        "released",
        "maintained",
        "deprecated",
    ]
    services = [f"service-{i}" for i in range(5)]
    entities = [{"name": s, "type": "Service"} for s in services] + [
        {"name": f"owner-{i}", "type": "Person"} for i in range(5)
    ]
    facts = [
        {
            "subject": "service-0",
            "predicate": "status",
            "object": status,
            "valid_from": f"2025-{month:02d}-01",
            "object_type": "Status",
        }
        for month, status in enumerate(statuses, start=1)
    ]
    events = [
        {
            "description": f"Change {i:02d} to service-{i % 5}",
            "occurred_at": f"2025-{1 + i % 10:02d}-{1 + i:02d}T12:00:00Z",
        }
        for i in range(30)
    ]
    causal = [
        {
            "cause": f"Change {i:02d} to service-{i % 5}",
            "effect": f"Change {i + 1:02d} to service-{(i + 1) % 5}",
            "confidence": 0.5 + i / 40,
        }
        for i in range(10)
    ]
    return {"entities": entities, "facts": facts, "events": events, "causal_links": causal, "statuses": statuses}


def incident_response() -> dict[str, Any]:
    """15 entities, 100 events, 20 causal links: five incidents, each a chain of four links from
    a root cause to a page; the other events are routine."""
    entities = [{"name": f"svc-{i}", "type": "Service"} for i in range(10)] + [
        {"name": f"responder-{i}", "type": "Person"} for i in range(5)
    ]
    start = datetime(2026, 2, 1, tzinfo=UTC)
    events = []
    causal = []
    for incident in range(5):
        chain = [f"Incident {incident} step {k}" for k in range(5)]
        for k, description in enumerate(chain):
            events.append(
                {
                    "description": description,
                    "occurred_at": iso(start + timedelta(days=incident, minutes=k)),
                    "entities": [f"svc-{incident}"],
                    "find_entities": False,
                }
            )
        for k in range(4):
            causal.append({"cause": chain[k], "effect": chain[k + 1], "confidence": 0.9})
    for i in range(75):
        events.append(
            {
                "description": f"Routine check {i:02d}",
                "occurred_at": iso(start + timedelta(hours=3 * i)),
                "entities": [f"svc-{i % 10}"],
                "find_entities": False,
            }
        )
    return {"entities": entities, "events": events, "causal_links": causal}
