"""Output schemas in the form clients validate fastest.

A client checks every `structuredContent` against the tool's `outputSchema` (the Python MCP
client does, with `jsonschema`), so the schema's form is paid on every call. pydantic writes
nested models as `$ref`s into `$defs`, and optional fields as `anyOf: [{type}, {type: null}]`;
resolving a `$ref` and trying each branch of an `anyOf` are the slow paths of `jsonschema`.
The same constraints written inline, with type lists, validate in about half the time
(bench/notes/2026-11-27-measured-choices.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

# Keywords that constrain only values of one JSON type, by the types they apply to.
TYPED_KEYWORDS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("minLength", "maxLength", "pattern", "format"), frozenset({"string"})),
    **dict.fromkeys(
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), frozenset({"integer", "number"})
    ),
    **dict.fromkeys(("items", "prefixItems", "minItems", "maxItems", "uniqueItems"), frozenset({"array"})),
}


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema with each type's constraints inside the `anyOf` branch of that type.

    pydantic writes an optional constrained field (`str | None` with a `max_length`) as
    `{"anyOf": [{"type": "string"}, {"type": "null"}], "maxLength": 512}`: valid JSON Schema
    (the keyword ignores a null), but a strict validator (ajv in strict mode, as clients that
    compile tool schemas may run it) refuses a `maxLength` beside no `type: string`. Moved into
    the string branch, it means the same and every validator compiles it."""
    constrained: dict[str, Any] = _no_nul(_constraints_into_branches(model.model_json_schema()))
    return constrained


# What every string argument may not hold (the server refuses it, `refuse_unstorable_text`): a
# string without a pattern of its own publishes this one.
NO_NUL = "^[^\\x00]*$"


def _no_nul(node: Any) -> Any:
    if isinstance(node, list):
        return [_no_nul(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: value if key in DATA_KEYWORDS else _no_nul(value) for key, value in node.items()}
    if out.get("type") == "string" and not {"pattern", "enum", "const"} & out.keys():
        out["pattern"] = NO_NUL
    return out


def _constraints_into_branches(node: Any) -> Any:
    if isinstance(node, list):
        return [_constraints_into_branches(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: value if key in DATA_KEYWORDS else _constraints_into_branches(value) for key, value in node.items()}
    branches = out.get("anyOf")
    if "type" in out or not isinstance(branches, list):
        return out
    for keyword, types in TYPED_KEYWORDS.items():
        targets = [b for b in branches if isinstance(b, dict) and b.get("type") in types and keyword not in b]
        if keyword in out and targets:
            value = out.pop(keyword)
            for branch in targets:
                branch[keyword] = value
    return out


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema with every local `$ref` inlined and `anyOf`s of bare types
    written as a type list. Equivalent to pydantic's schema for every value."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    flat: dict[str, Any] = _flatten(schema, definitions, ())
    return flat


# Keywords whose values are data (JSON values), not schemas: copied as they are.
DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


def _flatten(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_flatten(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: value if key in DATA_KEYWORDS else _flatten(value, definitions, seen)
        for key, value in node.items()
        if key != "$ref"
    }
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:  # a recursive model cannot be inlined
            raise ValueError(f"output model {name} is recursive")
        # The reference's own keywords (a field's title, description) win over the model's.
        return {**_flatten(definitions[name], definitions, (*seen, name)), **out}
    branches = out.get("anyOf")
    if "type" not in out and isinstance(branches, list) and branches and all(_bare_type(branch) for branch in branches):
        del out["anyOf"]
        out["type"] = [branch["type"] for branch in branches]
    return out


def _bare_type(branch: Any) -> bool:
    """A branch that says nothing but its (single) type: `{"type": "string"}`."""
    return isinstance(branch, dict) and set(branch) == {"type"} and isinstance(branch["type"], str)
