"""Query results read from FalkorDB's compact reply without a coroutine per cell.

The FalkorDB client parses each cell of a compact result set with two awaited coroutines (one
for the cell, one for its type), whatever the type: about 1.5 microseconds a cell, and a
neighbourhood or a search reads thousands of cells a call. Most cells are plain values (null,
string, integer, boolean, double, and arrays and maps of those), which need no coroutine and no
graph schema; `rows` reads those here, exactly as the client would, and hands every other cell
(nodes, edges, paths, vectors, temporal values: those that may look up the graph's schema) to
the client's own parser.
"""

from __future__ import annotations

from typing import Any

from falkordb.asyncio.query_result import parse_scalar
from redis.exceptions import ResponseError

QUERY = "GRAPH.QUERY"
RO_QUERY = "GRAPH.RO_QUERY"

# FalkorDB's compact value types (its client's PARSE_SCALAR_TYPES order).
_NULL, _STRING, _INTEGER, _BOOLEAN, _DOUBLE, _ARRAY = 1, 2, 3, 4, 5, 6
_MAP, _POINT = 10, 11


class _NotPlain(Exception):
    """A cell holding a value the client's parser must read."""


def _string(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else str(value)


def _plain(cell: Any) -> Any:
    kind, value = cell[0], cell[1]
    if kind == _STRING:
        return _string(value)
    if kind == _INTEGER:
        return int(value)
    if kind == _NULL:
        return None
    if kind == _DOUBLE:
        return float(value)
    if kind == _ARRAY:
        return [_plain(item) for item in value]
    if kind == _BOOLEAN:
        return (value.decode() if isinstance(value, bytes) else value) == "true"
    if kind == _MAP:
        return {_string(value[i]): _plain(value[i + 1]) for i in range(0, len(value), 2)}
    if kind == _POINT:
        return {"latitude": float(value[0]), "longitude": float(value[1])}
    raise _NotPlain


def command(graph_name: str, query: str, *, read_only: bool, timeout_ms: int | None) -> list[Any]:
    """The GRAPH.QUERY (or RO_QUERY) command for a query with its parameter header, asking for
    the compact reply, as the FalkorDB client sends it."""
    out: list[Any] = [RO_QUERY if read_only else QUERY, graph_name, query, "--compact"]
    if timeout_ms is not None:
        out += ["timeout", timeout_ms]
    return out


async def table(reply: list[Any], graph: Any) -> tuple[list[str], list[list[Any]]]:
    """(column names, rows) of a compact reply; an error reply is raised as the client does."""
    if reply and isinstance(reply[0], ResponseError):
        raise reply[0]
    if reply and isinstance(reply[-1], ResponseError):
        raise reply[-1]
    if len(reply) == 1 or not reply[0]:  # statistics only: a write without RETURN
        return [], []
    names = [str(column[1]) for column in reply[0]]
    rows: list[list[Any]] = []
    for raw in reply[1]:
        row = []
        for cell in raw:
            try:
                row.append(_plain(cell))
            except _NotPlain:
                row.append(await parse_scalar(cell, graph))
        rows.append(row)
    return names, rows
