"""What carries text declares itself here: its text fields, what its vector is made of, and whose
search hit it is. The index set, the search targets and what the vectorizer embeds follow from
these declarations, so a new node kind gets vectors and hybrid search by declaring itself.

- `head`: the fields its own vector is embedded from, joined by `head_text`;
- `parts`: a child label whose vectors are composed into this one's (an entity's observations,
  `polyg.core.graph.vectors.compose`), reached by a relationship type;
- `owner`: for a part, the label its search hits count for (an observation's hit is its entity's);
- `fulltext`: fields in its full-text index; `lookup`: fields with a range index (equality);
- `endpoint`: whether an edge may start or end at it (an observation may not: it belongs to
  its entity and is deleted with it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from polyg.core.graph.vectors import head_text as entity_head_text
from polyg.store import names
from polyg.store.names import Label, RelType
from polyg.store.queries import search, vectors
from polyg.store.queries.indexes import NodeIndexes


@dataclass(frozen=True)
class Link:
    """Another label, reached by a relationship type (from the owner to the part)."""

    label: Label
    rel: RelType


def _field(name: str) -> Callable[[Mapping[str, Any]], str]:
    def text(values: Mapping[str, Any]) -> str:
        return str(values.get(name) or "")

    return text


def _entity_head(values: Mapping[str, Any]) -> str:
    return entity_head_text(values["name"], values["type"], values.get("summary") or "")


@dataclass(frozen=True)
class Embeddable:
    label: Label
    head: tuple[str, ...]
    head_text: Callable[[Mapping[str, Any]], str]
    fulltext: tuple[str, ...]
    lookup: tuple[str, ...] = ("id",)
    parts: Link | None = None
    owner: Link | None = None
    endpoint: bool = True

    @property
    def named(self) -> bool:
        """Whether nodes of this label can be addressed by an exact name."""
        return "name" in self.lookup


@dataclass(frozen=True)
class SearchTarget:
    """A vector and full-text index that search queries, and whose hits it counts for: the node
    itself (`owner` None) or its owner."""

    label: Label
    owner: Link | None

    @property
    def query(self) -> search.Target:
        """The target as the store's search queries take it."""
        if self.owner is None:
            return search.Target(self.label)
        return search.Target(self.label, self.owner.label, self.owner.rel)

    def owner_match(self) -> tuple[str, str]:
        """Match clause and id expression that map a hit `node` on this label to its owner's id."""
        return search.owner_match(self.query.owner, self.query.rel)


ENTITY = Embeddable(
    names.ENTITY,
    head=("name", "type", "summary"),
    head_text=_entity_head,
    fulltext=("name", "type", "summary"),
    # parent_id: deleting an entity clears its children's parent, a lookup per deleted entity.
    # name_key: memory's match-or-create of a name (polyg.store.queries.nodes).
    lookup=("id", "name", "type", "parent_id", "name_key"),
    parts=Link(names.OBSERVATION, names.HAS_OBSERVATION),
)
OBSERVATION = Embeddable(
    names.OBSERVATION,
    head=("text",),
    head_text=_field("text"),
    fulltext=("text",),
    owner=Link(names.ENTITY, names.HAS_OBSERVATION),
    endpoint=False,
)
# The temporal view's events (spec 003): their description is what they mean; a timeline reads
# them by their instant (`occurred_us`, epoch microseconds, through its range index).
EVENT = Embeddable(
    names.EVENT,
    head=("description",),
    head_text=_field("description"),
    fulltext=("description",),
    lookup=("id", "occurred_us"),
)
CHUNK = Embeddable(names.CHUNK, head=("text",), head_text=_field("text"), fulltext=("text",))


class EmbeddableRegistry:
    def __init__(self, entries: Iterable[Embeddable] = ()) -> None:
        self._entries: dict[str, Embeddable] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: Embeddable) -> None:
        if entry.label in self._entries:
            raise ValueError(f"{entry.label} is already declared embeddable")
        for link in (entry.parts, entry.owner):
            if link is not None and link.label == entry.label:
                raise ValueError(f"{entry.label} cannot be its own part or owner")
        self._entries[entry.label] = entry

    def __getitem__(self, label: str) -> Embeddable:
        return self._entries[label]

    def __contains__(self, label: object) -> bool:
        return label in self._entries

    @property
    def labels(self) -> tuple[Label, ...]:
        return tuple(entry.label for entry in self._entries.values())

    def index_set(self) -> NodeIndexes:
        """Range indexes on the lookup fields, a full-text index on the text fields, a vector
        index on `embedding`, for every declared label."""
        entries = self._entries.values()
        return NodeIndexes(
            range={e.label: e.lookup for e in entries if e.lookup},
            fulltext={e.label: e.fulltext for e in entries if e.fulltext},
            vector=tuple(e.label for e in entries),
        )

    def search_targets(self, counts_for: str | None = None) -> tuple[SearchTarget, ...]:
        """Every search target, or those whose hits count for nodes of label `counts_for` (an
        entity search reads entities and observations; a chunk search, chunks)."""
        targets = (SearchTarget(e.label, e.owner) for e in self._entries.values())
        return tuple(t for t in targets if counts_for is None or (t.owner.label if t.owner else t.label) == counts_for)

    def search_labels(self, counts_for: str | None = None) -> tuple[Label, ...]:
        return tuple(target.label for target in self.search_targets(counts_for))

    def endpoint_labels(self) -> tuple[Label, ...]:
        """Labels an edge may join, each found by its indexed `id`."""
        return tuple(e.label for e in self._entries.values() if e.endpoint and "id" in e.lookup)

    def named_labels(self) -> tuple[Label, ...]:
        return tuple(e.label for e in self._entries.values() if e.endpoint and e.named)

    def vectorized_labels(self) -> tuple[Label, ...]:
        """Labels the vectorizer embeds nodes of: every declared label but the parts, whose
        vectors are made with their owner's."""
        return tuple(e.label for e in self._entries.values() if e.owner is None)

    def vector_source(self, label: str) -> vectors.Source:
        """What the vectorizer reads to embed nodes of `label`: its head fields and its parts'."""
        entry = self._entries[label]
        if entry.parts is None:
            return vectors.Source(entry.label, entry.head)
        part = self._entries[entry.parts.label]
        return vectors.Source(entry.label, entry.head, vectors.Part(entry.parts.rel, part.label, part.head))

    def text_fields(self) -> frozenset[str]:
        return frozenset(f for e in self._entries.values() for f in (*e.head, *e.fulltext))


# What polyg embeds and searches: entities with their observations, events (memories among
# them), and chunks, the documents' text (spec 001, polyg ingest).
REGISTRY = EmbeddableRegistry([ENTITY, OBSERVATION, EVENT, CHUNK])
