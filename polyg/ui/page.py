"""The graph view's HTML: the page served at `/ui` (scripts loaded from `/ui/static`) and the
self-contained copy an MCP client renders (scripts and styles inlined, nothing fetched).

Whatever the server puts in the page (the project, the entity) goes in as JSON inside a
`<script type="application/json">` block with `<`, `>` and `&` escaped, so no name can close the
block or open a tag; the script reads it as data. Error pages escape their message as HTML.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib import resources
from typing import Any, Literal

from polyg import __version__

STATIC_FILES = {
    "cytoscape.min.js": "text/javascript; charset=utf-8",
    "graph.js": "text/javascript; charset=utf-8",
    "graph.css": "text/css; charset=utf-8",
    "cytoscape.LICENSE": "text/plain; charset=utf-8",
}
# The page's own policy: scripts only from this server (the boot data is JSON, not a script),
# nothing framed elsewhere. The MCP client sets its own for the inlined copy.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

BODY = """<header>
  <h1>polyg graph</h1>
  <form id="project-form"><input id="project" name="project" placeholder="project" aria-label="project" size="14">
    <button type="submit">Open</button></form>
  <form id="search-form"><input id="query" name="q" placeholder="search entities" aria-label="search" size="22">
    <button type="submit">Search</button></form>
  <span id="status"></span>
</header>
<main>
  <aside id="results"><h2>Results</h2><div id="hits"></div></aside>
  <section id="stage"><div id="notice"></div><div id="empty">Search, then open an entity.</div>
    <div id="cy"></div></section>
  <aside id="panel">
    <div id="tabs" role="tablist">
      <button data-tab="entity" role="tab">Entity</button><button data-tab="timeline" role="tab">Timeline</button>
      <button data-tab="causal" role="tab">Causal chain</button><button data-tab="document" role="tab">Document</button>
    </div>
    <div class="asof"><label>as of <input type="date" id="asof"></label>
      <label><input type="checkbox" id="history"> all history</label></div>
    <div id="view-entity" class="view"></div><div id="view-timeline" class="view"></div>
    <div id="view-causal" class="view"></div><div id="view-document" class="view"></div>
  </aside>
</main>"""


@cache  # the files ship with the package and do not change while it runs
def static_text(name: str) -> str:
    return resources.files("polyg.ui").joinpath("static", name).read_text(encoding="utf-8")


def boot_json(data: dict[str, Any]) -> str:
    """JSON that cannot end the script block it sits in, whatever strings it carries."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def graph_page(base: str, *, project: str | None, entity: dict[str, str] | None, projects: list[str]) -> str:
    boot = {"mode": "page", "base": base, "project": project, "entity": entity, "projects": projects}
    return _document(
        f'<link rel="stylesheet" href="{escape(base)}/static/graph.css">',
        boot,
        f'<script src="{escape(base)}/static/cytoscape.min.js"></script>\n'
        f'<script src="{escape(base)}/static/graph.js"></script>',
    )


@cache
def app_html() -> str:
    """The MCP App: one document with the library, the script and the styles inlined."""
    scripts = [_inline_script(static_text(name)) for name in ("cytoscape.min.js", "graph.js")]
    return _document(f"<style>{static_text('graph.css')}</style>", {"mode": "app", "version": __version__}, *scripts)


def _inline_script(source: str) -> str:
    # A script element ends at the first `</script`; the vendored files have none (checked here,
    # so that a new version of the library that did would fail at once, not half-load).
    if "</script" in source.lower():
        raise ValueError("an inlined script contains '</script'")
    return f"<script>{source}</script>"


def _document(head: str, boot: dict[str, Any], *scripts: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>polyg graph</title>{head}</head>\n<body>\n{BODY}\n"
        f'<script type="application/json" id="polyg-boot">{boot_json(boot)}</script>\n'
        + "\n".join(scripts)
        + "\n</body></html>\n"
    )


def error_page(status: Literal[404, 500, 503], title: str, message: str, base: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>'
        f"{status} {escape(title)} - polyg</title>"
        f'<link rel="stylesheet" href="{escape(base)}/static/graph.css"></head>\n'
        f'<body><header><h1>polyg graph</h1></header><main style="display:block;padding:24px">'
        f'<h2>{status} {escape(title)}</h2><p class="error" id="error-message">{escape(message)}</p>'
        f'<p><a href="{escape(base)}">Back to the graph view</a></p></main></body></html>\n'
    )
