"""Relationship types as data (spec 000 `:RelationshipType`), and the `id` index of their edges."""

from __future__ import annotations

from typing import Any

from polyg.errors import StoreError
from polyg.store.falkor import Row
from polyg.store.names import RELATIONSHIP_TYPE, RelType
from polyg.store.queries import Runner

FIELDS = ("name", "description", "directionality", "source_types", "target_types")
_RETURN = "RETURN t.name, t.description, t.directionality, t.source_types, t.target_types"


async def get(runner: Runner, project: str, names: list[str] | None) -> list[Row]:
    """Every stored type (`names` None) or those named, by name."""
    where = "" if names is None else "WHERE t.name IN $names "
    return await runner.read(
        project, f"MATCH (t:{RELATIONSHIP_TYPE}) {where}{_RETURN} ORDER BY t.name", {"names": names}
    )


async def upsert(runner: Runner, project: str, fields: dict[str, Any], *, overwrite: bool) -> list[Row]:
    """Stores a type. With `overwrite` the given fields replace the stored ones; without it an
    existing type is left as it is (registration on first use must not undo a user's settings)."""
    on_match = "ON MATCH SET t += $fields " if overwrite else ""
    return await runner.write(
        project,
        f"MERGE (t:{RELATIONSHIP_TYPE} {{name: $name}}) ON CREATE SET t += $fields {on_match}{_RETURN}",
        {"name": fields["name"], "fields": fields},
    )


async def register_missing(runner: Runner, project: str, names: list[str]) -> list[Row]:
    """Types not yet stored are created with only a name; returns the names that were new."""
    return await runner.write(
        project,
        f"UNWIND $names AS name OPTIONAL MATCH (old:{RELATIONSHIP_TYPE} {{name: name}}) "
        f"WITH name, old WHERE old IS NULL MERGE (t:{RELATIONSHIP_TYPE} {{name: name}}) "
        "ON CREATE SET t.description = '', t.source_types = [], t.target_types = [] RETURN t.name",
        {"names": names},
    )


async def delete(runner: Runner, project: str, name: str) -> bool:
    rows = await runner.write(
        project,
        f"MATCH (t:{RELATIONSHIP_TYPE} {{name: $name}}) WITH t, t.name AS gone DELETE t RETURN count(gone)",
        {"name": name},
    )
    return bool(rows and rows[0][0])


async def edge_count(runner: Runner, project: str, rel: RelType) -> int:
    rows = await runner.read(project, f"MATCH ()-[r:{rel}]->() RETURN count(r)")
    return int(rows[0][0]) if rows else 0


async def index_state(runner: Runner, project: str) -> tuple[bool, set[str]]:
    """Whether `RelationshipType.name` has its range index, and the relationship types whose
    edges' `id` has one."""
    rows = await runner.read(
        project, "CALL db.indexes() YIELD label, types, entitytype RETURN label, types, entitytype"
    )
    names_indexed = False
    edge_types: set[str] = set()
    for label, types, entity in rows:
        kinds = dict(types)
        if entity == "NODE" and label == RELATIONSHIP_TYPE and "RANGE" in kinds.get("name", []):
            names_indexed = True
        elif entity == "RELATIONSHIP" and "RANGE" in kinds.get("id", []):
            edge_types.add(label)
    return names_indexed, edge_types


async def create_edge_id_index(runner: Runner, project: str, rel: RelType) -> None:
    try:
        await runner.write(project, f"CREATE INDEX FOR ()-[r:{rel}]-() ON (r.id)")
    except StoreError as exc:
        # Another caller (or process) created it since we looked: that is what we wanted.
        if "already indexed" not in str(exc):
            raise


async def create_name_index(runner: Runner, project: str) -> None:
    try:
        await runner.write(project, f"CREATE INDEX FOR (t:{RELATIONSHIP_TYPE}) ON (t.name)")
    except StoreError as exc:
        if "already indexed" not in str(exc):
            raise
