"""`polyg.ui.mcp_app.install` keeps what a server already lists and reads: the app's resource
is added to another handler's resources (first page only), other URIs reach that handler, and
the tools it lists keep their own `_meta` beside the app's. Through the SDK's in-process client."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client, types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from polyg.ui.mcp_app import APP_MIME_TYPE, GRAPH_APP_URI, install

pytestmark = pytest.mark.anyio

OTHER = "polyg://p/entity/e1"


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> types.ListToolsResult:
    schema = {"type": "object"}
    return types.ListToolsResult(
        tools=[
            types.Tool(name="get_entity", input_schema=schema, _meta={"polyg/x": 1}),
            types.Tool(name="add_entity", input_schema=schema),
        ]
    )


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
) -> types.ListResourcesResult:
    if params.cursor is None:
        return types.ListResourcesResult(resources=[types.Resource(uri=OTHER, name="e1")], next_cursor="2")
    return types.ListResourcesResult(resources=[types.Resource(uri=f"{OTHER}-2", name="e2")])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text="entity page")])


def server() -> Server[Any]:
    made: Server[Any] = Server(
        "t", on_list_tools=list_tools, on_list_resources=list_resources, on_read_resource=read_resource
    )
    install(made)
    return made


async def test_other_resources_and_tools_are_kept() -> None:
    async with Client(server()) as client:
        first = await client.list_resources()
        assert [str(r.uri) for r in first.resources] == [GRAPH_APP_URI, OTHER]
        second = await client.list_resources(cursor=first.next_cursor)
        assert [str(r.uri) for r in second.resources] == [f"{OTHER}-2"]  # the app is not listed again
        assert (await client.read_resource(OTHER)).contents[0].text == "entity page"  # type: ignore[union-attr]
        app = (await client.read_resource(GRAPH_APP_URI)).contents[0]
        assert app.mime_type == APP_MIME_TYPE
        tools = {t.name: t.meta for t in (await client.list_tools()).tools}
        assert tools["get_entity"] == {"polyg/x": 1, "ui": {"resourceUri": GRAPH_APP_URI}}
        assert not tools["add_entity"]


async def test_alone_it_serves_the_app_and_refuses_other_uris() -> None:
    alone: Server[Any] = Server("t")
    install(alone)
    async with Client(alone) as client:
        assert [str(r.uri) for r in (await client.list_resources()).resources] == [GRAPH_APP_URI]
        with pytest.raises(MCPError, match="Unknown resource"):
            await client.read_resource(OTHER)
