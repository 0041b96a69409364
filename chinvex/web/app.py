"""The Starlette application of `chinvex ui`: the pages' routes, the packaged static files, error
pages for the errors a person can cause (an unknown context, a missing document), all behind
`chinvex.web.security.Guard`.

Page handlers are plain functions: Starlette runs them in its thread pool, so a slow page (an
answer, a large conversation) never blocks the others, and SQLite and ONNX Runtime release the
GIL while they work.
"""

from __future__ import annotations

from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from chinvex.errors import ChinvexError, NotFoundError, UsageError
from chinvex.web.pages import ask, contexts, conversations, documents, ingest, memories, search
from chinvex.web.security import Guard
from chinvex.web.state import UiState


def static_dir() -> str:
    return str(resources.files("chinvex.web") / "static")


def _status_of(exc: ChinvexError) -> int:
    if isinstance(exc, NotFoundError) or exc.code == "CONTEXT_NOT_FOUND":
        return 404
    if isinstance(exc, UsageError):
        return 400
    return 500


def _error_page(request: Request, status: int, message: str) -> Response:
    from chinvex.web.render import render

    return render(request, "error.html", page="error", context=request.query_params.get("context"),
                  status=status, message=message, code=status)


async def _chinvex_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ChinvexError)
    return _error_page(request, _status_of(exc), exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error_page(request, exc.status_code, exc.detail or "Error")


def _favicon(request: Request) -> Response:
    return FileResponse(f"{static_dir()}/favicon.svg", media_type="image/svg+xml")


def routes() -> list[BaseRoute]:
    found: list[BaseRoute] = []
    for page in (contexts, documents, conversations, search, ask, memories, ingest):
        found.extend(page.routes())
    found.append(Route("/favicon.ico", _favicon))
    found.append(Mount("/static", StaticFiles(directory=static_dir()), name="static"))
    return found


def create_app(state: UiState, *, port: int) -> Guard:
    """The guarded ASGI application for a server listening on 127.0.0.1:`port`."""
    app = Starlette(routes=routes(), exception_handlers={ChinvexError: _chinvex_error, HTTPException: _http_error})
    app.state.ui = state
    return Guard(app, run=state.run, port=port)
