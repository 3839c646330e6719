"""User Cypher (template variable queries): run read-only with the target node bound as `n`.

The user's text follows a clause that binds `n` by internal id, so a variable query such as
`MATCH (n)-[r:INFLUENCED_BY]->(p) RETURN p.name` starts from the target node.
"""

from __future__ import annotations

from polyg.store.falkor import FalkorStore, Row

NODE_PARAM = "__polyg_node"
PREFIX = f"MATCH (n) WHERE id(n) = ${NODE_PARAM} WITH n "
# An id no node has: a dry run of a query bound to it reads nothing past the binding.
NO_NODE = -1


def bound(query: str) -> str:
    return PREFIX + query


async def run(
    store: FalkorStore, project: str, query: str, node: int, *, timeout_ms: int
) -> tuple[list[str], list[Row]]:
    """GRAPH.RO_QUERY: FalkorDB refuses any query that writes, procedures that write included.
    Returns the column names and the rows."""
    return await store.ro_table(project, bound(query), {NODE_PARAM: node}, timeout_ms=timeout_ms)


async def plan(store: FalkorStore, project: str, query: str) -> list[str]:
    """The operations FalkorDB would run (GRAPH.EXPLAIN), names only, leaves last."""
    lines = await store.explain(project, bound(query), {NODE_PARAM: NO_NODE})
    return [line.split("|")[0].strip() for line in lines]
