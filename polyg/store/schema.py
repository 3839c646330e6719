"""Per-project schema: indexes created idempotently, and the embedding model recorded.

Run explicitly by `polyg init-schema`, and lazily before a project's first use.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from polyg.errors import DimensionMismatch, StoreError
from polyg.store.falkor import FalkorStore
from polyg.store.names import RelType, is_name, is_reserved_rel_type

SCHEMA_VERSION = 1
# HNSW recall@10 is ~0.44 with FalkorDB's default efRuntime (10) and ~0.96 with 100.
EF_RUNTIME = 100
# Half FalkorDB's default (200): index builds (every start, every vector write) take half
# as long for the same KNN recall (bench/README.md); only new indexes get it.
EF_CONSTRUCTION = 100
HNSW_M = 16  # FalkorDB's default, written out so that the index says what it is

RANGE_INDEXES: dict[str, tuple[str, ...]] = {
    # parent_id: deleting an entity clears its children's parent, a lookup per deleted entity.
    "Entity": ("id", "name", "type", "parent_id"),
    "Observation": ("id",),
}
FULLTEXT_INDEXES: dict[str, tuple[str, ...]] = {
    "Entity": ("name", "type", "summary"),
    "Observation": ("text",),
}
VECTOR_INDEXES: tuple[str, ...] = ("Entity", "Observation")
# Every user relationship type gets a range index on this property (FalkorDB indexes
# relationships per type): a relationship is found and deleted by id without a scan of every edge.
RELATIONSHIP_INDEX = "id"


async def existing_indexes(store: FalkorStore, project: str) -> dict[tuple[str, str], set[str]]:
    """(label, property) -> index kinds (RANGE, FULLTEXT, VECTOR) present in the graph."""
    rows = await store.ro_query(
        project, "CALL db.indexes() YIELD label, types, entitytype WHERE entitytype = 'NODE' RETURN label, types"
    )
    found: dict[tuple[str, str], set[str]] = {}
    for label, types in rows:
        for prop, kinds in dict(types).items():
            found.setdefault((label, prop), set()).update(kinds)
    return found


async def indexed_relationship_types(store: FalkorStore, project: str) -> set[str]:
    """Relationship types whose `id` has a range index."""
    rows = await store.ro_query(
        project,
        "CALL db.indexes() YIELD label, types, entitytype WHERE entitytype = 'RELATIONSHIP' RETURN label, types",
    )
    return {label for label, types in rows if "RANGE" in dict(types).get(RELATIONSHIP_INDEX, [])}


async def relationship_types(store: FalkorStore, project: str) -> set[str]:
    """The user relationship types present in the graph (polyg's own structure left out)."""
    rows = await store.ro_query(project, "CALL db.relationshipTypes()")
    return {row[0] for row in rows if is_name(row[0]) and not is_reserved_rel_type(row[0])}


async def _create(store: FalkorStore, project: str, statement: str) -> None:
    try:
        await store.query(project, statement)
    except StoreError as exc:
        # Another process on the same database (two servers on one data directory, or
        # server mode) may have created it since we looked: that is what we wanted.
        if "already indexed" not in str(exc):
            raise


async def ensure_relationship_indexes(store: FalkorStore, project: str, types: set[str]) -> None:
    for rel_type in sorted(types - await indexed_relationship_types(store, project)):
        name = RelType(rel_type)
        await _create(store, project, f"CREATE INDEX FOR ()-[r:{name}]-() ON (r.{RELATIONSHIP_INDEX})")


def _missing_statements(found: dict[tuple[str, str], set[str]], dimension: int) -> list[str]:
    statements = []
    for label, props in RANGE_INDEXES.items():
        for prop in props:
            if "RANGE" not in found.get((label, prop), set()):
                statements.append(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
    for label, props in FULLTEXT_INDEXES.items():
        if not all("FULLTEXT" in found.get((label, p), set()) for p in props):
            args = ", ".join(f"'{p}'" for p in props)
            statements.append(f"CALL db.idx.fulltext.createNodeIndex('{label}', {args})")
    for label in VECTOR_INDEXES:
        if "VECTOR" not in found.get((label, "embedding"), set()):
            statements.append(
                f"CREATE VECTOR INDEX FOR (n:{label}) ON (n.embedding) OPTIONS "
                f"{{dimension: {int(dimension)}, similarityFunction: 'cosine', M: {HNSW_M}, "
                f"efConstruction: {EF_CONSTRUCTION}, efRuntime: {EF_RUNTIME}}}"
            )
    return statements


async def ensure_schema(store: FalkorStore, project: str, *, model_id: str, dimension: int) -> None:
    rows = await store.query(
        project,
        "MERGE (m:PolygMeta {key: 'schema'}) "
        "ON CREATE SET m.embedding_model = $model, m.dimension = $dim, m.schema_version = $version "
        "RETURN m.embedding_model, m.dimension",
        {"model": model_id, "dim": dimension, "version": SCHEMA_VERSION},
    )
    stored_model, stored_dim = rows[0]
    if stored_dim != dimension:
        raise DimensionMismatch(
            f"Project {project!r} holds {stored_dim}-d embeddings from {stored_model!r}, but the "
            f"configured embedder {model_id!r} makes {dimension}-d vectors. Use the same embedding "
            "model, or export and re-import the project."
        )
    for statement in _missing_statements(await existing_indexes(store, project), dimension):
        await _create(store, project, statement)
    # Projects written before relationships were indexed get their indexes here.
    await ensure_relationship_indexes(store, project, await relationship_types(store, project))
    missing = _missing_statements(await existing_indexes(store, project), dimension)
    if missing:
        raise StoreError(f"Could not create the indexes of project {project!r}: {'; '.join(missing)}")


@dataclass
class SchemaGuard:
    """Runs `ensure_schema` once per project per process, concurrency-safe."""

    store: FalkorStore
    model_id: str
    dimension: int
    _done: set[str] = field(default_factory=set)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def ensure(self, project: str) -> None:
        if project in self._done:
            return
        lock = self._locks.setdefault(project, asyncio.Lock())
        async with lock:
            if project not in self._done:
                await ensure_schema(self.store, project, model_id=self.model_id, dimension=self.dimension)
                self._done.add(project)

    def forget(self, project: str) -> None:
        self._done.discard(project)


def describe(found: dict[tuple[str, str], set[str]]) -> list[dict[str, Any]]:
    return [{"label": label, "property": prop, "kinds": sorted(kinds)} for (label, prop), kinds in found.items()]
