"""Templates: one Jinja2 environment with autoescaping on for everything, and the same value
formatting the CLI's human output uses (`chinvex.fmt`), so a date or a score reads the same in
a terminal and in the browser.

Templates receive plain data from the library; anything that must become HTML outside a
template (highlighted snippets) is built from escaped text (`chinvex.web.highlight`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse

from chinvex import fmt

NAV = [("contexts", "/", "Contexts"), ("documents", "/documents", "Documents"), ("search", "/search", "Search"),
       ("ask", "/ask", "Ask"), ("memories", "/memories", "Memories"), ("ingest", "/ingest", "Ingest")]
NAV_PATHS = {key: path for key, path, _ in NAV}


def url(target: str, /, **params: Any) -> str:
    """`target?query` with empty parameters left out (URLs stay short and shareable). The
    target is positional-only: `path` is also a query parameter (the documents filter)."""
    kept = [(k, v) for k, v in params.items() if v not in (None, "", False, [])]
    flat: list[tuple[str, Any]] = []
    for key, value in kept:
        if isinstance(value, (list, tuple)):
            flat.extend((key, v) for v in value)
        else:
            flat.append((key, 1 if value is True else value))
    return target + (f"?{urlencode(flat)}" if flat else "")


def segment(value: str) -> str:
    """One path segment (a doc id, a thread id) safe to put in a URL."""
    return quote(str(value), safe="")


def _percent(ratio: float | None) -> str:
    from chinvex.retrieval.coverage import percent

    return fmt.MISSING if ratio is None else percent(ratio)


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("chinvex.web", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update({
        "when": fmt.when, "score": fmt.score, "raw": fmt.raw, "number": fmt.number, "size": fmt.size,
        "ms": fmt.duration_ms, "text": fmt.text, "percent": _percent, "seg": segment, "counted": fmt.counted,
    })
    env.globals.update({"url": url, "NAV": NAV, "NAV_PATHS": NAV_PATHS, "MISSING": fmt.MISSING})
    return env


def render(request: Request, template: str, *, page: str, context: str | None = None,
           status: int = 200, **values: Any) -> HTMLResponse:
    """A page inside the common layout (navigation, context switcher, CSRF token for forms)."""
    state = request.app.state.ui
    names = state.context_names()
    html = environment().get_template(template).render(
        page=page, context=context, contexts=names, csrf=state.run.csrf, **values)
    return HTMLResponse(html, status_code=status)
