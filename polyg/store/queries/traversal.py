"""Traversal: neighbourhood layers, paths between two nodes, subgraphs, centrality, and whether
two entities are connected within a few hops.

Nodes are addressed by their internal id (`id(n)`) between the calls of one traversal: a seek
by internal id needs no label and no index, so a traversal crosses node kinds (Entity, Event,
Chunk) alike. polyg's own structural relationship types (`HAS_OBSERVATION`, `DEPENDS_ON`, ...)
are never traversed: they are bookkeeping, not knowledge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from polyg.store.falkor import Row
from polyg.store.names import STRUCTURAL_REL_TYPES, Label, RelType
from polyg.store.queries import OWN, SHARED, Runner, knowledge, knowledge_path

Direction = Literal["outbound", "inbound", "both"]
_PATTERNS: dict[str, str] = {"outbound": "-[{r}]->", "inbound": "<-[{r}]-", "both": "-[{r}]-"}
OWN_TYPES = sorted(STRUCTURAL_REL_TYPES)
# A node as the traversal reports it: internal id, polyg id, name, type, labels.
NODE = "id({v}), {v}.id, {v}.name, {v}.type, labels({v})"
# An edge: internal id, internal ids of its source and target, polyg id, type, properties.
EDGE = "id({v}), id(startNode({v})), id(endNode({v})), {v}.id, type({v}), properties({v})"


def _hop(direction: Direction, types: Sequence[RelType] | None, var: str = "r") -> tuple[str, str]:
    """The relationship pattern of one hop and the condition that keeps out polyg's own types."""
    typed = f"{var}:{'|'.join(types)}" if types else var
    condition = "true" if types else knowledge(var, "x", "o")
    return _PATTERNS[direction].format(r=typed), condition


# A layer row before the few shown are chosen: what ordering a layer and telling new nodes
# from reached ones needs (from, relationship and node reached by internal id, the
# relationship's type and weight, the polyg ids that break ties), none of the maps and lists
# the client would parse for each of a hub's rows; the rows shown are then read whole
# (`hops_by_internal_id`).
LIGHT_ROW = "{f}, id(r), type(r), coalesce(r.weight, 1.0), id(o), coalesce(o.id, ''), coalesce(r.id, '')"
# What a `whole` layer row adds to LIGHT_ROW so that it holds the hop's EDGE and NODE (a column
# may not come twice: `hop_of_whole` puts them back together).
WHOLE_EXTRA = "id(startNode(r)), id(endNode(r)), r.id, properties(r), o.id, o.name, o.type, labels(o)"


def hop_of_whole(row: Row) -> Row:
    """A `whole` layer row as `hops_by_internal_id` gives a hop: [from, *EDGE, *NODE]."""
    start, rel, type_, _, node, _, _, source, target, rel_id, props, node_id, name, kind, labels = row
    return [start, rel, source, target, rel_id, type_, props, node, node_id, name, kind, labels]


# The order a neighbourhood takes a layer in (heavier relationship first, then type, then the
# polyg ids of the node reached and of the relationship), as `traversal._layer_order` sorts.
HEAVIEST_FIRST = "coalesce(r.weight, 1.0) DESC, type(r), coalesce(o.id, ''), coalesce(r.id, '')"


def _each_way(direction: Direction, types: Sequence[RelType] | None, query: str) -> str:
    """`query`, whose `{hop}` is one hop's relationship pattern `r` and `{keep}` its condition,
    for `direction`; both ways as the two directions' rows together (UNION ALL: a relationship
    from a node to itself comes twice), since FalkorDB runs an undirected pattern about 1.4
    times slower than the two directed ones (bench/notes/2026-11-27-measured-choices.md). A `LIMIT`
    in `query` applies to each direction."""
    if direction != "both":
        hop, keep = _hop(direction, types)
        return query.format(hop=hop, keep=keep)
    return " UNION ALL ".join(
        query.format(hop=hop, keep=keep) for hop, keep in (_hop("outbound", types), _hop("inbound", types))
    )


async def find_node(runner: Runner, project: str, label: Label, node_id: str) -> Row | None:
    rows = await runner.read(project, f"MATCH (n:{label} {{id: $id}}) RETURN {NODE.format(v='n')}", {"id": node_id})
    return rows[0] if rows else None


async def find_nodes(runner: Runner, project: str, label: Label, node_ids: Sequence[str]) -> list[Row]:
    return await runner.read(
        project, f"MATCH (n:{label}) WHERE n.id IN $ids RETURN {NODE.format(v='n')}", {"ids": list(node_ids)}
    )


async def nodes_by_internal_id(runner: Runner, project: str, internal_ids: Sequence[int]) -> list[Row]:
    return await runner.read(
        project,
        f"UNWIND $ids AS i MATCH (n) WHERE id(n) = i RETURN {NODE.format(v='n')}",
        {"ids": list(internal_ids)},
    )


async def expand(
    runner: Runner,
    project: str,
    frontier: Sequence[int],
    *,
    direction: Direction,
    types: Sequence[RelType] | None,
    min_weight: float,
    cap: int,
    heaviest: bool = False,
    light: bool = False,
) -> list[Row]:
    """One breadth-first layer: [from internal id, *EDGE, *NODE of the node reached] (with
    `light`, LIGHT_ROW), at most `cap` rows (each way, for both), with `heaviest` the first in
    HEAVIEST_FIRST's order. An edge without a `weight` weighs 1.0 (spec 004's default)."""
    # Ordered and cut before the columns are made: a hub's rows are sorted on the order's keys,
    # and properties and labels are read only for the rows returned.
    order = f"WITH fid, r, o ORDER BY {HEAVIEST_FIRST} LIMIT $cap " if heaviest else ""
    return await runner.read(
        project,
        _each_way(
            direction,
            types,
            "UNWIND $frontier AS fid MATCH (x) WHERE id(x) = fid WITH fid, x MATCH (x){hop}(o) "
            "WHERE {keep} AND coalesce(r.weight, 1.0) >= $min_weight "
            f"{order}RETURN {_layer_columns('fid', light)} LIMIT $cap",
        ),
        {"frontier": list(frontier), "own": OWN_TYPES, "shared": SHARED, "min_weight": min_weight, "cap": cap},
    )


# A context layer is hundreds of rows, and the client parses every cell in Python (microseconds
# each): a row carries only what the walk needs (the nodes a relationship joins, its weight, and
# whether the node reached is an entity); a relationship's type and direction are read later
# for the few that are shown (`links_by_internal_id`). bench/notes/2026-11-27-measured-choices.md.
CONTEXT_ROW = "id(r), id(o), r.weight, 'Entity' IN labels(o)"


async def context_from(
    runner: Runner, project: str, label: Label, node_ids: Sequence[str], expand_ids: Sequence[str], cap: int
) -> list[Row]:
    """The `label` nodes with the given polyg ids, each once, [internal id, polyg id, then nulls],
    then the relationships either way (polyg's own types aside) of those among `expand_ids`, at
    most `cap` rows, [internal id, polyg id, then CONTEXT_ROW], in the order of `expand_ids`, so
    the cap cuts the relationships of the nodes named last (never a node)."""
    return await runner.read(
        project,
        f"UNWIND $ids AS nid MATCH (x:{label} {{id: nid}}) "
        "RETURN id(x) AS node, x.id AS node_id, null AS rel, null AS other, null AS weight, null AS entity "
        f"UNION ALL UNWIND $expand AS nid MATCH (x:{label} {{id: nid}}) WITH x MATCH (x)-[r]-(o) "
        f"WHERE {knowledge('r', 'x', 'o')} "
        "RETURN id(x) AS node, x.id AS node_id, id(r) AS rel, id(o) AS other, r.weight AS weight, "
        "'Entity' IN labels(o) AS entity LIMIT $cap",
        {"ids": list(node_ids), "expand": list(expand_ids), "own": OWN_TYPES, "shared": SHARED, "cap": cap},
    )


async def context_layer(runner: Runner, project: str, frontier: Sequence[int], cap: int) -> list[Row]:
    """One breadth-first layer around the given nodes (internal ids), relationships either way
    (polyg's own types aside), at most `cap` each way: [from, then CONTEXT_ROW], each way's rows
    in the order of `frontier` (so the cap cuts the relationships of the nodes listed last)."""
    return await runner.read(
        project,
        _each_way(
            "both",
            None,
            "UNWIND $frontier AS fid MATCH (x) WHERE id(x) = fid WITH fid, x MATCH (x){hop}(o) WHERE {keep} "
            f"RETURN fid, {CONTEXT_ROW} LIMIT $cap",
        ),
        {"frontier": list(frontier), "own": OWN_TYPES, "shared": SHARED, "cap": cap},
    )


async def links_by_internal_id(runner: Runner, project: str, links: Sequence[tuple[int, int, int]]) -> list[Row]:
    """[internal id, source internal id, type] of relationships given as (internal id of one end,
    of the other, of the relationship): found between the two nodes, not among all of a hub's."""
    return await runner.read(
        project,
        # FalkorDB seeks a node by id only when it is compared with a variable: `id(a) = l[0]`
        # (a list element) scans every node, once per row. So ids are bound by WITH first, here
        # and in the reads below that take nodes by internal id. And a node found is carried
        # through WITH before its relationships are matched: without it FalkorDB may plan
        # `(x)<-[r]-(o)` from a scan of every o (tests/core/test_traversal.py).
        "UNWIND $links AS l WITH l, l[0] AS aid, l[1] AS bid MATCH (a) WHERE id(a) = aid MATCH (b) WHERE id(b) = bid "
        # Two directed matches: FalkorDB finds an undirected one several times slower.
        "OPTIONAL MATCH (a)-[fwd]->(b) WHERE id(fwd) = l[2] OPTIONAL MATCH (b)-[back]->(a) WHERE id(back) = l[2] "
        "WITH l, fwd, back WHERE fwd IS NOT NULL OR back IS NOT NULL "
        "RETURN l[2], CASE WHEN fwd IS NULL THEN l[1] ELSE l[0] END, type(coalesce(fwd, back))",
        {"links": [list(link) for link in links]},
    )


async def expand_from(
    runner: Runner,
    project: str,
    label: Label,
    node_id: str,
    *,
    direction: Direction,
    types: Sequence[RelType] | None,
    min_weight: float,
    cap: int,
    light: bool = False,
    whole: bool = False,
) -> list[Row]:
    """`expand` from the one node of `label` with polyg id `node_id` (none: no rows), heaviest
    first. With `light` and `whole`, each LIGHT_ROW goes on with WHOLE_EXTRA (`hop_of_whole`): a
    layer that is also the last is chosen from and shown in one read."""
    return await runner.read(
        project,
        _each_way(
            direction,
            types,
            f"MATCH (x:{label} {{{{id: $id}}}}) WITH x MATCH (x){{hop}}(o) "
            "WHERE {keep} AND coalesce(r.weight, 1.0) >= $min_weight "
            f"WITH x, r, o ORDER BY {HEAVIEST_FIRST} LIMIT $cap "
            f"RETURN {_layer_columns('id(x)', light, whole)}",
        ),
        {"id": node_id, "own": OWN_TYPES, "shared": SHARED, "min_weight": min_weight, "cap": cap},
    )


def _layer_columns(start: str, light: bool, whole: bool = False) -> str:
    if not light:
        return f"{start}, {EDGE.format(v='r')}, {NODE.format(v='o')}"
    return f"{LIGHT_ROW.format(f=start)}, {WHOLE_EXTRA}" if whole else LIGHT_ROW.format(f=start)


async def hops_by_internal_id(runner: Runner, project: str, hops: Sequence[tuple[int, int, int]]) -> list[Row]:
    """[from internal id, *EDGE, *NODE of the node reached] of hops given as (internal id of
    the node left, of the relationship, of the node reached), in the order given; a hop whose
    relationship is gone is left out. The relationship is found between its two nodes, not
    among all of a hub's."""
    rows = await runner.read(
        project,
        "UNWIND range(0, size($hops) - 1) AS i WITH i, $hops[i] AS h "
        "WITH i, h, h[0] AS xid, h[2] AS oid MATCH (x) WHERE id(x) = xid MATCH (o) WHERE id(o) = oid "
        # Two directed matches: FalkorDB finds an undirected one several times slower.
        "OPTIONAL MATCH (x)-[fwd]->(o) WHERE id(fwd) = h[1] OPTIONAL MATCH (o)-[back]->(x) WHERE id(back) = h[1] "
        "WITH i, x, o, coalesce(fwd, back) AS r WHERE r IS NOT NULL "
        f"RETURN i, id(x), {EDGE.format(v='r')}, {NODE.format(v='o')}",
        {"hops": [list(hop) for hop in hops]},
    )
    return [row[1:] for row in sorted(rows, key=lambda row: int(row[0]))]


@dataclass(frozen=True)
class HopRank:
    """How a path search ranks a node's relationships when it reads only the best of them:
    relevance (strength name -> factor; None: 1.0) x directional weight of the type for the
    direction travelled (type -> [forward, backward], `default` for other types) x the edge's
    `weight` clamped to [0, 1] (when `weight` is set; 1.0 without one)."""

    relevance: Mapping[str, float] | None
    directional: Mapping[str, tuple[float, float]]
    default: tuple[float, float]
    weight: bool


# Spec 000's relevance of one relationship: a number in [0, 1] as it is, a strength by name,
# medium otherwise (polyg.core.traversal.service.relevance).
_RELEVANCE = (
    "CASE WHEN $relevance IS NULL THEN 1.0 "
    "WHEN typeOf(r.relevance_strength) IN ['Integer', 'Float'] AND 0 <= r.relevance_strength <= 1 "
    "THEN toFloat(r.relevance_strength) "
    "ELSE coalesce($relevance[toLower(toString(r.relevance_strength))], $relevance.medium) END"
)
_DIRECTIONAL = "coalesce($directional[type(r)], $default)[CASE WHEN along THEN 0 ELSE 1 END]"
_WEIGHT = (
    "CASE WHEN $weight AND typeOf(r.weight) IN ['Integer', 'Float'] "
    "THEN CASE WHEN r.weight < 0 THEN 0.0 WHEN r.weight > 1 THEN 1.0 ELSE toFloat(r.weight) END ELSE 1.0 END"
)


async def best_hops(
    runner: Runner,
    project: str,
    frontier: Sequence[tuple[int, bool]],
    *,
    types: Sequence[RelType] | None,
    rank: HopRank,
    fanout: int,
) -> list[Row]:
    """The `fanout` best relationships at each frontier node, either way: per (internal id,
    outward) in `frontier`, [internal id, outward, hops, degree], each hop [edge internal id,
    source internal id, type, relevance_strength, weight, other end's internal id], best first
    by `rank` for a path that leaves the node (`outward`) or arrives at it; degree: how many it
    has. Ranked and cut in the database: a hub's thousands of relationships never leave it."""
    hop, keep = _hop("both", types)
    return await runner.read(
        project,
        f"UNWIND $frontier AS f WITH f, f[0] AS xid MATCH (x) WHERE id(x) = xid WITH f, x MATCH (x){hop}(o) "
        f"WHERE {keep} "
        "WITH f, r, o, (id(startNode(r)) = f[0]) = f[1] AS along "
        f"WITH f, r, o, ({_RELEVANCE}) * ({_DIRECTIONAL}) * ({_WEIGHT}) AS score "
        "ORDER BY score DESC, id(r) "
        "WITH f, collect([id(r), id(startNode(r)), type(r), r.relevance_strength, r.weight, id(o)]) AS hops "
        "RETURN f[0], f[1], hops[..$fanout], size(hops)",
        {
            "frontier": [[node, outward] for node, outward in frontier],
            "own": OWN_TYPES,
            "shared": SHARED,
            "fanout": fanout,
            "relevance": dict(rank.relevance) if rank.relevance is not None else None,
            "directional": {k: list(v) for k, v in rank.directional.items()},
            "default": list(rank.default),
            "weight": rank.weight,
        },
    )


async def paths_between(
    runner: Runner,
    project: str,
    source: int,
    target: int,
    *,
    max_len: int,
    types: Sequence[RelType] | None,
    cap: int,
) -> list[Row]:
    """Paths of 1..max_len hops from `source` to `target`, either way along each hop:
    [[node internal ids], [[edge internal id, source internal id, type, relevance_strength, weight]]].
    FalkorDB does not repeat a relationship within a path, but may pass a node twice."""
    rel = f":{'|'.join(types)}" if types else ""
    keep = "true" if types else knowledge_path("p")
    return await runner.read(
        project,
        "MATCH (a) WHERE id(a) = $source MATCH (b) WHERE id(b) = $target "
        f"MATCH p = (a)-[{rel}*1..{int(max_len)}]-(b) WHERE {keep} "
        "RETURN [x IN nodes(p) | id(x)], "
        "[r IN relationships(p) | [id(r), id(startNode(r)), type(r), r.relevance_strength, r.weight]] "
        "LIMIT $cap",
        {"source": source, "target": target, "own": OWN_TYPES, "shared": SHARED, "cap": cap},
    )


async def edges_by_internal_id(runner: Runner, project: str, edges: Sequence[tuple[int, int]]) -> list[Row]:
    """Edges given as (source internal id, edge internal id): *EDGE rows."""
    return await runner.read(
        project,
        "UNWIND $edges AS e WITH e, e[0] AS aid MATCH (a) WHERE id(a) = aid MATCH (a)-[r]->() WHERE id(r) = e[1] "
        f"RETURN {EDGE.format(v='r')}",
        {"edges": [list(e) for e in edges]},
    )


async def edges_among(runner: Runner, project: str, internal_ids: Sequence[int], cap: int) -> list[Row]:
    """Edges whose both ends are among the given nodes (polyg's own types left out): *EDGE rows."""
    return await runner.read(
        project,
        "UNWIND $ids AS i MATCH (a) WHERE id(a) = i WITH a MATCH (a)-[r]->(b) "
        f"WHERE id(b) IN $ids AND {knowledge('r', 'a', 'b')} "
        f"RETURN {EDGE.format(v='r')} LIMIT $cap",
        {"ids": list(internal_ids), "own": OWN_TYPES, "shared": SHARED, "cap": cap},
    )


async def edge_ends(runner: Runner, project: str, label: Label) -> list[Row]:
    """[source polyg id, target polyg id] of every relationship between two `label` nodes, of
    types not polyg's own. Degrees are counted from these by the caller: FalkorDB's grouped
    count over an undirected pattern is several times slower than reading the pairs."""
    return await runner.read(
        project,
        f"MATCH (n:{label})-[r]->(m:{label}) WHERE {knowledge('r', 'n', 'm')} RETURN n.id, m.id",
        {"own": OWN_TYPES, "shared": SHARED},
    )


async def pagerank(runner: Runner, project: str, label: Label) -> list[Row]:
    """[polyg id, PageRank score, internal id] over the `label` nodes and every relationship
    between them."""
    return await runner.read(
        project,
        "CALL algo.pageRank($label, null) YIELD node, score RETURN node.id, score, id(node)",
        {"label": str(label)},
    )


async def connected(runner: Runner, project: str, a: str, b: str, depth: int) -> bool:
    """Whether a path of at most `depth` hops (either way, polyg's own types left out) joins them."""
    rows = await runner.read(
        project,
        "MATCH (x:Entity {id: $a}) MATCH (y:Entity {id: $b}) "
        f"MATCH p = (x)-[*1..{int(depth)}]-(y) WHERE {knowledge_path('p')} "
        "RETURN 1 LIMIT 1",
        {"a": a, "b": b, "own": OWN, "shared": SHARED},
    )
    return bool(rows)
