"""The MCP surface: tools from the enabled toolsets, prompts, and the call dispatcher.

Built on the SDK's low-level `Server` so that polyg controls the error text (the specs'
`Error: ...` wording, with a 4-digit code) for bad arguments as well as failed calls.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from functools import cached_property, partial
from typing import Any

from mcp import types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from pydantic import ValidationError

from polyg import __version__
from polyg.access import FULL_ACCESS, Grant, grant_of_request
from polyg.core import degraded, limits, progress
from polyg.core.graph.indexes import one_check_per_call
from polyg.errors import PolygError
from polyg.logs import new_request_id, request_id
from polyg.runtime.app import Polyg
from polyg.store.connection import reads_from_primary
from polyg.store.names import short
from polyg.tools import shaping, toolsets
from polyg.tools.listing import lean_input_schema, lean_output_schema
from polyg.tools.prompts import PromptSpec, render
from polyg.tools.registry import ToolSpec, describe_validation, refuse_unstorable_text
from polyg.tools.resources import Resources
from polyg.ui import mcp_app as graph_app

log = logging.getLogger("polyg.calls")


# Error texts are built from the input they refuse; this caps what a huge input can make of one.
MAX_ERROR_CHARS = 2000


def error_result(exc: PolygError, rid: str) -> types.CallToolResult:
    """An `isError` result: the text `Error: <message>` and the code in `_meta`, no structured
    content. Every tool declares an `outputSchema`, and clients that validate structured content
    against it (the TypeScript SDK's does, for errors too) would reject `{"error": ...}` and
    never show the message."""
    message = exc.message if exc.message.startswith("Error: ") else f"Error: {exc.message}"
    if len(message) > MAX_ERROR_CHARS:
        message = f"{message[:MAX_ERROR_CHARS]}... (cut: {len(message)} characters)"
    return types.CallToolResult(
        content=[types.TextContent(text=message)],
        is_error=True,
        _meta={"polyg/requestId": rid, "polyg/errorCode": exc.code},
    )


def success_result(value: dict[str, Any] | str, rid: str) -> types.CallToolResult:
    if isinstance(value, str):
        text, structured = value, {"message": value}
    else:
        text, structured = json.dumps(value, ensure_ascii=False), value
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured,
        _meta={"polyg/requestId": rid},
    )


def warn_if_over_budget(tool: str, result: types.CallToolResult) -> None:
    """A safety net, not a cut: each tool cuts its own lists (polyg.tools.shaping) and says how
    to see the rest, which a cut here could not; a result still over the budget is logged."""
    text = result.content[0]
    chars = len(text.text) if isinstance(text, types.TextContent) else 0
    if chars > limits.RESPONSE_BUDGET:
        log.warning("result over the response budget", extra={"tool": tool, "chars": chars})


def unknown_tool(name: str) -> MCPError:
    """A call to a tool that is not listed: a protocol error (JSON-RPC -32602), not a tool result."""
    return MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {short(name)}")


class Dispatcher:
    def __init__(self, core: Polyg, tools: list[ToolSpec]) -> None:
        self.core = core
        self.tools = {tool.name: tool for tool in tools}
        # Called with the project after each successful write call (resource subscriptions).
        self.write_listeners: list[Callable[[str, ServerRequestContext[Any] | None], Awaitable[None]]] = []

    @cached_property
    def listing(self) -> list[types.Tool]:
        # Made at the first tools/list, not before `initialize` is answered: the JSON schemas
        # are the larger part of building the tools' models. The lean forms (polyg.tools.listing)
        # keep every parameter's limits. No title: it re-spells the name, on every tool; the
        # resource polyg://tools/{name} has it.
        return [
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=lean_input_schema(t.input_schema),
                output_schema=lean_output_schema(t.output_schema),
                # idempotentHint false is the protocol's default: said only when true.
                annotations=t.annotations.model_copy(
                    update={"title": None, "idempotent_hint": t.annotations.idempotent_hint or None}
                ),
            )
            for t in self.tools.values()
        ]

    @cached_property
    def read_only_listing(self) -> list[types.Tool]:
        return [t for t in self.listing if t.annotations is not None and t.annotations.read_only_hint]

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # A read-only key is shown the tools it may call: a model offered write tools would try them.
        grant = grant_of_request(ctx.request)
        return types.ListToolsResult(tools=self.listing if grant.write else self.read_only_listing)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # The session sends progress only when the client's request carried a progressToken.
        with progress.bound(ctx.session.report_progress):
            return await self.call(params.name, params.arguments or {}, grant_of_request(ctx.request), ctx)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        grant: Grant = FULL_ACCESS,
        origin: ServerRequestContext[Any] | None = None,
    ) -> types.CallToolResult:
        """Run a tool. `origin` is the MCP request it answers (None for the graph view's calls)."""
        tool = self.tools.get(name)
        if tool is None:
            log.info("unknown tool", extra={"tool": short(name)})
            raise unknown_tool(name)
        rid = new_request_id()
        token = request_id.set(rid)
        started = time.perf_counter()
        outcome: dict[str, Any] = {"tool": name}
        if grant.name is not None:
            outcome["key_name"] = grant.name  # the key's name from the config, never the key
        try:
            result = await self._run(tool, arguments, rid, outcome, grant)
        finally:
            # polyg.logs cuts a long field (an error quoting a huge input) in the log line.
            outcome["ms"] = ms = round((time.perf_counter() - started) * 1000, 3)
            log.info("tool call", extra=outcome)
            request_id.reset(token)
        # The server's time for the call, for clients and benchmarks, as the log line has it.
        assert result.meta is not None
        result.meta["polyg/serverMs"] = ms
        if not result.is_error and not tool.annotations.read_only_hint:
            # Here, not in each tool: any write may change the project's summary and pages.
            project = arguments.get("project_id") or self.core.settings.project
            for listener in self.write_listeners:
                await listener(str(project), origin)
        return result

    async def _run(
        self, tool: ToolSpec, arguments: dict[str, Any], rid: str, outcome: dict[str, Any], grant: Grant
    ) -> types.CallToolResult:
        try:
            # Before anything is validated, read or written: a refusal tells nothing of the project.
            project = arguments.get("project_id")
            grant.check(
                tool.name,
                bool(tool.annotations.read_only_hint),
                self.core.settings.project if project is None else project,
            )
            refuse_unstorable_text(tool.name, arguments)
            try:
                args = tool.params.model_validate(arguments)
            except ValidationError as exc:
                raise describe_validation(tool.name, exc) from exc
            services = await self.core.ready(self.core.settings.store_wait_s)
            # A tool that writes reads what it decides on from the primary, not a replica.
            fresh = contextlib.nullcontext() if tool.annotations.read_only_hint else reads_from_primary()
            with degraded.collecting() as notes, fresh, one_check_per_call():
                value = shaping.plain(await tool.handler(services, args))
            if notes and isinstance(value, dict) and "degraded" in tool.output.model_fields:
                value["degraded"] = degraded.reason(notes)
                outcome["degraded"] = value["degraded"]
            result = success_result(value, rid)
            warn_if_over_budget(tool.name, result)
            outcome["ok"] = True
            return result
        except PolygError as exc:
            outcome.update(ok=False, code=exc.code, error=exc.message)
            return error_result(exc, rid)
        except Exception as exc:
            log.exception("tool crashed", extra={"tool": tool.name})
            outcome.update(ok=False, code=4000, error=type(exc).__name__)
            return error_result(PolygError(f"Internal error in {tool.name} (request id {rid})."), rid)


async def list_prompts(
    prompts: list[PromptSpec], ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(
                name=p.name,
                description=p.description,
                arguments=[
                    types.PromptArgument(name=n, description=f"{d} (default {default!r})", required=False)
                    for n, d, default in p.arguments
                ],
            )
            for p in prompts
        ]
    )


async def get_prompt(
    prompts: list[PromptSpec], ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    prompt = next((p for p in prompts if p.name == params.name), None)
    if prompt is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name!r}")
    return types.GetPromptResult(
        description=prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=render(prompt, params.arguments)))],
    )


def spans_recorded(provider: trace.TracerProvider) -> bool:
    """Whether a tracer provider has been set that can record spans (by the host, or by running
    polyg under OpenTelemetry's auto-instrumentation). Until one is, the default provider
    drops every span."""
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def build_server(core: Polyg) -> tuple[Server[Any], Dispatcher]:
    names = core.settings.toolsets
    serving = toolsets.load(names)  # only the enabled toolsets' modules are imported
    dispatcher = Dispatcher(core, toolsets.enabled(names, serving))
    # Only the enabled toolsets' prompts, their project defaulting to the server's.
    prompts = [p.for_project(core.settings.project) for p in toolsets.prompts(names, serving)]
    server: Server[Any] = Server(
        "polyg",
        version=__version__,
        instructions=toolsets.instructions(names, serving, project=core.settings.project),
        on_list_tools=dispatcher.list_tools,
        on_call_tool=dispatcher.call_tool,
        on_list_prompts=partial(list_prompts, prompts),
        on_get_prompt=partial(get_prompt, prompts),
    )
    # resources/* and completion/complete: polyg.tools.resources, in a module of its own.
    resources = Resources(core, list(dispatcher.tools.values()), prompts)
    resources.register(server)
    dispatcher.write_listeners.append(resources.subscriptions.project_changed)
    if not spans_recorded(trace.get_tracer_provider()):
        # The SDK wraps every request (pings too) in a span by default; with nobody recording
        # them, making and closing each span is pure cost on every call's path.
        server.middleware = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    graph_app.install(server)  # the graph view as an MCP App: its resource, its tools' _meta
    return server, dispatcher
