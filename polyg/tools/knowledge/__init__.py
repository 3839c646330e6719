"""The `knowledge` toolset (spec 000): relationship types, templates, documents, neighbourhoods
and weighted paths over the same entities every toolset sees (a spec-000 node is an entity;
`summary` its description, `node_type` its type and second label). One module per tool, each
registering it on import: imported in the order the tools are listed."""

# isort: off
from polyg.tools.knowledge import nodes, relationships, reltypes, templates, documents, neighbourhoods, paths

# isort: on
from polyg.tools.knowledge.shared import knowledge

__all__ = ["documents", "knowledge", "neighbourhoods", "nodes", "paths", "relationships", "reltypes", "templates"]
