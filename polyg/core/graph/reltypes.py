"""Relationship types as data (spec 000): what a type means and how much it matters each way.

A `:RelationshipType` node holds a type's description, its directionality and the node types it
joins. Directionality gives the directional weights of spec 000's path strength: how much the
relationship matters for its source (forward) and for its target (backward). A type nobody has
described weighs [0.5, 0.5] both ways, as the spec says of an unknown type; types are registered
on first use with no directionality, so they keep that weight until a user sets one.

Registering a type also creates the range index on its edges' `id`, so that a relationship is
found by id without scanning every edge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.errors import InvalidParams, NotFound
from polyg.store.names import RelType, user_label, user_rel_type
from polyg.store.queries import reltypes as q

Directionality = Literal["strong", "weak", "balanced"]
DIRECTIONALITIES: tuple[str, ...] = get_args(Directionality)
# (forward, backward): the weight of a hop travelled from source to target, and back (spec 000).
DIRECTIONAL_WEIGHTS: dict[str, tuple[float, float]] = {
    "strong": (1.0, 0.2),
    "weak": (0.8, 0.6),
    "balanced": (0.7, 0.7),
}
UNKNOWN_WEIGHTS = (0.5, 0.5)

# Spec 000 keeps one type per relationship, pointing from the node it matters more to: the
# other half of a bidirectional pair is the same type with source and target swapped.
MIGRATIONS: dict[str, str] = {
    "PARENT_OF": "CHILD_OF",
    "EMPLOYER_OF": "EMPLOYED_BY",
    "CONTAINS": "LOCATED_IN",
}


# What `polyg init-schema` creates in every project (spec 000's examples, and polyg's own types
# that spec 000 describes): name, description, directionality, source types, target types.
INITIAL: tuple[tuple[str, str, str | None, tuple[str, ...], tuple[str, ...]], ...] = (
    ("CHILD_OF", "The source is a child of the target.", "strong", ("Person",), ("Person",)),
    ("INFLUENCED_BY", "The source was influenced by the target.", "weak", (), ()),
    ("COLLABORATED_WITH", "Source and target worked together.", "balanced", (), ()),
    ("EMPLOYED_BY", "The source works or worked for the target.", "strong", ("Person",), ()),
    ("LOCATED_IN", "The source is located in the target.", "strong", (), ()),
    ("USES_TEMPLATE", "polyg's own: a node's document template.", None, (), ("Template",)),
    ("CACHED_AT", "polyg's own: a node's cached document.", None, (), ("CachedDocument",)),
    ("DEPENDS_ON", "polyg's own: what a cached document was built from.", None, ("CachedDocument",), ()),
)


def canonical(name: str) -> tuple[RelType, bool]:
    """The type to store for `name` and whether source and target swap (`PARENT_OF` ->
    (`CHILD_OF`, True)); any other valid name is itself, unswapped."""
    if name in MIGRATIONS:
        return RelType(MIGRATIONS[name]), True
    return user_rel_type(name), False


def weights(directionality: str | None) -> tuple[float, float]:
    return DIRECTIONAL_WEIGHTS.get(directionality or "", UNKNOWN_WEIGHTS)


@dataclass(frozen=True)
class RelationshipType:
    name: str
    description: str = ""
    directionality: Directionality | None = None
    source_types: tuple[str, ...] = ()
    target_types: tuple[str, ...] = ()

    @property
    def forward_weight(self) -> float:
        return weights(self.directionality)[0]

    @property
    def backward_weight(self) -> float:
        return weights(self.directionality)[1]

    def weight(self, forward: bool) -> float:
        return self.forward_weight if forward else self.backward_weight


def _from_row(row: Sequence[Any]) -> RelationshipType:
    name, description, directionality, sources, targets = row
    return RelationshipType(
        name=name,
        description=description or "",
        directionality=directionality if directionality in DIRECTIONALITIES else None,
        source_types=tuple(sources or ()),
        target_types=tuple(targets or ()),
    )


def _check_directionality(value: str | None) -> Directionality | None:
    if value is not None and value not in DIRECTIONALITIES:
        raise InvalidParams(f"directionality must be one of {', '.join(DIRECTIONALITIES)}; got {value!r}.")
    return value  # type: ignore[return-value]


def _node_types(values: Iterable[str], field: str) -> list[str]:
    items = list(values)
    if len(items) > 64:
        raise InvalidParams(f"{field} holds {len(items)} types; the limit is 64.")
    # Node types become labels (spec 000 `source_types: ["Person"]`): the label validator checks them.
    return [str(user_label(v, f"{field} entry")) for v in items]


class RelTypeService:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx
        # Types this process knows are registered (node and edge index), per project.
        self._known: dict[str, set[str]] = {}
        self._lock = asyncio.Lock()

    async def all(self, project: str) -> list[RelationshipType]:
        return [_from_row(row) for row in await q.get(self.ctx, project, None)]

    async def get(self, project: str, name: str) -> RelationshipType | None:
        rows = await q.get(self.ctx, project, [str(RelType(name))])
        return _from_row(rows[0]) if rows else None

    async def weights(self, project: str) -> dict[str, tuple[float, float]]:
        """Directional weights of every stored type; a type missing here weighs `UNKNOWN_WEIGHTS`."""
        return {t.name: weights(t.directionality) for t in await self.all(project)}

    async def create(
        self,
        project: str,
        name: str,
        *,
        description: str = "",
        directionality: str | None = None,
        source_types: Iterable[str] = (),
        target_types: Iterable[str] = (),
    ) -> RelationshipType:
        """Creates or replaces a type's definition (an auto-registered type gets described)."""
        rel = user_rel_type(name)
        fields = {
            "name": str(rel),
            "description": limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True),
            "directionality": _check_directionality(directionality),
            "source_types": _node_types(source_types, "source_types"),
            "target_types": _node_types(target_types, "target_types"),
        }
        rows = await q.upsert(self.ctx, project, fields, overwrite=True)
        await self._index(project, [rel])
        return _from_row(rows[0])

    async def update(
        self,
        project: str,
        name: str,
        *,
        description: str | None = None,
        directionality: str | None = None,
        source_types: Iterable[str] | None = None,
        target_types: Iterable[str] | None = None,
    ) -> RelationshipType:
        """Changes the given fields of an existing type."""
        current = await self.get(project, name)
        if current is None:
            raise NotFound(f"Relationship type {name} not found.")
        return await self.create(
            project,
            name,
            description=current.description if description is None else description,
            directionality=directionality or current.directionality,
            source_types=current.source_types if source_types is None else source_types,
            target_types=current.target_types if target_types is None else target_types,
        )

    async def seed(self, project: str) -> list[str]:
        """Stores `INITIAL`; a type already stored is left as its user set it. Returns the names."""
        for name, description, directionality, sources, targets in INITIAL:
            fields = {
                "name": str(RelType(name)),
                "description": description,
                "directionality": directionality,
                "source_types": list(sources),
                "target_types": list(targets),
            }
            await q.upsert(self.ctx, project, fields, overwrite=False)
        await self._index(project, [RelType(row[0]) for row in INITIAL])
        return [row[0] for row in INITIAL]

    async def delete(self, project: str, name: str) -> None:
        """Forgets a type's definition. Its relationships stay (and weigh as an unknown type);
        a type still in use is registered again by its next use."""
        rel = user_rel_type(name)
        if not await q.delete(self.ctx, project, str(rel)):
            raise NotFound(f"Relationship type {name} not found.")
        self._known.get(project, set()).discard(str(rel))

    async def ensure(self, project: str, names: Iterable[str]) -> None:
        """Registers the types not registered yet (first use): a `:RelationshipType` with only a
        name, and the `id` index of their edges. Costs nothing for types this process has seen."""
        known = self._known.setdefault(project, set())
        wanted = sorted({str(user_rel_type(n)) for n in names} - known)
        if not wanted:
            return
        async with self._lock:
            await q.register_missing(self.ctx, project, wanted)
            await self._index(project, [RelType(n) for n in wanted])

    def forget_all(self) -> None:
        """The database was replaced (perhaps by an empty one): register every type again."""
        self._known.clear()

    async def _index(self, project: str, rels: list[RelType]) -> None:
        names_indexed, indexed = await q.index_state(self.ctx, project)
        if not names_indexed:
            await q.create_name_index(self.ctx, project)
        for rel in rels:
            if rel not in indexed:
                await q.create_edge_id_index(self.ctx, project, rel)
        self._known.setdefault(project, set()).update(rels)
