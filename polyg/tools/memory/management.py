"""The memory toolset's management tools: `get_statistics`, `clear_graph` and `export_graph`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.memory.shared import OFFSET, Graph, memory
from polyg.tools.registry import Params

# --- result shapes ---------------------------------------------------------------------


class StatisticsResult(BaseModel):
    graphs: dict[str, dict[str, Any]]
    orphans: dict[str, int]


class ClearResult(BaseModel):
    graph: str
    deleted: int


class ExportResult(BaseModel):
    format: Literal["cypher", "json"]
    nodes: int
    edges: int
    offset: int
    next_offset: int | None
    statements: list[str] = []
    items: list[dict[str, Any]] = []
    note: str | None = None


# --- parameters ------------------------------------------------------------------------


class GetStatistics(Params):
    pass


class ClearGraph(Params):
    graph: Graph
    confirm: bool = False


class ExportGraph(Params):
    format: Literal["cypher", "json"] = "json"
    offset: int = OFFSET
    limit: int = Field(default=5000, ge=1, le=20000, description="Nodes and relationships per page.")
    # Off unless asked: 384 floats a node made a page of 5,000 nodes 17.7 MB (and its build held
    # up other calls for seconds); an import computes the vectors again when they are missing.
    include_embeddings: bool = Field(
        default=False, description="Also export each node's vectors (large: about 4 KB a node in JSON)."
    )


# --- tools -----------------------------------------------------------------------------


@memory.tool(GetStatistics, StatisticsResult, read_only=True, title="Graph statistics")
async def get_statistics(s: Services, p: GetStatistics) -> StatisticsResult:
    """Counts per graph (entity, temporal, causal, semantic), and orphan nodes.

    Per graph: nodes and relationships of each kind, facts current and invalidated, vectors
    pending; orphans are nodes no other graph links to."""
    stats = await s.memory.views.statistics(s.project(p.project_id))
    return shaping.typed(
        StatisticsResult,
        {
            "graphs": {
                "entity": stats.entity,
                "temporal": stats.temporal,
                "causal": stats.causal,
                "semantic": stats.semantic,
            },
            "orphans": stats.orphans,
        },
    )


@memory.tool(ClearGraph, ClearResult, destructive=True, title="Clear graph")
async def clear_graph(s: Services, p: ClearGraph) -> ClearResult:
    """Delete one graph's contents (semantic, temporal, causal, entity) or all; needs confirm.

    Cannot be undone."""
    if not p.confirm:
        raise InvalidParams(f"Clearing the {p.graph} graph deletes data for good: call again with confirm: true.")
    deleted = await s.memory.views.clear(s.project(p.project_id), p.graph)
    return shaping.typed(ClearResult, {"graph": p.graph, "deleted": deleted})


@memory.tool(ExportGraph, ExportResult, read_only=True, title="Export graph")
async def export_graph(s: Services, p: ExportGraph) -> ExportResult:
    """The project graph as Cypher statements or JSON nodes and edges, a page at a time.

    The Cypher statements rebuild it in an empty FalkorDB graph; read on with next_offset until
    it is null."""
    export = await s.memory.views.export(
        s.project(p.project_id), p.format, offset=p.offset, limit=p.limit, embeddings=p.include_embeddings
    )
    page: dict[str, Any] = {
        "format": export.format,
        "nodes": export.nodes,
        "edges": export.edges,
        "offset": export.offset,
        "next_offset": export.next_offset,
        "statements": export.statements,
        "items": export.items,
    }
    return shaping.typed(ExportResult, _export_within_budget(page))


def _export_within_budget(page: dict[str, Any]) -> dict[str, Any]:
    """A page cut to the response budget: its first nodes and edges that fit, `next_offset`
    where the rest start. Index statements (the first page's) come before the rows and stay."""
    key = "items" if page["format"] == "json" else "statements"
    rows = page["nodes"] + page["edges"]
    whole = page[key]
    leading = len(whole) - rows  # index statements, not counted by offset
    if shaping.keep_fitting(page, key) and rows:
        # At least one row, so that paging moves on.
        shown = max(len(page[key]) - leading, 1)
        page[key] = whole[: leading + shown]
    if rows and len(page[key]) < len(whole):
        shown = shaping.Page(page[key][leading:], page["offset"], True, cut=len(whole) - len(page[key]))
        page["nodes"] = min(page["nodes"], len(shown.items))
        page["edges"] = len(shown.items) - page["nodes"]
        page["next_offset"] = shown.next_offset
        page["note"] = shown.note("export_graph")
    return page
