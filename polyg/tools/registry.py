"""How a toolset declares its tools: typed parameters, a typed result, annotations, a handler.

Each tool is a plain async function `(services, params) -> dict | str` registered with
`Toolset.tool`. A dict becomes `structuredContent` (validated by clients against the tool's
`outputSchema`) plus the same JSON as text; a str is a plain message (the spec's text
results). Failures are raised as `PolygError`s; `polyg.server` turns them into `isError`
results whose text starts with `Error: `.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from polyg.tools.schema import output_schema

if TYPE_CHECKING:
    from polyg.core.app import Services

Handler = Callable[["Services", Any], Awaitable[dict[str, Any] | str]]


class Params(BaseModel):
    """Base of every tool's parameters: strict types, unknown arguments refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    project_id: str | None = Field(
        default=None, description="Project to work in; defaults to the server's configured project."
    )


class Message(BaseModel):
    """The result of tools whose spec answers with a sentence."""

    message: str


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: type[BaseModel]
    output: type[BaseModel]
    annotations: ToolAnnotations
    handler: Handler
    toolset: str

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.params.model_json_schema()

    @property
    def output_schema(self) -> dict[str, Any]:
        return output_schema(self.output)


@dataclass
class Toolset:
    name: str
    tools: list[ToolSpec] = field(default_factory=list)

    def tool(
        self,
        params: type[BaseModel],
        output: type[BaseModel] = Message,
        *,
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        title: str | None = None,
    ) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            annotations = ToolAnnotations(
                title=title,
                read_only_hint=read_only,
                destructive_hint=destructive,
                idempotent_hint=idempotent or read_only,
                open_world_hint=False,
            )
            description = " ".join((fn.__doc__ or "").split())
            self.tools.append(ToolSpec(fn.__name__, description, params, output, annotations, fn, self.name))
            return fn

        return register
