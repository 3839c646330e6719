"""The runner of template variable queries (spec 000): user Cypher, read-only, bound to a node.

A query runs through GRAPH.RO_QUERY (FalkorDB refuses any write, write procedures included)
with `n` bound to the target node, under a time limit and a row cap. `check` is what saving a
template calls: the query must compile (GRAPH.EXPLAIN; FalkorDB's reason is passed on as a 4002
error), must not write, and must not leave its node: its plan may start from `n` only, so node
or edge scans, index and full-text lookups, procedure calls, cartesian products, UNION and a
second seek by id are refused. Reading outward from `n` is what a template variable is for.

`Result.node_ids` / `edge_ids` are the dependencies a cached document needs: the bound node and
every node, relationship and path the rows return, at any depth of lists and maps. A query that
returns only properties (`RETURN p.name`) shows none of what it read, so `run(...,
dependencies=True)` runs it a second time with its final projection replaced by `RETURN *`
(every variable in scope there, capped at `MAX_PROBE_ROWS` rows) and adds what that returns.
What this cannot see: pattern elements without a variable (`(n)-->(:Person)-->(q)`: the middle
node) and variables a `WITH` dropped before the final RETURN. Templates that name what they
match get exact dependencies; `Result.dependencies_probed` says whether the probe ran in full.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from falkordb import Edge, Node, Path

from polyg.core import limits
from polyg.core.documents import cypher_bounds
from polyg.core.graph.context import GraphContext
from polyg.errors import (
    InvalidParams,
    NotFound,
    QueryMemoryExceeded,
    QueryTimedOut,
    QueryTooCostly,
    StoreError,
    StoreTimeout,
    UserQueryTimeout,
)
from polyg.names import check_project_id
from polyg.store.falkor import Row
from polyg.store.names import Label
from polyg.store.queries import traversal as tq
from polyg.store.queries import user_cypher as q

DEFAULT_TIMEOUT_MS = 1_000
# What the variables of one template share when a document is rendered: each runs (and its
# dependency probe runs) within its share, so a template of 32 slow variables holds the database
# for about twice this, not 32 x 2 s. A template of one or two variables keeps 1 s each.
RENDER_BUDGET_MS = 2_000
MIN_SHARE_MS = 50
MAX_TIMEOUT_MS = 30_000
DEFAULT_MAX_ROWS = 1_000
MAX_PROBE_ROWS = 10_000
MAX_QUERY = 16_384
PROBE_COLUMNS_KEPT = 1_024

# Plan operations that read beyond the bound node, or write (RO_QUERY refuses writes when the
# query runs; refusing them on save says so earlier).
ESCAPES = frozenset(
    {
        "All Node Scan",
        "Node By Label Scan",
        "Node By Index Scan",
        "Node By Label and ID Scan",
        "Node By Fulltext Index Scan",
        "Edge By Index Scan",
        "Cartesian Product",
        "ProcedureCall",
        "Join",
    }
)
WRITES = frozenset({"Create", "Merge", "MergeCreate", "Delete", "Update", "Foreach", "Load CSV"})
SEEK = "NodeByIdSeek"


@dataclass(frozen=True)
class Result:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    # Internal ids (`id(x)`) of the nodes and relationships the rows hold, the bound node included.
    node_ids: frozenset[int]
    edge_ids: frozenset[int]
    # The dependency probe ran and returned all its rows (see the module docstring).
    dependencies_probed: bool = False
    # Internal ids of the end nodes of `edge_ids`: a change to a relationship stamps its ends
    # (`updated_at`), so a cache keyed on nodes sees it through them.
    edge_end_ids: frozenset[int] = frozenset()


def _walk(value: Any) -> Iterator[Node | Edge]:
    if isinstance(value, (Node, Edge)):
        yield value
    elif isinstance(value, Path):
        yield from value.nodes()
        yield from value.edges()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)


def graph_ids(rows: list[Row]) -> tuple[set[int], set[int]]:
    """Internal ids of the nodes and of the relationships found anywhere in the rows."""
    nodes: set[int] = set()
    edges: set[int] = set()
    for value in _walk(rows):
        (nodes if isinstance(value, Node) else edges).add(int(value.id))
    return nodes, edges


def edge_ends(rows: list[Row]) -> set[int]:
    """Internal ids of the end nodes of every relationship found anywhere in the rows."""
    ends: set[int] = set()
    for value in _walk(rows):
        if isinstance(value, Edge):
            for end in (value.src_node, value.dest_node):
                ends.add(int(end.id) if isinstance(end, Node) else int(end))
    return ends


def probed_ids(rows: list[Row]) -> tuple[set[int], set[int], set[int]]:
    """Nodes, relationships and relationship ends in the rows of an `ids_probe`."""
    nodes: set[int] = set()
    edges: set[int] = set()
    ends: set[int] = set()
    for found_nodes, found_edges, path_nodes, path_edges, nested in rows:
        nodes.update(int(i) for i in found_nodes)
        nodes.update(int(i) for path in path_nodes for i in path)
        edges.update(int(i) for path in path_edges for i in path)
        for edge, start, end in found_edges:
            edges.add(int(edge))
            ends.update((int(start), int(end)))
        more_nodes, more_edges = graph_ids(nested)
        nodes |= more_nodes
        edges |= more_edges
        ends |= edge_ends(nested)
    return nodes, edges, ends


def plain(value: Any) -> Any:
    """A row value with nodes, relationships and paths turned into maps a caller can shape."""
    if isinstance(value, Node):
        return {"labels": list(value.labels), "properties": dict(value.properties)}
    if isinstance(value, Edge):
        return {"type": value.relation, "properties": dict(value.properties)}
    if isinstance(value, Path):
        return {"nodes": [plain(n) for n in value.nodes()], "relationships": [plain(e) for e in value.edges()]}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _reason(exc: StoreError) -> str:
    return exc.message.removeprefix("FalkorDB error: ").replace("errMsg: ", "").strip()


class UserCypher:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx
        # The variables in scope at a query's final RETURN depend on its text only.
        self._probe_columns: dict[str, list[str]] = {}

    async def check(self, project: str, query: str) -> None:
        """Refuses (4002, with the reason) a query that does not compile, writes or leaves `n`."""
        check_project_id(project)
        _check_text(query)
        # GRAPH.EXPLAIN needs the project's graph to exist; saving a template creates it anyway.
        await self.ctx.schema.ensure(project)
        try:
            ops = await q.plan(self.ctx.store, project, query)
        except QueryMemoryExceeded as exc:
            raise _too_much_memory() from exc
        except StoreTimeout:
            raise
        except StoreError as exc:
            raise InvalidParams(f"The query does not compile: {_reason(exc)}") from exc
        writes = sorted(WRITES.intersection(ops))
        if writes:
            raise InvalidParams(f"The query writes ({', '.join(writes)}); template queries are read-only.")
        escapes = sorted(ESCAPES.intersection(ops))
        if escapes or ops.count(SEEK) != 1:
            how = ", ".join(escapes) or "a second node looked up by id"
            raise InvalidParams(
                f"The query reads beyond its node ({how}): start every pattern from n, "
                "e.g. MATCH (n)-[r:KNOWS]->(p) RETURN p.name."
            )

    async def run(
        self,
        project: str,
        query: str,
        node: int,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        max_rows: int = DEFAULT_MAX_ROWS,
        dependencies: bool = False,
    ) -> Result:
        """Runs `query` with `n` bound to the node of internal id `node`; with `dependencies`,
        also finds what it matched (see the module docstring)."""
        check_project_id(project)
        _check_text(query)
        if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
            raise InvalidParams(f"timeout_ms must be between 1 and {MAX_TIMEOUT_MS}.")
        limits.limit(max_rows, "max_rows")
        try:
            graph_rows, columns = await self._rows(project, query, node, timeout_ms)
        except QueryTimedOut as exc:
            raise _too_long(timeout_ms) from exc
        rows = graph_rows[:max_rows]
        nodes, edges = graph_ids(rows)
        nodes.add(node)
        ends = edge_ends(rows)
        probed = False
        if dependencies:
            probe_rows = await self._probe(project, query, node, timeout_ms)
            if probe_rows is not None:
                more_nodes, more_edges, more_ends = probed_ids(probe_rows)
                nodes |= more_nodes
                edges |= more_edges
                ends |= more_ends
                probed = len(probe_rows) < MAX_PROBE_ROWS
        return Result(
            columns=columns,
            rows=tuple(tuple(plain(v) for v in row) for row in rows),
            truncated=len(graph_rows) > max_rows,
            node_ids=frozenset(nodes),
            edge_ids=frozenset(edges),
            dependencies_probed=probed,
            edge_end_ids=frozenset(ends),
        )

    async def _probe(self, project: str, query: str, node: int, timeout_ms: int) -> list[Row] | None:
        probe = q.dependency_probe(query)
        if probe is None:
            return None
        try:
            columns = self._probe_columns.get(probe)
            if columns is None:
                columns = await q.probe_columns(self.ctx.store, project, probe, timeout_ms=timeout_ms)
                if len(self._probe_columns) >= PROBE_COLUMNS_KEPT:
                    self._probe_columns.clear()
                self._probe_columns[probe] = columns
            if not columns:
                return None
            return await q.run_probe(
                self.ctx.store, project, q.ids_probe(probe, columns), node, timeout_ms=timeout_ms, cap=MAX_PROBE_ROWS
            )
        except QueryTimedOut as exc:
            raise _too_long(timeout_ms) from exc
        except QueryMemoryExceeded as exc:
            raise _too_much_memory() from exc
        except StoreError:
            return None  # e.g. no variable left in scope at the final RETURN: the rows are all we know

    async def run_for(self, project: str, query: str, label: Label, node_id: str, **options: Any) -> Result:
        """`run` with the target given by its polyg id and label."""
        found = await tq.find_node(self.ctx, project, label, node_id)
        if found is None:
            raise NotFound(f"Node {node_id} not found.")
        return await self.run(project, query, int(found[0]), **options)

    async def _rows(self, project: str, query: str, node: int, timeout_ms: int) -> tuple[list[Row], tuple[str, ...]]:
        try:
            columns, rows = await q.run(self.ctx.store, project, query, node, timeout_ms=timeout_ms)
        except QueryMemoryExceeded as exc:
            raise _too_much_memory() from exc
        except StoreTimeout:
            raise
        except StoreError as exc:
            if "read-only" in exc.message:
                raise InvalidParams("The query writes; template queries are read-only.") from exc
            raise InvalidParams(f"The query failed: {_reason(exc)}") from exc
        return rows, tuple(columns)


def render_share_ms(variables: int) -> int:
    """The time limit of each of a template's `variables` queries when a document is rendered."""
    return max(MIN_SHARE_MS, min(DEFAULT_TIMEOUT_MS, RENDER_BUDGET_MS // max(variables, 1)))


def _check_text(query: str) -> None:
    limits.text(query, "query", max_len=MAX_QUERY)
    # At render too: a template saved before these checks existed is refused, not run.
    cypher_bounds.check(query)


def _too_long(timeout_ms: int) -> UserQueryTimeout:
    return UserQueryTimeout(f"The template query ran longer than its limit of {timeout_ms} ms.")


def _too_much_memory() -> QueryTooCostly:
    return QueryTooCostly("The template query needed more memory than one query may use.")
