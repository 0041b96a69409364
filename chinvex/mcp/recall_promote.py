"""MCP `recall_promote`: move a project knowledge item to the `global` context (RECALL spec §4
scopes), the same operation as `chinvex memory promote` (`chinvex.memory.promote`)."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits as L
from chinvex.mcp import recall as R
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def recall_promote(state: ServerState, item_id: str) -> dict[str, Any]:
    from chinvex.errors import ChinvexError
    from chinvex.memory import promote

    wanted = L.require_short("item_id", item_id, max_chars=L.ID_MAX_CHARS)
    if wanted is None or not R.ITEM_ID.match(wanted):
        raise ToolFailure(L.INVALID_ARGUMENT, f"item_id {item_id!r} is not a knowledge item id (e.g. D-1a2b3c4d)")
    project = state.project()
    target = state.global_context()
    if target is None:
        raise ToolFailure(L.CONTEXT_NOT_FOUND, "No context named 'global' to promote to: create it with "
                          "'chinvex context create global'.")
    try:
        return promote(project, target, wanted, embedder_for=state.embedder)
    except ChinvexError as exc:
        code = L.NOT_FOUND if exc.code == "NOT_FOUND" else (exc.code if exc.code != "USAGE_ERROR" else L.INVALID_ARGUMENT)
        raise ToolFailure(code, exc.message) from None
