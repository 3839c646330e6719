"""Finding the node a name, a reference or a text means: entities by name, events by description,
knowledge's references (an id, else a name).

Exact matches use the range index on `Entity.name`, and each hit is compared again after it is
projected out of the node: the index holds texts stripped, so it also finds a `beta\n` for
`beta` (`EXACT_NAME`). The case-insensitive fallback compares the full-text index's matches of
all the text's words (the scan of every node it replaced cost a read of every name or
description per new name). Candidates for fuzzy and vector matching come from the full-text
and vector indexes of `Entity` and `Event`.
"""

from __future__ import annotations

from collections.abc import Sequence

from polyg.store.falkor import Row, VectorParam
from polyg.store.names import ENTITY, EVENT, Label
from polyg.store.queries import Runner
from polyg.store.queries.nodes import NAME_KEY
from polyg.store.queries.vectors import nearest

# The labels a causal or temporal reference may point at, and the text that names each.
TEXT_FIELD: dict[str, str] = {ENTITY: "name", EVENT: "description"}


async def entities_named(run: Runner, project: str, names: list[str]) -> list[Row]:
    """(name, [id, name]) of the oldest entity with each exact name."""
    return await run.read(
        project,
        f"UNWIND $names AS n MATCH (e:Entity {{name: n}}) {EXACT_NAME}"
        "WITH n, e ORDER BY e.created_at, e.id RETURN n, collect([e.id, e.name])[0]",
        {"names": names},
    )


async def entities_named_or_keyed(run: Runner, project: str, names: list[str]) -> list[Row]:
    """(name, [id, name, exact]) of the oldest entity with each exact name, else the oldest
    whose normalised name (`name_key`, what the writer matches a name on) is the name's: one
    round trip, two indexed seeks per name."""
    key = NAME_KEY.format(name="n")
    return await run.read(
        project,
        "UNWIND $names AS n CALL { "
        f"WITH n MATCH (e:Entity {{name: n}}) {EXACT_NAME}RETURN e, 0 AS rank UNION "
        f"WITH n MATCH (e:Entity {{name_key: {key}}}) WITH n, e, e.name_key AS k WHERE k = {key} RETURN e, 1 AS rank "
        "} WITH n, e, rank ORDER BY rank, e.created_at, e.id RETURN n, collect([e.id, e.name, rank = 0])[0]",
        {"names": names},
    )


async def entities_named_folded(run: Runner, project: str, folded: list[str]) -> list[Row]:
    """(lower-cased name, [id, name]) of the oldest entity whose name matches each
    case-insensitively (reads every entity's name: for names the index cannot find)."""
    return await run.read(
        project,
        "MATCH (e:Entity) WITH e, toLower(e.name) AS n WHERE n IN $names "
        "WITH n, e ORDER BY e.created_at, e.id RETURN n, collect([e.id, e.name])[0]",
        {"names": folded},
    )


async def entities_named_folded_indexed(run: Runner, project: str, items: list[dict[str, str]]) -> list[Row]:
    """(lower-cased name, [id, name]) of the oldest entity whose name matches each item's `text`
    case-insensitively, among the full-text matches of its `q` (all the name's words)."""
    return await run.read(
        project,
        "UNWIND $items AS it CALL { WITH it CALL db.idx.fulltext.queryNodes('Entity', it.q) YIELD node "
        "WITH it, node WHERE toLower(node.name) = it.text RETURN node ORDER BY node.created_at, node.id LIMIT 1 } "
        "RETURN it.text, [node.id, node.name]",
        {"items": items},
    )


async def node_with_text_indexed(
    run: Runner, project: str, label: Label, query: str, text: str, *, folded: bool = False
) -> list[Row]:
    """Ids of `label` nodes whose text is exactly `text` (`folded`: whose text lower-cased is
    `text`), among the full-text matches of `query` (words every such text holds)."""
    field = f"toLower(node.{TEXT_FIELD[label]})" if folded else f"node.{TEXT_FIELD[label]}"
    return await run.read(
        project,
        f"CALL db.idx.fulltext.queryNodes('{label}', $q) YIELD node WITH node WHERE {field} = $text "
        "RETURN node.id ORDER BY node.created_at, node.id LIMIT 1",
        {"q": query, "text": text},
    )


async def node_with_text(run: Runner, project: str, label: Label, text: str) -> list[Row]:
    """Ids of `label` nodes whose text (entity name, event description) is exactly `text`."""
    field = TEXT_FIELD[label]
    return await run.read(
        project,
        f"MATCH (n:{label} {{{field}: $text}}) WITH n, n.{field} AS found WHERE found = $text "
        "RETURN n.id ORDER BY n.created_at, n.id LIMIT 1",
        {"text": text},
    )


async def node_with_folded_text(run: Runner, project: str, label: Label, folded: str) -> list[Row]:
    field = TEXT_FIELD[label]
    return await run.read(
        project,
        f"MATCH (n:{label}) WHERE toLower(n.{field}) = $text RETURN n.id ORDER BY n.created_at, n.id LIMIT 1",
        {"text": folded},
    )


async def node_by_id(run: Runner, project: str, label: Label, node_id: str) -> list[Row]:
    return await run.read(project, f"MATCH (n:{label} {{id: $id}}) RETURN n.id", {"id": node_id})


async def text_candidates(run: Runner, project: str, label: Label, query: str, limit: int) -> list[Row]:
    """(id, text) of the best full-text matches of `query` (words joined by `|`: any word)."""
    field = TEXT_FIELD[label]
    return await run.read(
        project,
        f"CALL db.idx.fulltext.queryNodes('{label}', $q) YIELD node, score "
        f"RETURN node.id, node.{field} ORDER BY score DESC, node.id LIMIT $limit",
        {"q": query, "limit": limit},
    )


async def vector_candidates(run: Runner, project: str, label: Label, vector: VectorParam, k: int) -> list[Row]:
    """(id, text, cosine similarity) of the `k` nearest `label` nodes."""
    field = TEXT_FIELD[label]

    async def ask(n: int) -> list[Row]:
        return await run.read(
            project,
            f"CALL db.idx.vector.queryNodes('{label}', 'embedding', $k, vecf32($v)) YIELD node, score "
            f"RETURN node.id, node.{field}, 1.0 - score",
            {"k": n, "v": vector},
        )

    return await nearest(run, project, label, k, ask)


async def texts_of(run: Runner, project: str, label: Label, ids: list[str]) -> list[Row]:
    """(id, text) of the `label` nodes with these ids (a search's hits, to compare their words)."""
    field = TEXT_FIELD[label]
    return await run.read(project, f"UNWIND $ids AS i MATCH (n:{label} {{id: i}}) RETURN n.id, n.{field}", {"ids": ids})


# Follows `MATCH (e:Entity {name: n})`: keeps the hits whose name is exactly `n`.
EXACT_NAME = "WITH n, e, e.name AS found WHERE found = n "


async def references(
    runner: Runner, project: str, id_labels: Sequence[Label], name_labels: Sequence[Label], refs: list[str]
) -> list[Row]:
    """Each reference -> [id, labels, type] of the node with that id, else of the oldest node
    with that name; unresolved references have no row. One indexed lookup per label, one round
    trip."""
    branches = [f"WITH ref MATCH (n:{label} {{id: ref}}) RETURN n, 0 AS rank" for label in id_labels]
    branches += [f"WITH ref MATCH (n:{label} {{name: ref}}) RETURN n, 1 AS rank" for label in name_labels]
    return await runner.read(
        project,
        f"UNWIND $refs AS ref CALL {{ {' UNION '.join(branches)} }} "
        "WITH ref, n, rank ORDER BY rank, n.created_at, n.id "
        "RETURN ref, collect([n.id, labels(n), n.type])[0]",
        {"refs": refs},
    )


async def entity_named(run: Runner, project: str, name: str) -> list[Row]:
    """[id, summary, type] of an entity of that name, a concept first."""
    return await run.read(
        project,
        "MATCH (e:Entity {name: $name}) RETURN e.id, e.summary, e.type "
        "ORDER BY CASE WHEN e.type = 'concept' THEN 0 ELSE 1 END, e.created_at LIMIT 1",
        {"name": name},
    )
