"""A small project to look at, written through the real MCP tools, and a walk through every view
of the graph page that screenshots each one (used by tests/ui and bench/tools/ui_screenshots.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from mcp import Client

from tests.mcp_helpers import ok
from tests.ui.browser import Page

ADA = "Ada Lovelace"
BABBAGE = "Charles Babbage"
# Babbage's neighbours that Ada's neighbourhood does not show: opening him adds them.
BABBAGE_ONLY = ["Difference Engine", "Royal Society"]


async def populate(client: Client, project: str) -> dict[str, str]:
    """Entities, links, observations, facts with windows, events and a causal chain; the ids by name."""
    ids: dict[str, str] = {}
    entities = [
        (ADA, "person", "Mathematician; wrote the first published program."),
        (BABBAGE, "person", "Designed the first mechanical computers."),
        ("Analytical Engine", "machine", "A general-purpose mechanical computer."),
        ("Difference Engine", "machine", "A mechanical calculator for polynomial tables."),
        ("London", "city", ""),
        ("Royal Society", "organization", ""),
    ]
    for name, kind, description in entities:
        made = await ok(
            client,
            "add_entity",
            {"project_id": project, "name": name, "entity_type": kind, "description": description},
        )
        ids[name] = made["entity"]["id"]
    for source, relationship, target in [
        (ADA, "wrote_about", "Analytical Engine"),
        (ADA, "collaborated_with", BABBAGE),
        (BABBAGE, "designed", "Analytical Engine"),
        (BABBAGE, "designed", "Difference Engine"),
        (BABBAGE, "lived_in", "London"),
        (BABBAGE, "member_of", "Royal Society"),
    ]:
        await ok(
            client,
            "link_entities",
            {"project_id": project, "source": source, "target": target, "relationship": relationship},
        )
    for text in [
        "Translated Menabrea's paper and added the Notes.",
        "Note G describes an algorithm for Bernoulli numbers.",
    ]:
        await ok(client, "add_observation", {"project_id": project, "entity_id": ids[ADA], "observation": text})
    await ok(
        client,
        "add_fact",
        {
            "project_id": project,
            "subject": ADA,
            "predicate": "lived_in",
            "object": "London",
            "valid_from": "1835-07-08",
            "valid_to": "1852-11-27",
        },
    )
    await ok(
        client,
        "add_fact",
        {
            "project_id": project,
            "subject": ADA,
            "predicate": "title",
            "object": "Countess of Lovelace",
            "valid_from": "1838-06-30",
        },
    )
    met = await ok(
        client,
        "add_event",
        {
            "project_id": project,
            "description": "Ada meets Charles Babbage at a party",
            "occurred_at": "1833-06-05",
            "entities": [ADA, BABBAGE],
        },
    )
    notes = await ok(
        client,
        "add_event",
        {
            "project_id": project,
            "description": "Ada publishes her Notes on the Analytical Engine",
            "occurred_at": "1843-09-01",
            "entities": [ADA, "Analytical Engine"],
        },
    )
    ids["event:met"], ids["event:notes"] = met["event"]["id"], notes["event"]["id"]
    await ok(
        client,
        "add_causal_link",
        {"project_id": project, "cause": ids["event:met"], "effect": ids["event:notes"], "confidence": 0.8},
    )
    later = await ok(
        client,
        "add_causal_link",
        {
            "project_id": project,
            "cause": ids["event:notes"],
            "effect": "Note G is recognised as the first computer program",
            "confidence": 0.9,
            "create_missing": True,
        },
    )
    ids["event:recognised"] = later["effect"]["id"]
    return ids


async def populate_hub(client: Client, project: str, hub: str, spokes: int) -> None:
    """An entity linked to `spokes` others (two batch calls)."""
    names = [f"spoke {i:03d}" for i in range(spokes)]
    await ok(
        client,
        "create_entities",
        {
            "project_id": project,
            "entities": [{"name": n, "entityType": "thing", "observations": []} for n in [hub, *names]],
        },
    )
    await ok(
        client,
        "create_relations",
        {"project_id": project, "relations": [{"from": hub, "to": n, "relationType": "has"} for n in names]},
    )


# The page's three columns at the driver's 1280x800 window (graph.css: 220px | 1fr | 420px),
# below the 46-pixel header, as (left, top, right, bottom).
RESULTS = (0, 46, 220, 800)
STAGE = (220, 46, 860, 800)
PANEL = (860, 46, 1280, 800)


def distinct_colours(png: bytes, box: tuple[int, int, int, int] | None = None) -> int:
    """How many colours a screenshot (or a region of it) has: an empty region has one; drawn
    nodes or text, with their anti-aliased edges, have dozens."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        region = image.convert("RGB") if box is None else image.convert("RGB").crop(box)
        colours = region.getcolors(maxcolors=1 << 20)
    return len(colours) if colours is not None else 1 << 20


def node_count(page: Page) -> int:
    return int(page.evaluate("window.polygView.cy.nodes().length"))


def click_node(page: Page, name: str) -> None:
    """A real mouse click on the drawn node called `name`."""
    point = page.evaluate(
        f"""(() => {{
          const cy = window.polygView.cy;
          const node = cy.nodes().filter((n) => n.data('name') === {json.dumps(name)})[0];
          const box = cy.container().getBoundingClientRect();
          const at = node.renderedPosition();
          return {{x: box.left + at.x, y: box.top + at.y}};
        }})()"""
    )
    page.click(point["x"], point["y"])


def click(page: Page, selector: str) -> None:
    page.evaluate(f"document.querySelector({json.dumps(selector)}).click()")


def open_tab(page: Page, tab: str) -> None:
    click(page, f'#tabs button[data-tab="{tab}"]')
    page.wait_for(f"!document.getElementById('view-{tab}').hidden")
    page.idle()


def walk_views(page: Page, base_url: str, project: str, ids: dict[str, str], out: Path) -> dict[str, Path]:
    """Open every view of the page on the demo project and screenshot each; the files by view."""
    shots: dict[str, Path] = {}
    page.goto(f"{base_url}/ui")
    page.wait_for(f"[...document.querySelectorAll('#hits a')].some((a) => a.textContent === {json.dumps(project)})")
    shots["projects"] = page.screenshot(out / "0-projects.png")
    click(page, f'#hits a[href$="/p/{project}"]')
    page.wait_for(f"location.pathname === '/ui/p/{project}' && document.readyState === 'complete'")
    page.idle()
    page.evaluate(f"document.getElementById('query').value = {json.dumps(ADA)}")
    page.evaluate("document.querySelector('#search-form button').click()")
    page.wait_for("document.querySelectorAll('#hits button').length > 0")
    page.idle()
    shots["search"] = page.screenshot(out / "1-search.png")
    click(page, f'#hits button[data-id="{ids[ADA]}"]')
    page.wait_for("window.polygView.cy.nodes().length > 1")
    page.idle()
    shots["neighbourhood"] = page.screenshot(out / "2-neighbourhood.png")
    click_node(page, BABBAGE)
    page.wait_for(f"window.polygView.cy.nodes().length > {len(['Ada', 'Engine', 'Babbage'])}")
    page.idle()
    shots["expanded"] = page.screenshot(out / "3-expanded.png")
    page.evaluate(f"location.href = '{base_url}/ui/p/{project}/entity/{ids[ADA]}'")
    page.wait_for("document.readyState === 'complete' && window.polygView && window.polygView.selected")
    page.idle()
    page.evaluate("document.getElementById('asof').value = '1840-01-01'")
    page.evaluate("document.getElementById('asof').dispatchEvent(new Event('change'))")
    page.wait_for("document.getElementById('view-entity').textContent.includes('as of 1840-01-01')")
    page.idle()
    shots["facts"] = page.screenshot(out / "4-facts-as-of.png")
    open_tab(page, "timeline")
    page.wait_for("document.querySelectorAll('#view-timeline li').length > 0")
    shots["timeline"] = page.screenshot(out / "5-timeline.png")
    click(page, f'#view-timeline button[data-event="{ids["event:notes"]}"]')
    page.wait_for("document.querySelectorAll('#view-causal .chain .step').length >= 3")
    page.idle()
    shots["causal"] = page.screenshot(out / "6-causal-chain.png")
    open_tab(page, "document")
    page.wait_for("!!document.querySelector('#view-document pre.document')")
    shots["document"] = page.screenshot(out / "7-document.png")
    return shots


def page_text(page: Page, selector: str = "body") -> Any:
    return page.evaluate(f"document.querySelector({json.dumps(selector)}).textContent")
