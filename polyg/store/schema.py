"""Per-project schema: indexes created idempotently, the embedding model recorded, and
versioned migrations.

Run explicitly by `polyg init-schema`, and lazily before a project's first use.

The index lists below are the base every project gets (version 1), created where missing at
every open. Each change since is a numbered step of `MIGRATIONS` (`add_range_index`,
`add_fulltext_field`, or any idempotent function of the store and the project), run in order
on a project whose `PolygMeta.schema_version` is below it, the version recorded after each
step; a new project starts at version 1 and takes the same path. A project whose version is
above `SCHEMA_VERSION` was written by a newer polyg, which may have changed what this one
relies on: it is refused rather than misread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from polyg.errors import DimensionMismatch, StoreError
from polyg.store.connection import reads_from_primary
from polyg.store.falkor import FalkorStore
from polyg.store.names import ENTITY, EVENT, POLYG_META, Label, RelType, is_name, is_reserved_rel_type
from polyg.store.queries.articles import INDEXES as DOCUMENT_INDEXES
from polyg.store.queries.nodes import NAME_KEY

log = logging.getLogger(__name__)

BASE_VERSION = 1  # the index lists below
# HNSW recall@10 is ~0.44 with FalkorDB's default efRuntime (10) and ~0.96 with 100.
EF_RUNTIME = 100
# Half FalkorDB's default (200): index builds (every start, every vector write) take half
# as long for the same KNN recall (bench/notes/2026-11-27-measured-choices.md); only new indexes get it.
EF_CONSTRUCTION = 100
HNSW_M = 16  # FalkorDB's default, written out so that the index says what it is

# The embeddable labels' indexes (polyg.core.graph.embeddable derives the same lists).
RANGE_INDEXES: dict[str, tuple[str, ...]] = {
    # parent_id: deleting an entity clears its children's parent, a lookup per deleted entity.
    # name_key: memory's match-or-create of a name (polyg.store.queries.nodes).
    "Entity": ("id", "name", "type", "parent_id", "name_key"),
    "Observation": ("id",),
    # occurred_us: timelines and an event's neighbours in time are read through it.
    "Event": ("id", "occurred_us"),
    "Chunk": ("id",),
}
FULLTEXT_INDEXES: dict[str, tuple[str, ...]] = {
    "Entity": ("name", "type", "summary"),
    "Observation": ("text",),
    "Event": ("description",),
    "Chunk": ("text",),
}
VECTOR_INDEXES: tuple[str, ...] = ("Entity", "Observation", "Event", "Chunk")
# Labels that carry no vector but are looked up by a property (articles and authors, spec 001).
STRUCTURE_INDEXES: dict[str, tuple[str, ...]] = DOCUMENT_INDEXES
# Every user relationship type gets a range index on this property (FalkorDB indexes
# relationships per type): a relationship is found and deleted by id without a scan of every edge.
RELATIONSHIP_INDEX = "id"


def range_index(label: str, prop: str) -> str:
    return f"CREATE INDEX FOR (n:{Label(label)}) ON (n.{_key(prop)})"


def fulltext_index(label: str, props: Sequence[str]) -> str:
    """Creates the label's full-text index, or adds fields to it (FalkorDB refuses a field
    already indexed, so only missing ones may be named)."""
    args = ", ".join(f"'{_key(p)}'" for p in props)
    return f"CALL db.idx.fulltext.createNodeIndex('{Label(label)}', {args})"


def _key(prop: str) -> str:
    if not is_name(prop):
        raise ValueError(f"not a property name: {prop!r}")
    return prop


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


def vector_index(label: str, dimension: int) -> str:
    return (
        f"CREATE VECTOR INDEX FOR (n:{Label(label)}) ON (n.embedding) OPTIONS "
        f"{{dimension: {int(dimension)}, similarityFunction: 'cosine', M: {HNSW_M}, "
        f"efConstruction: {EF_CONSTRUCTION}, efRuntime: {EF_RUNTIME}}}"
    )


def _missing_statements(found: dict[tuple[str, str], set[str]], dimension: int) -> list[str]:
    statements = []
    for label, props in (RANGE_INDEXES | STRUCTURE_INDEXES).items():
        for prop in props:
            if "RANGE" not in found.get((label, prop), set()):
                statements.append(range_index(label, prop))
    for label, props in FULLTEXT_INDEXES.items():
        missing = [p for p in props if "FULLTEXT" not in found.get((label, p), set())]
        if missing:
            statements.append(fulltext_index(label, missing))
    for label in VECTOR_INDEXES:
        if "VECTOR" not in found.get((label, "embedding"), set()):
            statements.append(vector_index(label, dimension))
    return statements


# --- versioned migrations ---------------------------------------------------------------------

Step = Callable[[FalkorStore, str], Awaitable[None]]


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    apply: Step  # idempotent: a step interrupted (or run by two processes at once) is run again


def add_range_index(label: str, prop: str) -> Step:
    """A step adding a range index to existing projects."""
    statement = range_index(label, prop)

    async def apply(store: FalkorStore, project: str) -> None:
        if "RANGE" not in (await existing_indexes(store, project)).get((label, prop), set()):
            await _create(store, project, statement)

    return apply


def add_fulltext_field(label: str, prop: str) -> Step:
    """A step adding a field to a label's full-text index (created if the label has none)."""
    statement = fulltext_index(label, [prop])

    async def apply(store: FalkorStore, project: str) -> None:
        if "FULLTEXT" not in (await existing_indexes(store, project)).get((label, prop), set()):
            await _create(store, project, statement)

    return apply


def add_vector_index(label: str) -> Step:
    """A step adding a label's vector index, as long as the project's vectors (its recorded
    dimension)."""

    async def apply(store: FalkorStore, project: str) -> None:
        if "VECTOR" not in (await existing_indexes(store, project)).get((label, "embedding"), set()):
            rows = await store.ro_query(project, f"MATCH (m:{POLYG_META} {{key: 'schema'}}) RETURN m.dimension")
            await _create(store, project, vector_index(label, int(rows[0][0])))

    return apply


def steps(*parts: Step) -> Step:
    """One step made of several, run in order."""

    async def apply(store: FalkorStore, project: str) -> None:
        for part in parts:
            await part(store, project)

    return apply


async def backfill_name_keys(store: FalkorStore, project: str) -> None:
    """Give every entity written before name keys its key (the writer's own expression)."""
    key = NAME_KEY.format(name="e.name")
    await store.query(
        project, f"MATCH (e:{ENTITY}) WHERE e.name_key IS NULL AND e.name IS NOT NULL SET e.name_key = {key}"
    )


MIGRATIONS: tuple[Migration, ...] = (
    # Deleting an entity clears its children's parent_id: without this index, by a scan of
    # every entity.
    Migration(2, "range index on Entity.parent_id", add_range_index(ENTITY, "parent_id")),
    # Events are declared embeddable (their vectors come from the vectorizer, search reads them
    # through the registry): every project has their indexes, not only one that wrote an event.
    Migration(
        3,
        "Event indexes (range on id and occurred_us, full text on description, vector)",
        steps(
            add_range_index(EVENT, "id"),
            add_range_index(EVENT, "occurred_us"),
            add_fulltext_field(EVENT, "description"),
            add_vector_index(EVENT),
        ),
    ),
    # Entities are matched on their normalised name inside the write that would create them
    # (one entity per name however many writers race): the key written on every entity since.
    Migration(
        4,
        "Entity.name_key: range index, set on the entities that lack it",
        steps(add_range_index(ENTITY, "name_key"), backfill_name_keys),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version if MIGRATIONS else BASE_VERSION


async def migrate(store: FalkorStore, project: str, version: int, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Run the steps above `version`, in order; the version reached."""
    latest = migrations[-1].version if migrations else BASE_VERSION
    if version > latest:
        raise StoreError(
            f"Project {project!r} has schema version {version}, newer than this polyg knows ({latest}): "
            "upgrade polyg to open it."
        )
    for step in migrations:
        if step.version <= version:
            continue
        await step.apply(store, project)
        # Never lowered: a slower process finishing an earlier step must not undo a later one.
        await store.query(
            project,
            f"MATCH (m:{POLYG_META} {{key: 'schema'}}) WHERE coalesce(m.schema_version, {BASE_VERSION}) < $v "
            "SET m.schema_version = $v",
            {"v": step.version},
        )
        log.info("schema migrated", extra={"project": project, "version": step.version, "step": step.what})
        version = step.version
    return version


async def ensure_schema(
    store: FalkorStore,
    project: str,
    *,
    model_id: str,
    dimension: int,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> None:
    rows = await store.query(
        project,
        f"MERGE (m:{POLYG_META} {{key: 'schema'}}) "
        "ON CREATE SET m.embedding_model = $model, m.dimension = $dim, m.schema_version = $version "
        "RETURN m.embedding_model, m.dimension, coalesce(m.schema_version, $version)",
        {"model": model_id, "dim": dimension, "version": BASE_VERSION},
    )
    stored_model, stored_dim, stored_version = rows[0]
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
    await migrate(store, project, int(stored_version), migrations)


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
                with reads_from_primary():  # it reads back what it has just written
                    await ensure_schema(self.store, project, model_id=self.model_id, dimension=self.dimension)
                self._done.add(project)

    def forget(self, project: str) -> None:
        self._done.discard(project)
