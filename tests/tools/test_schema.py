"""Output schemas are flattened (no `$ref`, type lists for optional fields) and accept and
refuse exactly what pydantic's own schema does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema.validators import validator_for
from pydantic import BaseModel, Field

from polyg.tools import toolsets
from polyg.tools.schema import output_schema

ALL_TOOLS = toolsets.enabled(list(toolsets.load_all()))
BY_NAME = {tool.name: tool for tool in ALL_TOOLS}

OBSERVATION = {"id": "o1", "text": "plays the trumpet"}
ENTITY = {
    "id": "e1",
    "name": "Miles Davis",
    "type": "person",
    "description": "jazz trumpeter",
    "parentId": None,
    "created_at": "2026-11-22T10:00:00Z",
    "updated_at": None,
    "observations": [OBSERVATION],
}
GRAPH = {
    "entities": [{"name": "Miles Davis", "entityType": "person", "observations": ["plays the trumpet"]}],
    "relations": [{"from": "Miles Davis", "to": "John Coltrane", "relationType": "played_with"}],
    "nextOffset": None,
}


def _valid(schema: dict[str, Any], value: Any) -> bool:
    validator = validator_for(schema)(schema)
    return not list(validator.iter_errors(value))


def test_every_output_schema_is_flat() -> None:
    assert ALL_TOOLS
    for tool in ALL_TOOLS:
        text = json.dumps(tool.output_schema)
        assert "$ref" not in text and "$defs" not in text, tool.name
        assert tool.output_schema["type"] == "object", tool.name


@pytest.mark.parametrize(
    ("tool", "value"),
    [
        ("get_entity", {"entity": ENTITY}),
        ("get_entity", {"entity": {**ENTITY, "parentId": 3}}),  # wrong type in an optional field
        ("get_entity", {"entity": {**ENTITY, "observations": [{"id": "o1"}]}}),  # nested field missing
        ("get_entity", {"entity": {**ENTITY, "name": None}}),  # null where only a string goes
        ("get_entity", {}),
        ("search_nodes", GRAPH),
        ("search_nodes", {**GRAPH, "nextOffset": 100}),
        ("search_nodes", {**GRAPH, "nextOffset": "100"}),
        ("search_nodes", {**GRAPH, "relations": [{"from": "a", "to": "b"}]}),
        ("search_nodes", {**GRAPH, "entities": [{"name": "a", "entityType": "b", "extra": 1}]}),
    ],
)
def test_flat_schema_judges_like_pydantic_schema(tool: str, value: dict[str, Any]) -> None:
    spec = BY_NAME[tool]
    assert _valid(spec.output_schema, value) == _valid(spec.output.model_json_schema(), value)


def test_valid_examples_pass() -> None:
    # The cases above must include values both schemas accept, or equality proves little.
    assert _valid(BY_NAME["get_entity"].output_schema, {"entity": ENTITY})
    assert _valid(BY_NAME["search_nodes"].output_schema, GRAPH)
    assert not _valid(BY_NAME["search_nodes"].output_schema, {**GRAPH, "nextOffset": "100"})


def test_recursive_model_is_refused() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    Node.model_rebuild()
    with pytest.raises(ValueError, match="recursive"):
        output_schema(Node)


def test_ref_siblings_are_kept() -> None:
    class Inner(BaseModel):
        x: int

    class Outer(BaseModel):
        inner: Inner = Field(title="Inside", description="the inner part")
        maybe: Inner | None = None

    assert "$ref" in Outer.model_json_schema()["properties"]["inner"]  # a $ref with siblings
    flat = output_schema(Outer)
    inner = flat["properties"]["inner"]
    assert inner["properties"]["x"]["type"] == "integer"
    assert (inner["title"], inner["description"]) == ("Inside", "the inner part")
    assert flat["properties"]["maybe"]["anyOf"][0]["properties"]["x"]["type"] == "integer"
    assert flat["properties"]["maybe"]["default"] is None


def test_data_values_are_not_rewritten() -> None:
    class WithData(BaseModel):
        shape: dict[str, Any] = Field(default={"anyOf": [{"type": "string"}]})

    flat = output_schema(WithData)
    assert flat["properties"]["shape"]["default"] == {"anyOf": [{"type": "string"}]}


def test_memory_compat_results_show_stored_names_the_input_rules_would_refuse() -> None:
    """Input limits describe what a call may write, not what a result may show: a name stored
    before a toolset checked it (a control character, over 512 characters) reads back."""
    entity = {"name": "Line\nbreak", "entityType": "t", "observations": ["x" * 20_000]}
    relation = {"from": "Line\nbreak", "to": "L" * 600, "relationType": "NEXT_TO"}
    for tool, value in (
        ("read_graph", {"entities": [entity], "relations": [relation]}),
        ("open_nodes", {"entities": [entity], "relations": [relation]}),
        ("create_entities", {"entities": [entity]}),
        ("create_relations", {"relations": [relation]}),
    ):
        assert _valid(BY_NAME[tool].output_schema, value), tool
    # The shape itself is kept: an unknown key or a missing field is still refused.
    assert not _valid(BY_NAME["read_graph"].output_schema, {"entities": [{**entity, "extra": 1}], "relations": []})
    assert not _valid(BY_NAME["create_entities"].output_schema, {"entities": [{"name": "a", "entityType": "t"}]})
