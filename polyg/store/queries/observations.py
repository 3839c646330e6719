"""Cypher for an entity's observations (`(:Entity)-[:HAS_OBSERVATION]->(:Observation)`): adding
them (a text the entity holds already is not added again, checked inside the write), deleting
them, and reading them (with the entity's summary, for extraction and for graph search)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyg.store.falkor import Row
from polyg.store.queries import Runner
from polyg.store.queries.node_reads import exists
from polyg.store.queries.nodes import bump_rev


async def add_observation(
    runner: Runner, project: str, entity_id: str, observation_id: str, text: str, now: str
) -> list[Row]:
    """[the observation's id, whether it was added]: a text the entity holds already is not
    added again (checked inside the write)."""
    return await runner.write(
        project,
        "MATCH (e:Entity {id: $id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(x:Observation) "
        "WHERE x.text = $text WITH e, collect(x.id)[0] AS have "
        "FOREACH (_ IN CASE WHEN have IS NULL THEN [1] ELSE [] END | "
        "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: $oid, text: $text, created_at: $now}) "
        f"SET e.updated_at = $now, {bump_rev()}) "
        "RETURN coalesce(have, $oid), have IS NULL",
        {"id": entity_id, "oid": observation_id, "text": text, "now": now},
    )


OBSERVATION_OF = "MATCH (e:Entity {id: $id})-[:HAS_OBSERVATION]->(o:Observation {id: $oid}) "


async def observation_exists(runner: Runner, project: str, entity_id: str, observation_id: str) -> bool:
    return await exists(runner, project, OBSERVATION_OF + "RETURN o.id", {"id": entity_id, "oid": observation_id})


async def delete_observation(runner: Runner, project: str, entity_id: str, observation_id: str) -> list[Row]:
    return await runner.write(
        project, OBSERVATION_OF + f"DELETE o SET {bump_rev()} RETURN e.id", {"id": entity_id, "oid": observation_id}
    )


async def add_observations(runner: Runner, project: str, rows: list[dict[str, Any]], now: str) -> list[Row]:
    """Add observations from rows (id, obs[{id, text, created_at}]) an entity does not hold yet;
    returns [entity id, texts added] per entity that got one."""
    return await runner.write(
        project,
        "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) UNWIND r.obs AS o "
        "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(x:Observation) WHERE x.text = o.text "
        "WITH e, o, count(x) AS have WHERE have = 0 "
        "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: o.id, text: o.text, created_at: o.created_at}) "
        f"WITH e, collect(o.text) AS added SET e.updated_at = $now, {bump_rev()} RETURN e.id, added",
        {"rows": rows, "now": now},
    )


async def delete_observations(runner: Runner, project: str, rows: list[dict[str, Any]]) -> list[str]:
    """Delete the observations of each row's entity (id) whose text is among its texts; returns
    the ids of the entities touched."""
    touched = await runner.write(
        project,
        "UNWIND $rows AS r MATCH (e:Entity {id: r.id})-[:HAS_OBSERVATION]->(o:Observation) "
        "WHERE o.text IN r.texts DELETE o "
        f"WITH DISTINCT e SET {bump_rev()} RETURN e.id",
        {"rows": rows},
    )
    return [row[0] for row in touched]


async def observations_of(run: Runner, project: str, ids: Sequence[str]) -> list[Row]:
    """[entity id, name, rev, [[observation id, text]]] per entity, observations oldest first."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "WITH e, o ORDER BY o.created_at, o.id "
        "RETURN e.id, e.name, e.rev, collect(CASE WHEN o IS NULL THEN NULL ELSE [o.id, o.text] END)",
        {"ids": list(ids)},
    )


async def entity_texts_at(run: Runner, project: str, internal_ids: Sequence[int], observations: int) -> list[Row]:
    """[internal id, description, [first `observations` observation texts]] per node."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e) WHERE id(e) = i OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "WITH e, o ORDER BY o.created_at, o.id "
        "RETURN id(e), e.summary, collect(o.text)[..$n]",
        {"ids": list(internal_ids), "n": observations},
    )
