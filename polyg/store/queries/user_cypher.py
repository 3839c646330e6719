"""User Cypher (template variable queries): run read-only with the target node bound as `n`.

The user's text follows a clause that binds `n` by internal id, so a variable query such as
`MATCH (n)-[r:INFLUENCED_BY]->(p) RETURN p.name` starts from the target node.
"""

from __future__ import annotations

from collections.abc import Sequence

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


async def run_probe(store: FalkorStore, project: str, probe: str, node: int, *, timeout_ms: int, cap: int) -> list[Row]:
    """Runs a `dependency_probe`, at most `cap` rows."""
    return await store.ro_query(project, bound(probe) + f" LIMIT {int(cap)}", {NODE_PARAM: node}, timeout_ms=timeout_ms)


async def probe_columns(store: FalkorStore, project: str, probe: str, *, timeout_ms: int) -> list[str]:
    """The variables a `dependency_probe` returns (its columns), read without running it past
    the binding (bound to no node)."""
    columns, _ = await store.ro_table(project, bound(probe) + " LIMIT 0", {NODE_PARAM: NO_NODE}, timeout_ms=timeout_ms)
    return columns


def ids_probe(probe: str, columns: Sequence[str]) -> str:
    """A `dependency_probe` that returns, instead of every variable's value, what the values
    hold (a value, or the items of a list): [node internal ids], [[relationship id, start id,
    end id]], [[node ids] of each path], [[relationship ids] of each path], [nested lists and maps, sent
    whole]. Nodes sent whole carry all their properties (embeddings among them): their ids are
    a hundred times fewer bytes."""
    # The variables the probe adds are named so that no user variable can be shadowed.
    values = ", ".join("`" + c.replace("`", "``") + "`" for c in columns)
    edge = "[id(_px), id(startNode(_px)), id(endNode(_px))]"
    paths = "[_px IN _pi WHERE typeOf(_px) = 'Path']"
    return (
        probe.removesuffix("RETURN *") + f"WITH reduce(_pa = [], _px IN [{values}] | "
        "_pa + CASE WHEN typeOf(_px) = 'List' THEN _px ELSE [_px] END) AS _pi "
        "RETURN [_px IN _pi WHERE typeOf(_px) = 'Node' | id(_px)], "
        f"[_px IN _pi WHERE typeOf(_px) = 'Edge' | {edge}], "
        f"[_pp IN {paths} | [_py IN nodes(_pp) | id(_py)]], "
        f"[_pp IN {paths} | [_py IN relationships(_pp) | id(_py)]], "
        "[_px IN _pi WHERE typeOf(_px) IN ['List', 'Map']]"
    )


async def plan(store: FalkorStore, project: str, query: str) -> list[str]:
    """The operations FalkorDB would run (GRAPH.EXPLAIN), names only, leaves last."""
    lines = await store.explain(project, bound(query), {NODE_PARAM: NO_NODE})
    return [line.split("|")[0].strip() for line in lines]


def final_return(query: str) -> int | None:
    """Where the query's last top-level RETURN starts: outside strings, quoted names, comments
    and brackets (a subquery's RETURN is inside braces). None if there is none."""
    depth = 0
    found: int | None = None
    i, end = 0, len(query)
    while i < end:
        c = query[i]
        if c in "'\"`":
            i = _closing_quote(query, i)
        elif query.startswith("//", i):
            i = query.find("\n", i)
            i = end if i < 0 else i
        elif query.startswith("/*", i):
            i = query.find("*/", i + 2)
            i = end if i < 0 else i + 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif (
            depth == 0
            and query[i : i + 6].upper() == "RETURN"
            and (i == 0 or not _word(query[i - 1]))
            and (i + 6 == end or not _word(query[i + 6]))
        ):
            found = i
        i += 1
    return found


def code_only(query: str) -> str:
    """The query with the inside of its strings, quoted names and comments blanked out (the
    same length, every position kept): what is left is the Cypher a check may read for calls
    and brackets without being fooled by `'range('` in a string."""
    out = list(query)
    i, end = 0, len(query)
    while i < end:
        c = query[i]
        if c in "'\"`":
            close = _closing_quote(query, i)
            for j in range(i + 1, min(close, end)):
                out[j] = " "
            i = close
        elif query.startswith("//", i) or query.startswith("/*", i):
            close = query.find("\n", i) if query[i + 1] == "/" else query.find("*/", i + 2)
            close = end if close < 0 else (close if query[i + 1] == "/" else close + 2)
            for j in range(i, close):
                out[j] = " "
            i = close - 1
        i += 1
    return "".join(out)


def dependency_probe(query: str) -> str | None:
    """The query with its final projection replaced by every variable in scope (`RETURN *`):
    its rows hold the nodes and relationships the query matched, even when the query itself
    returns only their properties. None when the query has no top-level RETURN."""
    at = final_return(query)
    return None if at is None else query[:at] + "RETURN *"


def _closing_quote(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\" and quote != "`":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return len(text)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"
