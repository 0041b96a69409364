"""The MCP tools as plain functions of a `ServerState`, one module per tool: testable without
MCP, and the MCP layer (server.py) only describes their arguments and turns their results into
tool results.

Every function validates its input against `limits`, returns a JSON-ready dict, and reports a
failure by raising `ToolFailure` (or a `ChinvexError`, mapped by `run_tool`). This module is the
index of them: the chinvex tools (search, get_chunks, list_contexts, answer, pack, blame) and the
RECALL tools (recall_search, recall_get, recall_add, recall_feedback, flight_recorder_log; the
RECALL listing and indexing tools are recall_list, recall_context, recall_index and
recall_promote).
"""

from __future__ import annotations

from chinvex.mcp.chinvex_answer import chinvex_answer, compact_answer
from chinvex.mcp.chinvex_blame import chinvex_blame
from chinvex.mcp.chinvex_get_chunks import chinvex_get_chunks
from chinvex.mcp.chinvex_list_contexts import chinvex_list_contexts
from chinvex.mcp.chinvex_pack import chinvex_pack
from chinvex.mcp.chinvex_search import chinvex_search
from chinvex.mcp.flight_recorder_log import flight_recorder_log
from chinvex.mcp.recall_add import recall_add
from chinvex.mcp.recall_feedback import recall_feedback
from chinvex.mcp.recall_get import recall_get
from chinvex.mcp.recall_search import recall_search
from chinvex.mcp.running import run_tool
from chinvex.mcp.scopes import scope_contexts

__all__ = ["chinvex_answer", "chinvex_blame", "chinvex_get_chunks", "chinvex_list_contexts", "chinvex_pack", "chinvex_search",
           "compact_answer", "flight_recorder_log", "recall_add", "recall_feedback", "recall_get",
           "recall_search", "run_tool", "scope_contexts"]
