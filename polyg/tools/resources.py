"""MCP resources and argument completion: what a client can read without calling a tool.

Resource templates (`resources/templates/list`):

- `polyg://{project}/summary`: what the project holds (counts by label and relationship type)
  and its first entities' pages.
- `polyg://{project}/entity/{id}`: an entity's page, the text its knowledge document renders
  (`polyg.core.documents`: its template's, else name, summary and relationships). `{id}` is the
  entity's id or its name (exactly, else in any case).
- `polyg://{project}/document/{template}/{id}`: the entity's document rendered with a template.
- `polyg://{project}/export/{format}{?offset}`: the graph as `json` or `cypher`, a page of
  nodes and relationships at a time (the JSON names the next page's URI).
- `polyg://tools/{name}`: a served tool's whole description and full input and output
  schemas (tools/list carries lean ones: `polyg.tools.listing`).

`resources/list` names the tool pages, then per project its summary and every entity page,
a page of results per call (`nextCursor`). `completion/complete` completes those templates'
arguments and the prompts' (project ids, entity names and ids, template ids, formats, tools).

`resources/subscribe` and `resources/unsubscribe` (handshake-era sessions): a subscription belongs
to the client session that made it and ends with it. When a write tool call succeeds for project
P in this process, every session subscribed to a `polyg://P/...` resource is sent
`notifications/resources/updated` for that URI (`Subscriptions.project_changed`, called by the
dispatcher). A write made by another process on the same store is not seen.

A project or entity that does not exist is a resource error (-32602, the URI in `data`) with a
sentence saying so, never a trace. Over HTTP, an access key sees, reads and completes its own
projects only (polyg.access): another's is error 4003, before the store is asked.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import anyio
from mcp import types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from polyg.access import Grant, grant_of_request
from polyg.errors import AccessDenied, InvalidParams, NotFound, PolygError
from polyg.logs import new_request_id
from polyg.names import PROJECT_ID
from polyg.runtime.app import Polyg, Services
from polyg.store.names import short
from polyg.tools.listing import LISTED
from polyg.tools.prompts import PromptSpec
from polyg.tools.registry import ToolSpec

log = logging.getLogger("polyg.resources")

SCHEME = "polyg://"
PAGE_SIZE = 100  # resources per resources/list page
EXPORT_PAGE = 1_000  # nodes and relationships per export page
SUMMARY_ENTITIES = 50  # entity pages a summary links to
MAX_COMPLETIONS = 100  # the protocol's cap on completion values
MARKDOWN = "text/markdown"
DELIVERY_TIMEOUT_S = 5.0  # for one resource update to be taken by a subscribed session's channel


@dataclass(frozen=True)
class ResourceKind:
    id: str
    uri_template: str
    title: str
    description: str
    mime_type: str

    @property
    def template(self) -> types.ResourceTemplate:
        return types.ResourceTemplate(
            name=self.id,
            title=self.title,
            uri_template=self.uri_template,
            description=self.description,
            mime_type=self.mime_type,
        )


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        "entity",
        "polyg://{project}/entity/{id}",
        "Entity page",
        "An entity as its knowledge document renders it; {id} is its id or its name.",
        MARKDOWN,
    ),
    ResourceKind(
        "summary",
        "polyg://{project}/summary",
        "Project summary",
        "What a project holds: counts by label and relationship type, and its first entities.",
        MARKDOWN,
    ),
    ResourceKind(
        "document",
        "polyg://{project}/document/{template}/{id}",
        "Knowledge document",
        "An entity's document rendered with a template of the project (by id or name).",
        MARKDOWN,
    ),
    ResourceKind(
        "export",
        "polyg://{project}/export/{format}{?offset}",
        "Graph export",
        f"The project graph as json or cypher, {EXPORT_PAGE} nodes and relationships a page.",
        "application/json",
    ),
    ResourceKind(
        "tool",
        "polyg://tools/{name}",
        "Tool reference",
        "A tool's whole description and its full input and output schemas.",
        MARKDOWN,
    ),
)
KIND_BY_TEMPLATE = {kind.uri_template: kind for kind in KINDS}
EXPORT_FORMATS = ("json", "cypher")
# The second path segment of each project resource; `polyg://tools/{name}` is a tool page unless
# its second segment is one of these (no tool has such a name).
_PROJECT_PAGES = re.compile(
    r"(?P<project>[^/]+)/(?:(?P<summary>summary)|entity/(?P<id>[^/]+)|"
    r"document/(?P<template>[^/]+)/(?P<doc_id>[^/]+)|export/(?P<format>[^/]+))"
)
_TOOL_PAGE = re.compile(r"tools/(?P<name>[^/]+)")


def resource_error(uri: str, message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri})


def entity_uri(project: str, entity_id: str) -> str:
    return f"{SCHEME}{project}/entity/{quote(entity_id, safe='')}"


# An absolute URI (RFC 3986): a scheme, then no whitespace or control character.
_ABSOLUTE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f]+")


def project_of(uri: str) -> str | None:
    """The project a polyg resource URI belongs to; None for a tool page or another scheme."""
    if not uri.startswith(SCHEME):
        return None
    parts = urlsplit(uri)
    path = f"{parts.netloc}{parts.path}"
    page = _PROJECT_PAGES.fullmatch(path)
    if page is None or (_TOOL_PAGE.fullmatch(path) and not page["summary"]):
        return None
    return unquote(page["project"])


class Subscriptions:
    """Which client sessions subscribed to which resource URIs, in this process.

    Keyed by the session's connection: the SDK makes a new `ServerSession` proxy per request,
    while the connection lives as long as the client's session (the stdio pipe, or one HTTP
    `Mcp-Session-Id`), and unwinds its exit stack when it ends, which drops its subscriptions."""

    def __init__(self) -> None:
        self._uris: dict[Connection, set[str]] = {}
        self._senders: dict[Connection, ServerSession] = {}

    def add(self, session: ServerSession, uri: str) -> None:
        # The SDK's request context exposes the session proxy only; the connection behind it is
        # the one object that identifies the client's session across requests.
        connection = session._connection
        if connection not in self._uris:
            self._uris[connection] = set()
            connection.exit_stack.callback(self._forget, connection)
        self._uris[connection].add(uri)
        self._senders[connection] = session  # notifications go on its standalone channel

    def remove(self, session: ServerSession, uri: str) -> None:
        self._uris.get(session._connection, set()).discard(uri)

    def _forget(self, connection: Connection) -> None:
        self._uris.pop(connection, None)
        self._senders.pop(connection, None)

    def count(self) -> int:
        return sum(len(uris) for uris in self._uris.values())

    async def project_changed(self, project: str, origin: ServerRequestContext[Any] | None = None) -> None:
        """Tell every session subscribed to one of the project's resources that it may have
        changed. `origin` is the write call's request, if it came over MCP. A session whose
        channel is gone, or does not take the message in DELIVERY_TIMEOUT_S, is forgotten: the
        write it follows succeeded, and another client's stalled stream must not hold it up."""
        writer = origin.session._connection if origin is not None and origin.request_id is not None else None
        for connection, uris in list(self._uris.items()):
            for uri in sorted(u for u in uris if project_of(u) == project):
                try:
                    with anyio.fail_after(DELIVERY_TIMEOUT_S):
                        await self._deliver(connection, uri, origin if connection is writer else None)
                except Exception:  # a closed channel, or TimeoutError
                    log.warning("resource update not delivered; subscription dropped", extra={"uri": uri})
                    self._forget(connection)
                    break

    async def _deliver(self, connection: Connection, uri: str, origin: ServerRequestContext[Any] | None) -> None:
        if origin is None:
            await self._senders[connection].send_resource_updated(uri)
            return
        # The writing session's own: on its call's response stream, before the result, which
        # reaches a client that keeps no standalone (HTTP GET) stream open too.
        updated = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        await origin.session.send_notification(updated, related_request_id=origin.request_id)


class Resources:
    """The handlers of resources/list, resources/templates/list, resources/read,
    resources/subscribe and resources/unsubscribe, and completion/complete for one server."""

    def __init__(self, core: Polyg, tools: Sequence[ToolSpec], prompts: Sequence[PromptSpec]) -> None:
        self.core = core
        self.tools = {tool.name: tool for tool in tools}
        self.prompts = {prompt.name: prompt for prompt in prompts}
        self.subscriptions = Subscriptions()

    def register(self, server: Server[Any]) -> None:
        server.add_request_handler("resources/list", types.PaginatedRequestParams, self.list_resources)
        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, self.read_resource)
        server.add_request_handler("completion/complete", types.CompleteRequestParams, self.complete)
        # Registering resources/subscribe is what declares `resources.subscribe` in the capabilities.
        server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self.subscribe)
        server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe)

    # --- subscriptions -------------------------------------------------------------------------

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Any well-formed absolute URI is accepted: the spec does not ask that the resource exist
        yet (an entity page may be subscribed before the entity is made), and a URI polyg never
        serves (another scheme) is simply never updated. A polyg:// URI must fit one of its
        templates, and name a project the session's key may use."""
        uri = params.uri
        if not _ABSOLUTE_URI.fullmatch(uri):
            raise resource_error(uri, f"Cannot subscribe to {short(uri)!r}: not an absolute URI.")
        if uri.startswith(SCHEME):
            parts = urlsplit(uri)
            path = f"{parts.netloc}{parts.path}"
            if not (_PROJECT_PAGES.fullmatch(path) or _TOOL_PAGE.fullmatch(path)):
                raise resource_error(uri, f"Unknown resource {uri}; the templates are {', '.join(KIND_BY_TEMPLATE)}.")
            project = project_of(uri)
            grant = grant_of_request(ctx.request)
            if project is not None and not grant.allows(project):
                raise MCPError(code=AccessDenied.code, message=grant.denial(project), data={"uri": uri})
        self.subscriptions.add(ctx.session, uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        # Unsubscribing from a URI never subscribed is not an error: the end state is the same.
        self.subscriptions.remove(ctx.session, params.uri)
        return types.EmptyResult()

    # --- listing -----------------------------------------------------------------------------

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[kind.template for kind in KINDS])

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """Tool pages, then each project's summary and entity pages, PAGE_SIZE at a time. The
        cursor is where the next page starts: a project's index and an offset in its entities
        (-1 for the summary)."""
        project_index, offset = _read_cursor(params.cursor if params else None)
        found: list[types.Resource] = []
        if project_index == -1:
            found += [self._tool_resource(tool) for tool in self.tools.values()]
            project_index, offset = 0, -1
        services = await self._services()
        grant = grant_of_request(ctx.request)
        projects = [p for p in await services.projects.names() if grant.allows(p)]
        while len(found) < PAGE_SIZE and project_index < len(projects):
            project = projects[project_index]
            if offset == -1:
                found.append(self._summary_resource(project))
                offset = 0
            wanted = PAGE_SIZE - len(found)
            entities = await services.entities.find(project, limit=wanted, offset=offset)
            found += [self._entity_resource(project, e.id, e.name) for e in entities]
            if len(entities) < wanted:
                project_index, offset = project_index + 1, -1
            else:
                offset += len(entities)
        more = project_index < len(projects)
        return types.ListResourcesResult(resources=found, next_cursor=_cursor(project_index, offset) if more else None)

    @staticmethod
    def _tool_resource(tool: ToolSpec) -> types.Resource:
        return types.Resource(
            uri=f"{SCHEME}tools/{tool.name}",
            name=f"tool {tool.name}",
            title=tool.annotations.title,
            description=tool.description,
            mime_type=MARKDOWN,
        )

    @staticmethod
    def _summary_resource(project: str) -> types.Resource:
        return types.Resource(
            uri=f"{SCHEME}{project}/summary",
            name=f"{project} summary",
            description=f"What project {project} holds.",
            mime_type=MARKDOWN,
        )

    @staticmethod
    def _entity_resource(project: str, entity_id: str, name: str | None) -> types.Resource:
        label = name or entity_id
        return types.Resource(uri=entity_uri(project, entity_id), name=f"{project}: {label}", mime_type=MARKDOWN)

    # --- reading -----------------------------------------------------------------------------

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        try:
            mime_type, text = await self._read(uri, grant_of_request(ctx.request))
        except MCPError:
            raise
        except AccessDenied as exc:
            raise MCPError(code=exc.code, message=exc.message, data={"uri": uri}) from exc
        except PolygError as exc:
            raise resource_error(uri, exc.message) from exc
        except Exception as exc:
            rid = new_request_id()
            log.exception("resource read crashed", extra={"request_id": rid})
            raise MCPError(
                code=types.INTERNAL_ERROR, message=f"Internal error reading {uri} (request id {rid})."
            ) from exc
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)])

    async def _read(self, uri: str, grant: Grant) -> tuple[str, str]:
        if not uri.startswith(SCHEME):
            raise resource_error(uri, f"Unknown resource {uri}: polyg's resources start with {SCHEME}.")
        parts = urlsplit(uri)
        path = f"{parts.netloc}{parts.path}"
        page = _PROJECT_PAGES.fullmatch(path)
        tool = _TOOL_PAGE.fullmatch(path)
        if tool and not (page and page["summary"]):
            return MARKDOWN, self._tool_page(uri, unquote(tool["name"]))
        if page is None:
            raise resource_error(uri, f"Unknown resource {uri}; the templates are {', '.join(KIND_BY_TEMPLATE)}.")
        if not grant.allows(unquote(page["project"])):
            raise AccessDenied(grant.denial(unquote(page["project"])))
        services = await self._services()
        project = await self._project(services, uri, unquote(page["project"]))
        if page["summary"]:
            return MARKDOWN, await self._summary(services, project)
        if page["format"]:
            return "application/json", await self._export(services, uri, project, unquote(page["format"]), parts.query)
        identifier = unquote(page["id"] or page["doc_id"])
        entity_id = await self._entity_id(services, uri, project, identifier)
        template = unquote(page["template"]) if page["template"] else None
        document = (await services.documents.generate(project, [entity_id], template_override=template))[0]
        return MARKDOWN, document.content

    async def _project(self, services: Services, uri: str, project: str) -> str:
        if not PROJECT_ID.fullmatch(project):
            raise resource_error(uri, f"No project {project!r}: a project id is 1-64 letters, digits, '_', '.' or '-'.")
        if project not in await services.projects.names():
            raise resource_error(uri, f"Project {project!r} not found (it holds nothing yet, or never existed).")
        return project

    @staticmethod
    async def _entity_id(services: Services, uri: str, project: str, identifier: str) -> str:
        """The entity named by id, else by name exactly, else by name in any case."""
        try:
            return (await services.entities.get(project, identifier, shown=1)).node.id
        except (NotFound, InvalidParams):
            pass
        try:
            by_name = await services.named.ids_by_name(project, [identifier])
        except InvalidParams:  # not a name an entity could have
            by_name = {}
        if by_name:
            return next(iter(by_name.values()))
        folded = identifier.strip().casefold()
        for entity in await services.entities.find(project, name_contains=identifier.strip(), limit=100):
            if (entity.name or "").casefold() == folded:
                return entity.id
        raise resource_error(uri, f"Entity {identifier!r} not found in project {project!r} (by id or name).")

    async def _summary(self, services: Services, project: str) -> str:
        stats = await services.projects.stats(project)
        entities = await services.entities.find(project, limit=SUMMARY_ENTITIES)
        lines = [f"# Project {project}", "", f"{stats.nodes} nodes, {stats.edges} relationships."]
        if stats.labels:
            lines += ["", "## Nodes by label", *(f"- {label}: {n}" for label, n in sorted(stats.labels.items()))]
        if stats.relationship_types:
            lines += ["", "## Relationships by type"]
            lines += [f"- {rel}: {n}" for rel, n in sorted(stats.relationship_types.items())]
        if stats.pending_vectors:
            lines += ["", f"Entities waiting for their vectors: {stats.pending_vectors}."]
        if entities:
            lines += ["", f"## Entities (the first {len(entities)})"]
            # Escaped as the documents' mustache escapes names: a client may render the markdown.
            lines += [f"- {html.escape(e.name or '')}: {entity_uri(project, e.id)}" for e in entities]
        lines += ["", f"The whole graph: {SCHEME}{project}/export/json (or /cypher)."]
        return "\n".join(lines) + "\n"

    @staticmethod
    async def _export(services: Services, uri: str, project: str, format_: str, query: str) -> str:
        if format_ not in EXPORT_FORMATS:
            raise resource_error(uri, f"Unknown export format {format_!r}: use json or cypher.")
        offset_text = parse_qs(query).get("offset", ["0"])[-1]
        if not offset_text.isdigit():
            raise resource_error(uri, f"The export offset must be a whole number, not {offset_text!r}.")
        export = await services.memory.views.export(
            project, format_, offset=int(offset_text), limit=EXPORT_PAGE, embeddings=False
        )
        body: dict[str, Any] = {
            "format": export.format,
            "nodes": export.nodes,
            "edges": export.edges,
            "offset": export.offset,
            "next_offset": export.next_offset,
            "next": None
            if export.next_offset is None
            else f"{SCHEME}{project}/export/{format_}?offset={export.next_offset}",
        }
        body["statements" if format_ == "cypher" else "items"] = (
            export.statements if format_ == "cypher" else export.items
        )
        return json.dumps(body, ensure_ascii=False)

    def _tool_page(self, uri: str, name: str) -> str:
        tool = self.tools.get(name)
        if tool is None:
            raise resource_error(uri, f"No tool {name!r} is served here.")
        parts = [f"# {tool.name}", "", tool.annotations.title or "", "", tool.description]
        if tool.details:
            parts += ["", tool.details]
        for heading, schema in (("Input schema", tool.input_schema), ("Output schema", tool.output_schema)):
            parts += ["", f"## {heading}", "", "```json", json.dumps(_without_listed(schema), indent=2), "```"]
        return "\n".join(parts) + "\n"

    # --- completion ----------------------------------------------------------------------------

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Values for a template's or a prompt's argument. A reference polyg does not know
        completes to nothing (a completion is a hint: an empty one is a valid answer)."""
        ref, argument = params.ref, params.argument
        known = (
            ref.uri in KIND_BY_TEMPLATE
            if isinstance(ref, types.ResourceTemplateReference)
            else ref.name in self.prompts
        )
        values: list[str] = []
        if known:
            given = dict(params.context.arguments or {}) if params.context else {}
            try:
                values = await self._values(argument.name, argument.value, given, grant_of_request(ctx.request))
            except PolygError:
                values = []  # a project id or name that cannot exist completes to nothing
        shown = values[:MAX_COMPLETIONS]
        return types.CompleteResult(
            completion=types.Completion(values=shown, total=len(values), has_more=len(values) > len(shown))
        )

    async def _values(self, argument: str, prefix: str, given: dict[str, str], grant: Grant) -> list[str]:
        if argument not in ("project", "project_id", "format", "name") and not grant.allows(self._given_project(given)):
            return []  # nothing of a project the key may not use
        completers: dict[str, Callable[[], Awaitable[list[str]]]] = {
            "project": lambda: self._project_ids(prefix, grant),
            "project_id": lambda: self._project_ids(prefix, grant),
            "id": lambda: self._entities(given, prefix, names=True),
            "entity_id": lambda: self._entities(given, prefix, names=False),
            "source_id": lambda: self._entities(given, prefix, names=False),
            "target_id": lambda: self._entities(given, prefix, names=False),
            "template": lambda: self._templates(given, prefix),
            "format": lambda: _starting(EXPORT_FORMATS, prefix),
            "name": lambda: _starting(self.tools, prefix),
        }
        completer = completers.get(argument)
        return await completer() if completer else []

    async def _project_ids(self, prefix: str, grant: Grant) -> list[str]:
        names = await (await self._services()).projects.names()
        return await _starting([p for p in names if grant.allows(p)], prefix)

    def _given_project(self, given: dict[str, str]) -> str:
        return given.get("project") or given.get("project_id") or self.core.settings.project

    async def _entities(self, given: dict[str, str], prefix: str, *, names: bool) -> list[str]:
        """Entity names (or ids) whose name starts with `prefix` in any case, then those whose
        name contains it; ids that start with it come first for an id argument."""
        services = await self._services()
        project = self._given_project(given)
        if project not in await services.projects.names():
            return []
        found = await services.entities.find(project, name_contains=prefix.strip() or None, limit=1000)
        folded = prefix.strip().casefold()
        ranked = sorted(found, key=lambda e: not (e.name or "").casefold().startswith(folded))
        values = [(e.name or e.id) if names else e.id for e in ranked]
        if not names and prefix:
            values = [
                e.id for e in await services.entities.find(project, limit=1000) if e.id.startswith(prefix)
            ] + values
        return list(dict.fromkeys(values))

    async def _templates(self, given: dict[str, str], prefix: str) -> list[str]:
        services = await self._services()
        project = self._given_project(given)
        if project not in await services.projects.names():
            return []
        return await _starting([t.id for t in await services.templates.list(project)], prefix)

    async def _services(self) -> Services:
        try:
            return await self.core.ready(self.core.settings.store_wait_s)
        except PolygError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=exc.message) from exc


async def _starting(values: Sequence[str] | dict[str, Any], prefix: str) -> list[str]:
    folded = prefix.casefold()
    return [v for v in values if v.casefold().startswith(folded)]


def _cursor(project_index: int, offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([project_index, offset]).encode()).decode()


def _read_cursor(cursor: str | None) -> tuple[int, int]:
    if cursor is None:
        return -1, -1
    try:
        project_index, offset = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, binascii.Error, TypeError) as exc:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor: pass back a nextCursor as given.") from exc
    if not (isinstance(project_index, int) and isinstance(offset, int) and project_index >= 0 and offset >= -1):
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor: pass back a nextCursor as given.")
    return project_index, offset


def _without_listed(node: Any) -> Any:
    """A full schema as the tool page shows it: without the listing's own keyword."""
    if isinstance(node, dict):
        return {k: _without_listed(v) for k, v in node.items() if k != LISTED}
    if isinstance(node, list):
        return [_without_listed(v) for v in node]
    return node
