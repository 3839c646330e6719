"""The one writer of domain relationships (issue 24): every toolset creates the relationships it
means as knowledge here, through the one statement of
`polyg.store.queries.edges.create_relationships`.

The toolsets' specs differ in what a create does when a like relationship may exist; they are
options of the one write (`RelIfAbsent`), each checked inside the write query, which FalkorDB
runs alone on the graph, so that racing writers never both create one relationship:
- kg (`create_relationship`): one of a type without free text between two entities ("type");
  the caller reads the one that stopped its write;
- memory-compat (`create_relations`, its import) and memory's `link_entities`: a relation
  (from, text, to) is unique ("text"); an import that keeps ids skips ids that exist ("id");
- knowledge (`manage_edges`, the relationships a new node brings): relationships may repeat
  ("always"), and each item has its own outcome (`polyg.core.graph.edges`, `polyg.core.graph.nodes`);
- memory's facts (`polyg.store.queries.temporal.create_fact`) and causal links
  (`polyg.store.queries.causal.create_link`): "always", with their validity window or
  confidence and evidence as properties, written in one query with what the write also does
  (closing the facts a new one replaces, clearing a memory's unfinished mark);
- graphrag's weighted and extracted links, a concept's REPRESENTS: one per (source, type,
  target) ("pair"), found or updated when there;
- a concept's SIMILAR_TO: one per pair whichever way it points ("replace");
- the graph import: ids kept, properties restored as exported ("id", shape "verbatim").
Types are checked by `polyg.store.names` (`RelType`), and a user's type is registered on its
first use through the one registry of the process (`polyg.core.graph.reltypes`), which indexes its
edges' ids; polyg's own types need no entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from polyg.core.graph.context import GraphContext
from polyg.core.graph.reltypes import RelTypeService
from polyg.names import now_iso
from polyg.store.falkor import Row
from polyg.store.names import ENTITY, Label, RelType, is_reserved_rel_type
from polyg.store.queries import edges as q
from polyg.store.queries.edges import RelIfAbsent, Shape

__all__ = ["EdgeWriter", "RelIfAbsent", "Shape"]


class EdgeWriter:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService | None = None) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)

    async def register(self, project: str, types: Sequence[str]) -> None:
        """Register the users' types among `types` on their first use (polyg's own, CAUSES or
        SIMILAR_TO, need no entry)."""
        await self.reltypes.ensure(project, sorted({str(RelType(t)) for t in types if not is_reserved_rel_type(t)}))

    async def create(
        self,
        project: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        if_absent: RelIfAbsent = "always",
        shape: Shape = "described",
        source: Label = ENTITY,
        target: Label = ENTITY,
        on_match: bool = False,
        touch_ends: bool = False,
        after: str = "",
        returns: str | None = "row.id",
        params: Mapping[str, Any] | None = None,
        now: str | None = None,
        register: bool = True,
    ) -> list[Row]:
        """Create a relationship per row (checked already: id, a, b, type, and as
        `polyg.store.queries.edges.create_relationships` says), registering new types first.
        Returns `returns` per relationship created (or found, with "pair"); a row whose
        endpoint is gone, or that `if_absent` finds made already, has none. `register`: False
        where the caller registers the types it means (an import restores polyg's own too)."""
        if not rows:
            return []
        if register:
            await self.register(project, [str(row["type"]) for row in rows])
        return await q.create_relationships(
            self.ctx,
            project,
            [{**row, "type": RelType(row["type"])} for row in rows],
            now=now or now_iso(),
            source=source,
            target=target,
            if_absent=if_absent,
            shape=shape,
            on_match=on_match,
            touch_ends=touch_ends,
            after=after,
            returns=returns,
            params=params,
        )
