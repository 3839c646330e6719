"""The graph view as an MCP App (SEP-1865): the resource `ui://polyg/graph` and the tools it draws.

A client that renders MCP Apps reads the resource (HTML of type `text/html;profile=mcp-app`, the
page's script and library inlined) when a tool whose `_meta.ui.resourceUri` names it is called,
and hands the app the tool's result over postMessage; other clients ignore both.

`install` wraps the handlers the server already has for `tools/list` (adding the `_meta`),
`resources/list` and `resources/read` (adding the resource, passing every other URI on), so
other resources and tool listings are made without knowing of the app.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

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


def with_app_meta(tool: types.Tool) -> types.Tool:
    """The tool as listed, naming the app in `_meta.ui.resourceUri` if the app draws its results."""
    if tool.name not in DRAWN_BY_APP:
        return tool
    return tool.model_copy(update={"meta": {**(tool.meta or {}), "ui": {"resourceUri": GRAPH_APP_URI}}})


def read_graph_app() -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=GRAPH_APP_URI, mime_type=APP_MIME_TYPE, text=app_html())]
    )


def _as[M: BaseModel](model: type[M], answer: Any) -> M:
    """Another handler's answer (the SDK takes a model or a dict) as `model`."""
    if isinstance(answer, model):
        return answer
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(by_alias=True, exclude_none=True)
    return model.model_validate(answer)


def install(server: Server[Any]) -> None:
    """Serve the app's resource, name it on the tools it draws and declare the extension, keeping
    whatever the server already lists and reads."""
    tools = server.get_request_handler("tools/list")
    listed = server.get_request_handler("resources/list")
    read = server.get_request_handler("resources/read")

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> types.ListToolsResult:
        result = types.ListToolsResult(tools=[])
        if tools is not None:
            result = _as(types.ListToolsResult, await tools.handler(ctx, params))
        # A copy: the server's listing is made once and kept.
        return result.model_copy(update={"tools": [with_app_meta(tool) for tool in result.tools]})

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        result = types.ListResourcesResult(resources=[])
        if listed is not None:
            result = _as(types.ListResourcesResult, await listed.handler(ctx, params))
        if params.cursor is None:  # on the first page only, so paging never repeats it
            result = result.model_copy(update={"resources": [GRAPH_APP, *result.resources]})
        return result

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) == GRAPH_APP_URI:
            return read_graph_app()
        if read is not None:
            return _as(types.ReadResourceResult, await read.handler(ctx, params))
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {str(params.uri)[:200]}")

    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read_resource)
    server.extensions[APPS_EXTENSION] = {"mimeTypes": [APP_MIME_TYPE]}
