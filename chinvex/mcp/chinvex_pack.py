"""MCP tool `chinvex_pack`: a token-budgeted evidence pack for a task."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.arguments import checked_source_types
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def chinvex_pack(state: ServerState, task: str, context: str | None = None,
                 budget_tokens: int = 2000, diversity: int | None = None,
                 source_types: list[str] | None = None) -> dict[str, Any]:
    from chinvex.pack.service import MAX_BUDGET, build_pack
    from chinvex.retrieval.search import InvalidFilterError

    task = limits.require_query(task)
    limits.require_range("budget_tokens", budget_tokens, 1, MAX_BUDGET)
    if diversity is not None:
        limits.require_range("diversity", diversity, 1, limits.K_MAX)
    types, _ = checked_source_types(source_types)
    config = state.context_or_project(context)
    try:
        response = build_pack([config], task, budget=budget_tokens, diversity=diversity,
                              source_types=types, searcher=state.searcher)
    except InvalidFilterError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"source_types: {exc.message}") from None
    return response.model_dump(mode="json")
