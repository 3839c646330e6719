"""Entity creation is atomic (issue 24, issue 25 item 4): tools that create an entity when its
name is unknown, called at once with one new name, make one entity of that name, whether the
calls share one MCP session or come from two server processes on one data directory.

Each round uses a fresh name, so a round in which the writers happen not to overlap still
counts for the others.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.mcp_helpers import HttpServer, ok, open_log, stdio_client_for

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_database_left_behind")]

HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
TOOLSETS = ("--toolsets", "kg,memory")
ROUNDS = 4
# Surnames the extraction takes for a person's name (capitalised words), none a common word.
NAMES = (
    "Quillon Vasquez",
    "Ottoline Brandt",
    "Severin Okafor",
    "Marisol Haddad",
    "Tobiah Lindqvist",
    "Perpetua Osei",
    "Casimir Vantongeren",
    "Wilhelmina Achterberg",
)


def writers(project: str, name: str) -> list[tuple[str, dict[str, Any]]]:
    """The four memory tools that create an unknown name, each naming `name`."""
    at = {"project_id": project}
    return [
        ("remember", {"content": f"{name} works on the Ledger Service.", **at}),
        ("add_fact", {"subject": name, "predicate": "works_on", "object": "Ledger Service", **at}),
        ("add_entity", {"name": name, "entity_type": "person", **at}),
        (
            "link_entities",
            {"source": name, "target": "Ledger Service", "relationship": "maintains", "create_missing": True, **at},
        ),
    ]


def ledger(project: str) -> dict[str, Any]:
    """The entity every writer's other end names: it exists before the race."""
    return {"project_id": project, "name": "Ledger Service", "entity_type": "service"}


async def entities_named(client: Client, project: str, name: str) -> list[dict[str, Any]]:
    """Every entity whose name is `name` in any case (the memory tools' name resolution)."""
    listed = await ok(client, "list_entities", {"project_id": project, "name_contains": name, "limit": 1000})
    return [e for e in listed["entities"] if e["name"].lower() == name.lower()]


@pytest.fixture(scope="module")
def http_server(servers_root: Path) -> Iterator[HttpServer]:
    """The module's HTTP server: the server of the test of many HTTP sessions, and one of the
    two processes of the two-process test. Stopped last, it shuts the database down."""
    with HttpServer(servers_root / "entity-create-race-http", args=list(TOOLSETS), env=HASHING) as server:
        server.wait_ready()
        yield server
    # The stdio server detached cleanly, and this one, the last user, shut the database down.
    assert not server.left_embedded_behind


@pytest.fixture(scope="module")
async def session(servers_root: Path, http_server: HttpServer) -> AsyncIterator[Client]:
    """One stdio server for the tests whose calls share one MCP session (a kg,memory server
    start costs seconds of CPU, its first `remember` another second); each test works in a
    project of its own. It runs on the HTTP server's data directory (through a link, with logs
    of its own): the other process of the two-process test. It ends first, and reaps nothing:
    the database is still the HTTP server's, whose stop reaps what a failure left behind."""
    root = servers_root / "entity-create-race"
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").symlink_to(http_server.data_dir)
    with open_log(root / "stderr.log") as errlog:
        async with stdio_client_for(root, *TOOLSETS, errlog=errlog, **HASHING) as client:
            yield client


async def run_all(calls: list[tuple[Client, str, dict[str, Any]]]) -> None:
    async with anyio.create_task_group() as tg:
        for client, tool, args in calls:
            tg.start_soon(ok, client, tool, args)


async def test_four_tools_at_once_on_one_session_create_one_entity(session: Client) -> None:
    client = session
    project = "race"
    await ok(client, "add_entity", ledger(project))
    for i, name in enumerate(NAMES):
        # Each round starts the writers in another order: which one reaches the
        # store first varies with it.
        calls = writers(project, name)
        await run_all([(client, tool, args) for tool, args in calls[i % 4 :] + calls[: i % 4]])
    counts = {name: len(await entities_named(client, project, name)) for name in NAMES}
    assert counts == dict.fromkeys(NAMES, 1)
    assert len(await entities_named(client, project, "Ledger Service")) == 1


async def test_two_processes_on_one_data_directory_create_one_entity(session: Client, http_server: HttpServer) -> None:
    # The module's two server processes on one data directory: the stdio one and the HTTP one
    # (whose calls below all go through one HTTP session).
    a = session
    async with Client(http_server.url) as b:
        project = "race2"
        await ok(a, "add_entity", ledger(project))
        for name in NAMES[:ROUNDS]:
            # Each process runs every writer: 8 calls at once, 4 per process.
            await run_all([(client, tool, args) for client in (a, b) for tool, args in writers(project, name)])
        for client in (a, b):
            counts = {name: len(await entities_named(client, project, name)) for name in NAMES[:ROUNDS]}
            assert counts == dict.fromkeys(NAMES[:ROUNDS], 1)


async def test_links_of_one_pair_at_once_make_one_relationship(session: Client) -> None:
    client = session
    project = "links"
    link = {"project_id": project, "target": "Ledger Service", "create_missing": True}
    results: list[dict[str, Any]] = []

    async def one(source: str, relationship: str) -> None:
        results.append(await ok(client, "link_entities", {**link, "source": source, "relationship": relationship}))

    for i, name in enumerate(NAMES[:ROUNDS]):
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one, name, f"audits {i}")
        got = await ok(client, "get_entity", {"project_id": project, "name": name})
        texts = [r["relationship"] for r in got["relationships"]]
        assert texts == [f"audits {i}"], texts
    assert sum(r["created"] for r in results) == ROUNDS
    assert len({r["relationship"]["id"] for r in results}) == ROUNDS
    # Every name was new once: each call that made it says so, and only those.
    made = [name for r in results for name in r["entities_created"]]
    assert sorted(made) == sorted([*NAMES[:ROUNDS], "Ledger Service"])


async def test_concepts_of_one_name_at_once_make_one_concept(session: Client) -> None:
    client = session
    project = "concepts"
    results: list[dict[str, Any]] = []

    async def one(name: str) -> None:
        results.append(await ok(client, "add_concept", {"project_id": project, "name": name}))

    for name in ("Eventual consistency", "Backpressure", "Idempotency", "Quorum reads"):
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one, name)
        assert len(await entities_named(client, project, name)) == 1
    assert sum(r["created"] for r in results) == 4
    assert len({r["concept"]["id"] for r in results}) == 4


async def test_http_clients_at_once_create_one_entity(http_server: HttpServer) -> None:
    server = http_server
    project = "race_http"
    async with Client(server.url) as first:
        await ok(first, "add_entity", ledger(project))
    for name in NAMES[:ROUNDS]:
        async with anyio.create_task_group() as tg:
            for tool, args in writers(project, name):
                tg.start_soon(call_alone, server.url, tool, args)
    async with Client(server.url) as client:
        counts = {name: len(await entities_named(client, project, name)) for name in NAMES[:ROUNDS]}
    assert counts == dict.fromkeys(NAMES[:ROUNDS], 1)


async def call_alone(url: str, tool: str, args: dict[str, Any]) -> None:
    """One call from a client of its own (its own HTTP session)."""
    async with Client(url) as client:
        await ok(client, tool, args)
