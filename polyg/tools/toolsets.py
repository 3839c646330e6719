"""The toolsets polyg serves, by name (chosen with `--toolsets`)."""

from __future__ import annotations

from polyg.tools.kg import kg
from polyg.tools.memory import memory
from polyg.tools.memory_compat import memory_compat
from polyg.tools.registry import Toolset, ToolSpec

TOOLSETS: dict[str, Toolset] = {toolset.name: toolset for toolset in (kg, memory_compat, memory)}


def enabled(names: list[str]) -> list[ToolSpec]:
    """Tools of the named toolsets, each tool once even when two toolsets share it."""
    seen: dict[str, ToolSpec] = {}
    # memory's get_entity takes kg's form too (by entity_id, with kg's result shape), so when
    # both are enabled it is the one served.
    for name in sorted(names, key=lambda n: n != "memory"):
        toolset = TOOLSETS.get(name)
        if toolset is None:
            continue  # a toolset named in config but not built yet serves nothing
        for tool in toolset.tools:
            seen.setdefault(tool.name, tool)
    return list(seen.values())
