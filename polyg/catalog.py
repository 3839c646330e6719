"""Every toolset polyg knows, by name: the one list that configuration and the server read.

It imports nothing, so that `polyg.config` can check `--toolsets` without loading the tools
(the tools import the core, which imports the configuration). A built toolset names the modules
that declare its tools: `polyg.tools.toolsets` imports those of the enabled toolsets only (a
server started with `--toolsets kg` never loads graphrag's code), the first of them defining the
toolset under its name (`memory-compat`: `memory_compat`).

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
    modules: tuple[str, ...] = ()

    @property
    def attribute(self) -> str:
        """The name of the toolset in the first of its modules."""
        return self.name.replace("-", "_")


CATALOG: tuple[ToolsetInfo, ...] = (
    ToolsetInfo("kg", "spec 002", built=True, modules=("polyg.tools.kg",)),
    ToolsetInfo("memory-compat", "the official MCP memory server", built=True, modules=("polyg.tools.memory_compat",)),
    ToolsetInfo("knowledge", "spec 000", built=True, modules=("polyg.tools.knowledge",)),
    ToolsetInfo("memory", "spec 003", built=True, modules=("polyg.tools.memory",)),
    ToolsetInfo("graphrag", "spec 004", built=True, modules=("polyg.tools.graphrag",)),
    ToolsetInfo("retrieval", "spec 001", built=True, modules=("polyg.tools.retrieval",)),
)
BY_NAME: dict[str, ToolsetInfo] = {info.name: info for info in CATALOG}
KNOWN: tuple[str, ...] = tuple(BY_NAME)
BUILT: tuple[str, ...] = tuple(info.name for info in CATALOG if info.built)
# Served when the configuration names none: spec 002's CRUD and spec 003's memory with `recall`
# and `remember`, 29 tools (they share `get_entity`). A client that sees every toolset (54
# tools) chooses worse among them; `--toolsets all` serves them all.
DEFAULT: tuple[str, ...] = ("kg", "memory")
