"""Every tool publishes the project_id rule the server enforces: a value valid by a tool's
input schema is a project id the server accepts, and one the server refuses is invalid there."""

from __future__ import annotations

import jsonschema
import pytest

from polyg.errors import InvalidParams
from polyg.names import check_project_id
from polyg.tools.toolsets import load_all

CANDIDATES = ["a", "Proj-1.2_x", "9", "p" * 64, "p" * 65, "", "_lead", ".lead", "has space", "tail\n", "é", "a/b"]
TOOLS = sorted({tool.name: tool for toolset in load_all().values() for tool in toolset.tools}.items())


def _accepted(project_id: str) -> bool:
    try:
        check_project_id(project_id)
    except InvalidParams:
        return False
    return True


@pytest.mark.parametrize(("name", "tool"), TOOLS, ids=[name for name, _ in TOOLS])
def test_the_input_schema_publishes_the_project_id_rule(name: str, tool: object) -> None:
    schema = tool.input_schema  # type: ignore[attr-defined]
    validator = jsonschema.Draft202012Validator(schema["properties"]["project_id"])
    for candidate in CANDIDATES:
        assert validator.is_valid(candidate) == _accepted(candidate), (name, candidate)
    assert validator.is_valid(None)
