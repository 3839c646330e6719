"""No string a tool is given reaches the store with a NUL character in it (issue 26, item 6).

Walks every tool's published input schema and, for each string it can hold (a parameter, a
field of an item of a list, a value or a key of a map), calls the tool through the real MCP
client with that one string holding a NUL and everything else a plain value: each call must be
refused as invalid parameters (4002) saying so, never reach the database (2004) or crash (4000).
Where the schema types the string, the tool's full schema (its page, `polyg://tools/{name}`)
says so too, so a validating client refuses it first; tools/list leaves that pattern out
(`polyg.tools.listing`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from polyg.tools import toolsets
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

NUL = "a\x00b"
TYPED = " (a string)"  # marks a place whose schema says it is a string
Schema = dict[str, Any]


@pytest.fixture(scope="module")
async def every_tool(servers_root: Path) -> AsyncIterator[KG]:
    async with kg_session("stdio", servers_root / "nul-arguments", "--toolsets", "all", "--project", "nul") as kg:
        yield kg


def resolve(schema: Any, defs: Schema) -> Schema:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema if isinstance(schema, dict) else {}


def branches(schema: Schema, defs: Schema) -> list[Schema]:
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return [b for b in (resolve(o, defs) for o in options) if b.get("type") != "null"]
    return [schema]


def sample(schema: Any, defs: Schema) -> Any:
    """A plain value of the schema's type: what every string but the one under test holds."""
    schema = branches(resolve(schema, defs), defs)[0]
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return [sample(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    if kind == "object":
        required = set(schema.get("required", ()))
        return {k: sample(v, defs) for k, v in schema.get("properties", {}).items() if k in required}
    return "x"


def variants(schema: Any, defs: Schema, where: str) -> Iterator[tuple[str, Any]]:
    """(where, value): the schema's value with one string holding a NUL, for each string."""
    for branch in branches(resolve(schema, defs), defs):
        kind = branch.get("type")
        if kind == "string" and "enum" not in branch:
            yield where + TYPED, NUL
        elif kind == "array":
            for inner, value in variants(branch.get("items", {}), defs, f"{where}[0]"):
                yield inner, [value]
        elif kind == "object" or "properties" in branch:
            base = sample(branch, defs) if kind == "object" else {}
            for key, sub in branch.get("properties", {}).items():
                for inner, value in variants(sub, defs, f"{where}.{key}"):
                    yield inner, {**base, key: value}
            extra = branch.get("additionalProperties")
            if extra:
                yield f"{where} (a key)", {**base, NUL: sample(extra if isinstance(extra, dict) else {}, defs)}
                if isinstance(extra, dict):
                    for inner, value in variants(extra, defs, f"{where}.*"):
                        yield inner, {**base, "k": value}
        elif kind is None and "enum" not in branch and "const" not in branch:
            yield where, NUL  # any JSON value (a property): a string among them


async def test_every_string_of_every_tool_refuses_nul(every_tool: KG) -> None:
    tools = (await every_tool.client.list_tools()).tools
    assert len(tools) > 40
    full = {tool.name: tool.input_schema for tool in toolsets.enabled(list(toolsets.load_all()))}
    checked: list[str] = []
    wrong: list[str] = []
    for tool in tools:
        schema = full[tool.name]
        defs = schema.get("$defs", {})
        base = sample(schema, defs)
        for key, sub in schema.get("properties", {}).items():
            for where, value in variants(sub, defs, key):
                args = {**base, key: value}
                result = await every_tool.call(tool.name, args)
                checked.append(f"{tool.name}:{where}")
                if not (result.is_error and result.error_code == 4002 and "NUL" in result.text):
                    wrong.append(f"{tool.name} {where}: {result.error_code} {result.text[:160]}")
                if where.endswith(TYPED) and jsonschema.Draft202012Validator(schema).is_valid(args):
                    wrong.append(f"{tool.name} {where}: the full schema takes the NUL")
    assert wrong == [], "\n".join(wrong)
    assert len(checked) > 150
