"""The Streamable HTTP transport: /health, the bearer API key, the Origin guard, bind rules."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.falkor_server import FalkorServer
from tests.mcp_helpers import (
    LOCAL_HTTP,
    HttpServer,
    authorized_client,
    call,
    free_port,
    ok,
    polyg_command,
    serve_args,
    server_env,
)

pytestmark = pytest.mark.anyio

API_KEY = "k3y-for-tests"
# The embedder does not matter here; the hashing one starts instantly.
FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def post_initialize(server: HttpServer, **headers: str) -> httpx.Response:
    return LOCAL_HTTP.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)


def initialized(response: httpx.Response) -> bool:
    """Whether the response answers the initialize request (JSON or one SSE event)."""
    return response.status_code == 200 and '"serverInfo"' in response.text and '"polyg"' in response.text


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def keyed_server(servers_root: Path) -> Iterator[HttpServer]:
    """A loopback server that requires `Authorization: Bearer API_KEY` (given as a flag)."""
    with HttpServer(servers_root / "http-keyed", args=["--toolsets", "kg", "--api-key", API_KEY], env=FAST) as server:
        server.wait_ready()
        yield server
    assert not server.left_embedded_behind


@pytest.fixture(scope="module")
def open_server_and_first_health(servers_root: Path) -> Iterator[tuple[HttpServer, dict[str, Any]]]:
    """A loopback server without an API key, and the first /health answer it gave (while it was
    starting, most often). Only the /health test creates projects on it: it counts them."""
    server = HttpServer(servers_root / "http-open", args=["--toolsets", "kg"], env=FAST)
    server.start()
    try:
        first = server.wait_listening()
        server.wait_ready()
        yield server, first
    finally:
        server.stop()
    # Stopped with SIGTERM, polyg shut its embedded database down itself.
    assert not server.left_embedded_behind


@pytest.fixture(scope="module")
def open_server(open_server_and_first_health: tuple[HttpServer, dict[str, Any]]) -> HttpServer:
    return open_server_and_first_health[0]


# --- /health -------------------------------------------------------------------------------


async def test_health_reports_status_store_and_projects_with_data(
    open_server_and_first_health: tuple[HttpServer, dict[str, Any]],
) -> None:
    # The module's open server (its fixture checks that stopping it left no database behind).
    server, first = open_server_and_first_health
    store = f"embedded {server.data_dir}"
    assert first["status"] in ("loading", "ok"), first
    assert first["store"] == store
    if first["status"] == "loading":
        assert set(first) == {"status", "store"}
    assert server.wait_ready() == {"status": "ok", "store": store, "projects": 0}
    response = server.health()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"

    async with Client(server.url) as client:
        await ok(client, "create_entity", {"project_id": "p1", "name": "a", "type": "t"})
        assert server.health().json() == {"status": "ok", "store": store, "projects": 1}
        await ok(client, "create_entity", {"project_id": "p2", "name": "b", "type": "t"})
        await ok(client, "create_entity", {"project_id": "p2", "name": "c", "type": "t"})
        assert server.health().json()["projects"] == 2
        # Reads, and writes that are refused, leave no project behind.
        await ok(client, "list_entities", {"project_id": "p3"})
        for tool, args in (
            ("get_entity", {"entity_id": "ent_x"}),
            ("create_entity", {"name": "orphan", "type": "t", "parentId": "ent_x"}),
            ("create_relationship", {"source_id": "ent_x", "target_id": "ent_y", "type": "t"}),
            ("delete_entity", {"entity_id": "ent_x"}),
            ("delete_relationship", {"relationship_id": "rel_x"}),
            ("delete_observation", {"entity_id": "ent_x", "observation_id": "obs_x"}),
            ("add_observation", {"entity_id": "ent_x", "observation": "o"}),
            ("update_entity_description", {"entity_id": "ent_x", "description": "d"}),
            ("create_entity", {"name": " ", "type": "t"}),
        ):
            result = await call(client, tool, {"project_id": "p4", **args})
            assert result.is_error, (tool, result)
        assert server.health().json()["projects"] == 2


async def test_health_needs_no_key(keyed_server: HttpServer) -> None:
    response = keyed_server.health()
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


# --- API key -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Bearer {API_KEY}x", f"Bearer {API_KEY[:-1]}", API_KEY, f"Basic {API_KEY}", "Bearer"],
)
def test_mcp_without_the_right_key_is_401(keyed_server: HttpServer, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = post_initialize(keyed_server, **headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json() == {"error": "Missing or invalid API key"}
    # GET and DELETE on /mcp are guarded too.
    for method in ("GET", "DELETE"):
        assert LOCAL_HTTP.request(method, keyed_server.url, headers=headers, timeout=10).status_code == 401


def test_right_key_is_accepted(keyed_server: HttpServer) -> None:
    assert initialized(post_initialize(keyed_server, Authorization=f"Bearer {API_KEY}"))


async def test_client_with_key_works(keyed_server: HttpServer) -> None:
    async with authorized_client(keyed_server.url, API_KEY) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "create_entity" in tools and len(tools) == 11
        entity = (await ok(client, "create_entity", {"project_id": "keyed", "name": "n", "type": "t"}))["entity"]
        got = await ok(client, "get_entity", {"project_id": "keyed", "entity_id": entity["id"]})
        assert got == {"entity": entity}


async def test_client_without_key_fails(keyed_server: HttpServer) -> None:
    with pytest.raises(BaseExceptionGroup) as info:
        async with Client(keyed_server.url) as client:
            await client.list_tools()
    errors = list(leaves(info.value))
    assert errors and all(isinstance(e, MCPError) for e in errors), errors


def leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


# --- Origin --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://evil.example", "null", "http://127.0.0.1.evil.example", "file://"]
)
def test_foreign_origin_is_403(open_server: HttpServer, keyed_server: HttpServer, origin: str) -> None:
    response = post_initialize(open_server, Origin=origin)
    assert response.status_code == 403
    assert response.json() == {"error": "Origin not allowed"}
    # The Origin check comes first: the right key does not help a foreign page.
    keyed = post_initialize(keyed_server, Origin=origin, Authorization=f"Bearer {API_KEY}")
    assert keyed.status_code == 403


def test_local_origins_are_accepted(open_server: HttpServer, keyed_server: HttpServer) -> None:
    port = open_server.port
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://127.0.0.1:{port}/"):
        assert initialized(post_initialize(open_server, Origin=origin)), origin
    assert initialized(post_initialize(open_server))  # no Origin at all: not a browser
    keyed = post_initialize(
        keyed_server, Origin=f"http://127.0.0.1:{keyed_server.port}", Authorization=f"Bearer {API_KEY}"
    )
    assert initialized(keyed)


def test_foreign_host_header_is_refused_on_loopback(open_server: HttpServer) -> None:
    """DNS rebinding: a foreign name resolving to 127.0.0.1 still carries its own Host header."""
    response = post_initialize(open_server, Host="evil.example")
    assert response.status_code in (400, 403, 421)
    assert not initialized(response)


async def test_mcp_client_without_key_on_open_server(open_server: HttpServer) -> None:
    async with Client(open_server.url) as client:
        assert len((await client.list_tools()).tools) == 11
        listed = await ok(client, "list_entities", {"project_id": "nothing-here"})
        assert listed == {"entities": []}


# --- bind address --------------------------------------------------------------------------


def run_polyg(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*polyg_command(), *serve_args(root / "data", *args)],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(root, **FAST, **(env or {})),
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--host", "0.0.0.0"], {}),
        ([], {"POLYG_HOST": "0.0.0.0"}),
        (["--host", "::"], {}),
    ],
    ids=["flag", "env", "ipv6-any"],
)
def test_public_bind_without_key_refuses_to_start(servers_root: Path, args: list[str], env: dict[str, str]) -> None:
    port = free_port()
    root = servers_root / f"http-public-nokey-{port}"
    done = run_polyg(root, "--transport", "http", "--port", str(port), *args, env=env)
    assert done.returncode != 0
    assert "without an API key" in done.stderr, done.stderr
    assert "--api-key" in done.stderr and "POLYG_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not port_is_open(port)
    # It failed before opening anything: no database was started.
    assert not (root / "data" / "db").exists()


@pytest.mark.parametrize("how", ["flag", "env"])
async def test_public_bind_with_key_serves(servers_root: Path, how: str) -> None:
    args: list[Any] = ["--toolsets", "kg"]
    env = dict(FAST)
    if how == "flag":
        args += ["--api-key", API_KEY]
    else:
        env["POLYG_API_KEY"] = API_KEY
    server = HttpServer(servers_root / f"http-public-{how}", args=args, env=env, host="0.0.0.0").start()
    try:
        body = server.wait_ready()
        assert body["status"] == "ok"
        assert post_initialize(server).status_code == 401
        assert (
            post_initialize(server, Origin="http://evil.example", Authorization=f"Bearer {API_KEY}").status_code == 403
        )
        async with authorized_client(server.url, API_KEY) as client:
            entity = (await ok(client, "create_entity", {"name": "public", "type": "t"}))["entity"]
            assert (await ok(client, "get_entity", {"entity_id": entity["id"]}))["entity"] == entity
    finally:
        server.stop()
    assert not server.left_embedded_behind


# --- allowed_origins governs, on the default loopback bind too ------------------------------


@pytest.mark.parametrize("how", ["env", "config"])
def test_an_allowed_foreign_origin_gets_through_and_others_do_not(servers_root: Path, how: str) -> None:
    root = servers_root / f"http-origins-{how}"
    args, env = ["--toolsets", "kg"], dict(FAST)
    if how == "env":
        env["POLYG_ALLOWED_ORIGINS"] = "https://app.example,http://tool.example:3000"
    else:
        root.mkdir(parents=True, exist_ok=True)
        config = root / "polyg.yaml"
        config.write_text("allowed_origins: [https://app.example, 'http://tool.example:3000']\n")
        args += ["--config", str(config)]
    server = HttpServer(root, args=args, env=env).start()
    try:
        server.wait_ready()
        for allowed in ("https://app.example", "http://tool.example:3000"):
            assert initialized(post_initialize(server, Origin=allowed)), allowed
        for refused in ("https://evil.example", "http://app.example", "https://app.example:8443", "null"):
            response = post_initialize(server, Origin=refused)
            assert response.status_code == 403, refused
            assert response.json() == {"error": "Origin not allowed"}
        # An allowed Origin does not open the door to a foreign Host (DNS rebinding).
        rebound = post_initialize(server, Origin="https://app.example", Host="app.example")
        assert rebound.status_code == 421
    finally:
        server.stop()


def test_a_foreign_host_is_refused_on_loopback_for_health_too(open_server: HttpServer) -> None:
    response = LOCAL_HTTP.get(f"{open_server.base_url}/health", headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 421
    localhost = LOCAL_HTTP.get(f"{open_server.base_url}/health", headers={"Host": "localhost"}, timeout=10)
    assert localhost.status_code == 200


@pytest.mark.parametrize("host", ["LOCALHOST", "LocalHost", "LOCALHOST:{port}", "localhost:{port}", "[::1]:{port}"])
def test_the_host_check_ignores_case(open_server: HttpServer, host: str) -> None:
    """Host names are case-insensitive: `LOCALHOST` is a loopback name (it got 421)."""
    assert initialized(post_initialize(open_server, Host=host.format(port=open_server.port)))


@pytest.mark.parametrize("host", ["EVIL.example", "LOCALHOST.evil.example", "127.0.0.1.evil"])
def test_foreign_hosts_in_any_case_are_still_421(open_server: HttpServer, host: str) -> None:
    assert post_initialize(open_server, Host=host).status_code == 421


# --- JSON-RPC errors name the request they answer ---------------------------------------------


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        ({"jsonrpc": "2.0", "id": 5, "method": 7}, 5),
        ({"jsonrpc": "2.0", "id": "req-a", "method": "tools/call", "params": "not an object"}, "req-a"),
        ({"jsonrpc": "1.0", "id": 0, "method": "ping"}, 0),
        ({"jsonrpc": "2.0", "id": True, "method": 7}, None),  # a bool is no JSON-RPC id
        ({"jsonrpc": "2.0", "id": [1], "method": 7}, None),
    ],
)
def test_a_request_refused_as_invalid_is_answered_with_its_id(
    open_server: HttpServer, body: dict[str, Any], request_id: Any
) -> None:
    response = LOCAL_HTTP.post(open_server.url, json=body, headers=MCP_HEADERS, timeout=10)
    assert response.status_code == 400
    answer = response.json()
    assert answer["id"] == request_id, answer
    assert answer["error"]["code"] == -32602
    assert int(response.headers["content-length"]) == len(response.content)


def test_unparseable_json_is_answered_with_id_null(open_server: HttpServer) -> None:
    response = LOCAL_HTTP.post(
        open_server.url, content=b'{"jsonrpc": "2.0", "id": 5, ', headers=MCP_HEADERS, timeout=10
    )
    assert response.status_code == 400
    assert response.json()["id"] is None
    assert response.json()["error"]["code"] == -32700


# --- log lines on the terminal ------------------------------------------------------------------


def test_log_lines_carry_no_colour_codes(open_server: HttpServer) -> None:
    """uvicorn's records carry `color_message` (the message with terminal colour codes); it was
    written into every JSON line `make run` shows."""
    open_server.wait_ready()
    output = open_server.stderr_text()
    assert "Application startup complete." in output  # uvicorn's own lines are there
    assert "color_message" not in output
    assert "\\u001b" not in output and "\x1b" not in output


# --- /health when the store is down ----------------------------------------------------------


def test_health_is_a_json_status_when_the_store_goes_down(servers_root: Path) -> None:
    with FalkorServer() as falkor:
        server = HttpServer(
            servers_root / "http-store-down",
            args=["--toolsets", "kg", "--store", falkor.url],
            env={**FAST, "POLYG_STORE_TIMEOUT_S": "2"},
        ).start()
        try:
            assert server.wait_ready()["status"] == "ok"
            falkor.kill()
            response = server.health()
            assert response.status_code == 503
            assert response.headers["content-type"] == "application/json"
            body = response.json()
            assert body["status"] == "error", body
            assert body["store"] == f"falkordb-server {falkor.url}"
            assert "FalkorDB" in body["error"], body
        finally:
            server.stop()


# --- the store password is never shown -------------------------------------------------------

PASSWORD = "pw-Zq8s3cret"


def test_the_store_password_is_in_no_response_log_or_output(servers_root: Path) -> None:
    root = servers_root / "http-password"
    with FalkorServer(password=PASSWORD) as falkor:
        url = f"falkor://:{PASSWORD}@127.0.0.1:{falkor.port}"
        server = HttpServer(root, args=["--toolsets", "kg", "--store", url, "--api-key", API_KEY], env=FAST).start()
        try:
            # Without the key, /health says how the server is, nothing about the store.
            assert server.wait_ready() == {"status": "ok"}
            keyed = LOCAL_HTTP.get(
                f"{server.base_url}/health", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10
            )
            assert keyed.json() == {
                "status": "ok",
                "store": f"falkordb-server falkor://***@127.0.0.1:{falkor.port}",
                "projects": 0,
            }
            response = post_initialize(server, Authorization=f"Bearer {API_KEY}")
            assert initialized(response)
        finally:
            server.stop()
        # A wrong password: the error says so, without repeating it.
        wrong = f"falkor://:{PASSWORD}-wrong@127.0.0.1:{falkor.port}"
        failing = HttpServer(root, args=["--toolsets", "kg", "--store", wrong], env=FAST).start()
        try:
            failing.wait_listening()
            deadline = time.monotonic() + 60
            while (body := failing.health().json())["status"] == "loading":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert body["status"] == "error", body
            assert PASSWORD not in json.dumps(body), body
        finally:
            failing.stop()
        # `polyg status` prints the store too.
        status = subprocess.run(
            [*polyg_command(), "status", "--store", url],
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env(root, **FAST),
            check=False,
        )
        assert status.returncode == 0, status.stderr
        assert f"falkor://***@127.0.0.1:{falkor.port}" in status.stdout
    logs = "".join(path.read_text() for path in (root / "logs").glob("polyg.log*"))
    assert '"store ready"' in logs
    for where, text in (("stderr and stdout", server.stderr_text()), ("log file", logs), ("status", status.stdout)):
        assert PASSWORD not in text, where
        assert PASSWORD not in status.stderr


# --- the port -----------------------------------------------------------------------------------


def test_a_port_in_use_fails_before_anything_starts(servers_root: Path) -> None:
    root = servers_root / "http-port-taken"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_polyg(root, "--transport", "http", "--port", str(port))
    assert done.returncode != 0
    assert done.stderr.startswith("Error: Cannot listen on 127.0.0.1:"), done.stderr
    assert "Traceback" not in done.stderr
    assert "/mcp" not in done.stderr and done.stdout == ""
    assert not (root / "data" / "db").exists()
