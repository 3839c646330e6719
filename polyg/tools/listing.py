"""What `tools/list` publishes of each tool: a lean form of its schemas.

A client sends every listed tool to its model on every turn, so the listing's size is paid in
tokens all the time (the default 29 tools were 69 kB of JSON). What is cut here carries no
meaning a caller needs, or is published once elsewhere:

- `title` keywords: pydantic writes one for every model and field, the field name re-spelt.
- an optional parameter's `anyOf: [{type: X, ...}, {type: null}]`: written `type: [X, "null"]`
  beside X's constraints, which accepts the same values.
- `project_id`'s text: every tool has it, and the server's instructions say what it is; its
  pattern (which bounds its length too) stays.
- `(?!.*\\n)` at the start of a pattern: it makes Python's `$` (which also matches before a
  final newline) act as JSON Schema's ECMA-262 `$` does; a conforming validator reads the
  pattern the same without it, and the server checks every value itself.
- the NUL refusal (`schema.NO_NUL`, the pattern of every string without one of its own): no
  caller means to send a NUL, and the server refuses it in every string (4002); the tool's page
  keeps it for validating clients.
- the output schema's structure: the listing names the result's keys and says which it always
  has, which every result still conforms to; clients hand the schema to no model, so the rest
  was 45% of the listing for nothing the model sees. The whole schema, with every description,
  is the resource `polyg://tools/{name}` (`polyg.tools.resources`).

Every limit of every parameter (lengths, patterns, ranges, enums, defaults) is kept, but for one
a schema marks with `LISTED` (kg's relationship type: the names it may not take are said in
words).
"""

from __future__ import annotations

from typing import Any

from polyg.names import PROJECT_ID_PATTERN
from polyg.tools.schema import NO_NUL

# Keywords whose value maps names to schemas (property names must not be read as keywords).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
# Keywords whose values are data, copied as they are.
_DATA = frozenset({"default", "const", "enum", "examples", "required"})
_NULL = {"type": "null"}
_PYTHON_END = "^(?!.*\\n)"
# A schema's keywords as tools/list shows them, where the full ones are too long for every
# listing (polyg://tools/{name} shows the full schema, without this key).
LISTED = "x-polyg-listed"


def lean_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    lean: dict[str, Any] = _lean(schema)
    properties = lean.get("properties", {})
    if "project_id" in properties:
        properties["project_id"] = {"type": "string", "pattern": _ecma(PROJECT_ID_PATTERN)}
    return lean


def _ecma(pattern: str) -> str:
    return "^" + pattern.removeprefix(_PYTHON_END) if pattern.startswith(_PYTHON_END) else pattern


def _lean(node: Any) -> Any:
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in {**node, **node.get(LISTED, {})}.items():
        if key in ("title", LISTED) or (key == "pattern" and value == NO_NUL):
            continue
        if key in _DATA:
            out[key] = value
        elif key == "pattern" and isinstance(value, str):
            out[key] = _ecma(value)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _lean(sub) for name, sub in value.items()}
        else:
            out[key] = _lean(value)
    branches = out.get("anyOf")
    if "type" not in out and isinstance(branches, list) and len(branches) == 2 and _NULL in branches:
        (kept,) = [branch for branch in branches if branch != _NULL]
        if isinstance(kept, dict) and isinstance(kept.get("type"), str) and not (set(kept) & set(out) - {"anyOf"}):
            # {type: [X, null], ...X's constraints}: the same values (a string keyword ignores a
            # null), and a default of null stays valid.
            del out["anyOf"]
            out = {**kept, **out, "type": [kept["type"], "null"]}
    return out


def lean_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The top level of an output schema: which keys a result always has (`required`) and, when
    some are optional, the name of every key it may have."""
    required = list(schema.get("required", []))
    names = list(schema.get("properties", {}))
    lean: dict[str, Any] = {"type": "object"}
    if set(names) != set(required):
        lean["properties"] = {key: {} for key in names}
    if required:
        lean["required"] = required
    return lean
