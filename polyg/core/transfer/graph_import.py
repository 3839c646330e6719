"""`polyg import` of what the memory toolset's `export_graph(format: json)` returns.

A file holds one page of that tool's result (as a client saved it), a JSON list of pages, or
one page per line. Together the pages must make the whole export: offsets from 0, each page
starting where the one before said (`next_offset`), the last one with `next_offset` null.
Everything is read and checked before the first write: a file that is incomplete or has one
bad item is refused whole, naming what is wrong, and nothing is written.

Restoring keeps ids, labels, types and properties as exported. Nodes and relationships that
the project holds already (the same id; an id-less relationship between the same two nodes)
are left as they are, so an interrupted import can be run again. The schema record
(`PolygMeta`) stays the project's own; relationship types are merged by name. Vectors come
back as exported; where the export left them out (`include_embeddings: false`), the nodes of
every label the vectorizer embeds (entities, events, chunks: the embeddable registry's) are
queued for it.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyg.core import limits
from polyg.core.graph.chunk_mentions import follow_chunks, follow_entities
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.embeddable import REGISTRY
from polyg.core.memory.temporal import TemporalGraph
from polyg.core.memory.views import VECTOR_KEYS
from polyg.core.text.time import epoch_us, parse_instant
from polyg.errors import InvalidParams, PolygError
from polyg.store.falkor import VectorParam
from polyg.store.names import (
    CHUNK,
    ENTITY,
    EVENT,
    NAME,
    POLYG_META,
    RELATIONSHIP_TYPE,
    Label,
    RelType,
    is_own_rel_type,
    short,
)
from polyg.store.queries import transfer as q

FORMAT = "json"  # what export_graph calls its JSON form
BATCH = 500
# Labels whose vectors the vectorizer makes: a node of one whose export left its vectors out is
# queued for it.
VECTORIZED = frozenset(REGISTRY.vectorized_labels())
Progress = Callable[[int], None]


# --- reading the file ------------------------------------------------------------------------


def is_graph_export(value: Any) -> bool:
    """Whether a JSON value is one page of `export_graph`'s JSON form."""
    return isinstance(value, dict) and value.get("format") == FORMAT and isinstance(value.get("items"), list)


def read_pages(path: Path, text: str) -> list[dict[str, Any]]:
    """The pages of a file (`text`, decoded): one page, a list of pages, or a page per line."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise InvalidParams(f"{path.name}, line {whole.lineno}: not JSON ({whole.msg}).") from None
        pages = []
        for number, line in lines:
            try:
                pages.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidParams(f"{path.name}, line {number}: not JSON ({exc.msg}).") from None
        document = pages
    pages = document if isinstance(document, list) else [document]
    for i, page in enumerate(pages):
        if not is_graph_export(page):
            where = f"page {i + 1}" if isinstance(document, list) else "the file"
            raise InvalidParams(
                f'{path.name}: {where} is not an export_graph result (expected "format": "json" and "items").'
            )
    return pages


def whole_export(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the pages in order, or an error saying which page is missing."""
    by_offset: dict[int, dict[str, Any]] = {}
    for page in pages:
        offset = page.get("offset", 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidParams(f"A page has an invalid offset {offset!r}.")
        if offset in by_offset and by_offset[offset] != page:
            raise InvalidParams(f"Two different pages start at offset {offset}.")
        by_offset[offset] = page
    items: list[dict[str, Any]] = []
    at: int | None = 0
    while at is not None:
        if at not in by_offset:
            raise InvalidParams(
                f"The export is incomplete: the page at offset {at} is missing "
                "(call export_graph with that offset and add its result to the file)."
            )
        page = by_offset.pop(at)
        items += page["items"]
        after = page.get("next_offset")
        if after is not None and (not isinstance(after, int) or isinstance(after, bool) or after <= at):
            raise InvalidParams(f"The page at offset {at} has an invalid next_offset {after!r}.")
        at = after
    if by_offset:
        raise InvalidParams(f"Pages at offsets {sorted(by_offset)} follow no page of the export.")
    return items


# --- checking the items ------------------------------------------------------------------------


@dataclass
class Node:
    labels: tuple[Label, ...]
    kind: Label  # the label edges name it by (views.KIND): Entity, Event, else its first
    id: str | None
    props: dict[str, Any]
    vectors: dict[str, list[float]]


@dataclass
class Edge:
    type: RelType
    start: tuple[Label, str]
    end: tuple[Label, str]
    props: dict[str, Any]


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    dimension: int | None = None  # of the exported vectors, when there are any

    def outside_ends(self) -> dict[Label, set[str]]:
        """Ends of relationships that are not nodes of the export (label -> ids): the project
        must hold them."""
        known = {(n.kind, n.id) for n in self.nodes}
        outside: dict[Label, set[str]] = defaultdict(set)
        for edge in self.edges:
            for label, node_id in (edge.start, edge.end):
                if (label, node_id) not in known:
                    outside[label].add(node_id)
        return outside


def _value(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return limits.text(value, where, max_len=limits.MAX_TEXT, allow_empty=True)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if not (math.isfinite(value) and abs(value) < 2**63):
            raise InvalidParams(f"{where} is not a finite number.")
        return value
    if isinstance(value, list) and all(not isinstance(v, list | dict) for v in value):
        return [_value(v, where) for v in value]
    raise InvalidParams(f"{where} must be a string, number, boolean or a list of them.")


def _properties(raw: Any) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """(properties, vectors) of an item, each value checked; a null value is no property."""
    where = "properties"
    if not isinstance(raw, dict):
        raise InvalidParams(f"{where} must be an object.")
    props: dict[str, Any] = {}
    vectors: dict[str, list[float]] = {}
    for key, value in raw.items():
        if not (isinstance(key, str) and NAME.fullmatch(key)):
            raise InvalidParams(f"property name {short(key)} is not a valid name.")
        if value is None:
            continue
        if key in VECTOR_KEYS:
            if not (isinstance(value, list) and value and all(isinstance(v, int | float) for v in value)):
                raise InvalidParams(f"{where}.{key} must be a list of numbers.")
            vectors[key] = [float(_value(v, f"{where}.{key}")) for v in value]
        else:
            props[key] = _value(value, f"{where}.{key}")
    return props, vectors


def _end(raw: Any, where: str) -> tuple[Label, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise InvalidParams(f"{where} must be an object with a label and an id.")
    return Label(raw.get("label")), limits.identifier(raw["id"], f"{where}.id")


def check(items: list[Any]) -> Graph:
    """Every item checked (InvalidParams naming the first bad one); the schema record left out."""
    graph = Graph()
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(items):
        where = f"items[{i}]"
        try:
            if not isinstance(item, dict) or item.get("kind") not in ("node", "edge"):
                raise InvalidParams('not a node or an edge (expected "kind": "node" or "edge").')
            if item["kind"] == "node":
                node = _node(item)
                if node is None:
                    continue
                key = (node.kind, node.id or f"name:{node.props.get('name')}")
                if key in seen:
                    raise InvalidParams(f"a second {node.kind} with id {node.id!r}.")
                seen.add(key)
                for vector in node.vectors.values():
                    if graph.dimension not in (None, len(vector)):
                        raise InvalidParams("vectors of different lengths.")
                    graph.dimension = len(vector)
                graph.nodes.append(node)
            else:
                graph.edges.append(_edge(item))
        except PolygError as exc:
            raise InvalidParams(f"{where}: {exc.message}") from None
    return graph


def _node(item: dict[str, Any]) -> Node | None:
    raw_labels = item.get("labels")
    if not isinstance(raw_labels, list) or not raw_labels:
        raise InvalidParams("labels must be a non-empty list.")
    labels = tuple(Label(label) for label in raw_labels)
    if POLYG_META in labels:
        return None  # the target project keeps its own schema record
    props, vectors = _properties(item.get("properties"))
    kind = next((label for label in (ENTITY, EVENT) if label in labels), labels[0])
    node_id = props.get("id")
    if RELATIONSHIP_TYPE in labels:
        if not isinstance(props.get("name"), str):
            raise InvalidParams("a relationship type without a name.")
    elif not isinstance(node_id, str):
        raise InvalidParams("a node without an id.")
    return Node(labels, kind, node_id, props, vectors)


def _edge(item: dict[str, Any]) -> Edge:
    props, vectors = _properties(item.get("properties"))
    if vectors:
        raise InvalidParams("a relationship cannot hold a vector.")
    valid_from = props.get("valid_from")
    if isinstance(valid_from, str) and "valid_from_us" not in props:  # exported before it existed
        props["valid_from_us"] = epoch_us(parse_instant(valid_from))
    start, end = _end(item.get("from"), "from"), _end(item.get("to"), "to")
    return Edge(RelType(item.get("type")), start, end, props)


# --- writing -------------------------------------------------------------------------------------


@dataclass
class Report:
    nodes_created: int = 0
    edges_created: int = 0
    already_there: int = 0  # nodes and relationships the project held (left as they were)


def _batches(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class GraphImport:
    def __init__(self, ctx: GraphContext, temporal: TemporalGraph) -> None:
        self.ctx = ctx
        self.edges = EdgeWriter(ctx, temporal.reltypes)
        self.temporal = temporal

    async def restore(
        self, project: str, graph: Graph, *, batch_size: int = BATCH, progress: Progress | None = None
    ) -> Report:
        """Write the graph into the project (see the module's rules); checks against the
        project (vector size, relationship ends outside the export) come first."""
        dimension = self.ctx.embedder.dimension
        if graph.dimension is not None and graph.dimension != dimension:
            raise InvalidParams(
                f"The export's vectors have {graph.dimension} dimensions but this project's embedder makes "
                f"{dimension}: export again without them (include_embeddings: false; `polyg export` without "
                "--embeddings), and polyg computes them."
            )
        for label, ids in graph.outside_ends().items():
            missing = sorted(ids - set(await q.existing_ids(self.ctx, project, label, sorted(ids))))
            if missing:
                raise InvalidParams(
                    f"A relationship joins {label} {missing[0]!r}, which is neither in the export nor in "
                    f"project {project!r}: the file is not a whole export."
                )
        # Everything is checked: now the writes.
        report = Report()
        types = [n for n in graph.nodes if RELATIONSHIP_TYPE in n.labels]
        if types:
            made = await q.merge_relationship_types(self.ctx, project, [n.props for n in types])
            report.nodes_created += made
            report.already_there += len(types) - made
            if progress:
                progress(len(types))
        groups: dict[tuple[Label, ...], list[Node]] = defaultdict(list)
        for node in graph.nodes:
            if RELATIONSHIP_TYPE not in node.labels:
                groups[node.labels].append(node)
        for labels, nodes in groups.items():
            for batch in _batches(nodes, batch_size):
                made = await q.create_nodes(self.ctx, project, labels, batch[0].kind, [_node_row(n) for n in batch])
                report.nodes_created += made
                report.already_there += len(batch) - made
                if progress:
                    progress(len(batch))
        await self.temporal.reltypes.ensure(
            project, sorted({e.type for e in graph.edges if not is_own_rel_type(e.type)})
        )
        by_ends: dict[tuple[RelType, Label, Label], list[Edge]] = defaultdict(list)
        for edge in graph.edges:
            by_ends[(edge.type, edge.start[0], edge.end[0])].append(edge)
        for (rel_type, start, end), edges in by_ends.items():
            for batch in _batches(edges, batch_size):
                rows = [
                    {"id": e.props.get("id"), "a": e.start[1], "b": e.end[1], "type": rel_type, "props": e.props}
                    for e in batch
                ]
                # Restored as exported, but those there already (the same id, or an id-less one
                # between the same two nodes); the types were registered above.
                made = len(
                    await self.edges.create(
                        project, rows, if_absent="id", shape="verbatim", source=start, target=end, register=False
                    )
                )
                report.edges_created += made
                report.already_there += len(batch) - made
                if progress:
                    progress(len(batch))
        fact_types = sorted({e.type for e in graph.edges if "valid_from" in e.props and not is_own_rel_type(e.type)})
        await self.temporal.mark_fact_types(project, fact_types)
        await self._link_mentions(project, graph.nodes)
        queued: dict[Label, list[str]] = defaultdict(list)
        for node in graph.nodes:
            if _unembedded(node) and node.id:
                queued[Label(node.kind)].append(node.id)
        for label, queued_ids in queued.items():
            self.ctx.vectors.mark(project, queued_ids, label)
        return report

    async def _link_mentions(self, project: str, nodes: list[Node]) -> None:
        """The `MENTIONS` links ingestion and the vectorizer make (`polyg.core.graph.chunk_mentions`): from
        the chunks restored to the entities they name, and to the entities restored with their
        vectors from the chunks that name them (the vectorizer follows those it is given)."""
        chunks = [(n.id, str(n.props.get("text") or "")) for n in nodes if n.kind == CHUNK and n.id]
        await follow_chunks(self.ctx, project, chunks)
        entities = [
            (n.id, str(n.props.get("name") or ""))
            for n in nodes
            if n.kind == ENTITY and n.id and "embedding" in n.vectors
        ]
        for batch in _batches(entities):
            await follow_entities(self.ctx, project, batch)


def _unembedded(node: Node) -> bool:
    """Whether the node is of a label the vectorizer embeds and came without its vector."""
    return node.kind in VECTORIZED and "embedding" not in node.vectors


def _node_row(node: Node) -> dict[str, Any]:
    props = dict(node.props)
    if _unembedded(node):
        # The vectorizer embeds nodes whose revision has no vector yet.
        props["rev"] = props.get("rev") or str(uuid.uuid4())
        props.pop("vec_rev", None)
    return {
        "id": node.id,
        "props": props,
        **{key: VectorParam(vector) for key, vector in node.vectors.items()},
    }
