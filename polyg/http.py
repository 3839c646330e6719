"""Streamable HTTP transport: `/mcp`, `GET /health`, bearer keys, Host and Origin checks.

Binds loopback by default. Any other bind address needs a key (`api_key` or `access_keys`,
checked by `serve_http` before anything listens); what each key may do is polyg.access's.
Two checks keep web pages from driving a local server:
- DNS rebinding (a foreign name made to resolve to 127.0.0.1): the page's requests carry the
  foreign name in `Host`, so on a loopback bind only loopback names are accepted as Host (421).
- A page on a foreign site calling 127.0.0.1 directly: the browser sends the page's `Origin`;
  only loopback origins and those listed in `allowed_origins` are accepted (403).
polyg makes both checks itself (the SDK's own, which knows no `allowed_origins`, is off), so the
setting governs on every bind address.

`/health` needs no key: without one (when keys are configured), or with a key scoped to some
projects, it says only the status; with a key to every project, or on a server without keys, it
also names the store (never its credentials) and counts the projects.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import sys
from types import FrameType
from typing import Any
from urllib.parse import urlparse

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from polyg.access import GRANT_SCOPE_KEY, AccessPolicy, Grant, RateLimited
from polyg.closing import close_fully
from polyg.errors import ConfigError, PolygError, ServerError
from polyg.http_jsonrpc import RequestId, answer_with_request_id, read_body, read_incoming
from polyg.runtime.app import Polyg
from polyg.server import build_server
from polyg.ui.routes import ui_routes

log = logging.getLogger(__name__)

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
MCP_PATH = "/mcp"
GRAPH_VIEW_API = "/ui/api/"
PUBLIC_PATHS = {"/health"}
# /health answers within this even when the store hangs (a server that accepts and never answers).
HEALTH_STORE_TIMEOUT_S = 2.0
# On SIGTERM or Ctrl-C, requests under way get this long to finish before they are cancelled:
# uvicorn would otherwise wait for them without end (a client holding a stream open, say).
SHUTDOWN_GRACE_S = 5
# The JSON-RPC error code of a tool call refused for its key's rate (HTTP 429), polyg's 4-digit
# style: JSON-RPC leaves codes outside -32768..-32000 to the application.
RATE_LIMITED = 4029


def is_loopback(host: str) -> bool:
    # Host names are case-insensitive: `LOCALHOST` is the user's own machine too.
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port (`[::1]:8765` -> `::1`)."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


class GuardMiddleware:
    """Refuses a foreign Host on a loopback bind (421), foreign Origins (403), requests to `/mcp`
    without an accepted key when keys are set (401) and tool calls over the key's rate (429);
    stamps the request with the key's grant, which the tool dispatcher checks."""

    def __init__(self, app: ASGIApp, *, policy: AccessPolicy, allowed_origins: list[str], loopback: bool) -> None:
        self.app = app
        self.policy = policy
        self.allowed_origins = {o.rstrip("/") for o in allowed_origins}
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.loopback and not is_loopback(host_name(headers.get("host", ""))):
            await JSONResponse({"error": "Host not allowed"}, status_code=421)(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin and not self.origin_allowed(origin):
            await JSONResponse({"error": "Origin not allowed"}, status_code=403)(scope, receive, send)
            return
        grant = self.policy.grant(headers)
        if grant is None and scope["path"] not in PUBLIC_PATHS:
            response = JSONResponse(
                {"error": "Missing or invalid API key"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        if grant is not None:
            scope[GRANT_SCOPE_KEY] = grant
        if scope["method"] == "POST" and scope["path"] == MCP_PATH:
            body, receive = await read_body(receive)
            incoming = read_incoming(body)
            # Only tool calls count: they are the work; a session's handshake, listings and pings
            # must go on so that the client can retry once the wait is over.
            if incoming.method == "tools/call" and await self.refused_over_rate(
                grant, scope, receive, send, incoming.id
            ):
                return
            send = answer_with_request_id(send, incoming.id)
        elif scope["path"].startswith(GRAPH_VIEW_API):  # each of the graph view's JSON views runs tools
            if await self.refused_over_rate(grant, scope, receive, send, None, json_rpc=False):
                return
        await self.app(scope, receive, send)

    async def refused_over_rate(
        self,
        grant: Grant | None,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: RequestId | None,
        *,
        json_rpc: bool = True,
    ) -> bool:
        """Take a token of the key's bucket; answer 429 and say so when there was none."""
        limited = grant.over_limit() if grant is not None else None
        if limited is None:
            return False
        log.info("rate limited", extra={"key_name": limited.key_name, "retry_after_s": limited.retry_after_s})
        await rate_limited_response(limited, request_id, json_rpc=json_rpc)(scope, receive, send)
        return True

    def origin_allowed(self, origin: str) -> bool:
        """A page on the user's own machine, or one the configuration names."""
        if origin.rstrip("/") in self.allowed_origins:
            return True
        hostname = urlparse(origin).hostname
        return hostname is not None and is_loopback(hostname)


def rate_limited_response(limited: RateLimited, request_id: RequestId | None, *, json_rpc: bool = True) -> Response:
    """HTTP 429 with Retry-After, and the JSON-RPC error for the request in the body: HTTP
    clients and proxies know 429 and Retry-After, and MCP clients read a non-2xx answer's
    JSON-RPC error and hand its message (with the time to wait) to the caller. The graph view's
    JSON views get the message as their other errors have it."""
    headers = {"Retry-After": limited.retry_after_header}
    if not json_rpc:
        return JSONResponse({"error": limited.message, "code": RATE_LIMITED}, status_code=429, headers=headers)
    error = {"code": RATE_LIMITED, "message": limited.message, "data": {"retryAfterSeconds": limited.retry_after_s}}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=429, headers=headers)


async def store_health(core: Polyg) -> tuple[str, int | None, str | None]:
    """(status, number of projects when ok, error message when not)."""
    status = core.status
    if status == "error":
        return status, None, core.error_message or "the store could not be opened"
    if status == "loading":
        return status, None, None
    try:
        return status, await asyncio.wait_for(core.project_count(), HEALTH_STORE_TIMEOUT_S), None
    except TimeoutError:
        return "error", None, f"the store did not answer within {HEALTH_STORE_TIMEOUT_S:g} s"
    except PolygError as exc:  # opened once, unreachable now
        return "error", None, exc.message


def health_endpoint(core: Polyg) -> Route:
    async def health(request: Request) -> Response:
        status, projects, error = await store_health(core)
        body: dict[str, Any] = {"status": status}
        # The store (a data directory, a server's address) and the number of projects are for
        # a key to every project; a key scoped to some, or none, sees only the status.
        grant = request.scope.get(GRANT_SCOPE_KEY)
        if isinstance(grant, Grant) and grant.every_project:
            body["store"] = core.store_description
            if projects is not None:
                body["projects"] = projects
            if error is not None:
                body["error"] = core.redact(error)
        return JSONResponse(body, status_code=503 if status == "error" else 200)

    return Route("/health", health, methods=["GET"])


def build_http_app(core: Polyg) -> ASGIApp:
    settings = core.settings
    server, _ = build_server(core)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # polyg checks Host and Origin itself (GuardMiddleware), with its allowed_origins.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=settings.host,
        custom_starlette_routes=[health_endpoint(core), *ui_routes(core)],
    )
    return GuardMiddleware(
        app,
        policy=AccessPolicy(settings.api_key, settings.access_keys),
        allowed_origins=settings.allowed_origins,
        loopback=is_loopback(settings.host),
    )


def check_bind(host: str, keyed: bool) -> None:
    if not is_loopback(host) and not keyed:
        raise ConfigError(
            f"Refusing to serve on {host} without an API key: set --api-key or POLYG_API_KEY "
            "(or access_keys in the config file), or bind 127.0.0.1."
        )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts: a port in use is an error
    before the database starts or the URL is printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # connections whose socket says TCP. Without it every response's body waited for the
    # client's delayed ACK of its headers: 40 ms per call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        # Spec 001's 4001: the server cannot start.
        raise ServerError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}. "
            "Choose another --port, or stop the program using it."
        ) from None
    sock.set_inheritable(True)
    return sock


async def serve_http(core: Polyg) -> None:
    import uvicorn

    settings = core.settings
    check_bind(settings.host, bool(settings.api_key or settings.access_keys))
    app = build_http_app(core)
    listening = bind(settings.host, settings.port)
    core.start()
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(
        f"polyg {core.store_description}: MCP at http://{host}:{settings.port}/mcp  (health: /health, graph: /ui)",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=SHUTDOWN_GRACE_S
    )

    loop = asyncio.get_running_loop()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            # Tool calls waiting for a loading store answer at once: uvicorn waits for them
            # before it stops, and the SDK's event streams are cut half a second after a signal.
            loop.call_soon_threadsafe(core.stop_opening)

    try:
        await Server(config).serve(sockets=[listening])
    finally:
        listening.close()
        await close_fully(core)
