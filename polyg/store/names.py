"""Labels and relationship types: the only names that reach Cypher unquoted.

Cypher cannot take a label or a relationship type as a parameter, so they are interpolated into
query text. `Label` and `RelType` are the only types query code interpolates: each is a `str`
that its constructor has checked in full (`fullmatch`, so a trailing newline cannot slip
through as it does past `re.match(...$)`). polyg's own labels and types live in one registry;
user-chosen names that collide with them are refused (`user_label`, `user_rel_type`).
"""

from __future__ import annotations

import re
from typing import Self

from polyg.errors import InvalidParams

# Letters, digits and underscores, not starting with a digit: valid unquoted in Cypher.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def is_name(value: object) -> bool:
    return isinstance(value, str) and NAME.fullmatch(value) is not None


class _Name(str):
    what = "name"

    def __new__(cls, value: object) -> Self:
        if not is_name(value):
            raise InvalidParams(
                f"Invalid {cls.what} {short(value)}: use 1-64 letters, digits or '_', not starting with a digit."
            )
        return super().__new__(cls, value)


class Label(_Name):
    """A node label, safe to interpolate."""

    what = "label"


class RelType(_Name):
    """A relationship type, safe to interpolate."""

    what = "relationship type"


# The registry: every label polyg gives its own nodes and every relationship type it uses for
# its own structure (DESIGN section 2). Query code names them through these constants; a user
# may not take them (`user_label`, `user_rel_type`).
ENTITY = Label("Entity")
OBSERVATION = Label("Observation")
RELATIONSHIP_TYPE = Label("RelationshipType")
TEMPLATE = Label("Template")
CACHED_DOCUMENT = Label("CachedDocument")
EVENT = Label("Event")
ARTICLE = Label("Article")
AUTHOR = Label("Author")
CHUNK = Label("Chunk")
POLYG_META = Label("PolygMeta")

HAS_OBSERVATION = RelType("HAS_OBSERVATION")
USES_TEMPLATE = RelType("USES_TEMPLATE")
CACHED_AT = RelType("CACHED_AT")
DEPENDS_ON = RelType("DEPENDS_ON")
INVOLVES = RelType("INVOLVES")
HAS_CHUNK = RelType("HAS_CHUNK")
WROTE = RelType("WROTE")
MENTIONS = RelType("MENTIONS")
NEXT_CHUNK = RelType("NEXT_CHUNK")
T_BEFORE = RelType("T_BEFORE")
# spec 003's causal and semantic views: written by the memory toolset with their own properties
# (confidence, evidence; similarity score), so users reach them through its tools.
CAUSES = RelType("CAUSES")
SIMILAR_TO = RelType("SIMILAR_TO")
REPRESENTS = RelType("REPRESENTS")

OWN_LABELS: frozenset[Label] = frozenset(
    {ENTITY, OBSERVATION, RELATIONSHIP_TYPE, TEMPLATE, CACHED_DOCUMENT, EVENT, ARTICLE, AUTHOR, CHUNK, POLYG_META}
)
OWN_REL_TYPES: frozenset[RelType] = frozenset(
    {
        HAS_OBSERVATION,
        USES_TEMPLATE,
        CACHED_AT,
        DEPENDS_ON,
        INVOLVES,
        HAS_CHUNK,
        WROTE,
        MENTIONS,
        NEXT_CHUNK,
        T_BEFORE,
        CAUSES,
        SIMILAR_TO,
        REPRESENTS,
    }
)


# polyg's own types a user may give a relationship between two entities too: polyg writes them
# only from or to nodes of its other labels (an author's article, a chunk's entity, a cached
# document's sources), so between two entities such a relationship is the user's. Natural
# names (`wrote`, `mentions`, `depends_on`) are not refused for being polyg's as well; every
# query that reads polyg's own edges of these types names the label of an end that is not an
# entity, and the queries that leave own types out keep these where both ends are entities.
SHARED_REL_TYPES: frozenset[RelType] = frozenset({WROTE, MENTIONS, DEPENDS_ON})
# What a user may not name a relationship type.
RESERVED_REL_TYPES: frozenset[RelType] = OWN_REL_TYPES - SHARED_REL_TYPES

# polyg's own types that carry knowledge between entities, so that traversal, search expansion
# and statistics follow them like any user type (spec 004's `causes` is the causal view's
# `CAUSES`); the other own types are structure (an entity's observations, a document's
# dependencies) and are never traversed.
KNOWLEDGE_OWN_REL_TYPES: frozenset[RelType] = frozenset({CAUSES})
STRUCTURAL_REL_TYPES = OWN_REL_TYPES - KNOWLEDGE_OWN_REL_TYPES
_OWN_LABELS_FOLDED = frozenset(label.casefold() for label in OWN_LABELS)
_OWN_REL_TYPES_FOLDED = frozenset(rel.casefold() for rel in OWN_REL_TYPES)
_RESERVED_REL_TYPES_FOLDED = frozenset(rel.casefold() for rel in RESERVED_REL_TYPES)


# Reservation ignores case: FalkorDB's names are case-sensitive, but a user's `has_observation`
# beside polyg's `HAS_OBSERVATION` would read as one type to every person and model.
def is_reserved_label(name: str) -> bool:
    return name.casefold() in _OWN_LABELS_FOLDED


def is_own_rel_type(name: str) -> bool:
    """One of polyg's own types (a user's relationship may share the name: `SHARED_REL_TYPES`)."""
    return name.casefold() in _OWN_REL_TYPES_FOLDED


def is_reserved_rel_type(name: str) -> bool:
    return name.casefold() in _RESERVED_REL_TYPES_FOLDED


def user_label(name: object, what: str = "label") -> Label:
    """A label a user chose (an entity type's second label): valid and not one of polyg's own."""
    label = Label(name)
    if is_reserved_label(label):
        raise InvalidParams(f"Invalid {what} {label!r}: the name is reserved by polyg.")
    return label


def user_rel_type(name: object, what: str = "relationship type") -> RelType:
    """A relationship type a user chose: valid and not one of polyg's own."""
    rel = RelType(name)
    if is_reserved_rel_type(rel):
        raise InvalidParams(f"Invalid {what} {rel!r}: the name is reserved by polyg.")
    return rel


def short(value: object, limit: int = 80) -> str:
    """A value quoted for an error message or a log line, cut to `limit` characters: a 1 MB
    bad input must not become a 1 MB error."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
