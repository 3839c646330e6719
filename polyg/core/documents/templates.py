"""Document templates (spec 000): a Mustache `structure` and `variables`, each a Cypher query run
with the target node bound as `n`.

Saving checks everything a template will do when rendered: the structure must parse, and every
variable query must compile, read only and start from `n` (`UserCypher.check`); the reason of
a refusal is in the error. Every change stamps `updated_at`, which is what invalidates the
documents built from the template (see `polyg.core.documents`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyg.core import limits
from polyg.core.documents import mustache
from polyg.core.documents.user_cypher import UserCypher
from polyg.core.graph.context import GraphContext
from polyg.errors import InvalidParams, NotFound
from polyg.names import new_id, now_iso
from polyg.store.names import NAME, Label, short
from polyg.store.queries import templates as q

TEMPLATE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")
MAX_STRUCTURE = 65_536
MAX_VARIABLES = 32
MAX_NODE_TYPES = 64


@dataclass(frozen=True)
class Template:
    id: str
    name: str
    description: str = ""
    structure: str = ""
    variables: Mapping[str, str] = field(default_factory=dict)
    node_types: tuple[str, ...] = ()
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class TemplateDraft:
    name: str
    structure: str
    description: str = ""
    variables: Mapping[str, str] | None = None
    node_types: Sequence[str] = ()
    id: str | None = None


@dataclass(frozen=True)
class TemplateChange:
    id: str
    name: str | None = None
    description: str | None = None
    structure: str | None = None
    variables: Mapping[str, str] | None = None
    node_types: Sequence[str] | None = None


def template_from(fields: Mapping[str, Any]) -> Template:
    try:
        variables = json.loads(fields.get("variables_json") or "{}")
    except ValueError:
        variables = {}
    return Template(
        id=fields["id"],
        name=fields.get("name") or "",
        description=fields.get("description") or "",
        structure=fields.get("structure") or "",
        variables={str(k): str(v) for k, v in variables.items()} if isinstance(variables, dict) else {},
        node_types=tuple(fields.get("node_types") or ()),
        created_at=fields.get("created_at"),
        updated_at=fields.get("updated_at"),
    )


def check_template_id(value: object) -> str:
    if not isinstance(value, str) or not TEMPLATE_ID.fullmatch(value):
        raise InvalidParams(
            f"Invalid template id {short(value)}: use 1-128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit."
        )
    return value


def check_structure(structure: object) -> list[mustache.Node]:
    text = limits.text(structure, "structure", max_len=MAX_STRUCTURE)  # type: ignore[arg-type]
    return mustache.parse(text)


def _check_variable_name(name: object) -> str:
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise InvalidParams(
            f"Invalid variable name {short(name)}: use 1-64 letters, digits or '_', not starting with a digit."
        )
    return name


def _check_node_types(values: Sequence[str]) -> list[str]:
    items = list(values)
    if len(items) > MAX_NODE_TYPES:
        raise InvalidParams(f"node_types holds {len(items)} types; the limit is {MAX_NODE_TYPES}.")
    return [limits.type_(v, f"node_types[{i}]") for i, v in enumerate(items)]


class TemplateService:
    def __init__(self, ctx: GraphContext, user_cypher: UserCypher | None = None) -> None:
        self.ctx = ctx
        self.user_cypher = user_cypher or UserCypher(ctx)

    async def _variables(self, project: str, variables: Mapping[str, str] | None) -> dict[str, str]:
        if variables is None:
            return {}
        if not isinstance(variables, Mapping):
            raise InvalidParams("variables must be an object of variable names to Cypher queries.")
        if len(variables) > MAX_VARIABLES:
            raise InvalidParams(f"variables holds {len(variables)} queries; the limit is {MAX_VARIABLES}.")
        checked: dict[str, str] = {}
        for name, query in variables.items():
            key = _check_variable_name(name)
            if not isinstance(query, str):
                raise InvalidParams(f"variables.{key} must be a Cypher query (a string).")
            try:
                await self.user_cypher.check(project, query)
            except InvalidParams as exc:
                raise InvalidParams(f"variables.{key}: {exc.message}") from exc
            checked[key] = query
        return checked

    async def create(self, project: str, draft: TemplateDraft) -> Template:
        template_id = check_template_id(draft.id) if draft.id is not None else new_id("tpl")
        name = limits.name(draft.name)
        check_structure(draft.structure)
        description = limits.text(draft.description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        node_types = _check_node_types(draft.node_types)
        variables = await self._variables(project, draft.variables)
        now = now_iso()
        fields = {
            "id": template_id,
            "name": name,
            "description": description,
            "structure": draft.structure,
            "variables_json": json.dumps(variables, ensure_ascii=False),
            "node_types": node_types,
            "created_at": now,
            "updated_at": now,
        }
        rows = await q.create(self.ctx, project, fields, new_id("tok"))
        if not rows:
            raise InvalidParams(f"Template id {template_id!r} is an entity's id; a template needs an id of its own.")
        made, stored = rows[0]
        if not made:
            raise InvalidParams(f"A template with id {template_id!r} exists already; update it instead.")
        return template_from(stored)

    async def update(self, project: str, change: TemplateChange) -> Template:
        template_id = check_template_id(change.id)
        fields: dict[str, Any] = {}
        if change.name is not None:
            fields["name"] = limits.name(change.name)
        if change.description is not None:
            fields["description"] = limits.text(
                change.description, "description", max_len=limits.MAX_TEXT, allow_empty=True
            )
        if change.structure is not None:
            check_structure(change.structure)
            fields["structure"] = change.structure
        if change.node_types is not None:
            fields["node_types"] = _check_node_types(change.node_types)
        if change.variables is not None:
            fields["variables_json"] = json.dumps(await self._variables(project, change.variables), ensure_ascii=False)
        fields["updated_at"] = now_iso()
        rows = await q.update(self.ctx, project, template_id, fields)
        if not rows:
            raise NotFound(f"Template {template_id} not found.")
        return template_from(rows[0][0])

    async def delete(self, project: str, template_id: str) -> None:
        """Deletes the template; documents built from it are stale from then on."""
        if not await q.delete(self.ctx, project, check_template_id(template_id)):
            raise NotFound(f"Template {template_id} not found.")

    async def list(self, project: str, limit: int = limits.MAX_LIMIT) -> list[Template]:
        return [template_from(row[0]) for row in await q.list_all(self.ctx, project, limits.limit(limit))]

    async def find(self, project: str, refs: Sequence[str]) -> dict[str, Template]:
        """Reference (id, else exact name) -> template, for those found."""
        wanted = sorted({r for r in refs if isinstance(r, str) and r})
        if not wanted:
            return {}
        return {ref: template_from(fields) for ref, fields in await q.get(self.ctx, project, wanted)}

    async def get(self, project: str, ref: str) -> Template:
        found = await self.find(project, [ref])
        if ref not in found:
            raise NotFound(f"Template {ref} not found.")
        return found[ref]

    async def for_type(self, project: str, node_type: str | None, labels: Sequence[str]) -> Template | None:
        """The oldest template whose node_types name this node type or one of these labels."""
        if not node_type and not labels:
            return None
        rows = await q.for_type(self.ctx, project, node_type or "", list(labels))
        return template_from(rows[0][0]) if rows else None

    async def link(self, project: str, label: Label, node_id: str, template_ref: str | None) -> None:
        """Makes the node use the template (by id or name), or none; NotFound if either is missing."""
        template_id = None
        if template_ref is not None:
            template_id = (await self.get(project, template_ref)).id
        rows = await q.link(self.ctx, project, label, node_id, template_id, now_iso())
        if not rows:
            raise NotFound(f"Node {node_id} or template {template_ref} not found.")
