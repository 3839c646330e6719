"""Every toolset polyg knows, by name: the one list that configuration and the server read.

It imports nothing, so that `polyg.config` can check `--toolsets` without loading the tools
(the tools import the core, which imports the configuration). `polyg.tools.toolsets` checks at
import that the toolsets built are exactly the ones marked `built` here.

A toolset that is known but not built yet (its spec is planned) may be named in the
configuration: the server logs that it is not available yet and serves the others. Naming only
such toolsets is a configuration error, since the server would have nothing to serve.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolsetInfo:
    name: str
    spec: str
    built: bool


CATALOG: tuple[ToolsetInfo, ...] = (
    ToolsetInfo("kg", "spec 002", built=True),
    ToolsetInfo("memory-compat", "the official MCP memory server", built=True),
    ToolsetInfo("knowledge", "spec 000", built=True),
    ToolsetInfo("memory", "spec 003", built=True),
    ToolsetInfo("graphrag", "spec 004", built=True),
    ToolsetInfo("retrieval", "spec 001", built=True),
)
BY_NAME: dict[str, ToolsetInfo] = {info.name: info for info in CATALOG}
KNOWN: tuple[str, ...] = tuple(BY_NAME)
BUILT: tuple[str, ...] = tuple(info.name for info in CATALOG if info.built)
# Served when the configuration names none: spec 002's CRUD and spec 003's memory with `recall`
# and `remember`, 29 tools (they share `get_entity`). A client that sees every toolset (54
# tools) chooses worse among them; `--toolsets all` serves them all.
DEFAULT: tuple[str, ...] = ("kg", "memory")
