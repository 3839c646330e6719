"""The embeddable registry derives today's index set exactly, and a new label gets its indexes
and a search target by declaring itself."""

from __future__ import annotations

import pytest

from polyg.core.graph.embeddable import (
    CHUNK,
    ENTITY,
    EVENT,
    OBSERVATION,
    REGISTRY,
    Embeddable,
    EmbeddableRegistry,
    Link,
)
from polyg.core.model import OWN_PROPERTY_KEYS
from polyg.core.search import service as search
from polyg.store import schema
from polyg.store.names import HAS_OBSERVATION, Label, RelType
from polyg.store.names import OBSERVATION as OBSERVATION_LABEL
from polyg.store.queries.vectors import Part, Source

HNSW = {"M": schema.HNSW_M, "efConstruction": schema.EF_CONSTRUCTION, "efRuntime": schema.EF_RUNTIME}


def test_the_registry_gives_todays_index_lists() -> None:
    indexes = REGISTRY.index_set()
    assert indexes.range == schema.RANGE_INDEXES
    assert indexes.fulltext == schema.FULLTEXT_INDEXES
    assert indexes.vector == schema.VECTOR_INDEXES


@pytest.mark.parametrize(
    "found",
    [
        {},
        {("Entity", "id"): {"RANGE"}, ("Entity", "name"): {"RANGE", "FULLTEXT"}},
        {("Entity", "embedding"): {"VECTOR"}, ("Observation", "text"): {"FULLTEXT"}},
        {("Entity", p): {"RANGE", "FULLTEXT"} for p in ("id", "name", "type", "summary")},
    ],
)
def test_the_registry_gives_todays_index_statements(found: dict[tuple[str, str], set[str]]) -> None:
    structure = [
        f"CREATE INDEX FOR (n:{label}) ON (n.{prop})"
        for label, props in schema.STRUCTURE_INDEXES.items()
        for prop in props
    ]
    expected = [s for s in schema._missing_statements(found, 384) if s not in structure]
    assert REGISTRY.index_set().missing(found, 384, hnsw=HNSW) == expected


def test_search_targets_are_todays_labels_with_their_owners() -> None:
    assert REGISTRY.search_labels() == ("Entity", "Observation", "Event", "Chunk")
    assert REGISTRY.search_labels("Entity") == ("Entity", "Observation")  # entity search counts no event
    assert REGISTRY.search_labels("Event") == ("Event",)
    assert REGISTRY.search_labels("Chunk") == ("Chunk",)
    [entity, observation] = REGISTRY.search_targets("Entity")
    assert entity.owner is None
    assert observation.owner is not None and (observation.owner.label, observation.owner.rel) == (
        "Entity",
        "HAS_OBSERVATION",
    )


def test_a_declared_label_gets_indexes_and_a_search_target() -> None:
    registry = EmbeddableRegistry([ENTITY, OBSERVATION, EVENT, CHUNK])
    statements = registry.index_set().missing({}, 8, hnsw=HNSW)
    assert "CREATE INDEX FOR (n:Event) ON (n.id)" in statements
    assert "CALL db.idx.fulltext.createNodeIndex('Chunk', 'text')" in statements
    assert any(s.startswith("CREATE VECTOR INDEX FOR (n:Event) ON (n.embedding)") for s in statements)
    assert registry.search_labels() == ("Entity", "Observation", "Event", "Chunk")
    assert registry.endpoint_labels() == ("Entity", "Event", "Chunk")  # not observations
    assert registry.named_labels() == ("Entity",)


def test_head_texts() -> None:
    assert ENTITY.head_text({"name": "Miles Davis", "type": "person", "summary": "trumpeter"}) == (
        "Miles Davis (person): trumpeter"
    )
    assert EVENT.head_text({"description": "recorded Kind of Blue"}) == "recorded Kind of Blue"


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="already"):
        EmbeddableRegistry([ENTITY, ENTITY])
    with pytest.raises(ValueError, match="own part"):
        looped = Link(Label("Entity"), RelType("HAS_PART"))
        EmbeddableRegistry([Embeddable(Label("Entity"), ("name",), ENTITY.head_text, ("name",), parts=looped)])


def test_text_fields_are_polyg_keys() -> None:
    """A user property may not take the name of a field polyg embeds or indexes."""
    everything = EmbeddableRegistry([ENTITY, OBSERVATION, EVENT, CHUNK])
    assert everything.text_fields() <= OWN_PROPERTY_KEYS


def test_what_the_vectorizer_embeds_follows_from_the_registry() -> None:
    """Every declared label but the parts is embedded, read through the registry's source: an
    entity with its observations composed in; a chunk or an event from its own text."""
    assert REGISTRY.vectorized_labels() == ("Entity", "Event", "Chunk")
    assert REGISTRY.vector_source("Event") == Source(Label("Event"), ("description",))
    entity = REGISTRY.vector_source("Entity")
    assert (entity.fields, entity.part) == (
        ("name", "type", "summary"),
        Part(HAS_OBSERVATION, OBSERVATION_LABEL, ("text",)),
    )
    everything = EmbeddableRegistry([ENTITY, OBSERVATION, EVENT, CHUNK])
    assert everything.vectorized_labels() == ("Entity", "Event", "Chunk")
    assert everything.vector_source("Event") == Source(Label("Event"), ("description",))


def test_search_owner_mapping_follows_from_the_registry() -> None:
    """Entity search maps an observation hit to its entity (what search.py hard-wired before it
    read the registry); a chunk hit is the chunk's own."""
    assert search.ENTITY_TARGETS == REGISTRY.search_targets("Entity")
    owners = {target.label: target.owner_match() for target in REGISTRY.search_targets()}
    assert owners["Entity"] == ("", "node.id")
    assert owners["Observation"] == ("MATCH (e:Entity)-[:HAS_OBSERVATION]->(node) ", "e.id")
    assert owners["Chunk"] == ("", "node.id")
    assert owners["Event"] == ("", "node.id")


def test_events_are_declared_in_the_main_registry() -> None:
    """Events are searched, embedded and indexed through the registry, as entities are: their
    indexes are among every project's (a timeline reads them by `occurred_us`), search reads
    them through the `events` preset, and an edge may join one."""
    assert "Event" in REGISTRY
    indexes = REGISTRY.index_set()
    assert indexes.range["Event"] == ("id", "occurred_us")
    assert indexes.fulltext["Event"] == ("description",)
    assert "Event" in indexes.vector
    assert search.PRESETS["events"].counts_for == "Event"
    assert "Event" in REGISTRY.endpoint_labels() and "Event" not in REGISTRY.named_labels()
