"""The graph view's routes in the HTTP app, behind the same key and Origin checks as `/mcp`.

  /ui                               the page: choose a project
  /ui/p/{project}                   the page for a project (404 page if it does not exist)
  /ui/p/{project}/entity/{id}       the page opened on an entity (404 page if it does not exist)
  /ui/static/{file}                 the script, the styles, the graph library and its licence
  /ui/api/projects                  JSON: the projects
  /ui/api/p/{project}/{view}?...    JSON: search, neighbourhood, entity, timeline, causal, document

The JSON views are GET requests: a page's same-origin GET carries no Origin header, so the page
works on any bind address the key allows. A failure is a page or JSON message with a status,
never a trace: an unexpected one is logged and answered with a request id only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from polyg.core.app import Polyg
from polyg.logs import new_request_id
from polyg.store.names import short
from polyg.ui.page import PAGE_CSP, STATIC_FILES, error_page, graph_page, static_text
from polyg.ui.views import GraphViews, ViewError

log = logging.getLogger(__name__)

BASE = "/ui"
SECURITY_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
TITLES: dict[int, str] = {400: "Bad request", 404: "Not found", 500: "Internal error", 503: "Store unavailable"}


def _page_error(status: int, message: str) -> Response:
    code: Literal[404, 500, 503] = 404 if status in (400, 404) else 503 if status == 503 else 500
    return HTMLResponse(error_page(code, TITLES[code], message, BASE), status_code=code, headers=SECURITY_HEADERS)


def _unexpected(exc: Exception) -> str:
    rid = new_request_id()
    log.error("graph view failed", exc_info=exc, extra={"request_id": rid})
    return f"Internal error (request id {rid})."


def ui_routes(core: Polyg) -> list[Route]:
    views = GraphViews(core)

    async def page(request: Request) -> Response:
        project = request.path_params.get("project")
        entity_id = request.path_params.get("entity_id")
        try:
            projects = await views.projects()
            entity = None
            if project is not None:
                if project not in projects:
                    raise ViewError(f"Project {short(project)} does not exist.", 4004)
                if entity_id is not None:
                    entity = await views.entity_ref(project, entity_id)
        except ViewError as exc:
            return _page_error(exc.status, exc.message)
        except Exception as exc:
            return _page_error(500, _unexpected(exc))
        html = graph_page(BASE, project=project, entity=entity, projects=projects)
        return HTMLResponse(html, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        media_type = STATIC_FILES.get(name)
        if media_type is None:
            return _page_error(404, f"No static file {short(name)}.")
        return Response(static_text(name), media_type=media_type, headers=SECURITY_HEADERS)

    async def projects(request: Request) -> Response:
        return await _json(lambda: _projects(views))

    async def view(request: Request) -> Response:
        project, name = request.path_params["project"], request.path_params["view"]
        handler = VIEWS.get(name)
        if handler is None:
            return JSONResponse({"error": f"No view {short(name)}."}, status_code=404, headers=SECURITY_HEADERS)
        args = request.query_params

        async def answer() -> dict[str, Any]:
            await views.require_project(project)
            return await handler(views, project, args)

        return await _json(answer)

    async def not_found(request: Request) -> Response:
        return _page_error(404, "No such page.")

    return [
        Route(BASE, page, methods=["GET"]),
        Route(f"{BASE}/", page, methods=["GET"]),
        Route(f"{BASE}/p/{{project}}", page, methods=["GET"]),
        Route(f"{BASE}/p/{{project}}/entity/{{entity_id}}", page, methods=["GET"]),
        Route(f"{BASE}/static/{{name}}", static, methods=["GET"]),
        Route(f"{BASE}/api/projects", projects, methods=["GET"]),
        Route(f"{BASE}/api/p/{{project}}/{{view}}", view, methods=["GET"]),
        Route(f"{BASE}/{{rest:path}}", not_found, methods=["GET"]),
    ]


async def _projects(views: GraphViews) -> dict[str, Any]:
    return {"projects": await views.projects()}


async def _json(answer: Callable[[], Awaitable[dict[str, Any]]]) -> Response:
    try:
        body = await answer()
    except ViewError as exc:
        return JSONResponse({"error": exc.message, "code": exc.code}, status_code=exc.status, headers=SECURITY_HEADERS)
    except Exception as exc:
        return JSONResponse({"error": _unexpected(exc)}, status_code=500, headers=SECURITY_HEADERS)
    return JSONResponse(body, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


def _arg(args: Any, name: str) -> str:
    value = args.get(name)
    if not value:
        raise ViewError(f"Missing query parameter {name!r}.", 4002)
    return str(value)


View = Callable[[GraphViews, str, Any], Awaitable[dict[str, Any]]]
VIEWS: dict[str, View] = {
    "search": lambda v, p, a: v.search(p, _arg(a, "q")),
    "neighbourhood": lambda v, p, a: v.neighbourhood(p, _arg(a, "entity_id")),
    "entity": lambda v, p, a: v.entity(p, _arg(a, "name"), a.get("as_of") or None, a.get("history") == "1"),
    "timeline": lambda v, p, a: v.timeline(p, _arg(a, "entity")),
    "causal": lambda v, p, a: v.causal(p, _arg(a, "event")),
    "document": lambda v, p, a: v.document(p, _arg(a, "node")),
}
