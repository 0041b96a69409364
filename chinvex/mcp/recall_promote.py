"""MCP `recall_promote`: move a project memory to the `global` context (RECALL spec §4
scopes), the same operation as `chinvex memory promote` (`chinvex.memory.promote`)."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState
from chinvex.memory.vocabulary import MEMORY_ID


def recall_promote(state: ServerState, item_id: str) -> dict[str, Any]:
    from chinvex.errors import ChinvexError
    from chinvex.memory.scope import promote

    wanted = limits.require_short("item_id", item_id, max_chars=limits.ID_MAX_CHARS)
    if wanted is None or not MEMORY_ID.match(wanted):
        raise ToolFailure(limits.INVALID_ARGUMENT, f"item_id {item_id!r} is not a knowledge item id (e.g. D-1a2b3c4d)")
    project = state.project()
    target = state.global_context()
    if target is None:
        raise ToolFailure(limits.CONTEXT_NOT_FOUND, "No context named 'global' to promote to: create it with "
                          "'chinvex context create global'.")
    try:
        return promote(project, target, wanted, embedder_for=state.embedder)
    except ChinvexError as exc:
        code = limits.NOT_FOUND if exc.code == "NOT_FOUND" else (exc.code if exc.code != "USAGE_ERROR" else limits.INVALID_ARGUMENT)
        raise ToolFailure(code, exc.message) from None
