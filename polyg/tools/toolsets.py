"""The toolsets polyg serves, by name (chosen with `--toolsets`), and what an enabled set serves:
its tools (each once), its prompts and its instructions.

A toolset's modules are imported when it is first enabled (`load`), so a server pays at start
only for the toolsets it serves. Loading checks what it loaded: a toolset missing from (or not
marked built in) `polyg.tools.catalog`, or a name two loaded toolsets claim for different tools,
fails the load. `load_all` loads every toolset at once (the whole catalog checked together).
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Iterable, Mapping

from polyg.tools import catalog
from polyg.tools.prompts import PromptSpec
from polyg.tools.registry import ToolNameConflict, Toolset, ToolSpec

log = logging.getLogger(__name__)

# What every client is told, whatever the toolsets; each toolset adds its own lines.
INSTRUCTIONS = (
    "polyg is a graph memory: entities, observations, relationships, events, facts in time and causes, "
    "kept per project. Every tool takes project_id (optional; default: the server's project, "
    "{project!r}; 1-64 letters, digits, '_', '.' or '-'). Nothing one project holds is visible from another.\n"
    "Resources: polyg://{{project}}/summary, polyg://{{project}}/entity/{{id}} (an entity's page; id or name), "
    "polyg://{{project}}/document/{{template}}/{{id}}, polyg://{{project}}/export/{{format}} (json or cypher), "
    "and polyg://tools/{{name}}: a tool's whole description and full schemas (tools/list shows lean ones)."
)


def collect(
    toolsets: Iterable[Toolset], known: Mapping[str, catalog.ToolsetInfo] = catalog.BY_NAME
) -> dict[str, Toolset]:
    """Toolsets by name, checked: each is in the catalog as built, and no tool or prompt name
    means two different things."""
    by_name: dict[str, Toolset] = {}
    for toolset in toolsets:
        info = known.get(toolset.name)
        if info is None or not info.built or toolset.name in by_name:
            raise ToolNameConflict(f"Toolset {toolset.name!r} is not in the catalog as built, or is there twice.")
        by_name[toolset.name] = toolset
    _unique((t.name, t, ts.name) for ts in by_name.values() for t in ts.tools)
    _unique((p.name, p, ts.name) for ts in by_name.values() for p in ts.prompts)
    return by_name


def _supersedes(thing: object, toolset: str) -> bool:
    return isinstance(thing, ToolSpec) and thing.supersedes == toolset


def _unique(claims: Iterable[tuple[str, object, str]]) -> None:
    """Each name stands for one object; a shared tool is the same object in every toolset, and a
    tool may supersede another toolset's tool of its name (it serves that form too)."""
    seen: dict[str, tuple[object, str]] = {}
    for name, thing, owner in claims:
        first = seen.setdefault(name, (thing, owner))
        if first[0] is not thing and not _supersedes(thing, first[1]) and not _supersedes(first[0], owner):
            raise ToolNameConflict(f"{name!r} is claimed by toolsets {first[1]!r} and {owner!r} for different things.")


def load(names: Iterable[str], known: Mapping[str, catalog.ToolsetInfo] = catalog.BY_NAME) -> dict[str, Toolset]:
    """The named toolsets that are built, their modules imported, checked together by `collect`
    (names the catalog knows but that are not built are left to `enabled`)."""
    wanted = [name for name in dict.fromkeys(names) if name in known and known[name].built]
    return collect((_imported(known[name]) for name in wanted), known)


def load_all(known: Mapping[str, catalog.ToolsetInfo] = catalog.BY_NAME) -> dict[str, Toolset]:
    """Every built toolset, checked together: no name means two things across all of them."""
    return load(known, known)


@functools.cache
def _imported(info: catalog.ToolsetInfo) -> Toolset:
    modules = [importlib.import_module(module) for module in info.modules]
    toolset = getattr(modules[0], info.attribute, None) if modules else None
    if not isinstance(toolset, Toolset) or toolset.name != info.name:
        raise ToolNameConflict(f"The catalog says {info.name!r} is built, but no such toolset exists.")
    return toolset


def _available(names: list[str], toolsets: Mapping[str, Toolset]) -> list[Toolset]:
    return [toolsets[name] for name in dict.fromkeys(names) if name in toolsets]


def enabled(names: list[str], toolsets: Mapping[str, Toolset] | None = None) -> list[ToolSpec]:
    """Tools of the named toolsets, each tool once even when two toolsets share it. A toolset
    the catalog knows but that is not built yet is logged and skipped. `toolsets`: those to
    choose from (default: the named ones, loaded)."""
    toolsets = load(names) if toolsets is None else toolsets
    serving = [toolset.name for toolset in _available(names, toolsets)]
    for name in dict.fromkeys(names):
        if name not in toolsets:
            info = catalog.BY_NAME.get(name)
            log.warning(
                "toolset not available yet",
                extra={"toolset": name, "spec": info.spec if info else None, "serving": serving},
            )
    seen: dict[str, ToolSpec] = {}
    for toolset in _available(names, toolsets):
        for tool in toolset.tools:
            if tool.name not in seen or seen[tool.name].toolset == tool.supersedes:
                seen[tool.name] = tool
    return list(seen.values())


def prompts(names: list[str], toolsets: Mapping[str, Toolset] | None = None) -> list[PromptSpec]:
    """Prompts of the named toolsets."""
    toolsets = load(names) if toolsets is None else toolsets
    found = {id(p): p for toolset in _available(names, toolsets) for p in toolset.prompts}
    return list(found.values())


def instructions(names: list[str], toolsets: Mapping[str, Toolset] | None = None, *, project: str = "default") -> str:
    """The server's instructions: the common lines, then each enabled toolset's, a paragraph each."""
    toolsets = load(names) if toolsets is None else toolsets
    parts = [INSTRUCTIONS.format(project=project)]
    parts += [t.instructions for t in _available(names, toolsets) if t.instructions]
    return "\n\n".join(parts)
