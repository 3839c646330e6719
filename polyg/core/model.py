"""Typed nodes, edges and search hits, and the one codec for user properties.

Core services return these objects; each toolset shapes them into its spec's result (kg's
`parentId`, spec 000's `last_modified_date`), so no spec's wording lives in core.

User properties are stored as real FalkorDB properties beside polyg's own, so that template
Cypher reads them as `r.start_date`. The codec decides what may be stored:
- values: str, int, float, bool, or a list of one of those kinds (FalkorDB stores arrays of
  primitives); None means "no such property" (on an update: remove it);
- nested maps are refused (4002): FalkorDB cannot store them, and a JSON string in their place
  would read back as a string in template Cypher, unlike a map everywhere else;
- keys: names Cypher reads unquoted (`polyg.store.names.NAME`), never one of polyg's own keys;
- strings without NUL (the query protocol cannot carry it: it came back as store error 2004)
  and encodable as UTF-8; ints within 64 bits; finite floats.
FalkorDB returns a double with 15 significant digits, so a float is stored rounded to 15
significant digits: what is stored is exactly what reads back (0.1 + 0.2 reads as 0.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from polyg.core import limits
from polyg.errors import InvalidParams, PayloadTooLarge, PolygError
from polyg.store.names import NAME, short

Scalar = str | int | float | bool
PropertyValue = Scalar | list[str] | list[int | float] | list[bool]
Properties = dict[str, PropertyValue]

# Keys polyg writes itself on nodes or edges (all lower case, reserved in any case): a user
# property of that name would overwrite them, or be read back as one of them. Text fields of
# every embeddable label are among them (tests/core/test_embeddable.py holds the registry to that).
OWN_PROPERTY_KEYS = frozenset(
    {
        "id",
        "name",
        "name_key",  # the normalised name entities are matched on (polyg.store.queries.nodes)
        "type",
        "summary",
        "description",
        "text",
        "label",
        "parent_id",
        "embedding",
        "head_embedding",
        "rev",
        "vec_rev",
        "created_at",
        "updated_at",
        # spec 000 shows created_at / updated_at under these names: a property of that name
        # would shadow them in its results.
        "created_date",
        "last_modified_date",
        "key",  # PolygMeta's
        # the graphrag extraction log (polyg.store.queries.extraction)
        "extraction_rev",
        "extracted_at",
    }
)

MAX_PROPERTIES = 64
MAX_STRING = 16_384
MAX_ARRAY = 1_024
INT64 = (-(2**63), 2**63 - 1)
FLOAT_DIGITS = 15  # significant digits FalkorDB returns for a double


@dataclass(frozen=True)
class Node:
    """A node as core sees it: `kind` is its polyg label (Entity, Event, Chunk, ...), `labels`
    all its labels (an entity's second label comes from its type)."""

    id: str
    kind: str
    labels: tuple[str, ...] = ()
    name: str | None = None
    type: str | None = None
    summary: str = ""
    parent_id: str | None = None
    properties: Properties = field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class Edge:
    id: str
    type: str
    source_id: str
    target_id: str
    description: str = ""
    properties: Properties = field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class Hit:
    """A search result: the node, and each kind of evidence's score kept apart, so that a
    caller can report the vector similarity (spec 004) or re-rank after fusion."""

    node_id: str
    fused: float
    vector: float | None = None  # cosine similarity, when vector search found it
    text: float | None = None  # the text ranking's vote, when full-text search found it


Status = Literal["created", "updated", "deleted", "error"]


@dataclass(frozen=True)
class Outcome:
    """What became of one item of a batch write: `index` is its place in the batch; `node` or
    `edge` what was written; `edge_ids` the edges a new node brought; on error, its message and
    code."""

    index: int
    status: Status
    id: str | None = None
    node: Node | None = None
    edge: Edge | None = None
    edge_ids: tuple[str, ...] = ()
    error: str | None = None
    code: int | None = None

    @classmethod
    def failed(cls, index: int, exc: PolygError, item_id: object = None) -> Outcome:
        return cls(index, "error", item_id if isinstance(item_id, str) else None, error=exc.message, code=exc.code)


def encode_properties(value: object, field: str = "properties") -> dict[str, PropertyValue | None]:
    """User properties checked and made storable (InvalidParams / PayloadTooLarge if not).
    A None value stays None: absent on create, removed on update."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidParams(f"{field} must be an object of property names to values.")
    if len(value) > MAX_PROPERTIES:
        raise PayloadTooLarge(f"{field} holds {len(value)} properties; the limit is {MAX_PROPERTIES}.")
    encoded: dict[str, PropertyValue | None] = {}
    for key, item in value.items():
        encoded[property_key(key, field)] = encode_value(item, f"{field}.{key}")
    return encoded


# Relationship fields polyg's readers take with a type (the fact queries, `memory`'s view of
# an entity's relationships): a user property of that name would reach them with any type.
# Validity times make a relationship a fact; only add_fact writes them, normalised.
FACT_KEYS = frozenset({"valid_from", "valid_from_us", "valid_to", "invalidated_by", "invalidated_at"})
NUMBER_EDGE_KEYS = frozenset({"confidence", "score"})


def encode_edge_properties(value: object, field: str = "properties") -> dict[str, PropertyValue | None]:
    """`encode_properties` for a relationship: also refuses the fact keys, and a confidence or
    score that is not a number."""
    encoded = encode_properties(value, field)
    for key, item in encoded.items():
        folded = key.casefold()
        if folded in FACT_KEYS:
            raise InvalidParams(
                f"Invalid property name {key!r} in {field}: validity times make a relationship a fact; "
                "add facts with add_fact."
            )
        if (
            folded in NUMBER_EDGE_KEYS
            and item is not None
            and (isinstance(item, bool) or not isinstance(item, int | float))
        ):
            raise InvalidParams(f"{field}.{key} must be a number.")
    return encoded


def property_key(key: object, field: str = "properties") -> str:
    if not isinstance(key, str) or NAME.fullmatch(key) is None:
        raise InvalidParams(
            f"Invalid property name {short(key)} in {field}: use 1-64 letters, digits or '_', "
            "not starting with a digit."
        )
    if key.casefold() in OWN_PROPERTY_KEYS:  # as names.py reserves names: `ID` beside `id` misleads
        raise InvalidParams(f"Invalid property name {key!r} in {field}: the name is reserved by polyg.")
    return key


def encode_value(value: object, field: str) -> PropertyValue | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        raise InvalidParams(
            f"{field} is an object: nested objects cannot be stored as a property; "
            "use one property per field (e.g. address_city) or a string."
        )
    if isinstance(value, list | tuple):
        return _encode_array(value, field)
    return _encode_scalar(value, field)


def _encode_array(values: list[Any] | tuple[Any, ...], field: str) -> PropertyValue:
    if len(values) > MAX_ARRAY:
        raise PayloadTooLarge(f"{field} holds {len(values)} items; the limit is {MAX_ARRAY}.")
    items = [_encode_scalar(v, f"{field}[{i}]", in_array=True) for i, v in enumerate(values)]
    kinds = {_kind(v) for v in items}
    if len(kinds) > 1:
        raise InvalidParams(f"{field} mixes {' and '.join(sorted(kinds))}: a list holds values of one kind.")
    return items  # type: ignore[return-value]  # one kind, checked above


def _kind(value: Scalar) -> str:
    if isinstance(value, bool):
        return "booleans"
    return "strings" if isinstance(value, str) else "numbers"


def _encode_scalar(value: object, field: str, *, in_array: bool = False) -> Scalar:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise InvalidParams(f"{field} is out of range: integers are stored in 64 bits.")
        return value
    if isinstance(value, float):
        stored = float(f"{value:.{FLOAT_DIGITS}g}") if math.isfinite(value) else value
        if not math.isfinite(stored):
            raise InvalidParams(f"{field} must be a finite number (not NaN or infinite).")
        return stored
    if isinstance(value, str):
        return _encode_string(value, field)
    what = "null" if value is None else type(value).__name__
    where = "a list item" if in_array else "a property value"
    raise InvalidParams(f"{field}: {what} cannot be {where}; use a string, number, boolean or a list of one of them.")


def _encode_string(value: str, field: str) -> str:
    if len(value) > MAX_STRING:
        raise PayloadTooLarge(f"{field} is {len(value)} characters long; the limit is {MAX_STRING}.")
    if "\x00" in value:
        raise InvalidParams(f"{field} contains a NUL character, which cannot be stored.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(f"{field} is not valid Unicode text (a lone surrogate).") from None
    return value


def check_text(value: object, field: str, *, max_len: int = MAX_STRING, allow_empty: bool = True) -> str:
    """A text field of polyg's own (summary, description, ...): the limits, and the codec's string rules."""
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string.")
    return _encode_string(limits.text(value, field, max_len=max_len, allow_empty=allow_empty), field)


def check_name(value: object, field: str) -> str:
    """A node's name as every toolset stores it (`limits.name`: stripped, NFC, no control
    character), so that a name written through one toolset reads back through the others."""
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string.")
    return _encode_string(limits.name(value, field), field)


def decode_properties(stored: Mapping[str, Any]) -> Properties:
    """The user properties among a node's or edge's stored properties."""
    return {key: value for key, value in stored.items() if key not in OWN_PROPERTY_KEYS and value is not None}
