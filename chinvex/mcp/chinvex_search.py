"""MCP tool `chinvex_search`: hybrid search of one or more contexts."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import budget
from chinvex.mcp import limits
from chinvex.mcp.arguments import checked_filter
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def chinvex_search(state: ServerState, query: str, context: str | None = None,
                   contexts: list[str] | None = None, k: int = 8,
                   source_types: list[str] | None = None, max_tokens: int = budget.DEFAULT_MAX_TOKENS,
                   filter: str | None = None, per_doc: int = 0) -> dict[str, Any]:
    """`per_doc` 0 (the default) keeps every chunk; N keeps the first N of each document, so an
    agent asking which files handle something gets distinct files (`chinvex search --per-doc`)."""
    from chinvex.retrieval.search import InvalidFilterError, SearchRequest

    query = limits.require_query(query)
    limits.require_range("k", k, limits.K_MIN, limits.K_MAX)
    limits.require_range("per_doc", per_doc, 0, limits.K_MAX)
    types = limits.require_list("source_types", source_types, max_items=16, max_chars=limits.TYPE_MAX_CHARS) or None
    names = limits.require_list("contexts", contexts, max_items=limits.CONTEXTS_MAX, max_chars=200)
    if context is not None and context.strip():
        names = list(dict.fromkeys([context.strip(), *names]))
    configs = [state.resolve(n) for n in names] if names else [state.project()]
    configs = list({c.name: c for c in configs}.values())
    try:
        response = state.searcher.search(configs, SearchRequest(query=query, k=k, source_types=types,
                                                                filter_expression=checked_filter(filter),
                                                                per_doc=per_doc or None))
    except InvalidFilterError as exc:  # a type no searched index knows: as the CLI, not "no results"
        raise ToolFailure(limits.INVALID_ARGUMENT, exc.message if exc.message.startswith("--filter")
                          else f"source_types: {exc.message}") from None
    payload = response.model_dump(mode="json")
    payload["results"], payload["budget"] = budget.fit(payload["results"], "text", max_tokens)
    return payload
