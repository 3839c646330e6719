"""Batch operations that address entities by name (the official MCP memory server's model).

Used by the `memory-compat` toolset and by `polyg import`. These are the same `:Entity`
nodes the `kg` toolset sees by id. Every batch is validated whole before anything is
written, and each write is one Cypher query, so a refused batch changes nothing.

Relation types in that model are free text ("works at"); a relationship type must be a
valid name, so free text is stored under a sanitised type with the original in `label`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from polyg.core import limits
from polyg.core.entities import DELETE_ENTITY_TAIL, type_label
from polyg.core.graph import GraphContext
from polyg.core.vectorizer import BUMP_REV
from polyg.errors import NotFound, PayloadTooLarge
from polyg.names import TYPE_NAME, new_id, now_iso, timestamps
from polyg.store.names import is_reserved_rel_type

# Relations one read returns at most (see `relations_touching`).
MAX_RELATIONS = 10_000
# The relation's text as the user wrote it, whether or not it had to be sanitised.
REL_TEXT = "coalesce(r.label, type(r))"


def stored_type(relation_type: str) -> str:
    """A valid relationship type name for free relation text (`works at` -> `works_at`)."""
    if TYPE_NAME.fullmatch(relation_type) and not is_reserved_rel_type(relation_type):
        return relation_type
    name = re.sub(r"\W", "_", relation_type, flags=re.ASCII).strip("_")[:64] or "RELATED_TO"
    if name[0].isdigit():
        name = f"_{name}"[:64]
    return "RELATED_TO" if is_reserved_rel_type(name) else name


def _check_batch(items: list[Any], field: str) -> None:
    if len(items) > limits.MAX_BATCH:
        raise PayloadTooLarge(f"{field} holds {len(items)} items; the limit is {limits.MAX_BATCH}.")


def _unique(seq: list[str]) -> list[str]:
    return list(dict.fromkeys(seq))


class NamedGraph:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx

    # --- reads ------------------------------------------------------------------------------

    async def ids_by_name(self, project: str, names: list[str]) -> dict[str, str]:
        """name -> id of the oldest entity with that name (names may repeat in the kg model)."""
        rows = await self.ctx.read(
            project,
            "UNWIND $names AS n MATCH (e:Entity {name: n}) WITH n, e ORDER BY e.created_at, e.id "
            "RETURN n, collect(e.id)[0]",
            {"names": _unique(names)},
        )
        return {name: entity_id for name, entity_id in rows}

    async def entities(self, project: str, ids: list[str]) -> list[dict[str, Any]]:
        """`{name, entityType, observations}` for the given ids, in the given order."""
        rows = await self.ctx.read(
            project,
            "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
            "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
            "WITH e, o ORDER BY o.created_at, o.id "
            "RETURN e.id, e.name, e.type, collect(o.text)",
            {"ids": ids},
        )
        by_id = {i: {"name": n, "entityType": t, "observations": obs} for i, n, t, obs in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def relations_touching(
        self, project: str, ids: list[str], limit: int = MAX_RELATIONS
    ) -> tuple[list[dict[str, str]], bool]:
        """Relations with at least one endpoint among `ids` (observations are not relations),
        oldest first, at most `limit`; and whether more were left out.

        The cap guards the response size against hub entities with huge degree; the caller
        says so in the result, so nothing is dropped silently."""
        rows = await self.ctx.read(
            project,
            "UNWIND $ids AS id MATCH (e:Entity {id: id})-[r]-(:Entity) "
            f"WITH DISTINCT r RETURN startNode(r).name, endNode(r).name, {REL_TEXT} "
            "ORDER BY r.created_at, r.id LIMIT $limit",
            {"ids": ids, "limit": limit + 1},
        )
        relations = [{"from": a, "to": b, "relationType": t} for a, b, t in rows[:limit]]
        return relations, len(rows) > limit

    async def page(self, project: str, offset: int, limit: int) -> tuple[list[str], bool]:
        """A page of entity ids in name order, and whether more follow."""
        rows = await self.ctx.read(
            project,
            "MATCH (e:Entity) RETURN e.id ORDER BY e.name, e.id SKIP $offset LIMIT $limit",
            {"offset": offset, "limit": limit + 1},
        )
        ids = [row[0] for row in rows]
        return ids[:limit], len(ids) > limit

    # --- writes -----------------------------------------------------------------------------

    async def create_entities(self, project: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Create the entities whose names are new; repeats within the batch are skipped too.
        Their vectors follow from the vectorizer."""
        new, rows = await self.prepare_entities(project, items)
        created = await self.write_entities(project, rows) if rows else set()
        return [e for e, row in zip(new, rows, strict=True) if row["id"] in created]

    async def prepare_entities(
        self, project: str, items: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Validate a batch and drop names that exist: (new entities, rows to write)."""
        _check_batch(items, "entities")
        fresh: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(items):
            name = limits.name(item["name"], f"entities[{i}].name")
            limits.type_(item["entityType"], f"entities[{i}].entityType")
            obs = _unique(limits.batch(item.get("observations", []), f"entities[{i}].observations"))
            fresh.setdefault(name, {"name": name, "entityType": item["entityType"], "observations": obs})
        existing = await self.ids_by_name(project, list(fresh))
        new = [e for name, e in fresh.items() if name not in existing]
        rows = [
            {
                "id": new_id("ent"),
                "name": e["name"],
                "type": e["entityType"],
                "obs": [
                    {"id": new_id("obs"), "text": o, "created_at": t}
                    for o, t in zip(e["observations"], timestamps(len(e["observations"])), strict=True)
                ],
            }
            for e in new
        ]
        return new, rows

    async def write_entities(
        self, project: str, rows: list[dict[str, Any]], *, unique_names: bool = True, now: str | None = None
    ) -> set[str]:
        """Write prepared rows (id, name, type, obs[], optional summary/parent_id/timestamps),
        skipping rows whose name (or, with unique_names=False, id) exists, and queue the new
        entities for their vectors. Returns ids created.

        The check runs inside the write query, which FalkorDB executes alone on the graph,
        so two writers racing on one name create it once.
        """
        guard = "{name: r.name}" if unique_names else "{id: r.id}"
        now = now or now_iso()
        by_label: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_label[type_label(row["type"])].append(row)
        created: set[str] = set()
        for label, group in by_label.items():
            labels = "Entity" + (f":{label}" if label else "")
            result = await self.ctx.write(
                project,
                f"UNWIND $rows AS r OPTIONAL MATCH (x:Entity {guard}) WITH r, x WHERE x IS NULL "
                f"CREATE (e:{labels} {{id: r.id, name: r.name, type: r.type, "
                "summary: coalesce(r.summary, ''), parent_id: r.parent_id, "
                "created_at: coalesce(r.created_at, $now), updated_at: coalesce(r.updated_at, $now), "
                "rev: randomUUID()}) "
                "FOREACH (o IN r.obs | CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: o.id, "
                "text: o.text, created_at: coalesce(o.created_at, $now)})) "
                "RETURN r.id",
                {"rows": group, "now": now},
            )
            created.update(row[0] for row in result)
        self.ctx.vectors.mark(project, created)
        return created

    async def create_relations(self, project: str, items: list[dict[str, str]]) -> list[dict[str, str]]:
        """Create relations between named entities; an unknown endpoint fails the whole batch."""
        _check_batch(items, "relations")
        wanted: dict[tuple[str, str, str], dict[str, str]] = {}
        for i, item in enumerate(items):
            rel = {k: limits.name(item[k], f"relations[{i}].{k}") for k in ("from", "to", "relationType")}
            wanted.setdefault((rel["from"], rel["to"], rel["relationType"]), rel)
        ids = await self.ids_by_name(project, [n for rel in wanted.values() for n in (rel["from"], rel["to"])])
        unknown = sorted({n for rel in wanted.values() for n in (rel["from"], rel["to"]) if n not in ids})
        if unknown:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found.")
        rows = [
            {
                "id": new_id("rel"),
                "a": ids[rel["from"]],
                "b": ids[rel["to"]],
                "text": rel["relationType"],
                "type": stored_type(rel["relationType"]),
            }
            for rel in wanted.values()
        ]
        made = await self.write_relations(project, rows)
        return [rel for key, rel in wanted.items() if key in made]

    async def write_relations(
        self, project: str, rows: list[dict[str, Any]], *, same: str = "text"
    ) -> set[tuple[str, str, str]]:
        """Write prepared rows (id, a, b, type, text, optional description/created_at/props),
        skipping a row when a relation between the same entities has the same text (or, with
        same="id", the same id). Returns (from, to, text) of the relations created."""
        duplicate = "coalesce(x.label, type(x)) = row.text" if same == "text" else "x.id = row.id"
        by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_type[row["type"]].append(row)
        made: set[tuple[str, str, str]] = set()
        for rel_type, group in by_type.items():
            # rel_type came from stored_type() or a validated name: safe to interpolate.
            result = await self.ctx.write(
                project,
                "UNWIND $rows AS row MATCH (a:Entity {id: row.a}), (b:Entity {id: row.b}) "
                f"OPTIONAL MATCH (a)-[x:{rel_type}]->(b) WHERE {duplicate} "
                "WITH row, a, b, count(x) AS dup WHERE dup = 0 "
                f"CREATE (a)-[r:{rel_type} {{id: row.id, description: coalesce(row.description, ''), "
                "created_at: coalesce(row.created_at, $now)}]->(b) "
                "SET r.label = CASE WHEN row.text = type(r) THEN NULL ELSE row.text END, "
                "r += coalesce(row.props, {}) "
                "RETURN a.name, b.name, row.text",
                {"rows": group, "now": now_iso()},
            )
            made.update((a, b, t) for a, b, t in result)
        return made

    async def add_observations(self, project: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Add observations to named entities, skipping ones already present."""
        _check_batch(items, "observations")
        requests = [
            (
                limits.name(item["entityName"], f"observations[{i}].entityName"),
                limits.batch(item["contents"], f"observations[{i}].contents"),
            )
            for i, item in enumerate(items)
        ]
        ids = await self.ids_by_name(project, [name for name, _ in requests])
        unknown = sorted({name for name, _ in requests if name not in ids})
        if unknown:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found.")
        async with self.ctx.entity_locks(project, list(ids.values())):
            current = {e["name"]: e for e in await self.entities(project, list(ids.values()))}
            results: list[dict[str, Any]] = []
            added_by_name: dict[str, list[str]] = defaultdict(list)
            for name, contents in requests:
                have = set(current[name]["observations"]) | set(added_by_name[name])
                added = [c for c in _unique(contents) if c not in have]
                added_by_name[name].extend(added)
                results.append({"entityName": name, "addedObservations": added})
            changed = [name for name, added in added_by_name.items() if added]
            if changed:
                await self._write_observations(project, ids, added_by_name, changed)
        return results

    async def _write_observations(
        self,
        project: str,
        ids: dict[str, str],
        added: dict[str, list[str]],
        changed: list[str],
    ) -> None:
        rows = [
            {
                "id": ids[name],
                "obs": [
                    {"id": new_id("obs"), "text": o, "created_at": t}
                    for o, t in zip(added[name], timestamps(len(added[name])), strict=True)
                ],
            }
            for name in changed
        ]
        await self.ctx.write(
            project,
            f"UNWIND $rows AS r MATCH (e:Entity {{id: r.id}}) SET e.updated_at = $now, {BUMP_REV} "
            "FOREACH (o IN r.obs | CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: o.id, text: o.text, "
            "created_at: o.created_at}))",
            {"rows": rows, "now": now_iso()},
        )
        self.ctx.vectors.mark(project, [ids[name] for name in changed])

    async def delete_entities(self, project: str, names: list[str]) -> None:
        _check_batch(names, "entityNames")
        await self.ctx.write(
            project,
            "UNWIND $names AS n MATCH (e:Entity {name: n}) " + DELETE_ENTITY_TAIL,
            {"names": _unique(names)},
        )

    async def delete_observations(self, project: str, items: list[dict[str, Any]]) -> None:
        _check_batch(items, "deletions")
        rows = [{"name": item["entityName"], "texts": list(item["observations"])} for item in items]
        ids = await self.ids_by_name(project, [row["name"] for row in rows])
        if not ids:
            return
        async with self.ctx.entity_locks(project, list(ids.values())):
            touched = await self.ctx.write(
                project,
                "UNWIND $rows AS r MATCH (e:Entity {id: r.id})-[:HAS_OBSERVATION]->(o:Observation) "
                "WHERE o.text IN r.texts DELETE o "
                f"WITH DISTINCT e SET {BUMP_REV} RETURN e.id",
                {"rows": [{"id": ids[r["name"]], "texts": r["texts"]} for r in rows if r["name"] in ids]},
            )
        self.ctx.vectors.mark(project, [row[0] for row in touched])

    async def delete_relations(self, project: str, items: list[dict[str, str]]) -> None:
        _check_batch(items, "relations")
        by_type: dict[str, list[dict[str, str]]] = defaultdict(list)
        for item in items:
            by_type[stored_type(item["relationType"])].append(
                {"from": item["from"], "to": item["to"], "text": item["relationType"]}
            )
        for rel_type, group in by_type.items():
            await self.ctx.write(
                project,
                f"UNWIND $rows AS row MATCH (a:Entity {{name: row.from}})-[r:{rel_type}]->(b:Entity {{name: row.to}}) "
                f"WHERE {REL_TEXT} = row.text DELETE r",
                {"rows": group},
            )
