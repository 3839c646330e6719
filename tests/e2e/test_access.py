"""Access keys over HTTP: keys scoped to projects, read-only keys, per-key rate limits, /health.

One server (kg and memory toolsets) with keys from its config file, driven by the real MCP
client over HTTP with each key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from polyg.access import AccessPolicy
from polyg.config import load_settings
from polyg.errors import ConfigError
from polyg.http import check_bind
from tests.mcp_helpers import LOCAL_HTTP, HttpServer, authorized_client, call, fails, ok

pytestmark = pytest.mark.anyio

ADMIN = "admin-0123456789abcdef"  # every project, writes
TEAM = "team-0123456789abcdef"  # alpha and shared, writes
READER = "reader-0123456789abcdef"  # alpha, reads only; the config holds its SHA-256, not the key
BATCH = "batch-0123456789abcdef"  # every project, writes, 2 tool calls then one per 1000 s
LEGACY = "legacy-k3y"  # POLYG_API_KEY: every project, writes, no limit
SECRETS = (ADMIN, TEAM, READER, BATCH, LEGACY)

CONFIG = f"""
access_keys:
  - {{name: admin, key: {ADMIN}, projects: "*", write: true}}
  - {{name: team, key: {TEAM}, projects: [alpha, shared], write: true}}
  - name: reader
    key_sha256: {hashlib.sha256(READER.encode()).hexdigest()}
    projects: [alpha]
  - {{name: batch, key: {BATCH}, projects: "*", write: true, rate: 0.001, burst: 2}}
"""


@pytest.fixture(scope="module")
def server(servers_root: Path) -> Iterator[HttpServer]:
    root = servers_root / "access"
    root.mkdir(parents=True, exist_ok=True)
    config = root / "polyg.yaml"
    config.write_text(CONFIG)
    env = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_API_KEY": LEGACY}
    server = HttpServer(root, args=["--toolsets", "kg,memory", "--config", str(config)], env=env).start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def health(server: HttpServer, key: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = LOCAL_HTTP.get(f"{server.base_url}/health", headers=headers, timeout=10)
    assert response.status_code == 200
    return dict(response.json())


async def all_tools(server: HttpServer) -> list[Any]:
    async with authorized_client(server.url, ADMIN) as admin:
        return list((await admin.list_tools()).tools)


async def test_a_scoped_key_works_in_its_projects_and_nothing_else(server: HttpServer) -> None:
    async with authorized_client(server.url, TEAM) as team:
        made = (await ok(team, "create_entity", {"project_id": "alpha", "name": "a", "type": "t"}))["entity"]
        await ok(team, "create_entity", {"project_id": "shared", "name": "s", "type": "t"})
        assert (await ok(team, "get_entity", {"project_id": "alpha", "entity_id": made["id"]}))["entity"] == made
    async with authorized_client(server.url, ADMIN) as admin:
        secret = (await ok(admin, "create_entity", {"project_id": "beta", "name": "hidden", "type": "t"}))["entity"]
    projects = health(server, ADMIN)["projects"]

    async with authorized_client(server.url, TEAM) as team:
        # Every tool, reading or writing, in a project the key does not cover, and in the
        # server's default project when project_id is left out: 4003, whatever the arguments.
        for tool in await all_tools(server):
            for args in ({"project_id": "beta"}, {}, {"project_id": "beta", "entity_id": secret["id"]}):
                refused = await fails(team, tool.name, args, code=4003)
                assert "hidden" not in refused.text and secret["id"] not in refused.text
        denied = await fails(team, "create_entity", {"project_id": "gamma", "name": "x", "type": "t"}, code=4003)
        assert denied.message == "Access denied: key 'team' may not use project 'gamma'."
        # Not a project id at all: refused the same way, not validated against the store.
        await fails(team, "list_entities", {"project_id": 7}, code=4003)

    # Nothing was written: no project was made, beta holds only what the admin put there.
    assert health(server, ADMIN)["projects"] == projects
    async with authorized_client(server.url, ADMIN) as admin:
        assert [e["name"] for e in (await ok(admin, "list_entities", {"project_id": "beta"}))["entities"]] == ["hidden"]
        assert (await ok(admin, "list_entities", {"project_id": "gamma"}))["entities"] == []
        assert (await ok(admin, "list_entities", {}))["entities"] == []


async def test_a_read_only_key_reads_and_every_write_tool_is_refused(server: HttpServer) -> None:
    tools = await all_tools(server)
    writers = [t.name for t in tools if not (t.annotations and t.annotations.read_only_hint)]
    readers = [t.name for t in tools if t.annotations and t.annotations.read_only_hint]
    assert "create_entity" in writers and "remember" in writers and "list_entities" in readers
    async with authorized_client(server.url, ADMIN) as admin:
        await ok(admin, "create_entity", {"project_id": "alpha", "name": "readable", "type": "t"})
    async with authorized_client(server.url, READER) as reader:
        # Shown only the tools it may call.
        assert sorted(t.name for t in (await reader.list_tools()).tools) == sorted(readers)
        listed = await ok(reader, "list_entities", {"project_id": "alpha"})
        assert "readable" in [e["name"] for e in listed["entities"]]
        await ok(reader, "recall", {"project_id": "alpha", "query": "readable"})
        for tool in writers:
            refused = await fails(reader, tool, {"project_id": "alpha"}, code=4003)
            assert refused.message == f"Access denied: key 'reader' is read-only and {tool} writes."
        await fails(reader, "list_entities", {"project_id": "shared"}, code=4003)
    async with authorized_client(server.url, ADMIN) as admin:
        names = [e["name"] for e in (await ok(admin, "list_entities", {"project_id": "alpha"}))["entities"]]
        assert names.count("readable") == 1


async def test_the_single_api_key_still_opens_everything(server: HttpServer) -> None:
    async with authorized_client(server.url, LEGACY) as legacy:
        assert len((await legacy.list_tools()).tools) == len(await all_tools(server))
        for project in ("legacy-1", "beta"):
            await ok(legacy, "create_entity", {"project_id": project, "name": "l", "type": "t"})
        await ok(legacy, "create_entity", {"name": "in-default", "type": "t"})
    assert "store" in health(server, LEGACY)


async def test_a_rate_limited_key_gets_429_with_retry_after_and_others_go_on(server: HttpServer) -> None:
    async with authorized_client(server.url, BATCH) as batch:
        for _ in range(2):  # the burst
            await ok(batch, "list_entities", {"project_id": "alpha"})
        with pytest.raises(MCPError) as info:
            await call(batch, "list_entities", {"project_id": "alpha"})
        assert info.value.code == 4029
        assert info.value.message.startswith("Rate limit reached for key 'batch' (0.001 tool calls/s, burst 2)")
        assert "retry after" in info.value.message
        assert info.value.data["retryAfterSeconds"] > 900
        # The session lives on: a listing is not a tool call.
        assert (await batch.list_tools()).tools
        # Over HTTP: 429, Retry-After in whole seconds, the JSON-RPC error naming the request.
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(
                server.url,
                json={"jsonrpc": "2.0", "id": "r-9", "method": "tools/call", "params": {"name": "list_entities"}},
                headers={
                    "Authorization": f"Bearer {BATCH}",
                    "Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json",
                },
                timeout=10,
            )
        assert response.status_code == 429
        assert 900 < int(response.headers["retry-after"]) <= 1000
        body = response.json()
        assert body["id"] == "r-9" and body["error"]["code"] == 4029
        # The graph view's JSON views run tools too: they take from the same bucket.
        async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {BATCH}"}) as http:
            view = await http.get(f"{server.base_url}/ui/api/p/alpha/search?q=x")
        assert view.status_code == 429 and int(view.headers["retry-after"]) > 900
        assert view.json()["code"] == 4029 and "retry after" in view.json()["error"]
    # Another key's bucket is its own.
    async with authorized_client(server.url, ADMIN) as admin:
        for _ in range(5):
            await ok(admin, "list_entities", {"project_id": "alpha"})


def test_health_shows_the_store_only_to_a_key_to_every_project(server: HttpServer) -> None:
    for key in (None, "wrong-key-0123456789", TEAM, READER):
        assert health(server, key) == {"status": "ok"}, key
    full = health(server, ADMIN)
    assert full["store"] == f"embedded {server.data_dir}"
    assert isinstance(full["projects"], int)


def test_mcp_needs_an_accepted_key(server: HttpServer) -> None:
    for authorization in (None, "Bearer wrong-key-0123456789", f"Bearer {hashlib.sha256(READER.encode()).hexdigest()}"):
        headers = {"Authorization": authorization} if authorization else {}
        response = LOCAL_HTTP.post(server.url, json={}, headers=headers, timeout=10)
        assert response.status_code == 401, authorization


async def test_the_graph_view_shows_a_key_its_projects_only(server: HttpServer) -> None:
    async with authorized_client(server.url, ADMIN) as admin:
        for project in ("alpha", "beta"):
            await ok(admin, "create_entity", {"project_id": project, "name": f"seen-{project}", "type": "t"})

    async def get(path: str, key: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {key}"}) as http:
            return await http.get(f"{server.base_url}{path}")

    everything = (await get("/ui/api/projects", ADMIN)).json()["projects"]
    assert {"alpha", "beta"} <= set(everything)
    assert (await get("/ui/api/projects", TEAM)).json()["projects"] == sorted({"alpha", "shared"} & set(everything))
    assert "seen-alpha" in (await get("/ui/api/p/alpha/search?q=seen", TEAM)).text
    for path in ("/ui/api/p/beta/search?q=seen", "/ui/api/p/gamma/search?q=seen", "/ui/p/beta"):
        refused = await get(path, TEAM)
        assert refused.status_code == 403, (path, refused.text)
        assert "seen-beta" not in refused.text and "may not use project" in refused.text
    assert (await get("/ui/api/p/beta/search?q=seen", ADMIN)).status_code == 200


async def test_resources_list_read_and_complete_a_keys_projects_only(server: HttpServer) -> None:
    async with authorized_client(server.url, ADMIN) as admin:
        for project in ("alpha", "beta"):
            await ok(admin, "create_entity", {"project_id": project, "name": f"res-{project}", "type": "t"})
        everything = [r.uri for r in (await admin.list_resources()).resources]
        assert any(uri.startswith("polyg://beta/") for uri in everything)
    entity_ref = types.ResourceTemplateReference(uri="polyg://{project}/entity/{id}")
    async with authorized_client(server.url, TEAM) as team:
        listed = [r.uri for r in (await team.list_resources()).resources]
        projects = {uri.removeprefix("polyg://").split("/")[0] for uri in listed if uri.startswith("polyg://")}
        projects -= {"tools"}
        assert projects and projects <= {"alpha", "shared"}, listed
        assert "res-alpha" in (await team.read_resource("polyg://alpha/summary")).contents[0].text
        for uri in ("polyg://beta/summary", "polyg://beta/export/json", "polyg://gamma/entity/res-beta"):
            with pytest.raises(MCPError) as info:
                await team.read_resource(uri)
            assert info.value.code == 4003 and "may not use project" in info.value.message, uri
            assert "res-beta" not in info.value.message or uri.endswith("res-beta")
        completed = await team.complete(entity_ref, {"name": "project", "value": ""})
        assert set(completed.completion.values) <= {"alpha", "shared"} and "alpha" in completed.completion.values
        hidden = await team.complete(entity_ref, {"name": "id", "value": "res"}, {"project": "beta"})
        assert hidden.completion.values == []
        shown = await team.complete(entity_ref, {"name": "id", "value": "res"}, {"project": "alpha"})
        assert "res-alpha" in shown.completion.values


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed:mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_key_subscribes_to_its_projects_resources_only(server: HttpServer) -> None:
    # The handshake era's request (the 2026 protocol replaced it): a legacy connection.
    async with dataclasses.replace(authorized_client(server.url, TEAM), mode="legacy") as team:
        await team.subscribe_resource("polyg://alpha/summary")
        with pytest.raises(MCPError) as info:
            await team.subscribe_resource("polyg://beta/entity/res-beta")
        assert info.value.code == 4003 and "may not use project" in info.value.message


def test_no_key_is_in_any_log_line_or_output(server: HttpServer) -> None:
    """Run last in this module: by then every key has been used."""
    logs = "".join(path.read_text() for path in (server.root / "logs").glob("polyg.log*"))
    output = server.stderr_text()
    assert '"key_name": "team"' in logs and '"key_name": "reader"' in logs
    assert '"rate limited"' in logs
    for secret in SECRETS:
        assert secret not in logs and secret not in output


# --- configuration ------------------------------------------------------------------------------


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the arguments only: no developer's config file or POLYG_* variable."""
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)  # spec 001's config/app.yaml is read from the working directory


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        ([{"name": "a", "key": "short", "projects": "*"}], "at least 16 characters"),
        ([{"name": "a", "projects": "*"}], "give either key or key_sha256"),
        ([{"name": "a", "key": "k" * 16, "key_sha256": "0" * 64, "projects": "*"}], "either key or key_sha256"),
        ([{"name": "a", "key": "k" * 16, "projects": []}], "at least one project"),
        ([{"name": "a", "key": "k" * 16, "projects": ["no spaces"]}], "Invalid project_id"),
        ([{"name": "a", "key": "k" * 16, "projects": "all"}], "projects"),
        ([{"name": "a", "key": "k" * 16, "projects": "*", "burst": 3}], "burst needs a rate"),
        ([{"name": "a", "key": "k" * 16, "projects": "*", "rate": 0}], "rate"),
        ([{"name": "a", "key": "k" * 16, "projects": "*", "admin": True}], "admin"),
        ([{"name": "a", "key": "k" * 16, "projects": "*"}, {"name": "a", "key": "j" * 16, "projects": "*"}], "unique"),
        ([{"name": "a", "key": "k" * 16, "projects": "*"}, {"name": "b", "key": "k" * 16, "projects": "*"}], "same"),
    ],
)
@pytest.mark.usefixtures("no_user_config")
def test_invalid_access_keys_are_config_errors(keys: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(access_keys=keys)
    assert problem in info.value.message
    assert "k" * 16 not in info.value.message and "j" * 16 not in info.value.message


@pytest.mark.usefixtures("no_user_config")
def test_an_access_key_equal_to_the_api_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="same secret"):
        load_settings(api_key="k" * 16, access_keys=[{"name": "a", "key": "k" * 16, "projects": "*"}])


@pytest.mark.usefixtures("no_user_config")
def test_access_keys_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYG_ACCESS_KEYS", '[{"name": "ci", "key": "0123456789abcdefg", "projects": ["p"]}]')
    [key] = load_settings().access_keys
    assert (key.name, key.projects, key.write) == ("ci", ["p"], False)
    assert "0123456789abcdefg" not in repr(key)


@pytest.mark.usefixtures("no_user_config")
def test_access_keys_alone_allow_a_public_bind() -> None:
    settings = load_settings(access_keys=[{"name": "a", "key": "k" * 16, "projects": ["p"]}])
    assert AccessPolicy(settings.api_key, settings.access_keys).keyed
    check_bind("0.0.0.0", keyed=True)
    with pytest.raises(ConfigError, match="access_keys"):
        check_bind("0.0.0.0", keyed=False)
