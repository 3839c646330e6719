"""`shaping.typed` and `shaping.plain`: a handler's result as its output model, sent exactly as built."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from polyg.tools import shaping, toolsets
from polyg.tools.memory.timeline import FactList, TimelineResult
from tests.mcp_helpers import schema_violations

FACT = {
    "id": "f1",
    "subject": "Ada",
    "predicate": "works_on",
    "object": "Engine",
    "valid_from": "2026-01-01T00:00:00Z",
    "valid_to": None,
    "current": True,
    "invalidated_by": None,
    "invalidated_at": None,
}


def test_a_typed_result_is_sent_as_it_was_built() -> None:
    # `next_offset` and `note` left out stay out; None given stays; `from` keeps its published name.
    built = {"facts": [FACT], "has_more": False, "as_of": None}
    assert shaping.plain(shaping.typed(FactList, built)) == built
    timeline = {"from": None, "to": "2026-02-01T00:00:00Z", "items": [], "has_more": False, "next_offset": None}
    result = shaping.typed(TimelineResult, timeline)
    assert isinstance(result, TimelineResult) and shaping.plain(result) == timeline
    assert list(shaping.plain(result)) == list(timeline)  # keys in the order built


def test_a_key_the_output_model_does_not_declare_is_refused() -> None:
    with pytest.raises(shaping.ShapeMismatch, match="FactList"):
        shaping.typed(FactList, {"facts": [], "has_more": False, "as_of": None, "cursor": 3})
    with pytest.raises(shaping.ShapeMismatch):
        shaping.typed(FactList, {"facts": [{**FACT, "confidence": 0.5}], "has_more": False, "as_of": None})


def test_a_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(ValidationError):
        shaping.typed(FactList, {"facts": [{**FACT, "current": "maybe"}], "has_more": False, "as_of": None})
    with pytest.raises(ValidationError):
        shaping.typed(FactList, {"facts": [], "as_of": None})  # has_more is required


def test_plain_passes_dicts_and_messages_through() -> None:
    assert shaping.plain({"a": 1}) == {"a": 1}
    assert shaping.plain("Deleted.") == "Deleted."


def test_the_test_helper_names_each_place_a_result_breaks_its_published_schema() -> None:
    schema = next(t for t in toolsets.enabled(["memory"]) if t.name == "get_facts").output_schema
    assert schema_violations(schema, {"facts": [FACT], "has_more": False, "as_of": None}) == []
    problems = schema_violations(schema, {"facts": [{**FACT, "current": "yes"}], "as_of": 3})
    assert problems == [
        "at $: 'has_more' is a required property",
        "at $.as_of: 3 is not of type 'string', 'null'",
        "at $.facts[0].current: 'yes' is not of type 'boolean'",
    ]
