"""A `polyg serve --toolsets memory` over stdio for the memory tests, and the spec's scenarios as data.

One server for the whole session (one per pytest-xdist worker), shared by every module that
asks for `memory_server`: each test works in its own project, passed as `project_id` by
`Memory.ok` / `Memory.fails`. A server costs ~2 s of CPU to start and ~1 s more to load the
English pipeline at its first remember; a server per module started 11 of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_helpers import KG, Result, kg_session


@dataclass
class Memory:
    """The connected client, bound to one project."""

    server: KG
    project: str

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        return await self.server.ok(tool, {"project_id": self.project, **args})

    async def fails(self, tool: str, *, code: int, **args: Any) -> Result:
        return await self.server.fails(tool, {"project_id": self.project, **args}, code=code)

    async def stats(self) -> dict[str, Any]:
        """The project's figures, less the vectors still queued (they change on their own)."""
        stats = await self.ok("get_statistics")
        assert stats["graphs"]["semantic"].pop("vectors_pending") >= 0
        return stats


# Memories a user tells, then asks about, as a user would read the answers (test_memory_names,
# test_memory_time_window): when they were told and when asked, and what Sam told that week.
TOLD = "2026-07-01T12:00:00Z"
ASKED = "2026-07-02T12:00:00Z"
SAMS_WEEK = [
    "Lena Fischer leads the platform team at Orbit Labs.",
    "Lena moved to Vienna with her husband Marco in April 2026.",
    "Marco teaches physics at the Danube Technical College.",
    "The search service crashed because its cache filled the disk.",
]


async def tell(mem: Memory, memories: list[str]) -> None:
    for content in memories:
        await mem.ok("remember", content=content, context="Sam", reference_time=TOLD)


async def ask(mem: Memory, query: str) -> dict[str, Any]:
    return await mem.ok("recall", query=query, reference_time=ASKED, include_reasoning=True)


@pytest.fixture(scope="session")
async def memory_server(servers_root: Path) -> AsyncIterator[KG]:
    root = servers_root / "memory-stdio"
    async with kg_session("stdio", root, "--toolsets", "memory") as server:
        yield server


@pytest.fixture
def mem(memory_server: KG, project: str) -> Memory:
    return Memory(memory_server, project)


async def seed(mem: Memory, scenario: dict[str, Any]) -> dict[str, Any]:
    """Write a scenario (entities, events, facts, causal links, links) through the tools; the
    results of each kind, in order."""
    out: dict[str, list[dict[str, Any]]] = {"entities": [], "events": [], "facts": [], "causal": [], "links": []}
    for entity in scenario.get("entities", []):
        out["entities"].append(
            await mem.ok(
                "add_entity",
                name=entity["name"],
                entity_type=entity["type"],
                properties=entity.get("properties"),
            )
        )
    for link in scenario.get("links", []):
        out["links"].append(await mem.ok("link_entities", **link))
    for event in scenario.get("events", []):
        out["events"].append(await mem.ok("add_event", **event))
    for fact in scenario.get("facts", []):
        out["facts"].append(await mem.ok("add_fact", **fact))
    for link in scenario.get("causal_links", []):
        out["causal"].append(await mem.ok("add_causal_link", **link))
    return out
