"""Cypher for node indexes: the per-label index statements (`NodeIndexes`), and the states of a
project's indexes (whether FalkorDB is still building them, whether the chunks have their vector
index). Relationship-type indexes are made by `polyg.store.queries.reltypes` and
`polyg.store.queries.temporal`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from polyg.store.falkor import Row
from polyg.store.names import CHUNK, Label
from polyg.store.queries import Runner


@dataclass(frozen=True)
class NodeIndexes:
    """The indexes of node labels: range (equality lookups), full-text, vector (`embedding`)."""

    range: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fulltext: dict[str, tuple[str, ...]] = field(default_factory=dict)
    vector: tuple[str, ...] = ()

    def missing(
        self, found: Mapping[tuple[str, str], set[str]], dimension: int, *, hnsw: Mapping[str, int]
    ) -> list[str]:
        """Statements creating the indexes `found` (label, property) -> kinds lacks. `hnsw`:
        M, efConstruction, efRuntime of new vector indexes."""
        statements = []
        for label, props in self.range.items():
            for prop in props:
                if "RANGE" not in found.get((label, prop), set()):
                    statements.append(f"CREATE INDEX FOR (n:{Label(label)}) ON (n.{Label(prop)})")
        for label, props in self.fulltext.items():
            # FalkorDB refuses a field already indexed: only the missing ones are named.
            missing = [p for p in props if "FULLTEXT" not in found.get((label, p), set())]
            if missing:
                args = ", ".join(f"'{Label(p)}'" for p in missing)
                statements.append(f"CALL db.idx.fulltext.createNodeIndex('{Label(label)}', {args})")
        for label in self.vector:
            if "VECTOR" not in found.get((label, "embedding"), set()):
                statements.append(
                    f"CREATE VECTOR INDEX FOR (n:{Label(label)}) ON (n.embedding) OPTIONS "
                    f"{{dimension: {int(dimension)}, similarityFunction: 'cosine', M: {int(hnsw['M'])}, "
                    f"efConstruction: {int(hnsw['efConstruction'])}, efRuntime: {int(hnsw['efRuntime'])}}}"
                )
        return statements


async def index_states(runner: Runner, project: str) -> list[Row]:
    """(label, status) of every index of the project."""
    return await runner.read(project, "CALL db.indexes() YIELD label, status RETURN label, status")


async def entity_index_status(run: Runner, project: str) -> list[Row]:
    """[status, has a vector field] of the `Entity` indexes (none for a project never written)."""
    return await run.read(
        project,
        "CALL db.indexes() YIELD label, types, status WHERE label = 'Entity' "
        "RETURN status, any(k IN keys(types) WHERE 'VECTOR' IN types[k])",
    )


async def has_chunk_vector_index(runner: Runner, project: str) -> bool:
    rows = await runner.read(project, "CALL db.indexes() YIELD label, types RETURN label, types")
    return any(label == CHUNK and "VECTOR" in dict(types).get("embedding", []) for label, types in rows)
