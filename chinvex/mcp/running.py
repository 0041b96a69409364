"""Running a tool: its result, or the one-line failure an agent reads (a bug is logged to stderr and
answered as an internal error, never a dropped call)."""

from __future__ import annotations

import sqlite3
import sys
import traceback
from collections.abc import Callable
from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def run_tool(fn: Callable[..., dict[str, Any]], state: ServerState, **kwargs: Any) -> tuple[bool, dict[str, Any]]:
    """(ok, payload): the tool's result, or `{"ok": false, "error": {"code", "message"}}`."""
    from chinvex.errors import ChinvexError

    try:
        return True, fn(state, **kwargs)
    except ToolFailure as exc:
        return False, exc.payload()
    except ChinvexError as exc:
        return False, ToolFailure(exc.code, exc.message).payload()
    except sqlite3.Error as exc:
        return False, ToolFailure(limits.STORAGE_ERROR, f"index database error: {exc}").payload()
    except Exception as exc:  # a bug: answer the agent, keep the server, log the traceback
        sys.stderr.write(f"chinvex mcp: internal error in {getattr(fn, '__name__', fn)}:\n")
        traceback.print_exc(file=sys.stderr)
        return False, ToolFailure(
            limits.INTERNAL_ERROR, f"internal error ({type(exc).__name__}: {exc}); please report it").payload()
