"""Batch operations that address entities by name (the official MCP memory server's model).

Used by the `memory-compat` toolset and by `polyg import`. These are the same `:Entity`
nodes the `kg` toolset sees by id. Every batch is validated whole before anything is
written, and each write is one Cypher query, so a refused batch changes nothing and an
accepted one is written whole.

Names are normalised (`limits.name`) on every path and looked up exactly: FalkorDB's index on
`name` also matches names that differ in surrounding whitespace, so each index hit is compared
again after it is projected out of the node (a filter on `e.name` itself would be folded into
the index scan). Where names repeat (the `kg` toolset allows it), these tools act on the oldest
entity of that name.

Relation types in that model are free text ("works at"); a relationship type must be a
valid name, so free text is stored under a sanitised type with the original in `label`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.entity_writer import EntityWriter
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.search.resolve import Resolver
from polyg.errors import NotFound
from polyg.names import TYPE_NAME, new_id, now_iso, timestamps
from polyg.store.names import is_reserved_rel_type
from polyg.store.queries import edge_reads as edge_reads_q
from polyg.store.queries import edges as edges_q
from polyg.store.queries import node_reads as q
from polyg.store.queries import observations as observations_q
from polyg.store.queries.edges import REL_TEXT

__all__ = [
    "MAX_RELATIONS",
    "REL_TEXT",
    "AddedObservations",
    "NamedEntity",
    "NamedGraph",
    "NamedRelation",
    "stored_type",
]

# Relations one read returns at most (see `relations_touching`).
MAX_RELATIONS = 10_000


def stored_type(relation_type: str) -> str:
    """A valid relationship type name for free relation text (`works at` -> `works_at`)."""
    if TYPE_NAME.fullmatch(relation_type) and not is_reserved_rel_type(relation_type):
        return relation_type
    name = re.sub(r"\W", "_", relation_type, flags=re.ASCII).strip("_")[:64] or "RELATED_TO"
    if name[0].isdigit():
        name = f"_{name}"[:64]
    return "RELATED_TO" if is_reserved_rel_type(name) else name


_unique = limits.unique


@dataclass(frozen=True)
class NamedEntity:
    """An entity of the by-name model: its observation texts (all, or a page of them, oldest
    first) and how many it has."""

    id: str
    name: str
    type: str
    observations: tuple[str, ...] = ()
    observations_total: int = 0


@dataclass(frozen=True)
class NamedRelation:
    """A relation between two entities by name, with its text as the user wrote it."""

    source: str
    target: str
    text: str


@dataclass(frozen=True)
class AddedObservations:
    """What an add_observations item added to its entity (texts it held already are not)."""

    entity_name: str
    added: tuple[str, ...]


class NamedGraph:
    def __init__(
        self,
        ctx: GraphContext,
        reltypes: RelTypeService | None = None,
        writer: EntityWriter | None = None,
        edges: EdgeWriter | None = None,
    ) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)
        self.writer = writer or EntityWriter(ctx)
        self.edges = edges or EdgeWriter(ctx, self.reltypes)
        self.resolver = Resolver(ctx)

    # --- reads ------------------------------------------------------------------------------

    async def ids_by_name(self, project: str, names: list[str]) -> dict[str, str]:
        """name -> id of the oldest entity with exactly that name; `names` are normalised."""
        found = await self.resolver.exact_names(project, _unique(names))
        return {name: match.id for name, match in found.items()}

    async def entities(
        self, project: str, ids: list[str], *, skip: int = 0, shown: int | None = None
    ) -> list[NamedEntity]:
        """The entities with these ids, in the given order, with at most `shown` observations
        each from the `skip`th on (all with None)."""
        rows = await q.entities_with_observations(self.ctx, project, ids, skip, None if shown is None else skip + shown)
        by_id = {
            entity_id: NamedEntity(entity_id, name, entity_type, tuple(obs), int(total))
            for entity_id, name, entity_type, obs, total in rows
        }
        return [by_id[i] for i in ids if i in by_id]

    async def relations_touching(
        self, project: str, ids: list[str], limit: int = MAX_RELATIONS
    ) -> tuple[list[NamedRelation], bool]:
        """Relations with at least one endpoint among `ids` (observations are not relations),
        oldest first, at most `limit`; and whether more were left out.

        The cap guards the response size against hub entities with huge degree; the caller
        says so in the result, so nothing is dropped silently."""
        rows = await edge_reads_q.relations_touching(self.ctx, project, ids, limit + 1)
        relations = [NamedRelation(a, b, t) for a, b, t in rows[:limit]]
        return relations, len(rows) > limit

    async def page(self, project: str, offset: int, limit: int) -> tuple[list[str], bool]:
        """A page of entity ids in name order, and whether more follow."""
        limits.offset(offset)
        ids = await q.entity_ids_page(self.ctx, project, offset, limit + 1)
        return ids[:limit], len(ids) > limit

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        """Those of `ids` that are entities of the project."""
        return await q.existing_ids(self.ctx, project, ids)

    # --- writes -----------------------------------------------------------------------------

    async def create_entities(self, project: str, items: list[dict[str, Any]]) -> list[NamedEntity]:
        """Create the entities whose names are new; repeats within the batch are skipped too.
        Their vectors follow from the vectorizer."""
        _, rows = await self.prepare_entities(project, items)
        created = await self.write_entities(project, rows) if rows else set()
        return [
            NamedEntity(row["id"], row["name"], row["type"], tuple(o["text"] for o in row["obs"]), len(row["obs"]))
            for row in rows
            if row["id"] in created
        ]

    async def prepare_entities(
        self, project: str, items: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Validate a batch and drop names that exist: (new entities, rows to write)."""
        limits.count(items, "entities")
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
                    {"id": new_id("obs"), "text": o, "at": t}
                    for o, t in zip(e["observations"], timestamps(len(e["observations"])), strict=True)
                ],
            }
            for e in new
        ]
        return new, rows

    async def write_entities(
        self, project: str, rows: list[dict[str, Any]], *, unique_names: bool = True, now: str | None = None
    ) -> set[str]:
        """Write prepared rows (id, name, type, obs[], optional summary/parent_id/timestamps) in
        one query, skipping rows whose name (or, with unique_names=False, id) exists, and queue
        the new entities for their vectors. Returns ids created.

        The check runs inside the write query, which FalkorDB executes alone on the graph,
        so two writers racing on one name create it once.
        """
        rows = [{**row, "obs": [_observation_row(o) for o in row.get("obs", [])]} for row in rows]
        made = await self.writer.create(project, rows, if_absent="name" if unique_names else "id", now=now)
        return {node.id for node in made}

    async def create_relations(self, project: str, items: list[dict[str, str]]) -> list[NamedRelation]:
        """Create relations between named entities; an unknown endpoint fails the whole batch."""
        limits.count(items, "relations")
        wanted: dict[tuple[str, str, str], dict[str, str]] = {}
        for i, item in enumerate(items):
            rel = _relation(item, i)
            wanted.setdefault((rel["from"], rel["to"], rel["relationType"]), rel)
        ids = await self.ids_by_name(project, [n for rel in wanted.values() for n in (rel["from"], rel["to"])])
        unknown = sorted({n for rel in wanted.values() for n in (rel["from"], rel["to"]) if n not in ids})
        if unknown:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found.")
        # Increasing times keep the batch's order when relations are listed oldest first.
        rows = [
            {
                "id": new_id("rel"),
                "a": ids[rel["from"]],
                "b": ids[rel["to"]],
                "text": rel["relationType"],
                "type": stored_type(rel["relationType"]),
                "created_at": at,
            }
            for rel, at in zip(wanted.values(), timestamps(len(wanted)), strict=True)
        ]
        made = await self.write_relations(project, rows)
        return [NamedRelation(*key) for key in wanted if key in made]

    async def write_relations(
        self, project: str, rows: list[dict[str, Any]], *, same: str = "text"
    ) -> set[tuple[str, str, str]]:
        """Write prepared rows (id, a, b, type, text, optional description/created_at/props) in
        one query, skipping a row when a relation between the same entities has the same text
        (or, with same="id", the same id). Returns (from, to, text) of the relations created.

        The duplicate check runs inside the write, so two processes cannot both add one edge."""
        # The free text is kept as `label` when its type had to be sanitised (`works at`).
        labelled = [{**row, "label": None if row["text"] == row["type"] else row["text"]} for row in rows]
        result = await self.edges.create(
            project, labelled, if_absent="text" if same == "text" else "id", returns="a.name, b.name, row.text"
        )
        return {(a, b, t) for a, b, t in result}

    async def add_observations(self, project: str, items: list[dict[str, Any]]) -> list[AddedObservations]:
        """Add observations to named entities, skipping ones already present (checked inside
        the write, so two processes adding one text add it once)."""
        limits.count(items, "observations")
        requests = [
            (
                limits.name(item["entityName"], f"observations[{i}].entityName"),
                _unique(limits.batch(item["contents"], f"observations[{i}].contents")),
            )
            for i, item in enumerate(items)
        ]
        ids = await self.ids_by_name(project, [name for name, _ in requests])
        unknown = sorted({name for name, _ in requests if name not in ids})
        if unknown:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found.")
        texts: dict[str, list[str]] = {}
        for name, contents in requests:
            texts.setdefault(ids[name], [])
            texts[ids[name]] = _unique(texts[ids[name]] + contents)
        added = await self._write_observations(project, texts) if any(texts.values()) else {}
        results: list[AddedObservations] = []
        reported: set[tuple[str, str]] = set()
        for name, contents in requests:
            entity_id = ids[name]
            mine = [c for c in contents if c in added.get(entity_id, set()) and (entity_id, c) not in reported]
            reported.update((entity_id, c) for c in mine)
            results.append(AddedObservations(name, tuple(mine)))
        return results

    async def _write_observations(self, project: str, texts: dict[str, list[str]]) -> dict[str, set[str]]:
        """Add the texts an entity does not have yet; returns entity id -> texts added."""
        rows = [
            {
                "id": entity_id,
                "obs": [
                    {"id": new_id("obs"), "text": o, "created_at": t}
                    for o, t in zip(added, timestamps(len(added)), strict=True)
                ],
            }
            for entity_id, added in texts.items()
            if added
        ]
        result = await observations_q.add_observations(self.ctx, project, rows, now_iso())
        self.ctx.vectors.mark(project, [row[0] for row in result])
        return {entity_id: set(added) for entity_id, added in result}

    async def delete_entities(self, project: str, names: list[str]) -> None:
        """Delete the entity each name opens (the oldest of that name), as every other tool
        here acts on that one."""
        limits.count(names, "entityNames")
        clean = [limits.name(n, f"entityNames[{i}]") for i, n in enumerate(names)]
        ids = await self.ids_by_name(project, clean)
        if ids:
            await self.writer.delete(project, list(ids.values()))

    async def delete_observations(self, project: str, items: list[dict[str, Any]]) -> None:
        limits.count(items, "deletions")
        rows: list[dict[str, Any]] = [
            {
                "name": limits.name(item["entityName"], f"deletions[{i}].entityName"),
                "texts": [
                    limits.text(t, f"deletions[{i}].observations[{j}]", max_len=limits.MAX_TEXT, allow_empty=True)
                    for j, t in enumerate(limits.count(item["observations"], f"deletions[{i}].observations"))
                ],
            }
            for i, item in enumerate(items)
        ]
        ids = await self.ids_by_name(project, [row["name"] for row in rows])
        if not ids:
            return
        rows = [{"id": ids[r["name"]], "texts": r["texts"]} for r in rows if r["name"] in ids]
        self.ctx.vectors.mark(project, await observations_q.delete_observations(self.ctx, project, rows))

    async def delete_relations(self, project: str, items: list[dict[str, str]]) -> None:
        """Delete the named relations, between the entities those names open, in one query."""
        limits.count(items, "relations")
        wanted = [_relation(item, i) for i, item in enumerate(items)]
        ids = await self.ids_by_name(project, [n for rel in wanted for n in (rel["from"], rel["to"])])
        rows = [
            {"a": ids[rel["from"]], "b": ids[rel["to"]], "text": rel["relationType"]}
            for rel in wanted
            if rel["from"] in ids and rel["to"] in ids
        ]
        await edges_q.delete_relations(self.ctx, project, rows)


def _observation_row(o: dict[str, Any]) -> dict[str, Any]:
    """An observation as the writer takes it: its time under `at` (an import names it created_at)."""
    return {"id": o["id"], "text": o["text"], "at": o.get("at", o.get("created_at"))}


def _relation(item: dict[str, str], i: int) -> dict[str, str]:
    return {
        "from": limits.name(item["from"], f"relations[{i}].from"),
        "to": limits.name(item["to"], f"relations[{i}].to"),
        # Free text kept verbatim: it is compared as a property, never looked up in an index.
        "relationType": limits.relation_text(item["relationType"], f"relations[{i}].relationType"),
    }
