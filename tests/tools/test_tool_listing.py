"""tools/list is lean: the default toolsets' listing fits 25 kB of JSON (a client sends it to its
model on every turn), and the lean schemas keep every parameter's limits; the server's
instructions describe every toolset it serves; prompts default to the server's project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import types

from polyg.catalog import BY_NAME, DEFAULT
from polyg.names import PROJECT_ID
from polyg.server import Dispatcher
from polyg.tools import toolsets
from polyg.tools.listing import LISTED, lean_input_schema, lean_output_schema
from polyg.tools.schema import NO_NUL
from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio

MAX_DEFAULT_LISTING = 25_000  # bytes of the tools/list result's JSON, as sent
FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
# Keywords that bound a parameter's values: the lean listing must keep each one (but the NUL
# refusal every string has, which the listing leaves to the server and the tool's page).
LIMITS = ("minLength", "maxLength", "pattern", "minimum", "maximum", "minItems", "maxItems", "enum", "default")
PYTHON_END = "(?!.*\\n)"


def listing_bytes(result: types.ListToolsResult) -> int:
    """The result's size as the server sends it (compact JSON, absent fields left out)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def limits_of(schema: Any, where: str = "") -> dict[str, Any]:
    """Every limit keyword in `schema` by its place, an optional parameter's null branch folded
    into the parameter (`anyOf: [X, null]` and `type: [X, null]` say the same)."""
    found: dict[str, Any] = {}
    if not isinstance(schema, dict):
        return found
    node = {**schema, **schema.get(LISTED, {})}
    for branch in node.get("anyOf", []):
        if branch != {"type": "null"}:
            found.update(limits_of(branch, where))
    for key in LIMITS:
        if key in node and not (key == "pattern" and node[key] == NO_NUL):
            value = node[key]
            found[f"{where}{key}"] = value.replace(PYTHON_END, "") if key == "pattern" else value
    for name, sub in node.get("properties", {}).items():
        found.update(limits_of(sub, f"{where}{name}."))
    if isinstance(node.get("items"), dict):
        found.update(limits_of(node["items"], f"{where}[]."))
    return found


def test_the_lean_input_schemas_keep_every_limit_of_every_tool() -> None:
    for tool in toolsets.enabled(list(toolsets.load_all())):
        full, lean = tool.input_schema, lean_input_schema(tool.input_schema)
        expected = {k: v for k, v in limits_of(full).items() if not k.startswith("project_id.")}
        listed = {k: v for k, v in limits_of(lean).items() if not k.startswith("project_id.")}
        assert listed == expected, tool.name
        assert set(lean.get("required", [])) == set(full.get("required", [])), tool.name
        assert lean.get("additionalProperties") == full.get("additionalProperties"), tool.name
        if "project_id" in full["properties"]:
            # Its pattern bounds its length too: 1 to 64 of the characters the server allows.
            pattern = lean["properties"]["project_id"]["pattern"]
            assert pattern == f"^{PROJECT_ID.pattern}$", tool.name


def test_the_lean_output_schemas_name_every_key_and_which_are_always_there() -> None:
    for tool in toolsets.enabled(list(toolsets.load_all())):
        full, lean = tool.output_schema, lean_output_schema(tool.output_schema)
        assert lean["type"] == "object"
        assert lean.get("required", []) == full.get("required", []), tool.name
        assert set(lean.get("properties", lean.get("required", []))) == set(full["properties"]), tool.name


def test_the_all_listing_is_well_under_half_its_former_size() -> None:
    """Measured for the report: 141 kB before the lean listing (152 kB with spaces)."""
    names = list(BY_NAME)
    listing = Dispatcher(None, toolsets.enabled(names, toolsets.load(names))).listing  # type: ignore[arg-type]
    assert listing_bytes(types.ListToolsResult(tools=listing)) < 70_000


async def test_default_tools_list_fits_25_kb_and_instructions_and_prompts_follow_the_server(
    tmp_path: Path,
) -> None:
    async with kg_session("stdio", tmp_path / "lean", "--project", "lean-proj", **FAST) as session:
        client = session.client
        listed = await client.list_tools()
        served = {tool.name for tool in toolsets.enabled(list(DEFAULT))}
        assert {tool.name for tool in listed.tools} == served
        size = listing_bytes(listed)
        assert size <= MAX_DEFAULT_LISTING, size
        for tool in listed.tools:
            assert tool.description and tool.output_schema and tool.annotations, tool.name
            assert "title" not in str(tool.input_schema.get("properties", {}).get("project_id")), tool.name

        # Every toolset served is described, memory and kg included, with the server's project.
        instructions = client.instructions or ""
        for name in DEFAULT:
            assert f"{name}:" in instructions, name
        assert "'lean-proj'" in instructions
        assert "reference_time" in instructions  # the time parameters, described once here

        # A prompt's project defaults to the server's, not the spec's example project.
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        project_arg = next(a for a in prompts["list_by_type"].arguments or [] if a.name == "project_id")
        assert "lean-proj" in (project_arg.description or "")
        rendered = await client.get_prompt("list_by_type", {})
        assert rendered.messages[0].content.text == "List all 'class' entities in project 'lean-proj'."  # type: ignore[union-attr]
