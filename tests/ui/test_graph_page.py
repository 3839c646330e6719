"""The graph page at /ui, driven in headless Chromium: every view drawn, a click that expands a
node, 404 pages, names that are HTML shown as text, and a hub's neighbourhood capped.

The server serves the default toolsets (plus memory-compat, for the batch writes of the hub):
the page's neighbourhood uses graphrag's tools even where the MCP server does not list them.
The page behind a key is tests/ui/test_mcp_app.py's (its server has one). The browser and each
test's page come from tests/ui/conftest.py; skipped when no Chromium is installed (Debian:
`apt-get install chromium`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest

from polyg.ui.views import NEIGHBOURS_SHOWN
from tests.mcp_helpers import HttpServer, authorized_client, ok
from tests.ui.browser import Page
from tests.ui.graph_demo import (
    ADA,
    BABBAGE,
    BABBAGE_ONLY,
    PANEL,
    RESULTS,
    STAGE,
    click_node,
    distinct_colours,
    node_count,
    populate,
    populate_hub,
    walk_views,
)

PROJECT = "demo"
HUB = "Hub"
SPOKES = NEIGHBOURS_SHOWN + 20
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@dataclass
class Demo:
    server: HttpServer
    ids: dict[str, str]

    @property
    def base(self) -> str:
        return self.server.base_url


@pytest.fixture(scope="module")
def demo(servers_root: Path) -> Iterator[Demo]:
    server = HttpServer(
        servers_root / "ui-page",
        args=["--toolsets", "kg,memory,memory-compat"],
        env={"POLYG_EMBEDDING_PROVIDER": "hashing"},
    )
    server.start()
    try:
        server.wait_ready()

        async def fill() -> dict[str, str]:
            async with authorized_client(server.url, None) as client:
                ids = await populate(client, PROJECT)
                await populate_hub(client, PROJECT, HUB, SPOKES)
                hostile = await ok(
                    client,
                    "add_entity",
                    {"project_id": PROJECT, "name": HOSTILE, "entity_type": "person", "description": HOSTILE},
                )
                ids["hostile"] = hostile["entity"]["id"]
                await ok(
                    client,
                    "add_observation",
                    {"project_id": PROJECT, "entity_id": ids["hostile"], "observation": HOSTILE},
                )
                await ok(
                    client,
                    "link_entities",
                    {"project_id": PROJECT, "source": HOSTILE, "target": ADA, "relationship": "knows"},
                )
                hub = await ok(client, "get_entity", {"project_id": PROJECT, "name": HUB})
                ids[HUB] = hub["entity"]["id"]
                return ids

        yield Demo(server, anyio.run(fill))
    finally:
        server.stop()


def test_every_view_is_drawn_and_screenshotted(demo: Demo, page: Page, tmp_path: Path) -> None:
    shots = walk_views(page, demo.base, PROJECT, demo.ids, tmp_path)
    assert set(shots) == {"projects", "search", "neighbourhood", "expanded", "facts", "timeline", "causal", "document"}
    # Each view has drawn something where it should: the search hits in the left column, the
    # graph in the middle from the neighbourhood on, each tab's content in the right column.
    pngs = {view: path.read_bytes() for view, path in shots.items()}
    assert distinct_colours(pngs["projects"], RESULTS) > 20
    assert distinct_colours(pngs["search"], RESULTS) > 20
    for view in ("neighbourhood", "expanded", "facts", "timeline", "causal", "document"):
        assert distinct_colours(pngs[view], STAGE) > 20, view
    for view in ("facts", "timeline", "causal", "document"):
        assert distinct_colours(pngs[view], PANEL) > 20, view
    # The check can fail: the empty results column below its heading is one colour.
    assert distinct_colours(pngs["facts"], (0, 100, 220, 800)) < 5
    assert page.exceptions == []


def test_facts_show_their_validity_as_of_a_date(demo: Demo, page: Page) -> None:
    page.goto(f"{demo.base}/ui/p/{PROJECT}/entity/{demo.ids[ADA]}")
    page.wait_for("window.polygView.selected")
    page.idle()
    entity_view = "document.getElementById('view-entity').textContent"
    now = page.evaluate(entity_view)
    # Now: the title holds (from 1838, no end); living in London ended in 1852.
    assert "Countess of Lovelace" in now and "London" not in now
    page.evaluate("document.getElementById('asof').value = '1836-01-01'")
    page.evaluate("document.getElementById('asof').dispatchEvent(new Event('change'))")
    page.wait_for(f"{entity_view}.includes('as of 1836-01-01')")
    page.idle()
    then = page.evaluate(entity_view)
    assert "London" in then and "1835-07-08 – 1852-11-27" in then and "Countess of Lovelace" not in then
    assert page.evaluate("document.querySelectorAll('#view-entity .badge.current').length") == 1
    page.evaluate("document.getElementById('asof').value = ''")
    page.evaluate("document.getElementById('history').click()")
    page.wait_for(f"{entity_view}.includes('All facts and links')")
    page.idle()
    everything = page.evaluate(entity_view)
    assert "London" in everything and "Countess of Lovelace" in everything
    assert page.evaluate("document.querySelectorAll('#view-entity .badge.ended').length") == 1


def test_clicking_a_node_expands_the_graph(demo: Demo, page: Page) -> None:
    page.goto(f"{demo.base}/ui/p/{PROJECT}/entity/{demo.ids[ADA]}")
    page.wait_for("window.polygView.cy.nodes().length > 1")
    page.idle()
    before = node_count(page)
    names = page.evaluate("window.polygView.cy.nodes().map((n) => n.data('name'))")
    assert BABBAGE in names and not set(BABBAGE_ONLY) & set(names)
    click_node(page, BABBAGE)
    page.wait_for(f"window.polygView.cy.nodes().length > {before}")
    page.idle()
    names = page.evaluate("window.polygView.cy.nodes().map((n) => n.data('name'))")
    assert set(BABBAGE_ONLY) <= set(names)
    assert ADA in names  # expanding adds to the graph, it does not replace it
    assert page.evaluate("window.polygView.selected.name") == BABBAGE


@pytest.mark.parametrize(
    "path",
    [
        "/ui/p/no_such_project",
        "/ui/p/demo/entity/ent_0000000000000000",
        "/ui/p/demo/entity/not%20an%20id",
        "/ui/p/demo/x/y",
        "/ui/p/%3Cimg%20src%3Dx%20onerror%3D%22window.__pwned%3D3%22%3E",
    ],
)
def test_a_missing_project_or_entity_is_a_404_page(demo: Demo, page: Page, path: str) -> None:
    assert page.goto(f"{demo.base}{path}") == 404
    text = page.evaluate("document.body.innerText")
    assert "404" in text and "Traceback" not in text and "File " not in text
    # A name in the URL is quoted in the message as text.
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    response = httpx.get(f"{demo.base}{path}", timeout=10)
    assert response.status_code == 404 and response.headers["content-type"].startswith("text/html")


def test_a_missing_project_or_entity_in_the_json_views_is_404(demo: Demo) -> None:
    missing_project = httpx.get(f"{demo.base}/ui/api/p/no_such_project/search?q=x", timeout=10)
    assert missing_project.status_code == 404 and "does not exist" in missing_project.json()["error"]
    missing_entity = httpx.get(
        f"{demo.base}/ui/api/p/{PROJECT}/neighbourhood?entity_id=ent_0000000000000000", timeout=10
    )
    assert missing_entity.status_code == 404 and "not found" in missing_entity.json()["error"]
    huge = httpx.get(f"{demo.base}/ui/api/p/{'x' * 5000}/search?q=x", timeout=10)
    assert huge.status_code == 404 and len(huge.json()["error"]) < 200  # the name is quoted cut
    no_argument = httpx.get(f"{demo.base}/ui/api/p/{PROJECT}/neighbourhood", timeout=10)
    assert no_argument.status_code == 400 and "entity_id" in no_argument.json()["error"]
    no_view = httpx.get(f"{demo.base}/ui/api/p/{PROJECT}/drop_everything", timeout=10)
    assert no_view.status_code == 404


def test_html_in_names_and_observations_is_shown_as_text(demo: Demo, page: Page) -> None:
    page.goto(f"{demo.base}/ui/p/{PROJECT}/entity/{demo.ids['hostile']}")
    page.wait_for("window.polygView.selected")
    page.idle()
    panel = page.evaluate("document.getElementById('view-entity').textContent")
    assert panel.count(HOSTILE) >= 3  # name, description, observation: all as written
    # The search list renders the same name.
    page.evaluate("document.getElementById('query').value = '<script>'")
    page.evaluate("document.querySelector('#search-form button').click()")
    page.wait_for("document.querySelectorAll('#hits button').length > 0")
    page.idle()
    assert HOSTILE in page.evaluate("document.getElementById('hits').textContent")
    # Nothing was parsed as markup: no injected element, no handler ran.
    assert page.evaluate("document.querySelectorAll('main script, main img').length") == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert (
        page.evaluate(
            "window.polygView.cy.nodes().filter((n) => n.data('name') === " + json.dumps(HOSTILE) + ").length"
        )
        == 1
    )


def test_a_huge_neighbourhood_is_capped_and_says_so(demo: Demo, page: Page) -> None:
    page.goto(f"{demo.base}/ui/p/{PROJECT}/entity/{demo.ids[HUB]}")
    page.wait_for("window.polygView.cy.nodes().length > 1")
    page.idle()
    assert node_count(page) == NEIGHBOURS_SHOWN + 1
    notice = page.evaluate("document.getElementById('notice').textContent")
    assert "capped" in notice and str(NEIGHBOURS_SHOWN) in notice
    body = httpx.get(f"{demo.base}/ui/api/p/{PROJECT}/neighbourhood?entity_id={demo.ids[HUB]}", timeout=10).json()
    assert body["capped"] is True and body["shown"] == NEIGHBOURS_SHOWN
