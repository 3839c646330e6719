"""Causal links: `CAUSES {id, confidence, evidence, created_at}` relationships from a cause to
an effect, each an `:Event` or an `:Entity` (the causal view)."""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import CAUSES, ENTITY, EVENT, Label
from polyg.store.queries import Runner
from polyg.store.queries.edges import create_relationships
from polyg.store.queries.memories import settling

ENDPOINTS = (ENTITY, EVENT)
End = tuple[str, str]  # a cause's or an effect's (label, id)
# What a chain shows of a node: id, labels, its text (an event's description, an entity's
# name), its time and its type.
NODE = "{n}.id, labels({n}), coalesce({n}.description, {n}.name), {n}.occurred_at, {n}.type"


def _label(label: str) -> Label:
    if label not in ENDPOINTS:
        raise ValueError(f"not a causal endpoint label: {label}")
    return Label(label)


async def existing_link(run: Runner, project: str, cause: End, effect: End) -> list[Row]:
    """(id, confidence, evidence, memories) of the link from cause to effect ((label, id) each), if any."""
    a, b = _label(cause[0]), _label(effect[0])
    return await run.read(
        project,
        f"MATCH (a:{a} {{id: $a}})-[r:CAUSES]->(b:{b} {{id: $b}}) "
        "RETURN r.id, r.confidence, r.evidence, r.memories LIMIT 1",
        {"a": cause[1], "b": effect[1]},
    )


async def create_link(
    run: Runner, project: str, cause: End, effect: End, link: dict[str, Any], *, settles: str | None = None
) -> None:
    """Create the link (id, confidence, evidence, now, memories); `settles`: a memory whose
    `unfinished` mark the write clears too."""
    # Made by the one statement (`polyg.store.queries.edges`): polyg's own type, its
    # confidence, evidence and provenance as properties; the caller looked for one first.
    props = {key: link[key] for key in ("confidence", "evidence", "memories") if link.get(key) is not None}
    row = {"id": link["id"], "a": cause[1], "b": effect[1], "type": CAUSES, "created_at": link["now"], "props": props}
    await create_relationships(
        run,
        project,
        [row],
        now=link["now"],
        source=_label(cause[0]),
        target=_label(effect[0]),
        shape="plain",
        after=settling(settles),
        returns=None,
        params={"settles": settles},
    )


async def update_link(
    run: Runner, project: str, cause: End, effect: End, link: dict[str, Any], *, settles: str | None = None
) -> None:
    """Update the link `id` (as `create_link`); `settles` as there."""
    a, b = _label(cause[0]), _label(effect[0])
    await run.write(
        project,
        f"MATCH (a:{a} {{id: $a}})-[r:CAUSES {{id: $id}}]->(b:{b} {{id: $b}}) "
        "SET r.confidence = $confidence, r.evidence = $evidence, r.updated_at = $now "
        # A memory that states the link again is added to those that stated it.
        "WITH r WHERE $memories IS NOT NULL SET r.memories = coalesce(r.memories, []) + "
        "[m IN $memories WHERE NOT m IN coalesce(r.memories, [])]" + settling(settles),
        {"a": cause[1], "b": effect[1], **link, "settles": settles},
    )


async def node(run: Runner, project: str, label: str, node_id: str) -> list[Row]:
    return await run.read(
        project, f"MATCH (n:{_label(label)} {{id: $id}}) RETURN {NODE.format(n='n')}", {"id": node_id}
    )


async def node_by_id(run: Runner, project: str, node_id: str) -> list[Row]:
    """The causal endpoint (entity first, then event) with that id, as `node` gives it."""
    return await run.read(
        project,
        " UNION ALL ".join(f"MATCH (n:{label} {{id: $id}}) RETURN {NODE.format(n='n')}" for label in ENDPOINTS),
        {"id": node_id},
    )


async def step(
    run: Runner, project: str, frontier: dict[str, list[str]], upstream: bool, *, further: bool = False
) -> list[Row]:
    """One hop from the frontier (label -> ids): (from id, link id, confidence, evidence,
    created_at, then the node reached, and with `further` whether that node has a link on
    the same way: the last hop of a walk asks, to say if its depth cut the chain). Upstream
    follows links backwards, to causes."""
    arrow = "<-[r:CAUSES]-(c)" if upstream else "-[r:CAUSES]->(c)"
    beyond = ("size((c)<-[:CAUSES]-()) > 0" if upstream else "size((c)-[:CAUSES]->()) > 0") if further else "false"
    branches = [
        f"UNWIND ${label} AS i MATCH (n:{_label(label)} {{id: i}}){arrow} "
        f"RETURN n.id AS src, r.id AS rid, r.confidence AS conf, r.evidence AS evidence, r.created_at AS at, "
        "r.memories AS memories, "
        "c.id AS cid, labels(c) AS clabels, coalesce(c.description, c.name) AS ctext, "
        f"c.occurred_at AS ctime, c.type AS ctype, {beyond} AS further"
        for label in ENDPOINTS
        if frontier.get(label)
    ]
    if not branches:
        return []
    params: dict[str, Any] = {str(label): frontier.get(label, []) for label in ENDPOINTS}
    return await run.read(project, " UNION ALL ".join(branches), params)
