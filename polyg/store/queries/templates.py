"""Cypher for document templates (spec 000 `:Template`) and the `USES_TEMPLATE` link of a node.

A template's `variables` (name -> Cypher) is a map, which FalkorDB cannot store as a property:
it is stored as a JSON string (`variables_json`) and read back whole by the core.
"""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import ENTITY, TEMPLATE, USES_TEMPLATE, Label
from polyg.store.queries import Runner
from polyg.store.queries.document_cache import drop_documents

# Set on a template by the create that made it, and removed by that same query.
MADE_BY = "polyg_made_by"
FIELDS = "t {.id, .name, .description, .structure, .variables_json, .node_types, .created_at, .updated_at}"


async def get(runner: Runner, project: str, refs: list[str]) -> list[Row]:
    """[ref, template fields] for each reference found, by id first, then by exact name."""
    return await runner.read(
        project,
        f"UNWIND $refs AS ref OPTIONAL MATCH (a:{TEMPLATE} {{id: ref}}) OPTIONAL MATCH (b:{TEMPLATE} {{name: ref}}) "
        "WITH ref, coalesce(a, b) AS t WHERE t IS NOT NULL "
        f"RETURN ref, {FIELDS}",
        {"refs": refs},
    )


async def list_all(runner: Runner, project: str, limit: int) -> list[Row]:
    return await runner.read(
        project, f"MATCH (t:{TEMPLATE}) RETURN {FIELDS} ORDER BY t.name, t.id LIMIT $limit", {"limit": limit}
    )


async def create(runner: Runner, project: str, fields: dict[str, Any], token: str) -> list[Row]:
    """Creates the template unless a template or an entity has its id. [made, template fields]:
    made is false when a template of that id existed; no row when an entity has the id.

    MERGE is what makes the id unique: FalkorDB runs a MERGE that creates under the graph's
    write lock and matches again there, so of concurrent creates of one id exactly one makes
    the node (an OPTIONAL MATCH then CREATE made 10 nodes of 10). `token` marks the node this
    query made, and is removed before the query ends."""
    return await runner.write(
        project,
        f"OPTIONAL MATCH (e:{ENTITY} {{id: $id}}) WITH count(e) AS entities WHERE entities = 0 "
        f"MERGE (t:{TEMPLATE} {{id: $id}}) ON CREATE SET t += $fields, t.{MADE_BY} = $token "
        f"WITH t, t.{MADE_BY} = $token AS made SET t.{MADE_BY} = NULL "
        f"RETURN made, {FIELDS}",
        {"id": fields["id"], "fields": fields, "token": token},
    )


async def update(runner: Runner, project: str, template_id: str, fields: dict[str, Any]) -> list[Row]:
    """Sets the given fields; `updated_at` among them is what invalidates the documents built
    from the template."""
    return await runner.write(
        project,
        f"MATCH (t:{TEMPLATE} {{id: $id}}) SET t += $fields RETURN {FIELDS}",
        {"id": template_id, "fields": fields},
    )


async def delete(runner: Runner, project: str, template_id: str) -> bool:
    rows = await runner.write(
        project,
        f"MATCH (t:{TEMPLATE} {{id: $id}}) WITH t " + drop_documents("t") + "WITH t, t.id AS gone DETACH DELETE t "
        "RETURN count(gone)",
        {"id": template_id},
    )
    return bool(rows and rows[0][0])


async def for_type(runner: Runner, project: str, node_type: str, labels: list[str]) -> list[Row]:
    """The oldest template whose node_types name the node's type or one of its labels."""
    return await runner.read(
        project,
        f"MATCH (t:{TEMPLATE}) WHERE any(x IN t.node_types WHERE x = $type OR x IN $labels) "
        f"RETURN {FIELDS} ORDER BY t.created_at, t.id LIMIT 1",
        {"type": node_type, "labels": labels},
    )


async def link(
    runner: Runner, project: str, node_label: Label, node_id: str, template_id: str | None, now: str
) -> list[Row]:
    """Points the node at `template_id` (None: at no template), replacing its link; bumps the
    node's `updated_at` only when the link changes. Returns [linked template id] or no row if
    the node or template is missing."""
    return await runner.write(
        project,
        f"MATCH (n:{node_label} {{id: $id}}) OPTIONAL MATCH (t:{TEMPLATE} {{id: $tid}}) "
        "WITH n, t WHERE $tid IS NULL OR t IS NOT NULL "
        f"OPTIONAL MATCH (n)-[old:{USES_TEMPLATE}]->(o:{TEMPLATE}) "
        "WITH n, t, collect(old) AS olds, collect(o.id) AS was "
        "FOREACH (x IN CASE WHEN was = [$tid] THEN [] ELSE olds END | DELETE x) "
        f"FOREACH (x IN CASE WHEN t IS NULL OR was = [$tid] THEN [] ELSE [t] END | CREATE (n)-[:{USES_TEMPLATE}]->(x)) "
        "FOREACH (x IN CASE WHEN was = CASE WHEN $tid IS NULL THEN [] ELSE [$tid] END THEN [] ELSE [n] END | "
        "SET x.updated_at = $now) "
        "RETURN coalesce(t.id, '')",
        {"id": node_id, "tid": template_id, "now": now},
    )


async def templates_in_use(runner: Runner, project: str, ids: list[str]) -> list[Row]:
    """Ids of the templates these entities use (USES_TEMPLATE)."""
    return await runner.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i})-[:USES_TEMPLATE]->(t:Template) RETURN DISTINCT t.id ORDER BY t.id",
        {"ids": ids},
    )
