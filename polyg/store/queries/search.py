"""Cypher for search (`polyg.core.search`): exact names, vector KNN and full-text term lookups
over the embeddable labels, each hit mapped to the node it counts for; the node counts search
weighs with; concepts and events nearest a vector, and the details of entity hits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from polyg.store.falkor import Row, VectorParam
from polyg.store.names import ENTITY, Label, RelType
from polyg.store.queries import Runner
from polyg.store.queries.vectors import nearest


@dataclass(frozen=True)
class Target:
    """A label whose vector and full-text indexes are searched, and the label and relationship
    type that lead from the node a hit counts for to the hit (none: the hit is its own)."""

    label: Label
    owner: Label | None = None
    rel: RelType | None = None


def owner_match(owner: Label | None, rel: RelType | None) -> tuple[str, str]:
    """Match clause and id expression that map a search hit `node` to the node it counts for."""
    if owner is None or rel is None:
        return "", "node.id"
    return f"MATCH (e:{owner})-[:{rel}]->(node) ", "e.id"


async def exact_names(runner: Runner, project: str, name: str) -> list[Row]:
    """(id, name) of the entities the name index finds for `name` (it ignores surrounding
    whitespace: the caller compares)."""
    return await runner.read(project, f"MATCH (e:{ENTITY} {{name: $name}}) RETURN e.id, e.name", {"name": name})


async def count_nodes(runner: Runner, project: str, label: Label) -> int:
    # Only this bare form is answered from the label's size; any other (a UNION, a subquery)
    # scans every node.
    rows = await runner.read(project, f"MATCH (n:{label}) RETURN count(n)")
    return int(rows[0][0]) if rows else 0


async def knn(runner: Runner, project: str, target: Target, vector: VectorParam, k: int) -> list[Row]:
    """(id of the node each hit counts for, cosine similarity) of the `k` nearest nodes of the
    target's label."""
    owner, returns = owner_match(target.owner, target.rel)

    async def ask(n: int) -> list[Row]:
        # The index is cosine: `score` is the distance 1 - cos.
        return await runner.read(
            project,
            f"CALL db.idx.vector.queryNodes('{target.label}', 'embedding', $k, vecf32($v)) YIELD node, score "
            f"{owner}RETURN {returns}, 1.0 - score",
            {"k": n, "v": vector},
        )

    return await nearest(runner, project, target.label, k, ask)


async def term_hits(
    runner: Runner,
    project: str,
    targets: Sequence[Target],
    terms: list[str],
    k: int,
    fetched: Mapping[str, int],
) -> list[Row]:
    """(label, term, df, ids) per target and full-text term: how many of the label's nodes hold
    the term, and the ids the best `k` of them count for. The matches of a term are fetched
    only when there are at most `fetched[label]` of them. They are counted in full: a LIMIT
    inside the per-word subquery leaves the rest of one word's matches to the next word's
    count (FalkorDB 4). One round trip."""
    branches = []
    for target in targets:
        label = target.label
        owner, returns = owner_match(target.owner, target.rel)
        # A subquery per term, so that ORDER BY ... LIMIT applies per term; collect() keeps a
        # row for terms whose matches are not fetched. id(node) breaks ties in the score
        # (frequent: the score is coarse) the same way every time, without reading a
        # property of every match.
        branches.append(
            f"UNWIND $terms AS t "
            f"CALL {{ WITH t CALL db.idx.fulltext.queryNodes('{label}', t) YIELD node RETURN count(node) AS df }} "
            f"CALL {{ WITH t, df WITH t WHERE df > 0 AND df <= ${label} "
            f"CALL db.idx.fulltext.queryNodes('{label}', t) YIELD node, score "
            f"WITH node ORDER BY score DESC, id(node) LIMIT $k {owner}RETURN collect({returns}) AS ids }} "
            f"RETURN '{label}' AS label, t AS term, df, ids"
        )
    params: dict[str, object] = {"terms": terms, "k": k}
    params.update({target.label: fetched.get(target.label, k) for target in targets})
    return await runner.read(project, " UNION ALL ".join(branches), params)


# What `term_hits_scan` joins a node's fields with: no substring it looks for may hold it.
SCAN_SEPARATOR = "\n"


async def term_hits_scan(
    runner: Runner,
    project: str,
    targets: Sequence[Target],
    fields: Mapping[str, Sequence[str]],
    terms: list[list[str]],
    k: int,
    fetched: Mapping[str, int],
) -> list[Row]:
    """`term_hits` without the full-text indexes, for while FalkorDB builds them: a node holds
    a term when one of its `fields` (the label's full-text fields) contains it, lower-cased.
    `terms` are [term, substring] pairs; rows are (label, term, df, ids) as `term_hits` gives,
    one per target and pair, in that order; the ids are the first `k` matches by node id.

    Each label is read once, whatever the number of terms: every node's texts are lower-cased
    once and each substring is tested on them. (A pass per term, one to count and one to fetch,
    made a 3-word query with its stems a dozen passes per label: 2.4-3.2 s at 100k entities
    against 0.4-0.5 s now; bench/notes/2026-11-28-degraded-scan.md.) A pass still reads every
    node of the label: 6-10 s at 1M entities, but an answer."""
    if not terms:
        return []
    substrings = [substring for _, substring in terms]
    if any(SCAN_SEPARATOR in substring for substring in substrings):
        raise ValueError("a substring to scan for cannot hold a line break")
    branches = []
    for target in targets:
        label = target.label
        owner, returns = owner_match(target.owner, target.rel)
        # The fields joined by a line break, which no substring holds, so a substring found
        # in the joined text is found in one field: one lower-casing and one test per
        # substring, where a list of the fields cost a third more at 100k entities.
        joined = " + $sep + ".join(f"coalesce(node.{_field(f)}, '')" for f in fields[label])
        # Rows only for the pairs some node holds (the others are added below). The matches of
        # a pair are collected by node id; only those of a pair within the label's bound are
        # ranked (ORDER BY with LIMIT keeps the first k, not a sort of them all) and looked up
        # again for their ids.
        branches.append(
            f"MATCH (node:{label}) WITH id(node) AS nid, toLower({joined}) AS text "
            f"UNWIND [i IN range(0, size($subs) - 1) WHERE text CONTAINS $subs[i]] AS i "
            f"WITH i, collect(nid) AS nids "
            f"WITH i, size(nids) AS df, CASE WHEN size(nids) <= ${label} THEN nids ELSE [] END AS fetched "
            f"CALL {{ WITH fetched UNWIND fetched AS nid WITH nid ORDER BY nid LIMIT $k "
            f"MATCH (node:{label}) WHERE id(node) = nid {owner}RETURN collect({returns}) AS ids }} "
            f"RETURN '{label}' AS label, i, df, ids"
        )
    params: dict[str, object] = {"subs": substrings, "sep": SCAN_SEPARATOR, "k": k}
    params.update({target.label: fetched.get(target.label, k) for target in targets})
    rows = await runner.read(project, " UNION ALL ".join(branches), params)
    found = {(label, i): (df, ids) for label, i, df, ids in rows}
    return [
        [str(target.label), term, *found.get((str(target.label), i), (0, []))]
        for target in targets
        for i, (term, _) in enumerate(terms)
    ]


def _field(name: str) -> str:
    """A property name written into a query: the registry's own field names, checked anyway."""
    if not name.isidentifier():
        raise ValueError(f"not a property name: {name!r}")
    return name


async def similar_concepts(
    run: Runner, project: str, vector: VectorParam, concept_id: str, k: int, min_score: float
) -> list[Row]:
    """(id, name, score) of other concepts at cosine similarity `min_score` or more, best first."""
    return await run.read(
        project,
        "CALL db.idx.vector.queryNodes('Entity', 'embedding', $k, vecf32($v)) YIELD node, score "
        "WITH node, 1.0 - score AS sim WHERE node.type = 'concept' AND node.id <> $id AND sim >= $min "
        "RETURN node.id, node.name, sim ORDER BY sim DESC",
        {"k": k, "v": vector, "id": concept_id, "min": min_score},
    )


async def entity_hits(run: Runner, project: str, ids: list[str], vector: VectorParam | None) -> list[Row]:
    """(id, name, type, summary, cosine similarity to the query or null) of entities; no
    similarity without a `vector` (the query could not be embedded)."""
    similarity = "CASE WHEN e.embedding IS NULL THEN NULL ELSE 1.0 - vec.cosineDistance(e.embedding, vecf32($v)) END"
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) "
        f"RETURN e.id, e.name, e.type, e.summary, {similarity if vector else 'NULL'}",
        {"ids": ids, "v": vector},
    )


async def event_hits(run: Runner, project: str, vector: VectorParam, k: int) -> list[Row]:
    """(id, description, occurred_at, cosine similarity) of the `k` nearest events."""
    return await run.read(
        project,
        "CALL db.idx.vector.queryNodes('Event', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id, node.description, node.occurred_at, 1.0 - score ORDER BY score",
        {"k": k, "v": vector},
    )
