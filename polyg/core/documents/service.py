"""Documents generated from templates (spec 000 `generate_documents`), cached with exact
invalidation.

A node is named by id, else by name (exact, then in any case), else by the name sharing the most
words with it (token Jaccard). Its template is the one asked for, else the one it uses
(USES_TEMPLATE), else the oldest whose node_types name its type, else a built-in one.

Rendering: the template data is the node's properties, `name`, `summary`, then each variable's
rows (a list of maps, one per row, keyed by column) and `has_<variable>` (whether it returned
rows). Each variable runs read-only with `n` bound to the node, under a time limit and a row cap
(`polyg.core.documents.user_cypher`). Partials (`{{> name}}`) are other templates of the project, by id or
name; only their structure is used.

Dependencies: the node itself, every node and relationship any variable's rows hold, and what
its final projection matched (the runner re-runs it with `RETURN *`), with the end nodes of
every such relationship; the template and the partials used. A relationship's change stamps its
end nodes' `updated_at`, so nodes stand for relationships. The cache is valid while each of those
nodes' `updated_at` is what it was when the document was built, and none was deleted. What this
cannot see: a node a pattern passed through without naming it, and a change that makes a pattern
match where it matched nothing from a node it never reached (see `polyg.core.documents.user_cypher`).
A dependency stamped after the document's generation began (changed while it was being built)
is recorded as seen 'stale': the cached copy is never served and the next call builds it again.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyg.core import limits
from polyg.core.documents import mustache
from polyg.core.documents.templates import Template, TemplateService, template_from
from polyg.core.documents.user_cypher import RENDER_BUDGET_MS, UserCypher, render_share_ms
from polyg.core.graph.context import GraphContext
from polyg.errors import InvalidParams, NotFound, UserQueryTimeout
from polyg.names import new_id, now_iso
from polyg.store.falkor import Row
from polyg.store.names import ENTITY, Label
from polyg.store.queries import documents as q

TOKEN = re.compile(r"\w+", re.UNICODE)
FUZZY_CANDIDATES = 2_000
MIN_JACCARD = 0.2
MAX_IDENTIFIERS = 100
DEFAULT_TEMPLATE = Template(
    id="default",
    name="Default",
    description="A node's name, summary and relationships.",
    structure=(
        "# {{name}}\n\n{{summary}}\n"
        "{{#has_outgoing}}\n## Relationships\n{{#outgoing}}* {{type}} {{name}}\n{{/outgoing}}{{/has_outgoing}}"
        "{{#has_incoming}}\n## Referenced by\n{{#incoming}}* {{name}} {{type}}\n{{/incoming}}{{/has_incoming}}"
    ),
    variables={
        "outgoing": (
            # polyg's own DEPENDS_ON leaves a cached document, never a node: one leaving the node
            # is the user's (polyg.store.names.SHARED_REL_TYPES).
            "MATCH (n)-[r]->(m) WHERE NOT type(r) IN ['USES_TEMPLATE', 'CACHED_AT', 'HAS_OBSERVATION'] "
            "RETURN type(r) AS type, m.name AS name, r, m ORDER BY type, name LIMIT 100"
        ),
        "incoming": (
            "MATCH (n)<-[r]-(m) WHERE NOT type(r) IN ['USES_TEMPLATE', 'CACHED_AT'] AND NOT m:CachedDocument "
            "RETURN type(r) AS type, m.name AS name, r, m ORDER BY type, name LIMIT 100"
        ),
    },
)


@dataclass(frozen=True)
class TargetNode:
    internal_id: int
    id: str
    name: str
    type: str | None
    summary: str
    labels: tuple[str, ...]
    properties: Mapping[str, Any]
    created_at: str | None
    updated_at: str | None
    template_id: str | None = None  # the template it uses (USES_TEMPLATE)


@dataclass(frozen=True)
class Document:
    node_id: str
    node_name: str
    content: str
    generated_at: int  # milliseconds since the epoch
    from_cache: bool
    dependencies: tuple[str, ...]  # ids of the other nodes it was built from
    template_used: str


def _target(row: Row) -> TargetNode:
    internal, node_id, name, type_, summary, labels, props, created, updated, template_id = row
    return TargetNode(
        int(internal),
        node_id,
        name or "",
        type_,
        summary or "",
        tuple(labels),
        dict(props),
        created,
        updated,
        template_id,
    )


def tokens(text: str) -> set[str]:
    """Lower-cased words, apostrophes dropped ("Shor's" and "shors" are one word)."""
    return set(TOKEN.findall(text.lower().replace("'", "").replace("\u2019", "")))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def template_data(node: TargetNode) -> dict[str, Any]:
    data: dict[str, Any] = dict(node.properties)
    data.update(
        id=node.id,
        name=node.name,
        summary=node.summary,
        type=node.type,
        created_date=node.created_at,
        last_modified_date=node.updated_at,
    )
    return data


class DocumentService:
    def __init__(self, ctx: GraphContext, templates: TemplateService, user_cypher: UserCypher | None = None) -> None:
        self.ctx = ctx
        self.templates = templates
        self.user_cypher = user_cypher or templates.user_cypher

    async def resolve(self, project: str, identifier: str, label: Label = ENTITY) -> TargetNode:
        """By id, then by name in any case, then by the name sharing the most words (NotFound)."""
        if not isinstance(identifier, str) or not identifier.strip():
            raise InvalidParams("A node identifier must be a non-empty string.")
        rows = await q.by_id(self.ctx, project, label, identifier)
        if not rows:
            rows = await q.by_name(self.ctx, project, label, limits.as_stored(identifier))
        if not rows:
            rows = await self._fuzzy(project, identifier, label)
        if not rows:
            raise NotFound(f"Node not found for identifier: {identifier}")
        return _target(rows[0])

    async def _fuzzy(self, project: str, identifier: str, label: Label) -> list[Row]:
        wanted = tokens(identifier)
        if not wanted:
            return []
        candidates = await q.name_candidates(self.ctx, project, label, sorted(wanted), FUZZY_CANDIDATES)
        scored = [(jaccard(wanted, tokens(name or "")), -len(name or ""), node_id) for node_id, name in candidates]
        best = max(scored, default=None)
        if best is None or best[0] < MIN_JACCARD:
            return []
        return await q.by_id(self.ctx, project, label, best[2])

    async def generate(
        self,
        project: str,
        identifiers: Sequence[str],
        *,
        force_regenerate: bool = False,
        template_override: str | None = None,
    ) -> list[Document]:
        if len(identifiers) > MAX_IDENTIFIERS:
            raise InvalidParams(f"node_identifiers holds {len(identifiers)} items; the limit is {MAX_IDENTIFIERS}.")
        override = await self.templates.get(project, template_override) if template_override is not None else None
        return [await self._document(project, ident, override, force_regenerate) for ident in identifiers]

    async def _document(self, project: str, identifier: str, override: Template | None, force: bool) -> Document:
        # A node named by id is read with its template's id and its cached document in one
        # query: a cache hit is that one indexed read.
        if not isinstance(identifier, str) or not identifier.strip():
            raise InvalidParams("A node identifier must be a non-empty string.")
        override_id = override.id if override is not None else None
        rows = await q.with_document(self.ctx, project, ENTITY, identifier, override_id, DEFAULT_TEMPLATE.id)
        if not rows:
            node_id = (await self.resolve(project, identifier)).id
            rows = await q.with_document(self.ctx, project, ENTITY, node_id, override_id, DEFAULT_TEMPLATE.id)
            if not rows:
                raise NotFound(f"Node not found for identifier: {identifier}")
        node = _target(rows[0][:10])
        template_id, template_fields, content, generated_at, dependencies, valid = rows[0][10:]
        if valid and not force:
            return Document(
                node.id, node.name, content, int(generated_at), True, tuple(dependencies or ()), template_id
            )
        template = override or (template_from(template_fields) if template_fields else DEFAULT_TEMPLATE)
        started = now_iso()
        content, dependency_ids, partial_ids = await self._render(project, node, template)
        generated_at = int(time.time() * 1000)
        templates = [t for t in (template.id, *partial_ids) if t != DEFAULT_TEMPLATE.id]
        document = {
            "id": new_id("doc"),
            "template_id": template.id,
            "content": content,
            "generated_at": generated_at,
            "dependency_count": len(dependency_ids) + len(templates),
        }
        stored = await q.store(self.ctx, project, ENTITY, node.id, document, sorted(dependency_ids), templates, started)
        depends_on = tuple(stored[0][0]) if stored else ()
        return Document(node.id, node.name, content, generated_at, False, depends_on, template.id)

    async def _render(self, project: str, node: TargetNode, template: Template) -> tuple[str, set[int], list[str]]:
        """The document, the internal ids of the nodes it depends on, and the partials' template ids."""
        tree = mustache.parse(template.structure)
        data = template_data(node)
        dependencies: set[int] = {node.internal_id}
        share = render_share_ms(len(template.variables))
        try:
            results = await asyncio.gather(
                *(
                    self.user_cypher.run(project, query, node.internal_id, dependencies=True, timeout_ms=share)
                    for query in template.variables.values()
                )
            )
        except UserQueryTimeout as exc:
            raise UserQueryTimeout(
                f"{exc.message} A template's variables share {RENDER_BUDGET_MS} ms ({share} ms each)."
            ) from exc
        for name, result in zip(template.variables, results, strict=True):
            rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
            data[name] = rows
            data[f"has_{name}"] = bool(rows)
            dependencies |= result.node_ids | result.edge_end_ids
        partials = await self._partials(project, tree)
        content = mustache.render(tree, data, lambda name: partials[name].structure if name in partials else None)
        return content, dependencies, sorted({t.id for t in partials.values()})

    async def _partials(self, project: str, tree: list[mustache.Node]) -> dict[str, Template]:
        """Every template the structure reaches through partials, by the name it is called by."""
        found: dict[str, Template] = {}
        wanted = mustache.partial_names(tree)
        for _ in range(mustache.MAX_PARTIAL_DEPTH):
            wanted -= set(found)
            if not wanted:
                break
            more = await self.templates.find(project, sorted(wanted))
            found.update(more)
            next_wanted: set[str] = set()
            for template in more.values():
                next_wanted |= mustache.partial_names(mustache.parse(template.structure))
            wanted = next_wanted - set(wanted)
        return found
