"""Search: the query box with the filters `chinvex search` has (source types, path glob, dates,
`--filter` expressions, mode, k), results with the query's words highlighted in their snippets,
and an explain toggle showing each result's lexical, vector and fused scores with the weights
that produced its rank (the `--explain` figures).

The search is the warm `Searcher`'s, with the same `SearchRequest` the CLI builds; a mistake in a
filter is shown above the form, as the CLI's usage error would say it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chinvex.errors import UsageError
from chinvex.models import ContextConfig, SearchResponse
from chinvex.web.highlight import Highlighter
from chinvex.models.turn_markers import turns_label
from chinvex.web.links import chunk_link, where
from chinvex.web.pages.common import int_param, selected_config, text_param, ui
from chinvex.web.render import render

MODES = ("hybrid", "fts", "vector")


@dataclass
class SearchForm:
    q: str
    types: list[str]
    path: str
    since: str
    until: str
    filter: str
    mode: str
    k: int
    explain: bool

    @classmethod
    def read(cls, request: Request) -> SearchForm:
        mode = text_param(request, "mode", limit=10)
        return cls(q=text_param(request, "q"), types=[t for t in request.query_params.getlist("type") if t][:20],
                   path=text_param(request, "path", limit=500), since=text_param(request, "since", limit=40),
                   until=text_param(request, "until", limit=40), filter=text_param(request, "filter"),
                   mode=mode if mode in MODES else "hybrid", k=int_param(request, "k", 10, low=1, high=100),
                   explain=bool(request.query_params.get("explain")))


def build_request(form: SearchForm) -> Any:
    """The `SearchRequest` `chinvex search` would build from the same flags; UsageError names the
    field that is wrong."""
    from chinvex.retrieval import fel
    from chinvex.retrieval.filters import DATE_FORMS, date_bound
    from chinvex.retrieval.search import SearchRequest

    bounds: dict[str, str | None] = {}
    for name, value in (("since", form.since), ("until", form.until)):
        try:
            bounds[name] = date_bound(value, end_of_day=name == "until") if value else None
        except ValueError:
            raise UsageError(f"{name} {value!r}: not a date; use {DATE_FORMS}") from None
    if form.filter:
        try:
            fel.parse(form.filter)
        except fel.FilterError as exc:
            raise UsageError(f"filter: {exc}") from None
    return SearchRequest(query=form.q, k=form.k, source_types=form.types or None, path_glob=form.path or None,
                         since=bounds["since"], until=bounds["until"], explain=True, mode=form.mode,  # type: ignore[arg-type]
                         filter_expression=form.filter or None)


def mode_label(response: SearchResponse) -> str:
    from chinvex.retrieval.coverage import VectorCoverage
    from chinvex.retrieval.coverage import mode_label as label

    figure = response.stats.vector_coverage
    return label(response.stats.mode, None if figure is None else VectorCoverage(figure.chunks, figure.with_vector))


def result_views(response: SearchResponse, config: ContextConfig, query: str, highlight: Highlighter) -> list[dict[str, Any]]:
    """What the search page shows of each hit; a conversation's agent named as `stats` and
    `--filter "agent = …"` name it (codex, chatgpt), not by the reader that read it."""
    from chinvex.models.documents import agent_of

    views = []
    for r in response.results:
        conversation = r.metadata.get("turn_start") is not None
        views.append({
            "r": r, "snippet": highlight.snippet(r.text),
            "where": where(r.metadata, r.source_uri, r.range.line_start, r.range.line_end, r.text),
            "session": {"title": r.title or where(r.metadata, r.source_uri, None, None),
                        "agent": agent_of(r.metadata["source"]) if r.metadata.get("source") else r.source_type,
                        "when": r.metadata.get("ts_start") or r.updated_at,
                        "turns": turns_label(r.metadata, r.text)} if conversation else None,
            "link": chunk_link(context=config.name, doc_id=r.doc_id, chunk_id=r.chunk_id, metadata=r.metadata,
                               line_start=r.range.line_start, query=query),
        })
    return views


def search_page(request: Request) -> Response:
    """GET /search: explain figures are always computed (cheap), so the toggle shows or hides
    them without searching again."""
    from chinvex.models.documents import SOURCE_TYPES
    from chinvex.retrieval.lexical import query_terms

    config = selected_config(request)
    form = SearchForm.read(request)
    response: SearchResponse | None = None
    error: str | None = None
    if form.q:
        try:
            response = ui(request).searcher.search([config], build_request(form))
        except UsageError as exc:
            error = exc.message
    with Highlighter(query_terms(form.q) if form.q else []) as highlight:
        results = result_views(response, config, form.q, highlight) if response else []
        return render(request, "search.html", page="search", context=config.name, form=form, response=response,
                      results=results, error=error, source_types=SOURCE_TYPES, modes=MODES,
                      mode_label=mode_label(response) if response else None, status=400 if error else 200)


def routes() -> list[Route]:
    return [Route("/search", search_page)]
