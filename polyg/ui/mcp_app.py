"""The graph view as an MCP App (SEP-1865): the resource `ui://polyg/graph` and the tools it draws.

A client that renders MCP Apps reads the resource (HTML of type `text/html;profile=mcp-app`, the
page's script and library inlined) when a tool whose `_meta.ui.resourceUri` names it is called,
and hands the app the tool's result over postMessage; other clients ignore both.

`install` adds the resource to whatever `resources/list` and `resources/read` the server already
answers (it wraps their handlers, and passes on every other URI), so other resources can be
registered before or after it without either knowing the other.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from polyg.ui.page import app_html

GRAPH_APP_URI = "ui://polyg/graph"
APP_MIME_TYPE = "text/html;profile=mcp-app"
# SEP-2133's capability for the MCP Apps extension.
APPS_EXTENSION = "io.modelcontextprotocol/ui"
# The tools whose results the app draws: a local graph, an entity with its relationships, a
# causal chain, a timeline.
DRAWN_BY_APP = frozenset({"build_local_graph", "get_entity", "get_causal_chain", "query_timeline"})

GRAPH_APP = types.Resource(
    uri=GRAPH_APP_URI,
    name="polyg-graph",
    title="polyg graph view",
    description="Draws the results of build_local_graph, get_entity, get_causal_chain and query_timeline.",
    mime_type=APP_MIME_TYPE,
)


def tool_meta(name: str) -> dict[str, Any] | None:
    """The `_meta` a tool is listed with: the app's URI for the tools it draws."""
    return {"ui": {"resourceUri": GRAPH_APP_URI}} if name in DRAWN_BY_APP else None


def read_graph_app() -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=GRAPH_APP_URI, mime_type=APP_MIME_TYPE, text=app_html())]
    )


def _plain(result: Any) -> Any:
    """Another handler's answer as the SDK takes it (a model or a dict), ready to validate."""
    return result.model_dump(by_alias=True, exclude_none=True) if hasattr(result, "model_dump") else result


def install(server: Server[Any]) -> None:
    """Serve the app's resource and declare the extension, keeping the server's other resources."""
    listed = server.get_request_handler("resources/list")
    read = server.get_request_handler("resources/read")

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        result = types.ListResourcesResult(resources=[])
        if listed is not None:
            result = types.ListResourcesResult.model_validate(_plain(await listed.handler(ctx, params)))
        if params.cursor is None:  # on the first page only, so paging never repeats it
            result.resources = [GRAPH_APP, *result.resources]
        return result

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) == GRAPH_APP_URI:
            return read_graph_app()
        if read is not None:
            return types.ReadResourceResult.model_validate(_plain(await read.handler(ctx, params)))
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {str(params.uri)[:200]}")

    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read_resource)
    server.extensions[APPS_EXTENSION] = {"mimeTypes": [APP_MIME_TYPE]}
