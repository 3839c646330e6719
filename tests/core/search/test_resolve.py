"""memory's name resolver against embedded FalkorDB. FalkorDB's index on a text property holds
the stored texts stripped: a lookup of `beta` finds a stored `beta\n` (and one of `beta\n` finds
nothing), so what the index finds is compared again."""

from __future__ import annotations

import pytest

from polyg.core.search.resolve import Resolver
from polyg.runtime.app import Services
from tests.store.test_projects import indexes_operational

pytestmark = pytest.mark.anyio


async def stored_as_before_names_were_normalised(s: Services, project: str) -> None:
    """`beta\\n` (the older), `Beta`, and an event whose description ends in a space, written as
    a graph made before names were normalised holds them."""
    await s.ctx.write(
        project,
        "CREATE (:Entity {id: 'ent_ws', name: $spaced, type: 't', created_at: '2020-01-01T00:00:00Z'}), "
        "(:Entity {id: 'ent_case', name: 'Beta', type: 't', created_at: '2021-01-01T00:00:00Z'}), "
        "(:Event {id: 'evt_ws', description: 'deploy failed ', occurred_at: '2021-01-01T00:00:00Z', "
        "created_at: '2021-01-01T00:00:00Z'})",
        {"spaced": "beta\n"},
    )
    await indexes_operational(s, project)  # what the planner uses only once it is built


async def test_exact_means_exact_then_any_case(services: Services, project: str) -> None:
    await stored_as_before_names_were_normalised(services, project)
    resolver = Resolver(services.ctx)
    assert await resolver.exact(project, "beta", "entity") is None
    assert await resolver.exact(project, "Beta", "entity") == "ent_case"
    assert await resolver.exact(project, "deploy failed", "event") is None

    found = await resolver.node(project, "beta", kinds=("entity",))
    assert found is not None and (found.id, found.how) == ("ent_case", "case-insensitive")
    found = await resolver.node(project, "Beta", kinds=("entity",))
    assert found is not None and (found.id, found.how) == ("ent_case", "exact")


async def test_names_resolve_exactly_then_in_any_case(services: Services, project: str) -> None:
    await stored_as_before_names_were_normalised(services, project)
    resolver = Resolver(services.ctx)
    # `beta\n` itself is found by the case-insensitive pass, which compares every name.
    assert await resolver.entity_ids(project, ["beta", "BETA", "beta\n"]) == {
        "beta": "ent_case",
        "BETA": "ent_case",
        "beta\n": "ent_ws",
    }
