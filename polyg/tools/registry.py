"""How a toolset declares its tools: typed parameters, a typed result, annotations, a handler.

Each tool is a plain async function `(services, params) -> model | dict | str` registered
with `Toolset.tool`. Its output model (or a dict in its shape) becomes `structuredContent`
(validated by clients against the tool's `outputSchema`) plus the same JSON as text; a str is a
plain message (the spec's text results). A handler that returns its output model has its result
checked by pydantic where it is built (`shaping.typed`); the model's fields that were set are
what the result holds (`shaping.plain`). Failures are raised as `PolygError`s; `polyg.server` turns them into `isError`
results whose text starts with `Error: `.

Tool names are unique: a toolset that declares a name twice fails at import, and so does a
name two toolsets claim for different tools (`polyg.tools.toolsets`). A tool that two specs
share (`get_entity`: spec 002 by `entity_id`, spec 003 by `name`) is made once by
`shared_tool` from each spec's `Form` and added to both toolsets with `Toolset.share`: it
accepts the union of the forms' parameters and runs the handler of the form it was given.
Prompts and server instructions belong to a toolset and are served only when it is enabled.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from polyg.core import limits
from polyg.errors import InvalidParams
from polyg.names import PROJECT_ID_PATTERN
from polyg.store.names import short
from polyg.tools.prompts import PromptSpec
from polyg.tools.schema import input_schema, output_schema

if TYPE_CHECKING:
    from polyg.runtime.app import Services

Handler = Callable[["Services", Any], Awaitable[BaseModel | dict[str, Any] | str]]


class ToolNameConflict(Exception):
    """Two different tools claim one name (raised at import: a programming error)."""


class Params(BaseModel):
    """Base of every tool's parameters: strict types, unknown arguments refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    project_id: str | None = Field(
        default=None,
        description="Project to work in; defaults to the server's configured project.",
        json_schema_extra={"minLength": 1, "maxLength": 64, "pattern": PROJECT_ID_PATTERN},
    )


class Message(BaseModel):
    """The result of tools whose spec answers with a sentence."""

    message: str


def degraded_field() -> Any:
    """The optional `degraded` field of a search tool's result (polyg.core.degraded): set by
    the server when the call answered without ranking by meaning, and why."""
    return Field(
        default=None,
        description=(
            "Set when the search could not rank by meaning and answered from words and the graph "
            "instead, and why: 'vector index building' (after a restart) or the embedder's error."
        ),
    )


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: type[BaseModel]
    output: type[BaseModel]
    annotations: ToolAnnotations
    handler: Handler
    toolset: str
    # A toolset whose tool of the same name this one replaces when both are enabled, because
    # it accepts that tool's form too and answers it with that tool's result.
    supersedes: str | None = None
    # What does not fit the listed description: served with the full schemas as the resource
    # polyg://tools/{name}, not sent to the model with every tools/list.
    details: str = ""

    @property
    def input_schema(self) -> dict[str, Any]:
        return input_schema(self.params)

    @property
    def output_schema(self) -> dict[str, Any]:
        return output_schema(self.output)


def _annotations(title: str | None, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent or read_only,
        open_world_hint=False,
    )


def _description(text: str | None) -> tuple[str, str]:
    """A docstring's first paragraph (the listed description) and the rest (the details)."""
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(text or "").split("\n\n")]
    return paragraphs[0], "\n\n".join(p for p in paragraphs[1:] if p)


@dataclass
class Toolset:
    name: str
    tools: list[ToolSpec] = field(default_factory=list)
    prompts: tuple[PromptSpec, ...] = ()
    instructions: str = ""  # what a client should know about these tools, added to the server's

    def tool[H: Handler](
        self,
        params: type[BaseModel],
        output: type[BaseModel] = Message,
        *,
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        title: str | None = None,
        supersedes: str | None = None,
    ) -> Callable[[H], H]:
        # The handler keeps its own type (its output model), so that a tool calling another
        # (memory's get_entity answering kg's form) knows what it gets.
        def register(fn: H) -> H:
            annotations = _annotations(title, read_only, destructive, idempotent)
            description, details = _description(fn.__doc__)
            spec = ToolSpec(
                fn.__name__, description, params, output, annotations, fn, self.name, supersedes, details=details
            )
            self._add(spec)
            return fn

        return register

    def share(self, tool: ToolSpec) -> None:
        """Serve a tool made by `shared_tool`, which other toolsets serve too."""
        self._add(tool)

    def _add(self, tool: ToolSpec) -> None:
        if any(t.name == tool.name for t in self.tools):
            raise ToolNameConflict(f"Toolset {self.name!r} declares the tool {tool.name!r} twice.")
        self.tools.append(tool)


@dataclass(frozen=True)
class Form:
    """One way to call a shared tool, as one spec states it: its parameters and its handler."""

    params: type[Params]
    handler: Handler

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.params.model_fields)

    @property
    def required(self) -> frozenset[str]:
        return frozenset(n for n, f in self.params.model_fields.items() if f.is_required())


def shared_tool(
    name: str,
    forms: Sequence[Form],
    output: type[BaseModel] = Message,
    *,
    description: str,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    title: str | None = None,
) -> ToolSpec:
    """One tool accepting several specs' parameter forms; each call runs the form it matches
    (the one whose required parameters are all given and which knows every parameter given)."""
    params = _union_params(name, forms)

    async def dispatch(services: Services, args: BaseModel) -> BaseModel | dict[str, Any] | str:
        given = args.model_dump(exclude_unset=True)
        form = _form_for(name, forms, set(given))
        try:
            chosen = form.params.model_validate(given)
        except ValidationError as exc:
            raise describe_validation(name, exc) from exc
        return await form.handler(services, chosen)

    annotations = _annotations(title, read_only, destructive, idempotent)
    summary, details = _description(description)
    return ToolSpec(name, summary, params, output, annotations, dispatch, "shared", details=details)


def _union_params(name: str, forms: Sequence[Form]) -> type[Params]:
    """Parameters of every form, each optional (which are needed depends on the form)."""
    required = [form.required - set(Params.model_fields) for form in forms]
    if len(forms) < 2 or not all(required) or len(set(required)) < len(required):
        raise ToolNameConflict(
            f"Shared tool {name!r} needs two or more forms, told apart by their required parameters."
        )
    fields: dict[str, Any] = {}
    for form in forms:
        for field_name, info in form.params.model_fields.items():
            if field_name in Params.model_fields:
                continue
            known = fields.get(field_name)
            if known is not None and known[0] != info.annotation:
                raise ToolNameConflict(f"Shared tool {name!r}: forms disagree on the type of {field_name!r}.")
            optional = copy.copy(info)
            optional.default = None
            annotation: Any = info.annotation
            fields[field_name] = (annotation | None, optional)
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Params"
    union: type[Params] = create_model(model_name, __base__=Params, **fields)
    return union


def _form_for(name: str, forms: Sequence[Form], given: set[str]) -> Form:
    given -= set(Params.model_fields)
    matching = [f for f in forms if f.required <= given and given <= f.fields]
    if len(matching) == 1:
        return matching[0]
    ways = ", or ".join(" and ".join(sorted(f.required - set(Params.model_fields))) for f in forms)
    raise InvalidParams(f"Invalid arguments for {name}: give {ways}.")


def refuse_unstorable_text(tool: str, arguments: object) -> None:
    """Refuses (4002) a call with a string FalkorDB cannot store (a NUL character, a lone
    surrogate) anywhere in its arguments, keys of maps included, at any depth: checked here,
    once for every tool, before any parameter reaches a query. A tool's own checks named it in
    most places, not all (14 parameters of 12 tools reached the store as error 2004)."""
    stack: list[tuple[str, object]] = [("", arguments)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            try:
                limits.text(value, where or "arguments", max_len=len(value), allow_empty=True)
            except InvalidParams as exc:
                raise InvalidParams(f"Invalid arguments for {tool}: {exc.message}") from None
        elif isinstance(value, dict):
            for key, item in value.items():
                # A key that cannot be stored cannot be sent back either: named escaped.
                name = _location_part(key) if isinstance(key, str) and key.isprintable() else ascii(key)
                place = f"{where}.{name}" if where else name
                stack.append((f"{place} (a key)", key))
                stack.append((place, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))


def describe_validation(tool: str, exc: ValidationError) -> InvalidParams:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        # A location can hold a key the client chose (a property name): quote at most a prefix.
        where = ".".join(_location_part(part) for part in err["loc"])
        problems.append(f"{where or 'arguments'}: {err['msg']}")
    return InvalidParams(f"Invalid arguments for {tool}: " + "; ".join(problems))


def _location_part(part: object) -> str:
    text = str(part)
    return text if len(text) <= 64 else short(text)
