"""Streamable HTTP transport: `/mcp`, `GET /health`, a bearer API key and an Origin check.

Binds loopback by default. Any other bind address needs an API key (checked by `serve_http`
before anything listens). Browsers send `Origin`; a page on a foreign site must not be able
to drive a local server (DNS rebinding), so a foreign Origin is refused with 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import sys
from typing import Any
from urllib.parse import urlparse

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from polyg.core.app import Polyg
from polyg.errors import ConfigError
from polyg.server import build_server

log = logging.getLogger(__name__)

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
PUBLIC_PATHS = {"/health"}


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class GuardMiddleware:
    """Refuses foreign Origins (403) and, when a key is set, requests without it (401)."""

    def __init__(self, app: ASGIApp, *, api_key: str | None, allowed_origins: list[str]) -> None:
        self.app = app
        self.api_key = api_key
        self.allowed_origins = {o.rstrip("/") for o in allowed_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if origin and not self._origin_allowed(origin, headers.get("host", "")):
            await JSONResponse({"error": "Origin not allowed"}, status_code=403)(scope, receive, send)
            return
        if self.api_key and scope["path"] not in PUBLIC_PATHS:
            scheme, _, supplied = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(supplied.strip().encode(), self.api_key.encode()):
                response = JSONResponse(
                    {"error": "Missing or invalid API key"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _origin_allowed(self, origin: str, host_header: str) -> bool:
        if origin.rstrip("/") in self.allowed_origins:
            return True
        parsed = urlparse(origin)
        if parsed.hostname and is_loopback(parsed.hostname):
            return True
        # Same origin as the address the client used to reach us.
        return bool(host_header) and parsed.netloc == host_header


def build_http_app(core: Polyg) -> ASGIApp:
    settings = core.settings
    server, _ = build_server(core)

    async def health(request: Request) -> Response:
        status = core.status
        body: dict[str, Any] = {"status": status, "store": core.store_description}
        if status == "ok":
            body["projects"] = await core.project_count()
        elif status == "error":
            body["error"] = core.error_message
        return JSONResponse(body, status_code=503 if status == "error" else 200)

    loopback = is_loopback(settings.host)
    security = TransportSecuritySettings(
        # The SDK's Host-header check only knows loopback names; on another bind address the
        # API key and our Origin check protect the endpoint instead.
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=security,
        host=settings.host,
        custom_starlette_routes=[Route("/health", health, methods=["GET"])],
    )
    return GuardMiddleware(app, api_key=settings.api_key, allowed_origins=settings.allowed_origins)


def check_bind(host: str, api_key: str | None) -> None:
    if not is_loopback(host) and not api_key:
        raise ConfigError(
            f"Refusing to serve on {host} without an API key: set --api-key or POLYG_API_KEY, or bind 127.0.0.1."
        )


async def serve_http(core: Polyg) -> None:
    import uvicorn

    settings = core.settings
    check_bind(settings.host, settings.api_key)
    app = build_http_app(core)
    core.start()
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(
        f"polyg {core.store_description}: MCP at http://{host}:{settings.port}/mcp  (health: /health)",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_config=None, access_log=False, lifespan="on"
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await core.close()
