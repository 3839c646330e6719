"""Cypher for generated documents (spec 000): resolving the nodes they are for, and the cache
(`:CachedDocument`, `CACHED_AT` from the node, `DEPENDS_ON` to everything it was built from).

Each `DEPENDS_ON` edge holds `seen`: the `updated_at` its node had when the document was built.
A cached document is valid while it still has every one of its `DEPENDS_ON` edges (a deleted
node takes its edge with it) and every node's `updated_at` is still what it saw: equality, not
a time comparison, so clocks and ties play no part.
"""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import CACHED_AT, CACHED_DOCUMENT, DEPENDS_ON, TEMPLATE, USES_TEMPLATE, Label
from polyg.store.queries import Runner
from polyg.store.queries.templates import FIELDS

# Internal properties never handed to a template.
HIDDEN = ["embedding", "head_embedding", "rev", "vec_rev", "name_key"]  # name_key: polyg.store.queries.nodes
# A node, with the id of the template it uses (USES_TEMPLATE) if any.
NODE = (
    "id(n), n.id, n.name, n.type, n.summary, labels(n), "
    "[k IN keys(n) WHERE NOT k IN $hidden | [k, n[k]]], n.created_at, n.updated_at, "
    f"head([(n)-[:USES_TEMPLATE]->(used:{TEMPLATE}) | used.id])"
)


TEMPLATE_FIELDS = f"CASE WHEN t IS NULL THEN NULL ELSE {FIELDS} END"
_SEEN = "CASE WHEN coalesce({v}.updated_at, '') > $started THEN 'stale' ELSE coalesce({v}.updated_at, '') END"


async def by_id(runner: Runner, project: str, label: Label, node_id: str) -> list[Row]:
    return await runner.read(project, f"MATCH (n:{label} {{id: $id}}) RETURN {NODE}", {"id": node_id, "hidden": HIDDEN})


async def by_name(runner: Runner, project: str, label: Label, name: str) -> list[Row]:
    """The oldest node of exactly this name (indexed), else of this name in any case (a scan).
    The name index also matches names that differ in surrounding whitespace: the name found is
    compared after it is projected (a filter on n.name would be folded into the index scan)."""
    rows = await runner.read(
        project,
        f"MATCH (n:{label} {{name: $name}}) WITH n, n.name AS found WHERE found = $name "
        f"RETURN {NODE} ORDER BY n.created_at, n.id LIMIT 1",
        {"name": name, "hidden": HIDDEN},
    )
    if rows:
        return rows
    return await runner.read(
        project,
        f"MATCH (n:{label}) WHERE toLower(n.name) = $lower RETURN {NODE} ORDER BY n.created_at, n.id LIMIT 1",
        {"lower": name.lower(), "hidden": HIDDEN},
    )


async def name_candidates(runner: Runner, project: str, label: Label, tokens: list[str], cap: int) -> list[Row]:
    """[id, name] of nodes whose lower-cased name contains one of the tokens, at most `cap`."""
    return await runner.read(
        project,
        f"MATCH (n:{label}) WHERE any(t IN $tokens WHERE toLower(n.name) CONTAINS t) RETURN n.id, n.name LIMIT $cap",
        {"tokens": tokens, "cap": cap},
    )


# The node named by polyg id, else the oldest of exactly that name: two indexed seeks in one read.
_BY_ID_OR_NAME = (
    "OPTIONAL MATCH (a:{label} {{id: $id}}) "
    "OPTIONAL MATCH (b:{label} {{name: $id}}) WHERE a IS NULL "
    "WITH a, b ORDER BY b.created_at, b.id LIMIT 1 "
    "WITH coalesce(a, b) AS n WHERE n IS NOT NULL "
)


async def with_document(
    runner: Runner, project: str, label: Label, node_id: str, template_id: str | None, default_id: str
) -> list[Row]:
    """The node (NODE's columns) named by polyg id, else by exact name (the oldest), with its
    document, in one read: then the id of the template that applies (`template_id` if given,
    else the one the node uses, else the oldest whose node_types name its type or a label, else
    `default_id`), that template's fields (None when `template_id` was given or none applies),
    and the cached document for it: content, generated_at, dependency ids, valid (None without
    a document)."""
    return await runner.read(
        project,
        _BY_ID_OR_NAME.format(label=label) + f"OPTIONAL MATCH (n)-[:{USES_TEMPLATE}]->(u:{TEMPLATE}) "
        "WITH n, head(collect(u)) AS linked "
        f"OPTIONAL MATCH (tt:{TEMPLATE}) WHERE $tid IS NULL "
        "AND any(x IN tt.node_types WHERE x = coalesce(n.type, '') OR x IN labels(n)) "
        "WITH n, linked, tt ORDER BY tt.created_at, tt.id "
        "WITH n, linked, collect(tt) AS typed "
        "WITH n, CASE WHEN $tid IS NULL THEN coalesce(linked, head(typed)) END AS t "
        "WITH n, t, coalesce($tid, t.id, $default) AS tid "
        f"OPTIONAL MATCH (n)-[:{CACHED_AT}]->(c:{CACHED_DOCUMENT} {{template_id: tid}}) "
        f"OPTIONAL MATCH (c)-[d:{DEPENDS_ON}]->(m) "
        "WITH n, t, tid, c, count(d) AS present, "
        "sum(CASE WHEN d IS NULL OR d.seen = coalesce(m.updated_at, '') THEN 0 ELSE 1 END) AS stale "
        f"RETURN {NODE}, tid, {TEMPLATE_FIELDS}, "
        "c.content, c.generated_at, c.dependencies, present = c.dependency_count AND stale = 0 "
        "ORDER BY c.generated_at DESC LIMIT 1",
        {"id": node_id, "tid": template_id, "default": default_id, "hidden": HIDDEN},
    )


async def store(
    runner: Runner,
    project: str,
    label: Label,
    node_id: str,
    document: dict[str, Any],
    dependencies: list[int],
    template_ids: list[str],
    started: str,
) -> list[Row]:
    """Replaces the node's document for `document.template_id` with this one, depending on the
    nodes of internal ids `dependencies` and on the templates `template_ids`, each edge holding
    the node's current `updated_at`; a node stamped after `started` (changed while the document
    was being built) is recorded as seen 'stale', which no stamp matches. Returns [polyg ids of
    the other nodes depended on]."""
    return await runner.write(
        project,
        f"MATCH (n:{label} {{id: $id}}) "
        f"OPTIONAL MATCH (n)-[:{CACHED_AT}]->(old:{CACHED_DOCUMENT} {{template_id: $doc.template_id}}) "
        "WITH n, collect(old) AS olds FOREACH (x IN olds | DETACH DELETE x) "
        f"CREATE (n)-[:{CACHED_AT}]->(c:{CACHED_DOCUMENT}) SET c = $doc "
        "WITH c "
        f"OPTIONAL MATCH (t:{TEMPLATE}) WHERE t.id IN $templates "
        "WITH c, collect(t) AS ts "
        f"FOREACH (t IN ts | CREATE (c)-[:{DEPENDS_ON} {{seen: {_SEEN.format(v='t')}}}]->(t)) "
        "WITH c UNWIND $deps AS dep MATCH (m) WHERE id(m) = dep "
        f"CREATE (c)-[:{DEPENDS_ON} {{seen: {_SEEN.format(v='m')}}}]->(m) "
        "WITH c, collect(m.id) AS ids SET c.dependencies = [i IN ids WHERE i IS NOT NULL AND i <> $id] "
        "RETURN c.dependencies",
        {"id": node_id, "doc": document, "deps": dependencies, "templates": template_ids, "started": started},
    )
