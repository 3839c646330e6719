"""What every MCP client may rely on, over stdio and HTTP: error results that a client validating
structured content against the output schema accepts, protocol errors for unknown tools, the
server's timing of each call, and bounded quotes of bad input."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import TRANSPORTS
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}


@pytest.fixture(scope="module", params=TRANSPORTS)
async def every_tool(request: pytest.FixtureRequest, servers_root: Path) -> AsyncIterator[KG]:
    """A server with every toolset, over each transport."""
    async with kg_session(request.param, servers_root / f"protocol-{request.param}", "--toolsets", "all", **FAST) as kg:
        yield kg


def failing_calls(tool: str, project: str) -> list[dict[str, Any]]:
    """Arguments that make `tool` fail: missing, of the wrong type, naming what does not exist."""
    return [
        {},
        {"project_id": project, "unexpected": 1},
        {"project_id": "not a project id!"},
        {"project_id": project, "entity_id": "ent_missing", "relationship_id": "rel_missing", "observation_id": "o"},
        {"project_id": project, "names": ["Nobody"], "entityNames": ["Nobody"]},
    ]


async def test_every_error_is_accepted_by_a_client_that_validates_structured_content(
    every_tool: KG, project: str
) -> None:
    """What the TypeScript SDK's client does: structured content present on any result must
    validate against the tool's output schema, or the call throws and the host never shows
    polyg's message. An error result carries none, its message in the text, its code in _meta."""
    tools = (await every_tool.client.list_tools()).tools
    assert all(tool.output_schema for tool in tools)
    errors = 0
    for tool in tools:
        for args in failing_calls(tool.name, project):
            result = await every_tool.client.call_tool(tool.name, args)
            if result.structured_content is not None:
                jsonschema.validate(result.structured_content, tool.output_schema)
            if not result.is_error:
                continue
            errors += 1
            assert result.structured_content is None, (tool.name, args, result.structured_content)
            (item,) = result.content
            assert item.type == "text" and item.text.startswith("Error: "), item
            assert result.meta is not None
            code = result.meta["polyg/errorCode"]
            assert isinstance(code, int) and 1000 <= code <= 9999, result.meta
    # Every tool refuses a call without its required arguments, or one with unknown ones.
    assert errors >= 2 * len(tools), errors


async def test_an_unknown_tool_is_a_protocol_error(every_tool: KG) -> None:
    with pytest.raises(MCPError) as info:
        await every_tool.client.call_tool("no_such_tool", {})
    assert info.value.error.code == -32602
    assert "no_such_tool" in info.value.error.message
    # A long name is quoted as a short prefix (the HTTP client sends the name in a header too,
    # which bounds it below the 16 KB the HTTP server takes for headers).
    with pytest.raises(MCPError) as info:
        await every_tool.client.call_tool("x" * 5_000, {})
    assert info.value.error.code == -32602
    assert len(info.value.error.message) < 200
    # The session goes on.
    assert (await every_tool.ok("list_entities", {"project_id": "unknown-tool"})) == {"entities": []}


async def test_each_result_says_how_long_the_server_took(every_tool: KG, project: str) -> None:
    created = await every_tool.client.call_tool("create_entity", {"project_id": project, "name": "timed", "type": "t"})
    failed = await every_tool.client.call_tool("get_entity", {"project_id": project, "entity_id": "ent_missing"})
    for result in (created, failed):
        assert result.meta is not None
        server_ms = result.meta["polyg/serverMs"]
        assert isinstance(server_ms, float) and 0.0 < server_ms < 60_000.0, result.meta


def logged_line(log_file: Path, request_id: str) -> str:
    """The log line of the call with `request_id` (polled: a listener thread writes the log)."""
    deadline = time.monotonic() + 30
    while True:
        lines = log_file.read_text(encoding="utf-8").splitlines() if log_file.exists() else []
        found = [line for line in lines if request_id in line and '"tool call"' in line]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no log line for {request_id}"
        time.sleep(0.05)


async def test_a_huge_bad_input_is_quoted_as_a_short_prefix_in_errors_and_logs(every_tool: KG, project: str) -> None:
    client = every_tool.client
    log_file = every_tool.root / "logs" / "polyg.log"
    for args in (
        {"project_id": project, "name": "n", "type": "t", "k" * 200_000: 1},
        {"project_id": project, "name": "n", "type": "t" * 1_000_000},
        {"project_id": project, "entity_id": "ent_" + "9" * 1_000_000},
        {"project_id": "p" * 1_000_000},
    ):
        tool = "get_entity" if "entity_id" in args else "create_entity"
        result = await client.call_tool(tool, args)
        assert result.is_error, args.keys()
        (item,) = result.content
        assert item.type == "text" and len(item.text) < 2500, len(item.text)
        assert result.meta is not None
        line = logged_line(log_file, result.meta["polyg/requestId"])
        assert len(line) < 2500, len(line)


async def test_results_keep_their_json_text(every_tool: KG, project: str) -> None:
    result = await every_tool.client.call_tool("create_entity", {"project_id": project, "name": "shape", "type": "t"})
    assert not result.is_error
    (item,) = result.content
    assert item.type == "text"
    assert json.loads(item.text) == result.structured_content


# Keywords that constrain one JSON type only: a strict validator (ajv in strict mode, which
# clients may run on tool schemas) refuses one on a schema that does not declare that type.
TYPE_KEYWORDS = {
    "minLength": {"string"},
    "maxLength": {"string"},
    "pattern": {"string"},
    "format": {"string"},
    "minimum": {"integer", "number"},
    "maximum": {"integer", "number"},
    "exclusiveMinimum": {"integer", "number"},
    "exclusiveMaximum": {"integer", "number"},
    "items": {"array"},
    "minItems": {"array"},
    "maxItems": {"array"},
}


def untyped_constraints(schema: Any, where: str) -> list[str]:
    """Places in `schema` where a type's keyword stands beside no declaration of that type."""
    if not isinstance(schema, dict):
        return []
    declared = schema.get("type")
    types = set(declared) if isinstance(declared, list) else {declared}
    found = [f"{where}: {key}" for key, wanted in TYPE_KEYWORDS.items() if key in schema and not types & wanted]
    for key in ("properties", "$defs"):
        for name, sub in schema.get(key, {}).items():
            found += untyped_constraints(sub, f"{where}.{name}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            found += untyped_constraints(sub, f"{where}.{key}[{i}]")
    for key in ("items", "additionalProperties"):
        found += untyped_constraints(schema.get(key), f"{where}.{key}")
    return found


async def test_every_schema_declares_the_type_its_constraints_apply_to(every_tool: KG) -> None:
    """An optional constrained parameter (`parentId`: a string of at most 512 characters, or
    null) keeps `maxLength` in its string branch, where a strict validator accepts it."""
    tools = (await every_tool.client.list_tools()).tools
    problems = [
        problem
        for tool in tools
        for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema))
        for problem in untyped_constraints(schema, f"{tool.name} {kind}")
    ]
    assert problems == []
    for tool in tools:  # and the schemas stay valid JSON Schema
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)


# --- what one toolset writes, another reads back through a validating client ------------------


async def test_a_node_name_written_by_knowledge_reads_back_through_memory_compat(every_tool: KG, project: str) -> None:
    """manage_nodes names follow the one name rule (no control character; stripped), so a
    name it stores never makes memory-compat's results fail their output schema."""
    made = await every_tool.ok(
        "manage_nodes",
        {
            "project_id": project,
            "operation": "create",
            "nodes": [
                {"name": "Line\nbreak", "summary": "s"},
                {"name": "  Padded  ", "summary": "s"},
                {
                    "name": "Plain",
                    "summary": "s",
                    "relationships": [{"target_id": "  Padded  ", "relationship_type": "NEXT_TO"}],
                },
            ],
        },
    )
    refused, padded, plain = made["results"]
    assert refused["status"] == "error" and "control character" in refused["message"], refused
    assert padded["status"] == plain["status"] == "success", made
    renamed = await every_tool.ok(
        "manage_nodes",
        {"project_id": project, "operation": "update", "nodes": [{"id": plain["node_id"], "name": "Tab\there"}]},
    )
    assert renamed["results"][0]["status"] == "error", renamed
    graph = await every_tool.ok("read_graph", {"project_id": project})  # validated against the output schema
    assert [e["name"] for e in graph["entities"]] == ["Padded", "Plain"]
    assert graph["relations"] == [{"from": "Plain", "to": "Padded", "relationType": "NEXT_TO"}]
    opened = await every_tool.ok("open_nodes", {"project_id": project, "names": ["Padded"]})
    assert [e["name"] for e in opened["entities"]] == ["Padded"]


async def test_relationship_properties_that_polyg_reads_keep_their_types(every_tool: KG, project: str) -> None:
    """A knowledge relationship's properties named as the fields memory reads (validity times,
    confidence, score) cannot carry another type: memory's views of the entity stay valid and
    its fact queries do not crash."""

    async def relate(properties: dict[str, Any]) -> dict[str, Any]:
        result = await every_tool.ok(
            "manage_relationships",
            {
                "project_id": project,
                "operation": "create",
                "relationships": [
                    {
                        "source_id": "Alpha",
                        "target_id": "Beta",
                        "relationship_type": "LINKS_TO",
                        "properties": properties,
                    }
                ],
            },
        )
        return dict(result["results"][0])

    await every_tool.ok(
        "manage_nodes",
        {
            "project_id": project,
            "operation": "create",
            "nodes": [{"name": "Alpha", "summary": "first"}, {"name": "Beta", "summary": "second"}],
        },
    )
    for refused in ({"valid_from": 5}, {"valid_to": "2020-01-01"}, {"Invalidated_By": "x"}, {"confidence": "high"}):
        outcome = await relate(refused)
        assert outcome["status"] == "error", (refused, outcome)
    kept = await relate({"confidence": 0.4, "score": 2, "weight": 0.5, "note": "kept"})
    assert kept["status"] == "success", kept
    entity = await every_tool.ok("get_entity", {"project_id": project, "name": "Alpha"})
    [relationship] = entity["relationships"]
    assert (relationship["confidence"], relationship["valid_from"]) == (0.4, None), relationship
    assert (await every_tool.ok("get_facts", {"project_id": project, "subject": "Alpha"}))["facts"] == []
    timeline = await every_tool.ok("query_timeline", {"project_id": project, "entity": "Alpha", "include_facts": True})
    assert timeline["items"] == []
