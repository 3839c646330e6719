"""`manage_templates`: Mustache document templates whose variables are read-only Cypher."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.documents.templates import Template, TemplateChange, TemplateDraft
from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.knowledge.shared import ItemResult, each, knowledge
from polyg.tools.registry import Params


class TemplateIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete; optional on create.")
    name: str | None = None
    description: str | None = None
    structure: str | None = Field(default=None, description="Mustache template, e.g. '# {{name}}\\n{{summary}}'.")
    variables: dict[str, str] | None = Field(
        default=None,
        description="Variable name -> Cypher query run with the node bound as n, read-only, e.g. "
        "'MATCH (n)-[r]->(p) RETURN type(r) AS type, p.name AS name'.",
    )
    node_types: list[str] | None = Field(default=None, description="Node types this template applies to.")


class ManageTemplates(Params):
    operation: Literal["create", "update", "delete", "list"]
    templates: list[TemplateIn] = Field(default=[], description="Not needed for list.")


class TemplateOut(BaseModel):
    id: str
    name: str
    description: str
    structure: str
    variables: dict[str, str]
    node_types: list[str]
    created_date: str | None
    last_modified_date: str | None


class TemplateResult(ItemResult):
    template_id: str


class TemplatesResult(BaseModel):
    results: list[TemplateResult]
    templates: list[TemplateOut]


def _template(t: Template) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "structure": t.structure,
        "variables": dict(t.variables),
        "node_types": list(t.node_types),
        "created_date": t.created_at,
        "last_modified_date": t.updated_at,
    }


@knowledge.tool(ManageTemplates, TemplatesResult, title="Manage templates")
async def manage_templates(s: Services, p: ManageTemplates) -> TemplatesResult:
    """Create, update, delete or list document templates: a Mustache `structure` and `variables`
    (name -> Cypher run read-only with the node bound as n). A structure that does not parse, or a
    query that does not compile, writes or reads beyond n, is refused with the reason."""
    project = s.project(p.project_id)
    if p.operation == "list":
        return shaping.typed(
            TemplatesResult, {"results": [], "templates": [_template(t) for t in await s.templates.list(project)]}
        )

    async def work(item: TemplateIn) -> dict[str, Any]:
        if p.operation == "create":
            if item.name is None or item.structure is None:
                raise InvalidParams("A template needs a name and a structure.")
            made = await s.templates.create(
                project,
                TemplateDraft(
                    name=item.name,
                    structure=item.structure,
                    description=item.description or "",
                    variables=item.variables,
                    node_types=item.node_types or (),
                    id=item.id,
                ),
            )
            return {"template_id": made.id, "operation": p.operation}
        if item.id is None:
            raise InvalidParams(f"A template id is needed to {p.operation} a template.")
        if p.operation == "update":
            change = TemplateChange(
                item.id, item.name, item.description, item.structure, item.variables, item.node_types
            )
            await s.templates.update(project, change)
        else:
            await s.templates.delete(project, item.id)
        return {"template_id": item.id, "operation": p.operation}

    results = await each(p.templates, work, lambda item: {"template_id": item.id or ""})
    for r in results:
        r.setdefault("operation", p.operation)
    return shaping.typed(TemplatesResult, {"results": results, "templates": []})
