"""The graph view as an MCP App (SEP-1865), through the real MCP client over HTTP: the resource
`ui://polyg/graph` (listed, read with its MIME type, self-contained), `_meta.ui.resourceUri` on
the four tools it draws, the extension declared; and, in headless Chromium, the app drawing a
real tool result a host hands it and expanding a node through the host's tools/call.

The server runs behind a key, so the graph page's refusal without one is tested here too (a
server fewer to start). The browser and each test's page come from tests/ui/conftest.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from polyg.ui.mcp_app import APP_MIME_TYPE, APPS_EXTENSION, DRAWN_BY_APP, GRAPH_APP_URI
from tests.mcp_helpers import HttpServer, authorized_client, ok
from tests.ui.browser import Page
from tests.ui.graph_demo import ADA, BABBAGE, BABBAGE_ONLY, populate

pytestmark = pytest.mark.anyio

PROJECT = "appdemo"
KEY = "k3y"
FOUR = {"build_local_graph", "get_entity", "get_causal_chain", "query_timeline"}


@pytest.fixture(scope="module")
def server(servers_root: Path) -> Any:
    server = HttpServer(
        servers_root / "ui-app",
        args=["--toolsets", "all", "--api-key", KEY],
        env={"POLYG_EMBEDDING_PROVIDER": "hashing"},
    )
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
async def client(server: HttpServer) -> AsyncIterator[Client]:
    async with authorized_client(server.url, KEY) as c:
        yield c


async def test_the_four_tools_name_the_app_and_no_other_does(client: Client) -> None:
    assert DRAWN_BY_APP == FOUR
    tools = (await client.list_tools()).tools
    named = {t.name: t.meta for t in tools}
    assert FOUR <= set(named)
    for name, meta in named.items():
        if name in FOUR:
            assert meta == {"ui": {"resourceUri": GRAPH_APP_URI}}, name
        else:
            assert not (meta or {}).get("ui"), name


async def test_the_app_resource_is_listed_and_read_as_self_contained_html(client: Client) -> None:
    assert APPS_EXTENSION in (client.server_capabilities.extensions or {})
    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert listed[GRAPH_APP_URI].mime_type == APP_MIME_TYPE
    read = await client.read_resource(GRAPH_APP_URI)
    (content,) = read.contents
    assert content.mime_type == APP_MIME_TYPE and str(content.uri) == GRAPH_APP_URI
    html = content.text  # type: ignore[union-attr]
    assert html.startswith("<!doctype html>")
    assert "The Cytoscape Consortium" in html and "ui/notifications/tool-result" in html  # inlined
    assert "<script src=" not in html and "<link " not in html  # nothing fetched
    assert '"mode": "app"' in html


async def test_an_unknown_resource_is_an_error(client: Client) -> None:
    with pytest.raises(MCPError):
        await client.read_resource("ui://polyg/nothing")


HOST = """
(async () => {
  const frame = document.createElement('iframe');
  frame.style.width = '1200px'; frame.style.height = '760px'; frame.style.border = '0';
  window.hostLog = [];
  window.addEventListener('message', (event) => {
    const msg = event.data;
    window.hostLog.push(msg.method || ('answer ' + msg.id));
    const send = (message) => frame.contentWindow.postMessage({jsonrpc: '2.0', ...message}, '*');
    const answer = (result) => send({id: msg.id, result});
    if (msg.method === 'ui/initialize') {
      answer({protocolVersion: '2026-01-26', hostInfo: {name: 'test-host', version: '0'},
              hostCapabilities: {serverTools: {}}, hostContext: {}});
    } else if (msg.method === 'ui/notifications/initialized') {
      send({method: 'ui/notifications/tool-input', params: {arguments: TOOL_INPUT}});
      send({method: 'ui/notifications/tool-result', params: TOOL_RESULT});
    } else if (msg.method === 'tools/call') {
      window.hostCalls = (window.hostCalls || []).concat([msg.params]);
      const known = CALL_ANSWERS[msg.params.name + ':' + (msg.params.arguments.name || '')];
      answer(known || {isError: true, content: [{type: 'text', text: 'Error: not in this test'}]});
    }
  });
  frame.srcdoc = APP_HTML;
  document.body.appendChild(frame);
})()
"""


@pytest.fixture(scope="module")
def ids(server: HttpServer) -> dict[str, str]:
    async def fill() -> dict[str, str]:
        async with authorized_client(server.url, KEY) as client:
            return await populate(client, PROJECT)

    return anyio.run(fill)


def host_script(html: str, tool_input: dict[str, Any], tool_result: Any, answers: dict[str, Any]) -> str:
    return (
        HOST.replace("APP_HTML", json.dumps(html))
        .replace("TOOL_INPUT", json.dumps(tool_input))
        .replace("TOOL_RESULT", json.dumps(tool_result))
        .replace("CALL_ANSWERS", json.dumps(answers))
    )


APP = "document.querySelector('iframe').contentWindow"


async def test_the_app_draws_each_tool_result_it_is_named_on(
    server: HttpServer, page: Page, ids: dict[str, str], tmp_path: Path
) -> None:
    async with authorized_client(server.url, KEY) as client:
        html = (await client.read_resource(GRAPH_APP_URI)).contents[0].text  # type: ignore[union-attr]
        entity_args = {"project_id": PROJECT, "name": ADA}
        entity = await client.call_tool("get_entity", entity_args)
        chain = await client.call_tool(
            "get_causal_chain", {"project_id": PROJECT, "event": ids["event:notes"], "direction": "both"}
        )
        timeline_args = {"project_id": PROJECT, "entity": ADA}
        timeline = await client.call_tool("query_timeline", timeline_args)
    dump = {"by_alias": True, "exclude_none": True, "mode": "json"}
    script = host_script(html, entity_args, entity.model_dump(**dump), {})  # type: ignore[arg-type]

    def hand_over(result: Any) -> None:
        message = {"jsonrpc": "2.0", "method": "ui/notifications/tool-result", "params": result.model_dump(**dump)}
        page.evaluate(f"{APP}.postMessage({json.dumps(message)}, '*')")

    def drive() -> tuple[list[str], str, int, int]:
        page.evaluate(script)
        page.wait_for(f"{APP}.polygView && {APP}.polygView.cy && {APP}.polygView.cy.nodes().length > 1")
        page.wait_for(f"{APP}.document.getElementById('view-entity').textContent.includes('Observations')")
        drawn = page.evaluate(f"{APP}.polygView.cy.nodes().map((n) => n.data('name'))")
        panel = page.evaluate(f"{APP}.document.getElementById('view-entity').textContent")
        hand_over(chain)
        steps = page.wait_for(f"{APP}.document.querySelectorAll('#view-causal .chain .step').length")
        tool_input = {
            "jsonrpc": "2.0",
            "method": "ui/notifications/tool-input",
            "params": {"arguments": timeline_args},
        }
        page.evaluate(f"{APP}.postMessage({json.dumps(tool_input)}, '*')")
        hand_over(timeline)
        items = page.wait_for(f"{APP}.document.querySelectorAll('#view-timeline li').length")
        title = page.evaluate(f"{APP}.document.querySelector('#view-timeline h2').textContent")
        assert title == f"Timeline of {ADA}"
        page.screenshot(tmp_path / "mcp-app-timeline.png")
        # The host's teardown request is answered; the app told the host its height.
        teardown = {"jsonrpc": "2.0", "id": 99, "method": "ui/resource-teardown", "params": {}}
        page.evaluate(f"{APP}.postMessage({json.dumps(teardown)}, '*')")
        page.wait_for("window.hostLog.includes('answer 99')")
        assert "ui/notifications/size-changed" in page.evaluate("window.hostLog")
        assert page.exceptions == []
        return drawn, panel, steps, items

    drawn, panel, steps, items = await anyio.to_thread.run_sync(drive)
    assert {ADA, BABBAGE, "Analytical Engine"} <= set(drawn)  # get_entity: the entity and its links
    assert "Note G describes" in panel
    assert steps == 3  # met -> notes -> recognised
    assert items == 4  # two events, two facts


async def test_the_app_draws_a_tool_result_and_expands_through_the_host(
    server: HttpServer, page: Page, ids: dict[str, str], tmp_path: Path
) -> None:
    async with authorized_client(server.url, KEY) as client:
        graph_args = {"project_id": PROJECT, "entity_ids": [ids[ADA], ids[BABBAGE], ids["Analytical Engine"]]}
        local = await client.call_tool("build_local_graph", graph_args)
        # What the app asks the host for when Babbage is clicked: a real answer, fetched here.
        babbage = await ok(client, "get_entity", {"project_id": PROJECT, "name": BABBAGE})
        html = (await client.read_resource(GRAPH_APP_URI)).contents[0].text  # type: ignore[union-attr]
    tool_result = local.model_dump(by_alias=True, exclude_none=True, mode="json")
    answers = {f"get_entity:{BABBAGE}": {"content": [{"type": "text", "text": "{}"}], "structuredContent": babbage}}
    script = host_script(html, graph_args, tool_result, answers)

    def drive() -> tuple[list[str], list[str], Any]:
        page.evaluate(script)
        app = APP
        page.wait_for(f"{app}.polygView && {app}.polygView.cy && {app}.polygView.cy.nodes().length === 3")
        drawn = page.evaluate(f"{app}.polygView.cy.nodes().map((n) => n.data('name'))")
        point = page.evaluate(
            f"""(() => {{
              const cy = {app}.polygView.cy;
              const node = cy.nodes().filter((n) => n.data('name') === {json.dumps(BABBAGE)})[0];
              const at = node.renderedPosition();
              const frame = document.querySelector('iframe').getBoundingClientRect();
              const box = cy.container().getBoundingClientRect();
              return {{x: frame.left + box.left + at.x, y: frame.top + box.top + at.y}};
            }})()"""
        )
        page.click(point["x"], point["y"])
        page.wait_for(f"{app}.polygView.cy.nodes().length > 3")
        page.wait_for(f"{app}.document.body.dataset.busy === '0'")
        expanded = page.evaluate(f"{app}.polygView.cy.nodes().map((n) => n.data('name'))")
        page.screenshot(tmp_path / "mcp-app.png")
        calls = page.evaluate("window.hostCalls")
        assert page.exceptions == []
        return drawn, expanded, calls

    drawn, expanded, calls = await anyio.to_thread.run_sync(drive)
    assert set(drawn) == {ADA, BABBAGE, "Analytical Engine"}
    assert set(BABBAGE_ONLY) <= set(expanded)
    # The app asked the host for the clicked entity, in the project of the tool call it was shown.
    assert {"name": "get_entity", "arguments": {"project_id": PROJECT, "name": BABBAGE}} in calls
    assert all(call["arguments"]["project_id"] == PROJECT for call in calls)


def test_the_page_needs_the_key_when_one_is_set(server: HttpServer) -> None:
    assert httpx.get(f"{server.base_url}/ui", timeout=10).status_code == 401
    assert httpx.get(f"{server.base_url}/ui/static/graph.js", timeout=10).status_code == 401
    assert httpx.get(f"{server.base_url}/ui/api/projects", timeout=10).status_code == 401
    keyed = httpx.get(f"{server.base_url}/ui", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert keyed.status_code == 200 and "polyg-boot" in keyed.text
    # The page runs only the server's own scripts.
    assert "script-src 'self'" in keyed.headers["content-security-policy"]
    foreign = httpx.get(
        f"{server.base_url}/ui",
        headers={"Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"},
        timeout=10,
    )
    assert foreign.status_code == 403
