"""The store contract: what the core services promise, in every store mode.

Each test runs three times (see conftest `store_mode`): on the embedded store, on a real
FalkorDB server over loopback TCP, and on one that requires a password.
"""

from __future__ import annotations

import asyncio
import math
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from polyg.config import load_settings
from polyg.core.graph.context import GraphContext
from polyg.core.graph.entities import EntityDetail, EntityService
from polyg.core.graph.vectors import compose
from polyg.core.model import Edge, Node
from polyg.embed import create_embedder
from polyg.errors import DimensionMismatch, InvalidParams, NotFound, StoreAuthError, StoreTimeout
from polyg.runtime.app import Polyg, Services
from polyg.store.falkor import VectorParam
from polyg.store.schema import EF_CONSTRUCTION, EF_RUNTIME, SchemaGuard, ensure_schema, existing_indexes
from tests.falkor_server import FalkorServer, free_port

from .conftest import StoreMode

pytestmark = pytest.mark.anyio

P = "contract"


async def entity_count(s: Services, project: str = P) -> int:
    rows = await s.store.ro_query(project, "MATCH (e:Entity) RETURN count(e)")
    return int(rows[0][0])


async def observation_count(s: Services, project: str = P) -> int:
    rows = await s.store.ro_query(project, "MATCH (o:Observation) RETURN count(o)")
    return int(rows[0][0])


async def stored_embedding(s: Services, entity_id: str, project: str = P) -> list[float]:
    assert await s.ctx.vectors.settle(project, 30)  # vectors are stored just after the text
    rows = await s.store.ro_query(project, "MATCH (e:Entity {id: $id}) RETURN e.embedding", {"id": entity_id})
    assert rows, f"entity {entity_id} not stored"
    return [float(x) for x in rows[0][0]]


async def create(s: Services, name: str, project: str = P, **kwargs: Any) -> EntityDetail:
    return await s.entities.create(project, name=name, type_=kwargs.pop("type_", "file"), **kwargs)


# --- entities --------------------------------------------------------------------------------


async def test_entity_create_get_list_update_delete(services: Services) -> None:
    s = services
    made = await create(s, "src/utils.ts", description="helpers", observations=["uses moment"])
    assert made.id.startswith("ent_")
    assert (made.node.name, made.node.type, made.node.summary) == ("src/utils.ts", "file", "helpers")
    assert [o.text for o in made.observations] == ["uses moment"]

    got = await s.entities.get(P, made.id)
    assert got == made

    other = await create(s, "src/app.ts", type_="module")
    listed = await s.entities.find(P)
    assert {e.id for e in listed} == {made.id, other.id}
    assert await s.entities.find(P, type_="module") == [Node(other.id, "Entity", name="src/app.ts", type="module")]
    assert [e.id for e in await s.entities.find(P, name_contains="UTILS")] == [made.id]
    page = await s.entities.find(P, limit=1, offset=1)
    assert len(page) == 1

    await s.entities.update_description(P, made.id, "date helpers")
    assert (await s.entities.get(P, made.id)).node.summary == "date helpers"

    await s.entities.delete(P, made.id)
    with pytest.raises(NotFound):
        await s.entities.get(P, made.id)
    with pytest.raises(NotFound):
        await s.entities.delete(P, made.id)
    with pytest.raises(NotFound):
        await s.entities.update_description(P, made.id, "x")
    assert await entity_count(s) == 1


async def test_type_becomes_a_second_label(services: Services) -> None:
    made = await create(services, "Lisbon", type_="location")
    rows = await services.store.ro_query(P, "MATCH (n:Location) RETURN n.id, labels(n)")
    assert rows[0][0] == made.id
    assert set(rows[0][1]) == {"Entity", "Location"}


async def test_child_needs_an_existing_parent(services: Services) -> None:
    parent = await create(services, "src")
    child = await create(services, "src/a.ts", parent_id=parent.id)
    assert child.node.parent_id == parent.id
    with pytest.raises(NotFound):
        await create(services, "orphan", parent_id="ent_missing")
    assert await entity_count(services) == 2


async def test_generated_ids_are_unique(services: Services) -> None:
    made = await asyncio.gather(*(create(services, f"e{i}", observations=[f"a{i}", f"b{i}"]) for i in range(40)))
    entity_ids = {e.id for e in made}
    observation_ids = {o.id for e in made for o in e.observations}
    assert len(entity_ids) == 40
    assert len(observation_ids) == 80
    assert await entity_count(services) == 40


async def test_timestamps(services: Services) -> None:
    made = await create(services, "a")
    assert made.node.created_at and made.node.created_at == made.node.updated_at
    assert made.node.created_at.endswith("Z")

    await services.entities.update_description(P, made.id, "changed")
    after_update = await services.entities.get(P, made.id)
    assert after_update.node.created_at == made.node.created_at
    assert after_update.node.updated_at > made.node.updated_at  # ISO 8601 UTC sorts as text

    await services.entities.add_observation(P, made.id, "seen")
    after_observation = await services.entities.get(P, made.id)
    assert after_observation.node.created_at == made.node.created_at
    assert after_observation.node.updated_at > after_update.node.updated_at


# --- observations ----------------------------------------------------------------------------


async def test_observations(services: Services) -> None:
    s = services
    entity = await create(s, "a", observations=["first"])
    second = await s.entities.add_observation(P, entity.id, "second")
    assert second.id.startswith("obs_") and second.text == "second"
    got = await s.entities.get(P, entity.id)
    assert [o.text for o in got.observations] == ["first", "second"]

    await s.entities.delete_observation(P, entity.id, got.observations[0].id)
    got = await s.entities.get(P, entity.id)
    assert got.observations == (second,)
    assert await observation_count(s) == 1

    other = await create(s, "b")
    with pytest.raises(NotFound):  # the observation belongs to another entity
        await s.entities.delete_observation(P, other.id, second.id)
    with pytest.raises(NotFound):
        await s.entities.add_observation(P, "ent_missing", "text")
    with pytest.raises(InvalidParams):
        await s.entities.add_observation(P, entity.id, "   ")
    assert await observation_count(s) == 1


# --- relationships ---------------------------------------------------------------------------


async def test_relationships(services: Services) -> None:
    s = services
    a, b, c = [await create(s, name) for name in ("a", "b", "c")]
    ab = await s.relationships.create(P, source_id=a.id, target_id=b.id, type_="imports")
    cb = await s.relationships.create(P, source_id=c.id, target_id=b.id, type_="uses", description="d")
    assert ab.id.startswith("rel_") and ab.id != cb.id

    out = await s.relationships.list_for(P, a.id, type_=None, direction="outgoing", limit=10)
    assert out == [Edge(id=ab.id, type="imports", source_id=a.id, target_id=b.id, description="")]
    incoming = await s.relationships.list_for(P, b.id, type_=None, direction="incoming", limit=10)
    assert {r.id for r in incoming} == {ab.id, cb.id}
    assert await s.relationships.list_for(P, b.id, type_=None, direction="outgoing", limit=10) == []
    only_uses = await s.relationships.list_for(P, b.id, type_="uses", direction="both", limit=10)
    assert [r.id for r in only_uses] == [cb.id]

    related = await s.relationships.related(P, b.id, type_=None, direction="both", limit=10)
    assert {(r.node.id, r.direction) for r in related} == {
        (a.id, "incoming"),
        (c.id, "incoming"),
    }

    with pytest.raises(NotFound):
        await s.relationships.create(P, source_id=a.id, target_id="ent_missing", type_="imports")
    with pytest.raises(InvalidParams):
        await s.relationships.create(P, source_id=a.id, target_id=b.id, type_="bad type")
    with pytest.raises(InvalidParams):
        await s.relationships.create(P, source_id=a.id, target_id=b.id, type_="HAS_OBSERVATION")

    await s.relationships.delete(P, ab.id)
    assert await s.relationships.list_for(P, a.id, type_=None, direction="both", limit=10) == []
    with pytest.raises(NotFound):
        await s.relationships.delete(P, ab.id)
    with pytest.raises(NotFound):
        await s.relationships.list_for(P, "ent_missing", type_=None, direction="both", limit=10)


async def test_delete_entity_cascades(services: Services) -> None:
    s = services
    parent = await create(s, "parent", observations=["o1", "o2"])
    child = await create(s, "child", parent_id=parent.id, observations=["o3"])
    peer = await create(s, "peer")
    await s.relationships.create(P, source_id=parent.id, target_id=peer.id, type_="uses")
    await s.relationships.create(P, source_id=peer.id, target_id=parent.id, type_="uses")
    await s.relationships.create(P, source_id=child.id, target_id=peer.id, type_="uses")

    await s.entities.delete(P, parent.id)

    assert await observation_count(s) == 1  # only the child's
    assert (await s.entities.get(P, child.id)).node.parent_id is None
    rels = await s.store.ro_query(P, "MATCH ()-[r]->() WHERE type(r) <> 'HAS_OBSERVATION' RETURN count(r)")
    assert rels == [[1]]
    remaining = await s.relationships.list_for(P, peer.id, type_=None, direction="both", limit=10)
    assert [(r.source_id, r.target_id) for r in remaining] == [(child.id, peer.id)]


# --- projects --------------------------------------------------------------------------------


async def test_projects_are_isolated(services: Services) -> None:
    s = services
    one = await create(s, "shared-name", project="one", observations=["x"])
    two = await create(s, "shared-name", project="two")

    assert [e.id for e in await s.entities.find("one")] == [one.id]
    assert [e.id for e in await s.entities.find("two")] == [two.id]
    with pytest.raises(NotFound):
        await s.entities.get("two", one.id)
    with pytest.raises(NotFound):
        await s.entities.add_observation("two", one.id, "leak")
    with pytest.raises(NotFound):
        await s.relationships.create("two", source_id=two.id, target_id=one.id, type_="uses")
    with pytest.raises(NotFound):
        await s.entities.delete("two", one.id)
    assert (await s.entities.get("one", one.id)).observations == one.observations
    assert await observation_count(s, "two") == 0


async def test_list_and_delete_projects(services: Services) -> None:
    s = services
    assert await s.store.list_projects() == []
    await create(s, "a", project="alpha")
    await create(s, "b", project="beta")
    assert await s.store.list_projects() == ["alpha", "beta"]

    # The vectors of "a" are written after it, in the background: a vector write that lands after
    # the delete makes the graph again (the core's deletion drops them first: Vectorizer.forget).
    assert await s.ctx.vectors.settle("alpha", 30)
    await s.store.delete_project("alpha")
    assert await s.store.list_projects() == ["beta"]
    assert await s.entities.find("alpha") == []
    await s.store.delete_project("never-written")  # deleting nothing is not an error
    assert await entity_count(s, "beta") == 1


async def test_deleted_project_can_be_written_again(services: Services) -> None:
    s = services
    await create(s, "a", project="again")
    assert await s.ctx.vectors.settle("again", 30)  # not written after the delete (see above)
    await s.store.delete_project("again")
    s.ctx.schema.forget("again")  # the indexes went with the graph
    made = await create(s, "b", project="again")
    assert [e.id for e in await s.entities.find("again")] == [made.id]
    assert ("Entity", "embedding") in await existing_indexes(s.store, "again")


async def test_reading_a_project_never_written(services: Services) -> None:
    s = services
    assert await s.store.ro_query("nothing-here", "MATCH (n) RETURN n") == []
    assert await s.entities.find("nothing-here") == []
    with pytest.raises(NotFound):
        await s.entities.get("nothing-here", "ent_x")
    assert "nothing-here" not in await s.store.list_projects()


async def test_invalid_project_id_is_refused(services: Services) -> None:
    with pytest.raises(InvalidParams):
        await create(services, "a", project="bad project")
    with pytest.raises(InvalidParams):
        await services.store.ro_query("../x", "RETURN 1")


# --- embeddings ------------------------------------------------------------------------------


async def test_embeddings_are_stored(services: Services) -> None:
    s = services
    dimension = s.ctx.embedder.dimension
    made = await create(s, "a", description="desc", observations=["one", "two"])
    assert len(await stored_embedding(s, made.id)) == dimension
    rows = await s.store.ro_query(P, "MATCH (o:Observation) RETURN o.embedding")
    assert len(rows) == 2
    assert all(len(row[0]) == dimension for row in rows)


async def test_entity_is_reembedded_when_its_text_changes(services: Services) -> None:
    s = services
    made = await create(s, "a", description="original")
    v0 = await stored_embedding(s, made.id)

    await s.entities.update_description(P, made.id, "something else entirely")
    v1 = await stored_embedding(s, made.id)
    assert v1 != v0

    observation = await s.entities.add_observation(P, made.id, "a brand new observation")
    v2 = await stored_embedding(s, made.id)
    assert v2 != v1

    # Removing the observation brings back the text, hence (deterministic embedder) the vector.
    await s.entities.delete_observation(P, made.id, observation.id)
    v3 = await stored_embedding(s, made.id)
    assert v3 == pytest.approx(v1, abs=1e-6)


async def test_concurrent_observations_all_reach_the_embedding(services: Services) -> None:
    s = services
    made = await create(s, "a")
    texts = [f"observation number{i}" for i in range(15)]
    await asyncio.gather(*(s.entities.add_observation(P, made.id, t) for t in texts))
    got = await s.entities.get(P, made.id)
    assert sorted(o.text for o in got.observations) == sorted(texts)
    # The entity vector is composed from its head and every observation's vector (a mean, so
    # it does not depend on the order the observations landed in).
    head, *observations = await s.ctx.embed(["a (file)", *texts])
    expected = compose(head, observations)
    assert await stored_embedding(s, made.id) == pytest.approx(expected, abs=1e-5)


# --- schema ----------------------------------------------------------------------------------


async def test_indexes_exist_after_the_first_write(services: Services) -> None:
    s = services
    assert await existing_indexes(s.store, P) == {}
    await create(s, "a")
    found = await existing_indexes(s.store, P)
    assert "RANGE" in found[("Entity", "id")]
    assert "RANGE" in found[("Observation", "id")]
    for prop in ("name", "type", "summary"):
        assert "FULLTEXT" in found[("Entity", prop)]
    assert "FULLTEXT" in found[("Observation", "text")]

    rows = await s.store.ro_query(P, "CALL db.indexes() YIELD label, options RETURN label, options")
    # Labels without a vector (articles, authors) have range indexes only.
    vector_options = {label: dict(options)["embedding"] for label, options in rows if "embedding" in dict(options)}
    for label in ("Entity", "Observation", "Chunk"):
        assert "VECTOR" in found[(label, "embedding")]
        opts = vector_options[label]
        assert opts["efRuntime"] == EF_RUNTIME == 100
        assert opts["efConstruction"] == EF_CONSTRUCTION == 100
        assert opts["M"] == 16
        assert opts["dimension"] == s.ctx.embedder.dimension
        assert opts["similarityFunction"] == "cosine"


async def test_ensure_schema_is_idempotent(services: Services) -> None:
    s = services
    embedder = s.ctx.embedder
    await ensure_schema(s.store, "fresh", model_id=embedder.model_id, dimension=embedder.dimension)
    first = await existing_indexes(s.store, "fresh")
    await ensure_schema(s.store, "fresh", model_id=embedder.model_id, dimension=embedder.dimension)
    assert await existing_indexes(s.store, "fresh") == first
    rows = await s.store.ro_query("fresh", "MATCH (m:PolygMeta) RETURN m.embedding_model, m.dimension")
    assert rows == [[embedder.model_id, embedder.dimension]]


async def test_concurrent_schema_creation(services: Services) -> None:
    """Two processes on one database each run ensure_schema on a new project at the same time."""
    s = services
    embedder = s.ctx.embedder
    guards = [SchemaGuard(s.store, embedder.model_id, embedder.dimension) for _ in range(4)]
    await asyncio.gather(*(guard.ensure("raced") for guard in guards))
    found = await existing_indexes(s.store, "raced")
    assert "VECTOR" in found[("Entity", "embedding")] and "FULLTEXT" in found[("Observation", "text")]


async def test_another_dimension_on_an_existing_project_is_refused(services: Services) -> None:
    s = services
    made = await create(s, "a")
    small = create_embedder("hashing", dimension=16)
    with pytest.raises(DimensionMismatch) as excinfo:
        await ensure_schema(s.store, P, model_id=small.model_id, dimension=small.dimension)
    assert excinfo.value.code == 3003
    assert "384" in excinfo.value.message and "16" in excinfo.value.message

    # Through the services, as a server configured with another embedder would see it.
    ctx = GraphContext(s.store, small, SchemaGuard(s.store, small.model_id, small.dimension))
    try:
        with pytest.raises(DimensionMismatch):
            await EntityService(ctx).create(P, name="b", type_="file")
        assert [e.id for e in await s.entities.find(P)] == [made.id]
        # Other projects are not affected.
        await EntityService(ctx).create("small", name="b", type_="file")
    finally:
        # Its vectors stored and its worker stopped, as that server's would be at its close: left
        # running, the worker wrote them later, into the next test on the session's server.
        await ctx.vectors.close()


# --- the open ----------------------------------------------------------------------------------


async def test_status_and_close(store_mode: StoreMode) -> None:
    core = Polyg(store_mode.settings(), embedder=create_embedder("hashing"))
    assert core.status == "loading"
    try:
        services = await core.ready()
        assert core.status == "ok"
        assert await core.project_count() == 0
        assert await services.store.list_projects() == []
    finally:
        await core.close()


# --- server-mode failures (not parametrised: they need no working store) ---------------------


async def test_unreachable_server_fails_promptly(clean_env: Path) -> None:
    port = free_port()  # nobody listens there
    settings = load_settings(None, data_dir=clean_env / "data", store=f"falkor://127.0.0.1:{port}")
    core = Polyg(settings, embedder=create_embedder("hashing"))
    started = time.monotonic()
    try:
        with pytest.raises(StoreTimeout) as excinfo:
            await core.ready()
    finally:
        await core.close()
    assert time.monotonic() - started < 15
    assert excinfo.value.code == 2001
    assert f"127.0.0.1:{port}" in excinfo.value.message
    assert core.status == "error"
    assert core.error_message and f"127.0.0.1:{port}" in core.error_message


async def test_wrong_password_is_an_auth_error(clean_env: Path, falkor_server_with_password: FalkorServer) -> None:
    server = falkor_server_with_password
    for password in ("wrong", None):
        settings = load_settings(None, data_dir=clean_env / "data", store=server.url, falkordb_password=password)
        core = Polyg(settings, embedder=create_embedder("hashing"))
        try:
            with pytest.raises(StoreAuthError) as excinfo:
                await core.ready()
        finally:
            await core.close()
        assert excinfo.value.code == 2002
        assert "Authentication" in excinfo.value.message
        assert "wrong" not in excinfo.value.message  # the password is not echoed


async def test_password_in_the_url(clean_env: Path, falkor_server_with_password: FalkorServer) -> None:
    server = falkor_server_with_password
    url = f"falkor://:{server.password}@{server.host}:{server.port}"
    core = Polyg(load_settings(None, data_dir=clean_env / "data", store=url), embedder=create_embedder("hashing"))
    try:
        services = await core.ready()
        made = await create(services, "a")
        assert (await services.entities.get(P, made.id)).node.name == "a"
    finally:
        await core.close()
        client = server.client()
        try:
            client.flushall()
        finally:
            client.close()


async def test_vector_parameters_reach_the_store_exactly(services: Services) -> None:
    # Sent compactly (VectorParam), stored as float32: every float32 value must survive.
    values = [math.pi / (i + 1) * (-1) ** i for i in range(20)] + [1e-8, -3.5e-12, 0.0, 1.0]
    rows = await services.store.query(P, "RETURN vecf32($v)", {"v": VectorParam(values)})
    as_float32 = [struct.unpack("f", struct.pack("f", x))[0] for x in values]
    assert [float(x) for x in rows[0][0]] == as_float32
