"""Projects: statistics, clearing all or part of a project, and versioned schema migrations,
in every store mode (see conftest `store_mode`)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyg.embed.hashing import HashingEmbedder
from polyg.errors import StoreError
from polyg.runtime.app import Polyg, Services
from polyg.store import schema
from polyg.store.names import ENTITY
from polyg.store.schema import (
    SCHEMA_VERSION,
    Migration,
    add_fulltext_field,
    add_range_index,
    ensure_schema,
    existing_indexes,
)
from tests.mcp_helpers import polyg_command

from .conftest import StoreMode

pytestmark = pytest.mark.anyio

P = "proj"


async def populate(s: Services, project: str = P) -> dict[str, str]:
    ada = await s.entities.create(project, name="Ada", type_="person", observations=["wrote notes", "liked math"])
    acme = await s.entities.create(project, name="Acme", type_="company", observations=["makes engines"])
    note = await s.entities.create(project, name="notes", type_="file", parent_id=acme.id)
    await s.relationships.create(project, source_id=ada.id, target_id=acme.id, type_="works_at")
    await s.relationships.create(project, source_id=ada.id, target_id=note.id, type_="authored")
    await s.relationships.create(project, source_id=acme.id, target_id=note.id, type_="authored")
    return {"ada": ada.id, "acme": acme.id, "note": note.id}


async def scanned(s: Services, project: str = P) -> tuple[dict[str, int], dict[str, int]]:
    """Counts per label and per type by looking at every node and edge: the truth to compare with."""
    labels = await s.store.ro_query(project, "MATCH (n) UNWIND labels(n) AS l RETURN l, count(*)")
    types = await s.store.ro_query(project, "MATCH ()-[r]->() RETURN type(r), count(*)")
    return dict(labels), dict(types)


# --- statistics ---------------------------------------------------------------------------------


async def test_stats_count_every_label_and_type(services: Services) -> None:
    s = services
    await populate(s)
    stats = await s.projects.stats(P)
    labels, types = await scanned(s)
    assert stats.labels == labels
    assert stats.relationship_types == types
    assert labels == {
        "Entity": 3,
        "Person": 1,
        "Company": 1,
        "File": 1,
        "Observation": 3,
        "PolygMeta": 1,
        "RelationshipType": 2,  # works_at and authored, registered on first use
    }
    assert types == {"HAS_OBSERVATION": 3, "works_at": 1, "authored": 2}
    assert (stats.nodes, stats.edges) == (9, 6)
    assert (stats.schema_version, stats.embedding_model, stats.dimension) == (
        SCHEMA_VERSION,
        s.ctx.embedder.model_id,
        s.ctx.embedder.dimension,
    )


async def test_stats_of_a_missing_project_are_empty_and_create_nothing(services: Services) -> None:
    stats = await services.projects.stats("nothing_here")
    assert (stats.nodes, stats.edges, stats.labels, stats.relationship_types) == (0, 0, {}, {})
    assert stats.schema_version is None
    assert "nothing_here" not in await services.projects.names()


# --- deleting a project while its vectors are queued ----------------------------------------------


class GatedEmbedder(HashingEmbedder):
    """Embeds only once `gate` is open; `entered` tells that a batch is waiting at the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.entered = threading.Event(), threading.Event()

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return super().embed_batch_sync(texts)


@pytest.fixture
async def gated(store_mode: StoreMode) -> AsyncIterator[tuple[Services, GatedEmbedder]]:
    embedder = GatedEmbedder()
    core = Polyg(store_mode.settings(embedding_cache_entries=0), embedder=embedder)
    try:
        yield await core.ready(), embedder
    finally:
        embedder.gate.set()
        await core.close()


async def test_vectors_queued_for_a_deleted_project_do_not_bring_it_back(
    gated: tuple[Services, GatedEmbedder],
) -> None:
    """One batch is being embedded for the project while more of its entities wait in the queue;
    the project is deleted meanwhile (its queue dropped first, as tests/store/cluster's `drop` does).
    Neither may write after the delete: a vector write would create the graph again."""
    s, embedder = gated
    await s.entities.create(P, name="first", type_="t")
    await asyncio.to_thread(embedder.entered.wait, 30)  # its batch waits at the gate
    await s.entities.create(P, name="second", type_="t")  # queued behind it
    assert s.ctx.vectors.pending(P) == 1
    assert (await s.projects.stats(P)).nodes == 3  # two entities and the schema node

    forgetting = asyncio.create_task(s.ctx.vectors.forget(P))
    for _ in range(1000):  # let it run until it has dropped the queue and waits for the batch
        if forgetting.done() or s.ctx.vectors._forgotten.get(P):
            break
        await asyncio.sleep(0)
    assert s.ctx.vectors.pending(P) == 0
    embedder.gate.set()
    await forgetting
    await s.store.delete_project(P)

    # The worker stores one project at a time: once a later write elsewhere has its vectors,
    # whatever it was doing for the deleted project is done.
    await s.entities.create("elsewhere", name="later", type_="t")
    assert await s.ctx.vectors.settle("elsewhere", 30)
    assert P not in await s.projects.names()


# --- versioned migrations -----------------------------------------------------------------------


async def make_version_1(s: Services, project: str) -> None:
    """A project as polyg at schema version 1 left it: its indexes, `schema_version: 1`, data."""
    await ensure_schema(
        s.store, project, model_id=s.ctx.embedder.model_id, dimension=s.ctx.embedder.dimension, migrations=()
    )
    await s.store.query(
        project,
        "CREATE (:Entity {id: 'e1', name: 'Ada', type: 'person', nickname: 'countess', parent_id: NULL}), "
        "(:Entity {id: 'e2', name: 'notes', type: 'file', parent_id: 'e1'})",
    )
    # The parent_id index came later (in version 2): a version-1 project lacks it.
    # The schema guard's indexes are built in the background: drop this one once it is built,
    # and read the list until the drop shows (a server may report it a moment later).
    await indexes_operational(s, project)
    await s.store.query(project, "DROP INDEX ON :Entity(parent_id)")
    for _ in range(600):  # FalkorDB's indexer drops it in its own thread, after any build it has under way
        if ("Entity", "parent_id") not in await existing_indexes(s.store, project):
            break
        await asyncio.sleep(0.05)
    assert ("Entity", "parent_id") not in await existing_indexes(s.store, project)
    assert (await s.projects.stats(project)).schema_version == 1


async def indexes_operational(s: Services, project: str) -> None:
    for _ in range(600):
        rows = await s.store.ro_query(project, "CALL db.indexes() YIELD status RETURN status")
        if all(status == "OPERATIONAL" for (status,) in rows):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"indexes of {project} still building: {rows}")


async def test_a_version_1_project_is_migrated_on_first_use(services: Services) -> None:
    s = services
    await make_version_1(s, "old")
    await s.ctx.schema.ensure("old")  # what the first write of a server does
    assert (await s.projects.stats("old")).schema_version == SCHEMA_VERSION >= 2
    assert "RANGE" in (await existing_indexes(s.store, "old"))[("Entity", "parent_id")]
    assert await s.store.ro_query("old", "MATCH (c:Entity {parent_id: 'e1'}) RETURN c.id") == [["e2"]]


async def test_steps_run_in_order_once_and_resume_where_they_stopped(services: Services) -> None:
    s = services
    await make_version_1(s, "old")
    ran: list[int] = []

    def recorded(version: int, step: schema.Step) -> Migration:
        async def apply(store: Any, project: str) -> None:
            ran.append(version)
            await step(store, project)

        return Migration(version, f"step {version}", apply)

    steps = (
        recorded(2, add_range_index(ENTITY, "parent_id")),
        recorded(3, add_fulltext_field(ENTITY, "nickname")),  # a field added to an existing index
    )
    kwargs = {"model_id": s.ctx.embedder.model_id, "dimension": s.ctx.embedder.dimension, "migrations": steps}
    await ensure_schema(s.store, "old", **kwargs)  # type: ignore[arg-type]
    assert ran == [2, 3]
    found = await existing_indexes(s.store, "old")
    assert "RANGE" in found[("Entity", "parent_id")]
    assert {"name", "type", "summary", "nickname"} <= {p for (label, p), k in found.items() if "FULLTEXT" in k}
    # The new field indexes what was written before the step (once the index, rebuilt in the
    # background, is operational again).
    await indexes_operational(s, "old")
    hits = await s.store.ro_query(
        "old", "CALL db.idx.fulltext.queryNodes('Entity', 'countess') YIELD node RETURN node.id"
    )
    assert hits == [["e1"]]
    assert (await s.projects.stats("old")).schema_version == 3

    await ensure_schema(s.store, "old", **kwargs)  # type: ignore[arg-type]
    assert ran == [2, 3]  # nothing left to do

    # A step that ran but whose version was not recorded (a crash) runs again, harmlessly.
    await s.store.query("old", "MATCH (m:PolygMeta) SET m.schema_version = 2")
    await ensure_schema(s.store, "old", **kwargs)  # type: ignore[arg-type]
    assert ran == [2, 3, 3]
    assert (await s.projects.stats("old")).schema_version == 3


EVENT_INDEXES = {
    ("Event", "id"): "RANGE",
    ("Event", "occurred_us"): "RANGE",
    ("Event", "description"): "FULLTEXT",
    ("Event", "embedding"): "VECTOR",
}


async def test_a_version_2_project_gets_the_event_indexes(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before version 3 a project had Event indexes only once it held an event (the temporal
    view made them); events are now declared embeddable and every project has them. Its old
    events (vector written with the text, no revision) are found by meaning as they are."""
    s = services
    for base in ("RANGE_INDEXES", "FULLTEXT_INDEXES"):
        monkeypatch.setattr(schema, base, {k: v for k, v in getattr(schema, base).items() if k != "Event"})
    monkeypatch.setattr(schema, "VECTOR_INDEXES", tuple(x for x in schema.VECTOR_INDEXES if x != "Event"))
    kwargs = {"model_id": s.ctx.embedder.model_id, "dimension": s.ctx.embedder.dimension}
    await ensure_schema(s.store, "v2", migrations=schema.MIGRATIONS[:1], **kwargs)  # type: ignore[arg-type]
    await ensure_schema(s.store, "v2step", migrations=schema.MIGRATIONS[:1], **kwargs)  # type: ignore[arg-type]
    vector = await s.ctx.embedder.embed("the reactor was shut down for repairs")
    for project in ("v2", "v2step"):
        await s.store.query(
            project,
            "CREATE (:Event {id: 'evt_old', description: 'the reactor was shut down for repairs', "
            "occurred_at: '2024-03-01T00:00:00.000000Z', occurred_us: 1709251200000000, embedding: vecf32($v)})",
            {"v": vector},
        )
        found = await existing_indexes(s.store, project)
        assert not any(kind in found.get(key, set()) for key, kind in EVENT_INDEXES.items())
        assert (await s.projects.stats(project)).schema_version == 2
    monkeypatch.undo()

    # The step alone makes them (a project opened by ensure_schema gets them from the lists too).
    [step] = [m for m in schema.MIGRATIONS if m.version == 3]
    await step.apply(s.store, "v2step")
    found = await existing_indexes(s.store, "v2step")
    assert all(kind in found.get(key, set()) for key, kind in EVENT_INDEXES.items())

    await s.ctx.schema.ensure("v2")  # what the first use of a server does
    assert (await s.projects.stats("v2")).schema_version == SCHEMA_VERSION >= 3
    found = await existing_indexes(s.store, "v2")
    assert all(kind in found.get(key, set()) for key, kind in EVENT_INDEXES.items())
    await indexes_operational(s, "v2")
    hits = await s.search.search("v2", "reactor shut down for repairs", "events", 5)
    assert [hit.node_id for hit in hits] == ["evt_old"] and hits[0].vector is not None


async def test_a_project_from_a_newer_polyg_is_refused(services: Services) -> None:
    s = services
    await s.entities.create("new", name="x", type_="t")
    assert await s.ctx.vectors.settle("new", 30)
    await s.store.query("new", "MATCH (m:PolygMeta) SET m.schema_version = $v", {"v": SCHEMA_VERSION + 1})
    s.ctx.schema.forget("new")  # as a restart would
    with pytest.raises(StoreError, match="newer than this polyg knows"):
        await s.entities.create("new", name="y", type_="t")
    stats = await s.projects.stats("new")
    assert stats.schema_version == SCHEMA_VERSION + 1 and stats.labels["Entity"] == 1  # left as it was


# --- polyg status -------------------------------------------------------------------------------


async def test_polyg_status_shows_each_projects_counts(services: Services, store_mode: StoreMode) -> None:
    if store_mode.name != "embedded":
        pytest.skip("one store mode is enough for the command line")
    s = services
    await populate(s)
    settings = s.settings
    result = await asyncio.to_thread(
        subprocess.run,
        [*polyg_command(), "status", "--data-dir", str(settings.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == f"projects (1): {P}"
    assert lines[2] == (
        f"  {P}: 9 nodes (Company 1, Entity 3, File 1, Observation 3, Person 1, PolygMeta 1, RelationshipType 2), "
        f"6 edges (HAS_OBSERVATION 3, authored 2, works_at 1), schema v{SCHEMA_VERSION}"
    )


async def test_a_field_added_to_the_full_text_lists_reaches_existing_projects(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FalkorDB refuses to index a field twice: only the new field may be named."""
    s = services
    await make_version_1(s, "old")
    monkeypatch.setitem(schema.FULLTEXT_INDEXES, "Entity", (*schema.FULLTEXT_INDEXES["Entity"], "nickname"))
    await s.ctx.schema.ensure("old")
    assert "FULLTEXT" in (await existing_indexes(s.store, "old"))[("Entity", "nickname")]
