"""What the graph view asks the server, each answered by polyg's own read tools.

A view runs one or two tools through a `Dispatcher` of its own (the MCP server's: the same
argument validation, errors and call log), over the tools it needs whatever toolsets the server
serves: the page can draw a neighbourhood (graphrag's tools) on a server that serves only the
default toolsets. No graph logic lives here: a view only chooses the tools and their arguments.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from polyg.core.app import Polyg
from polyg.errors import PolygError
from polyg.server import Dispatcher
from polyg.store.names import short
from polyg.tools import toolsets

# The toolsets whose tools the views use, and those tools (all read the graph; generate_documents
# also fills the documents' cache).
VIEW_TOOLSETS = ["kg", "memory", "graphrag", "knowledge"]
VIEW_TOOLS = {
    "list_entities",
    "search_semantic",
    "get_entity_neighbors",
    "build_local_graph",
    "get_entity",
    "query_timeline",
    "get_causal_chain",
    "generate_documents",
}
# An entity's neighbours drawn at most; a hub with more says so on the page. build_local_graph
# takes 200 entities at most, the entity itself among them.
NEIGHBOURS_SHOWN = 100
SEARCH_HITS = 20


class ViewError(Exception):
    """A tool's error, with the HTTP status the view answers with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def status(self) -> int:
        if self.code == 4004:
            return 404
        if 2000 <= self.code < 3000:  # the store: not ready, unreachable, timed out
            return 503
        return 500 if self.code == 4000 else 400


class GraphViews:
    def __init__(self, core: Polyg) -> None:
        self.core = core

    @cached_property
    def dispatcher(self) -> Dispatcher:
        # Loaded at the first view, not at start: a server whose page nobody opens pays nothing.
        tools = [t for t in toolsets.enabled(VIEW_TOOLSETS) if t.name in VIEW_TOOLS]
        return Dispatcher(self.core, tools)

    async def run(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.dispatcher.call(tool, arguments)
        if result.is_error:
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else "failed"
            code = int((result.meta or {}).get("polyg/errorCode", 4000))
            raise ViewError(text.removeprefix("Error: "), code)
        return dict(result.structured_content or {})

    async def projects(self) -> list[str]:
        try:
            services = await self.core.ready(self.core.settings.store_wait_s)
            return sorted(await services.projects.names())
        except PolygError as exc:
            raise ViewError(exc.message, exc.code) from exc

    async def require_project(self, project: str) -> None:
        if project not in await self.projects():
            raise ViewError(f"Project {short(project)} does not exist.", 4004)

    async def entity_ref(self, project: str, entity_id: str) -> dict[str, str]:
        """The entity's id and name (for the page's title and first view); 404 if it does not exist."""
        found = await self.run("get_entity", {"project_id": project, "entity_id": entity_id, "observation_limit": 1})
        return {"id": found["entity"]["id"], "name": found["entity"]["name"]}

    async def search(self, project: str, query: str) -> dict[str, Any]:
        """Entities whose name contains the query, then what search_semantic finds by meaning and
        words (each once), in search_semantic's result shape."""
        by_name = await self.run("list_entities", {"project_id": project, "name_contains": query, "limit": SEARCH_HITS})
        by_meaning = await self.run("search_semantic", {"project_id": project, "query": query, "limit": SEARCH_HITS})
        hits = [{"id": e["id"], "kind": "entity", "text": e["name"], "type": e["type"]} for e in by_name["entities"]]
        seen = {hit["id"] for hit in hits}
        hits += [hit for hit in by_meaning["results"] if hit["id"] not in seen]
        return {"results": hits[:SEARCH_HITS]}

    async def neighbourhood(self, project: str, entity_id: str) -> dict[str, Any]:
        """The entity and its nearest neighbours (at most NEIGHBOURS_SHOWN), with salience and the
        relationships among them: the entity's local graph."""
        near = await self.run(
            "get_entity_neighbors", {"project_id": project, "entity_id": entity_id, "limit": NEIGHBOURS_SHOWN + 1}
        )
        ids = [n["neighbor_id"] for n in near["neighbors"] if n["neighbor_id"]]
        capped = len(ids) > NEIGHBOURS_SHOWN
        shown = ids[:NEIGHBOURS_SHOWN]
        local = await self.run("build_local_graph", {"project_id": project, "entity_ids": [entity_id, *shown]})
        return {"center": entity_id, "graph": local["graph"], "capped": capped, "shown": len(shown)}

    async def entity(self, project: str, name: str, as_of: str | None, history: bool) -> dict[str, Any]:
        arguments: dict[str, Any] = {"project_id": project, "name": name, "include_history": history}
        if as_of:
            arguments["as_of"] = as_of
        return await self.run("get_entity", arguments)

    async def timeline(self, project: str, entity: str) -> dict[str, Any]:
        return await self.run("query_timeline", {"project_id": project, "entity": entity})

    async def causal(self, project: str, event: str) -> dict[str, Any]:
        return await self.run("get_causal_chain", {"project_id": project, "event": event, "direction": "both"})

    async def document(self, project: str, node: str) -> dict[str, Any]:
        return await self.run("generate_documents", {"project_id": project, "node_identifiers": [node]})
