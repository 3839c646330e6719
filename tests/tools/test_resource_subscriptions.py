"""Resource subscriptions through the real MCP client, over stdio and HTTP: a session subscribed
to an entity page is sent `notifications/resources/updated` after a write to its project; after
unsubscribing, or in a session that did not subscribe, nothing arrives.

"Nothing arrives" is checked without waiting on a clock: notifications on one session's channel
arrive in the order they were sent, so once a later notification (of a marker subscription) has
arrived, one the server had sent before it would have arrived first.

One HTTP server serves the module's HTTP tests, each in sessions of its own (a session's
subscriptions end with it: the last test checks that); the stdio test has its server."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg
from polyg.server import build_server
from polyg.tools.resources import Subscriptions
from tests.mcp_helpers import HttpServer, ok, open_log, reap_embedded, stdio_client_for

pytestmark = [
    pytest.mark.anyio,
    # The SDK marks these requests deprecated: the 2026 protocol replaced them; the handshake
    # era's clients (and the conformance suite) still send them.
    pytest.mark.filterwarnings(
        "ignore:resources/(un)?subscribe is removed:mcp.shared.exceptions.MCPDeprecationWarning"
    ),
]

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
PROJECT = "sub-proj"
OTHER = "sub-other"
ARGS = ("--project", PROJECT, "--toolsets", "kg")
# A deadline for a notification that must come, so a missing one fails instead of hanging.
ARRIVAL_DEADLINE_S = 60


class Updates:
    """The URIs of the `notifications/resources/updated` a client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self._arrived.set()
            self._arrived = anyio.Event()

    async def until(self, uri: str, times: int = 1) -> list[str]:
        """Wait for `uri` to have arrived `times` times; everything received so far."""
        with anyio.fail_after(ARRIVAL_DEADLINE_S):
            while self.uris.count(uri) < times:
                await self._arrived.wait()
        return self.uris


@contextlib.asynccontextmanager
async def stdio_client(root: Path, updates: Updates) -> AsyncIterator[Client]:
    with open_log(root / "stderr.log") as errlog:
        spawning = stdio_client_for(root, *ARGS, errlog=errlog, **FAST)
        client = dataclasses.replace(spawning, message_handler=updates, mode="legacy")
        try:
            async with client:
                yield client
        finally:
            reap_embedded(root / "data")


@contextlib.asynccontextmanager
async def http_server(root: Path) -> AsyncIterator[HttpServer]:
    server = HttpServer(root, args=list(ARGS), env=FAST).start()
    try:
        await anyio.to_thread.run_sync(server.wait_ready)
        yield server
    finally:
        await anyio.to_thread.run_sync(server.stop)


@pytest.fixture(scope="module")
async def shared_http(servers_root: Path) -> AsyncIterator[HttpServer]:
    async with http_server(servers_root / "subscriptions-http") as server:
        yield server


def http_client(server: HttpServer, updates: Updates) -> Client:
    # The subscribe requests are the handshake era's (the 2026 protocol replaced them).
    return Client(server.url, message_handler=updates, mode="legacy")


async def make_entity(client: Client, project: str = PROJECT) -> str:
    made = await ok(client, "create_entity", {"name": "Ada Lovelace", "type": "person", "project_id": project})
    return str(made["entity"]["id"])


async def check_subscribe_then_unsubscribe(client: Client, updates: Updates) -> str:
    """Subscribe, write, unsubscribe, write; the entity page's URI."""
    entity = await make_entity(client)
    page = f"polyg://{PROJECT}/entity/{entity}"
    assert updates.uris == []  # no subscription yet: the write told nobody
    await client.subscribe_resource(page)
    await ok(client, "add_observation", {"entity_id": entity, "observation": "wrote the first program"})
    assert await updates.until(page) == [page]

    await client.unsubscribe_resource(page)
    summary = f"polyg://{PROJECT}/summary"
    await ok(client, "add_observation", {"entity_id": entity, "observation": "met Babbage"})
    await client.subscribe_resource(summary)  # the marker: its update comes after any stray one
    await ok(client, "add_observation", {"entity_id": entity, "observation": "translated Menabrea"})
    assert await updates.until(summary) == [page, summary]
    return page


async def test_subscription_over_stdio(tmp_path: Path) -> None:
    updates = Updates()
    async with stdio_client(tmp_path, updates) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe is True
        await check_subscribe_then_unsubscribe(client, updates)


async def test_subscriptions_over_http_belong_to_their_session(shared_http: HttpServer) -> None:
    mine, theirs = Updates(), Updates()
    async with http_client(shared_http, mine) as client, http_client(shared_http, theirs) as other:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe is True
        # The other session subscribes to another project's summary only.
        marker = f"polyg://{OTHER}/summary"
        await other.subscribe_resource(marker)
        page = await check_subscribe_then_unsubscribe(client, mine)
        # A write by the first session to the other's project reaches the other session
        # (on its standalone stream), after any of PROJECT's updates it was wrongly sent.
        await make_entity(client, OTHER)
        assert await theirs.until(marker) == [marker]
        # And a write by the other session reaches the first, still subscribed to the summary.
        summary = f"polyg://{PROJECT}/summary"
        await make_entity(other)
        assert await mine.until(summary, times=2) == [page, summary, summary]


async def test_a_read_does_not_notify_and_a_read_only_call_is_no_write(shared_http: HttpServer) -> None:
    updates = Updates()
    async with http_client(shared_http, updates) as client:
        entity = await make_entity(client)
        page = f"polyg://{PROJECT}/entity/{entity}"
        await client.subscribe_resource(page)
        await client.read_resource(page)
        await ok(client, "get_entity", {"entity_id": entity})
        await ok(client, "add_observation", {"entity_id": entity, "observation": "a note"})
        assert await updates.until(page) == [page]  # one update: the write's


async def test_subscribe_refuses_a_malformed_uri_and_accepts_any_other_scheme(shared_http: HttpServer) -> None:
    updates = Updates()
    async with http_client(shared_http, updates) as client:
        for bad in ("no scheme here", "polyg://sub-proj/nothing/here", ""):
            with pytest.raises(MCPError) as raised:
                await client.subscribe_resource(bad)
            assert raised.value.error.code == types.INVALID_PARAMS, bad
        # A URI of another scheme is accepted (the spec does not ask that the resource exist);
        # polyg never updates it. Unsubscribing from what was never subscribed is no error.
        await client.subscribe_resource("test://watched-resource")
        await client.unsubscribe_resource("polyg://sub-proj/summary")


async def test_a_subscription_ends_with_its_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, to see the server's table: a session's subscriptions are gone once it closes."""
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    core = Polyg(load_settings(None, data_dir=tmp_path / "data"), embedder=create_embedder("hashing"))
    server, dispatcher = build_server(core)
    (listener,) = dispatcher.write_listeners
    subscriptions = listener.__self__  # type: ignore[attr-defined]
    assert isinstance(subscriptions, Subscriptions)
    async with Client(server, mode="legacy") as first, Client(server, mode="legacy") as second:
        await first.subscribe_resource(f"polyg://{PROJECT}/summary")
        await first.subscribe_resource(f"polyg://{PROJECT}/entity/ada")
        await second.subscribe_resource(f"polyg://{PROJECT}/summary")
        assert subscriptions.count() == 3
        await first.unsubscribe_resource(f"polyg://{PROJECT}/entity/ada")
        assert subscriptions.count() == 2
    assert subscriptions.count() == 0
