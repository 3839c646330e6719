"""`generate_documents`: a node's template rendered with its variables' rows, cached."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from polyg.core.documents.service import MAX_IDENTIFIERS, Document
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.knowledge.shared import knowledge
from polyg.tools.registry import Params


class GenerateDocuments(Params):
    node_identifiers: list[str] = Field(
        max_length=MAX_IDENTIFIERS,
        description=f"Node ids or names (exact, any case, or close), at most {MAX_IDENTIFIERS}.",
    )
    force_regenerate: bool = Field(default=False, description="Skip the cache and generate again.")
    include_dependencies: bool = Field(default=False, description="List the ids of the nodes each document depends on.")
    template_override: str | None = Field(default=None, description="Template id or name to use instead of the node's.")


class DocumentOut(BaseModel):
    node_id: str
    node_name: str
    content: str
    generated_at: int
    from_cache: bool
    dependencies: list[str]
    template_used: str


class DocumentsResult(BaseModel):
    documents: list[DocumentOut]
    omitted: int | None = None
    note: str | None = None


def _document(d: Document, include_dependencies: bool) -> dict[str, Any]:
    return {
        "node_id": d.node_id,
        "node_name": d.node_name,
        "content": d.content,
        "generated_at": d.generated_at,
        "from_cache": d.from_cache,
        "dependencies": sorted(d.dependencies) if include_dependencies else [],
        "template_used": d.template_used,
    }


@knowledge.tool(GenerateDocuments, DocumentsResult, title="Generate documents")
async def generate_documents(s: Services, p: GenerateDocuments) -> DocumentsResult:
    """Render each node's template (its own, a template for its type, or template_override) with
    the results of the template's Cypher variables. Documents are cached until the node, anything
    the variables read, or the template changes."""
    documents = await s.documents.generate(
        s.project(p.project_id),
        p.node_identifiers,
        force_regenerate=p.force_regenerate,
        template_override=p.template_override,
    )
    answer: dict[str, Any] = {"documents": [_document(d, p.include_dependencies) for d in documents]}
    omitted = shaping.keep_fitting(answer, "documents", at_least_one=True)
    if omitted:
        shown = len(documents) - omitted
        answer["omitted"] = omitted
        answer["note"] = shaping.left_out(shown, len(documents), "ask for the later node_identifiers in another call.")
    return shaping.typed(DocumentsResult, answer)
