"""The MCP surface: tools from the enabled toolsets, prompts, and the call dispatcher.

Built on the SDK's low-level `Server` so that polyg controls the error text (the specs'
`Error: ...` wording, with a 4-digit code) for bad arguments as well as failed calls.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from pydantic import ValidationError

from polyg import __version__
from polyg.core.app import Polyg
from polyg.errors import InvalidParams, PolygError
from polyg.logs import new_request_id, request_id
from polyg.tools import toolsets
from polyg.tools.prompts import PROMPTS, render
from polyg.tools.registry import ToolSpec

log = logging.getLogger("polyg.calls")

INSTRUCTIONS = (
    "polyg is a graph memory: entities with observations, typed relationships, all scoped by "
    "project_id (optional; the server has a default project)."
)


def error_result(exc: PolygError, rid: str) -> types.CallToolResult:
    message = exc.message if exc.message.startswith("Error: ") else f"Error: {exc.message}"
    return types.CallToolResult(
        content=[types.TextContent(text=message)],
        structured_content={"error": {"code": exc.code, "message": exc.message}},
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


def describe_validation(tool: str, exc: ValidationError) -> InvalidParams:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return InvalidParams(f"Invalid arguments for {tool}: " + "; ".join(problems))


class Dispatcher:
    def __init__(self, core: Polyg, tools: list[ToolSpec]) -> None:
        self.core = core
        self.tools = {tool.name: tool for tool in tools}
        self._listing = [
            types.Tool(
                name=t.name,
                title=t.annotations.title,
                description=t.description,
                input_schema=t.input_schema,
                output_schema=t.output_schema,
                annotations=t.annotations,
            )
            for t in tools
        ]

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listing)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.call(params.name, params.arguments or {})

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        rid = new_request_id()
        token = request_id.set(rid)
        started = time.perf_counter()
        outcome: dict[str, Any] = {"tool": name}
        try:
            tool = self.tools.get(name)
            if tool is None:
                raise InvalidParams(f"Unknown tool {name!r}.")
            try:
                args = tool.params.model_validate(arguments)
            except ValidationError as exc:
                raise describe_validation(name, exc) from exc
            services = await self.core.ready()
            result = success_result(await tool.handler(services, args), rid)
            outcome["ok"] = True
            return result
        except PolygError as exc:
            outcome.update(ok=False, code=exc.code, error=exc.message)
            return error_result(exc, rid)
        except Exception as exc:
            log.exception("tool crashed", extra={"tool": name})
            outcome.update(ok=False, code=4000, error=type(exc).__name__)
            return error_result(PolygError(f"Internal error in {name} (request id {rid})."), rid)
        finally:
            outcome["ms"] = round((time.perf_counter() - started) * 1000, 3)
            log.info("tool call", extra=outcome)
            request_id.reset(token)


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
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
            for p in PROMPTS
        ]
    )


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
    prompt = next((p for p in PROMPTS if p.name == params.name), None)
    if prompt is None:
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name!r}")
    return types.GetPromptResult(
        description=prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=render(prompt, params.arguments)))],
    )


def build_server(core: Polyg) -> tuple[Server[Any], Dispatcher]:
    dispatcher = Dispatcher(core, toolsets.enabled(core.settings.toolsets))
    server: Server[Any] = Server(
        "polyg",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=dispatcher.list_tools,
        on_call_tool=dispatcher.call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return server, dispatcher
